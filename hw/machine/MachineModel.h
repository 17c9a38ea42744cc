//===- MachineModel.h - pccx v002 machine parameters ------------*- C++ -*-===//
//
// Named constants from V002Machine.def, the list of all of them (for
// reports and `pccx-objdump`), and a digest that a bundle records.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_MACHINE_MACHINEMODEL_H
#define PCCX_HW_MACHINE_MACHINEMODEL_H

#include <cstddef>
#include <cstdint>

namespace pccx::machine {

#define PCCX_MACHINE_PARAM(Name, Value, Unit, Source)                          \
  constexpr uint64_t Name = Value;
#include "V002Machine.def"

struct Param {
  const char *name;
  uint64_t value;
  const char *unit;
  const char *source;
};

/// All parameters in table order.
const Param *params(size_t &count);

/// FNV-1a 64 over "name=value\n" of every parameter, in table order.
uint64_t digest();

/// Activation lanes per L2 word: BF16 packing, 8 x 16 bit (isa-semantics.md).
constexpr unsigned kLanesPerWord = l2_word_bits / 16;

} // namespace pccx::machine

#endif
