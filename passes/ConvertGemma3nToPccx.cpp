//===- ConvertGemma3nToPccx.cpp - NPU/host partition of gemma3n -----------===//
//
// Lowers each gemma3n function to a pccx.program (docs/lowering.md).
//
// Every activation value gets a row layout: the product of all but its last
// dimension rows (the token dimension counting the step's rows) of
// last-dimension elements, each row starting on a 128-bit word. A value may
// live in L2 (a symbolic pccx.buffer, rows contiguous) and/or in the host
// window (a region, rows at a word stride); MEMCPYs are inserted when an
// NPU instruction needs a host value or a host kernel an L2 value.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "passes/FirstFitAllocator.h"

#include "compiler/model/ModelInfo.h"
#include "compiler/model/WeightEvaluator.h"
#include "hw/machine/MachineModel.h"
#include "hw/abi/HostAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_CONVERTGEMMA3NTOPCCX
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

using namespace pccx::gemma3n;
namespace pd = pccx::dialect;

/// Kernel names come from the host-kernel ABI (hw/abi/HostKernels.def).
StringRef kernelName(pccx::abi::HostKernel kernel) {
  return pccx::abi::kernelInfo(kernel).name;
}

/// GEMV/GEMM output features per instruction: the 16-bit shape limit,
/// rounded down to whole words.
constexpr int64_t kMaxRows = 65528;

int64_t wordsFor(int64_t elems) { return (elems + 7) / 8; }


/// Where a value lives.
struct Place {
  int64_t rows = 0, elems = 0;
  std::string l2;       ///< buffer symbol, or empty
  int64_t host = -1;    ///< window word offset, or -1
  int64_t hostStride = 0;
  bool ownsHost = false; ///< false for views of another value's region
  std::string cache;    ///< KV cache name (cache values only)
};

class ProgramLowering {
public:
  ProgramLowering(ModuleOp module, func::FuncOp fn,
                  const pccx::import::Gemma3nTextConfig &config,
                  int64_t prefillRows,
                  std::map<std::string, DictionaryAttr> &hostTensors,
                  std::map<std::string, DictionaryAttr> &gathers)
      : module_(module), fn_(fn), config_(config), b_(module.getContext()),
        window_(int64_t(pccx::machine::host_window_words)),
        hostTensors_(hostTensors), gathers_(gathers) {
    auto kind = fn->getAttrOfType<StringAttr>(pccx::kFunctionKindAttr);
    prefill_ = kind && kind.getValue() == "prefill";
    rows_ = prefill_ ? prefillRows : 1;
    prefillRows_ = prefillRows;
  }

  LogicalResult run();

private:
  // ---- structure ---------------------------------------------------------
  Location loc() const { return currentLoc_; }
  void startSegment(const std::string &name);
  std::string newBuffer(int64_t words, const std::string &hint);
  Operation *inst(StringRef name, ArrayRef<NamedAttribute> attrs);
  NamedAttribute attr(StringRef name, Attribute value) {
    return b_.getNamedAttr(name, value);
  }
  Attribute i64(int64_t v) { return b_.getI64IntegerAttr(v); }
  Attribute sym(const std::string &s) {
    return FlatSymbolRefAttr::get(b_.getContext(), s);
  }
  ArrayAttr triple(int64_t a, int64_t b, int64_t c) {
    return b_.getArrayAttr({i64(a), i64(b), i64(c)});
  }

  // ---- values ------------------------------------------------------------
  Place layoutOf(Value v);
  Place &place(Value v);
  LogicalResult ensureL2(Value v);
  LogicalResult ensureHost(Value v);
  Place &newHostValue(Value v);
  Place &newL2Value(Value v, const std::string &hint);
  ArrayAttr region(const Place &p) {
    return b_.getArrayAttr(
        {i64(p.host), i64(p.elems), i64(p.rows), i64(p.hostStride)});
  }
  ArrayAttr span(const Place &p) {
    return b_.getArrayAttr(
        {i64(p.host), i64((p.rows - 1) * p.hostStride + wordsFor(p.elems))});
  }
  void releaseDead(Operation *op);
  /// For an op marked `in_place`: the result takes over the input's host
  /// region (the input has no later reader).
  Place &reuseHost(Value input, Value result) {
    Place &in = place(input);
    Place out = layoutOf(result);
    out.host = in.host;
    out.hostStride = in.hostStride;
    out.ownsHost = in.ownsHost;
    in.ownsHost = false;
    return places_[result] = out;
  }
  /// Frees a temporary's window region as soon as the instructions that
  /// read it are emitted (program order makes reuse safe).
  void dropHost(Value v) {
    auto it = places_.find(v);
    if (it != places_.end() && it->second.ownsHost) {
      window_.release(it->second.host, it->second.rows * it->second.hostStride);
      it->second.ownsHost = false;
      it->second.host = -1;
    }
  }

  /// A value for an intermediate the gemma3n op does not name: an
  /// operand-less combine stands in for it until dropScratch erases it.
  Value scratch(Operation *at, ArrayRef<int64_t> shape) {
    OpBuilder tmp(at);
    return tmp
        .create<CombineOp>(at->getLoc(),
                           RankedTensorType::get(shape, b_.getF32Type()),
                           ValueRange{}, tmp.getF32FloatAttr(1))
        .getResult();
  }
  /// LAuReL's low-rank branch R . (L . xn) on the NPU: `rank` holds L . xn,
  /// `low` the result (both scratch values, shaped like xn but for the
  /// last dimension of `rank`).
  LogicalResult laurelProjection(Operation *at, Value xn, Value left,
                                 Value right, Value &low, Value &rank) {
    auto shape = cast<RankedTensorType>(xn.getType()).getShape();
    SmallVector<int64_t> rankShape(shape.begin(), shape.end());
    rankShape.back() = cast<RankedTensorType>(left.getType()).getShape()[0];
    low = scratch(at, shape);
    rank = scratch(at, rankShape);
    return failure(failed(matmul(xn, left, rank, "laurel_l")) ||
                   failed(matmul(rank, right, low, "laurel_r")));
  }
  /// Frees a scratch value's window region and erases it.
  void dropScratch(Value v) {
    dropHost(v);
    places_.erase(v);
    v.getDefiningOp()->erase();
  }

