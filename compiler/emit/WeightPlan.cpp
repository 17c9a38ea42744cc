//===- WeightPlan.cpp - the weights section of a bundle -------------------===//

#include "compiler/emit/WeightPlan.h"

#include "hw/numerics/QuantizeRows.h"

#include <cstring>

using namespace mlir;

namespace pccx {

const WeightPlan::Record *WeightPlan::use(dialect::RecipeAttr recipe,
                                          int64_t firstRow, int64_t rows,
                                          std::string *error) {
  auto key = std::make_tuple(Attribute(recipe), firstRow, rows);
  auto it = index_.find(key);
  if (it != index_.end())
    return &records_[it->second];
  Record r;
  r.recipe = recipe;
  if (!recipe || !recipe.weightFormat(&r.format)) {
    *error = "weights are not quantized with a known scheme";
    return nullptr;
  }
  r.firstRow = firstRow;
  r.rows = rows;
  int64_t totalRows = 0;
  if (!evaluator_.shape(recipe, &totalRows, &r.cols, error))
    return nullptr;
  if (firstRow < 0 || rows <= 0 || firstRow + rows > totalRows) {
    *error = "weight rows past the end of the tensor";
    return nullptr;
  }
  r.offset = bytes_;
  r.bytes = uint64_t(hw::recordBytes(r.format, r.rows, r.cols));
  bytes_ += r.bytes;
  index_[key] = records_.size();
  records_.push_back(r);
  return &records_.back();
}

std::vector<bundle::WeightRecordEntry> WeightPlan::table() const {
  std::vector<bundle::WeightRecordEntry> out;
  for (const Record &r : records_) {
    bundle::WeightRecordEntry e;
    e.offset = r.offset;
    e.bytes = r.bytes;
    e.firstRow = r.firstRow;
    e.rows = r.rows;
    e.cols = r.cols;
    bundle::parseWeightRecipe(r.recipe.toJson(), &e.recipe);
    out.push_back(std::move(e));
  }
  return out;
}

bool WeightPlan::stream(bundle::SectionSink &sink,
                        const std::function<void(uint64_t, size_t)> &progress,
                        std::string *error) const {
  std::vector<float> scales, buf;
  std::vector<int8_t> codes;
  std::vector<uint8_t> bytes;
  uint64_t done = 0;
  size_t count = 0;
  for (const Record &r : records_) {
    dialect::RecipeAttr inner = r.recipe.getQuantize();
    hw::QuantScheme scheme;
    r.recipe.quantScheme(&scheme); // checked when the record was planned
    scales.resize(size_t(r.rows));
    const int64_t scaleBytes = hw::recordScaleBytes(r.rows);
    const int64_t stride = hw::recordRowStride(r.format, r.cols);
    bytes.assign(size_t(r.bytes), 0);
    // About a MiB of floats at a time, straight from the mapped checkpoint;
    // each block's rows are packed in place in the record.
    const int64_t block = std::max<int64_t>(1, (int64_t(1) << 20) / r.cols);
    buf.resize(size_t(std::min(block, r.rows) * r.cols));
    for (int64_t row = 0; row < r.rows; row += block) {
      int64_t n = std::min(block, r.rows - row);
      if (!evaluator_.readRows(inner, r.firstRow + row, n, buf.data(), error))
        return false;
      if (scheme.rounding == hw::Rounding::Gptq) {
        // GPTQ rounding goes through the evaluator (it holds the
        // calibration statistics), one thread.
        codes.resize(size_t(n * r.cols));
        if (!evaluator_.quantizeRows(r.recipe, buf.data(), n, r.cols,
                                     scales.data() + row, codes.data(),
                                     error))
          return false;
        for (int64_t i = 0; i < n; ++i)
          hw::packRow(r.format, codes.data() + i * r.cols, size_t(r.cols),
                      bytes.data() + scaleBytes + (row + i) * stride);
      } else {
        hw::quantizeAndPackRows(scheme, buf.data(), n, r.cols,
                                scales.data() + row,
                                bytes.data() + scaleBytes + row * stride,
                                size_t(stride), threads_);
      }
    }
    std::memcpy(bytes.data(), scales.data(), size_t(4 * r.rows));
    if (!sink.write(bytes))
      return false;
    done += bytes.size();
    progress(done, ++count);
  }
  return true;
}

} // namespace pccx
