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
  return hostKernel(
      kernelName(pccx::abi::HostKernel::Embed), {}, {e.getResult()},
      {attr("out", region(out)), attr("table", b_.getStringAttr(*table)),
       attr("scale", f64(e.getScale().convertToFloat()))});
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
  SmallVector<NamedAttribute> params;
  if (failed(table) || failed(tensorParam(p.getNorm(), "norm", params)))
    return failure();
  if (failed(ensureHost(projValue)))
    return failure();
  Place &out = newHostValue(p.getResult());
  const int64_t h =
      cast<RankedTensorType>(p.getX0().getType()).getShape().back();
  const int64_t width =
      cast<RankedTensorType>(p.getNorm().getType()).getShape().back();
  params.append({attr("proj", region(place(projValue))),
                 attr("out", region(out)),
                 attr("table", b_.getStringAttr(*table)),
                 attr("num_layers", i64(int64_t(p.getNumLayers()))),
                 attr("eps", f64(p.getEps().convertToFloat())),
                 attr("proj_scale", f64(float(1.0 / std::sqrt(double(h))))),
                 attr("embed_scale", f64(float(std::sqrt(double(width))))),
                 attr("input_scale", f64(float(1.0 / std::sqrt(2.0))))});
  LogicalResult r =
      hostKernel(kernelName(pccx::abi::HostKernel::PerLayerInputs), {projValue},
                 {p.getResult()}, params);
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
    if (failed(hostKernel(kernelName(pccx::abi::HostKernel::MulTensor),
                          {active}, {scaled},
                          {attr("in", region(place(active))),
                           attr("tensor", b_.getStringAttr(*scale)),
                           attr("out", region(out))})))
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
  if (failed(hostKernel(kernelName(pccx::abi::HostKernel::Mul),
                        {gelu, p.getPerLayerInputs()}, {gated},
                        {attr("a", geluRegion), attr("b", pliRow),
                         attr("out", gatedRegion)})))
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
  if (failed(hostKernel(
          kernelName(pccx::abi::HostKernel::PleInject),
          {p.getStreams(), projected}, {p.getResult()},
          {attr("streams", region(streamsPlace)),
           attr("projected", region(place(projected))),
           attr("post_norm", b_.getStringAttr(*norm)),
           attr("num_inputs", i64(a)),
           attr("eps", b_.getF64FloatAttr(p.getEps().convertToFloat())),
           attr("out", region(out))})))
    return failure();
  for (Value t : llvm::reverse(temps))
    dropScratch(t);
  return success();
}

} // namespace pccx::lowering
