//===- SimDevice.cpp - the functional simulator as a Device ---------------===//

#include "runtime/devices/SimDevice.h"

#include "runtime/devices/Devices.h"

namespace pccx::device {

bool SimDevice::issue(uint64_t word, uint64_t index, std::string *error) {
  isa::Instruction inst;
  std::string why;
  if (!isa::decode(word, inst, &why)) {
    *error = "instruction " + std::to_string(index) + ": " + why;
    return false;
  }
  return sim_.execute(inst, error);
}

namespace {

std::unique_ptr<Device> openSim(const OptionValues &options,
                                machine::Target target, std::string *) {
  sim::Numerics numerics = sim::Numerics::Hardware;
  sim::parseNumerics(options.text("numerics"), &numerics); // a listed choice
  auto sim = std::make_unique<SimDevice>(numerics, target);
  sim->simulator().setThreads(unsigned(options.count("threads")));
  return sim;
}

} // namespace

const DeviceSpec &simDevice() {
  static const DeviceSpec spec = {
      "sim",
      "the functional simulator: runs bundles of every target, bit for bit "
      "what the board computes in hardware numerics",
      {OptionSpec::choice(
           "numerics", "hardware", "MODE",
           "reference (fp32 everywhere, exact fp32 keys and values), "
           "hardware (BF16 in L2, keys and values as the bundle stores "
           "them: INT8 KV records, or the host cache dtype of --attention "
           "host) or integer (hardware, with the weight matrices "
           "multiplied by INT8 activations in exact integer sums: the "
           "CPU's fast path, docs/isa-semantics.md)",
           {"hardware", "reference", "integer"}),
       OptionSpec::count("threads", "0", "N",
                         "threads that share each GEMV/GEMM, 0 for one per "
                         "hardware thread; results are the same bit for bit "
                         "at every count",
                         1024)},
      openSim};
  return spec;
}

} // namespace pccx::device