  // ---- emission helpers --------------------------------------------------
  LogicalResult hostKernel(StringRef kernel, ArrayRef<Value> inputs,
                           ArrayRef<Value> outputs,
                           ArrayRef<NamedAttribute> params);
  FailureOr<std::string> hostTensor(Value weight);
  /// hostTensor() of each weight, as an array of names.
  FailureOr<ArrayAttr> hostTensors(ValueRange weights) {
    SmallVector<Attribute> names;
    for (Value w : weights) {
      FailureOr<std::string> n = hostTensor(w);
      if (failed(n))
        return failure();
      names.push_back(b_.getStringAttr(*n));
    }
    return b_.getArrayAttr(names);
  }
  FailureOr<std::string> gatherTable(Value weight);
  /// GEMV/GEMM of `input` by the quantized weight; result in L2 (or, for
  /// weights too tall for one instruction, straight in the host window).
  LogicalResult matmul(Value input, Value weight, Value result,
                       const std::string &hint);
  void memcpyToHost(const Place &p, const std::string &l2, int64_t hostOffset,
                    int64_t hostStride, int64_t rows, int64_t words);
  LogicalResult cvo(StringRef func, const Place &src, const std::string &dst,
                    ArrayRef<NamedAttribute> extra = {});

  // ---- ops ---------------------------------------------------------------
  LogicalResult lower(Operation *op);
  LogicalResult lowerAttention(AttentionOp op);
  LogicalResult lowerFFN(FFNOp op);
  LogicalResult lowerPLEInject(PLEInjectOp op);
  LogicalResult lowerReturn(func::ReturnOp op);
  /// The LM head (and soft-cap) one row at a time into a reused host row,
  /// each row handed to the runtime by "emit_logits": a vocabulary of
  /// 262k logits for several prefill rows fits neither L2 nor the window.
  LogicalResult lowerLogits(LMHeadOp head, SoftCapOp cap);
  bool logitsEmitted_ = false;
  Operation *handledSoftCap_ = nullptr;

  ModuleOp module_;
  func::FuncOp fn_;
  const pccx::import::Gemma3nTextConfig &config_;
  OpBuilder b_;
  bool prefill_ = false;
  int64_t rows_ = 1, prefillRows_ = 1;
  Location currentLoc_ = UnknownLoc::get(module_.getContext());
  pd::ProgramOp program_;
  pd::SegmentOp segment_;
  std::string segmentName_;
  int bufferCount_ = 0;
  pccx::FirstFitAllocator window_;
  /// std::unordered_map: references to places stay valid as values are
  /// added.
  struct ValueHash {
    size_t operator()(Value v) const { return hash_value(v); }
  };
  std::unordered_map<Value, Place, ValueHash> places_;
  llvm::DenseMap<Value, Operation *> lastUse_;
  llvm::DenseMap<Operation *, SmallVector<Value>> dyingAt_;
  std::map<std::string, DictionaryAttr> &hostTensors_;
  std::map<std::string, DictionaryAttr> &gathers_;
  std::string one_, sum_; ///< L2: the constant 1.0, a REDUCE_SUM target
  std::map<std::string, std::pair<int64_t, int64_t>> caches_;
};

// ---------------------------------------------------------------------------
// Structure
// ---------------------------------------------------------------------------

void ProgramLowering::startSegment(const std::string &name) {
  if (segment_ && segmentName_ == name)
    return;
  b_.setInsertionPointToEnd(&program_.getBody().front());
  segment_ = b_.create<pd::SegmentOp>(loc(), b_.getStringAttr(name),
                                      IntegerAttr());
  segment_.getBody().emplaceBlock();
  segmentName_ = name;
  b_.setInsertionPointToEnd(&segment_.getBody().front());
}

std::string ProgramLowering::newBuffer(int64_t words, const std::string &hint) {
  std::string name = hint + "." + std::to_string(bufferCount_++);
  OpBuilder::InsertionGuard guard(b_);
  if (segment_)
    b_.setInsertionPoint(segment_);
  else
    b_.setInsertionPointToEnd(&program_.getBody().front());
  b_.create<pd::BufferOp>(loc(), b_.getStringAttr(name),
                          b_.getI64IntegerAttr(words), IntegerAttr());
  return name;
}

Operation *ProgramLowering::inst(StringRef name,
                                 ArrayRef<NamedAttribute> attrs) {
  OperationState state(loc(), name);
  state.addAttributes(attrs);
  return b_.create(state);
}

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

Place ProgramLowering::layoutOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  Place p;
  p.elems = type.getShape().back();
  p.rows = 1;
  for (int64_t d : type.getShape().drop_back())
    p.rows *= ShapedType::isDynamic(d) ? rows_ : d;
  p.hostStride = wordsFor(p.elems);
  return p;
}

Place &ProgramLowering::place(Value v) {
  auto it = places_.find(v);
  assert(it != places_.end() && "value used before it was lowered");
  return it->second;
}

Place &ProgramLowering::newHostValue(Value v) {
  Place p = layoutOf(v);
  p.host = window_.allocate(p.rows * p.hostStride);
  p.ownsHost = true;
  return places_[v] = p;
}

Place &ProgramLowering::newL2Value(Value v, const std::string &hint) {
  Place p = layoutOf(v);
  p.l2 = newBuffer(p.rows * wordsFor(p.elems), hint);
  return places_[v] = p;
}

LogicalResult ProgramLowering::ensureL2(Value v) {
  Place &p = place(v);
  if (!p.l2.empty())
    return success();
  if (p.host < 0)
    return emitError(loc()) << "internal: value has no location";
  p.l2 = newBuffer(p.rows * wordsFor(p.elems), "in");
  inst("pccx.memcpy",
       {attr("from_device", b_.getUnitAttr()), attr("dest_addr", sym(p.l2)),
        attr("src_addr", i64(0)), attr("aux_addr", i64(p.host)),
        attr("shape_ptr_addr", i64(0)),
        attr("fmap_shape",
             triple(wordsFor(p.elems), p.rows, p.hostStride))});
  return success();
}

void ProgramLowering::memcpyToHost(const Place &p, const std::string &l2,
                                   int64_t hostOffset, int64_t hostStride,
                                   int64_t rows, int64_t words) {
  (void)p;
  inst("pccx.memcpy",
       {attr("to_device", b_.getUnitAttr()), attr("dest_addr", i64(0)),
        attr("src_addr", sym(l2)), attr("aux_addr", i64(hostOffset)),
        attr("shape_ptr_addr", i64(0)),
        attr("fmap_shape", triple(words, rows, hostStride))});
}

LogicalResult ProgramLowering::ensureHost(Value v) {
  Place &p = place(v);
  if (p.host >= 0)
    return success();
  if (p.l2.empty())
    return emitError(loc()) << "internal: value has no location";
  p.hostStride = wordsFor(p.elems);
  p.host = window_.allocate(p.rows * p.hostStride);
  p.ownsHost = true;
  if (p.host < 0)
    return emitError(loc()) << "the host window of " << window_.size()
                            << " words is full";
  memcpyToHost(p, p.l2, p.host, p.hostStride, p.rows, wordsFor(p.elems));
  return success();
}

