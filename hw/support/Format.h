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

} // namespace pccx

#endif
