//===- main.cpp - pccx-reference --------------------------------*- C++ -*-===//
//
// Runs the fp32 float reference (runtime/reference) on a checkpoint: the
// golden model that bundles and the simulator are compared with.
//
//===----------------------------------------------------------------------===//

#include "runtime/import/Gemma3nConfig.h"
#include "runtime/import/Safetensors.h"
#include "runtime/reference/BundleWeights.h"
#include "runtime/reference/Reference.h"
#include "runtime/reference/ReferenceCheckpoint.h"
#include "hw/support/OutputFile.h"
#include "tools/common/CommandLine.h"
#include "tools/common/GuardedMain.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

const char kHelp[] =
    R"(USAGE: pccx-reference CKPT_DIR --tokens IDS [options]

Runs the Gemma 3n text decoder of CKPT_DIR (config.json + safetensors) in
float32, as Hugging Face transformers computes it, over the token ids IDS
(comma-separated): the prompt is consumed as one prefill block, then
--max-new-tokens greedy steps follow, one token each through the KV
cache.
Prints one line per position: position, input token, argmax and its logit.

OPTIONS:
  --tokens IDS         comma-separated token ids (required)
  --max-new-tokens N   greedy decode steps after the prompt (default 0;
                       --generate N is the old name)
  --decode-only        consume the prompt one token at a time instead
  --int4               use INT4-quantized weights (one scale per row, the
                       default policy's tensors) instead of the originals
  --int4-scales RULE   search (default: the scale with the least squared
                       row error) or absmax (scale max|row|/7), as
                       pccx-compile --int4-scales
  --int4-group N       with --int4: one scale per N columns (a multiple of
                       32), as pccx-compile --int4-group; 0 (default) one
                       per row
  --bundle FILE        use exactly the weights the compiled bundle FILE
                       computes with (dequantized, folded gains divided
                       back out)
  --kv-records         keep cached keys and values as the KV records of
                       attention on the NPU hold them (INT8; pccx-compile
                       --attention npu, the default): what the bundle
                       computes in hardware numerics
  --dump-logits FILE   write float32 little-endian rows of vocab_size
                       logits, one per position, in order
  --max-positions N    KV-cache capacity (default: prompt + --max-new-tokens)
  --matformer-slice S  run the MatFormer slice S of the checkpoint (a
                       published name or a slice file, as pccx-compile
                       --matformer-slice takes it; docs/matformer.md)
  -h, --help           show this help
  --version            print the version and exit
)";

} // namespace