void ProgramLowering::releaseDead(Operation *op) {
  auto it = dyingAt_.find(op);
  if (it == dyingAt_.end())
    return;
  for (Value v : it->second) {
    auto p = places_.find(v);
    if (p != places_.end() && p->second.ownsHost && p->second.host >= 0) {
      window_.release(p->second.host, p->second.rows * p->second.hostStride);
      p->second.ownsHost = false;
    }
  }
}

// ---------------------------------------------------------------------------
// Emission helpers
// ---------------------------------------------------------------------------

LogicalResult ProgramLowering::hostKernel(StringRef kernel,
                                          ArrayRef<Value> inputs,
                                          ArrayRef<Value> outputs,
                                          ArrayRef<NamedAttribute> params) {
  SmallVector<Attribute> in, out;
  for (Value v : inputs) {
    if (failed(ensureHost(v)))
      return failure();
    in.push_back(span(place(v)));
  }
  for (Value v : outputs) {
    if (place(v).host < 0)
      return emitError(loc()) << "the host window of " << window_.size()
                              << " words is full";
    out.push_back(span(place(v)));
  }
  b_.create<pd::HostKernelOp>(loc(), b_.getStringAttr(kernel),
                              b_.getArrayAttr(in), b_.getArrayAttr(out),
                              b_.getDictionaryAttr(params));
  return success();
}

FailureOr<std::string> ProgramLowering::hostTensor(Value weight) {
  DictionaryAttr recipe = pccx::weightRecipe(weight);
  WeightOp root = pccx::rootWeight(weight);
  if (!recipe || !root)
    return emitError(loc()) << "operand is not a weight expression",
           failure();
  std::string base = root.getName().str(), name = base;
  for (int n = 1;; ++n) {
    auto it = hostTensors_.find(name);
    if (it == hostTensors_.end()) {
      hostTensors_[name] = recipe;
      return name;
    }
    if (it->second == recipe)
      return name;
    name = base + "#" + std::to_string(n);
  }
}

FailureOr<std::string> ProgramLowering::gatherTable(Value weight) {
  DictionaryAttr recipe = pccx::weightRecipe(weight);
  WeightOp root = pccx::rootWeight(weight);
  if (!recipe || !root)
    return emitError(loc()) << "table is not a weight expression", failure();
  std::string base = root.getName().str(), name = base;
  for (int n = 1;; ++n) {
    auto it = gathers_.find(name);
    if (it == gathers_.end()) {
      gathers_[name] = recipe;
      return name;
    }
    if (it->second == recipe)
      return name;
    name = base + "#" + std::to_string(n);
  }
}

LogicalResult ProgramLowering::matmul(Value input, Value weight, Value result,
                                      const std::string &hint) {
  auto q = weight.getDefiningOp<QuantizeOp>();
  if (!q)
    return emitError(loc())
           << "the NPU multiplies INT4 weights only, but this weight ("
           << (pccx::rootWeight(weight) ? pccx::rootWeight(weight).getName()
                                        : StringRef("?"))
           << ") is not quantized; run gemma3n-quantize-int4 first";
  auto shape = cast<RankedTensorType>(weight.getType()).getShape();
  const int64_t n = shape[0], k = shape[1];
  if (k > 65535)
    return emitError(loc()) << "weight has " << k
                            << " input features; the v002 shape fields stop "
                               "at 65535";
  if (failed(ensureL2(input)))
    return failure();
  const Place &in = place(input);
  if (in.elems != k)
    return emitError(loc()) << "internal: input width " << in.elems
                            << " does not match weight " << k;
  DictionaryAttr recipe = pccx::weightRecipe(weight);
  pccx::hw::WeightFormat format;
  if (!pccx::recipeFormat(recipe, &format))
    return emitError(loc()) << "unknown quantization scheme on "
                            << pccx::rootWeight(weight).getName();
  const bool gemm = in.rows > 1;
  auto emitTile = [&](const std::string &dest, int64_t first, int64_t count) {
    DictionaryAttr record = b_.getDictionaryAttr(
        {attr("recipe", recipe), attr("first_row", i64(first)),
         attr("num_rows", i64(count))});
    inst(gemm ? "pccx.gemm" : "pccx.gemv",
         {attr("dest_reg", sym(dest)), attr("src_addr", sym(in.l2)),
          attr("size_ptr_addr", i64(0)), attr("shape_ptr_addr", i64(0)),
          attr("w_scale", b_.getUnitAttr()), attr("weights", record),
          attr("weight_shape", triple(count, k, int64_t(format))),
          attr("fmap_shape", triple(in.rows, wordsFor(k), wordsFor(count)))});
  };
  if (n <= kMaxRows) {
    Place &out = newL2Value(result, hint);
    emitTile(out.l2, 0, n);
    return success();
  }
  // Too tall for one instruction (the LM head): tiles, each copied into
  // its columns of the host-window result.
  Place &out = newHostValue(result);
  if (out.host < 0)
    return emitError(loc()) << "the host window is full";
  for (int64_t first = 0; first < n; first += kMaxRows) {
    int64_t count = std::min(kMaxRows, n - first);
    std::string tile = newBuffer(in.rows * wordsFor(count), hint + ".tile");
    emitTile(tile, first, count);
    memcpyToHost(out, tile, out.host + first / 8, out.hostStride, in.rows,
                 wordsFor(count));
  }
  return success();
}

LogicalResult ProgramLowering::cvo(StringRef func, const Place &src,
                                   const std::string &dst,
                                   ArrayRef<NamedAttribute> extra) {
  // One CVO per row: rows are word aligned, and the 16-bit length field
  // caps a single vector.
  if (src.elems > 65535)
    return emitError(loc()) << "vector of " << src.elems
                            << " elements exceeds the 16-bit CVO length";
  for (int64_t r = 0; r < src.rows; ++r) {
    SmallVector<NamedAttribute> attrs = {
        attr("cvo_func", b_.getStringAttr(func)),
        attr("src_addr", sym(src.l2)), attr("dst_addr", sym(dst)),
        attr("length", i64(src.elems))};
    if (r) {
      // Symbolic address plus a word offset, resolved by L2 allocation.
      attrs.push_back(attr("src_addr_offset", i64(r * wordsFor(src.elems))));
      attrs.push_back(attr("dst_addr_offset", i64(r * wordsFor(src.elems))));
    }
    attrs.append(extra.begin(), extra.end());
    inst("pccx.cvo", attrs);
  }
  return success();
}

// ---------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------

