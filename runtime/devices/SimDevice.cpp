//===- SimDevice.cpp - the functional simulator as a Device ---------------===//

#include "runtime/devices/SimDevice.h"

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

} // namespace pccx::device
