//===- ModelCard.cpp - a bundle's model card (pccx-objdump --info)
//---------===//
//
// What a person deploying a bundle asks first: which model, compiled how,
// how big, how many weight bytes every generated token streams (the figure
// that bounds decode speed on a bandwidth-limited board), for which target,
// by which compiler. Everything comes from the header and the manifest.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/Objdump.h"

#include "hw/machine/MachineModel.h"
#include "hw/numerics/Quantize.h"
#include "hw/support/Format.h"
#include "runtime/bundle/ChatTemplate.h"

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

uint64_t number(const json &object, const char *key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_unsigned() ? it->get<uint64_t>()
                                                        : 0;
}

/// Bytes of weight records one run of `program` streams.
uint64_t streamedBytes(const json &program) {
  uint64_t total = 0;
  if (program.contains("weight_records"))
    for (const json &r : program["weight_records"])
      total += number(r, "bytes");
  return total;
}

/// Bytes one token reads from the gather tables (one row of each: the
/// token and per-layer embeddings).
uint64_t gatherBytesPerToken(const json &gathers) {
  uint64_t total = 0;
  for (const json &g : gathers) {
    hw::WeightFormat format;
    uint64_t cols = number(g, "cols");
    if (g.contains("format") && g["format"].is_string() &&
        hw::parseFormatName(g["format"].get<std::string>(), &format))
      total += hw::packedRowBytes(format, size_t(cols)) + 4; // row + scale
    else
      total += 4 * cols; // float32 rows
  }
  return total;
}

} // namespace

void printModelCard(const Bundle &b, std::ostream &out) {
  const json &m = b.manifest();
  const json empty = json::object();
  const json &config =
      m.is_object() && m.contains("config") ? m["config"] : empty;
  const json &options = m.is_object() && m.contains("compile_options")
                            ? m["compile_options"]
                            : empty;
  auto line = [&](const char *key, const std::string &value) {
    out << formatString("  %-17s %s\n", key, value.c_str());
  };
  out << "Model card:\n";
  std::string arch = "-";
  if (config.contains("architectures") && config["architectures"].is_array() &&
      !config["architectures"].empty() &&
      config["architectures"][0].is_string())
    arch = config["architectures"][0].get<std::string>();
  line("model", show(config, "model_type") + " (" + arch + ")");
  line("layers", show(config, "num_hidden_layers") + " (hidden " +
                     show(config, "hidden_size") + ", FFN " +
                     show(config, "intermediate_size") + ")");
  line("attention", show(config, "num_attention_heads") + " heads, " +
                        show(config, "num_key_value_heads") +
                        " KV heads, head_dim " + show(config, "head_dim") +
                        ", sliding window " + show(config, "sliding_window"));
  line("vocabulary", show(config, "vocab_size") + " tokens (bos " +
                         show(config, "bos_token_id") + ", eos " +
                         show(config, "eos_token_id") + ")");
  line("context", show(options, "max_seq_len") +
                      " positions (KV cache, --max-seq-len); the checkpoint "
                      "allows " +
                      show(config, "max_position_embeddings"));
  std::string opts;
  for (auto it = options.begin(); it != options.end(); ++it)
    if (it.key() != "compiler_version")
      opts += (opts.empty() ? "" : " ") + it.key() + "=" +
              (it->is_string() ? it->get<std::string>() : it->dump());
  line("compile options", opts.empty() ? "-" : opts);
  line("compiler",
       show(m, "producer") + " " + show(options, "compiler_version"));
  line("target",
       "pccx ISA " + isaVersionName(b.isaVersion()) + ", bundle format " +
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
  line("NPU weights", mib(number(m, "weights_bytes")));
  line("host tensors", mib(hostBytes));
  line("gather tables", mib(gatherBytes));

  const json programs =
      m.is_object() && m.contains("programs") ? m["programs"] : empty;
  const uint64_t perToken = gatherBytesPerToken(
      m.is_object() && m.contains("gather_tables") ? m["gather_tables"]
                                                   : empty);
  if (programs.contains("program.decode")) {
    uint64_t decode = streamedBytes(programs["program.decode"]);
    line("weights/token",
         mib(decode + perToken) + " per decode token (" +
             std::to_string(decode) + " streamed to the NPU + " +
             std::to_string(perToken) +
             " embedding rows); host kernels also read the host tensors");
  }
  if (programs.contains("program.prefill")) {
    const json &prefill = programs["program.prefill"];
    uint64_t rows = std::max<uint64_t>(1, number(prefill, "rows"));
    uint64_t step = streamedBytes(prefill);
    line("prefill", std::to_string(step) + " weight bytes per step of " +
                        std::to_string(rows) + " tokens (" +
                        std::to_string(step / rows + perToken) +
                        " per prompt token)");
  }
  for (const SectionInfo *p : b.sectionsOfKind(SectionKind::Program))
    line(p->name.c_str(),
         std::to_string(Bundle::wordCount(*p)) + " instruction words");

  uint64_t caches = 0;
  std::string dtype = "-";
  if (m.is_object() && m.contains("caches"))
    for (const json &c : m["caches"]) {
      ++caches;
      dtype = show(c, "dtype");
    }
  line("KV caches", std::to_string(caches) + " (" + dtype + ")");
  const SectionInfo *tok = b.find("tokenizer");
  line("tokenizer",
       tok ? "SentencePiece, " + std::to_string(tok->size) + " bytes"
           : "none (token ids only)");
  line("chat template", describe(chatTemplateOf(m)));
}

} // namespace pccx::bundle
