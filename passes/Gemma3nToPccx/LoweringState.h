//===- LoweringState.h - gemma3n -> pccx lowering state ---------*- C++ -*-===//
//
// The state shared by the per-family lowerings of ConvertGemma3nToPccx
// (docs/lowering.md). Every activation value gets a row layout: the product
// of all but its last dimension rows (the token dimension counting the
// step's rows) of last-dimension elements, each row starting on a 128-bit
// word. A value may live in L2 (a symbolic pccx.buffer, rows contiguous)
// and/or in the host window (a region, rows at a word stride); MEMCPYs are
// inserted when an NPU instruction needs a host value or a host kernel an
// L2 value.
//
// To lower a new gemma3n op: declare `visit(NewOp)` below in its family,
// define it in that family's file, and add NewOp to the dispatch in
// LoweringState.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_PASSES_GEMMA3NTOPCCX_LOWERINGSTATE_H
#define PCCX_PASSES_GEMMA3NTOPCCX_LOWERINGSTATE_H

#include "passes/Passes.h"

#include "dialects/Gemma3n/model/ModelInfo.h"
#include "dialects/Gemma3n/model/WeightEvaluator.h"
#include "dialects/Pccx/HostCall.h"
#include "hw/abi/HostAbi.h"
#include "hw/machine/MachineModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <string>
#include <unordered_map>

namespace pccx::lowering {

using namespace mlir;
using namespace pccx::gemma3n;
namespace pd = pccx::dialect;
namespace hc = pccx::dialect::hostcall;

/// Kernel names come from the host-kernel ABI (hw/abi/HostKernels.def).
inline StringRef kernelName(abi::HostKernel kernel) {
  return abi::kernelInfo(kernel).name;
}

/// GEMV/GEMM output features per instruction: the 16-bit shape limit,
/// rounded down to whole words.
constexpr int64_t kMaxRows = 65528;
/// Words of L2 (and of the host window) the logits of one LM-head tile take
/// for all of a step's rows: a third of the v002 L2, so the step's
/// activations keep the rest.
constexpr int64_t kLogitsTileWords = 36864;

inline int64_t wordsFor(int64_t elems) { return (elems + 7) / 8; }

/// Where a value lives.
struct Place {
  int64_t rows = 0, elems = 0;
  std::string l2;         ///< buffer symbol, or empty
  std::string host;       ///< host buffer symbol, or empty
  int64_t hostOffset = 0; ///< words from the host buffer's start (views)
  int64_t hostStride = 0;
  bool ownsHost = false; ///< false for views of another value's region
  std::string cache;     ///< KV cache name (cache values only)
};

/// The lowering of one gemma3n function into one pccx.program: where each
/// value lives, the segment being filled, the host window in use, and the
/// tables shared by the module's programs.
class ProgramLowering {
public:
  ProgramLowering(ModuleOp module, func::FuncOp fn,
                  const pccx::import::Gemma3nTextConfig &config,
                  int64_t prefillRows, int64_t maxStepRows, bool npuAttention,
                  std::map<std::string, pd::RecipeAttr> &hostTensors,
                  std::map<std::string, pd::RecipeAttr> &gathers,
                  int64_t batchRows = 0, bool withoutLogits = false)
      : module_(module), fn_(fn), config_(config), b_(module.getContext()),
        npuAttention_(npuAttention), hostTensors_(hostTensors),
        gathers_(gathers) {
    auto kind = fn->getAttrOfType<StringAttr>(pccx::kFunctionKindAttr);
    prefill_ = kind && kind.getValue() == "prefill";
    batch_ = prefill_ && batchRows > 0;
    withoutLogits_ = prefill_ && !batch_ && withoutLogits;
    rows_ = batch_ ? batchRows : prefill_ ? prefillRows : 1;
    prefillRows_ = prefillRows;
    maxStepRows_ = std::max<int64_t>(1, maxStepRows);
  }
  /// The program's name: "decode", "prefill", "prefill_no_head" (the
  /// prefill function without its LM head, for the steps of a prompt whose
  /// logits nobody reads) or "decode_batch_<rows>" (the prefill function
  /// lowered with independent rows); its kind without the row count.
  std::string programName() const {
    if (withoutLogits_)
      return "prefill_no_head";
    return batch_ ? "decode_batch_" + std::to_string(rows_) : programKind();
  }
  std::string programKind() const {
    return batch_ ? "decode_batch" : prefill_ ? "prefill" : "decode";
  }

