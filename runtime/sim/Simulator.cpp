//===- Simulator.cpp - functional simulator of the pccx v002 ISA ----------===//
//
// Implements docs/isa-semantics.md. Every instruction first checks all of its
// operands (constant entries, shapes, L2 and host ranges, weight-stream
// supply) and only then changes state, so a trap has no effect.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/Simulator.h"
#include "runtime/sim/EnumNames.h"

#include "runtime/sim/MatmulKernels.h"
#include "runtime/sim/WorkerPool.h"

#include "hw/numerics/Elementary.h"
#include "hw/support/Format.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

namespace pccx::sim {

using isa::Field;
using isa::Instruction;
using isa::Opcode;

namespace {

constexpr unsigned kLanes = machine::kLanesPerWord;
constexpr uint64_t kL2Words = machine::l2_words;
constexpr uint64_t kWindowWords = machine::host_window_words;
constexpr unsigned kFmapBank = isa::Memset_dest_cache_fmap_shape;
constexpr unsigned kWeightBank = isa::Memset_dest_cache_weight_shape;
/// Weight records pad their scale block and every row to this many bytes.
constexpr size_t kRecordAlign = 16;
/// Below this many MACs a GEMV/GEMM runs on the calling thread only.
constexpr uint64_t kThreadMinMacs = uint64_t(1) << 18;

uint64_t wordsFor(uint64_t elements) {
  return (elements + kLanes - 1) / kLanes;
}
size_t padTo(size_t n, size_t align) { return (n + align - 1) / align * align; }

const char *bankName(unsigned bank) {
  const char *name = isa::enumName(Field::Memset_dest_cache, bank);
  return name ? name : "?";
}

/// Splits `n` output features into contiguous ranges, one per thread, and
/// runs `features(n0, n1)` on each. Each feature is computed the same way
/// whichever thread runs it.
template <typename Features>
void splitFeatures(size_t n, uint64_t macs, WorkerPool *pool,
                   const Features &features) {
  unsigned parts = pool ? pool->threads() : 1;
  if (parts > n)
    parts = unsigned(n);
  if (parts <= 1 || macs < kThreadMinMacs) {
    features(size_t(0), n);
    return;
  }
  size_t chunk = (n + parts - 1) / parts;
  pool->run(parts, [&](unsigned part) {
    size_t begin = std::min(n, part * chunk);
    features(begin, std::min(n, begin + chunk));
  });
}

float readF32Le(const uint8_t *p) {
  uint32_t u = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
               uint32_t(p[3]) << 24;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

} // namespace

//===----------------------------------------------------------------------===//
// State and host-side access
//===----------------------------------------------------------------------===//

Simulator::Simulator(Numerics numerics, size_t hostWords,
                     machine::Target target)
    : numerics_(numerics), profile_(&machine::targetProfile(target)),
      matmulIsa_(bestMatmulIsa()), int8Isa_(bestInt8Isa()),
      l2_(size_t(kL2Words) * kLanes, 0.0f),
      hostWords_(hostWords), host_(hostWords * kLanes, 0.0f),
      emax_(-std::numeric_limits<float>::infinity()) {
  setThreads(0);
}

Simulator::~Simulator() = default;
Simulator::Simulator(Simulator &&) noexcept = default;
Simulator &Simulator::operator=(Simulator &&) noexcept = default;

void Simulator::setThreads(unsigned threads) {
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads_ = threads;
}

bool Simulator::setMatmulIsa(MatmulIsa isa) {
  if (!matmulIsaAvailable(isa))
    return false;
  matmulIsa_ = isa;
  return true;
}

WorkerPool *Simulator::poolFor(size_t m, size_t n, size_t k) {
  if (threads_ <= 1)
    return nullptr;
  // Started at the first GEMV/GEMM large enough to split.
  if ((!pool_ || pool_->threads() != threads_) &&
      uint64_t(m) * n * k >= kThreadMinMacs)
    pool_ = std::make_unique<WorkerPool>(threads_);
  return pool_.get();
}

const char *numericsName(Numerics numerics) {
  switch (numerics) {
  case Numerics::Reference:
    return "reference";
  case Numerics::Integer:
    return "integer";
  case Numerics::Hardware:
    break;
  }
  return "hardware";
}

bool parseNumerics(const std::string &name, Numerics *numerics) {
  return parseEnumName(
      name, {Numerics::Reference, Numerics::Hardware, Numerics::Integer},
      numericsName, numerics);
}

bool Simulator::setInt8Isa(Int8Isa isa) {
  if (!int8IsaAvailable(isa))
    return false;
  int8Isa_ = isa;
  return true;
}

bool Simulator::writeL2(uint32_t word, const float *values, size_t count,
                        std::string *error) {
  std::string msg;
  if (!checkL2(word, wordsFor(count), "writeL2", msg)) {
    if (error)
      *error = msg;
    return false;
  }
  float *dst = &l2_[size_t(word) * kLanes];
  for (size_t i = 0; i < count; ++i)
    dst[i] = store(values[i]);
  return true;
}

bool Simulator::readL2(uint32_t word, float *values, size_t count,
                       std::string *error) const {
  std::string msg;
  if (!checkL2(word, wordsFor(count), "readL2", msg)) {
    if (error)
      *error = msg;
    return false;
  }
  std::copy_n(&l2_[size_t(word) * kLanes], count, values);
  return true;
}

bool Simulator::setHostWindow(uint64_t baseWord, std::string *error) {
  if (baseWord >= hostWords_) {
    if (error)
      *error = formatString("host window base word 0x%llx is outside host memory "
                      "(%zu words)",
                      (unsigned long long)baseWord, hostWords_);
    return false;
  }
  hostBase_ = baseWord;
  return true;
}

void Simulator::pushWeightStream(const uint8_t *data, size_t bytes,
                                 const float *exact, bool staticWeights) {
  if (bytes == 0)
    return;
  stream_.push_back({data, bytes, exact, staticWeights});
  streamPending_ += bytes;
}

const uint8_t *Simulator::takeWeights(size_t bytes) {
  if (bytes == 0)
    return nullptr;
  const uint8_t *block;
  Span &front = stream_.front();
  if (front.bytes - streamHead_ >= bytes) {
    block = front.data + streamHead_;
    streamHead_ += bytes;
    if (streamHead_ == front.bytes) {
      stream_.pop_front();
      streamHead_ = 0;
    }
  } else {
    gathered_.resize(bytes);
    size_t got = 0;
    while (got < bytes) {
      Span &s = stream_.front();
      size_t take = std::min(s.bytes - streamHead_, bytes - got);
      std::memcpy(gathered_.data() + got, s.data + streamHead_, take);
      got += take;
      streamHead_ += take;
      if (streamHead_ == s.bytes) {
        stream_.pop_front();
        streamHead_ = 0;
      }
    }
    block = gathered_.data();
  }
  streamPending_ -= bytes;
  return block;
}

bool Simulator::constEntry(unsigned bank, unsigned entry,
                           uint16_t abc[3]) const {
  if (bank >= 2 || entry >= machine::const_cache_entries ||
      !constValid_[bank][entry])
    return false;
  std::copy_n(consts_[bank][entry], 3, abc);
  return true;
}

bool Simulator::readConst(unsigned bank, unsigned entry, const uint16_t *&abc,
                          std::string &msg) const {
  if (!constValid_[bank][entry]) {
    msg = formatString("constant-cache %s entry %u was never written (no MEMSET "
                 "before this read)",
                 bankName(bank), entry);
    return false;
  }
  abc = consts_[bank][entry];
  return true;
}

bool Simulator::checkL2(uint64_t word, uint64_t words, const char *what,
                        std::string &msg) const {
  if (word + words <= kL2Words)
    return true;
  uint64_t bad = std::max(word, kL2Words);
  msg = formatString("%s spans L2 words 0x%05llx..0x%05llx; L2 word 0x%05llx does "
               "not exist (L2 has %llu words)",
               what, (unsigned long long)word,
               (unsigned long long)(word + words - 1), (unsigned long long)bad,
               (unsigned long long)kL2Words);
  return false;
}

//===----------------------------------------------------------------------===//
// Execution
//===----------------------------------------------------------------------===//

bool Simulator::execute(const Instruction &inst, std::string *error) {
  return executeAt(inst, stats_.instructions, /*checked=*/false, error);
}

bool Simulator::run(const uint64_t *words, size_t count, std::string *error) {
  for (size_t i = 0; i < count; ++i) {
    Instruction inst;
    std::string msg;
    if (!isa::decode(words[i], inst, &msg)) {
      if (error)
        *error = formatString("instruction %zu (undecodable): ", i) + msg;
      return false;
    }
    if (!executeAt(inst, i, /*checked=*/true, error))
      return false;
  }
  return true;
}

bool Simulator::finishSegment(std::string *error) {
  if (streamPending_ == 0)
    return true;
  if (error)
    *error = formatString("end of segment: weight stream has %zu unconsumed bytes",
                    streamPending_);
  return false;
}

bool Simulator::executeAt(const Instruction &inst, uint64_t index, bool checked,
                          std::string *error) {
  std::string msg;
  if (!checked)
    msg = isa::checkInstruction(inst);
  bool ok = msg.empty();
  if (ok) {
    switch (inst.opcode) {
    case Opcode::Gemv:
    case Opcode::Gemm:
      ok = execMatmul(inst, msg);
      break;
    case Opcode::Memcpy:
      ok = execMemcpy(inst, msg);
      break;
    case Opcode::Memset:
      ok = execMemset(inst, msg);
      break;
    case Opcode::Cvo:
      ok = execCvo(inst, msg);
      break;
    }
  }
  if (!ok) {
    if (error)
      *error = formatString("instruction %llu (", (unsigned long long)index) +
               isa::disassemble(inst) + "): " + msg;
    return false;
  }
  ++stats_.instructions;
  return true;
}

bool Simulator::execMemset(const Instruction &inst, std::string &msg) {
  unsigned bank = inst.get(Field::Memset_dest_cache);
  unsigned entry = inst.get(Field::Memset_dest_addr);
  uint16_t *abc = consts_[bank][entry];
  abc[0] = uint16_t(inst.get(Field::Memset_a_value));
  abc[1] = uint16_t(inst.get(Field::Memset_b_value));
  abc[2] = uint16_t(inst.get(Field::Memset_c_value));
  constValid_[bank][entry] = true;
  return true;
}

bool Simulator::execMatmul(const Instruction &inst, std::string &msg) {
  MatmulOperands op;
  if (!checkMatmul(inst, &op, msg))
    return false;
  // All checks passed: consume the record and compute.
  const float *exact =
      numerics_ == Numerics::Reference && streamHead_ == 0 &&
              stream_.front().bytes == op.recordBytes
          ? stream_.front().exact
          : nullptr;
  // Integer numerics take a record of the bundle's weights pushed whole.
  const bool integer = numerics_ == Numerics::Integer && streamHead_ == 0 &&
                       stream_.front().bytes == op.recordBytes &&
                       stream_.front().staticWeights;
  const uint8_t *record = takeWeights(op.recordBytes);
  const float *scales = nullptr;
  if (op.wScale) {
    scratchScale_.resize(op.n);
    for (size_t i = 0; i < op.n; ++i)
      scratchScale_[i] = readF32Le(record + 4 * i);
    scales = scratchScale_.data();
  }
  multiply(op, record + op.scaleBytes, scales, exact, integer);
  storeProduct(op);
  stats_.macs += uint64_t(op.m) * op.n * op.k;
  stats_.weightBytes += op.recordBytes;
  return true;
}

bool Simulator::checkMatmul(const Instruction &inst, MatmulOperands *op,
                            std::string &msg) const {
  const char *mn = isa::opcodeInfo(inst.opcode).mnemonic;
  bool gemm = inst.opcode == Opcode::Gemm;
  uint32_t flags = inst.get(Field::Matmul_flags);
  bool wScale = flags & isa::Matmul_flags_w_scale;

  uint32_t lanes = inst.get(Field::Matmul_parallel_lane);
  if (lanes > machine::gemv_cores) {
    msg = formatString("parallel_lane %u exceeds the %llu GEMV cores (0 means all)",
                 lanes, (unsigned long long)machine::gemv_cores);
    return false;
  }

  std::string missing = machine::missingCapability(inst, profile_->id);
  if (!missing.empty()) {
    msg = missing;
    return false;
  }
  // shapePtr names the weight_shape entry, sizePtr the fmap_shape entry;
  // which field holds which is the target's convention.
  bool swapped = profile_->matmulPointersSwapped;
  unsigned shapePtr = inst.get(swapped ? Field::Matmul_size_ptr_addr
                                       : Field::Matmul_shape_ptr_addr);
  unsigned sizePtr = inst.get(swapped ? Field::Matmul_shape_ptr_addr
                                      : Field::Matmul_size_ptr_addr);
  const uint16_t *shape = nullptr, *size = nullptr;
  if (!readConst(kWeightBank, shapePtr, shape, msg) ||
      !readConst(kFmapBank, sizePtr, size, msg))
    return false;
  size_t n = shape[0], k = shape[1];
  unsigned weightFormat = shape[2];
  if (n == 0 || k == 0) {
    msg = formatString("weight_shape entry %u has %s = 0 (a = N output features and "
                 "b = K input features must be at least 1)",
                 shapePtr, n == 0 ? "a" : "b");
    return false;
  }
  if (weightFormat > 1) {
    msg = formatString("weight_shape entry %u: c = %u is not a defined weight format "
                 "(0 INT4, 1 INT8)",
                 shapePtr, weightFormat);
    return false;
  }
  bool int4 = weightFormat == 0;

  size_t m = size[0];
  if (!gemm && m != 1) {
    msg = formatString("gemv needs M = 1 but fmap_shape entry %u has a = %zu",
                 sizePtr, m);
    return false;
  }
  if (m == 0) {
    msg = formatString("fmap_shape entry %u has a = M = 0 rows", sizePtr);
    return false;
  }
  uint64_t inWords = wordsFor(k), outWords = wordsFor(n);
  uint64_t srcStride = size[1] ? size[1] : inWords;
  uint64_t dstStride = size[2] ? size[2] : outWords;
  if (m > 1 && srcStride < inWords) {
    msg = formatString("fmap_shape entry %u: source row stride %llu words is less "
                 "than a row of K = %zu elements (%llu words)",
                 sizePtr, (unsigned long long)srcStride, k,
                 (unsigned long long)inWords);
    return false;
  }
  if (m > 1 && dstStride < outWords) {
    msg = formatString("fmap_shape entry %u: destination row stride %llu words is "
                 "less than a row of N = %zu elements (%llu words)",
                 sizePtr, (unsigned long long)dstStride, n,
                 (unsigned long long)outWords);
    return false;
  }
  uint64_t src = inst.get(Field::Matmul_src_addr);
  uint64_t dest = inst.get(Field::Matmul_dest_reg);
  if (!checkL2(src, (m - 1) * srcStride + inWords, "activation source", msg) ||
      !checkL2(dest, (m - 1) * dstStride + outWords, "result destination", msg))
    return false;

  size_t rowBytes = int4 ? (k + 1) / 2 : k;
  size_t rowStride = padTo(rowBytes, kRecordAlign);
  size_t scaleBytes = wScale ? padTo(4 * n, kRecordAlign) : 0;
  size_t recordBytes = scaleBytes + n * rowStride;
  if (recordBytes > streamPending_) {
    msg = formatString("weight stream exhausted: %s needs %zu bytes, %zu pending", mn,
                 recordBytes, streamPending_);
    return false;
  }

  op->m = m;
  op->n = n;
  op->k = k;
  op->int4 = int4;
  op->wScale = wScale;
  op->accm = flags & isa::Matmul_flags_accm;
  op->findEmax = flags & isa::Matmul_flags_findemax;
  op->src = src;
  op->dest = dest;
  op->srcStride = srcStride;
  op->dstStride = dstStride;
  op->rowStride = rowStride;
  op->scaleBytes = scaleBytes;
  op->recordBytes = recordBytes;
  return true;
}

void Simulator::multiply(const MatmulOperands &op, const uint8_t *rows,
                         const float *scales, const float *exact,
                         bool integer) {
  const size_t m = op.m, n = op.n, k = op.k;
  // Rows in kernel order, zero-padded to whole 32-element blocks.
  size_t kPadded = padTo(k, kMatmulBlock);
  scratchIn_.assign((m + (op.int4 ? 1 : 0)) * kPadded, 0.0f);
  float *natural = scratchIn_.data() + m * kPadded;
  for (size_t r = 0; r < m; ++r) {
    float *row = op.int4 ? natural : &scratchIn_[r * kPadded];
    std::copy_n(&l2_[(op.src + r * op.srcStride) * kLanes], k, row);
    if (op.int4)
      permuteInt4Activations(row, &scratchIn_[r * kPadded], kPadded);
  }
  scratchOut_.resize(m * n);

  if (integer) {
    const size_t codesStride = padTo(kPadded, kInt8RowAlign),
                 blocks = codesStride / kInt8Block;
    scratchCodes_.resize(m * codesStride);
    scratchBlockScales_.resize(m * blocks);
    scratchCodeSums_.resize(m * blocks * kInt8Partials);
    for (size_t r = 0; r < m; ++r)
      quantizeActivationsInt8(&scratchIn_[r * kPadded], kPadded, codesStride,
                              &scratchCodes_[r * codesStride],
                              &scratchBlockScales_[r * blocks],
                              &scratchCodeSums_[r * blocks * kInt8Partials]);
    MatmulInt8Job job{rows,
                      op.rowStride,
                      op.int4,
                      kPadded / kMatmulBlock,
                      codesStride,
                      m,
                      n,
                      scratchCodes_.data(),
                      scratchBlockScales_.data(),
                      scratchCodeSums_.data(),
                      scales,
                      scratchOut_.data()};
    splitFeatures(n, uint64_t(m) * n * kPadded, poolFor(m, n, kPadded),
                  [&](size_t n0, size_t n1) {
                    matmulInt8Features(job, n0, n1, int8Isa_);
                  });
    return;
  }
  if (exact) {
    for (size_t r = 0; r < m; ++r) {
      const float *x = &l2_[(op.src + r * op.srcStride) * kLanes];
      for (size_t i = 0; i < n; ++i) {
        float acc = 0;
        for (size_t j = 0; j < k; ++j)
          acc += exact[i * k + j] * x[j];
        scratchOut_[r * n + i] = acc;
      }
    }
    return;
  }
  MatmulJob job{rows,    op.rowStride, op.int4,          kPadded, m,
                n,       scratchIn_.data(), scales, scratchOut_.data()};
  splitFeatures(n, uint64_t(m) * n * kPadded, poolFor(m, n, kPadded),
                [&](size_t n0, size_t n1) {
                  matmulFeatures(job, n0, n1, matmulIsa_);
                });
}

void Simulator::storeProduct(const MatmulOperands &op) {
  if (op.findEmax && (!emaxArmed_ || emaxUsed_)) {
    emax_ = -std::numeric_limits<float>::infinity();
    emaxArmed_ = true;
    emaxUsed_ = false;
  }
  for (size_t r = 0; r < op.m; ++r) {
    float *dst = &l2_[(op.dest + r * op.dstStride) * kLanes];
    const float *res = &scratchOut_[r * op.n];
    for (size_t i = 0; i < op.n; ++i) {
      float v = store(op.accm ? dst[i] + res[i] : res[i]);
      dst[i] = v;
      if (op.findEmax && v > emax_)
        emax_ = v;
    }
  }
}

bool Simulator::execMemcpy(const Instruction &inst, std::string &msg) {
  bool fromHost = inst.get(Field::Memcpy_from_device);
  bool toHost = inst.get(Field::Memcpy_to_device);
  if (!profile_->memcpyL2ToL2 && !(fromHost && !toHost)) {
    // Every pair but host->L2 is routed as L2->host on this target.
    fromHost = false;
    toHost = true;
  }
  if (fromHost && toHost) {
    msg = "host-to-host MEMCPY is not supported";
    return false;
  }
  unsigned shapePtr = inst.get(Field::Memcpy_shape_ptr_addr);
  const uint16_t *shape = nullptr;
  if (!readConst(kFmapBank, shapePtr, shape, msg))
    return false;
  uint64_t rowWords = shape[0];
  uint64_t rows = shape[1] ? shape[1] : 1;
  uint64_t hostStride = shape[2] ? shape[2] : rowWords;
  if (profile_->memcpyShapeProduct) {
    // a*b*c BF16 elements in whole words, contiguous on both sides; the
    // word count is a 17-bit quantity on this target.
    uint64_t elements = uint64_t(shape[0]) * shape[1] * shape[2];
    if (elements == 0) {
      msg = formatString("fmap_shape entry %u has a*b*c = 0 elements",
                         shapePtr);
      return false;
    }
    if (elements + kLanes - 1 >= (uint64_t(1) << machine::l2_address_bits)) {
      msg = formatString("fmap_shape entry %u: a*b*c = %llu elements; the "
                         "17-bit word count of target %s holds at most "
                         "131064 elements",
                         shapePtr, (unsigned long long)elements,
                         profile_->name);
      return false;
    }
    rowWords = hostStride = wordsFor(elements);
    rows = 1;
  }
  if (rowWords == 0) {
    msg = formatString("fmap_shape entry %u has a = 0 words per row", shapePtr);
    return false;
  }
  uint64_t words = rowWords * rows;
  uint64_t dest = inst.get(Field::Memcpy_dest_addr);
  uint64_t src = inst.get(Field::Memcpy_src_addr);

  if (!fromHost && !toHost) {
    if (!checkL2(src, words, "memcpy source", msg) ||
        !checkL2(dest, words, "memcpy destination", msg))
      return false;
    std::memmove(&l2_[dest * kLanes], &l2_[src * kLanes],
                 words * kLanes * sizeof(float));
  } else {
    uint64_t l2Addr = fromHost ? dest : src;
    if (!checkL2(l2Addr, words,
                 fromHost ? "memcpy destination" : "memcpy source", msg))
      return false;
    uint64_t aux =
        profile_->memcpyAuxAddr ? inst.get(Field::Memcpy_aux_addr) : 0;
    uint64_t hostEnd = aux + (rows - 1) * hostStride + rowWords;
    if (hostEnd > kWindowWords) {
      msg = formatString("host window offsets 0x%05llx..0x%05llx leave the %llu-word "
                   "host window",
                   (unsigned long long)aux, (unsigned long long)(hostEnd - 1),
                   (unsigned long long)kWindowWords);
      return false;
    }
    if (hostBase_ + hostEnd > hostWords_) {
      msg = formatString("host words 0x%llx..0x%llx (window base 0x%llx + offset) "
                   "are outside host memory (%zu words)",
                   (unsigned long long)(hostBase_ + aux),
                   (unsigned long long)(hostBase_ + hostEnd - 1),
                   (unsigned long long)hostBase_, hostWords_);
      return false;
    }
    for (uint64_t r = 0; r < rows; ++r) {
      float *l2Row = &l2_[(l2Addr + r * rowWords) * kLanes];
      float *hostRow = &host_[(hostBase_ + aux + r * hostStride) * kLanes];
      size_t lanes = rowWords * kLanes;
      if (fromHost)
        for (size_t i = 0; i < lanes; ++i)
          l2Row[i] = store(hostRow[i]);
      else
        std::copy_n(l2Row, lanes, hostRow);
    }
  }
  stats_.memcpyWords += words;
  if (inst.get(Field::Memcpy_async))
    ++outstandingAsync_;
  return true;
}

namespace {

/// The SFU's GELU (tanh form), evaluated in double and rounded once.
float geluOf(double d) {
  const double kGeluC = 0.79788456080286535588; // sqrt(2/pi)
  return float(0.5 * d * (1.0 + hw::tanh(kGeluC * (d + 0.044715 * d * d * d))));
}

/// geluOf of every BF16 value, by bit pattern (built once: a decode step
/// of E2B applies GELU to a quarter million BF16 values).
const std::vector<float> &geluOfBf16() {
  static const std::vector<float> table = [] {
    std::vector<float> t(1u << 16);
    for (uint32_t h = 0; h < t.size(); ++h) {
      const uint32_t bits = h << 16;
      float x;
      std::memcpy(&x, &bits, 4);
      t[h] = geluOf(x);
    }
    return t;
  }();
  return table;
}

} // namespace

bool Simulator::execCvo(const Instruction &inst, std::string &msg) {
  uint32_t func = inst.get(Field::Cvo_cvo_func);
  uint32_t flags = inst.get(Field::Cvo_flags);
  bool subEmax = flags & isa::Cvo_flags_sub_emax;
  bool recipScale = flags & isa::Cvo_flags_recip_scale;
  bool accm = flags & isa::Cvo_flags_accm;
  const char *funcName = isa::enumName(Field::Cvo_cvo_func, func);
  if (recipScale && func != isa::Cvo_cvo_func_scale) {
    msg = formatString("recip_scale applies only to scale, not to %s", funcName);
    return false;
  }
  std::string missing = machine::missingCapability(inst, profile_->id);
  if (!missing.empty()) {
    msg = missing;
    return false;
  }
  size_t length = inst.get(Field::Cvo_length);
  if (length == 0)
    return true;
  if (subEmax && !emaxArmed_) {
    msg = "sub_emax but no findemax GEMV/GEMM has set e_max";
    return false;
  }
  if (func == isa::Cvo_cvo_func_scale && !scalarValid_) {
    msg = "scale reads the SFU scalar register, which no reduce_sum has set";
    return false;
  }
  bool reduce = func == isa::Cvo_cvo_func_reduce_sum;
  uint64_t src = inst.get(Field::Cvo_src_addr);
  uint64_t dst = inst.get(Field::Cvo_dst_addr);
  if (profile_->cvoElementAddresses) {
    if ((src | dst) % kLanes) {
      msg = formatString("src_addr 0x%05llx / dst_addr 0x%05llx: on target %s "
                         "they are BF16 element addresses and must start a "
                         "word (multiples of 8)",
                         (unsigned long long)src, (unsigned long long)dst,
                         profile_->name);
      return false;
    }
    src /= kLanes;
    dst /= kLanes;
  }
  if (!checkL2(src, wordsFor(length), "cvo source", msg) ||
      !checkL2(dst, reduce ? 1 : wordsFor(length), "cvo destination", msg))
    return false;

  const float *in = &l2_[src * kLanes];
  float *out = &l2_[dst * kLanes];
  float e = subEmax ? emax_ : 0.0f;
  auto arg = [&](size_t i) { return subEmax ? in[i] - e : in[i]; };

  if (reduce) {
    float sum = 0.0f;
    for (size_t i = 0; i < length; ++i)
      sum += arg(i);
    out[0] = store(accm ? out[0] + sum : sum);
    scalar_ = sum;
    scalarValid_ = true;
  } else {
    // Compute every result before storing any, so src and dst may overlap.
    std::vector<float> &y = scratchOut_;
    y.resize(length);
    float s = scalar_;
    for (size_t i = 0; i < length; ++i) {
      float x = arg(i);
      double d = x;
      float r;
      switch (func) {
      case isa::Cvo_cvo_func_exp:
        r = float(hw::exp(d));
        break;
      case isa::Cvo_cvo_func_sqrt:
        r = std::sqrt(x);
        break;
      case isa::Cvo_cvo_func_gelu: {
        // A BF16 argument (what L2 holds outside Reference numerics) is
        // looked up: the table holds the same function's results.
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        r = (bits & 0xffffu) == 0 ? geluOfBf16()[bits >> 16] : geluOf(d);
        break;
      }
      case isa::Cvo_cvo_func_sin:
        r = float(hw::sin(d));
        break;
      case isa::Cvo_cvo_func_cos:
        r = float(hw::cos(d));
        break;
      case isa::Cvo_cvo_func_recip:
        r = 1.0f / x;
        break;
      case isa::Cvo_cvo_func_scale:
        r = recipScale ? (s == 0.0f ? 0.0f : x / s) : x * s;
        break;
      default: // checkInstruction admits no other value
        r = x;
        break;
      }
      y[i] = r;
    }
    for (size_t i = 0; i < length; ++i)
      out[i] = store(accm ? out[i] + y[i] : y[i]);
  }
  if (subEmax)
    emaxUsed_ = true;
  stats_.sfuElements += length;
  if (inst.get(Field::Cvo_async))
    ++outstandingAsync_;
  return true;
}

} // namespace pccx::sim
