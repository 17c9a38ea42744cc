//===- ModelImporter.h - checkpoint to gemma3n IR ---------------*- C++ -*-===//
//
// Builds the gemma3n module of a Hugging Face Gemma 3n checkpoint: a
// `decode_step` function (one token) and a `prefill` function (any number of
// tokens), each returning logits and the updated KV caches. Weights appear as
// `gemma3n.weight` ops naming checkpoint tensors (their data stays in the
// mapped files); every op's location names the checkpoint tensor or module
// it comes from.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_DIALECTS_GEMMA3N_MODEL_MODELIMPORTER_H
#define PCCX_DIALECTS_GEMMA3N_MODEL_MODELIMPORTER_H

#include "dialects/Gemma3n/model/ModelInfo.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <string>

namespace pccx {

/// The gemma3n module of `checkpoint`, its KV caches `maxSeqLen` slots long
/// (CompileOptions::maxSeqLen: of the compile options, only it shapes the
/// imported IR).
mlir::OwningOpRef<mlir::ModuleOp>
importModel(mlir::MLIRContext &context, const LoadedCheckpoint &checkpoint,
            int64_t maxSeqLen, std::string *error);

} // namespace pccx

#endif
