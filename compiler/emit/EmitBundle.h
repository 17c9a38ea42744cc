//===- EmitBundle.h - lowered module to a .pccx bundle ----------*- C++ -*-===//
//
// Writes a module whose pccx programs have been through the machine passes
// as a bundle (docs/bundle-format.md): the manifest, one program section per
// program, the weight records in consumption order (streamed from the
// checkpoint, quantized on the way), host tensors and gather tables.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_COMPILER_EMIT_EMITBUNDLE_H
#define PCCX_COMPILER_EMIT_EMITBUNDLE_H

#include "compiler/CompileOptions.h"
#include "hw/machine/Target.h"
#include "hw/numerics/Gptq.h"
#include "mlir/IR/BuiltinOps.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace pccx {

struct EmitOptions {
  /// Stored in the manifest ("compile_options"): compileOptionsRecord()
  /// without the target, which the emitter takes from the module
  /// (pccx.target): the words follow it, and what it cannot run is refused.
  nlohmann::json compileOptions = nlohmann::json::object();
  /// Storage of the host KV caches (attention on the host).
  KvDtype kvDtype = KvDtype::F16;
  /// Optional tokenizer model file to embed.
  std::string tokenizerPath;
  /// The checkpoint's chat template (Jinja text), stored verbatim under the
  /// manifest key "chat_template" when not empty.
  std::string chatTemplate;
  /// Calibration statistics for recipes with GPTQ rounding (by full
  /// checkpoint name); must outlive emitBundle.
  const std::map<std::string, hw::InputGram> *inputGrams = nullptr;
  /// Called while the weights are written: bytes done and total, and the
  /// tensor (weight record, host tensor or gather table) being written,
  /// 1-based, of how many.
  std::function<void(uint64_t done, uint64_t total, size_t item, size_t items)>
      progress;
  /// Threads that quantize weights (0 = one per hardware thread). The
  /// bundle's bytes do not depend on it, so it is not a compile option.
  unsigned threads = 0;
};

/// The emit options a module records in kCompileOptionsAttr
/// (recordCompileOptions): the manifest's compile options, and the
/// kv_dtype, tokenizer and chat template they name.
bool emitOptionsFromModule(mlir::ModuleOp module, EmitOptions *options,
                           std::string *error);

/// Writes the bundle atomically to `path`. Errors name the op or tensor.
bool emitBundle(mlir::ModuleOp module, const std::string &path,
                const EmitOptions &options, std::string *error);

/// Registers the `--pccx-to-bundle` translation (pccx-translate): a lowered
/// module, read from text, written as a bundle.
void registerBundleTranslation();

} // namespace pccx

#endif
