//===- Logits.cpp - the LM head and logits
//=--------------------------------===//
//
// The LM head streamed row by row with its soft-cap, and the hand-off of
// the logits to the runtime.
//
//===----------------------------------------------------------------------===//

#include "passes/Gemma3nToPccx/LoweringState.h"

namespace pccx::lowering {

LogicalResult ProgramLowering::visit(LMHeadOp l) {
  // Logits that only go (soft-capped) to the return are streamed.
  Operation *user = l->hasOneUse() ? *l->getUsers().begin() : nullptr;
  auto cap = dyn_cast_or_null<SoftCapOp>(user);
  Operation *end = cap && cap->hasOneUse() ? *cap->getUsers().begin() : user;
  if (withoutLogits_) {
    // The head is the last work of a step and only its logits use it.
    if (!llvm::isa_and_nonnull<func::ReturnOp>(end))
      return l.emitOpError("feeds more than the returned logits; a program "
                           "without logits cannot leave it out");
    logitsEmitted_ = true;
    handledSoftCap_ = cap;
    return success();
  }
  if (llvm::isa_and_nonnull<func::ReturnOp>(end))
    return lowerLogits(l, cap);
  return matmul(l.getInput(), l.getTable(), l.getResult(), "logits");
}

LogicalResult ProgramLowering::lowerLogits(LMHeadOp head, SoftCapOp cap) {
  Value input = head.getInput(), weight = head.getTable();
  if (!weight.getDefiningOp<QuantizeOp>())
    return matmul(input, weight, head.getResult(), "logits");
  auto shape = cast<RankedTensorType>(weight.getType()).getShape();
  const int64_t n = shape[0], k = shape[1];
  if (k > 65535)
    return head.emitOpError("input features exceed the 16-bit shape fields");
  if (failed(ensureL2(input)))
    return failure();
  const Place in = place(input);
  pd::RecipeAttr recipe = pccx::weightRecipe(weight);
  pccx::hw::WeightFormat format;
  if (!recipe || !recipe.weightFormat(&format))
    return emitError(loc()) << "unknown quantization scheme on "
                            << pccx::rootWeight(weight).getName();
  if (failed(in.rows > 1 ? lowerLogitsByTile(in, n, k, recipe, format, cap)
                          : lowerLogitsRow(in, n, k, recipe, format, cap)))
    return failure();
  logitsEmitted_ = true;
  handledSoftCap_ = cap;
  return success();
}

LogicalResult ProgramLowering::lowerLogitsRow(const Place &in, int64_t n,
                                              int64_t k, pd::RecipeAttr recipe,
                                              pccx::hw::WeightFormat format,
                                              SoftCapOp cap) {
  const int64_t rowWords = wordsFor(n);
  const std::string row = allocateHost(rowWords);
  const int64_t tileCols = logitsTileCols(n);
  std::vector<std::pair<int64_t, std::string>> tiles;
  for (int64_t first = 0; first < n; first += tileCols)
    tiles.push_back(
        {first, newBuffer(wordsFor(std::min(tileCols, n - first)), "logits")});
  for (auto &[first, buffer] : tiles) {
    int64_t count = std::min(tileCols, n - first);
    projectRows(buffer, wordsFor(count), in, k, recipe, format, first, count);
    memcpy(/*toHost=*/true, buffer, row, first / 8, rowWords, 1,
           wordsFor(count));
  }
  if (failed(capAndEmit(region(row, 0, n, 1, rowWords), cap, 0, -1)))
    return failure();
  releaseHost(row);
  return success();
}

LogicalResult ProgramLowering::capAndEmit(pd::HostRegionAttr logits,
                                         SoftCapOp cap, int64_t firstRow,
                                         int64_t firstColumn) {
  if (cap) {
    hc::SoftCap capCall;
    capCall.In = logits;
    capCall.Out = logits;
    capCall.Cap = cap.getCap().convertToFloat();
    if (failed(hostCall(capCall)))
      return failure();
  }
  hc::EmitLogits emit;
  emit.In = logits;
  emit.FirstRow = firstRow;
  if (firstColumn >= 0)
    emit.FirstColumn = firstColumn;
  return hostCall(emit);
}

LogicalResult ProgramLowering::lowerLogitsByTile(const Place &in, int64_t n,
                                                int64_t k,
                                                pd::RecipeAttr recipe,
                                                pccx::hw::WeightFormat format,
                                                SoftCapOp cap) {
  const int64_t rows = in.rows;
  // Tiles of vocabulary columns small enough that every row's slice sits
  // in L2 and in the host window at once: one GEMM per tile streams that
  // part of the LM head once for all rows.
  const int64_t tileCols = logitsTileCols(n), tileWords = tileCols / 8;
  const std::string buffer = newBuffer(rows * tileWords, "logits");
  const std::string host = allocateHost(rows * tileWords);
  for (int64_t first = 0; first < n; first += tileCols) {
    const int64_t count = std::min(tileCols, n - first);
    projectRows(buffer, tileWords, in, k, recipe, format, first, count);
    memcpy(/*toHost=*/true, buffer, host, 0, tileWords, rows, tileWords);
    pd::HostRegionAttr slice = region(host, 0, count, rows, tileWords);
    if (failed(capAndEmit(slice, cap, 0, first)))
      return failure();
  }
  releaseHost(host);
  return success();
}

LogicalResult ProgramLowering::visit(func::ReturnOp r) {
  if (r.getNumOperands() == 0)
    return r.emitOpError("returns no logits");
  if (logitsEmitted_)
    return success();
  Value logits = r.getOperand(0);
  if (failed(ensureHost(logits)))
    return failure();
  hc::EmitLogits emit;
  emit.In = region(place(logits));
  emit.FirstRow = int64_t(0);
  return hostKernel({logits}, {}, emit);
}

} // namespace pccx::lowering
