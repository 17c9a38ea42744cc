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
       pccx-make-checkpoint --from CKPT --matformer-slice S -o DIR [options]

Writes a Gemma 3n text checkpoint in Hugging Face layout into DIR:
config.json (a bare gemma3n_text config) and bf16 safetensors with
deterministic pseudo-random weights scaled so that activations stay near
unit size. Large checkpoints are sharded with model.safetensors.index.json.

DIR is written whole: into a new directory beside it (DIR.tmp.PID.N)
that is renamed to DIR once complete, so a failed or interrupted run
leaves nothing. DIR may be missing or empty. One that holds anything is
refused unless --overwrite, which replaces it whole (no stale shard or
index survives); one that holds a subdirectory, or that another run is
writing, is refused even then.

With --from, DIR becomes the MatFormer slice S of checkpoint CKPT, as the
MatFormer Lab writes it (docs/matformer.md): the kept layers renumbered,
each FFN cut to its width, the per-layer inputs of the kept layers, the
stored bytes copied unchanged, the config with the slice recorded, and
CKPT's companion files beside them. transformers loads it; pccx-compile
compiles it to the bundle that pccx-compile CKPT --matformer-slice S gives,
byte for byte. DIR may not be CKPT, lie inside it or hold it (symlinks
resolved). Of CKPT's other files only these are copied, in 1 MiB chunks,
when present:
@COMPANIONS@
A symlink among them that leads out of CKPT is an error naming it and its
target (in a Hugging Face cache snapshot, models--ORG--NAME/snapshots/REV,
the links into the repository's blobs are inside it); one that is not a
regular file is skipped.

OPTIONS:
  --preset NAME       tiny  seconds to compile and run; has full and sliding
                            (window 8) layers, KV-shared layers of both
                            types, sparse and dense FFN layers
                      e2b   the released E2B text decoder sizes (~10 GB)
                      e4b   the released E4B text decoder sizes (~14 GB)
  --config FILE       use the text config of this config.json instead
  -o DIR              output directory (written whole, see above)
  --overwrite         replace a DIR that already holds files, whole
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

/// kHelp with the companion files a slice copies filled in, wrapped and
/// indented.
std::string helpText() {
  std::string help = kHelp, list, line;
  const auto &names = pccx::import::sliceCompanionFiles();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string item = names[i] + (i + 1 < names.size() ? "," : "");
    if (!line.empty() && line.size() + 1 + item.size() > 70) {
      list += "  " + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  list += "  " + line;
  const std::string slot = "@COMPANIONS@";
  return help.replace(help.find(slot), slot.size(), list);
}

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
  cl.help(helpText);
  cl.text("--preset", &preset);
  cl.text("--config", &configPath);
  cl.text("-o", &outDir);
  bool overwrite = false;
  cl.flag("--overwrite", &overwrite);
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
    write.overwrite = overwrite;
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
  options.overwrite = overwrite;
  options.progress = progressLine();
  if (!pccx::import::generateCheckpoint(config, outDir, options, &error))
    return fail(error);
  return 0;
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-make-checkpoint",
                                  [&] { return run(argc, argv); });
}
