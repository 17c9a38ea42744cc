//===- PLE.cpp - token embedding and per-layer inputs
//=---------------------===//
//
// The embedding gather, the per-layer-input projection and table, and the
// per-layer-input injection into the AltUp streams: gate and projection on
// the NPU, the product with the per-layer input and the post-norm on the
// host.
//
//===----------------------------------------------------------------------===//

#include "passes/Gemma3nToPccx/LoweringState.h"

namespace pccx::lowering {

LogicalResult ProgramLowering::visit(EmbedOp e) {
  FailureOr<std::string> table = gatherTable(e.getTable());
  if (failed(table))
    return failure();
  Place &out = newHostValue(e.getResult());
  hc::Embed call;
  call.Out = region(out);
  call.Table = *table;
  call.Scale = e.getScale().convertToFloat();
  return hostKernel({}, {e.getResult()}, call);
}

LogicalResult ProgramLowering::visit(PerLayerInputsOp p) {
  // The projection runs on the NPU into a [T, L*P] value.
  auto projShape =
      cast<RankedTensorType>(p.getProjection().getType()).getShape();
  SmallVector<int64_t> shape;
  if (prefill_)
    shape.push_back(ShapedType::kDynamic);
  shape.push_back(projShape[0]);
  Value projValue = scratch(p, shape);
  if (failed(matmul(p.getX0(), p.getProjection(), projValue, "ple_proj")))
    return failure();
  FailureOr<std::string> table = gatherTable(p.getTable());
  hc::PerLayerInputs call;
  if (failed(table) || failed(tensorParam(p.getNorm(), call.Norm)))
    return failure();
  if (failed(ensureHost(projValue)))
    return failure();
  Place &out = newHostValue(p.getResult());
  const int64_t h =
      cast<RankedTensorType>(p.getX0().getType()).getShape().back();
  const int64_t width =
      cast<RankedTensorType>(p.getNorm().getType()).getShape().back();
  call.Proj = region(place(projValue));
  call.Out = region(out);
  call.Table = *table;
  call.NumLayers = int64_t(p.getNumLayers());
  call.Eps = p.getEps().convertToFloat();
  call.ProjScale = float(1.0 / std::sqrt(double(h)));
  call.EmbedScale = float(std::sqrt(double(width)));
  call.InputScale = float(1.0 / std::sqrt(2.0));
  LogicalResult r = hostKernel({projValue}, {p.getResult()}, call);
  dropScratch(projValue);
  return r;
}

LogicalResult ProgramLowering::visit(PLEInjectOp p) {
  auto streamsType = cast<RankedTensorType>(p.getStreams().getType());
  const int64_t a = streamsType.getShape().end()[-2];
  const int64_t h = streamsType.getShape().back();
  const int64_t width =
      cast<RankedTensorType>(p.getGate().getType()).getShape()[0];
  SmallVector<int64_t> rowShape, gateShape;
  if (prefill_) {
    rowShape.push_back(ShapedType::kDynamic);
    gateShape.push_back(ShapedType::kDynamic);
  }
  rowShape.push_back(h);
  gateShape.push_back(width);
  SmallVector<Value> temps;
  auto temp = [&](ArrayRef<int64_t> s) {
    return temps.emplace_back(scratch(p, s));
  };
  if (failed(ensureHost(p.getStreams())) ||
      failed(ensureHost(p.getPerLayerInputs())))
    return failure();
  // The active stream (a view), scaled by correct_output_scale.
  Value active = temp(rowShape);
  placeStreamView(p.getStreams(), int64_t(p.getActive()), active);
  Value gateIn = active;
  if (p.getOutputScale()) {
    FailureOr<std::string> scale = hostTensor(p.getOutputScale());
    if (failed(scale))
      return failure();
    Value scaled = temp(rowShape);
    Place &out = newHostValue(scaled);
    hc::MulTensor call;
    call.In = region(place(active));
    call.Tensor = *scale;
    call.Out = region(out);
    if (failed(hostKernel({active}, {scaled}, call)))
      return failure();
    gateIn = scaled;
  }
  Value gate = temp(gateShape), gelu = temp(gateShape), gated = temp(gateShape),
        projected = temp(rowShape);
  if (failed(matmul(gateIn, p.getGate(), gate, "ple_gate")))
    return failure();
  dropHost(gateIn);
  Place &g = newL2Value(gelu, "ple_gelu");
  if (failed(cvo("gelu", place(gate), g.l2)) || failed(ensureHost(gelu)))
    return failure();
  // The layer's per-layer input: row `layer` of each token's block.
  const Place &pli = place(p.getPerLayerInputs());
  const int64_t layers = cast<RankedTensorType>(p.getPerLayerInputs().getType())
                             .getShape()
                             .end()[-2];
  const pd::HostRegionAttr pliRow =
      region(pli.host, pli.hostOffset + int64_t(p.getLayer()) * pli.hostStride,
             width, rows_, pli.hostStride * layers);
  // The product is element-wise (host); it overwrites the GELU output.
  const pd::HostRegionAttr geluRegion = region(place(gelu));
  const pd::HostRegionAttr gatedRegion = region(reuseHost(gelu, gated));
  hc::Mul product;
  product.A = geluRegion;
  product.B = pliRow;
  product.Out = gatedRegion;
  if (failed(hostKernel({gelu, p.getPerLayerInputs()}, {gated}, product)))
    return failure();
  place(gelu).host.clear(); // overwritten
  if (failed(ensureL2(gated)))
    return failure();
  dropHost(gated);
  if (failed(matmul(gated, p.getProj(), projected, "ple_proj")) ||
      failed(ensureHost(projected)))
    return failure();
  FailureOr<std::string> norm = hostTensor(p.getPostNorm());
  if (failed(norm))
    return failure();
  const Place streamsPlace = place(p.getStreams());
  Place &out = p->hasAttr("in_place") ? reuseHost(p.getStreams(), p.getResult())
                                      : newHostValue(p.getResult());
  hc::PleInject inject;
  inject.Streams = region(streamsPlace);
  inject.Projected = region(place(projected));
  inject.PostNorm = *norm;
  inject.NumInputs = a;
  inject.Eps = p.getEps().convertToFloat();
  inject.Out = region(out);
  if (failed(hostKernel({p.getStreams(), projected}, {p.getResult()}, inject)))
    return failure();
  for (Value t : llvm::reverse(temps))
    dropScratch(t);
  return success();
}

} // namespace pccx::lowering