static int run(int argc, char **argv) {
  std::string dir, tokensText, dumpPath, bundlePath, matformerSlice;
  int64_t generate = 0, maxPositions = 0;
  bool int4 = false, decodeOnly = false, kvRecords = false;
  pccx::hw::ScaleRule int4Rule = pccx::hw::ScaleRule::Search;
  int64_t int4Group = 0;
  pccx::tools::CommandLine cl("pccx-reference");
  auto fail = [&](const std::string &message) { return cl.fail(message); };
  cl.help([] { return std::string(kHelp); });
  cl.positional("checkpoint directory", &dir);
  cl.text("--tokens", &tokensText);
  cl.count("--max-new-tokens", &generate);
  cl.renamed("--generate", "--max-new-tokens");
  cl.count("--max-positions", &maxPositions);
  cl.text("--bundle", &bundlePath);
  cl.text("--dump-logits", &dumpPath);
  cl.value("--int4-scales", [&](const std::string &rule) {
    if (!pccx::hw::parseScaleRule(rule, &int4Rule))
      return "--int4-scales must be absmax or search, got '" + rule + "'";
    return std::string();
  });
  cl.count("--int4-group", &int4Group);
  cl.flag("--int4", &int4);
  cl.flag("--decode-only", &decodeOnly);
  cl.flag("--kv-records", &kvRecords);
  cl.text("--matformer-slice", &matformerSlice);
  int status = 0;
  if (!cl.parse(argc, argv, &status))
    return status;
  if (dir.empty())
    return fail("no checkpoint directory (see --help)");
  if (tokensText.empty())
    return fail("no --tokens given");

  std::string error;
  std::vector<int32_t> prompt;
  if (!pccx::tools::parseTokenIds(tokensText, "--tokens", &prompt, &error))
    return fail(error);
  auto checkpoint =
      pccx::reference::ReferenceCheckpoint::open(dir, &error, matformerSlice);
  if (!checkpoint)
    return fail(error);
  const pccx::import::Gemma3nTextConfig &config = checkpoint->config;
  const std::string &prefix = checkpoint->prefix;
  const pccx::reference::Weights &original = *checkpoint->original;
  if (std::string why = pccx::hw::checkGroup(int4Group); !why.empty())
    return fail("--int4-group: " + why);
  pccx::reference::Int4Weights quantized(
      original, pccx::import::isInt4ByDefault,
      {pccx::hw::WeightFormat::Int4, int4Rule,
       pccx::hw::Rounding::Nearest, int4Group});
  if (int4 && !bundlePath.empty())
    return fail("--int4 and --bundle exclude each other");
  std::unique_ptr<pccx::bundle::Bundle> bundle;
  std::unique_ptr<pccx::reference::BundleWeights> fromBundle;
  if (!bundlePath.empty()) {
    bundle = pccx::bundle::Bundle::open(bundlePath, &error);
    if (!bundle)
      return fail(error);
    fromBundle =
        pccx::reference::BundleWeights::create(*bundle, original, prefix,
                                               &error);
    if (!fromBundle)
      return fail(error);
  }
  const pccx::reference::Weights &weights =
      fromBundle ? static_cast<const pccx::reference::Weights &>(*fromBundle)
      : int4     ? static_cast<const pccx::reference::Weights &>(quantized)
                 : original;
  int64_t capacity =
      maxPositions ? maxPositions : int64_t(prompt.size()) + generate;
  pccx::reference::Model model(config, weights, capacity);
  model.setKvRecords(kvRecords);
  if (!model.ok(&error))
    return fail(error);

  pccx::OutputFile dumpFile;
  if (!dumpPath.empty() && !dumpFile.open(dumpPath, &error))
    return fail(error);
  std::FILE *dump = dumpFile.stream();
  const int64_t V = config.vocab_size;
  int64_t rows = 0;
  auto report = [&](const std::vector<int32_t> &in,
                    const std::vector<float> &logits) -> int32_t {
    int32_t last = 0;
    for (size_t t = 0; t < in.size(); ++t) {
      const float *row = logits.data() + t * size_t(V);
      last = int32_t(std::max_element(row, row + V) - row);
      std::printf("%lld %d -> %d (%.6f)\n", (long long)(model.position() -
                                                        int64_t(in.size()) +
                                                        int64_t(t)),
                  in[t], last, double(row[last]));
      if (dump)
        std::fwrite(row, sizeof(float), size_t(V), dump);
      ++rows;
    }
    return last;
  };

  std::vector<float> logits;
  int32_t next = 0;
  if (decodeOnly) {
    for (int32_t token : prompt) {
      if (!model.forward({token}, logits, &error))
        return fail(error);
      next = report({token}, logits);
    }
  } else {
    if (!model.forward(prompt, logits, &error))
      return fail(error);
    next = report(prompt, logits);
  }
  for (long step = 0; step < generate; ++step) {
    if (!model.forward({next}, logits, &error))
      return fail(error);
    next = report({next}, logits);
  }
  if (dump) {
    if (!dumpFile.commit(&error))
      return fail(error);
    std::fprintf(stderr, "wrote %lld logit rows to %s\n", (long long)rows,
                 dumpPath.c_str());
  }
  return 0;
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-reference",
                                  [&] { return run(argc, argv); });
}
