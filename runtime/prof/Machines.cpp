//===- Machines.cpp - the machines pccx-prof models -----------------------===//

#include "runtime/prof/Machines.h"

#include "hw/support/Names.h"

namespace pccx::prof {

namespace {
enum class MachineId {
#define PCCX_MACHINE(Id, Name, Summary) Id,
#include "hw/machine/MachineProfiles.def"
};
} // namespace

const std::vector<Machine> &machines() {
  static const std::vector<Machine> list = [] {
    std::vector<Machine> out = {
#define PCCX_MACHINE(Id, Name, Summary) {Name, Summary, {}},
#include "hw/machine/MachineProfiles.def"
    };
#define PCCX_MACHINE_SETTING(Machine, Param, Value, Source)                    \
  out[size_t(MachineId::Machine)].settings.push_back(                          \
      {#Param, double(Value), Source});
#include "hw/machine/MachineProfiles.def"
    return out;
  }();
  return list;
}

namespace {
const char *machineName(const Machine &m) { return m.name; }
} // namespace

std::string machineNames() {
  return support::joinNames(machines(), machineName);
}

bool applyMachine(const std::string &name, Params *params, std::string *error) {
  const Machine *m = support::findByName(machines(), name, machineName);
  if (!m) {
    *error =
        "--machine: no machine named '" + name + "' (" + machineNames() + ")";
    return false;
  }
  for (const MachineSetting &s : m->settings)
    for (const Params::Info &p : Params::all())
      if (std::string(p.name) == s.param)
        params->*(p.field) = s.value;
  return true;
}

} // namespace pccx::prof