LogicalResult ProgramLowering::run() {
  // Segment per decoder layer: an op belongs to the layer its location or
  // its weights name ("...layers.N..."); -2 for model-level weights, -1
  // when nothing tells (the op stays in the current segment).
  auto layerIn = [](StringRef s) -> int64_t {
    size_t at = s.find("layers.");
    if (at == StringRef::npos)
      return -2;
    int64_t layer = 0;
    StringRef rest = s.substr(at + 7);
    return rest.consumeInteger(10, layer) ? -2 : layer;
  };
  auto layerOf = [&](Operation &op) -> int64_t {
    if (auto name = dyn_cast<NameLoc>(op.getLoc()))
      return layerIn(name.getName().getValue());
    int64_t found = -1;
    for (Value operand : op.getOperands())
      if (WeightOp w = pccx::rootWeight(operand)) {
        int64_t l = layerIn(w.getName());
        if (l >= 0)
          return l;
        found = -2;
      }
    return found;
  };

  // Last uses (views extend their parent's lifetime).
  Block &body = fn_.getBody().front();
  llvm::DenseMap<Value, Value> viewParent;
  for (Operation &op : body) {
    if (auto s = dyn_cast<StreamOp>(op))
      viewParent[s.getResult()] = s.getStreams();
    for (Value operand : op.getOperands()) {
      Value v = operand;
      lastUse_[v] = &op;
      while (viewParent.count(v)) {
        v = viewParent[v];
        lastUse_[v] = &op;
      }
    }
  }
  for (auto &[v, op] : lastUse_)
    dyingAt_[op].push_back(v);

  b_.setInsertionPointToEnd(module_.getBody());
  program_ = b_.create<pd::ProgramOp>(
      fn_.getLoc(), b_.getStringAttr(prefill_ ? "prefill" : "decode"),
      b_.getStringAttr(prefill_ ? "prefill" : "decode"));
  program_.getBody().emplaceBlock();
  program_->setAttr("rows", b_.getI64IntegerAttr(rows_));

  currentLoc_ = fn_.getLoc();
  startSegment("prologue");
  // Constants every step needs: 1.0 (the attention-score GEMV input) and a
  // REDUCE_SUM target.
  {
    one_ = newBuffer(1, "one");
    sum_ = newBuffer(1, "sum");
    int64_t at = window_.allocate(1);
    b_.create<pd::HostKernelOp>(
        loc(), b_.getStringAttr(kernelName(pccx::abi::HostKernel::Fill)), b_.getArrayAttr({}),
        b_.getArrayAttr({b_.getArrayAttr({i64(at), i64(1)})}),
        b_.getDictionaryAttr(
            {attr("out", b_.getArrayAttr({i64(at), i64(1), i64(1), i64(1)})),
             attr("value", b_.getF64FloatAttr(1.0))}));
    inst("pccx.memcpy",
         {attr("from_device", b_.getUnitAttr()), attr("dest_addr", sym(one_)),
          attr("src_addr", i64(0)), attr("aux_addr", i64(at)),
          attr("shape_ptr_addr", i64(0)), attr("fmap_shape", triple(1, 1, 1))});
    window_.release(at, 1);
  }

  // Cache arguments.
  for (BlockArgument arg : body.getArguments()) {
    auto kind = fn_.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                 pccx::kCacheKindAttr);
    auto layer = fn_.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                   pccx::kCacheLayerAttr);
    if (!kind || !layer)
      continue;
    auto shape = cast<RankedTensorType>(arg.getType()).getShape();
    std::string name = "kv." + std::to_string(layer.getInt()) + "." +
                       kind.getValue().str();
    // Sliding layers keep only what a step can see: the window plus the
    // rows a prefill step writes before its first row reads (a ring).
    int64_t slots = shape[0];
    if (config_.layer_types[size_t(layer.getInt())] ==
        pccx::import::LayerType::Sliding)
      slots = std::min(slots, config_.sliding_window + prefillRows_ - 1);
    caches_[name] = {slots, shape[1]};
    Place p;
    p.cache = name;
    places_[arg] = p;
  }

  int64_t currentLayer = -1;
  for (Operation &op : body) {
    currentLoc_ = op.getLoc();
    if (isa<WeightOp, ScaleWeightOp, QuantizeOp>(op))
      continue;
    int64_t layer = layerOf(op);
    if (layer >= 0 && layer != currentLayer) {
      startSegment("layer." + std::to_string(layer));
      currentLayer = layer;
    } else if (layer == -2 && currentLayer >= 0) {
      startSegment("epilogue");
    }
    if (failed(lower(&op)))
      return failure();
    releaseDead(&op);
  }

  // What the runtime needs besides the words.
  SmallVector<NamedAttribute> caches;
  for (auto &[name, dims] : caches_)
    caches.push_back(attr(name, b_.getArrayAttr({i64(dims.first),
                                                 i64(dims.second)})));
  program_->setAttr("caches", b_.getDictionaryAttr(caches));
  program_->setAttr("window_words", i64(window_.highWater()));
  return success();
}

