//===- BundleWeights.cpp - a bundle's weights in checkpoint layout --------===//

#include "compiler/reference/BundleWeights.h"

#include "hw/numerics/Quantize.h"

#include <cstring>
#include <vector>

using nlohmann::json;

namespace pccx::reference {

namespace {

/// Reads {quantize = {tensor} | {scale = {tensor}, by = {tensor}?, factor}}.
bool parseRecipe(const json &recipe, std::string *tensor, std::string *by,
                 float *factor) {
  auto q = recipe.find("quantize");
  if (q == recipe.end() || !q->is_object())
    return false;
  if (q->contains("tensor") && (*q)["tensor"].is_string()) {
    *tensor = (*q)["tensor"].get<std::string>();
    return true;
  }
  auto s = q->find("scale");
  if (s == q->end() || !s->contains("tensor") || !(*s)["tensor"].is_string())
    return false;
  *tensor = (*s)["tensor"].get<std::string>();
  if (q->contains("factor") && (*q)["factor"].is_number())
    *factor = (*q)["factor"].get<float>();
  auto b = q->find("by");
  if (b != q->end()) {
    if (!b->contains("tensor") || !(*b)["tensor"].is_string())
      return false;
    *by = (*b)["tensor"].get<std::string>();
  }
  return true;
}

} // namespace

bool recipeFormat(const json &recipe, hw::WeightFormat *format) {
  auto scheme = recipe.find("scheme");
  return recipe.contains("quantize") && scheme != recipe.end() &&
         scheme->is_string() &&
         hw::parseScheme(scheme->get<std::string>(), format);
}

std::unique_ptr<BundleWeights>
BundleWeights::create(const bundle::Bundle &bundle, const Weights &base,
                      const std::string &prefix, std::string *error) {
  std::unique_ptr<BundleWeights> w(new BundleWeights(base));
  const json &m = bundle.manifest();
  auto relative = [&](const std::string &name) {
    return name.compare(0, prefix.size(), prefix) == 0 &&
                   name != "lm_head.weight"
               ? name.substr(prefix.size())
               : name;
  };
  const bundle::SectionInfo *weights = bundle.find("weights");
  const bundle::SectionInfo *gather = bundle.find("gather");
  auto table = m.find("weight_table");
  if (table == m.end() || !table->is_array() || !weights) {
    *error = bundle.path() + ": no weight table (not a model bundle?)";
    return nullptr;
  }
  for (const json &r : *table) {
    Source s;
    std::string tensor;
    if (!r.contains("recipe") ||
        !parseRecipe(r["recipe"], &tensor, &s.divideBy, &s.factor) ||
        !recipeFormat(r["recipe"], &s.format)) {
      *error = bundle.path() + ": weight_table entry with an unknown recipe";
      return nullptr;
    }
    uint64_t offset = r.value("offset", uint64_t(0));
    s.firstRow = r.value("first_row", int64_t(0));
    s.rows = r.value("rows", int64_t(0));
    s.cols = r.value("cols", int64_t(0));
    const int64_t scaleBytes = hw::recordScaleBytes(s.rows);
    s.rowStride = hw::recordRowStride(s.format, s.cols);
    if (s.rows <= 0 || s.cols <= 0 ||
        offset + uint64_t(scaleBytes + s.rows * s.rowStride) > weights->size) {
      *error = bundle.path() + ": weight_table entry outside the weights";
      return nullptr;
    }
    const uint8_t *base = bundle.data(*weights) + offset;
    s.scales = reinterpret_cast<const float *>(base);
    s.codes = base + scaleBytes;
    if (!s.divideBy.empty())
      s.divideBy = relative(s.divideBy);
    w->sources_.emplace(relative(tensor), s);
  }
  auto gathers = m.find("gather_tables");
  if (gathers != m.end() && gathers->is_object() && gather)
    for (auto &[name, info] : gathers->items()) {
      Source s;
      if (!hw::parseFormatName(info.value("format", ""), &s.format))
        continue; // float32 tables are host tensors of the base weights
      std::string tensor;
      if (!info.contains("recipe") ||
          !parseRecipe(info["recipe"], &tensor, &s.divideBy, &s.factor))
        continue;
      s.rows = info.value("rows", int64_t(0));
      s.cols = info.value("cols", int64_t(0));
      s.rowStride = int64_t(hw::packedRowBytes(s.format, size_t(s.cols)));
      uint64_t codes = info.value("offset", uint64_t(0));
      uint64_t scales = info.value("scales_offset", uint64_t(0));
      if (codes + uint64_t(s.rows * s.rowStride) > gather->size ||
          scales + uint64_t(s.rows) * 4 > gather->size) {
        *error = bundle.path() + ": gather table '" + name +
                 "' outside its section";
        return nullptr;
      }
      s.codes = bundle.data(*gather) + codes;
      s.scales = reinterpret_cast<const float *>(bundle.data(*gather) + scales);
      if (!s.divideBy.empty())
        s.divideBy = relative(s.divideBy);
      // Tables duplicate what a record of the same tensor already gives.
      if (!w->sources_.count(relative(tensor)))
        w->sources_.emplace(relative(tensor), s);
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
    const Source *src = nullptr;
    for (auto it = range.first; it != range.second; ++it)
      if (r >= it->second.firstRow &&
          r < it->second.firstRow + it->second.rows)
        src = &it->second;
    if (!src || src->cols != columns) {
      *error = "bundle has no weights for row " + std::to_string(r) + " of '" +
               name + "' with " + std::to_string(columns) + " columns";
      return false;
    }
    const int64_t local = r - src->firstRow;
    const uint8_t *bytes = src->codes + local * src->rowStride;
    const float scale = src->scales[local];
    float *o = out + (r - row) * columns;
    hw::unpackRow(src->format, bytes, size_t(columns), scale, o);
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