  LogicalResult run();

private:
  // ---- structure ---------------------------------------------------------
  Location loc() const { return currentLoc_; }
  void startSegment(const std::string &name);
  std::string newBuffer(int64_t words, const std::string &hint);
  /// Host-window space of `words` words from now until releaseHost: a
  /// pccx.host.buffer whose lifetime is stated in allocation events
  /// (placed by pccx-place-host-buffers).
  std::string allocateHost(int64_t words);
  void releaseHost(const std::string &buffer);
  NamedAttribute attr(StringRef name, Attribute value) {
    return b_.getNamedAttr(name, value);
  }
  Attribute i64(int64_t v) { return b_.getI64IntegerAttr(v); }
  Attribute sym(const std::string &s) {
    return FlatSymbolRefAttr::get(b_.getContext(), s);
  }
  pd::ShapeAttr triple(int64_t a, int64_t b, int64_t c) {
    return pd::ShapeAttr::get(b_.getContext(), a, b, c);
  }
  /// Rows [first, first + count) of quantized `recipe` in the weight
  /// stream; with `numCols`, only columns [firstCol, firstCol + numCols).
  pd::WeightRecordAttr record(pd::RecipeAttr recipe, int64_t first,
                              int64_t count, int64_t firstCol = 0,
                              int64_t numCols = 0) {
    return pd::WeightRecordAttr::get(b_.getContext(), recipe, first, count,
                                     false, StringAttr(), 0, false, -1,
                                     firstCol, numCols);
  }
  /// The key or value record of kv head `head` of `cache`, or (`mask`) the
  /// attention mask of step row `head` over its slots. `row` (>= 0, batch
  /// programs): the cache of that step row's sequence.
  pd::WeightRecordAttr cacheRecord(const std::string &cache, int64_t part,
                                   bool mask, int64_t row = -1) {
    return pd::WeightRecordAttr::get(b_.getContext(), pd::RecipeAttr(), 0, 0,
                                     false, b_.getStringAttr(cache), part,
                                     mask, row, 0, 0);
  }

