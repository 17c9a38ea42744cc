//===- OutputFile.cpp - writing an output without clobbering --------------===//

#include "hw/support/OutputFile.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace pccx {

namespace {

// Temp files alive in this process, for a signal handler: fixed storage
// so that removePartialOutputs() only reads plain memory and calls unlink().
constexpr int kMaxTemps = 32;
char tempPaths[kMaxTemps][PATH_MAX];
volatile sig_atomic_t tempUsed[kMaxTemps];
std::mutex tempMutex;

int registerTemp(const std::string &path) {
  std::lock_guard<std::mutex> lock(tempMutex);
  if (path.size() >= PATH_MAX)
    return -1;
  for (int i = 0; i < kMaxTemps; ++i)
    if (!tempUsed[i]) {
      std::memcpy(tempPaths[i], path.c_str(), path.size() + 1);
      tempUsed[i] = 1;
      return i;
    }
  return -1;
}

void forgetTemp(const std::string &path) {
  std::lock_guard<std::mutex> lock(tempMutex);
  for (int i = 0; i < kMaxTemps; ++i)
    if (tempUsed[i] && path == tempPaths[i]) {
      tempUsed[i] = 0;
      return;
    }
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// The file a symlink chain ends at (which may not exist yet).
std::string resolveLinks(std::string path) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      return path;
    char buf[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    if (n <= 0)
      return path;
    std::string link(buf, size_t(n));
    path = link[0] == '/' ? link : directoryOf(path) + "/" + link;
  }
  return path;
}

std::string errnoText() { return std::strerror(errno); }

} // namespace

void removePartialOutputs() {
  for (int i = 0; i < kMaxTemps; ++i)
    if (tempUsed[i])
      ::unlink(tempPaths[i]);
}

bool OutputFile::open(const std::string &path, std::string *error) {
  abandon();
  path_ = path;
  if (path == "-") {
    stream_ = stdout;
    ownsStream_ = false;
    return true;
  }
  target_ = resolveLinks(path);
  struct stat st;
  // stat() of the path itself: the kernel follows /dev/stdout's magic link
  // to a pipe, which has no name resolveLinks could reopen.
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      *error = path + ": is a directory";
      return false;
    }
    // A device, FIFO or socket: written in place, never replaced.
    stream_ = std::fopen(path.c_str(), "wb");
    if (!stream_) {
      *error = path + ": cannot open: " + errnoText();
      return false;
    }
    ownsStream_ = true;
    return true;
  }
  // The name is chosen and recorded for removePartialOutputs() before the
  // file exists (O_EXCL makes it ours), so a signal at any moment finds
  // the name of every temp file there is.
  static std::atomic<unsigned> sequence{0};
  int fd = -1, slot = -1;
  std::string tmp;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = target_ + ".tmp." + std::to_string(::getpid()) + "." +
          std::to_string(sequence.fetch_add(1));
    slot = registerTemp(tmp);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && slot >= 0)
      tempUsed[slot] = 0;
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0) {
    *error = path + ": cannot create a file beside it: " + errnoText();
    return false;
  }
  tmp_ = tmp;
  stream_ = ::fdopen(fd, "wb");
  if (!stream_) {
    *error = path + ": cannot open: " + errnoText();
    ::close(fd);
    abandon();
    return false;
  }
  ownsStream_ = true;
  return true;
}

bool OutputFile::commit(std::string *error) {
  if (!stream_) {
    *error = path_ + ": not open";
    return false;
  }
  bool ok = std::fflush(stream_) == 0 && !std::ferror(stream_);
  int savedErrno = errno;
  if (ok && replaces() && ::fsync(fileno(stream_)) != 0) {
    ok = false;
    savedErrno = errno;
  }
  if (ownsStream_) {
    if (std::fclose(stream_) != 0 && ok) {
      ok = false;
      savedErrno = errno;
    }
  }
  stream_ = nullptr;
  if (!ok) {
    *error = path_ + ": write failed: " + std::strerror(savedErrno);
    abandon();
    return false;
  }
  if (!replaces())
    return true;
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
    *error = path_ + ": cannot replace it: " + errnoText();
    abandon();
    return false;
  }
  forgetTemp(tmp_);
  tmp_.clear();
  int dir =
      ::open(directoryOf(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) { // makes the rename durable; the data is complete anyway
    ::fsync(dir);
    ::close(dir);
  }
  return true;
}

void OutputFile::abandon() {
  if (stream_ && ownsStream_)
    std::fclose(stream_);
  stream_ = nullptr;
  if (!tmp_.empty()) {
    ::unlink(tmp_.c_str());
    forgetTemp(tmp_);
    tmp_.clear();
  }
}

bool writeOutputFile(const std::string &path, const void *data, size_t bytes,
                     std::string *error) {
  OutputFile out;
  if (!out.open(path, error))
    return false;
  if (bytes && std::fwrite(data, 1, bytes, out.stream()) != bytes) {
    *error = path + ": write failed: " + errnoText();
    return false;
  }
  return out.commit(error);
}

} // namespace pccx
