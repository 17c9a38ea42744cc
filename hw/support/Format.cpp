//===- Format.cpp - printf-style std::string formatting -------------------===//

#include "hw/support/Format.h"

#include <cstdarg>
#include <cstdio>

namespace pccx {

std::string formatString(const char *fmt, ...) {
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string out;
  if (n > 0) {
    out.resize(size_t(n) + 1);
    std::vsnprintf(&out[0], out.size(), fmt, again);
    out.resize(size_t(n));
  }
  va_end(again);
  return out;
}

} // namespace pccx
