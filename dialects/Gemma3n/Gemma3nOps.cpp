//===- Gemma3nOps.cpp - Gemma 3n model-level dialect -------------*- C++ -*-===//
//
// Verifiers check every weight's shape against the activations it meets, so
// that passes and the lowering can rely on consistent dimensions.
//===----------------------------------------------------------------------===//

#include "dialects/Gemma3n/Gemma3nOps.h"
#include "hw/numerics/Quantize.h"

#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace pccx::gemma3n;

#include "dialects/Gemma3n/Gemma3nOpsDialect.cpp.inc"

void Gemma3nDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/Gemma3n/Gemma3nOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/Gemma3n/Gemma3nOps.cpp.inc"

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

int64_t lastDim(Value v) { return shapeOf(v).back(); }

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

bool dimsMatch(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

// Checks that `v` has exactly the given shape (dynamic dims match anything).
LogicalResult expectShape(Operation *op, Value v, StringRef what,
                          ArrayRef<int64_t> expected) {
  ArrayRef<int64_t> got = shapeOf(v);
  bool ok = got.size() == expected.size();
  for (size_t i = 0; ok && i < got.size(); ++i)
    ok = dimsMatch(got[i], expected[i]);
  if (!ok)
    return op->emitOpError() << what << " has shape " << shapeStr(got)
                             << ", expected " << shapeStr(expected);
  return success();
}

// An activation: rank 1 (one position) or `rank1 + 1` with a leading token
// dimension; its feature dims (the trailing `featureRank`) must be `dims`.
LogicalResult expectActivation(Operation *op, Value v, StringRef what,
                               ArrayRef<int64_t> dims) {
  ArrayRef<int64_t> got = shapeOf(v);
  if (got.size() != dims.size() && got.size() != dims.size() + 1)
    return op->emitOpError() << what << " has rank " << got.size()
                             << ", expected " << dims.size() << " or "
                             << dims.size() + 1 << " (with a token dimension)";
  ArrayRef<int64_t> tail = got.take_back(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    if (!dimsMatch(tail[i], dims[i]))
      return op->emitOpError()
             << what << " has shape " << shapeStr(got) << ", expected trailing "
             << shapeStr(dims);
  return success();
}

LogicalResult expectSameType(Operation *op, Value a, Value b, StringRef what) {
  if (a.getType() != b.getType())
    return op->emitOpError() << what << " must have type " << b.getType()
                             << ", got " << a.getType();
  return success();
}

// Token-dimension consistency between token ids and an activation.
LogicalResult expectTokens(Operation *op, Value tokens, Value act,
                           unsigned featureRank) {
  ArrayRef<int64_t> t = shapeOf(tokens), a = shapeOf(act);
  if (t.size() != 1)
    return op->emitOpError("token ids/positions must be a 1-D tensor");
  if (a.size() == featureRank) {
    if (!dimsMatch(t[0], 1))
      return op->emitOpError() << "a single-position activation needs one "
                                  "token, got "
                               << t[0];
  } else if (!dimsMatch(t[0], a[0])) {
    return op->emitOpError() << "has " << t[0] << " tokens but the activation "
                             << "has " << a[0] << " positions";
  }
  return success();
}

LogicalResult expectPositiveEps(Operation *op, FloatAttr eps) {
  if (!(eps.getValueAsDouble() > 0))
    return op->emitOpError("eps must be positive");
  return success();
}

} // namespace

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("needs a checkpoint tensor name");
  return success();
}

LogicalResult ScaleWeightOp::verify() {
  ArrayRef<int64_t> w = shapeOf(getWeight());
  if (w.empty())
    return emitOpError("weight must have rank >= 1");
  if (getBy() && failed(expectShape(*this, getBy(), "by", {w.back()})))
    return failure();
  return expectShape(*this, getResult(), "result", w);
}

