//===- Simulator.h - functional simulator of the pccx v002 ISA --*- C++ -*-===//
//
// Executes v002 instruction words against a model of the NPU's architectural
// state: the L2 scratchpad, the two constant-cache banks, the weight stream,
// the e_max register, the SFU scalar register and a host memory reached
// through the MEMCPY host window. The meaning of every opcode, field and flag
// is docs/isa-semantics.md; this library is its executable form.
//
// Nothing here throws across the API: failures return false and a message.
// A trapping instruction leaves the state as it was before it.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SIM_SIMULATOR_H
#define PCCX_RUNTIME_SIM_SIMULATOR_H

#include "hw/isa/Isa.h"
#include "hw/machine/MachineModel.h"
#include "hw/machine/Target.h"
#include "hw/numerics/HalfFloat.h"
#include "runtime/sim/MatmulInt8Kernels.h"
#include "runtime/sim/MatmulKernels.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace pccx::sim {

class WorkerPool;

/// How values are represented and rounded.
///  - Reference: fp32 everywhere, nothing is rounded to a narrower format.
///  - Hardware: every value stored into L2 is rounded to bf16 (nearest even);
///    arithmetic runs in fp32 (GEMV products exact, fp32 sums).
///  - Integer: Hardware, except that a GEMV/GEMM over a record of the
///    bundle's static weights quantizes its activations to INT8 per block
///    of 32 and sums exact integer products (MatmulInt8Kernels.h): the CPU
///    path's fast mode, not the NPU's datapath.
/// In both, a NaN is stored as the canonical 0x7FC00000 and the SFU's
/// exp, gelu, sin and cos are hw/numerics/Elementary.h's, not libm's.
enum class Numerics { Reference, Hardware, Integer };

/// "reference", "hardware", "integer"; parseNumerics is its inverse.
const char *numericsName(Numerics numerics);
bool parseNumerics(const std::string &name, Numerics *numerics);

class Simulator {
public:
  /// `target` chooses what the fields of a word mean (hw/machine/
  /// Targets.def); the documented v002 semantics by default.
  explicit Simulator(Numerics numerics,
                     size_t hostWords = machine::host_window_words,
                     machine::Target target = machine::kDefaultTarget);
  ~Simulator();
  Simulator(Simulator &&) noexcept;
  Simulator &operator=(Simulator &&) noexcept;

  Numerics numerics() const { return numerics_; }
  machine::Target target() const { return profile_->id; }

  /// Number of threads a GEMV/GEMM may split its output features across
  /// (0, the default, = one per hardware thread). Results do not depend on
  /// it: every output is computed by the same sequence of fp32 operations.
  void setThreads(unsigned threads);
  unsigned threads() const { return threads_; }

  /// The GEMV/GEMM kernel (default: the fastest this CPU runs). Results do
  /// not depend on it; false, and no change, if the CPU lacks `isa`.
  bool setMatmulIsa(MatmulIsa isa);
  MatmulIsa matmulIsa() const { return matmulIsa_; }
  /// The kernel of Integer numerics; the same contract.
  bool setInt8Isa(Int8Isa isa);
  Int8Isa int8Isa() const { return int8Isa_; }

  //===--------------------------------------------------------------------===//
  // L2 access for hosts and tests. `count` lanes starting at lane 0 of `word`
  // (element e at word + e/8, lane e%8). Out-of-range requests return false.
  //===--------------------------------------------------------------------===//

  /// Stores values; in Hardware mode each is rounded to bf16.
  bool writeL2(uint32_t word, const float *values, size_t count,
               std::string *error);
  bool readL2(uint32_t word, float *values, size_t count,
              std::string *error) const;

  //===--------------------------------------------------------------------===//
  // Host memory: hostWords() words of 8 float lanes. MEMCPY reaches the
  // 131072-word window that starts at the window base.
  //===--------------------------------------------------------------------===//

  float *hostLanes() { return host_.data(); }
  const float *hostLanes() const { return host_.data(); }
  size_t hostWords() const { return hostWords_; }
  /// Sets the window base (a word index into host memory, < hostWords()).
  bool setHostWindow(uint64_t baseWord, std::string *error);
  uint64_t hostWindow() const { return hostBase_; }

  //===--------------------------------------------------------------------===//
  // Weight stream: a FIFO of byte spans. GEMV/GEMM pop one weight record each.
  //===--------------------------------------------------------------------===//

  /// Appends a span. The caller keeps the bytes alive until consumed.
  /// `exact`, if given, holds the N x K values (row-major, scales applied)
  /// that the record in this span quantizes: in Reference numerics a
  /// GEMV/GEMM whose record is exactly this span multiplies by them instead
  /// of the codes. The runtime passes it for the KV records, which the
  /// golden model keeps exact as it keeps host KV caches in fp32; Hardware
  /// numerics always use the codes.
  /// `staticWeights`: the span is a record of the bundle's weights (not a
  /// KV record or one a host kernel made), which Integer numerics multiply
  /// with INT8 activations.
  void pushWeightStream(const uint8_t *data, size_t bytes,
                        const float *exact = nullptr,
                        bool staticWeights = false);
  size_t weightStreamPending() const { return streamPending_; }

  //===--------------------------------------------------------------------===//
  // Execution. Trap messages start with "instruction I (<disassembly>): ".
  //===--------------------------------------------------------------------===//

