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
  SmallVector<NamedAttribute> params;
  if (n.getGain() && failed(tensorParam(n.getGain(), "gain", params)))
    return failure();
  if (failed(ensureHost(n.getInput())))
    return failure();
  Place &out = newHostValue(n.getResult());
  params.append({attr("in", region(place(n.getInput()))),
                 attr("out", region(out)),
                 attr("eps", f64(n.getEps().convertToFloat()))});
  return hostKernel(kernelName(pccx::abi::HostKernel::RmsNorm), {n.getInput()},
                    {n.getResult()}, params);
}

LogicalResult ProgramLowering::visit(CombineOp c) {
  SmallVector<Attribute> inputs;
  SmallVector<Value> values(c.getInputs().begin(), c.getInputs().end());
  for (Value v : values) {
    if (failed(ensureHost(v)))
      return failure();
    inputs.push_back(region(place(v)));
  }
  Place &out = newHostValue(c.getResult());
  return hostKernel(
      kernelName(pccx::abi::HostKernel::Combine), values, {c.getResult()},
      {attr("inputs", b_.getArrayAttr(inputs)), attr("out", region(out)),
       attr("scale", f64(c.getScale().convertToFloat()))});
}

LogicalResult ProgramLowering::visit(SoftCapOp s) {
  if (s == handledSoftCap_)
    return success();
  if (failed(ensureHost(s.getInput())))
    return failure();
  Place &out = newHostValue(s.getResult());
  return hostKernel(kernelName(pccx::abi::HostKernel::SoftCap), {s.getInput()},
                    {s.getResult()},
                    {attr("in", region(place(s.getInput()))),
                     attr("out", region(out)),
                     attr("cap", f64(s.getCap().convertToFloat()))});
}

} // namespace pccx::lowering