  // ---- values ------------------------------------------------------------
  Place layoutOf(Value v);
  Place &place(Value v);
  LogicalResult ensureL2(Value v);
  LogicalResult ensureHost(Value v);
  Place &newHostValue(Value v);
  Place &newL2Value(Value v, const std::string &hint);
  pd::HostRegionAttr region(const Place &p) {
    return region(p.host, p.hostOffset, p.elems, p.rows, p.hostStride);
  }
  pd::HostRegionAttr region(const std::string &buffer, int64_t offset,
                            int64_t elems, int64_t rows, int64_t stride) {
    return pd::HostRegionAttr::get(
        b_.getContext(), FlatSymbolRefAttr::get(b_.getContext(), buffer),
        offset, elems, rows, stride);
  }
  void releaseDead(Operation *op);
  /// For an op marked `in_place`: the result takes over the input's host
  /// region (the input has no later reader).
  Place &reuseHost(Value input, Value result) {
    Place &in = place(input);
    Place out = layoutOf(result);
    out.host = in.host;
    out.hostOffset = in.hostOffset;
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
      releaseHost(it->second.host);
      it->second.ownsHost = false;
      it->second.host.clear();
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
  /// A host kernel call after moving `inputs` to the host window; `call`
  /// is the kernel's struct of dialects/Pccx/HostCall.h.
  template <typename Call>
  LogicalResult hostKernel(ArrayRef<Value> inputs, ArrayRef<Value> outputs,
                           const Call &call) {
    return emitHostKernel(Call::kernel, inputs, outputs,
                          hc::buildParams(loc(), call));
  }
  /// A host kernel call whose regions are in the host window already.
  template <typename Call> LogicalResult hostCall(const Call &call) {
    return hostKernel({}, {}, call);
  }
  LogicalResult emitHostKernel(abi::HostKernel kernel, ArrayRef<Value> inputs,
                               ArrayRef<Value> outputs,
                               FailureOr<DictionaryAttr> params);
  /// The name under which `table` holds the recipe of `weight` (added if
  /// new); `what` names the operand in the error.
  FailureOr<std::string> tableName(Value weight, const char *what,
                                   std::map<std::string, pd::RecipeAttr> &table);
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
  /// Rows [first, first + count) of quantized `recipe` (K = k columns)
  /// times the rows of `in`, into L2 buffer `dest` whose rows are
  /// `destStride` words apart: one GEMV/GEMM, or with group scales one per
  /// group of columns, accumulating (docs/lowering.md).
  void projectRows(const std::string &dest, int64_t destStride,
                   const Place &in, int64_t k, pd::RecipeAttr recipe,
                   pccx::hw::WeightFormat format, int64_t first,
                   int64_t count);
  /// GEMV/GEMM of `input` by the quantized weight; result in L2 (or, for
  /// weights too tall for one instruction, straight in the host window).
  LogicalResult matmul(Value input, Value weight, Value result,
                       const std::string &hint);
  // ---- typed instruction builders ---------------------------------------
  /// MEMCPY of `rows` rows of `words` words between L2 buffer `l2` and host
  /// buffer `host` (rows `hostStride` words apart from `hostOffset`).
  void memcpy(bool toHost, const std::string &l2, const std::string &host,
              int64_t hostOffset, int64_t hostStride, int64_t rows,
              int64_t words);
  pd::GemvOp gemv(const std::string &dest, const std::string &src,
                  bool findemax);
  pd::GemmOp gemm_(const std::string &dest, const std::string &src);
  pd::CvoOp cvoOp(StringRef func, const std::string &src,
                  const std::string &dst, int64_t length);
  LogicalResult cvo(StringRef func, const Place &src, const std::string &dst,
                    ArrayRef<NamedAttribute> extra = {});
  /// The softmax of `length` scores at word `offset` of `scores`, in place,
  /// after a findemax: EXP (sub_emax), REDUCE_SUM into the scalar, SCALE
  /// (recip_scale); `lengthPatches`, if any, patch each length.
  void softmaxOnSfu(const std::string &scores, int64_t offset, int64_t length,
                    ArrayAttr lengthPatches);

  // ---- ops: one visit per gemma3n op, in the file of its family -------
  /// Dispatches `op` to its visit method.
  LogicalResult lower(Operation *op);
  // PLE.cpp: the embedding, per-layer inputs and their injection.
  LogicalResult visit(EmbedOp op);
  LogicalResult visit(PerLayerInputsOp op);
  LogicalResult visit(PLEInjectOp op);
  // AltUp.cpp: the stream stack.
  LogicalResult visit(AltUpInitOp op);
  LogicalResult visit(AltUpPredictOp op);
  LogicalResult visit(AltUpCorrectOp op);
  LogicalResult visit(AltUpCollapseOp op);
  LogicalResult visit(StreamOp op);
  /// Each of `inputs` times its weight on the NPU, the products brought to
  /// the host (scratch values in `out`, their regions in `regions`).
  LogicalResult altupProjections(Operation *at, ArrayRef<Value> inputs,
                                 ValueRange weights,
                                 SmallVectorImpl<Value> &out,
                                 SmallVectorImpl<pd::HostRegionAttr> &regions);
  /// Places `view` as stream `index` of the host-window stack `stack` (its
  /// rows every A-th row of the stack's).
  void placeStreamView(Value stack, int64_t index, Value view);
  /// A scratch value of `shape` placed by placeStreamView.
  Value streamView(Operation *at, Value stack, int64_t index,
                   ArrayRef<int64_t> shape);
  template <typename AltUpOp, typename Call>
  void altupStackParams(AltUpOp a, Value stack, Call &call);
  // Norms.cpp: norms, sums and the soft-cap.
  LogicalResult visit(RMSNormOp op);
  LogicalResult visit(CombineOp op);
  LogicalResult visit(SoftCapOp op);
  // Projections.cpp: GEMV/GEMM tiling, LAuReL and the K/V projections.
  LogicalResult visit(LaurelOp op);
  LogicalResult visit(LaurelResidualOp op);
  LogicalResult visit(KVProjectOp op);
  // Attention.cpp: the cache write and attention over the cache.
  LogicalResult visit(KVCacheWriteOp op);
  LogicalResult visit(AttentionOp op);
  /// Attention as GEMV/GEMM over KV records, and on the host.
  LogicalResult npuAttention(AttentionOp op);
  LogicalResult hostAttention(AttentionOp op);
  // FFN.cpp: gate, up, sparsity, GELU, product, down.
  LogicalResult visit(FFNOp op);
  // Logits.cpp: the LM head, soft-cap and the logits hand-off.
  LogicalResult visit(LMHeadOp op);
  LogicalResult visit(func::ReturnOp op);
  /// The LM head (and soft-cap) streamed to the runtime by "emit_logits":
  /// a vocabulary of 262k logits for several rows fits neither L2 nor the
  /// window, so it goes in tiles.
  LogicalResult lowerLogits(LMHeadOp head, SoftCapOp cap);
  /// Vocabulary columns per LM-head tile: every row's slice of a tile
  /// fits kLogitsTileWords for the module's largest step, at most kMaxRows.
  int64_t logitsTileCols(int64_t vocab) const {
    return 8 * std::max<int64_t>(1, std::min(wordsFor(std::min(kMaxRows, vocab)),
                                             kLogitsTileWords / maxStepRows_));
  }
  /// One row: a GEMV per tile into a one-row window region, soft-capped and
  /// emitted whole.
  LogicalResult lowerLogitsRow(const Place &in, int64_t n, int64_t k,
                               pd::RecipeAttr recipe,
                               pccx::hw::WeightFormat format, SoftCapOp cap);
  /// Several rows: tile by tile of vocabulary columns, one GEMM per tile for
  /// every row, so the LM head is streamed once per step.
  LogicalResult lowerLogitsByTile(const Place &in, int64_t n, int64_t k,
                                  pd::RecipeAttr recipe,
                                  pccx::hw::WeightFormat format, SoftCapOp cap);
  /// The soft-cap (when `cap`) of `logits` in place, then "emit_logits"
  /// of its rows from step row `firstRow` (and, when >= 0, from vocabulary
  /// column `firstColumn`).
  LogicalResult capAndEmit(pd::HostRegionAttr logits, SoftCapOp cap,
                           int64_t firstRow, int64_t firstColumn);

  // ---- parameter helpers ---------------------------------------------------
  /// Sets Tensor parameter `param` to the host-tensor name of weight `w`.
  template <abi::HostParam P>
  LogicalResult tensorParam(Value w, hc::Param<P> &param) {
    FailureOr<std::string> name = hostTensor(w);
    if (failed(name))
      return failure();
    param = *name;
    return success();
  }
  bool logitsEmitted_ = false;
  /// The program leaves out the LM head, its soft-cap and emit_logits.
  bool withoutLogits_ = false;
  Operation *handledSoftCap_ = nullptr;

  ModuleOp module_;
  func::FuncOp fn_;
  const pccx::import::Gemma3nTextConfig &config_;
  OpBuilder b_;
  /// prefill_: the function's token dimension is dynamic (rows_ rows).
  /// batch_: each row is its own sequence, with its own position and caches.
  bool prefill_ = false, batch_ = false;
  bool npuAttention_ = true;
  int64_t rows_ = 1, prefillRows_ = 1;
  /// The most rows any program of the module steps: the LM head's tiles
  /// are sized for it in every program, so all programs stream the same
  /// records (the weights section holds the head once).
  int64_t maxStepRows_ = 1;
  Location currentLoc_ = UnknownLoc::get(module_.getContext());
  pd::ProgramOp program_;
  pd::SegmentOp segment_;
  std::string segmentName_;
  int bufferCount_ = 0;
  int64_t hostEvents_ = 0; ///< allocation events so far
  int hostBufferCount_ = 0;
  std::map<std::string, pd::HostBufferOp> hostBuffers_;
  /// std::unordered_map: references to places stay valid as values are
  /// added.
  struct ValueHash {
    size_t operator()(Value v) const { return hash_value(v); }
  };
  std::unordered_map<Value, Place, ValueHash> places_;
  llvm::DenseMap<Value, Operation *> lastUse_;
  llvm::DenseMap<Operation *, SmallVector<Value>> dyingAt_;
  std::map<std::string, pd::RecipeAttr> &hostTensors_;
  std::map<std::string, pd::RecipeAttr> &gathers_;
  std::string one_, sum_; ///< L2: the constant 1.0, a REDUCE_SUM target
  /// Every KV cache of the program: slots, width, and for NPU attention its
  /// record layout ("keys"/"values"), kv heads and attention window.
  struct CacheInfo {
    int64_t slots = 0, width = 0;
    std::string layout; ///< empty: a host cache
    int64_t heads = 0, window = 0;
  };
  std::map<std::string, CacheInfo> caches_;
};

} // namespace pccx::lowering

#endif
