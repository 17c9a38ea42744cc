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
template <typename AltUpOp, typename Call>
void ProgramLowering::altupStackParams(AltUpOp a, Value stack, Call &call) {
  Place &out = a->hasAttr("in_place") ? reuseHost(stack, a.getResult())
                                      : newHostValue(a.getResult());
  int64_t numInputs =
      cast<RankedTensorType>(stack.getType()).getShape().end()[-2];
  call.Out = region(out);
  call.Active = int64_t(a.getActive());
  call.NumInputs = numInputs;
  call.Eps = double(a.getEps().convertToFloat());
  if (auto clip = a.getCoefClipAttr())
    call.Clip = clip.getValueAsDouble();
}

LogicalResult ProgramLowering::altupProjections(
    Operation *at, ArrayRef<Value> inputs, ValueRange weights,
    SmallVectorImpl<Value> &out, SmallVectorImpl<pd::HostRegionAttr> &regions) {
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
  SmallVector<pd::HostRegionAttr> regions;
  if (failed(altupProjections(a, inputs, a.getProjections(), projected,
                              regions)) ||
      failed(ensureHost(a.getX0())))
    return failure();
  Place &out = newHostValue(a.getResult());
  SmallVector<Value> kernelInputs{a.getX0()};
  kernelInputs.append(projected);
  hc::AltUpInit call;
  call.X0 = region(place(a.getX0()));
  call.Out = region(out);
  call.Projected = regions;
  LogicalResult r = hostKernel(kernelInputs, {a.getResult()}, call);
  for (Value v : llvm::reverse(projected))
    dropScratch(v);
  return r;
}

LogicalResult ProgramLowering::visit(AltUpPredictOp a) {
  hc::AltUpPredict call;
  if (failed(tensorParam(a.getRouterNorm(), call.RouterNorm)) ||
      failed(tensorParam(a.getRouter(), call.Router)) ||
      failed(tensorParam(a.getCoefs(), call.Coefs)) ||
      failed(ensureHost(a.getStreams())))
    return failure();
  call.Streams = region(place(a.getStreams()));
  altupStackParams(a, a.getStreams(), call);
  return hostKernel({a.getStreams()}, {a.getResult()}, call);
}

LogicalResult ProgramLowering::visit(AltUpCorrectOp a) {
  hc::AltUpCorrect call;
  if (failed(tensorParam(a.getRouterNorm(), call.RouterNorm)) ||
      failed(tensorParam(a.getRouter(), call.Router)) ||
      failed(tensorParam(a.getCoefs(), call.Coefs)) ||
      failed(ensureHost(a.getPredictions())) ||
      failed(ensureHost(a.getOutput())))
    return failure();
  call.Predictions = region(place(a.getPredictions()));
  call.Output = region(place(a.getOutput()));
  altupStackParams(a, a.getPredictions(), call);
  return hostKernel({a.getPredictions(), a.getOutput()}, {a.getResult()}, call);
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
  SmallVector<pd::HostRegionAttr> regions;
  if (failed(
          altupProjections(a, views, a.getProjections(), projected, regions)))
    return failure();
  Place &out = newHostValue(a.getResult());
  SmallVector<Value> kernelInputs{a.getStreams()};
  kernelInputs.append(projected);
  hc::AltUpCollapse call;
  call.Streams = region(place(a.getStreams()));
  call.Out = region(out);
  call.Projected = regions;
  LogicalResult r = hostKernel(kernelInputs, {a.getResult()}, call);
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