LogicalResult QuantizeOp::verify() {
  hw::WeightFormat format;
  if (!hw::parseScheme(getScheme().str(), &format))
    return emitOpError()
           << "unknown scheme '" << getScheme()
           << "' (known: int4_per_row, int4_per_row_search, int8_per_row)";
  ArrayRef<int64_t> w = shapeOf(getWeight());
  if (w.size() != 2)
    return emitOpError("quantizes [rows, columns] weights only");
  return expectShape(*this, getResult(), "result", w);
}

LogicalResult EmbedOp::verify() {
  ArrayRef<int64_t> table = shapeOf(getTable());
  if (table.size() != 2)
    return emitOpError("table must be [vocab, hidden]");
  if (failed(expectActivation(*this, getResult(), "result", {table[1]})))
    return failure();
  return expectTokens(*this, getTokens(), getResult(), 1);
}

LogicalResult PerLayerInputsOp::verify() {
  int64_t layers = getNumLayers();
  ArrayRef<int64_t> norm = shapeOf(getNorm());
  if (norm.size() != 1 || layers <= 0)
    return emitOpError("norm must be [per_layer_width] and num_layers > 0");
  int64_t p = norm[0], h = lastDim(getX0());
  if (failed(expectShape(*this, getTable(), "table",
                         {ShapedType::kDynamic, layers * p})) ||
      failed(expectShape(*this, getProjection(), "projection",
                         {layers * p, h})) ||
      failed(expectActivation(*this, getResult(), "result", {layers, p})) ||
      failed(expectTokens(*this, getTokens(), getX0(), 1)))
    return failure();
  return expectPositiveEps(*this, getEpsAttr());
}

LogicalResult AltUpInitOp::verify() {
  int64_t h = lastDim(getX0());
  for (Value p : getProjections())
    if (failed(expectShape(*this, p, "projection", {h, h})))
      return failure();
  int64_t a = 1 + int64_t(getProjections().size());
  return expectActivation(*this, getResult(), "result", {a, h});
}

namespace {
// Streams [.., A, H]; returns A and H.
LogicalResult streamDims(Operation *op, Value streams, int64_t &a,
                         int64_t &h) {
  ArrayRef<int64_t> s = shapeOf(streams);
  if (s.size() != 2 && s.size() != 3)
    return op->emitOpError("streams must be [A, H] or [T, A, H]");
  a = s[s.size() - 2];
  h = s.back();
  return success();
}

LogicalResult verifyRouter(Operation *op, int64_t a, int64_t h,
                           Value routerNorm, Value router, uint64_t active) {
  if (failed(expectShape(op, routerNorm, "router_norm", {h})) ||
      failed(expectShape(op, router, "router", {a, h})))
    return failure();
  if (!ShapedType::isDynamic(a) && int64_t(active) >= a)
    return op->emitOpError() << "active stream " << active << " is not below "
                             << a;
  return success();
}
} // namespace

LogicalResult AltUpPredictOp::verify() {
  int64_t a = 0, h = 0;
  if (failed(streamDims(*this, getStreams(), a, h)) ||
      failed(verifyRouter(*this, a, h, getRouterNorm(), getRouter(),
                          getActive())) ||
      failed(expectShape(*this, getCoefs(), "coefs", {a * a, a})))
    return failure();
  return expectSameType(*this, getResult(), getStreams(), "result");
}

LogicalResult StreamOp::verify() {
  int64_t a = 0, h = 0;
  if (failed(streamDims(*this, getStreams(), a, h)))
    return failure();
  if (int64_t(getIndex()) >= a)
    return emitOpError() << "stream " << getIndex() << " is not below " << a;
  ArrayRef<int64_t> s = shapeOf(getStreams());
  SmallVector<int64_t> expected(s.begin(), s.end());
  expected.erase(expected.end() - 2);
  return expectShape(*this, getResult(), "result", expected);
}

LogicalResult RMSNormOp::verify() {
  if (getGain() &&
      failed(expectShape(*this, getGain(), "gain", {lastDim(getInput())})))
    return failure();
  if (failed(expectSameType(*this, getResult(), getInput(), "result")))
    return failure();
  return expectPositiveEps(*this, getEpsAttr());
}

