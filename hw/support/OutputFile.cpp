//===- OutputFile.cpp - writing an output without clobbering --------------===//

#include "hw/support/OutputFile.h"

#include "hw/support/InputFile.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace pccx {

namespace {

// Temp files and directories alive in this process, for a signal handler:
// fixed storage so that removePartialOutputs() only reads plain memory and
// makes system calls.
constexpr int kMaxTemps = 32;
char tempPaths[kMaxTemps][PATH_MAX];
volatile sig_atomic_t tempUsed[kMaxTemps];
volatile sig_atomic_t tempIsDirectory[kMaxTemps];
std::mutex tempMutex;
std::atomic<unsigned> tempSequence{0};

int registerTemp(const std::string &path, bool directory = false) {
  std::lock_guard<std::mutex> lock(tempMutex);
  if (path.size() >= PATH_MAX)
    return -1;
  for (int i = 0; i < kMaxTemps; ++i)
    if (!tempUsed[i]) {
      std::memcpy(tempPaths[i], path.c_str(), path.size() + 1);
      tempIsDirectory[i] = directory;
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

/// A name beside `target` that no other writer uses: the PID and a
/// sequence number (the caller creates it exclusively).
std::string tempName(const std::string &target) {
  return target + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(tempSequence.fetch_add(1));
}

/// Removes the files in the directory `path`, then the directory; false
/// when the directory stays (it holds a directory, or cannot be written).
/// Only system calls on a stack buffer: safe in a signal handler.
bool removeDirectoryOfFiles(const char *path) {
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT;
  // Removing entries while listing may hide others from the listing: list
  // again from the start until a pass removes nothing.
  alignas(struct dirent64) char buffer[4096];
  for (bool removed = true; removed;) {
    removed = false;
    ::lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = ::getdents64(fd, buffer, sizeof buffer)) > 0;)
      for (ssize_t at = 0; at < n;) {
        const auto *entry =
            reinterpret_cast<const struct dirent64 *>(buffer + at);
        at += entry->d_reclen;
        const char *name = entry->d_name;
        if (name[0] == '.' &&
            (name[1] == 0 || (name[1] == '.' && name[2] == 0)))
          continue;
        removed |= ::unlinkat(fd, name, 0) == 0;
      }
  }
  ::close(fd);
  return ::rmdir(path) == 0;
}

/// Makes the renames inside `dir` durable.
void syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// `tmp` was renamed to `target`: it is no longer a temp to remove on a
/// signal, and the rename is made durable (the data is complete anyway).
void renamedIntoPlace(std::string *tmp, const std::string &target) {
  forgetTemp(*tmp);
  tmp->clear();
  syncDirectory(directoryOf(target));
}

} // namespace

void removePartialOutputs() {
  for (int i = 0; i < kMaxTemps; ++i)
    if (tempUsed[i] && !tempIsDirectory[i])
      ::unlink(tempPaths[i]);
  // Directories after the files: a temp file may lie in one.
  for (int i = 0; i < kMaxTemps; ++i)
    if (tempUsed[i] && tempIsDirectory[i])
      removeDirectoryOfFiles(tempPaths[i]);
}

std::string resolvedPath(const std::string &path) {
  std::string resolved;
  if (path.empty() || path[0] != '/') {
    char cwd[PATH_MAX];
    if (!::getcwd(cwd, sizeof cwd))
      return "";
    resolved = cwd == std::string("/") ? "" : cwd;
  }
  for (size_t begin = 0; begin <= path.size();) {
    size_t end = path.find('/', begin);
    if (end == std::string::npos)
      end = path.size();
    const std::string part = path.substr(begin, end - begin);
    begin = end + 1;
    if (part.empty() || part == ".")
      continue;
    if (part == "..") { // `resolved` holds no symlink: ".." is its parent
      const size_t slash = resolved.rfind('/');
      resolved.resize(slash == std::string::npos ? 0 : slash);
      continue;
    }
    const std::string next = resolved + "/" + part;
    char real[PATH_MAX];
    if (::realpath(next.c_str(), real))
      resolved = real == std::string("/") ? "" : real;
    else if (errno == ENOENT)
      resolved = next; // to be created
    else
      return "";
  }
  return resolved.empty() ? "/" : resolved;
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
  int fd = -1, slot = -1;
  std::string tmp;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = tempName(target_);
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
  renamedIntoPlace(&tmp_, target_);
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

bool copyRegularFile(const std::string &from, const std::string &to,
                     std::string *error) {
  int in = support::openRegularFile(from, error);
  if (in < 0)
    return false;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{in};
  OutputFile out;
  if (!out.open(to, error))
    return false;
  std::vector<char> buffer(size_t(1) << 20);
  for (;;) {
    ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      *error = from + ": cannot read: " + errnoText();
      return false;
    }
    if (n == 0)
      return out.commit(error);
    if (std::fwrite(buffer.data(), 1, size_t(n), out.stream()) != size_t(n)) {
      *error = to + ": write failed: " + errnoText();
      return false;
    }
  }
}

