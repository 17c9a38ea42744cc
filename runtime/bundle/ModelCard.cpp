//===- ModelCard.cpp - a bundle's model card (pccx-objdump --info) -------===//
//
// What a person deploying a bundle asks first: which model, compiled how,
// how big, how many weight bytes every generated token streams (the figure
// that bounds decode speed on a bandwidth-limited board), for which target,
// by which compiler. Everything comes from the header and the manifest.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/Objdump.h"
#include "hw/abi/CompileOptions.h"

#include "hw/machine/MachineModel.h"
#include "hw/numerics/KvRecords.h"
#include "hw/numerics/Quantize.h"
#include "hw/support/Format.h"
#include "runtime/bundle/ChatTemplate.h"
#include "runtime/bundle/ModelManifest.h"

namespace pccx::bundle {

using nlohmann::json;

namespace {

std::string show(const json &object, const char *key) {
  if (!object.is_object() || !object.contains(key))
    return "-";
  const json &v = object[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string mib(uint64_t bytes) {
  return formatString("%llu bytes (%.2f MiB)", (unsigned long long)bytes,
                      double(bytes) / (1 << 20));
}

/// Bytes of weight records one run of `program` streams.
uint64_t streamedBytes(const ProgramEntry &program) {
  uint64_t total = 0;
  for (const WeightUse &u : program.weights)
    total += u.bytes;
  return total;
}

/// Bytes of one kv head's record of a record-layout cache.
uint64_t recordBytes(const CacheEntry &c) {
  return uint64_t(hw::cacheRecordBytes(c.layout == "keys", c.slots, c.headDim()));
}

/// Bytes a program streams from KV records and masks per run.
uint64_t kvStreamedBytes(const ProgramEntry &program,
                         const std::vector<CacheEntry> &caches) {
  uint64_t total = 0;
  for (const WeightUse &u : program.weights)
    for (const CacheEntry &c : caches)
      if (!u.cache.empty() && c.name == u.cache)
        total += u.mask ? uint64_t(hw::maskRecordBytes(c.slots))
                        : recordBytes(c);
  return total;
}

/// Bytes one token reads from the gather tables (one row of each: the
/// token and per-layer embeddings).
uint64_t gatherBytesPerToken(const std::vector<GatherEntry> &gathers) {
  uint64_t total = 0;
  for (const GatherEntry &g : gathers) {
    hw::WeightFormat format;
    if (hw::parseFormatName(g.format, &format))
      total += uint64_t(hw::gatherRowBytes(format, g.group, g.cols));
    else
      total += 4 * uint64_t(g.cols); // float32 rows
  }
  return total;
}

} // namespace

void printModelCard(const Bundle &b, std::ostream &out) {
  // The one validated reading of the manifest; a bundle that is not a
  // model (hand-assembled) still shows what its header says.
  ModelManifest m;
  std::string why;
  const bool model = readModelManifest(b, &m, &why);
  const json &config = m.config;
  const json &options = m.compileOptions;
  auto line = [&](const char *key, const std::string &value) {
    out << formatString("  %-17s %s\n", key, value.c_str());
  };
  out << "Model card:\n";
  if (!model)
    line("model", "none: " + why);
  std::string arch = "-";
  if (config.contains("architectures") && config["architectures"].is_array() &&
      !config["architectures"].empty() &&
      config["architectures"][0].is_string())
    arch = config["architectures"][0].get<std::string>();
  line("model", show(config, "model_type") + " (" + arch + ")");
  line("layers", show(config, "num_hidden_layers") + " (hidden " +
                     show(config, "hidden_size") + ", FFN " +
                     show(config, "intermediate_size") + ")");
  // A MatFormer slice: which one, and what it left out of the model it
  // was cut from.
  if (config.contains("matformer_slice") &&
      config["matformer_slice"].is_object()) {
    const json &slice = config["matformer_slice"];
    std::string skipped = "none";
    if (slice.contains("layers_to_skip") && slice["layers_to_skip"].is_array() &&
        !slice["layers_to_skip"].empty())
      skipped = slice["layers_to_skip"].dump();
    line("matformer slice", show(slice, "name") + " (layers skipped: " +
                                skipped + "; FFN widths as above)");
  }
  line("attention", show(config, "num_attention_heads") + " heads, " +
                        show(config, "num_key_value_heads") +
                        " KV heads, head_dim " + show(config, "head_dim") +
                        ", sliding window " + show(config, "sliding_window"));
  line("vocabulary", show(config, "vocab_size") + " tokens (bos " +
                         show(config, "bos_token_id") + ", eos " +
                         show(config, "eos_token_id") + ")");
  line("context", show(options, compile_option_key::maxSeqLen) +
                      " positions (KV cache, --max-seq-len); the checkpoint "
                      "allows " +
                      show(config, "max_position_embeddings"));
  std::string opts;
  for (auto it = options.begin(); it != options.end(); ++it)
    if (it.key() != compile_option_key::compilerVersion)
      opts += (opts.empty() ? "" : " ") + it.key() + "=" +
              (it->is_string() ? it->get<std::string>() : it->dump());
  line("compile options", opts.empty() ? "-" : opts);
  line("compiler",
       (m.producer.empty() ? "-" : m.producer) + " " +
           show(options, compile_option_key::compilerVersion));
  line("target",
       "pccx ISA " + isaVersionName(b.isaVersion()) + ", target " +
           machine::targetProfile(m.target).name + ", bundle format " +
           std::to_string(b.formatVersion()) + ", machine digest " +
           formatString("0x%016llx", (unsigned long long)b.machineDigest()) +
           (b.machineDigestMatches() ? " (matches this build)"
                                     : " (another machine model)"));
  line("file size", mib(b.fileSize()));

  uint64_t hostBytes = 0, gatherBytes = 0;
  for (const SectionInfo &s : b.sections()) {
    if (s.name == "host_tensors")
      hostBytes = s.size;
    else if (s.name == "gather")
      gatherBytes = s.size;
  }
  line("NPU weights", mib(m.weightsBytes));
  line("host tensors", mib(hostBytes));
  line("gather tables", mib(gatherBytes));

  const uint64_t perToken = gatherBytesPerToken(m.gathers);
  if (const ProgramEntry *decode = m.program("program.decode")) {
    uint64_t bytes = streamedBytes(*decode);
    line("weights/token",
         mib(bytes + perToken) + " per decode token (" +
             std::to_string(bytes) + " streamed to the NPU + " +
             std::to_string(perToken) +
             " embedding rows); host kernels also read the host tensors");
  }
  if (const ProgramEntry *prefill = m.program("program.prefill")) {
    uint64_t rows = uint64_t(std::max<int64_t>(1, prefill->rows));
    uint64_t step = streamedBytes(*prefill);
    line("prefill", std::to_string(step) + " weight bytes per step of " +
                        std::to_string(rows) + " tokens (" +
                        std::to_string(step / rows + perToken) +
                        " per prompt token)");
  }
  for (const SectionInfo *p : b.sectionsOfKind(SectionKind::Program))
    line(p->name.c_str(),
         std::to_string(Bundle::wordCount(*p)) + " instruction words");

  uint64_t recordTotal = 0;
  for (const CacheEntry &c : m.caches)
    if (!c.layout.empty())
      recordTotal += recordBytes(c) * uint64_t(c.heads);
  if (recordTotal) {
    // Attention on the NPU: the caches are weight records in device memory.
    const ProgramEntry *decode = m.program("program.decode");
    line("KV caches",
         std::to_string(m.caches.size()) + " (int8 records in device memory, " +
             mib(recordTotal) + "; " +
             mib(decode ? kvStreamedBytes(*decode, m.caches) : 0) +
             " streamed per decode token with the masks)");
  } else {
    line("KV caches", std::to_string(m.caches.size()) + " (" +
                          (m.caches.empty() ? "-" : m.caches.front().dtype) +
                          ")");
  }
  const SectionInfo *tok = b.find("tokenizer");
  line("tokenizer",
       tok ? "SentencePiece, " + std::to_string(tok->size) + " bytes"
           : "none (token ids only)");
  line("chat template", describe(chatTemplateOf(b.manifest())));
}

} // namespace pccx::bundle
