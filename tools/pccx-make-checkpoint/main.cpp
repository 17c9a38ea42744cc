//===- main.cpp - pccx-make-checkpoint --------------------------*- C++ -*-===//
//
// Writes a synthetic Hugging Face-layout Gemma 3n checkpoint. The work is
// done by runtime/import/CheckpointGenerator.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/import/CheckpointGenerator.h"
#include "runtime/import/MatFormer.h"
#include "tools/common/CommandLine.h"
#include "tools/common/GuardedMain.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <unistd.h>

namespace {

const char kHelp[] =
    R"(USAGE: pccx-make-checkpoint (--preset NAME | --config FILE) -o DIR [options]
       pccx-make-checkpoint --from CKPT --matformer-slice S -o DIR

Writes a Gemma 3n text checkpoint in Hugging Face layout into DIR:
config.json (a bare gemma3n_text config) and bf16 safetensors with
deterministic pseudo-random weights scaled so that activations stay near
unit size. Large checkpoints are sharded with model.safetensors.index.json.
Files appear under their final names only once complete.

With --from, DIR becomes the MatFormer slice S of checkpoint CKPT, as the
MatFormer Lab writes it (docs/matformer.md): the kept layers renumbered,
each FFN cut to its width, the per-layer inputs of the kept layers, the
stored bytes copied unchanged, the config with the slice recorded, and
CKPT's other files (tokenizer, chat template, ...) beside them. transformers
loads it; pccx-compile compiles it to the bundle that pccx-compile CKPT
--matformer-slice S gives, byte for byte.

OPTIONS:
  --preset NAME       tiny  seconds to compile and run; has full and sliding
                            (window 8) layers, KV-shared layers of both
                            types, sparse and dense FFN layers
                      e2b   the released E2B text decoder sizes (~10 GB)
                      e4b   the released E4B text decoder sizes (~14 GB)
  --config FILE       use the text config of this config.json instead
  -o DIR              output directory (created if missing)
  --seed N            weight seed (default 0); the same seed and config
                      always give byte-identical files
  --prefix P          tensor name prefix (default "model."; the multimodal
                      release uses "model.language_model.")
  --shard-size BYTES  largest shard, in bytes of tensor data (default 4 GiB;
                      suffixes K, M, G accepted)
  --print-config      print the config.json and exit without writing
  --from CKPT         write a MatFormer slice of checkpoint CKPT instead
  --matformer-slice S with --from: a published slice (pccx-compile
                      --list-matformer-slices) or a JSON file
                      {"layers_to_skip": [...], "ffn_hidden_dims": [...]}
  -h, --help          show this help
  --version           print the version and exit
)";

bool parseSize(const char *text, uint64_t *out) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || errno)
    return false;
  uint64_t mult = 1;
  if (*end == 'K' || *end == 'k')
    mult = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm')
    mult = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g')
    mult = 1ull << 30, ++end;
  if (*end || v == 0)
    return false;
  *out = uint64_t(v) * mult;
  return true;
}

/// Bytes written so far, on one line of a terminal (nothing otherwise).
std::function<void(uint64_t, uint64_t)> progressLine() {
  if (!isatty(STDERR_FILENO))
    return nullptr;
  return [](uint64_t done, uint64_t total) {
    std::cerr << "\rwriting weights: " << (done >> 20) << " / "
              << (total >> 20) << " MiB" << std::flush;
    if (done == total)
      std::cerr << "\n";
  };
}

} // namespace

static int run(int argc, char **argv) {
  std::string preset, configPath, outDir;
  bool printConfig = false;
  pccx::import::GeneratorOptions options;
  pccx::tools::CommandLine cl("pccx-make-checkpoint");
  auto fail = [&](const std::string &message) { return cl.fail(message); };
  int64_t seed = int64_t(options.seed);
  cl.help([] { return std::string(kHelp); });
  cl.text("--preset", &preset);
  cl.text("--config", &configPath);
  cl.text("-o", &outDir);
  cl.count("--seed", &seed);
  cl.text("--prefix", &options.prefix);
  cl.value("--shard-size", [&](const std::string &v) {
    return parseSize(v.c_str(), &options.maxShardBytes)
               ? std::string()
               : "--shard-size: not a size: '" + v + "'";
  });
  cl.flag("--print-config", &printConfig);
  std::string fromDir, slice;
  cl.text("--from", &fromDir);
  cl.text("--matformer-slice", &slice);
  int status = 0;
  if (!cl.parse(argc, argv, &status))
    return status;
  options.seed = uint64_t(seed);
  if (!fromDir.empty() || !slice.empty()) {
    if (fromDir.empty() || slice.empty())
      return fail("--from and --matformer-slice go together");
    if (!preset.empty() || !configPath.empty() || printConfig)
      return fail("--from writes a slice of an existing checkpoint; "
                  "--preset, --config and --print-config do not apply");
    if (outDir.empty())
      return fail("no output directory (-o DIR)");
    pccx::import::CheckpointWriteOptions write;
    write.maxShardBytes = options.maxShardBytes;
    write.progress = progressLine();
    std::string error;
    if (!pccx::import::writeSlicedCheckpoint(fromDir, slice, outDir, write,
                                             &error))
      return fail(error);
    return 0;
  }
  if (preset.empty() == configPath.empty())
    return fail("give exactly one of --preset and --config (see --help)");
  if (outDir.empty() && !printConfig)
    return fail("no output directory (-o DIR)");

  std::string error;
  pccx::import::Gemma3nTextConfig config;
  if (!preset.empty() ? !pccx::import::presetConfig(preset, &config, &error)
                      : !pccx::import::loadGemma3nConfig(configPath, &config,
                                                         &error))
    return fail(error);
  if (printConfig) {
    std::cout << config.toJson(2);
    return 0;
  }
  options.progress = progressLine();
  if (!pccx::import::generateCheckpoint(config, outDir, options, &error))
    return fail(error);
  return 0;
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-make-checkpoint",
                                  [&] { return run(argc, argv); });
}
