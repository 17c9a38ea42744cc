//===- AltUp.cpp - the AltUp stream stack
//=---------------------------------===//
//
// The AltUp stream projections of init and collapse are GEMVs on the NPU;
// the magnitude matching, the router (A x H, tanh) and the coefficient
// mixing of predict and correct run on the host; a stream is a view of the
// stack.
//
//===----------------------------------------------------------------------===//

#include "passes/Gemma3nToPccx/LoweringState.h"

namespace pccx::lowering {

/// What predict and correct share: the output stack (over the input stack
/// when the op is `in_place`), the active stream, the stack height, eps and
/// the optional coefficient clip.
template <typename AltUpOp>
void ProgramLowering::altupStackParams(AltUpOp a, Value stack,
                                       SmallVectorImpl<NamedAttribute> &params) {
  Place &out = a->hasAttr("in_place") ? reuseHost(stack, a.getResult())
                                      : newHostValue(a.getResult());
  int64_t numInputs =
      cast<RankedTensorType>(stack.getType()).getShape().end()[-2];
  params.append({attr("out", region(out)),
                 attr("active", i64(int64_t(a.getActive()))),
                 attr("num_inputs", i64(numInputs)),
                 attr("eps", f64(a.getEps().convertToFloat()))});
  if (auto clip = a.getCoefClipAttr())
    params.push_back(attr("clip", f64(clip.getValueAsDouble())));
}

LogicalResult ProgramLowering::altupProjections(
    Operation *at, ArrayRef<Value> inputs, ValueRange weights,
    SmallVectorImpl<Value> &out, SmallVectorImpl<Attribute> &regions) {
  for (auto [input, weight] : llvm::zip_equal(inputs, weights)) {
    Value projected = out.emplace_back(
        scratch(at, cast<RankedTensorType>(input.getType()).getShape()));
    if (failed(matmul(input, weight, projected, "altup_proj")) ||
        failed(ensureHost(projected)))
      return failure();
    regions.push_back(region(place(projected)));
  }
  return success();
}

LogicalResult ProgramLowering::visit(AltUpInitOp a) {
  // Every projection reads x0: one copy into L2 serves them all (and the
  // per-layer-input projection before them).
  SmallVector<Value> inputs(a.getProjections().size(), a.getX0());
  SmallVector<Value> projected;
  SmallVector<Attribute> regions;
  if (failed(altupProjections(a, inputs, a.getProjections(), projected,
                              regions)) ||
      failed(ensureHost(a.getX0())))
    return failure();
  Place &out = newHostValue(a.getResult());
  SmallVector<Value> kernelInputs{a.getX0()};
  kernelInputs.append(projected);
  LogicalResult r = hostKernel(kernelName(pccx::abi::HostKernel::AltUpInit),
                               kernelInputs, {a.getResult()},
                               {attr("x0", region(place(a.getX0()))),
                                attr("out", region(out)),
                                attr("projected", b_.getArrayAttr(regions))});
  for (Value v : llvm::reverse(projected))
    dropScratch(v);
  return r;
}

LogicalResult ProgramLowering::visit(AltUpPredictOp a) {
  SmallVector<NamedAttribute> params;
  if (failed(tensorParam(a.getRouterNorm(), "router_norm", params)) ||
      failed(tensorParam(a.getRouter(), "router", params)) ||
      failed(tensorParam(a.getCoefs(), "coefs", params)) ||
      failed(ensureHost(a.getStreams())))
    return failure();
  params.push_back(attr("streams", region(place(a.getStreams()))));
  altupStackParams(a, a.getStreams(), params);
  return hostKernel(kernelName(pccx::abi::HostKernel::AltUpPredict),
                    {a.getStreams()}, {a.getResult()}, params);
}

LogicalResult ProgramLowering::visit(AltUpCorrectOp a) {
  SmallVector<NamedAttribute> params;
  if (failed(tensorParam(a.getRouterNorm(), "router_norm", params)) ||
      failed(tensorParam(a.getRouter(), "router", params)) ||
      failed(tensorParam(a.getCoefs(), "coefs", params)) ||
      failed(ensureHost(a.getPredictions())) ||
      failed(ensureHost(a.getOutput())))
    return failure();
  params.append({attr("predictions", region(place(a.getPredictions()))),
                 attr("output", region(place(a.getOutput())))});
  altupStackParams(a, a.getPredictions(), params);
  return hostKernel(kernelName(pccx::abi::HostKernel::AltUpCorrect),
                    {a.getPredictions(), a.getOutput()}, {a.getResult()},
                    params);
}

LogicalResult ProgramLowering::visit(AltUpCollapseOp a) {
  if (failed(ensureHost(a.getStreams())))
    return failure();
  // Streams 1 .. A-1, each a view of the stack, go to L2 for their
  // un-projection.
  const int64_t numStreams = a.getProjections().size() + 1;
  auto shape = cast<RankedTensorType>(a.getResult().getType()).getShape();
  SmallVector<Value> views;
  for (int64_t k = 1; k < numStreams; ++k)
    views.push_back(streamView(a, a.getStreams(), k, shape));
  SmallVector<Value> projected;
  SmallVector<Attribute> regions;
  if (failed(
          altupProjections(a, views, a.getProjections(), projected, regions)))
    return failure();
  Place &out = newHostValue(a.getResult());
  SmallVector<Value> kernelInputs{a.getStreams()};
  kernelInputs.append(projected);
  LogicalResult r = hostKernel(kernelName(pccx::abi::HostKernel::AltUpCollapse),
                               kernelInputs, {a.getResult()},
                               {attr("streams", region(place(a.getStreams()))),
                                attr("out", region(out)),
                                attr("projected", b_.getArrayAttr(regions))});
  for (Value v : llvm::reverse(projected))
    dropScratch(v);
  for (Value v : llvm::reverse(views))
    dropScratch(v);
  return r;
}

void ProgramLowering::placeStreamView(Value stack, int64_t index, Value view) {
  const Place &parent = place(stack);
  const int64_t a =
      cast<RankedTensorType>(stack.getType()).getShape().end()[-2];
  Place p = layoutOf(view);
  p.host = parent.host;
  p.hostOffset = parent.hostOffset + index * parent.hostStride;
  p.hostStride = parent.hostStride * a;
  p.ownsHost = false;
  places_[view] = p;
}

Value ProgramLowering::streamView(Operation *at, Value stack, int64_t index,
                                  ArrayRef<int64_t> shape) {
  Value view = scratch(at, shape);
  placeStreamView(stack, index, view);
  return view;
}

LogicalResult ProgramLowering::visit(StreamOp s) {
  if (failed(ensureHost(s.getStreams())))
    return failure();
  placeStreamView(s.getStreams(), int64_t(s.getIndex()), s.getResult());
  return success();
}

} // namespace pccx::lowering
