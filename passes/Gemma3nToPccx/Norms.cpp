//===- Norms.cpp - norms, sums, soft-cap
//=----------------------------------===//
//
// RMSNorm, weighted sums and the tanh soft-cap: host kernels (the v002
// SFU has no square, vector product or tanh).
//
//===----------------------------------------------------------------------===//

#include "passes/Gemma3nToPccx/LoweringState.h"

namespace pccx::lowering {

LogicalResult ProgramLowering::visit(RMSNormOp n) {
  hc::RmsNorm call;
  if (n.getGain() && failed(tensorParam(n.getGain(), call.Gain)))
    return failure();
  if (failed(ensureHost(n.getInput())))
    return failure();
  Place &out = newHostValue(n.getResult());
  call.In = region(place(n.getInput()));
  call.Out = region(out);
  call.Eps = n.getEps().convertToFloat();
  return hostKernel({n.getInput()}, {n.getResult()}, call);
}

LogicalResult ProgramLowering::visit(CombineOp c) {
  SmallVector<pd::HostRegionAttr> inputs;
  SmallVector<Value> values(c.getInputs().begin(), c.getInputs().end());
  for (Value v : values) {
    if (failed(ensureHost(v)))
      return failure();
    inputs.push_back(region(place(v)));
  }
  Place &out = newHostValue(c.getResult());
  hc::Combine call;
  call.Inputs = inputs;
  call.Out = region(out);
  call.Scale = c.getScale().convertToFloat();
  return hostKernel(values, {c.getResult()}, call);
}

LogicalResult ProgramLowering::visit(SoftCapOp s) {
  if (s == handledSoftCap_)
    return success();
  if (failed(ensureHost(s.getInput())))
    return failure();
  Place &out = newHostValue(s.getResult());
  hc::SoftCap call;
  call.In = region(place(s.getInput()));
  call.Out = region(out);
  call.Cap = s.getCap().convertToFloat();
  return hostKernel({s.getInput()}, {s.getResult()}, call);
}

} // namespace pccx::lowering
