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
      "the functional simulator: runs bundles of every target on this "
      "CPU, by default in its fast integer numerics; bit for bit what the "
      "board computes in hardware numerics",
      {OptionSpec::choice(
           "numerics", "integer", "MODE",
           "integer (the CPU's fast path: hardware numerics with the "
           "weight matrices multiplied by INT8 activations in exact "
           "integer sums, the same bits on every CPU), hardware (the "
           "NPU's datapath bit for bit: BF16 in L2, keys and values as the "
           "bundle stores them: INT8 KV records, or the host cache dtype "
           "of --attention host; what verification runs) or reference "
           "(fp32 everywhere, exact fp32 keys and values); "
           "docs/isa-semantics.md",
           {"integer", "hardware", "reference"}),
       OptionSpec::count("threads", "0", "N",
                         "threads that share each GEMV/GEMM, 0 for one per "
                         "hardware thread; results are the same bit for bit "
                         "at every count",
                         1024)},
      openSim};
  return spec;
}

} // namespace pccx::device
