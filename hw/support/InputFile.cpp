//===- InputFile.cpp - bounded reads of input files -----------------------===//

#include "hw/support/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pccx::support {

namespace {

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

} // namespace

int openRegularFile(const std::string &path, std::string *error) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *error = path + ": cannot read: " + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *error = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": is " + kindOf(st.st_mode) + ", not a regular file";
    ::close(fd);
    return -1;
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

bool readInputFile(const std::string &path, uint64_t maxBytes,
                   std::string *out, std::string *error) {
  int fd = openRegularFile(path, error);
  if (fd < 0)
    return false;
  auto tooLarge = [&] {
    *error = path + ": larger than " + std::to_string(maxBytes) +
             " bytes, the limit for this file";
    ::close(fd);
    return false;
  };
  struct stat st;
  if (::fstat(fd, &st) == 0 && uint64_t(st.st_size) > maxBytes)
    return tooLarge();
  out->clear();
  out->reserve(size_t(st.st_size));
  char buf[1 << 16];
  // Read to EOF, not to st_size: the file may grow while it is read, and
  // the cap holds whatever it does.
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      *error = path + ": cannot read: " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0)
      break;
    if (out->size() + size_t(n) > maxBytes)
      return tooLarge();
    out->append(buf, size_t(n));
  }
  ::close(fd);
  return true;
}

} // namespace pccx::support
