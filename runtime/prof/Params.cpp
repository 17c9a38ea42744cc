//===- Params.cpp - the timing model's parameters -------------------------===//

#include "runtime/prof/Params.h"

#include <cmath>
#include <cstdlib>

namespace pccx::prof {

const std::vector<Params::Info> &Params::all() {
  static const std::vector<Info> list = {
#define PCCX_MACHINE_PARAM(Name, Value, Unit, Source)                          \
  {#Name, Unit, Source, &Params::Name},
#include "hw/machine/V002Machine.def"
#define PCCX_COST_PARAM(Name, Value, Unit, Source)                             \
  {#Name, Unit, Source, &Params::Name},
#include "hw/machine/HostCosts.def"
  };
  return list;
}

bool Params::set(const std::string &assignment, std::string *error) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos) {
    *error = "--set '" + assignment + "': expected NAME=VALUE";
    return false;
  }
  std::string name = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  for (const Info &p : all()) {
    if (name != p.name)
      continue;
    char *end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !std::isfinite(v) || v < 0) {
      *error =
          "--set " + name + ": '" + text + "' is not a non-negative number";
      return false;
    }
    // Rates, clocks and counts divide; latencies and per-unit costs may be
    // zero in a what-if.
    bool divides = false;
    for (const char *part : {"mhz", "mb_per_s", "per_clock", "per_cycle",
                             "cores", "ports", "divisor", "threads"})
      divides |= name.find(part) != std::string::npos;
    bool mayBeZero = !divides;
    if (v == 0 && !mayBeZero) {
      *error = "--set " + name + ": must be positive";
      return false;
    }
    this->*(p.field) = v;
    return true;
  }
  *error = "--set: no parameter named '" + name +
           "' (pccx-prof --list-parameters prints them)";
  return false;
}

} // namespace pccx::prof
