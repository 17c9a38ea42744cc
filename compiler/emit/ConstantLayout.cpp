//===- ConstantLayout.cpp - host tensors and gather tables ----------------===//

#include "compiler/emit/ConstantLayout.h"

#include "hw/numerics/Quantize.h"
#include "hw/numerics/QuantizeRows.h"

#include <cstring>

using namespace mlir;

namespace pccx {

bool ConstantLayout::plan(ModuleOp module, std::string *error) {
  if (auto t = module->getAttrOfType<DictionaryAttr>("pccx.host_tensors"))
    for (NamedAttribute entry : t) {
      auto recipe = dyn_cast<dialect::RecipeAttr>(entry.getValue());
      if (!recipe) {
        *error = "host tensor " + entry.getName().str() + " is not a #pccx.recipe";
        return false;
      }
      bundle::HostTensorEntry e;
      e.name = entry.getName().str();
      if (!evaluator_.shape(recipe, &e.rows, &e.cols, error))
        return false;
      e.offset = hostBytes_;
      bundle::parseWeightRecipe(recipe.toJson(), &e.recipe);
      hostBytes_ += hw::pad16(uint64_t(e.rows * e.cols) * 4);
      hostTensors_.push_back(std::move(e));
      hostRecipes_.push_back(recipe);
    }
  if (auto t = module->getAttrOfType<DictionaryAttr>("pccx.gather_tables"))
    for (NamedAttribute entry : t) {
      auto recipe = dyn_cast<dialect::RecipeAttr>(entry.getValue());
      if (!recipe) {
        *error = "gather table " + entry.getName().str() +
                 " is not a #pccx.recipe";
        return false;
      }
      Gather g{recipe, false, hw::WeightFormat::Int4};
      g.quantized = recipe.weightFormat(&g.format);
      if (!g.quantized && recipe.getQuantize()) {
        *error = "gather table " + entry.getName().str() +
                 " is quantized with an unknown scheme";
        return false;
      }
      bundle::GatherEntry e;
      e.name = entry.getName().str();
      if (!evaluator_.shape(recipe, &e.rows, &e.cols, error))
        return false;
      e.format = g.quantized ? hw::formatName(g.format) : "f32";
      e.offset = gatherBytes_;
      bundle::parseWeightRecipe(recipe.toJson(), &e.recipe);
      uint64_t bytes;
      if (g.quantized) {
        hw::QuantScheme scheme;
        recipe.quantScheme(&scheme);
        e.group = scheme.group;
        uint64_t codes =
            hw::pad16(uint64_t(e.rows) *
                      uint64_t(hw::packedRowBytes(g.format, size_t(e.cols))));
        e.scalesOffset = gatherBytes_ + codes;
        bytes = codes + hw::pad16(uint64_t(e.rows) * 4 *
                                  uint64_t(hw::groupCount(scheme, e.cols)));
      } else {
        bytes = hw::pad16(uint64_t(e.rows * e.cols) * 4);
      }
      gatherBytes_ += bytes;
      gathers_.push_back(std::move(e));
      gatherRecipes_.push_back(g);
    }
  return true;
}

bool ConstantLayout::streamHostTensors(bundle::SectionSink &sink,
                                       std::string *error) const {
  std::vector<float> data;
  for (size_t i = 0; i < hostTensors_.size(); ++i) {
    const bundle::HostTensorEntry &e = hostTensors_[i];
    data.assign(size_t(e.rows * e.cols), 0.0f);
    if (!evaluator_.readRows(hostRecipes_[i], 0, e.rows, data.data(), error))
      return false;
    size_t bytes = data.size() * 4;
    std::vector<uint8_t> out(hw::pad16(bytes), 0);
    std::memcpy(out.data(), data.data(), bytes);
    if (!sink.write(out))
      return false;
  }
  return true;
}

bool ConstantLayout::streamGathers(
    bundle::SectionSink &sink,
    const std::function<void(uint64_t, size_t)> &progress,
    std::string *error) const {
  uint64_t done = 0;
  for (size_t t = 0; t < gathers_.size(); ++t) {
    const bundle::GatherEntry &e = gathers_[t];
    const Gather &g = gatherRecipes_[t];
    const int64_t block = std::max<int64_t>(1, (int64_t(1) << 20) / e.cols);
    std::vector<float> buf(size_t(std::min(block, e.rows) * e.cols));
    if (!g.quantized) {
      uint64_t written = 0;
      for (int64_t row = 0; row < e.rows; row += block) {
        int64_t n = std::min(block, e.rows - row);
        if (!evaluator_.readRows(g.recipe, row, n, buf.data(), error) ||
            !sink.write(buf.data(), size_t(n * e.cols) * 4))
          return false;
        written += uint64_t(n * e.cols) * 4;
      }
      std::vector<uint8_t> pad(hw::pad16(written) - written, 0);
      if (!sink.write(pad))
        return false;
      done += written + pad.size();
      progress(done, t + 1);
      continue;
    }
    dialect::RecipeAttr inner = g.recipe.getQuantize();
    const int64_t rowBytes =
        int64_t(hw::packedRowBytes(g.format, size_t(e.cols)));
    hw::QuantScheme scheme;
    g.recipe.quantScheme(&scheme); // checked when planned
    const int64_t groups = hw::groupCount(scheme, e.cols);
    std::vector<float> scales(size_t(e.rows * groups));
    // GPTQ rounding goes through the evaluator (it holds the calibration
    // statistics); nearest rounding quantizes on every thread.
    const bool gptq = scheme.rounding == hw::Rounding::Gptq;
    std::vector<int8_t> q(gptq ? buf.size() : 0);
    std::vector<uint8_t> packed(size_t(std::min(block, e.rows) * rowBytes));
    uint64_t written = 0;
    for (int64_t row = 0; row < e.rows; row += block) {
      int64_t n = std::min(block, e.rows - row);
      if (!evaluator_.readRows(inner, row, n, buf.data(), error))
        return false;
      if (gptq) {
        if (!evaluator_.quantizeRows(g.recipe, buf.data(), n, e.cols,
                                     scales.data() + row, q.data(), error))
          return false;
        for (int64_t i = 0; i < n; ++i)
          hw::packRow(g.format, q.data() + i * e.cols, size_t(e.cols),
                      packed.data() + i * rowBytes);
      } else if (groups == 1 || e.cols % scheme.group == 0) {
        // With whole groups, each group is a row of its own: same codes,
        // same bytes, one scale each, in row order.
        const int64_t width = e.cols / groups;
        hw::quantizeAndPackRows(
            scheme, buf.data(), n * groups, width, scales.data() + row * groups,
            packed.data(), hw::packedRowBytes(g.format, size_t(width)),
            threads_);
      } else {
        std::vector<int8_t> codes(size_t(e.cols));
        for (int64_t i = 0; i < n; ++i) {
          hw::quantizeRowGroups(scheme, buf.data() + i * e.cols,
                                size_t(e.cols), codes.data(),
                                scales.data() + (row + i) * groups);
          hw::packRow(g.format, codes.data(), size_t(e.cols),
                      packed.data() + i * rowBytes);
        }
      }
      if (!sink.write(packed.data(), size_t(n * rowBytes)))
        return false;
      written += uint64_t(n * rowBytes);
      done += uint64_t(n * rowBytes);
      progress(done, t);
    }
    std::vector<uint8_t> pad(hw::pad16(written) - written, 0);
    size_t scaleBytes = scales.size() * 4;
    std::vector<uint8_t> scalePad(hw::pad16(scaleBytes) - scaleBytes, 0);
    if (!sink.write(pad) || !sink.write(scales.data(), scaleBytes) ||
        !sink.write(scalePad))
      return false;
  }
  return true;
}

} // namespace pccx
