//===- Devices.cpp - the device table ------------------------------------===//

#include "runtime/devices/Devices.h"

#include "runtime/devices/Kv260Device.h"
#include "runtime/devices/SimDevice.h"

namespace pccx::device {

namespace {

struct Entry {
  const char *name;
  std::unique_ptr<Device> (*open)(const DeviceOptions &, std::string *);
};

std::unique_ptr<Device> openSim(const DeviceOptions &options,
                                std::string *error) {
  if (options.numerics != "hardware" && options.numerics != "reference") {
    *error = "sim: numerics must be 'hardware' or 'reference', not '" +
             options.numerics + "'";
    return nullptr;
  }
  auto sim = std::make_unique<SimDevice>(options.numerics == "reference"
                                             ? sim::Numerics::Reference
                                             : sim::Numerics::Hardware,
                                         options.target);
  sim->simulator().setThreads(options.threads);
  return sim;
}

std::unique_ptr<Device> openBoard(const DeviceOptions &options,
                                  std::string *error) {
  if (options.numerics != "hardware") {
    *error = "kv260: the board computes in hardware numerics; '" +
             options.numerics + "' numerics are a simulator mode";
    return nullptr;
  }
  if (options.target != machine::Target::V002Rtl) {
    // The overlay is the v002 RTL: its MEMCPY has no host offset and row
    // stride, and its GEMV no result path (docs/isa-semantics.md §13).
    *error = std::string("kv260: the overlay runs the v002 RTL's "
                         "conventions; this bundle is for target ") +
             machine::targetProfile(options.target).name +
             ": compile it with --target v002-rtl (docs/kv260.md §5)";
    return nullptr;
  }
  return openKv260(options.uioName, options.udmabuf, options.dmaWindow, error);
}

const Entry kDevices[] = {{"sim", openSim}, {"kv260", openBoard}};

} // namespace

std::vector<std::string> deviceNames() {
  std::vector<std::string> names;
  for (const Entry &e : kDevices)
    names.push_back(e.name);
  return names;
}

std::unique_ptr<Device> openDevice(const std::string &name,
                                   const DeviceOptions &options,
                                   std::string *error) {
  for (const Entry &e : kDevices)
    if (name == e.name)
      return e.open(options, error);
  std::string known;
  for (const Entry &e : kDevices)
    known += std::string(known.empty() ? "" : ", ") + e.name;
  *error = "unknown device '" + name + "' (known: " + known + ")";
  return nullptr;
}

} // namespace pccx::device
