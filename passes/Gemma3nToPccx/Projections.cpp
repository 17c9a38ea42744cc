//===- Projections.cpp - projections on the NPU
//=---------------------------===//
//
// GEMV/GEMM of INT4/INT8 weights (tiled past the 16-bit shape limit),
// LAuReL's low-rank branch and the K/V projections with their norm and
// RoPE.
//
//===----------------------------------------------------------------------===//

#include "passes/Gemma3nToPccx/LoweringState.h"

namespace pccx::lowering {

void ProgramLowering::projectRows(const std::string &dest, int64_t destStride,
                                  const Place &in, int64_t k,
                                  pd::RecipeAttr recipe,
                                  pccx::hw::WeightFormat format, int64_t first,
                                  int64_t count) {
  hw::QuantScheme scheme;
  recipe.quantScheme(&scheme);
  const bool gemm = in.rows > 1;
  // One instruction per group of columns when the scheme has group scales:
  // each multiplies its K-slice of the input by its own record, and every
  // one after the first adds into the destination (accm).
  const int64_t groups = hw::groupCount(scheme, k),
                width = hw::groupWidth(scheme, k);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t col = g * width, cols = std::min(width, k - col);
    Operation *op = gemm ? gemm_(dest, in.l2).getOperation()
                         : gemv(dest, in.l2, /*findemax=*/false).getOperation();
    op->setAttr("weights", groups > 1 ? record(recipe, first, count, col, cols)
                                      : record(recipe, first, count));
    op->setAttr("weight_shape", triple(count, cols, int64_t(format)));
    op->setAttr("fmap_shape", triple(in.rows, wordsFor(k), destStride));
    if (g > 0) {
      op->setAttr("accm", b_.getUnitAttr());
      op->setAttr("src_addr_offset", i64(wordsFor(col)));
    }
  }
}

LogicalResult ProgramLowering::matmul(Value input, Value weight, Value result,
                                      const std::string &hint) {
  auto q = weight.getDefiningOp<QuantizeOp>();
  if (!q)
    return emitError(loc())
           << "the NPU multiplies INT4 weights only, but this weight ("
           << (pccx::rootWeight(weight) ? pccx::rootWeight(weight).getName()
                                        : StringRef("?"))
           << ") is not quantized; run gemma3n-quantize-int4 first";
  auto shape = cast<RankedTensorType>(weight.getType()).getShape();
  const int64_t n = shape[0], k = shape[1];
  if (k > 65535)
    return emitError(loc()) << "weight has " << k
                            << " input features; the v002 shape fields stop "
                               "at 65535";
  if (failed(ensureL2(input)))
    return failure();
  const Place &in = place(input);
  if (in.elems != k)
    return emitError(loc()) << "internal: input width " << in.elems
                            << " does not match weight " << k;
  pd::RecipeAttr recipe = pccx::weightRecipe(weight);
  pccx::hw::WeightFormat format;
  if (!recipe || !recipe.weightFormat(&format))
    return emitError(loc()) << "unknown quantization scheme on "
                            << pccx::rootWeight(weight).getName();
  auto emitTile = [&](const std::string &dest, int64_t first, int64_t count) {
    projectRows(dest, wordsFor(count), in, k, recipe, format, first, count);
  };
  if (n <= kMaxRows) {
    Place &out = newL2Value(result, hint);
    emitTile(out.l2, 0, n);
    return success();
  }
  // Too tall for one instruction (the LM head): tiles, each copied into
  // its columns of the host-window result.
  Place &out = newHostValue(result);
  for (int64_t first = 0; first < n; first += kMaxRows) {
    int64_t count = std::min(kMaxRows, n - first);
    std::string tile = newBuffer(in.rows * wordsFor(count), hint + ".tile");
    emitTile(tile, first, count);
    memcpy(/*toHost=*/true, tile, out.host, out.hostOffset + first / 8,
           out.hostStride, in.rows, wordsFor(count));
  }
  return success();
}

LogicalResult ProgramLowering::visit(LaurelOp l) {
  Value lowT, rankT;
  hc::AddRmsNorm call;
  if (failed(laurelProjection(l, l.getInput(), l.getLeft(), l.getRight(), lowT,
                              rankT)) ||
      failed(tensorParam(l.getNorm(), call.Gain)) ||
      failed(ensureHost(l.getInput())) || failed(ensureHost(lowT)))
    return failure();
  Place &out = newHostValue(l.getResult());
  call.X = region(place(l.getInput()));
  call.Y = region(place(lowT));
  call.Out = region(out);
  call.Eps = l.getEps().convertToFloat();
  LogicalResult r = hostKernel({l.getInput(), lowT}, {l.getResult()}, call);
  dropScratch(lowT);
  dropScratch(rankT);
  return r;
}

LogicalResult ProgramLowering::visit(LaurelResidualOp l) {
  Value lowT, rankT;
  hc::LaurelResidual call;
  if (failed(laurelProjection(l, l.getXn(), l.getLeft(), l.getRight(), lowT,
                              rankT)) ||
      failed(tensorParam(l.getAttnGain(), call.AttnGain)) ||
      failed(tensorParam(l.getLaurelGain(), call.LaurelGain)))
    return failure();
  const Value hostInputs[] = {l.getAct(), l.getAttn(), l.getXn(), lowT};
  for (Value v : hostInputs)
    if (failed(ensureHost(v)))
      return failure();
  Place &out = newHostValue(l.getResult());
  call.Act = region(place(l.getAct()));
  call.Attn = region(place(l.getAttn()));
  call.Xn = region(place(l.getXn()));
  call.Low = region(place(lowT));
  call.Out = region(out);
  call.ResidualScale = l.getResidualScale().convertToFloat();
  call.Eps = l.getEps().convertToFloat();
  LogicalResult r = hostKernel({l.getAct(), l.getAttn(), l.getXn(), lowT},
                               {l.getResult()}, call);
  dropScratch(lowT);
  dropScratch(rankT);
  return r;
}

LogicalResult ProgramLowering::visit(KVProjectOp kv) {
  auto shape = cast<RankedTensorType>(kv.getK().getType()).getShape();
  Value kRaw = scratch(kv, shape), vRaw = scratch(kv, shape);
  hc::KvNormRope call;
  if (failed(matmul(kv.getInput(), kv.getKProj(), kRaw, "k")) ||
      failed(matmul(kv.getInput(), kv.getVProj(), vRaw, "v")) ||
      failed(tensorParam(kv.getKNorm(), call.KNorm)) ||
      failed(ensureHost(kRaw)) || failed(ensureHost(vRaw)))
    return failure();
  Place &k = newHostValue(kv.getK());
  Place &v = newHostValue(kv.getV());
  call.K = region(place(kRaw));
  call.V = region(place(vRaw));
  call.KOut = region(k);
  call.VOut = region(v);
  call.KvHeads = int64_t(kv.getNumKvHeads());
  call.HeadDim = int64_t(kv.getHeadDim());
  call.Theta = kv.getRopeTheta().convertToDouble();
  call.Eps = kv.getEps().convertToFloat();
  LogicalResult r = hostKernel({kRaw, vRaw}, {kv.getK(), kv.getV()}, call);
  dropScratch(kRaw);
  dropScratch(vRaw);
  return r;
}

} // namespace pccx::lowering