LogicalResult LaurelOp::verify() {
  int64_t h = lastDim(getInput());
  ArrayRef<int64_t> left = shapeOf(getLeft());
  if (left.size() != 2)
    return emitOpError("left must be [rank, hidden]");
  if (failed(expectShape(*this, getLeft(), "left", {left[0], h})) ||
      failed(expectShape(*this, getRight(), "right", {h, left[0]})) ||
      failed(expectShape(*this, getNorm(), "norm", {h})))
    return failure();
  return expectSameType(*this, getResult(), getInput(), "result");
}

LogicalResult LaurelResidualOp::verify() {
  int64_t h = lastDim(getAct());
  ArrayRef<int64_t> left = shapeOf(getLeft());
  if (left.size() != 2)
    return emitOpError("left must be [rank, hidden]");
  if (failed(expectSameType(*this, getAttn(), getAct(), "attn")) ||
      failed(expectSameType(*this, getXn(), getAct(), "xn")) ||
      failed(expectShape(*this, getLeft(), "left", {left[0], h})) ||
      failed(expectShape(*this, getRight(), "right", {h, left[0]})) ||
      failed(expectShape(*this, getAttnGain(), "attn_gain", {h})) ||
      failed(expectShape(*this, getLaurelGain(), "laurel_gain", {h})) ||
      failed(expectSameType(*this, getResult(), getAct(), "result")))
    return failure();
  return expectPositiveEps(*this, getEpsAttr());
}

LogicalResult KVProjectOp::verify() {
  int64_t h = lastDim(getInput()), nk = getNumKvHeads(), hd = getHeadDim();
  if (nk <= 0 || hd <= 0 || hd % 2)
    return emitOpError("num_kv_heads must be positive and head_dim positive "
                       "and even");
  if (failed(expectShape(*this, getKProj(), "k_proj", {nk * hd, h})) ||
      failed(expectShape(*this, getVProj(), "v_proj", {nk * hd, h})) ||
      failed(expectShape(*this, getKNorm(), "k_norm", {hd})) ||
      failed(expectActivation(*this, getK(), "k", {nk * hd})) ||
      failed(expectActivation(*this, getV(), "v", {nk * hd})) ||
      failed(expectTokens(*this, getPositions(), getInput(), 1)))
    return failure();
  return expectPositiveEps(*this, getEpsAttr());
}

LogicalResult KVCacheWriteOp::verify() {
  ArrayRef<int64_t> cache = shapeOf(getCache());
  if (cache.size() != 2)
    return emitOpError("cache must be [slots, kv_width]");
  if (failed(expectActivation(*this, getRows(), "rows", {cache[1]})) ||
      failed(expectTokens(*this, getPositions(), getRows(), 1)))
    return failure();
  return expectSameType(*this, getResult(), getCache(), "result");
}

LogicalResult AttentionOp::verify() {
  int64_t h = lastDim(getInput()), nq = getNumHeads(), nk = getNumKvHeads(),
          hd = getHeadDim();
  if (nq <= 0 || nk <= 0 || nq % nk)
    return emitOpError() << "num_heads " << nq
                         << " must be a positive multiple of num_kv_heads "
                         << nk;
  if (hd <= 0 || hd % 2)
    return emitOpError("head_dim must be positive and even");
  if (getKvLayer() > getLayer())
    return emitOpError() << "layer " << getLayer()
                         << " cannot read the cache of later layer "
                         << getKvLayer();
  if (getSlidingWindowAttr().getInt() < 0)
    return emitOpError("sliding_window must be >= 0 (0: full attention)");
  if (failed(expectShape(*this, getQProj(), "q_proj", {nq * hd, h})) ||
      failed(expectShape(*this, getQNorm(), "q_norm", {hd})) ||
      failed(expectShape(*this, getOProj(), "o_proj", {h, nq * hd})) ||
      failed(expectShape(*this, getKCache(), "k_cache",
                         {ShapedType::kDynamic, nk * hd})) ||
      failed(expectSameType(*this, getVCache(), getKCache(), "v_cache")) ||
      failed(expectTokens(*this, getPositions(), getInput(), 1)) ||
      failed(expectSameType(*this, getResult(), getInput(), "result")))
    return failure();
  return expectPositiveEps(*this, getEpsAttr());
}

