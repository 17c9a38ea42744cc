//===- CompileOptions.h - the options of one compile ------------*- C++ -*-===//
//
// Every option that decides what a compile produces, typed, in one struct:
// pccx-compile's command line and pccx-opt's pipeline options both fill it
// (through the parse functions below, so both give the same errors), the
// pipelines are built from it, and compileOptionsRecord() is the one place
// it becomes the module's `pccx.compile_options` dictionary, which the
// emitter copies into the bundle manifest ("compile_options",
// docs/bundle-format.md).
//
// Tool-only switches (output file, --emit, progress, quantization threads)
// are not compile options: the bundle's bytes do not depend on them.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_COMPILER_COMPILEOPTIONS_H
#define PCCX_COMPILER_COMPILEOPTIONS_H

#include "hw/machine/Target.h"
#include "hw/numerics/Quantize.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace pccx {

/// Where attention runs.
enum class Attention : uint8_t {
  Npu,  ///< Q.K and P.V on the NPU over KV caches kept as INT8 weight records
  Host, ///< dot products on the CPU over host KV caches (KvDtype)
};
/// Storage of the host KV caches of Attention::Host.
enum class KvDtype : uint8_t { F16, F32, Int8 };

/// "npu", "host".
const char *attentionName(Attention attention);
/// "f16", "f32", "int8".
const char *kvDtypeName(KvDtype dtype);

/// Text to value, as the command line and the pipeline options give it.
/// Errors name the option and what it accepts, e.g. "--attention must be
/// npu or host, got 'gpu'".
bool parseAttention(llvm::StringRef text, Attention *out, std::string *error);
bool parseKvDtype(llvm::StringRef text, KvDtype *out, std::string *error);
bool parseTarget(llvm::StringRef text, machine::Target *out,
                 std::string *error);
bool parseInt4Scales(llvm::StringRef text, hw::ScaleRule *out,
                     std::string *error);
bool parseInt4Rounding(llvm::StringRef text, hw::Rounding *out,
                       std::string *error);

struct CompileOptions {
  /// KV-cache positions per layer: a global layer's cache has this many
  /// slots, a sliding layer's at most this many (docs/lowering.md).
  int64_t maxSeqLen = 1024;
  /// Tokens per prefill step (the GEMM rows).
  int64_t prefillRows = 16;
  /// Sequences a batched decode step serves; above 1 the bundle carries a
  /// decode_batch program of that many rows.
  int64_t decodeBatch = 1;
  Attention attention = Attention::Npu;
  /// With Attention::Host; with Attention::Npu the caches are INT8 records
  /// and this stays at its default.
  KvDtype kvDtype = KvDtype::F16;
  machine::Target target = machine::kDefaultTarget;
  /// Tensors kept in INT8 instead of INT4: a regular expression on
  /// checkpoint names (empty: none). resolveInt8Budget adds its choice.
  std::string int8Weights;
  hw::ScaleRule int4Scales = hw::ScaleRule::Search;
  hw::Rounding int4Rounding = hw::Rounding::Nearest;
  /// The AltUp stream and per-layer projections in INT4 (default INT8).
  bool int4StreamProjections = false;
  /// --int8-budget as given ("10", "10%"); empty: no budget.
  std::string int8Budget;
  /// Calibration text for int8Budget and GPTQ rounding; empty: none.
  std::string calibration;
  /// SentencePiece model to embed; empty: CKPT_DIR/tokenizer.model when
  /// present (tokenizerModel()).
  std::string tokenizer;
  bool foldNormGains = true;
  bool fuseLaurel = true;
  /// Remarks with each tensor's relative INT4 error (nearest rounding).
  bool quantReport = false;
  /// Compile a checkpoint with NaN or infinite weights.
  bool allowNonFinite = false;

  bool gptq() const { return int4Rounding == hw::Rounding::Gptq; }
  /// The checks between options: calibration text given exactly when
  /// something uses it, no quantization report of GPTQ codes, a budget that
  /// is a percentage. Errors name the command-line options. (The sizes are
  /// checked where they are used: maxSeqLen by importModel, prefillRows by
  /// the conversion pass.)
  bool validate(std::string *error) const;
  /// int8Budget as a fraction of the INT4 weight bytes; the error names
  /// --int8-budget and the text given.
  bool int8BudgetFraction(double *fraction, std::string *error) const;
};

/// The tokenizer model of a compile of `checkpointDir`: options.tokenizer,
/// else CKPT_DIR/tokenizer.model (which may not exist).
std::string tokenizerModel(const CompileOptions &options,
                           llvm::StringRef checkpointDir);

/// Module attribute holding what the bundle records besides the programs (a
/// dictionary: the manifest's "compile_options" plus the inputs `tokenizer`,
/// the path of a SentencePiece model to embed, and `chat_template`, the
/// checkpoint's template). Set before the pipeline so that a saved module
/// can still be emitted (pccx-translate).
constexpr const char kCompileOptionsAttr[] = "pccx.compile_options";

/// The manifest's "compile_options" record of `options`
/// (docs/bundle-format.md): every option that shapes the bundle, and the
/// compiler version.
nlohmann::json compileOptionsRecord(const CompileOptions &options);

/// Sets kCompileOptionsAttr on `module`: compileOptionsRecord() and the
/// tokenizer and chat template found for `checkpointDir`. Errors name the
/// chat-template file.
bool recordCompileOptions(mlir::ModuleOp module, const CompileOptions &options,
                          llvm::StringRef checkpointDir, std::string *error);

/// pccx-compile's compile options as command-line options, in `category`
/// (the tool's own options share it, so --help lists them together).
/// Call once, before cl::ParseCommandLineOptions.
void registerCompileCLOptions(llvm::cl::OptionCategory &category);
/// The registered options after parsing, typed and validated.
bool compileOptionsFromCL(CompileOptions *options, std::string *error);

} // namespace pccx

#endif
