//===- ProgramEncoder.h - pccx.program to words and tables ------*- C++ -*-===//
//
// Encodes one allocated pccx.program: its words (bit layout from hw/isa),
// and what the manifest says about them — segments with their host ops and
// scheduled syncs, patch points, the weight record of every GEMV/GEMM word
// (through the WeightPlan), the L2 memory map, the KV caches and a per-word
// annotation (segment, weight) for pccx-objdump.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_COMPILER_EMIT_PROGRAMENCODER_H
#define PCCX_COMPILER_EMIT_PROGRAMENCODER_H

#include "compiler/CompileOptions.h"
#include "compiler/emit/WeightPlan.h"
#include "dialects/Pccx/PccxOps.h"
#include "hw/machine/Target.h"
#include "runtime/bundle/ModelManifest.h"

#include <string>
#include <vector>

namespace pccx {

/// Appends program `program` to `manifest` and returns its words in
/// `words`. `kvDtype` is the storage of the program's host caches. Errors name
/// the op that cannot be encoded, or that `target` cannot run (the missing
/// capability).
bool encodeProgram(dialect::ProgramOp program, WeightPlan &weights,
                   KvDtype kvDtype, machine::Target target,
                   bundle::ModelManifest &manifest,
                   std::vector<uint64_t> &words, std::string *error);

} // namespace pccx

#endif
