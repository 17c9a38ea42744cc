//===- ExportEffective.h - a bundle's weights as a checkpoint ---*- C++ -*-===//
//
// Writes a Hugging Face-layout checkpoint (config.json with the bundle's
// text config, float32 safetensors, the original tensor names) whose
// weights are exactly what the bundle computes with: INT4 records and
// gather tables dequantized; a gain the compiler folded into a projection
// stays in that projection's columns and the norm's gain becomes ones
// (the same product, in the original layout); gains scaled by a constant
// are divided back. Tensors the bundle does not use (the K/V projections
// of KV-shared layers) are written as zeros.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_REFERENCE_EXPORTEFFECTIVE_H
#define PCCX_RUNTIME_REFERENCE_EXPORTEFFECTIVE_H

#include "runtime/bundle/Bundle.h"

#include <string>

namespace pccx::reference {

/// Refuses a `dir` that holds anything unless `overwrite`
/// (import::checkCheckpointOutput): an export must not silently replace the
/// weights of a checkpoint, such as the one compiled. With it, the export
/// replaces the directory whole (written beside it, then renamed), so no
/// shard or index of the old checkpoint survives.
/// `overwriteFlag`: the option a refusal names (null: none).
bool checkExportDirectory(const std::string &dir, bool overwrite,
                          std::string *error,
                          const char *overwriteFlag = "--export-overwrite");

bool exportEffectiveWeights(const bundle::Bundle &bundle,
                            const std::string &dir, std::string *error,
                            bool overwrite = false,
                            const char *overwriteFlag = "--export-overwrite");

} // namespace pccx::reference

#endif