LogicalResult ProgramLowering::lower(Operation *op) {
  auto f64 = [&](double v) { return b_.getF64FloatAttr(v); };
  auto tensorAttr = [&](Value w, StringRef key,
                        SmallVectorImpl<NamedAttribute> &params) {
    FailureOr<std::string> name = hostTensor(w);
    if (failed(name))
      return failure();
    params.push_back(attr(key, b_.getStringAttr(*name)));
    return success();
  };
  auto hostOut = [&](Value v) -> Place & { return newHostValue(v); };

  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<EmbedOp>([&](EmbedOp e) -> LogicalResult {
        FailureOr<std::string> table = gatherTable(e.getTable());
        if (failed(table))
          return failure();
        Place &out = hostOut(e.getResult());
        return hostKernel(kernelName(pccx::abi::HostKernel::Embed), {}, {e.getResult()},
                          {attr("out", region(out)),
                           attr("table", b_.getStringAttr(*table)),
                           attr("scale", f64(e.getScale().convertToFloat()))});
      })
      .Case<PerLayerInputsOp>([&](PerLayerInputsOp p) -> LogicalResult {
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
        if (failed(table) || failed(tensorAttr(p.getNorm(), "norm", params)))
          return failure();
        if (failed(ensureHost(projValue)))
          return failure();
        Place &out = hostOut(p.getResult());
        const int64_t h = cast<RankedTensorType>(p.getX0().getType())
                              .getShape()
                              .back();
        const int64_t width = cast<RankedTensorType>(p.getNorm().getType())
                                  .getShape()
                                  .back();
        params.append(
            {attr("proj", region(place(projValue))), attr("out", region(out)),
             attr("table", b_.getStringAttr(*table)),
             attr("num_layers", i64(int64_t(p.getNumLayers()))),
             attr("eps", f64(p.getEps().convertToFloat())),
             attr("proj_scale", f64(float(1.0 / std::sqrt(double(h))))),
             attr("embed_scale", f64(float(std::sqrt(double(width))))),
             attr("input_scale", f64(float(1.0 / std::sqrt(2.0))))});
        LogicalResult r =
            hostKernel(kernelName(pccx::abi::HostKernel::PerLayerInputs), {projValue}, {p.getResult()},
                       params);
        dropScratch(projValue);
        return r;
      })
      .Case<AltUpInitOp>([&](AltUpInitOp a) -> LogicalResult {
        FailureOr<ArrayAttr> names = hostTensors(a.getProjections());
        if (failed(names) || failed(ensureHost(a.getX0())))
          return failure();
        Place &out = hostOut(a.getResult());
        return hostKernel(kernelName(pccx::abi::HostKernel::AltUpInit), {a.getX0()}, {a.getResult()},
                          {attr("x0", region(place(a.getX0()))),
                           attr("out", region(out)),
                           attr("projections", *names)});
      })
      .Case<AltUpPredictOp>([&](AltUpPredictOp a) -> LogicalResult {
        SmallVector<NamedAttribute> params;
        if (failed(tensorAttr(a.getRouterNorm(), "router_norm", params)) ||
            failed(tensorAttr(a.getRouter(), "router", params)) ||
            failed(tensorAttr(a.getCoefs(), "coefs", params)) ||
            failed(ensureHost(a.getStreams())))
          return failure();
        Place &out = a->hasAttr("in_place")
                         ? reuseHost(a.getStreams(), a.getResult())
                         : hostOut(a.getResult());
        int64_t numInputs =
            cast<RankedTensorType>(a.getStreams().getType()).getShape().end()[-2];
        params.append({attr("streams", region(place(a.getStreams()))),
                       attr("out", region(out)),
                       attr("active", i64(int64_t(a.getActive()))),
                       attr("num_inputs", i64(numInputs)),
                       attr("eps", f64(a.getEps().convertToFloat()))});
        if (auto clip = a.getCoefClipAttr())
          params.push_back(attr("clip", f64(clip.getValueAsDouble())));
        return hostKernel(kernelName(pccx::abi::HostKernel::AltUpPredict), {a.getStreams()},
                          {a.getResult()}, params);
      })
      .Case<StreamOp>([&](StreamOp s) -> LogicalResult {
        if (failed(ensureHost(s.getStreams())))
          return failure();
        const Place &parent = place(s.getStreams());
        int64_t a = cast<RankedTensorType>(s.getStreams().getType())
                        .getShape()
                        .end()[-2];
        Place view = layoutOf(s.getResult());
        view.host = parent.host + int64_t(s.getIndex()) * parent.hostStride;
        view.hostStride = parent.hostStride * a;
        view.ownsHost = false;
        places_[s.getResult()] = view;
        return success();
      })
      .Case<RMSNormOp>([&](RMSNormOp n) -> LogicalResult {
        SmallVector<NamedAttribute> params;
        if (n.getGain() && failed(tensorAttr(n.getGain(), "gain", params)))
          return failure();
        if (failed(ensureHost(n.getInput())))
          return failure();
        Place &out = hostOut(n.getResult());
        params.append({attr("in", region(place(n.getInput()))),
                       attr("out", region(out)),
                       attr("eps", f64(n.getEps().convertToFloat()))});
        return hostKernel(kernelName(pccx::abi::HostKernel::RmsNorm), {n.getInput()}, {n.getResult()},
                          params);
      })
      .Case<LaurelOp>([&](LaurelOp l) -> LogicalResult {
        Value lowT, rankT;
        SmallVector<NamedAttribute> params;
        if (failed(laurelProjection(l, l.getInput(), l.getLeft(),
                                    l.getRight(), lowT, rankT)) ||
            failed(tensorAttr(l.getNorm(), "gain", params)) ||
            failed(ensureHost(l.getInput())) || failed(ensureHost(lowT)))
          return failure();
        Place &out = hostOut(l.getResult());
        params.append({attr("x", region(place(l.getInput()))),
                       attr("y", region(place(lowT))),
                       attr("out", region(out)),
                       attr("eps", f64(l.getEps().convertToFloat()))});
        LogicalResult r = hostKernel(kernelName(pccx::abi::HostKernel::AddRmsNorm), {l.getInput(), lowT},
                                     {l.getResult()}, params);
        dropScratch(lowT);
        dropScratch(rankT);
        return r;
      })
      .Case<LaurelResidualOp>([&](LaurelResidualOp l) -> LogicalResult {
        Value lowT, rankT;
        SmallVector<NamedAttribute> params;
        if (failed(laurelProjection(l, l.getXn(), l.getLeft(), l.getRight(),
                                    lowT, rankT)) ||
            failed(tensorAttr(l.getAttnGain(), "attn_gain", params)) ||
            failed(tensorAttr(l.getLaurelGain(), "laurel_gain", params)))
          return failure();
        const Value hostInputs[] = {l.getAct(), l.getAttn(), l.getXn(), lowT};
        for (Value v : hostInputs)
          if (failed(ensureHost(v)))
            return failure();
        Place &out = hostOut(l.getResult());
        params.append(
            {attr("act", region(place(l.getAct()))),
             attr("attn", region(place(l.getAttn()))),
             attr("xn", region(place(l.getXn()))),
             attr("low", region(place(lowT))), attr("out", region(out)),
             attr("residual_scale",
                  f64(l.getResidualScale().convertToFloat())),
             attr("eps", f64(l.getEps().convertToFloat()))});
        LogicalResult r = hostKernel(
            kernelName(pccx::abi::HostKernel::LaurelResidual), {l.getAct(), l.getAttn(), l.getXn(), lowT},
            {l.getResult()}, params);
        dropScratch(lowT);
        dropScratch(rankT);
        return r;
      })
      .Case<KVProjectOp>([&](KVProjectOp kv) -> LogicalResult {
        auto shape = cast<RankedTensorType>(kv.getK().getType()).getShape();
        Value kRaw = scratch(kv, shape), vRaw = scratch(kv, shape);
        SmallVector<NamedAttribute> params;
        if (failed(matmul(kv.getInput(), kv.getKProj(), kRaw, "k")) ||
            failed(matmul(kv.getInput(), kv.getVProj(), vRaw, "v")) ||
            failed(tensorAttr(kv.getKNorm(), "k_norm", params)) ||
            failed(ensureHost(kRaw)) || failed(ensureHost(vRaw)))
          return failure();
        Place &k = hostOut(kv.getK());
        Place &v = hostOut(kv.getV());
        params.append({attr("k", region(place(kRaw))),
                       attr("v", region(place(vRaw))),
                       attr("k_out", region(k)), attr("v_out", region(v)),
                       attr("kv_heads", i64(int64_t(kv.getNumKvHeads()))),
                       attr("head_dim", i64(int64_t(kv.getHeadDim()))),
                       attr("theta", f64(kv.getRopeTheta().convertToDouble())),
                       attr("eps", f64(kv.getEps().convertToFloat()))});
        LogicalResult r = hostKernel(kernelName(pccx::abi::HostKernel::KvNormRope), {kRaw, vRaw},
                                     {kv.getK(), kv.getV()}, params);
        dropScratch(kRaw);
        dropScratch(vRaw);
        return r;
      })
      .Case<KVCacheWriteOp>([&](KVCacheWriteOp w) -> LogicalResult {
        const Place &cache = place(w.getCache());
        if (cache.cache.empty())
          return w.emitOpError("writes a cache that is not a cache argument");
        if (failed(ensureHost(w.getRows())))
          return failure();
        Place result;
        result.cache = cache.cache;
        places_[w.getResult()] = result;
        return hostKernel(kernelName(pccx::abi::HostKernel::CacheWrite), {w.getRows()}, {},
                          {attr("rows", region(place(w.getRows()))),
                           attr("cache", b_.getStringAttr(cache.cache))});
      })
      .Case<AttentionOp>([&](AttentionOp a) { return lowerAttention(a); })
      .Case<CombineOp>([&](CombineOp c) -> LogicalResult {
        SmallVector<Attribute> inputs;
        SmallVector<Value> values(c.getInputs().begin(), c.getInputs().end());
        for (Value v : values) {
          if (failed(ensureHost(v)))
            return failure();
          inputs.push_back(region(place(v)));
        }
        Place &out = hostOut(c.getResult());
        return hostKernel(kernelName(pccx::abi::HostKernel::Combine), values, {c.getResult()},
                          {attr("inputs", b_.getArrayAttr(inputs)),
                           attr("out", region(out)),
                           attr("scale", f64(c.getScale().convertToFloat()))});
      })
      .Case<FFNOp>([&](FFNOp f) { return lowerFFN(f); })
      .Case<AltUpCorrectOp>([&](AltUpCorrectOp a) -> LogicalResult {
        SmallVector<NamedAttribute> params;
        if (failed(tensorAttr(a.getRouterNorm(), "router_norm", params)) ||
            failed(tensorAttr(a.getRouter(), "router", params)) ||
            failed(tensorAttr(a.getCoefs(), "coefs", params)) ||
            failed(ensureHost(a.getPredictions())) ||
            failed(ensureHost(a.getOutput())))
          return failure();
        Place &out = a->hasAttr("in_place")
                         ? reuseHost(a.getPredictions(), a.getResult())
                         : hostOut(a.getResult());
        int64_t numInputs = cast<RankedTensorType>(a.getPredictions().getType())
                                .getShape()
                                .end()[-2];
        params.append({attr("predictions", region(place(a.getPredictions()))),
                       attr("output", region(place(a.getOutput()))),
                       attr("out", region(out)),
                       attr("active", i64(int64_t(a.getActive()))),
                       attr("num_inputs", i64(numInputs)),
                       attr("eps", f64(a.getEps().convertToFloat()))});
        if (auto clip = a.getCoefClipAttr())
          params.push_back(attr("clip", f64(clip.getValueAsDouble())));
        return hostKernel(kernelName(pccx::abi::HostKernel::AltUpCorrect),
                          {a.getPredictions(), a.getOutput()}, {a.getResult()},
                          params);
      })
      .Case<PLEInjectOp>([&](PLEInjectOp p) { return lowerPLEInject(p); })
      .Case<AltUpCollapseOp>([&](AltUpCollapseOp a) -> LogicalResult {
        FailureOr<ArrayAttr> names = hostTensors(a.getProjections());
        if (failed(names) || failed(ensureHost(a.getStreams())))
          return failure();
        Place &out = hostOut(a.getResult());
        return hostKernel(kernelName(pccx::abi::HostKernel::AltUpCollapse), {a.getStreams()},
                          {a.getResult()},
                          {attr("streams", region(place(a.getStreams()))),
                           attr("out", region(out)),
                           attr("projections", *names)});
      })
      .Case<LMHeadOp>([&](LMHeadOp l) -> LogicalResult {
        // Logits that only go (soft-capped) to the return are streamed.
        Operation *user = l->hasOneUse() ? *l->getUsers().begin() : nullptr;
        auto cap = dyn_cast_or_null<SoftCapOp>(user);
        Operation *end = cap && cap->hasOneUse() ? *cap->getUsers().begin()
                                                 : user;
        if (isa_and_nonnull<func::ReturnOp>(end))
          return lowerLogits(l, cap);
        return matmul(l.getInput(), l.getTable(), l.getResult(), "logits");
      })
      .Case<SoftCapOp>([&](SoftCapOp s) -> LogicalResult {
        if (s == handledSoftCap_)
          return success();
        if (failed(ensureHost(s.getInput())))
          return failure();
        Place &out = hostOut(s.getResult());
        return hostKernel(kernelName(pccx::abi::HostKernel::SoftCap), {s.getInput()}, {s.getResult()},
                          {attr("in", region(place(s.getInput()))),
                           attr("out", region(out)),
                           attr("cap", f64(s.getCap().convertToFloat()))});
      })
      .Case<func::ReturnOp>([&](func::ReturnOp r) { return lowerReturn(r); })
      .Default([&](Operation *other) {
        return other->emitOpError("has no lowering to the pccx dialect");
      });
}