  /// Executes one decoded instruction (its fields are checked first). It is
  /// numbered with the count of instructions executed so far.
  bool execute(const isa::Instruction &inst, std::string *error);
  /// Decodes and executes `count` words, numbering them from 0; stops at
  /// the first trap.
  bool run(const uint64_t *words, size_t count, std::string *error);
  /// Ends a segment: traps if weight-stream bytes were left unconsumed.
  bool finishSegment(std::string *error);

  /// Waits for every asynchronous instruction (execution is in order, so
  /// this only clears the count of outstanding ones).
  void sync() { outstandingAsync_ = 0; }
  size_t outstandingAsync() const { return outstandingAsync_; }

  //===--------------------------------------------------------------------===//
  // State inspection.
  //===--------------------------------------------------------------------===//

  /// Constant-cache entry `entry` of bank `bank` (0 fmap_shape, 1
  /// weight_shape); false if it was never written.
  bool constEntry(unsigned bank, unsigned entry, uint16_t abc[3]) const;
  float emax() const { return emax_; }
  bool emaxArmed() const { return emaxArmed_; }
  bool scalarValid() const { return scalarValid_; }
  float scalar() const { return scalar_; }

  struct Stats {
    uint64_t instructions = 0; ///< instructions completed without a trap
    uint64_t macs = 0;         ///< GEMV/GEMM multiply-accumulates
    uint64_t weightBytes = 0;  ///< weight-stream bytes consumed
    uint64_t sfuElements = 0;  ///< CVO elements processed
    uint64_t memcpyWords = 0;  ///< words moved by MEMCPY
  };
  Stats stats() const { return stats_; }

private:
  struct Span {
    const uint8_t *data;
    size_t bytes;
    const float *exact; ///< see pushWeightStream
    bool staticWeights;
  };

  bool executeAt(const isa::Instruction &inst, uint64_t index, bool checked,
                 std::string *error);
  bool execMatmul(const isa::Instruction &inst, std::string &msg);
  /// A GEMV/GEMM's operands, its fields checked.
  struct MatmulOperands {
    size_t m = 0, n = 0, k = 0;
    bool int4 = false, wScale = false, accm = false, findEmax = false;
    uint64_t src = 0, dest = 0, srcStride = 0, dstStride = 0;
    size_t rowStride = 0, scaleBytes = 0, recordBytes = 0;
  };
  /// Checks a GEMV/GEMM's fields, constants, L2 ranges and pending weights.
  bool checkMatmul(const isa::Instruction &inst, MatmulOperands *op,
                   std::string &msg) const;
  /// scratchOut_ = the product of the record (its rows after the scales)
  /// and the activations, in this simulator's numerics.
  void multiply(const MatmulOperands &op, const uint8_t *rows,
                const float *scales, const float *exact, bool integer);
  /// Stores scratchOut_ into L2 (added to it with accm), tracking e_max.
  void storeProduct(const MatmulOperands &op);
  bool execMemcpy(const isa::Instruction &inst, std::string &msg);
  bool execMemset(const isa::Instruction &inst, std::string &msg);
  bool execCvo(const isa::Instruction &inst, std::string &msg);

  bool readConst(unsigned bank, unsigned entry, const uint16_t *&abc,
                 std::string &msg) const;
  bool checkL2(uint64_t word, uint64_t words, const char *what,
               std::string &msg) const;
  /// What L2 holds for `v`: a NaN is the canonical one in both modes, so
  /// L2 (and the conformance vectors read from it) never shows which CPU
  /// made it (sqrt(-1) is 0xFFC00000 on x86-64, 0x7FC00000 on aarch64).
  float store(float v) const {
    return numerics_ != Numerics::Reference ? hw::roundToBf16(v)
                                            : hw::canonicalizeNan(v);
  }
  /// The next `bytes` bytes of the stream as one contiguous block (copied
  /// only when the block crosses spans). Requires weightStreamPending() >=
  /// bytes.
  const uint8_t *takeWeights(size_t bytes);

  Numerics numerics_;
  const machine::TargetProfile *profile_;
  unsigned threads_ = 1;
  MatmulIsa matmulIsa_;
  Int8Isa int8Isa_;
  /// Started at the first GEMV/GEMM large enough to split (poolFor).
  std::unique_ptr<WorkerPool> pool_;
  /// The pool an m x n x k GEMV/GEMM may split over, or null.
  WorkerPool *poolFor(size_t m, size_t n, size_t k);

  std::vector<float> l2_;
  size_t hostWords_;
  std::vector<float> host_;
  uint64_t hostBase_ = 0;

  uint16_t consts_[2][machine::const_cache_entries][3] = {};
  bool constValid_[2][machine::const_cache_entries] = {};

  std::deque<Span> stream_;
  size_t streamHead_ = 0; ///< bytes of stream_.front() already consumed
  size_t streamPending_ = 0;
  std::vector<uint8_t> gathered_;
  std::vector<float> scratchIn_, scratchOut_, scratchScale_;
  std::vector<int8_t> scratchCodes_;
  std::vector<float> scratchBlockScales_;
  std::vector<int32_t> scratchCodeSums_;

  float emax_;
  bool emaxArmed_ = false, emaxUsed_ = false;
  float scalar_ = 0.0f;
  bool scalarValid_ = false;

  size_t outstandingAsync_ = 0;
  Stats stats_;
};

} // namespace pccx::sim

#endif // PCCX_RUNTIME_SIM_SIMULATOR_H