bool OutputDirectory::open(const std::string &path, std::string *error) {
  abandon();
  path_ = path;
  target_ = resolvedPath(path);
  if (target_.empty()) {
    *error = path + ": cannot resolve the path: " + errnoText();
    return false;
  }
  struct stat st;
  if (::stat(target_.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    *error = path + ": exists and is not a directory";
    return false;
  }
  // The rename would leave a process inside the replaced directory in a
  // deleted one, seeing nothing of what was written.
  const std::string cwd = resolvedPath(".");
  if (target_ == "/" || cwd == target_ ||
      cwd.compare(0, target_.size() + 1, target_ + "/") == 0) {
    *error = path + ": is the working directory or holds it, which the "
                    "new directory would replace; give a path outside it";
    return false;
  }
  // As for a file: the name is recorded before the directory exists.
  int slot = -1;
  std::string tmp;
  bool created = false;
  for (int attempt = 0; attempt < 100 && !created; ++attempt) {
    tmp = tempName(target_);
    slot = registerTemp(tmp, /*directory=*/true);
    created = ::mkdir(tmp.c_str(), 0755) == 0;
    if (!created && slot >= 0)
      tempUsed[slot] = 0;
    if (!created && errno != EEXIST)
      break;
  }
  if (!created) {
    *error = path + ": cannot create a directory beside it: " + errnoText();
    return false;
  }
  tmp_ = tmp;
  return true;
}

bool OutputDirectory::commit(bool replace, std::string *error) {
  if (tmp_.empty()) {
    *error = path_ + ": not open";
    return false;
  }
  syncDirectory(tmp_);
  struct stat st;
  if (!replace || ::lstat(target_.c_str(), &st) != 0) {
    // rename() replaces an empty directory only.
    if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
      *error = errno == ENOTEMPTY || errno == EEXIST
                   ? path_ + ": is not empty (written meanwhile by another "
                             "process?); the new directory is not kept"
                   : path_ + ": cannot rename the new directory into place: " +
                         errnoText();
      abandon();
      return false;
    }
    renamedIntoPlace(&tmp_, target_);
    return true;
  }
  // The new directory takes the path in one step and the old one its temp
  // name, still recorded: a signal from here on removes the old one.
  if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(),
                  RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS) {
      *error = path_ + ": cannot replace it: " + errnoText();
      abandon();
      return false;
    }
    // A filesystem without the exchange (NFS): the old directory is moved
    // aside first, so for a moment the path names nothing.
    const std::string aside = tempName(target_);
    registerTemp(aside, /*directory=*/true);
    if (::rename(target_.c_str(), aside.c_str()) != 0 ||
        ::rename(tmp_.c_str(), target_.c_str()) != 0) {
      *error = path_ + ": cannot replace it: " + errnoText();
      ::rename(aside.c_str(), target_.c_str()); // back, if it was moved
      forgetTemp(aside);
      abandon();
      return false;
    }
    forgetTemp(tmp_);
    tmp_ = aside;
  }
  syncDirectory(directoryOf(target_));
  const std::string old = tmp_;
  const bool removed = removeDirectoryOfFiles(old.c_str());
  forgetTemp(old);
  tmp_.clear();
  if (!removed) {
    *error = path_ + ": written, but the directory it replaced, now " + old +
             ", could not be removed: " + errnoText();
    return false;
  }
  return true;
}

void OutputDirectory::abandon() {
  if (tmp_.empty())
    return;
  removeDirectoryOfFiles(tmp_.c_str());
  forgetTemp(tmp_);
  tmp_.clear();
}

} // namespace pccx
