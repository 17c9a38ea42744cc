//===- CompileOptions.cpp - the options of one compile --------------------===//

#include "compiler/CompileOptions.h"

#include "runtime/import/ChatTemplateFile.h"
#include "dialects/Gemma3n/model/ModelInfo.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cassert>
#include <cstdlib>

using namespace llvm;

namespace pccx {

const char *attentionName(Attention attention) {
  return attention == Attention::Host ? "host" : "npu";
}

const char *kvDtypeName(KvDtype dtype) {
  switch (dtype) {
  case KvDtype::F16:
    return "f16";
  case KvDtype::F32:
    return "f32";
  case KvDtype::Int8:
    return "int8";
  }
  return "?";
}

bool parseAttention(StringRef text, Attention *out, std::string *error) {
  for (Attention a : {Attention::Npu, Attention::Host})
    if (text == attentionName(a)) {
      *out = a;
      return true;
    }
  *error = "--attention must be npu or host, got '" + text.str() + "'";
  return false;
}

bool parseKvDtype(StringRef text, KvDtype *out, std::string *error) {
  for (KvDtype d : {KvDtype::F16, KvDtype::F32, KvDtype::Int8})
    if (text == kvDtypeName(d)) {
      *out = d;
      return true;
    }
  *error = "--kv-dtype must be f16, f32 or int8, got '" + text.str() + "'";
  return false;
}

bool parseTarget(StringRef text, machine::Target *out, std::string *error) {
  if (machine::lookupTarget(std::string_view(text.data(), text.size()), *out))
    return true;
  *error = "--target must be one of " + machine::targetNames() + ", got '" +
           text.str() + "'";
  return false;
}

bool parseInt4Scales(StringRef text, hw::ScaleRule *out, std::string *error) {
  if (hw::parseScaleRule(text.str(), out))
    return true;
  *error = "--int4-scales must be absmax or search, got '" + text.str() + "'";
  return false;
}

bool parseInt4Rounding(StringRef text, hw::Rounding *out, std::string *error) {
  if (hw::parseRounding(text.str(), out))
    return true;
  *error = "--int4-rounding must be nearest or gptq, got '" + text.str() + "'";
  return false;
}

bool CompileOptions::validate(std::string *error) const {
  if (decodeBatch < 1 || decodeBatch > 256) {
    *error = "--decode-batch must be from 1 to 256, got " +
             std::to_string(decodeBatch);
    return false;
  }
  if (!int8Budget.empty() && calibration.empty()) {
    *error = "--int8-budget and --calibration go together";
    return false;
  }
  if (!calibration.empty() && int8Budget.empty() && !gptq()) {
    *error = "--calibration is used by --int8-budget and --int4-rounding "
             "gptq; give one of them";
    return false;
  }
  if (gptq() && quantReport) {
    *error = "--quant-report measures nearest rounding; it cannot be "
             "combined with --int4-rounding gptq";
    return false;
  }
  double fraction;
  return int8Budget.empty() || int8BudgetFraction(&fraction, error);
}

bool CompileOptions::int8BudgetFraction(double *fraction,
                                        std::string *error) const {
  std::string text = int8Budget;
  if (!text.empty() && text.back() == '%')
    text.pop_back();
  char *end = nullptr;
  double percent = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(percent >= 0 && percent <= 100)) {
    *error = "--int8-budget must be a percentage from 0 to 100, got '" +
             int8Budget + "'";
    return false;
  }
  *fraction = percent / 100;
  return true;
}

std::string tokenizerModel(const CompileOptions &options,
                           StringRef checkpointDir) {
  return options.tokenizer.empty() ? checkpointDir.str() + "/tokenizer.model"
                                   : options.tokenizer;
}

nlohmann::json compileOptionsRecord(const CompileOptions &options) {
  nlohmann::json record = {
      {"max_seq_len", options.maxSeqLen},
      {"prefill_rows", options.prefillRows},
      {"attention", attentionName(options.attention)},
      {"kv_dtype", kvDtypeName(options.kvDtype)},
      {"target", machine::targetProfile(options.target).name},
      {"fold_norm_gains", options.foldNormGains},
      {"fuse_laurel", options.fuseLaurel},
      {"quantization",
       hw::schemeName(hw::QuantScheme{
           hw::WeightFormat::Int4, options.int4Scales, options.int4Rounding})},
      {"int4_scales", hw::scaleRuleName(options.int4Scales)},
      {"compiler_version", PCCX_VERSION}};
  // Optional keys only when they differ from the default, so bundles of
  // default compiles keep the same manifest.
  if (!options.int8Weights.empty())
    record["int8_weights"] = options.int8Weights;
  if (options.gptq())
    record["int4_rounding"] = hw::roundingName(options.int4Rounding);
  if (options.int4StreamProjections)
    record["int4_stream_projections"] = true;
  if (options.decodeBatch > 1)
    record["decode_batch"] = options.decodeBatch;
  if (!options.int8Budget.empty())
    record["int8_budget"] = options.int8Budget;
  // The file name only: the path is of the compiling machine.
  if (!options.calibration.empty())
    record["calibration"] = sys::path::filename(options.calibration).str();
  return record;
}

