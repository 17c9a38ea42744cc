//===- LoweringState.cpp - the lowering state
//=-----------------------------===//
//
// Structure (programs, segments, buffers), value placement and the
// emission helpers every family uses; the walk over a function and the
// dispatch to the per-op visits.
//
//===----------------------------------------------------------------------===//

#include "passes/Gemma3nToPccx/LoweringState.h"

#include "llvm/ADT/TypeSwitch.h"

namespace pccx::lowering {

void ProgramLowering::startSegment(const std::string &name) {
  if (segment_ && segmentName_ == name)
    return;
  b_.setInsertionPointToEnd(&program_.getBody().front());
  segment_ =
      b_.create<pd::SegmentOp>(loc(), b_.getStringAttr(name), IntegerAttr());
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

std::string ProgramLowering::allocateHost(int64_t words) {
  std::string name = "h." + std::to_string(hostBufferCount_++);
  OpBuilder::InsertionGuard guard(b_);
  if (segment_)
    b_.setInsertionPoint(segment_);
  else
    b_.setInsertionPointToEnd(&program_.getBody().front());
  // `free` is set when the buffer is released (or at the program's end).
  hostBuffers_[name] = b_.create<pd::HostBufferOp>(
      loc(), b_.getStringAttr(name), b_.getI64IntegerAttr(words),
      b_.getI64IntegerAttr(hostEvents_++), b_.getI64IntegerAttr(-1),
      IntegerAttr());
  return name;
}

void ProgramLowering::releaseHost(const std::string &buffer) {
  hostBuffers_.at(buffer).setFree(hostEvents_++);
}

void ProgramLowering::memcpy(bool toHost, const std::string &l2,
                             const std::string &host, int64_t hostOffset,
                             int64_t hostStride, int64_t rows, int64_t words) {
  UnitAttr yes = b_.getUnitAttr();
  b_.create<pd::MemcpyOp>(
      loc(), toHost ? UnitAttr() : yes, toHost ? yes : UnitAttr(),
      toHost ? i64(0) : sym(l2), toHost ? sym(l2) : i64(0), sym(host),
      b_.getI64IntegerAttr(0), UnitAttr(), ArrayAttr(),
      triple(words, rows, hostStride), IntegerAttr(), IntegerAttr(),
      hostOffset ? b_.getI64IntegerAttr(hostOffset) : IntegerAttr());
}

pd::GemvOp ProgramLowering::gemv(const std::string &dest,
                                 const std::string &src, bool findemax) {
  return b_.create<pd::GemvOp>(
      loc(), sym(dest), sym(src), b_.getI64IntegerAttr(0),
      b_.getI64IntegerAttr(0), IntegerAttr(),
      findemax ? b_.getUnitAttr() : UnitAttr(), UnitAttr(), b_.getUnitAttr(),
      ArrayAttr(), pd::WeightRecordAttr(), pd::ShapeAttr(), pd::ShapeAttr(),
      ArrayAttr(), IntegerAttr(), IntegerAttr());
}

pd::GemmOp ProgramLowering::gemm_(const std::string &dest,
                                  const std::string &src) {
  return b_.create<pd::GemmOp>(
      loc(), sym(dest), sym(src), b_.getI64IntegerAttr(0),
      b_.getI64IntegerAttr(0), IntegerAttr(), UnitAttr(), UnitAttr(),
      b_.getUnitAttr(), ArrayAttr(), pd::WeightRecordAttr(), pd::ShapeAttr(),
      pd::ShapeAttr(), ArrayAttr(), IntegerAttr(), IntegerAttr());
}

pd::CvoOp ProgramLowering::cvoOp(StringRef func, const std::string &src,
                                 const std::string &dst, int64_t length) {
  return b_.create<pd::CvoOp>(loc(), b_.getStringAttr(func), sym(src), sym(dst),
                              b_.getI64IntegerAttr(length), UnitAttr(),
                              UnitAttr(), UnitAttr(), UnitAttr(), ArrayAttr(),
                              IntegerAttr(), IntegerAttr());
}

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
  if (it != places_.end())
    return it->second;
  // A value no lowered op produced (e.g. a function argument that is not a
  // KV cache): it has a layout but no location, which ensureL2 and
  // ensureHost report as an error.
  return places_[v] = layoutOf(v);
}

Place &ProgramLowering::newHostValue(Value v) {
  Place p = layoutOf(v);
  p.host = allocateHost(p.rows * p.hostStride);
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
  if (p.host.empty())
    return emitError(loc()) << "operand has no value on the NPU or the host "
                               "(only token ids, positions and KV caches may "
                               "be function arguments)";
  p.l2 = newBuffer(p.rows * wordsFor(p.elems), "in");
  memcpy(/*toHost=*/false, p.l2, p.host, p.hostOffset, p.hostStride, p.rows,
         wordsFor(p.elems));
  return success();
}

LogicalResult ProgramLowering::ensureHost(Value v) {
  Place &p = place(v);
  if (!p.host.empty())
    return success();
  if (p.l2.empty())
    return emitError(loc()) << "operand has no value on the NPU or the host "
                               "(only token ids, positions and KV caches may "
                               "be function arguments)";
  p.hostStride = wordsFor(p.elems);
  p.hostOffset = 0;
  p.host = allocateHost(p.rows * p.hostStride);
  p.ownsHost = true;
  memcpy(/*toHost=*/true, p.l2, p.host, 0, p.hostStride, p.rows,
         wordsFor(p.elems));
  return success();
}

void ProgramLowering::releaseDead(Operation *op) {
  auto it = dyingAt_.find(op);
  if (it == dyingAt_.end())
    return;
  for (Value v : it->second) {
    auto p = places_.find(v);
    if (p != places_.end() && p->second.ownsHost && !p->second.host.empty()) {
      releaseHost(p->second.host);
      p->second.ownsHost = false;
    }
  }
}

LogicalResult
ProgramLowering::emitHostKernel(abi::HostKernel kernel, ArrayRef<Value> inputs,
                                ArrayRef<Value> outputs,
                                FailureOr<DictionaryAttr> params) {
  if (failed(params))
    return failure();
  for (Value v : inputs)
    if (failed(ensureHost(v)))
      return failure();
  for (Value v : outputs)
    if (place(v).host.empty())
      return emitError(loc()) << "internal: output has no host region";
  b_.create<pd::HostKernelOp>(loc(), b_.getStringAttr(kernelName(kernel)),
                              *params);
  return success();
}

FailureOr<std::string>
ProgramLowering::tableName(Value weight, const char *what,
                           std::map<std::string, pd::RecipeAttr> &table) {
  pd::RecipeAttr recipe = pccx::weightRecipe(weight);
  WeightOp root = pccx::rootWeight(weight);
  if (!recipe || !root)
    return emitError(loc()) << what << " is not a weight expression",
           failure();
  // One entry per distinct recipe of a tensor: the tensor's name, then
  // name#1, name#2, ... for other recipes of the same tensor.
  std::string base = root.getName().str(), name = base;
  for (int n = 1;; ++n) {
    auto it = table.find(name);
    if (it == table.end()) {
      table[name] = recipe;
      return name;
    }
    if (it->second == recipe)
      return name;
    name = base + "#" + std::to_string(n);
  }
}

FailureOr<std::string> ProgramLowering::hostTensor(Value weight) {
  return tableName(weight, "operand", hostTensors_);
}

FailureOr<std::string> ProgramLowering::gatherTable(Value weight) {
  return tableName(weight, "table", gathers_);
}

LogicalResult ProgramLowering::cvo(StringRef func, const Place &src,
                                   const std::string &dst,
                                   ArrayRef<NamedAttribute> extra) {
  // One CVO per row (rows are word aligned), and a row longer than the
  // target's longest vector in word-aligned pieces: an element-wise
  // function computes each piece alone.
  const int64_t maxLength =
      pccx::machine::targetProfile(pd::targetOf(module_)).cvoMaxLength;
  const int64_t piece = std::max<int64_t>(8, maxLength / 8 * 8);
  for (int64_t r = 0; r < src.rows; ++r)
    for (int64_t first = 0; first < src.elems; first += piece) {
      pd::CvoOp op =
          cvoOp(func, src.l2, dst, std::min(piece, src.elems - first));
      // Symbolic address plus a word offset, resolved by L2 allocation.
      if (int64_t offset = r * wordsFor(src.elems) + first / 8) {
        op.setSrcAddrOffsetAttr(b_.getI64IntegerAttr(offset));
        op.setDstAddrOffsetAttr(b_.getI64IntegerAttr(offset));
      }
      for (NamedAttribute e : extra)
        op->setAttr(e.getName(), e.getValue());
    }
  return success();
}

LogicalResult ProgramLowering::run() {
  // Last uses (views extend their parent's lifetime).
  Block &body = fn_.getBody().front();
  llvm::DenseMap<Value, Value> viewParent;
  // Values in order of first use, so that releases (and so the host
  // buffers' allocation events) come in a deterministic order.
  SmallVector<Value> order;
  for (Operation &op : body) {
    if (auto s = dyn_cast<StreamOp>(op))
      viewParent[s.getResult()] = s.getStreams();
    for (Value operand : op.getOperands()) {
      Value v = operand;
      if (lastUse_.insert({v, &op}).second)
        order.push_back(v);
      lastUse_[v] = &op;
      while (viewParent.count(v)) {
        v = viewParent[v];
        if (lastUse_.insert({v, &op}).second)
          order.push_back(v);
        lastUse_[v] = &op;
      }
    }
  }
  for (Value v : order)
    dyingAt_[lastUse_[v]].push_back(v);

  b_.setInsertionPointToEnd(module_.getBody());
  program_ = b_.create<pd::ProgramOp>(
      fn_.getLoc(), b_.getStringAttr(programName()),
      b_.getStringAttr(programKind()));
  program_.getBody().emplaceBlock();
  program_->setAttr("rows", b_.getI64IntegerAttr(rows_));
  if (batch_)
    program_->setAttr("independent_rows", b_.getUnitAttr());
  if (withoutLogits_)
    program_->setAttr("no_logits", b_.getUnitAttr());

  currentLoc_ = fn_.getLoc();
  startSegment("prologue");
  // Constants every step needs: 1.0 (the attention-score GEMV input) and a
  // REDUCE_SUM target.
  {
    one_ = newBuffer(1, "one");
    sum_ = newBuffer(1, "sum");
    std::string at = allocateHost(1);
    hc::Fill one;
    one.Out = region(at, 0, 1, 1, 1);
    one.Value = 1.0;
    if (failed(hostCall(one)))
      return failure();
    memcpy(/*toHost=*/false, one_, at, 0, 1, 1, 1);
    releaseHost(at);
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
    std::string name =
        "kv." + std::to_string(layer.getInt()) + "." + kind.getValue().str();
    // Sliding layers keep only what a step can see: the window plus the
    // rows a prefill step writes before its first row reads (a ring).
    int64_t slots = shape[0];
    const bool sliding = config_.layer_types[size_t(layer.getInt())] ==
                         pccx::import::LayerType::Sliding;
    if (sliding)
      slots = std::min(slots, config_.sliding_window + prefillRows_ - 1);
    CacheInfo info;
    info.slots = slots;
    info.width = shape[1];
    if (npuAttention_) {
      // Keys and values as weight records in device memory, one per kv
      // head (hw/numerics/KvRecords.h).
      info.layout = kind.getValue() == "k" ? "keys" : "values";
      info.heads = config_.num_key_value_heads;
      // A window at least as long as the cache sees every position it
      // holds: full attention, so it is stored as the cache's length (the
      // runtime refuses a window longer than the slots).
      info.window = sliding ? std::min(config_.sliding_window, slots) : 0;
    }
    caches_[name] = info;
    Place p;
    p.cache = name;
    places_[arg] = p;
  }

  int64_t currentLayer = -1;
  for (Operation &op : body) {
    currentLoc_ = op.getLoc();
    if (llvm::isa<WeightOp, ScaleWeightOp, QuantizeOp>(op))
      continue;
    // A segment per decoder layer (the importer's layer attribute);
    // model-level ops after the layers form the epilogue.
    int64_t layer = pccx::layerOf(&op);
    if (layer >= 0 && layer != currentLayer) {
      startSegment("layer." + std::to_string(layer));
      currentLayer = layer;
    } else if (layer < 0 && currentLayer >= 0) {
      startSegment("epilogue");
    }
    if (failed(lower(&op)))
      return failure();
    releaseDead(&op);
  }

  // What the runtime needs besides the words.
  SmallVector<NamedAttribute> caches;
  for (auto &[name, c] : caches_) {
    SmallVector<Attribute> dims = {i64(c.slots), i64(c.width)};
    if (!c.layout.empty())
      dims.append({b_.getStringAttr(c.layout), i64(c.heads), i64(c.window)});
    caches.push_back(attr(name, b_.getArrayAttr(dims)));
  }
  program_->setAttr("caches", b_.getDictionaryAttr(caches));
  // Buffers live to the end of the step are released last, in creation
  // order.
  std::vector<pd::HostBufferOp> open;
  for (auto buffer : program_.getBody().getOps<pd::HostBufferOp>())
    if (buffer.getFreeAttr().getInt() < 0)
      open.push_back(buffer);
  for (pd::HostBufferOp buffer : open)
    buffer.setFree(hostEvents_++);
  return success();
}

LogicalResult ProgramLowering::lower(Operation *op) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case<EmbedOp, PerLayerInputsOp, PLEInjectOp, AltUpInitOp, AltUpPredictOp,
            AltUpCorrectOp, AltUpCollapseOp, StreamOp, RMSNormOp, CombineOp,
            SoftCapOp, LaurelOp, LaurelResidualOp, KVProjectOp, KVCacheWriteOp,
            AttentionOp, FFNOp, LMHeadOp, func::ReturnOp>(
          [&](auto typed) { return visit(typed); })
      .Default([&](Operation *other) {
        return other->emitOpError("has no lowering to the pccx dialect");
      });
}

} // namespace pccx::lowering