LogicalResult ProgramLowering::lowerAttention(AttentionOp a) {
  const int64_t heads = int64_t(a.getNumHeads()),
                kvHeads = int64_t(a.getNumKvHeads()),
                headDim = int64_t(a.getHeadDim()),
                window = a.getSlidingWindowAttr().getInt();
  const Place &kc = place(a.getKCache()), &vc = place(a.getVCache());
  if (kc.cache.empty() || vc.cache.empty())
    return a.emitOpError("reads a cache that is not a cache argument");
  const int64_t slots = caches_[kc.cache].first;
  const int64_t capacity = window > 0 ? std::min(window, slots) : slots;
  if (capacity > 65535)
    return a.emitOpError() << "attends over up to " << capacity
                           << " positions; the v002 length fields stop at "
                              "65535 (lower --max-seq-len)";

  // Q projection on the NPU, scores on the host into weight records.
  auto qShape = cast<RankedTensorType>(a.getInput().getType()).getShape();
  SmallVector<int64_t> shape(qShape.begin(), qShape.end());
  shape.back() = heads * headDim;
  Value qRaw = scratch(a, shape);
  SmallVector<NamedAttribute> params;
  FailureOr<std::string> qNorm = hostTensor(a.getQNorm());
  if (failed(qNorm) || failed(matmul(a.getInput(), a.getQProj(), qRaw, "q")) ||
      failed(ensureHost(qRaw)))
    return failure();
  const double theta = a.getRopeTheta().convertToDouble();
  const double eps = a.getEps().convertToFloat();
  if (failed(hostKernel(
          kernelName(pccx::abi::HostKernel::AttentionScores), {qRaw}, {},
          {attr("q", region(place(qRaw))),
           attr("q_norm", b_.getStringAttr(*qNorm)),
           attr("k_cache", b_.getStringAttr(kc.cache)),
           attr("heads", i64(heads)), attr("kv_heads", i64(kvHeads)),
           attr("head_dim", i64(headDim)),
           attr("theta", b_.getF64FloatAttr(theta)),
           attr("eps", b_.getF64FloatAttr(eps)), attr("window", i64(window))})))
    return failure();
  dropScratch(qRaw);

  // Softmax of each (row, head) on the SFU, the row's probabilities to the
  // host, then P . V for that row: one row of heads in the window at a time.
  const int64_t rows = rows_, capWords = wordsFor(capacity);
  const int64_t probs = window_.allocate(heads * capWords);
  if (probs < 0)
    return a.emitOpError("the host window is full");
  std::string scores = newBuffer(capWords, "scores");
  Value oRaw = scratch(a, shape);
  Place &o = newHostValue(oRaw);
  if (o.host < 0)
    return a.emitOpError("the host window is full");
  const Place oPlace = o;
  for (int64_t r = 0; r < rows; ++r) {
    auto patch = [&](StringRef field, StringRef bank) {
      SmallVector<NamedAttribute> p = {
          attr("field", b_.getStringAttr(field)),
          attr("source", b_.getStringAttr(window > 0 ? "window_len"
                                                     : "attn_len")),
          attr("delta", i64(r))};
      if (!bank.empty())
        p.push_back(attr("bank", b_.getStringAttr(bank)));
      if (window > 0)
        p.push_back(attr("window", i64(window)));
      return b_.getDictionaryAttr(p);
    };
    for (int64_t h = 0; h < heads; ++h) {
      inst("pccx.gemv",
           {attr("dest_reg", sym(scores)), attr("src_addr", sym(one_)),
            attr("size_ptr_addr", i64(0)), attr("shape_ptr_addr", i64(0)),
            attr("w_scale", b_.getUnitAttr()),
            attr("findemax", b_.getUnitAttr()),
            attr("weights", b_.getDictionaryAttr(
                                {attr("dynamic", b_.getUnitAttr())})),
            attr("weight_shape", triple(capacity, 1, 0)),
            attr("fmap_shape", triple(1, 1, capWords)),
            attr("shape_patches",
                 b_.getArrayAttr({patch("a_value", "weight_shape")}))});
      auto lengthPatch = b_.getArrayAttr({patch("length", "")});
      for (auto [func, dst, flag] :
           {std::make_tuple("exp", scores, "sub_emax"),
            std::make_tuple("reduce_sum", sum_, ""),
            std::make_tuple("scale", scores, "recip_scale")}) {
        SmallVector<NamedAttribute> attrs = {
            attr("cvo_func", b_.getStringAttr(func)),
            attr("src_addr", sym(scores)), attr("dst_addr", sym(dst)),
            attr("length", i64(capacity)), attr("patches", lengthPatch)};
        if (*flag)
          attrs.push_back(attr(flag, b_.getUnitAttr()));
        inst("pccx.cvo", attrs);
      }
      memcpyToHost(Place(), scores, probs + h * capWords, capWords, 1,
                   capWords);
    }
    b_.create<pd::HostKernelOp>(
        loc(), b_.getStringAttr(kernelName(pccx::abi::HostKernel::AttentionValues)),
        b_.getArrayAttr(
            {b_.getArrayAttr({i64(probs), i64(heads * capWords)})}),
        b_.getArrayAttr({span(oPlace)}),
        b_.getDictionaryAttr(
            {attr("probs", b_.getArrayAttr({i64(probs), i64(capacity),
                                            i64(heads), i64(capWords)})),
             attr("v_cache", b_.getStringAttr(vc.cache)),
             attr("heads", i64(heads)), attr("kv_heads", i64(kvHeads)),
             attr("head_dim", i64(headDim)), attr("window", i64(window)),
             attr("row", i64(r)), attr("out", region(oPlace))}));
  }
  window_.release(probs, heads * capWords);
  LogicalResult r = matmul(oRaw, a.getOProj(), a.getResult(), "attn");
  dropScratch(oRaw);
  return r;
}