bool recordCompileOptions(mlir::ModuleOp module, const CompileOptions &options,
                          StringRef checkpointDir, std::string *error) {
  nlohmann::json record = compileOptionsRecord(options);
  // Inputs of the bundle besides the options (emitOptionsFromModule takes
  // them out again): the tokenizer to embed and the chat template.
  std::string tokenizer = tokenizerModel(options, checkpointDir);
  if (!options.tokenizer.empty() || sys::fs::exists(tokenizer))
    record["tokenizer"] = tokenizer;
  std::string chatTemplate, templateSource;
  if (!import::readChatTemplate(checkpointDir.str(), &chatTemplate,
                                &templateSource, error))
    return false;
  if (!chatTemplate.empty())
    record["chat_template"] = chatTemplate;
  mlir::Builder b(module.getContext());
  module->setAttr(kCompileOptionsAttr, jsonToAttr(b, record));
  return true;
}

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

namespace {

/// The options as pccx-compile's command line spells them. The enumerated
/// ones are read as text and parsed by the functions above, which name the
/// accepted values in their errors.
struct CompileCLOptions {
  explicit CompileCLOptions(cl::OptionCategory &category)
      : maxSeqLen("max-seq-len",
                  cl::desc("KV-cache positions per layer (default 1024)"),
                  cl::init(1024), cl::cat(category)),
        prefillRows("prefill-rows",
                    cl::desc("Tokens per prefill step, the GEMM rows "
                             "(default 16)"),
                    cl::init(16), cl::cat(category)),
        decodeBatch("decode-batch",
                    cl::desc("Sequences one batched decode step serves, 1 to "
                             "256 (default 1: no batch program). Above 1 the "
                             "bundle also carries a decode_batch program: "
                             "one pass over the weights for that many "
                             "sequences (docs/serving.md)"),
                    cl::init(1), cl::cat(category)),
        attention(
            "attention",
            cl::desc("Where attention runs: npu (default; Q.K and P.V as "
                     "GEMV/GEMM over KV caches kept as INT8 weight records "
                     "in device memory) or host (dot products on the CPU "
                     "over host KV caches, see --kv-dtype)"),
            cl::init("npu"), cl::cat(category)),
        target("target",
               cl::desc("Target profile the words follow: v002 (default, "
                        "the documented semantics) or v002-rtl (the "
                        "conventions of the v002 RTL; docs/isa-semantics.md, "
                        "Targets). What the target cannot run is refused, "
                        "naming the missing capability"),
               cl::init("v002"), cl::cat(category)),
        kvDtype("kv-dtype",
                cl::desc("With --attention host: KV-cache storage on the "
                         "host, f16 (default), f32, or int8 (one scale per "
                         "cached row)"),
                cl::init("f16"), cl::cat(category)),
        int8Weights(
            "int8-weights",
            cl::desc("Keep the weights whose checkpoint name matches this "
                     "regular expression in INT8 instead of INT4 (e.g. "
                     "'.*self_attn\\..*' or '.*' for all); one scale per row "
                     "either way"),
            cl::value_desc("regex"), cl::init(""), cl::cat(category)),
        int4Scales(
            "int4-scales",
            cl::desc("How INT4 row scales are chosen: search (default; the "
                     "scale with the least squared row error, "
                     "docs/quantization.md) or absmax (max|row| / 7); the "
                     "record format is the same"),
            cl::value_desc("search|absmax"), cl::init("search"),
            cl::cat(category)),
        int4StreamProjections(
            "int4-stream-projections",
            cl::desc("Quantize the AltUp stream projections and the "
                     "per-layer projections to INT4 (default INT8: INT4 "
                     "costs measurable quality there for ~1 % of the weight "
                     "bytes per token)"),
            cl::init(false), cl::cat(category)),
        int8Budget(
            "int8-budget",
            cl::desc("Keep in INT8 the tensors whose INT4 quantization moves "
                     "the float reference's predictions on the --calibration "
                     "text most per extra byte, spending at most P percent "
                     "of the INT4 weight bytes (e.g. 10 or 10%); adds to "
                     "--int8-weights"),
            cl::value_desc("P"), cl::init(""), cl::cat(category)),
        int4Rounding(
            "int4-rounding",
            cl::desc("How INT4 codes are rounded: nearest (default) or gptq "
                     "(each row's rounding error spread over its later "
                     "columns to minimise the projection's output error on "
                     "the --calibration text; without --calibration only the "
                     "LM head, against its own rows; docs/quantization.md)"),
            cl::value_desc("nearest|gptq"), cl::init("nearest"),
            cl::cat(category)),
        calibration(
            "calibration",
            cl::desc("Text file for --int8-budget and --int4-rounding gptq, "
                     "tokenized with the checkpoint's tokenizer.model into "
                     "windows of up to 128 positions (the budget scores the "
                     "first 4, gptq uses up to 64)"),
            cl::value_desc("file"), cl::init(""), cl::cat(category)),
        quantReport(
            "quant-report",
            cl::desc("Report each tensor's relative INT4 quantization error"),
            cl::init(false), cl::cat(category)),
        allowNonFinite(
            "allow-nonfinite",
            cl::desc("Compile a checkpoint with NaN or infinite weights "
                     "(refused by default; each such tensor is still named "
                     "in a warning)"),
            cl::init(false), cl::cat(category)),
        noFoldNormGains(
            "no-fold-norm-gains",
            cl::desc("Keep RMSNorm gains out of the projection weights"),
            cl::init(false), cl::cat(category)),
        noFuseLaurel("no-fuse-laurel",
                     cl::desc("Keep the LAuReL branch unfused"),
                     cl::init(false), cl::cat(category)),
        tokenizer("tokenizer",
                  cl::desc("SentencePiece model to embed (default: "
                           "CKPT_DIR/tokenizer.model when present)"),
                  cl::value_desc("file"), cl::init(""), cl::cat(category)) {}

