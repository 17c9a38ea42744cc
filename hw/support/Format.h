//===- Format.h - printf-style std::string formatting -----------*- C++ -*-===//
//
// Messages of the plain-C++ libraries (ISA, bundle, simulator) are built
// with this; it never truncates.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_SUPPORT_FORMAT_H
#define PCCX_HW_SUPPORT_FORMAT_H

#include <string>

namespace pccx {

std::string formatString(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/// The value of hexadecimal digit `c` (either case), or false.
inline bool hexDigitValue(char c, unsigned *value) {
  if (c >= '0' && c <= '9')
    *value = unsigned(c - '0');
  else if (c >= 'a' && c <= 'f')
    *value = unsigned(c - 'a' + 10);
  else if (c >= 'A' && c <= 'F')
    *value = unsigned(c - 'A' + 10);
  else
    return false;
  return true;
}

} // namespace pccx

#endif