LogicalResult ProgramLowering::lowerFFN(FFNOp f) {
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
    if (failed(hostKernel(
            kernelName(pccx::abi::HostKernel::GaussianTopK), {gate}, {sparse},
            {attr("in", region(place(gate))), attr("out", region(out)),
             attr("multiplier",
                  b_.getF64FloatAttr(float(
                      pccx::import::normalQuantile(sparsity))))})))
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
  const ArrayAttr actRegion = region(place(act));
  const ArrayAttr prodRegion = region(reuseHost(act, prod));
  if (failed(hostKernel(kernelName(pccx::abi::HostKernel::Mul), {act, up}, {prod},
                        {attr("a", actRegion),
                         attr("b", region(place(up))),
                         attr("out", prodRegion)})))
    return failure();
  place(act).host = -1; // overwritten
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

LogicalResult ProgramLowering::lowerPLEInject(PLEInjectOp p) {
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
  {
    const Place &parent = place(p.getStreams());
    Place view = layoutOf(active);
    view.host = parent.host + int64_t(p.getActive()) * parent.hostStride;
    view.hostStride = parent.hostStride * a;
    places_[active] = view;
  }
  Value gateIn = active;
  if (p.getOutputScale()) {
    FailureOr<std::string> scale = hostTensor(p.getOutputScale());
    if (failed(scale))
      return failure();
    Value scaled = temp(rowShape);
    Place &out = newHostValue(scaled);
    if (failed(hostKernel(kernelName(pccx::abi::HostKernel::MulTensor), {active}, {scaled},
                          {attr("in", region(place(active))),
                           attr("tensor", b_.getStringAttr(*scale)),
                           attr("out", region(out))})))
      return failure();
    gateIn = scaled;
  }
  Value gate = temp(gateShape), gelu = temp(gateShape);
  if (failed(matmul(gateIn, p.getGate(), gate, "ple_gate")))
    return failure();
  Place &g = newL2Value(gelu, "ple_gelu");
  if (failed(cvo("gelu", place(gate), g.l2)) || failed(ensureHost(gelu)))
    return failure();
  FailureOr<std::string> proj = hostTensor(p.getProj());
  FailureOr<std::string> norm = hostTensor(p.getPostNorm());
  if (failed(proj) || failed(norm))
    return failure();
  const Place streamsPlace = place(p.getStreams());
  Place &out = p->hasAttr("in_place")
                   ? reuseHost(p.getStreams(), p.getResult())
                   : newHostValue(p.getResult());
  if (failed(hostKernel(
          kernelName(pccx::abi::HostKernel::PleInject), {p.getStreams(), gelu, p.getPerLayerInputs()},
          {p.getResult()},
          {attr("streams", region(streamsPlace)),
           attr("gate", region(place(gelu))),
           attr("pli", region(place(p.getPerLayerInputs()))),
           attr("layer", i64(int64_t(p.getLayer()))),
           attr("proj", b_.getStringAttr(*proj)),
           attr("post_norm", b_.getStringAttr(*norm)),
           attr("num_inputs", i64(a)),
           attr("eps", b_.getF64FloatAttr(p.getEps().convertToFloat())),
           attr("out", region(out))})))
    return failure();
  for (Value t : llvm::reverse(temps))
    dropScratch(t);
  return success();
}

LogicalResult ProgramLowering::lowerReturn(func::ReturnOp r) {
  if (r.getNumOperands() == 0)
    return r.emitOpError("returns no logits");
  if (logitsEmitted_)
    return success();
  Value logits = r.getOperand(0);
  if (failed(ensureHost(logits)))
    return failure();
  return hostKernel(kernelName(pccx::abi::HostKernel::EmitLogits), {logits}, {},
                    {attr("in", region(place(logits))),
                     attr("first_row", i64(0))});
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
  DictionaryAttr recipe = pccx::weightRecipe(weight);
  pccx::hw::WeightFormat format;
  if (!pccx::recipeFormat(recipe, &format))
    return emitError(loc()) << "unknown quantization scheme on "
                            << pccx::rootWeight(weight).getName();
  const int64_t rowWords = wordsFor(n);
  const int64_t row = window_.allocate(rowWords);
  if (row < 0)
    return head.emitOpError("the host window is full");
  ArrayAttr rowRegion =
      b_.getArrayAttr({i64(row), i64(n), i64(1), i64(rowWords)});
  std::vector<std::pair<int64_t, std::string>> tiles;
  for (int64_t first = 0; first < n; first += kMaxRows)
    tiles.push_back({first, newBuffer(wordsFor(std::min(kMaxRows, n - first)),
                                      "logits")});
  for (int64_t r = 0; r < in.rows; ++r) {
    for (auto &[first, buffer] : tiles) {
      int64_t count = std::min(kMaxRows, n - first);
      SmallVector<NamedAttribute> attrs = {
          attr("dest_reg", sym(buffer)), attr("src_addr", sym(in.l2)),
          attr("size_ptr_addr", i64(0)), attr("shape_ptr_addr", i64(0)),
          attr("w_scale", b_.getUnitAttr()),
          attr("weights", b_.getDictionaryAttr(
                              {attr("recipe", recipe),
                               attr("first_row", i64(first)),
                               attr("num_rows", i64(count))})),
          attr("weight_shape", triple(count, k, int64_t(format))),
          attr("fmap_shape", triple(1, wordsFor(k), wordsFor(count)))};
      if (r)
        attrs.push_back(attr("src_addr_offset", i64(r * wordsFor(k))));
      inst("pccx.gemv", attrs);
      memcpyToHost(Place(), buffer, row + first / 8, rowWords, 1,
                   wordsFor(count));
    }
    ArrayAttr span = b_.getArrayAttr({b_.getArrayAttr({i64(row), i64(rowWords)})});
    if (cap)
      b_.create<pd::HostKernelOp>(
          loc(), b_.getStringAttr(kernelName(pccx::abi::HostKernel::SoftCap)), span, span,
          b_.getDictionaryAttr(
              {attr("in", rowRegion), attr("out", rowRegion),
               attr("cap", b_.getF64FloatAttr(cap.getCap().convertToFloat()))}));
    b_.create<pd::HostKernelOp>(
        loc(), b_.getStringAttr(kernelName(pccx::abi::HostKernel::EmitLogits)), span, b_.getArrayAttr({}),
        b_.getDictionaryAttr(
            {attr("in", rowRegion), attr("first_row", i64(r))}));
  }
  window_.release(row, rowWords);
  logitsEmitted_ = true;
  handledSoftCap_ = cap;
  return success();
}

struct ConvertGemma3nToPccxPass
    : pccx::impl::ConvertGemma3nToPccxBase<ConvertGemma3nToPccxPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto state = module->getAttrOfType<StringAttr>(pccx::kKvSharingAttr);
    if (!state || state.getValue() != "resolved") {
      module.emitError("KV sharing is not resolved; run "
                       "gemma3n-resolve-kv-sharing before "
                       "convert-gemma3n-to-pccx");
      return signalPassFailure();
    }
    if (prefillRows < 1 || prefillRows > 65535) {
      module.emitError() << "prefill-rows must be in [1, 65535], got "
                         << int64_t(prefillRows);
      return signalPassFailure();
    }
    pccx::import::Gemma3nTextConfig config;
    std::string error;
    if (!pccx::moduleConfig(module, &config, &error)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    std::map<std::string, DictionaryAttr> hostTensors, gathers;
    SmallVector<func::FuncOp> functions;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr(pccx::kFunctionKindAttr))
        functions.push_back(fn);
    for (func::FuncOp fn : functions) {
      ProgramLowering lowering(module, fn, config, prefillRows, hostTensors,
                               gathers);
      if (failed(lowering.run()))
        return signalPassFailure();
    }
    Builder b(module.getContext());
    SmallVector<NamedAttribute> tensors, tables;
    for (auto &[name, recipe] : hostTensors)
      tensors.push_back(b.getNamedAttr(name, recipe));
    for (auto &[name, recipe] : gathers)
      tables.push_back(b.getNamedAttr(name, recipe));
    module->setAttr("pccx.host_tensors", b.getDictionaryAttr(tensors));
    module->setAttr("pccx.gather_tables", b.getDictionaryAttr(tables));
    for (func::FuncOp fn : functions)
      fn.erase();
  }
};

} // namespace
