//===- Attention.cpp - attention over the KV cache
//=------------------------===//
//
// The cache write and attention. On the NPU (the default): the keys and
// values of each kv head are weight records in device memory (keys by
// position, values transposed), so Q.K^T and P.V are GEMV/GEMM passes
// over them; a mask record removes the slots a row may not see, and the
// softmax runs on the SFU. On the host: scores and P.V on the CPU over
// host caches, the softmax still on the SFU.
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
  hc::CacheWrite call;
  call.Rows = region(place(w.getRows()));
  call.Cache = found->second.cache;
  return hostKernel({w.getRows()}, {}, call);
}

void ProgramLowering::softmaxOnSfu(const std::string &scores, int64_t offset,
                                   int64_t length, ArrayAttr lengthPatches) {
  for (auto [func, dst, flag] :
       {std::make_tuple("exp", scores, "sub_emax"),
        std::make_tuple("reduce_sum", sum_, ""),
        std::make_tuple("scale", scores, "recip_scale")}) {
    pd::CvoOp op = cvoOp(func, scores, dst, length);
    if (offset) {
      op.setSrcAddrOffsetAttr(b_.getI64IntegerAttr(offset));
      if (dst == scores)
        op.setDstAddrOffsetAttr(b_.getI64IntegerAttr(offset));
    }
    if (lengthPatches)
      op.setPatchesAttr(lengthPatches);
    if (*flag)
      op->setAttr(flag, b_.getUnitAttr());
  }
}

LogicalResult ProgramLowering::visit(AttentionOp a) {
  return npuAttention_ ? npuAttention(a) : hostAttention(a);
}

LogicalResult ProgramLowering::npuAttention(AttentionOp a) {
  const int64_t heads = int64_t(a.getNumHeads()),
                kvHeads = int64_t(a.getNumKvHeads()),
                headDim = int64_t(a.getHeadDim());
  auto kcIt = places_.find(a.getKCache()), vcIt = places_.find(a.getVCache());
  if (kcIt == places_.end() || vcIt == places_.end() ||
      kcIt->second.cache.empty() || vcIt->second.cache.empty())
    return a.emitOpError("reads a cache that is not a cache argument");
  const std::string kc = kcIt->second.cache, vc = vcIt->second.cache;
  const CacheInfo &keys = caches_[kc];
  if (keys.layout != "keys" || caches_[vc].layout != "values" ||
      keys.heads != kvHeads || keys.width != kvHeads * headDim)
    return a.emitOpError("needs key and value records of ")
           << kvHeads << " kv heads of " << headDim << " values";
  if (headDim % 8)
    return a.emitOpError() << "has heads of " << headDim
                           << " values; NPU attention needs whole 128-bit "
                              "words per head (a multiple of 8), use "
                              "--attention host";
  const int64_t slots = keys.slots;
  if (slots > 65535)
    return a.emitOpError() << "attends over up to " << slots
                           << " positions; the v002 shape fields stop at "
                              "65535 (lower --max-seq-len)";
  const int64_t groups = heads / kvHeads, slotWords = wordsFor(slots),
                headWords = wordsFor(headDim), rowWords = heads * headWords;

  // Q projection on the NPU, its norm and RoPE on the host, back to L2.
  auto inShape = cast<RankedTensorType>(a.getInput().getType()).getShape();
  SmallVector<int64_t> shape(inShape.begin(), inShape.end());
  shape.back() = heads * headDim;
  Value qRaw = scratch(a, shape), q = scratch(a, shape);
  FailureOr<std::string> qNorm = hostTensor(a.getQNorm());
  if (failed(qNorm) || failed(matmul(a.getInput(), a.getQProj(), qRaw, "q")) ||
      failed(ensureHost(qRaw)))
    return failure();
  Place &qHost = newHostValue(q);
  hc::QueryNormRope queryRope;
  queryRope.Q = region(place(qRaw));
  queryRope.Out = region(qHost);
  queryRope.QNorm = *qNorm;
  queryRope.Heads = heads;
  queryRope.HeadDim = headDim;
  queryRope.Theta = a.getRopeTheta().convertToDouble();
  queryRope.Eps = a.getEps().convertToFloat();
  if (failed(hostKernel({qRaw}, {q}, queryRope)))
    return failure();
  dropScratch(qRaw);
  if (failed(ensureL2(q)))
    return failure();
  const std::string qL2 = place(q).l2;

  Value oRaw = scratch(a, shape);
  const std::string out = newL2Value(oRaw, "attn").l2;
  // One pass over a record for `m` query rows `srcStride` words apart.
  auto matmulOver = [&](const std::string &dest, int64_t destOffset,
                        const std::string &src, int64_t srcOffset,
                        pd::WeightRecordAttr weights, int64_t n, int64_t k,
                        int64_t m, int64_t srcStride, int64_t destStride) {
    Operation *op = m > 1 ? gemm_(dest, src).getOperation()
                          : gemv(dest, src, false).getOperation();
    op->setAttr("weights", weights);
    op->setAttr("weight_shape",
                triple(n, k, int64_t(pccx::hw::WeightFormat::Int8)));
    op->setAttr("fmap_shape", triple(m, srcStride, destStride));
    if (destOffset)
      op->setAttr("dest_reg_offset", i64(destOffset));
    if (srcOffset)
      op->setAttr("src_addr_offset", i64(srcOffset));
  };
  // Step row r's mask over the scores row at `at`, then its softmax.
  auto maskAndSoftmax = [&](const std::string &scores, int64_t at,
                            int64_t r) {
    pd::GemvOp mask = gemv(scores, one_, /*findemax=*/true);
    mask->setAttr("accm", b_.getUnitAttr());
    mask.setWeightsAttr(cacheRecord(kc, r, /*mask=*/true));
    mask.setWeightShapeAttr(
        triple(slots, 1, int64_t(pccx::hw::WeightFormat::Int8)));
    mask.setFmapShapeAttr(triple(1, 1, slotWords));
    if (at)
      mask.setDestRegOffsetAttr(b_.getI64IntegerAttr(at));
    softmaxOnSfu(scores, at, slots, ArrayAttr());
  };
  if (!batch_ && rows_ > groups) {
    // The step's rows share the records (one sequence), so per query head
    // one pass over the key record scores every row, and one pass over
    // the value record weighs them: each record is streamed once per head
    // of its group, not once per row. A head's rows lie rowWords apart in
    // q and in the output; the products are those of the per-row passes.
    const std::string scores = newBuffer(rows_ * slotWords, "scores");
    for (int64_t g = 0; g < kvHeads; ++g)
      for (int64_t i = 0; i < groups; ++i) {
        const int64_t head = (g * groups + i) * headWords;
        matmulOver(scores, 0, qL2, head, cacheRecord(kc, g, false, -1), slots,
                   headDim, rows_, rowWords, slotWords);
        for (int64_t r = 0; r < rows_; ++r)
          maskAndSoftmax(scores, r * slotWords, r);
        matmulOver(out, head, scores, 0, cacheRecord(vc, g, false, -1),
                   headDim, slots, rows_, slotWords, rowWords);
      }
  } else {
    // Per step row and kv head: one pass over the key record scores the
    // group's heads; per head the row's mask (with findemax), the softmax
    // on the SFU; one pass over the value record weighs them.
    const std::string scores = newBuffer(groups * slotWords, "scores");
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t g = 0; g < kvHeads; ++g) {
        const int64_t firstHead = r * rowWords + g * groups * headWords;
        // A batch row reads its own sequence's records.
        const int64_t seqRow = batch_ ? r : -1;
        matmulOver(scores, 0, qL2, firstHead,
                   cacheRecord(kc, g, false, seqRow), slots, headDim, groups,
                   headWords, slotWords);
        for (int64_t i = 0; i < groups; ++i)
          maskAndSoftmax(scores, i * slotWords, r);
        matmulOver(out, firstHead, scores, 0,
                   cacheRecord(vc, g, false, seqRow), headDim, slots, groups,
                   slotWords, headWords);
      }
  }
  dropScratch(q);
  LogicalResult result = matmul(oRaw, a.getOProj(), a.getResult(), "attn");
  dropScratch(oRaw);
  return result;
}

