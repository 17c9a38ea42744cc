//===- Names.h - tables of named rows ---------------------------*- C++ -*-===//
//
// The one way the project lists the names of a table's rows in a message
// ("v002, v002-rtl") and finds a row by its name: targets, machine
// profiles, host kernels, checkpoint presets, devices. `name` projects a row
// to its name (a const char * or a std::string).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_SUPPORT_NAMES_H
#define PCCX_HW_SUPPORT_NAMES_H

#include <string>
#include <string_view>

namespace pccx::support {

/// The names of `rows`, in order, separated by `separator`.
template <typename Rows, typename Name>
std::string joinNames(const Rows &rows, Name name,
                      std::string_view separator = ", ") {
  std::string out;
  for (const auto &row : rows) {
    if (!out.empty())
      out += separator;
    out += name(row);
  }
  return out;
}

/// The row of `rows` called `wanted`, or null.
template <typename Rows, typename Name>
auto findByName(const Rows &rows, std::string_view wanted, Name name)
    -> decltype(&*std::begin(rows)) {
  for (const auto &row : rows)
    if (wanted == std::string_view(name(row)))
      return &row;
  return nullptr;
}

} // namespace pccx::support

#endif
