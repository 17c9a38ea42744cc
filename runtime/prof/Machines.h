//===- Machines.h - the machines pccx-prof models ---------------*- C++ -*-===//
//
// The machine profiles of hw/machine/MachineProfiles.def: named sets of
// parameter values applied on top of V002Machine.def and HostCosts.def.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_PROF_MACHINES_H
#define PCCX_RUNTIME_PROF_MACHINES_H

#include "runtime/prof/Params.h"

#include <string>
#include <vector>

namespace pccx::prof {

/// The machine pccx-prof models unless told otherwise: the documented v002
/// overlay, the machine bundles of the default target are compiled for
/// (docs/performance.md, "Machines").
constexpr const char *kDefaultMachine = "v002";

struct MachineSetting {
  const char *param;
  double value;
  const char *source;
};
struct Machine {
  const char *name, *summary;
  std::vector<MachineSetting> settings;
};

/// Every machine, in table order.
const std::vector<Machine> &machines();
/// "v002, kv260-as-built".
std::string machineNames();
/// Applies machine `name`'s settings to `params`; false with a message
/// naming the machines otherwise.
bool applyMachine(const std::string &name, Params *params, std::string *error);

} // namespace pccx::prof

#endif
