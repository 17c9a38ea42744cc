//===- Attention.cpp - attention over the KV cache
//=------------------------===//
//
// The cache write, the query projection, scores on the host as weight
// records, softmax on the SFU and P.V on the host.
//
//===----------------------------------------------------------------------===//

#include "passes/Gemma3nToPccx/LoweringState.h"

namespace pccx::lowering {

LogicalResult ProgramLowering::visit(KVCacheWriteOp w) {
  auto found = places_.find(w.getCache());
  if (found == places_.end() || found->second.cache.empty())
    return w.emitOpError("writes a cache that is not a cache argument");
  if (failed(ensureHost(w.getRows())))
    return failure();
  Place result;
  result.cache = found->second.cache;
  places_[w.getResult()] = result;
  return hostKernel(kernelName(pccx::abi::HostKernel::CacheWrite),
                    {w.getRows()}, {},
                    {attr("rows", region(place(w.getRows()))),
                     attr("cache", b_.getStringAttr(found->second.cache))});
}

LogicalResult ProgramLowering::visit(AttentionOp a) {
  const int64_t heads = int64_t(a.getNumHeads()),
                kvHeads = int64_t(a.getNumKvHeads()),
                headDim = int64_t(a.getHeadDim()),
                window = a.getSlidingWindowAttr().getInt();
  auto kcIt = places_.find(a.getKCache()), vcIt = places_.find(a.getVCache());
  if (kcIt == places_.end() || vcIt == places_.end() ||
      kcIt->second.cache.empty() || vcIt->second.cache.empty())
    return a.emitOpError("reads a cache that is not a cache argument");
  const Place &kc = kcIt->second, &vc = vcIt->second;
  const int64_t slots = caches_[kc.cache].first;
  const int64_t capacity = window > 0 ? std::min(window, slots) : slots;
  if (capacity > 65535)
    return a.emitOpError() << "attends over up to " << capacity
                           << " positions; the v002 length fields stop at "
                              "65535 (lower --max-seq-len)";

  // Q projection on the NPU, scores on the host into weight records.
  auto qShape = cast<RankedTensorType>(a.getInput().getType()).getShape();
  SmallVector<int64_t> shape(qShape.begin(), qShape.end());
  shape.back() = heads * headDim;
  Value qRaw = scratch(a, shape);
  SmallVector<NamedAttribute> params;
  FailureOr<std::string> qNorm = hostTensor(a.getQNorm());
  if (failed(qNorm) || failed(matmul(a.getInput(), a.getQProj(), qRaw, "q")) ||
      failed(ensureHost(qRaw)))
    return failure();
  const double theta = a.getRopeTheta().convertToDouble();
  const double eps = a.getEps().convertToFloat();
  if (failed(hostKernel(
          kernelName(pccx::abi::HostKernel::AttentionScores), {qRaw}, {},
          {attr("q", region(place(qRaw))),
           attr("q_norm", b_.getStringAttr(*qNorm)),
           attr("k_cache", b_.getStringAttr(kc.cache)),
           attr("heads", i64(heads)), attr("kv_heads", i64(kvHeads)),
           attr("head_dim", i64(headDim)),
           attr("theta", b_.getF64FloatAttr(theta)),
           attr("eps", b_.getF64FloatAttr(eps)), attr("window", i64(window))})))
    return failure();
  dropScratch(qRaw);

  // Softmax of each (row, head) on the SFU, the row's probabilities to the
  // host, then P . V for that row: one row of heads in the window at a time.
  const int64_t rows = rows_, capWords = wordsFor(capacity);
  const std::string probs = allocateHost(heads * capWords);
  std::string scores = newBuffer(capWords, "scores");
  Value oRaw = scratch(a, shape);
  const Place oPlace = newHostValue(oRaw);
  for (int64_t r = 0; r < rows; ++r) {
    auto patch = [&](StringRef field, StringRef bank) -> Attribute {
      return pd::PatchAttr::get(b_.getContext(), field,
                                window > 0 ? "window_len" : "attn_len",
                                /*scale=*/1, /*offset=*/0, /*delta=*/r,
                                window > 0 ? window : 0, bank);
    };
    for (int64_t h = 0; h < heads; ++h) {
      pd::GemvOp scoresOp = gemv(scores, one_, /*findemax=*/true);
      scoresOp.setWeightsAttr(pd::WeightRecordAttr::get(
          b_.getContext(), DictionaryAttr(), 0, 0, /*dynamic=*/true));
      scoresOp.setWeightShapeAttr(triple(capacity, 1, 0));
      scoresOp.setFmapShapeAttr(triple(1, 1, capWords));
      scoresOp.setShapePatchesAttr(
          b_.getArrayAttr({patch("a_value", "weight_shape")}));
      auto lengthPatch = b_.getArrayAttr({patch("length", "")});
      for (auto [func, dst, flag] :
           {std::make_tuple("exp", scores, "sub_emax"),
            std::make_tuple("reduce_sum", sum_, ""),
            std::make_tuple("scale", scores, "recip_scale")}) {
        pd::CvoOp op = cvoOp(func, scores, dst, capacity);
        op.setPatchesAttr(lengthPatch);
        if (*flag)
          op->setAttr(flag, b_.getUnitAttr());
      }
      memcpy(/*toHost=*/true, scores, probs, h * capWords, capWords, 1,
             capWords);
    }
    hostCall(abi::HostKernel::AttentionValues,
             {attr("probs", region(probs, 0, capacity, heads, capWords)),
              attr("v_cache", b_.getStringAttr(vc.cache)),
              attr("heads", i64(heads)), attr("kv_heads", i64(kvHeads)),
              attr("head_dim", i64(headDim)), attr("window", i64(window)),
              attr("row", i64(r)), attr("out", region(oPlace))});
  }
  releaseHost(probs);
  LogicalResult r = matmul(oRaw, a.getOProj(), a.getResult(), "attn");
  dropScratch(oRaw);
  return r;
}

} // namespace pccx::lowering