LogicalResult ProgramLowering::hostAttention(AttentionOp a) {
  const int64_t heads = int64_t(a.getNumHeads()),
                kvHeads = int64_t(a.getNumKvHeads()),
                headDim = int64_t(a.getHeadDim()),
                window = a.getSlidingWindowAttr().getInt();
  auto kcIt = places_.find(a.getKCache()), vcIt = places_.find(a.getVCache());
  if (kcIt == places_.end() || vcIt == places_.end() ||
      kcIt->second.cache.empty() || vcIt->second.cache.empty())
    return a.emitOpError("reads a cache that is not a cache argument");
  const Place &kc = kcIt->second, &vc = vcIt->second;
  const int64_t slots = caches_[kc.cache].slots;
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
  FailureOr<std::string> qNorm = hostTensor(a.getQNorm());
  if (failed(qNorm) || failed(matmul(a.getInput(), a.getQProj(), qRaw, "q")) ||
      failed(ensureHost(qRaw)))
    return failure();
  const double theta = a.getRopeTheta().convertToDouble();
  const double eps = a.getEps().convertToFloat();
  hc::AttentionScores scoresCall;
  scoresCall.Q = region(place(qRaw));
  scoresCall.QNorm = *qNorm;
  scoresCall.KCache = kc.cache;
  scoresCall.Heads = heads;
  scoresCall.KvHeads = kvHeads;
  scoresCall.HeadDim = headDim;
  scoresCall.Theta = theta;
  scoresCall.Eps = eps;
  scoresCall.Window = window;
  if (failed(hostKernel({qRaw}, {}, scoresCall)))
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
          b_.getContext(), pd::RecipeAttr(), 0, 0, /*dynamic=*/true,
          StringAttr(), 0, false, -1, 0, 0));
      scoresOp.setWeightShapeAttr(triple(capacity, 1, 0));
      scoresOp.setFmapShapeAttr(triple(1, 1, capWords));
      scoresOp.setShapePatchesAttr(
          b_.getArrayAttr({patch("a_value", "weight_shape")}));
      softmaxOnSfu(scores, 0, capacity,
                   b_.getArrayAttr({patch("length", "")}));
      memcpy(/*toHost=*/true, scores, probs, h * capWords, capWords, 1,
             capWords);
    }
    hc::AttentionValues values;
    values.Probs = region(probs, 0, capacity, heads, capWords);
    values.VCache = vc.cache;
    values.Heads = heads;
    values.KvHeads = kvHeads;
    values.HeadDim = headDim;
    values.Window = window;
    values.Row = r;
    values.Out = region(oPlace);
    if (failed(hostCall(values)))
      return failure();
  }
  releaseHost(probs);
  LogicalResult r = matmul(oRaw, a.getOProj(), a.getResult(), "attn");
  dropScratch(oRaw);
  return r;
}

} // namespace pccx::lowering
