//===- MachineModel.cpp - pccx v002 machine parameters ----------*- C++ -*-===//

#include "MachineModel.h"

#include <string>

namespace pccx::machine {
namespace {
const Param kParams[] = {
#define PCCX_MACHINE_PARAM(Name, Value, Unit, Source)                          \
  {#Name, Value, Unit, Source},
#include "V002Machine.def"
};
} // namespace

const Param *params(size_t &count) {
  count = sizeof(kParams) / sizeof(kParams[0]);
  return kParams;
}

uint64_t digest() {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const Param &p : kParams) {
    std::string line = std::string(p.name) + "=" + std::to_string(p.value) + "\n";
    for (unsigned char c : line) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

} // namespace pccx::machine
