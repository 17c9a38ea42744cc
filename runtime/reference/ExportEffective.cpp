//===- ExportEffective.cpp - a bundle's weights as a checkpoint -----------===//

#include "runtime/reference/ExportEffective.h"

#include "hw/support/OutputFile.h"

#include "runtime/bundle/ModelManifest.h"

#include "runtime/import/CheckpointGenerator.h"
#include "runtime/import/Gemma3nConfig.h"
#include "runtime/import/Safetensors.h"
#include "runtime/reference/BundleWeights.h"
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
  enum Kind { Packed, HostTensor } kind = Packed;
  // Packed: a record's or a gather table's rows and scales.
  PackedRows packed;
  // Host tensor: float32 values, to be divided by `divide`.
  const float *values = nullptr;
  float divide = 1.0f;
};

bool writeText(const std::string &path, const std::string &text,
               std::string *error) {
  return writeOutputFile(path, text.data(), text.size(), error);
}

} // namespace

bool checkExportDirectory(const std::string &dir, bool overwrite,
                          std::string *error, const char *overwriteFlag) {
  return import::checkCheckpointOutput(dir, overwrite, error, overwriteFlag);
}

bool exportEffectiveWeights(const bundle::Bundle &bundle,
                            const std::string &dir, std::string *error,
                            bool overwrite, const char *overwriteFlag) {
  if (!checkExportDirectory(dir, overwrite, error, overwriteFlag))
    return false;
  bundle::ModelManifest m;
  if (!bundle::readModelManifest(bundle, &m, error))
    return false;
  import::Gemma3nTextConfig config;
  if (!import::parseGemma3nConfig(m.config.dump(), &config, error,
                                  bundle.path() + ": manifest config"))
    return false;
  // readModelManifest checked that every entry lies inside its section.
  const bundle::SectionInfo *gather = bundle.find("gather");
  const bundle::SectionInfo *host = bundle.find("host_tensors");

  // Tensor names in the bundle carry the checkpoint's prefix; find it from
  // any recipe.
  std::map<std::string, std::vector<Source>> sources; // full name -> parts
  std::set<std::string> ones;
  for (const bundle::WeightRecordEntry &r : m.weightTable) {
    Source s;
    if (!PackedRows::fromRecord(bundle, r, &s.packed, error))
      return false;
    if (!r.recipe.scaledBy.empty())
      ones.insert(r.recipe.scaledBy);
    sources[r.recipe.tensor].push_back(s);
  }
  for (const bundle::GatherEntry &g : m.gathers) {
    if (sources.count(g.recipe.tensor))
      continue; // the LM head's records already give the tied table
    Source s;
    if (!PackedRows::fromGather(bundle, g, &s.packed)) {
      s.kind = Source::HostTensor;
      s.values =
          reinterpret_cast<const float *>(bundle.data(*gather) + g.offset);
    }
    sources[g.recipe.tensor].push_back(s);
  }
  for (const bundle::HostTensorEntry &t : m.hostTensors) {
    if (!t.recipe.scaledBy.empty() || sources.count(t.recipe.tensor))
      continue;
    Source s;
    s.kind = Source::HostTensor;
    s.values = reinterpret_cast<const float *>(bundle.data(*host) + t.offset);
    s.divide = t.recipe.factor;
    sources[t.recipe.tensor].push_back(s);
  }

  // The prefix: the one that makes the embedding table's name known.
  std::string prefix;
  for (const char *p : {"model.language_model.", "model.", ""})
    if (sources.count(std::string(p) + "embed_tokens.weight")) {
      prefix = p;
      break;
    }

  // Written beside `dir` and renamed into place once complete: nothing
  // half-written on failure, and no file of a replaced checkpoint (a stale
  // shard or index the importer would follow) left behind.
  OutputDirectory out;
  if (!out.open(dir, error))
    return false;
  const std::string &temp = out.tempPath();
  std::vector<import::ExpectedTensor> tensors =
      import::expectedTensors(config, prefix);
  import::SafetensorsWriter writer;
  if (!writer.setMetadata("format", "pt", error))
    return false;
  for (const import::ExpectedTensor &t : tensors)
    if (!writer.declare(t.name, import::DType::F32, t.shape, error))
      return false;
  if (!writer.begin(temp + "/model.safetensors", error))
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
        // A host tensor, or packed rows: one record or gather table, or
        // one record per group of columns.
        int64_t covered = 0;
        for (const Source &s : it->second) {
          if (s.kind == Source::HostTensor) {
            for (int64_t c = 0; c < cols; ++c)
              row[size_t(c)] = s.values[r * cols + c] / s.divide;
            covered = cols;
          } else if (s.packed.holds(r) && s.packed.firstCol == covered &&
                     s.packed.firstCol + s.packed.cols <= cols) {
            s.packed.unpack(r, row.data());
            covered += s.packed.cols;
          }
        }
        if (covered != cols) {
          *error = bundle.path() + ": no weights for row " +
                   std::to_string(r) + " of '" + name + "'";
          return false;
        }
      }
      if (!writer.writeFloats(name, row.data(), row.size(), error))
        return false;
    }
  }
  if (!writer.finish(error) ||
      !writeText(temp + "/config.json", config.toJson(2), error))
    return false;
  return out.commit(overwrite, error);
}

} // namespace pccx::reference
