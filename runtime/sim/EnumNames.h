//===- EnumNames.h - an option's enum values by their names ----*- C++ -*-===//
//
// The simulator's choices (numerics modes, GEMV kernels) are enums with one
// name each, written in one switch; reading a name back walks the values
// through that same function, so the two never disagree.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SIM_ENUMNAMES_H
#define PCCX_RUNTIME_SIM_ENUMNAMES_H

#include <initializer_list>
#include <string>

namespace pccx::sim {

/// Sets `*out` to the value of `values` whose nameOf is `name`.
template <typename Enum>
bool parseEnumName(const std::string &name, std::initializer_list<Enum> values,
                   const char *(*nameOf)(Enum), Enum *out) {
  for (Enum each : values)
    if (name == nameOf(each)) {
      *out = each;
      return true;
    }
  return false;
}

} // namespace pccx::sim

#endif // PCCX_RUNTIME_SIM_ENUMNAMES_H
