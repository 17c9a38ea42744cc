//===- BundleWeights.cpp - a bundle's weights in checkpoint layout --------===//

#include "runtime/reference/BundleWeights.h"

#include "hw/numerics/Quantize.h"
#include "runtime/bundle/ModelManifest.h"

#include <algorithm>
#include <cstring>
#include <vector>

using nlohmann::json;

namespace pccx::reference {

bool recipeFormat(const json &recipe, hw::WeightFormat *format) {
  bundle::WeightRecipe r;
  return bundle::parseWeightRecipe(recipe, &r) &&
         hw::parseScheme(r.scheme, format);
}

bool PackedRows::fromRecord(const bundle::Bundle &bundle,
                            const bundle::WeightRecordEntry &r,
                            PackedRows *out, std::string *error) {
  PackedRows s;
  if (!hw::parseScheme(r.recipe.scheme, &s.format)) {
    *error = bundle.path() + ": weight_table entry with an unknown recipe";
    return false;
  }
  s.firstRow = r.firstRow;
  s.rows = r.rows;
  s.firstCol = r.firstCol;
  s.cols = r.cols;
  s.group = r.cols;
  s.rowStride = hw::recordRowStride(s.format, s.cols);
  const uint8_t *base = bundle.data(*bundle.find("weights")) + r.offset;
  s.scales = reinterpret_cast<const float *>(base);
  s.codes = base + hw::recordScaleBytes(s.rows);
  *out = s;
  return true;
}

bool PackedRows::fromGather(const bundle::Bundle &bundle,
                            const bundle::GatherEntry &g, PackedRows *out) {
  PackedRows s;
  if (!hw::parseFormatName(g.format, &s.format))
    return false;
  const uint8_t *section = bundle.data(*bundle.find("gather"));
  s.rows = g.rows;
  s.cols = g.cols;
  s.group = g.group ? g.group : g.cols;
  s.groups = (g.cols + s.group - 1) / s.group;
  s.rowStride = int64_t(hw::packedRowBytes(s.format, size_t(s.cols)));
  s.codes = section + g.offset;
  s.scales = reinterpret_cast<const float *>(section + g.scalesOffset);
  *out = s;
  return true;
}

void PackedRows::unpack(int64_t row, float *tensorRow) const {
  const int64_t local = row - firstRow;
  hw::unpackRowGroups(format, codes + local * rowStride, size_t(cols), group,
                      scales + local * groups, tensorRow + firstCol);
}

std::unique_ptr<BundleWeights>
BundleWeights::create(const bundle::Bundle &bundle, const Weights &base,
                      const std::string &prefix, std::string *error) {
  std::unique_ptr<BundleWeights> w(new BundleWeights(base));
  bundle::ModelManifest m;
  if (!bundle::readModelManifest(bundle, &m, error))
    return nullptr;
  auto relative = [&](const std::string &name) {
    return name.compare(0, prefix.size(), prefix) == 0 &&
                   name != "lm_head.weight"
               ? name.substr(prefix.size())
               : name;
  };
  // readModelManifest checked that every entry lies inside its section.
  for (const bundle::WeightRecordEntry &r : m.weightTable) {
    Source s;
    if (!PackedRows::fromRecord(bundle, r, &s, error))
      return nullptr;
    s.divideBy = r.recipe.scaledBy;
    s.factor = r.recipe.factor;
    if (!s.divideBy.empty())
      s.divideBy = relative(s.divideBy);
    w->sources_.emplace(relative(r.recipe.tensor), s);
  }
  for (const bundle::GatherEntry &g : m.gathers) {
    Source s;
    if (!PackedRows::fromGather(bundle, g, &s))
      continue; // float32 tables are host tensors of the base weights
    s.divideBy = g.recipe.scaledBy;
    s.factor = g.recipe.factor;
    if (!s.divideBy.empty())
      s.divideBy = relative(s.divideBy);
    // Tables duplicate what a record of the same tensor already gives.
    if (!w->sources_.count(relative(g.recipe.tensor)))
      w->sources_.emplace(relative(g.recipe.tensor), s);
  }
  return w;
}

bool BundleWeights::readRows(const std::string &name, int64_t row,
                             int64_t count, int64_t columns, float *out,
                             std::string *error) const {
  auto range = sources_.equal_range(name);
  if (range.first == range.second)
    return base_.readRows(name, row, count, columns, out, error);
  for (int64_t r = row; r < row + count; ++r) {
    // The row's columns, from one record or from one per group of columns,
    // in column order (the table's), each starting where the last ended.
    const Source *src = nullptr;
    int64_t covered = 0;
    float *o = out + (r - row) * columns;
    for (auto it = range.first; it != range.second; ++it) {
      const Source &s = it->second;
      if (!s.holds(r) || s.firstCol != covered ||
          s.firstCol + s.cols > columns)
        continue;
      src = &s;
      covered += s.cols;
      s.unpack(r, o);
    }
    if (!src || covered != columns) {
      *error = "bundle has no weights for row " + std::to_string(r) + " of '" +
               name + "' with " + std::to_string(columns) + " columns";
      return false;
    }
    if (!src->divideBy.empty() || src->factor != 1.0f) {
      std::vector<float> by(size_t(columns), 1.0f);
      if (!src->divideBy.empty() &&
          !base_.readRows(src->divideBy, 0, 1, columns, by.data(), error))
        return false;
      for (int64_t c = 0; c < columns; ++c) {
        float d = by[size_t(c)] * src->factor;
        o[c] = d != 0 ? o[c] / d : 0.0f;
      }
    }
  }
  return true;
}

std::vector<std::string> BundleWeights::quantizedTensors() const {
  std::vector<std::string> out;
  for (auto it = sources_.begin(); it != sources_.end();
       it = sources_.upper_bound(it->first))
    out.push_back(it->first);
  return out;
}

} // namespace pccx::reference
