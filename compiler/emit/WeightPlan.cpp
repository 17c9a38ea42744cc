//===- WeightPlan.cpp - the weights section of a bundle -------------------===//

#include "compiler/emit/WeightPlan.h"

#include "hw/numerics/QuantizeRows.h"

#include <cstring>

using namespace mlir;

namespace pccx {

const WeightPlan::Record *WeightPlan::use(dialect::RecipeAttr recipe,
                                          int64_t firstRow, int64_t rows,
                                          int64_t firstCol, int64_t numCols,
                                          std::string *error) {
  auto key = std::make_tuple(Attribute(recipe), firstRow, rows, firstCol);
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
  if (numCols) {
    if (firstCol < 0 || numCols < 0 || firstCol + numCols > r.cols) {
      *error = "weight columns past the end of the tensor";
      return nullptr;
    }
    r.firstCol = firstCol;
    r.cols = numCols;
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
    e.firstCol = r.firstCol;
    bundle::parseWeightRecipe(r.recipe.toJson(), &e.recipe);
    out.push_back(std::move(e));
  }
  return out;
}

bool WeightPlan::stream(bundle::SectionSink &sink,
                        const std::function<void(uint64_t, size_t)> &progress,
                        std::string *error) const {
  std::vector<float> buf, slice;
  std::vector<int8_t> codes;
  std::vector<std::vector<uint8_t>> bytes;
  uint64_t done = 0;
  size_t count = 0;
  for (size_t first = 0; first < records_.size();) {
    const Record &r = records_[first];
    // The records of one row range's groups of columns follow each other
    // (one K-sliced projection): its rows are read once for all of them.
    size_t last = first + 1;
    while (last < records_.size() && records_[last].recipe == r.recipe &&
           records_[last].firstRow == r.firstRow &&
           records_[last].rows == r.rows &&
           records_[last].firstCol == records_[last - 1].firstCol +
                                          records_[last - 1].cols)
      ++last;
    dialect::RecipeAttr inner = r.recipe.getQuantize();
    hw::QuantScheme scheme;
    r.recipe.quantScheme(&scheme); // checked when the record was planned
    int64_t totalRows = 0, width = 0;
    if (!evaluator_.shape(r.recipe, &totalRows, &width, error))
      return false;
    bytes.resize(last - first);
    for (size_t i = first; i < last; ++i)
      bytes[i - first].assign(size_t(records_[i].bytes), 0);
    // About a MiB of floats at a time, straight from the mapped checkpoint;
    // each block's rows (its columns of them) are packed in place.
    const int64_t block = std::max<int64_t>(1, (int64_t(1) << 20) / width);
    buf.resize(size_t(std::min(block, r.rows) * width));
    for (int64_t row = 0; row < r.rows; row += block) {
      const int64_t n = std::min(block, r.rows - row);
      if (!evaluator_.readRows(inner, r.firstRow + row, n, buf.data(), error))
        return false;
      for (size_t i = first; i < last; ++i) {
        const Record &part = records_[i];
        const float *rows = buf.data();
        if (part.cols != width) {
          slice.resize(size_t(n * part.cols));
          for (int64_t j = 0; j < n; ++j)
            std::memcpy(slice.data() + j * part.cols,
                        buf.data() + j * width + part.firstCol,
                        size_t(part.cols) * sizeof(float));
          rows = slice.data();
        }
        if (!packRows(part, scheme, rows, row, n, bytes[i - first].data(),
                      codes, error))
          return false;
      }
    }
    for (size_t i = first; i < last; ++i) {
      if (!sink.write(bytes[i - first]))
        return false;
      done += bytes[i - first].size();
      progress(done, ++count);
    }
    first = last;
  }
  return true;
}

bool WeightPlan::packRows(const Record &r, const hw::QuantScheme &scheme,
                          const float *rows, int64_t row, int64_t n,
                          uint8_t *record, std::vector<int8_t> &codes,
                          std::string *error) const {
  const int64_t scaleBytes = hw::recordScaleBytes(r.rows);
  const int64_t stride = hw::recordRowStride(r.format, r.cols);
  // The scales go to the record's head as fp32 (little-endian hosts).
  uint8_t *scales = record + 4 * row;
  std::vector<float> blockScales(static_cast<size_t>(n));
  if (scheme.rounding == hw::Rounding::Gptq) {
    // GPTQ rounding goes through the evaluator (it holds the calibration
    // statistics), one thread.
    codes.resize(size_t(n * r.cols));
    if (!evaluator_.quantizeRows(r.recipe, rows, n, r.cols,
                                 blockScales.data(), codes.data(), error))
      return false;
    std::memcpy(scales, blockScales.data(), size_t(4 * n));
    for (int64_t i = 0; i < n; ++i)
      hw::packRow(r.format, codes.data() + i * r.cols, size_t(r.cols),
                  record + scaleBytes + (row + i) * stride);
    return true;
  }
  hw::quantizeAndPackRows(scheme, rows, n, r.cols, blockScales.data(),
                          record + scaleBytes + row * stride, size_t(stride),
                          threads_);
  std::memcpy(scales, blockScales.data(), size_t(4 * n));
  return true;
}

} // namespace pccx
