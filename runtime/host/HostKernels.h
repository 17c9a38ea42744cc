//===- HostKernels.h - work the v002 ISA cannot express ---------*- C++ -*-===//
//
// The compiler partitions a model between the NPU and the board's CPU
// (docs/lowering.md): element-wise products, norms, RoPE, tanh, attention
// dot products, AltUp mixing. Each CPU step is a host kernel call recorded
// in the bundle: a kernel name and a JSON object of parameters. This header
// is the contract between the compiler, which emits calls, and the runtime,
// which executes them; docs/lowering.md lists every kernel.
//
// Operands:
//  - a region: [offset, elems, rows, stride] — `rows` vectors of `elems`
//    floats in the host window, row r starting at lane 0 of word
//    offset + r * stride (8 lanes per word, the L2 layout of
//    docs/isa-semantics.md section 3);
//  - a host tensor: its name in the bundle's host tensor table (float32,
//    [rows, cols], or [cols] for a vector);
//  - a KV cache or gather table: its name in the manifest.
// Row r of a step is at position `position + r` with token `tokens[r]`.
//
// Plain C++17, no MLIR. Every operand is validated before use; a bad call
// is an error naming the kernel and the parameter, never undefined
// behaviour.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_HOST_HOSTKERNELS_H
#define PCCX_RUNTIME_HOST_HOSTKERNELS_H

#include "hw/abi/CompileOptions.h"
#include "hw/abi/HostAbi.h"
#include "hw/numerics/Quantize.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace pccx::host {

/// A float32 tensor kept on the host (norm gains, AltUp matrices, ...).
struct HostTensor {
  int64_t rows = 1, cols = 0;
  const float *data = nullptr;
};

/// An embedding table read one row at a time: INT4 or INT8 codes with a
/// float32 scale per row (hw/numerics/Quantize.h packing), or float32 rows.
struct GatherTable {
  int64_t rows = 0, cols = 0;
  bool quantized = false;
  hw::WeightFormat format = hw::WeightFormat::Int4;
  /// quantized: rows * packedRowBytes(format, cols) bytes
  const uint8_t *codes = nullptr;
  /// quantized: one per row, or one per `group` columns of each row
  const float *scales = nullptr;
  int64_t group = 0;
  const float *values = nullptr; ///< float32 rows otherwise
  /// Row `row` as floats.
  void readRow(int64_t row, float *out) const;
};

/// How a KV cache stores its values: a host cache of one KvDtype
/// (hw/abi/CompileOptions.h), or NPU weight records.
enum class KvStorage {
  F32,
  F16,  ///< IEEE binary16, rounded to nearest even
  Int8, ///< one fp32 scale per row (hw::quantizeRowInt8)
  /// Weight records in device memory, one per kv head, that the NPU's
  /// attention streams (hw/numerics/KvRecords.h): keys by position, values
  /// transposed.
  KeyRecords,
  ValueRecords,
};
/// The storage of a host cache of `dtype`.
KvStorage hostStorage(KvDtype dtype);

/// A KV cache: `slots` rows of `width` values, used as a ring (position p
/// in slot p mod slots).
class KvCache {
public:
  KvCache() = default;
  KvCache(int64_t slots, int64_t width, KvStorage dtype);
  KvCache(int64_t slots, int64_t width, bool fp16)
      : KvCache(slots, width, fp16 ? KvStorage::F16 : KvStorage::F32) {}
  /// A cache kept as KeyRecords or ValueRecords of `heads` kv heads in
  /// `memory` (heads * recordBytes() bytes, outliving the cache); cleared.
  KvCache(int64_t slots, int64_t width, int64_t heads, KvStorage layout,
          uint8_t *memory);
  bool records() const {
    return dtype_ == KvStorage::KeyRecords || dtype_ == KvStorage::ValueRecords;
  }
  int64_t heads() const { return heads_; }
  /// Bytes of one kv head's record (records only).
  int64_t recordBytes() const;
  const uint8_t *record(int64_t head) const {
    return memory_ + head * recordBytes();
  }
  /// Forgets every position (records: back to their empty state).
  void clear();
  /// Records also keep the exact values they quantize (for the golden
  /// model: Device::pushExactWeights), laid out like the record's rows.
  void keepExact();
  /// The exact N x K values of a kv head's record, or null.
  const float *exactRecord(int64_t head) const {
    return exact_.empty() ? nullptr
                          : exact_.data() + head * slots_ * (width_ / heads_);
  }
  int64_t slots() const { return slots_; }
  int64_t width() const { return width_; }
  KvStorage dtype() const { return dtype_; }
  bool fp16() const { return dtype_ == KvStorage::F16; }
  void write(int64_t position, const float *row);
  void read(int64_t position, float *row) const;
  /// One element: row `position`, column `column`.
  float at(int64_t position, int64_t column) const;

private:
  int64_t slots_ = 0, width_ = 0, heads_ = 1;
  KvStorage dtype_ = KvStorage::F32;
  uint8_t *memory_ = nullptr; ///< records: device memory
  std::vector<float> exact_;  ///< records with keepExact()
  std::vector<uint16_t> half_;
  std::vector<float> full_; ///< f32 values, or int8 row scales
  std::vector<int8_t> codes_;
};

