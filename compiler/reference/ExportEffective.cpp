//===- ExportEffective.cpp - a bundle's weights as a checkpoint -----------===//

#include "compiler/reference/ExportEffective.h"

#include "compiler/import/Gemma3nConfig.h"
#include "compiler/import/Safetensors.h"
#include "compiler/reference/BundleWeights.h"
#include "hw/numerics/Quantize.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sys/stat.h>
#include <vector>

using nlohmann::json;

namespace pccx::reference {

namespace {

/// Where an exported tensor's values come from.
struct Source {
  enum Kind { Record, Gather, HostTensor, Ones, Zeros } kind = Zeros;
  // Record / gather: packed rows and scales.
  hw::WeightFormat format = hw::WeightFormat::Int4;
  const uint8_t *codes = nullptr;
  int64_t rowStride = 0;
  const float *scales = nullptr;
  int64_t firstRow = 0, rows = 0;
  // Host tensor: float32 values, to be divided by `divide`.
  const float *values = nullptr;
  float divide = 1.0f;
};

/// The checkpoint tensor at the root of a recipe, the folded gain (if the
/// recipe is quantize(scale(T by G))) and the constant factor.
bool recipeParts(const json &recipe, std::string *tensor, std::string *by,
                 float *factor) {
  const json *r = &recipe;
  if (r->contains("quantize"))
    r = &(*r)["quantize"];
  if (r->contains("tensor") && (*r)["tensor"].is_string()) {
    *tensor = (*r)["tensor"].get<std::string>();
    return true;
  }
  if (!r->contains("scale") || !(*r)["scale"].contains("tensor"))
    return false;
  *tensor = (*r)["scale"]["tensor"].get<std::string>();
  if (r->contains("factor"))
    *factor = (*r)["factor"].get<float>();
  if (r->contains("by")) {
    if (!(*r)["by"].contains("tensor"))
      return false;
    *by = (*r)["by"]["tensor"].get<std::string>();
  }
  return true;
}

bool writeText(const std::string &path, const std::string &text,
               std::string *error) {
  std::string tmp = path + ".tmp";
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = f && std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": cannot write: " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

} // namespace

bool exportEffectiveWeights(const bundle::Bundle &bundle,
                            const std::string &dir, std::string *error) {
  const json &m = bundle.manifest();
  if (!m.contains("config") || !m.contains("weight_table") ||
      !m.contains("host_tensors") || !m.contains("gather_tables")) {
    *error = bundle.path() + ": not a model bundle (no config and weight "
                             "tables in the manifest)";
    return false;
  }
  import::Gemma3nTextConfig config;
  if (!import::parseGemma3nConfig(m["config"].dump(), &config, error,
                                  bundle.path() + ": manifest config"))
    return false;
  const bundle::SectionInfo *weights = bundle.find("weights");
  const bundle::SectionInfo *gather = bundle.find("gather");
  const bundle::SectionInfo *host = bundle.find("host_tensors");

  // Tensor names in the bundle carry the checkpoint's prefix; find it from
  // any recipe.
  std::map<std::string, std::vector<Source>> sources; // full name -> parts
  std::set<std::string> ones;
  auto addRecord = [&](const json &recipe, Source s, int64_t rows) {
    std::string tensor, by;
    float factor = 1.0f;
    if (!recipeParts(recipe, &tensor, &by, &factor))
      return false;
    if (!by.empty())
      ones.insert(by);
    (void)rows;
    sources[tensor].push_back(s);
    return true;
  };
  for (const json &r : m["weight_table"]) {
    Source s;
    s.kind = Source::Record;
    int64_t rows = r.value("rows", int64_t(0)), cols = r.value("cols", int64_t(0));
    uint64_t offset = r.value("offset", uint64_t(0));
    if (!r.contains("recipe") || !recipeFormat(r["recipe"], &s.format)) {
      *error = bundle.path() + ": weight_table entry with an unknown recipe";
      return false;
    }
    const int64_t scaleBytes = hw::recordScaleBytes(rows);
    s.rowStride = hw::recordRowStride(s.format, cols);
    if (!weights || rows <= 0 || cols <= 0 ||
        offset + uint64_t(scaleBytes + rows * s.rowStride) > weights->size) {
      *error = bundle.path() + ": weight_table entry outside the weights";
      return false;
    }
    s.scales = reinterpret_cast<const float *>(bundle.data(*weights) + offset);
    s.codes = bundle.data(*weights) + offset + scaleBytes;
    s.firstRow = r.value("first_row", int64_t(0));
    s.rows = rows;
    if (!r.contains("recipe") || !addRecord(r["recipe"], s, rows)) {
      *error = bundle.path() + ": weight_table entry with an unknown recipe";
      return false;
    }
  }
  for (auto &[name, info] : m["gather_tables"].items()) {
    std::string tensor, by;
    float factor = 1.0f;
    if (!info.contains("recipe") ||
        !recipeParts(info["recipe"], &tensor, &by, &factor) || !gather)
      continue;
    if (sources.count(tensor))
      continue; // the LM head's records already give the tied table
    Source s;
    s.rows = info.value("rows", int64_t(0));
    const int64_t cols = info.value("cols", int64_t(0));
    const uint64_t offset = info.value("offset", uint64_t(0));
    uint64_t end;
    if (hw::parseFormatName(info.value("format", ""), &s.format)) {
      s.kind = Source::Gather;
      const uint64_t scales = info.value("scales_offset", uint64_t(0));
      s.codes = bundle.data(*gather) + offset;
      s.scales = reinterpret_cast<const float *>(bundle.data(*gather) + scales);
      s.rowStride = int64_t(hw::packedRowBytes(s.format, size_t(cols)));
      end = std::max(offset + uint64_t(s.rows * s.rowStride),
                     scales + uint64_t(s.rows) * 4);
    } else {
      s.kind = Source::HostTensor;
      s.values = reinterpret_cast<const float *>(bundle.data(*gather) + offset);
      end = offset + uint64_t(s.rows * cols) * 4;
    }
    if (s.rows <= 0 || cols <= 0 || end > gather->size) {
      *error = bundle.path() + ": gather table '" + name +
               "' outside its section";
      return false;
    }
    sources[tensor].push_back(s);
  }
  for (auto &[name, info] : m["host_tensors"].items()) {
    std::string tensor, by;
    float factor = 1.0f;
    if (!info.contains("recipe") ||
        !recipeParts(info["recipe"], &tensor, &by, &factor) || !host ||
        !by.empty())
      continue;
    if (sources.count(tensor))
      continue;
    Source s;
    s.kind = Source::HostTensor;
    s.values = reinterpret_cast<const float *>(
        bundle.data(*host) + info.value("offset", uint64_t(0)));
    s.divide = factor;
    sources[tensor].push_back(s);
  }

  // The prefix: the one that makes the embedding table's name known.
  std::string prefix;
  for (const char *p : {"model.language_model.", "model.", ""})
    if (sources.count(std::string(p) + "embed_tokens.weight")) {
      prefix = p;
      break;
    }

  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = dir + ": " + std::strerror(errno);
    return false;
  }
  std::vector<import::ExpectedTensor> tensors =
      import::expectedTensors(config, prefix);
  import::SafetensorsWriter writer;
  if (!writer.setMetadata("format", "pt", error))
    return false;
  for (const import::ExpectedTensor &t : tensors)
    if (!writer.declare(t.name, import::DType::F32, t.shape, error))
      return false;
  if (!writer.begin(dir + "/model.safetensors", error))
    return false;
  std::map<std::string, const import::ExpectedTensor *> byName;
  for (const import::ExpectedTensor &t : tensors)
    byName[t.name] = &t;
  std::vector<float> row;
  for (const std::string &name : writer.order()) {
    const import::ExpectedTensor &t = *byName[name];
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
    const int64_t cols = t.shape.back();
    row.assign(size_t(cols), 0.0f);
    auto it = sources.find(name);
    for (int64_t r = 0; r < rows; ++r) {
      if (ones.count(name)) {
        std::fill(row.begin(), row.end(), 1.0f);
      } else if (it == sources.end()) {
        std::fill(row.begin(), row.end(), 0.0f);
      } else {
        const Source *src = nullptr;
        for (const Source &s : it->second)
          if (s.kind == Source::HostTensor ||
              (r >= s.firstRow && r < s.firstRow + s.rows))
            src = &s;
        if (!src) {
          *error = bundle.path() + ": no weights for row " +
                   std::to_string(r) + " of '" + name + "'";
          return false;
        }
        if (src->kind == Source::HostTensor) {
          for (int64_t c = 0; c < cols; ++c)
            row[size_t(c)] = src->values[r * cols + c] / src->divide;
        } else {
          int64_t local = r - src->firstRow;
          const uint8_t *bytes = src->codes + local * src->rowStride;
          hw::unpackRow(src->format, bytes, size_t(cols),
                        src->scales[local], row.data());
        }
      }
      if (!writer.writeFloats(name, row.data(), row.size(), error))
        return false;
    }
  }
  if (!writer.finish(error))
    return false;
  return writeText(dir + "/config.json", config.toJson(2), error);
}

} // namespace pccx::reference