LogicalResult CombineOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  for (Value v : getInputs())
    if (failed(expectSameType(*this, v, getResult(), "every input")))
      return failure();
  return success();
}

LogicalResult FFNOp::verify() {
  int64_t h = lastDim(getInput());
  ArrayRef<int64_t> gate = shapeOf(getGate());
  if (gate.size() != 2)
    return emitOpError("gate must be [ffn, hidden]");
  double s = getSparsity().convertToDouble();
  if (!(s >= 0 && s < 1))
    return emitOpError() << "sparsity " << s << " must be in [0, 1)";
  if (failed(expectShape(*this, getGate(), "gate", {gate[0], h})) ||
      failed(expectShape(*this, getUp(), "up", {gate[0], h})) ||
      failed(expectShape(*this, getDown(), "down", {h, gate[0]})))
    return failure();
  return expectSameType(*this, getResult(), getInput(), "result");
}

LogicalResult AltUpCorrectOp::verify() {
  int64_t a = 0, h = 0;
  if (failed(streamDims(*this, getPredictions(), a, h)) ||
      failed(verifyRouter(*this, a, h, getRouterNorm(), getRouter(),
                          getActive())) ||
      failed(expectShape(*this, getCoefs(), "coefs", {a, a})) ||
      failed(expectActivation(*this, getOutput(), "output", {h})))
    return failure();
  return expectSameType(*this, getResult(), getPredictions(), "result");
}

LogicalResult PLEInjectOp::verify() {
  int64_t a = 0, h = 0;
  if (failed(streamDims(*this, getStreams(), a, h)))
    return failure();
  ArrayRef<int64_t> pli = shapeOf(getPerLayerInputs());
  if (pli.size() < 2)
    return emitOpError("per_layer_inputs must be [L, P] or [T, L, P]");
  int64_t l = pli[pli.size() - 2], p = pli.back();
  if (!ShapedType::isDynamic(l) && int64_t(getLayer()) >= l)
    return emitOpError() << "layer " << getLayer() << " is not below " << l;
  if (int64_t(getActive()) >= a)
    return emitOpError() << "active stream " << getActive()
                         << " is not below " << a;
  if ((getOutputScale() &&
       failed(expectShape(*this, getOutputScale(), "output_scale", {h}))) ||
      failed(expectShape(*this, getGate(), "gate", {p, h})) ||
      failed(expectShape(*this, getProj(), "proj", {h, p})) ||
      failed(expectShape(*this, getPostNorm(), "post_norm", {h})))
    return failure();
  if (failed(expectSameType(*this, getResult(), getStreams(), "result")))
    return failure();
  return expectPositiveEps(*this, getEpsAttr());
}

LogicalResult AltUpCollapseOp::verify() {
  int64_t a = 0, h = 0;
  if (failed(streamDims(*this, getStreams(), a, h)))
    return failure();
  if (!ShapedType::isDynamic(a) &&
      int64_t(getProjections().size()) != a - 1)
    return emitOpError() << "needs " << a - 1 << " unembed projections for "
                         << a << " streams, got "
                         << getProjections().size();
  for (Value p : getProjections())
    if (failed(expectShape(*this, p, "projection", {h, h})))
      return failure();
  return expectActivation(*this, getResult(), "result", {h});
}

LogicalResult LMHeadOp::verify() {
  ArrayRef<int64_t> table = shapeOf(getTable());
  if (table.size() != 2)
    return emitOpError("table must be [vocab, hidden]");
  if (failed(expectActivation(*this, getInput(), "input", {table[1]})))
    return failure();
  return expectActivation(*this, getResult(), "result", {table[0]});
}

LogicalResult SoftCapOp::verify() {
  if (!(getCap().convertToDouble() > 0))
    return emitOpError("cap must be positive");
  return expectSameType(*this, getResult(), getInput(), "result");
}
