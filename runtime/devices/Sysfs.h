//===- Sysfs.h - reading the one-line files of /sys ---------------*- C++ -*-===//

#ifndef PCCX_RUNTIME_DEVICES_SYSFS_H
#define PCCX_RUNTIME_DEVICES_SYSFS_H

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace pccx::device {

/// The first line of `path`; false when it cannot be opened.
inline bool readSysfsText(const std::string &path, std::string *out) {
  std::ifstream in(path);
  if (!in)
    return false;
  std::getline(in, *out);
  return true;
}

/// A number in C notation (decimal, 0x hex) from the first line of `path`.
inline bool readSysfsNumber(const std::string &path, uint64_t *out) {
  std::string text;
  if (!readSysfsText(path, &text))
    return false;
  char *end = nullptr;
  errno = 0;
  *out = std::strtoull(text.c_str(), &end, 0);
  return end != text.c_str() && errno == 0;
}

} // namespace pccx::device

#endif
