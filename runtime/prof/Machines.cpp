//===- Machines.cpp - the machines pccx-prof models -----------------------===//

#include "runtime/prof/Machines.h"

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

std::string machineNames() {
  std::string out;
  for (const Machine &m : machines())
    out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

bool applyMachine(const std::string &name, Params *params, std::string *error) {
  for (const Machine &m : machines()) {
    if (name != m.name)
      continue;
    for (const MachineSetting &s : m.settings)
      for (const Params::Info &p : Params::all())
        if (std::string(p.name) == s.param)
          params->*(p.field) = s.value;
    return true;
  }
  *error =
      "--machine: no machine named '" + name + "' (" + machineNames() + ")";
  return false;
}

} // namespace pccx::prof
