//===- AltUp.cpp - the AltUp stream stack
//=---------------------------------===//
//
// AltUp init, predict, correct and collapse run on the host (small
// matrices and coefficient mixing); a stream is a view of the stack.
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

LogicalResult ProgramLowering::visit(AltUpInitOp a) {
  FailureOr<ArrayAttr> names = hostTensors(a.getProjections());
  if (failed(names) || failed(ensureHost(a.getX0())))
    return failure();
  Place &out = newHostValue(a.getResult());
  return hostKernel(kernelName(pccx::abi::HostKernel::AltUpInit), {a.getX0()},
                    {a.getResult()},
                    {attr("x0", region(place(a.getX0()))),
                     attr("out", region(out)), attr("projections", *names)});
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
  FailureOr<ArrayAttr> names = hostTensors(a.getProjections());
  if (failed(names) || failed(ensureHost(a.getStreams())))
    return failure();
  Place &out = newHostValue(a.getResult());
  return hostKernel(kernelName(pccx::abi::HostKernel::AltUpCollapse),
                    {a.getStreams()}, {a.getResult()},
                    {attr("streams", region(place(a.getStreams()))),
                     attr("out", region(out)), attr("projections", *names)});
}

LogicalResult ProgramLowering::visit(StreamOp s) {
  if (failed(ensureHost(s.getStreams())))
    return failure();
  const Place &parent = place(s.getStreams());
  int64_t a =
      cast<RankedTensorType>(s.getStreams().getType()).getShape().end()[-2];
  Place view = layoutOf(s.getResult());
  view.host = parent.host;
  view.hostOffset =
      parent.hostOffset + int64_t(s.getIndex()) * parent.hostStride;
  view.hostStride = parent.hostStride * a;
  view.ownsHost = false;
  places_[s.getResult()] = view;
  return success();
}

} // namespace pccx::lowering
