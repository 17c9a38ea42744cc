//===- Target.h - target profiles of the v002 words -------------*- C++ -*-===//
//
// Which meaning the fields of a v002 word have: the documented semantics
// (v002) or the RTL's conventions (v002-rtl). One row of Targets.def each.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_MACHINE_TARGET_H
#define PCCX_HW_MACHINE_TARGET_H

#include "hw/isa/Isa.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace pccx::machine {

enum class Target : uint8_t {
#define PCCX_TARGET(Id, ...) Id,
#include "Targets.def"
};

/// The columns of Targets.def (described there).
struct TargetProfile {
  Target id;
  const char *name;
  bool matmulPointersSwapped;
  bool memcpyShapeProduct;
  bool memcpyL2ToL2;
  bool memcpyAuxAddr;
  bool cvoElementAddresses;
  uint32_t cvoMaxLength;
  bool gemvWriteback;
  bool gemmComputes;
  bool cvoComputes;
  uint32_t l2Words;
  uint32_t constCacheEntries;
  uint32_t hostWindowWords;
  const char *summary;
};

const TargetProfile &targetProfile(Target target);
/// The target called `name`, or false.
bool lookupTarget(std::string_view name, Target &target);
/// Every target name, comma separated, default first.
std::string targetNames();
/// The target a bundle without a recorded target was made for.
constexpr Target kDefaultTarget = Target::V002;

/// What the fields of `inst` mean on `target` where that differs from the
/// documented semantics, as a short note for disassembly listings; empty
/// when nothing differs.
std::string targetNote(const isa::Instruction &inst, Target target);

/// Why `target` cannot run `inst` at all (a missing capability), or empty.
std::string missingCapability(const isa::Instruction &inst, Target target);

/// Why `target`'s hardware computes `inst` other than documented, so that
/// the compiler refuses to emit it, or empty. Hand-written programs
/// (pccx-as, the conformance vectors, the KV260 driver) still run such
/// words: they are how the hardware is brought up against the simulator.
std::string wrongResult(const isa::Instruction &inst, Target target);

/// Why the compiler refuses to emit `inst` for `target` (a missing
/// capability, else a wrong result), or empty.
std::string refusedByCompiler(const isa::Instruction &inst, Target target);

} // namespace pccx::machine

#endif
