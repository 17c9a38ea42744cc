//===- Params.h - the timing model's parameters -----------------*- C++ -*-===//
//
// Every number the timing model uses: the machine table
// (hw/machine/V002Machine.def) and the system costs
// (hw/machine/HostCosts.def), as one overridable set of doubles with each
// value's unit and source.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_PROF_PARAMS_H
#define PCCX_RUNTIME_PROF_PARAMS_H

#include <string>
#include <vector>

namespace pccx::prof {

struct Params {
#define PCCX_MACHINE_PARAM(Name, Value, Unit, Source)                          \
  double Name = double(Value);
#include "hw/machine/V002Machine.def"
#define PCCX_COST_PARAM(Name, Value, Unit, Source) double Name = double(Value);
#include "hw/machine/HostCosts.def"

  struct Info {
    const char *name, *unit, *source;
    double Params::*field;
  };
  /// Every parameter, machine table first, in table order.
  static const std::vector<Info> &all();

  /// Applies "name=value". False with a message naming the parameter or
  /// the value otherwise (unknown name, not a number, not positive where
  /// the model divides by it).
  bool set(const std::string &assignment, std::string *error);

  /// Applies a parameter file: one NAME=VALUE per line; blank lines and
  /// text after '#' are ignored. Errors name the file and the line.
  bool load(const std::string &path, std::string *error);

private:
  /// set() without the option name in its messages.
  bool assign(const std::string &assignment, std::string *error);
};

} // namespace pccx::prof

#endif
