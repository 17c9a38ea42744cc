//===- FFN.cpp - the feed-forward block
//=-----------------------------------===//
//
// Gate and up projections, Gaussian top-k sparsity, GELU on the SFU, the
// gate.up product on the host and the down projection.
//
//===----------------------------------------------------------------------===//

#include "passes/Gemma3nToPccx/LoweringState.h"

namespace pccx::lowering {

LogicalResult ProgramLowering::visit(FFNOp f) {
  auto hShape = cast<RankedTensorType>(f.getInput().getType()).getShape();
  SmallVector<int64_t> shape(hShape.begin(), hShape.end());
  shape.back() = cast<RankedTensorType>(f.getGate().getType()).getShape()[0];
  SmallVector<Value> temps;
  auto temp = [&]() { return temps.emplace_back(scratch(f, shape)); };
  Value gate = temp(), up = temp(), act = temp(), prod = temp();
  if (failed(matmul(f.getInput(), f.getGate(), gate, "gate")) ||
      failed(matmul(f.getInput(), f.getUp(), up, "up")))
    return failure();
  double sparsity = f.getSparsity().convertToDouble();
  if (sparsity > 0) {
    Value sparse = temp();
    if (failed(ensureHost(gate)))
      return failure();
    Place &out = newHostValue(sparse);
    hc::GaussianTopK call;
    call.In = region(place(gate));
    call.Out = region(out);
    call.Multiplier = float(pccx::import::normalQuantile(sparsity));
    if (failed(hostKernel({gate}, {sparse}, call)))
      return failure();
    dropHost(gate);
    gate = sparse;
  }
  if (failed(ensureL2(gate)))
    return failure();
  dropHost(gate);
  Place &a = newL2Value(act, "gelu");
  if (failed(cvo("gelu", place(gate), a.l2)))
    return failure();
  if (failed(ensureHost(act)) || failed(ensureHost(up)))
    return failure();
  // The product overwrites the GELU output (element-wise, same layout): a
  // full-size prefill step holds two [rows, intermediate] regions, not three.
  const pd::HostRegionAttr actRegion = region(place(act));
  const pd::HostRegionAttr prodRegion = region(reuseHost(act, prod));
  hc::Mul product;
  product.A = actRegion;
  product.B = region(place(up));
  product.Out = prodRegion;
  if (failed(hostKernel({act, up}, {prod}, product)))
    return failure();
  place(act).host.clear(); // overwritten
  dropHost(up);
  if (failed(ensureL2(prod)))
    return failure();
  dropHost(prod);
  if (failed(matmul(prod, f.getDown(), f.getResult(), "down")))
    return failure();
  for (Value t : temps)
    dropScratch(t);
  return success();
}

} // namespace pccx::lowering