  cl::opt<int64_t> maxSeqLen, prefillRows, decodeBatch;
  cl::opt<std::string> attention, target, kvDtype, int8Weights, int4Scales;
  cl::opt<bool> int4StreamProjections;
  cl::opt<std::string> int8Budget, int4Rounding, calibration;
  cl::opt<bool> quantReport, allowNonFinite, noFoldNormGains, noFuseLaurel;
  cl::opt<std::string> tokenizer;
};

CompileCLOptions *clOptions = nullptr;

} // namespace

void registerCompileCLOptions(cl::OptionCategory &category) {
  static CompileCLOptions options(category);
  clOptions = &options;
}

bool compileOptionsFromCL(CompileOptions *options, std::string *error) {
  assert(clOptions && "registerCompileCLOptions was not called");
  const CompileCLOptions &cl = *clOptions;
  CompileOptions o;
  o.maxSeqLen = cl.maxSeqLen;
  o.prefillRows = cl.prefillRows;
  o.decodeBatch = cl.decodeBatch;
  if (!parseKvDtype(cl.kvDtype, &o.kvDtype, error) ||
      !parseAttention(cl.attention, &o.attention, error))
    return false;
  if (o.attention == Attention::Npu && cl.kvDtype.getNumOccurrences()) {
    *error = "--kv-dtype sets the host KV caches of --attention host; with "
             "attention on the NPU the caches are INT8 weight records "
             "(docs/lowering.md)";
    return false;
  }
  if (!parseTarget(cl.target, &o.target, error) ||
      !parseInt4Scales(cl.int4Scales, &o.int4Scales, error) ||
      !parseInt4Rounding(cl.int4Rounding, &o.int4Rounding, error))
    return false;
  o.int8Weights = cl.int8Weights;
  o.int4StreamProjections = cl.int4StreamProjections;
  o.int8Budget = cl.int8Budget;
  o.calibration = cl.calibration;
  o.tokenizer = cl.tokenizer;
  o.foldNormGains = !cl.noFoldNormGains;
  o.fuseLaurel = !cl.noFuseLaurel;
  o.quantReport = cl.quantReport;
  o.allowNonFinite = cl.allowNonFinite;
  if (!o.validate(error))
    return false;
  *options = std::move(o);
  return true;
}

} // namespace pccx