/// One argument of a bound call (which members are set depends on the
/// parameter's kind in hw/abi/HostKernels.def).
struct BoundArg {
  bool present = false;
  int64_t integer = 0;
  double number = 0;
  abi::HostRegion region;
  std::vector<abi::HostRegion> regions;
  std::vector<std::string> names;          ///< tensor/cache/gather names
  std::vector<const HostTensor *> tensors; ///< Tensor, TensorList
  const GatherTable *gather = nullptr;
  int cache = -1; ///< index into HostContext::caches
};

/// A kernel call with its parameters decoded and its names resolved, made
/// once when a bundle is opened. `inputs` and `outputs` are its In and Out
/// regions.
struct BoundCall {
  abi::HostKernel kernel = abi::HostKernel::Fill;
  std::vector<BoundArg> args; ///< by parameter slot
  std::vector<abi::HostRegion> inputs, outputs;

  /// The argument of `param` when it is a parameter of this call's kernel
  /// that the call gives; otherwise null.
  const BoundArg *find(abi::HostParam param) const {
    const abi::ParamInfo &p = abi::paramInfo(param);
    return p.kernel == kernel && p.slot < args.size() && args[p.slot].present
               ? &args[p.slot]
               : nullptr;
  }
};

/// What names in a call resolve to.
struct BindTables {
  const std::map<std::string, HostTensor> *tensors = nullptr;
  const std::map<std::string, GatherTable> *gathers = nullptr;
  const std::map<std::string, int> *caches = nullptr; ///< name -> index
};

/// Decodes a call from its JSON parameters: the kernel must exist, every
/// required parameter be present with its kind, no unknown parameter, and
/// every name resolve. False with a message naming the kernel and the
/// parameter otherwise.
bool bindCall(const std::string &kernel, const nlohmann::json &params,
              const BindTables &tables, BoundCall *out, std::string *error);

/// What a kernel may touch while it runs.
struct HostContext {
  float *window = nullptr; ///< lanes of the host window
  int64_t windowWords = 0;
  /// Every row's caches and row r at `position + r`, unless the step names
  /// each row's below (a batched step, rows from several sequences).
  std::vector<KvCache> *caches = nullptr;
  int64_t position = 0;
  std::vector<int32_t> tokens; ///< one per row of the step
  /// Per row, when given: its position, the last position its sequence
  /// reaches in this step, and its sequence's caches.
  std::vector<int64_t> rowPositions, rowLastPositions;
  std::vector<std::vector<KvCache> *> rowCaches;

  int64_t positionOf(int64_t row) const {
    return rowPositions.empty() ? position + row : rowPositions[size_t(row)];
  }
  int64_t lastPositionOf(int64_t row) const {
    return rowLastPositions.empty() ? position + int64_t(tokens.size()) - 1
                                    : rowLastPositions[size_t(row)];
  }
  std::vector<KvCache> *cachesOf(int64_t row) const {
    return rowCaches.empty() ? caches : rowCaches[size_t(row)];
  }
  /// Weight records produced for the NPU (attention scores), consumed in
  /// order by GEMVs whose record is "dynamic".
  std::deque<std::vector<uint8_t>> *dynamicRecords = nullptr;
  /// The step's logits, one row of `vocab` floats per token, filled by
  /// "emit_logits".
  std::vector<float> *logits = nullptr;
  int64_t vocab = 0;
  int64_t emittedRows = 0;
  /// softcap of every BF16 value for one cap, built on first use: logits
  /// the NPU wrote back are BF16 values, so a lookup replaces a tanh with
  /// the same float result.
  struct SoftCapTable {
    float cap = 0;
    std::vector<float> values; ///< indexed by the BF16 bit pattern
  } softCapTable;
  /// RoPE angles by (position, theta, head_dim), shared by every head and
  /// layer of a step (the kernels build them on first use).
  std::map<std::tuple<int64_t, double, int64_t>, std::vector<float>>
      ropeAngles;
  /// Splits the rows of a kernel that splitsRows() names over the session's
  /// host threads: body(begin, end) for consecutive ranges that cover
  /// [0, rows). Null: all on the calling thread. Such a kernel computes
  /// each row alone, touching nothing shared, so its results do not depend
  /// on the split.
  std::function<void(int64_t rows,
                     const std::function<void(int64_t, int64_t)> &body)>
      splitRows;
};

/// Whether `kernel` splits its rows over HostContext::splitRows (the
/// row-wise kernels of a step's residual stream; pccx-prof divides their
/// time by the threads the rows keep busy).
bool splitsRows(abi::HostKernel kernel);

/// A KV cache parameter as the rows of a step see it: in a batched step each
/// row reads and writes the cache of its own sequence.
class StepCache {
public:
  StepCache() = default;
  StepCache(const HostContext *ctx, int index) : ctx_(ctx), index_(index) {}
  KvCache &row(int64_t r) const {
    return (*ctx_->cachesOf(r))[size_t(index_)];
  }
  int64_t slots() const { return row(0).slots(); }

private:
  const HostContext *ctx_ = nullptr;
  int index_ = -1;
};

/// Runs one bound call. False (with a message naming the kernel and the
/// offending parameter) on any invalid operand.
bool runKernel(const BoundCall &call, HostContext &context, std::string *error);

/// Binds and runs in one go (tests and tools that run a single call).
bool runKernel(const std::string &name, const nlohmann::json &params,
               const BindTables &tables, HostContext &context,
               std::string *error);

} // namespace pccx::host

#endif
