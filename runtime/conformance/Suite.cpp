//===- Suite.cpp - the conformance vectors
//---------------------------------===//
//
// Every vector is a short program with its initial state; the functional
// simulator (hardware numerics) computes the expected final state, so the
// suite says exactly what docs/isa-semantics.md says. The seed only changes
// data values (activations, weights, scales, host words), never the
// programs, shapes or addresses.
//
//===----------------------------------------------------------------------===//

#include "runtime/conformance/Conformance.h"

#include "hw/isa/Isa.h"
#include "hw/machine/MachineModel.h"
#include "hw/machine/Target.h"
#include "hw/numerics/HalfFloat.h"
#include "hw/support/Format.h"
#include "runtime/sim/Simulator.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace pccx::conformance {

using isa::Field;

namespace {

constexpr unsigned kLanes = machine::kLanesPerWord;
constexpr uint32_t kLastL2Word = uint32_t(machine::l2_words - 1);
constexpr uint64_t kWindow = machine::host_window_words;

/// splitmix64: the same sequence on every platform and standard library
/// (std:: distributions are implementation-defined).
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// An integer in [lo, hi].
  int between(int lo, int hi) {
    return lo + int(next() % uint64_t(hi - lo + 1));
  }
  /// A value in [lo, hi) on a 2^-24 grid.
  float uniform(float lo, float hi) {
    double u = double(next() >> 40) / double(1ull << 24);
    return float(lo + (double(hi) - lo) * u);
  }

private:
  uint64_t state_;
};

/// Builds one vector; the helpers append to it.
class Builder {
public:
  Builder(std::vector<Vector> &out, Rng &rng, const char *name,
          const std::string &covers)
      : rng_(rng) {
    out.emplace_back();
    v_ = &out.back();
    v_->name = name;
    v_->covers = covers;
    v_->hostWords = kWindow;
  }

  /// Appends an instruction in the disassembly syntax.
  Builder &op(const std::string &text) {
    isa::Instruction inst;
    std::string err;
    uint64_t word = 0;
    if (!isa::assemble(text, inst, &err) || !isa::encode(inst, word, &err))
      throw std::logic_error(v_->name + ": '" + text + "': " + err);
    v_->program.push_back(word);
    return *this;
  }
  /// Appends an instruction with extra raw bits set (decode traps).
  Builder &opWithBits(const std::string &text, uint64_t bits) {
    op(text);
    v_->program.back() |= bits;
    return *this;
  }
  Builder &rawWord(uint64_t word) {
    v_->program.push_back(word);
    return *this;
  }
  Builder &constant(unsigned bank, unsigned entry, uint16_t a, uint16_t b,
                    uint16_t c) {
    v_->initial.consts.push_back({bank, entry, a, b, c});
    return *this;
  }
  Builder &fmap(unsigned entry, uint16_t a, uint16_t b, uint16_t c) {
    return constant(isa::Memset_dest_cache_fmap_shape, entry, a, b, c);
  }
  Builder &weightShape(unsigned entry, uint16_t n, uint16_t k, uint16_t fmt) {
    return constant(isa::Memset_dest_cache_weight_shape, entry, n, k, fmt);
  }
  /// Fills `words` whole L2 words from `word` with random BF16 values.
  Builder &l2(uint32_t word, uint32_t words, float lo, float hi) {
    fill(v_->initial.l2, word, words, lo, hi);
    return *this;
  }
  /// Sets L2 element `element` of the vector at `word` to `value`.
  Builder &l2Element(uint32_t word, size_t element, float value) {
    Word &w = v_->initial.l2[word + uint32_t(element / kLanes)];
    w[element % kLanes] = hw::floatToBf16(value);
    return *this;
  }
  Builder &host(uint32_t word, uint32_t words, float lo, float hi) {
    fill(v_->initial.host, word, words, lo, hi);
    return *this;
  }
  Builder &hostMemory(uint64_t words, uint64_t windowBase) {
    v_->hostWords = words;
    v_->hostWindowBase = windowBase;
    return *this;
  }
  /// Appends one weight record (docs/isa-semantics.md §6) with random
  /// weights and, with `scales`, random fp32 scales.
  Builder &record(unsigned n, unsigned k, bool int4, bool scales) {
    std::vector<uint8_t> &w = v_->weights;
    if (scales) {
      size_t start = w.size();
      for (unsigned i = 0; i < n; ++i) {
        uint32_t bits = hw::floatBits(rng_.uniform(0.015625f, 0.25f));
        for (int b = 0; b < 4; ++b)
          w.push_back(uint8_t(bits >> (8 * b)));
      }
      pad(w, start);
    }
    for (unsigned row = 0; row < n; ++row) {
      size_t start = w.size();
      if (int4) {
        for (unsigned j = 0; j < k; j += 2) {
          unsigned lo = unsigned(rng_.between(-8, 7)) & 0xF;
          unsigned hi = j + 1 < k ? unsigned(rng_.between(-8, 7)) & 0xF : 0;
          w.push_back(uint8_t(lo | hi << 4));
        }
      } else {
        for (unsigned j = 0; j < k; ++j)
          w.push_back(uint8_t(int8_t(rng_.between(-128, 127))));
      }
      pad(w, start);
    }
    return *this;
  }
  /// Drops the last `bytes` bytes of the weight stream (a short supply).
  Builder &truncateWeights(size_t bytes) {
    v_->weights.resize(v_->weights.size() - bytes);
    return *this;
  }
  /// Appends `bytes` zero bytes that no instruction consumes.
  Builder &extraWeights(size_t bytes) {
    v_->weights.resize(v_->weights.size() + bytes, 0);
    return *this;
  }

private:
  static void pad(std::vector<uint8_t> &w, size_t start) {
    while ((w.size() - start) % 16)
      w.push_back(0);
  }
  void fill(SparseMemory &m, uint32_t word, uint32_t words, float lo,
            float hi) {
    for (uint32_t i = 0; i < words; ++i) {
      Word &w = m[word + i];
      for (unsigned l = 0; l < kLanes; ++l)
        w[l] = hw::floatToBf16(rng_.uniform(lo, hi));
    }
  }

  Rng &rng_;
  Vector *v_;
};

/// The target the vectors are written for: set by buildSuite for the
/// duration of one build on its thread, read by the word helpers below.
thread_local const machine::TargetProfile *gTarget = nullptr;

std::string hex5(uint32_t v) { return formatString("0x%05x", v); }
std::string num(unsigned v) { return std::to_string(v); }

uint64_t fieldBits(Field f, uint64_t value) {
  return value << isa::fieldInfo(f).lo;
}

unsigned wordsFor(unsigned elements) {
  return (elements + kLanes - 1) / kLanes;
}

const char *flagText(unsigned mask) {
  static const char *const names[] = {
      "0",        "w_scale",          "accm",          "accm|w_scale",
      "findemax", "findemax|w_scale", "findemax|accm", "findemax|accm|w_scale"};
  return names[mask & 7];
}

/// A GEMV/GEMM word naming fmap_shape entry `fmap` and weight_shape entry
/// `weight` in the fields the target reads them from.
std::string matmul(const char *mnemonic, uint32_t dest, uint32_t src,
                   const char *flags, unsigned fmap, unsigned weight,
                   unsigned lanes = 0) {
  bool swapped = gTarget->matmulPointersSwapped;
  return std::string(mnemonic) + " dest_reg=" + hex5(dest) +
         " src_addr=" + hex5(src) + " flags=" + flags +
         " size_ptr_addr=" + num(swapped ? weight : fmap) +
         " shape_ptr_addr=" + num(swapped ? fmap : weight) +
         " parallel_lane=" + num(lanes);
}

//===----------------------------------------------------------------------===//
// The vectors, by opcode
//===----------------------------------------------------------------------===//

void memsetVectors(std::vector<Vector> &out, Rng &rng) {
  Builder(out, rng, "memset_fmap_entry0", "MEMSET fmap_shape, entry 0")
      .op("memset dest_cache=fmap_shape dest_addr=0 a_value=1 b_value=2 "
          "c_value=3");
  Builder(out, rng, "memset_weight_entry63_max",
          "MEMSET weight_shape, last entry, all-ones values")
      .op("memset dest_cache=weight_shape dest_addr=63 a_value=65535 "
          "b_value=65535 c_value=65535");
  Builder(out, rng, "memset_overwrites_entry",
          "MEMSET replaces all three values of a written entry")
      .fmap(7, 9, 9, 9)
      .op("memset dest_cache=fmap_shape dest_addr=7 a_value=0 b_value=4660 "
          "c_value=32768");
  Builder(out, rng, "memset_banks_are_separate",
          "MEMSET the same entry of both banks")
      .op("memset dest_cache=fmap_shape dest_addr=12 a_value=5 b_value=6 "
          "c_value=7")
      .op("memset dest_cache=weight_shape dest_addr=12 a_value=8 b_value=9 "
          "c_value=10");
  {
    Builder b(out, rng, "memset_every_entry",
              "MEMSET all 64 entries of both banks");
    for (unsigned bank = 0; bank < 2; ++bank)
      for (unsigned e = 0; e < machine::const_cache_entries; ++e)
        b.op(std::string("memset dest_cache=") +
             (bank ? "weight_shape" : "fmap_shape") + " dest_addr=" + num(e) +
             " a_value=" + num(e + 1) + " b_value=" + num(1000 * bank + e) +
             " c_value=" + num(65535 - e));
  }
  Builder(out, rng, "memset_trap_dest_cache_2",
          "decode trap: MEMSET dest_cache 2 is undefined")
      .opWithBits("memset dest_cache=fmap_shape dest_addr=1 a_value=1 "
                  "b_value=1 c_value=1",
                  fieldBits(Field::Memset_dest_cache, 2));
}

/// One GEMV: weight_shape entry 5 = (n, k, fmt), fmap entry 9 = (1, 0, 0).
void gemv(Builder &b, uint32_t dest, uint32_t src, unsigned n, unsigned k,
          bool int4, unsigned flags, unsigned lanes = 0) {
  b.weightShape(5, uint16_t(n), uint16_t(k), int4 ? 0 : 1)
      .fmap(9, 1, 0, 0)
      .record(n, k, int4, flags & 1);
  b.op(matmul("gemv", dest, src, flagText(flags), 9, 5, lanes));
}

void gemvVectors(std::vector<Vector> &out, Rng &rng) {
  const uint32_t src = 0x00100, dest = 0x00400;
  for (int int4 = 1; int4 >= 0; --int4)
    for (unsigned flags = 0; flags < 8; ++flags) {
      std::string name = std::string("gemv_") + (int4 ? "int4" : "int8") +
                         "_flags_" + flagText(flags);
      for (char &c : name)
        if (c == '|')
          c = '_';
      Builder b(out, rng, name.c_str(),
                std::string("GEMV ") + (int4 ? "INT4" : "INT8") +
                    " N=19 K=45, flags=" + flagText(flags) +
                    "; lanes past N keep their values");
      b.l2(src, wordsFor(45), -2.0f, 2.0f).l2(dest, wordsFor(19), -1.0f, 1.0f);
      gemv(b, dest, src, 19, 45, int4, flags);
    }
  for (unsigned lanes = 0; lanes <= 4; ++lanes) {
    std::string name = "gemv_parallel_lane_" + num(lanes);
    Builder b(out, rng, name.c_str(),
              "GEMV parallel_lane=" + num(lanes) + " (0 means all four)");
    b.l2(src, 2, -2.0f, 2.0f);
    gemv(b, dest, src, 8, 16, true, 0, lanes);
  }
  {
    Builder b(out, rng, "gemv_n1_k1", "GEMV with N = K = 1 (INT8)");
    b.l2(src, 1, -4.0f, 4.0f).l2(dest, 1, -1.0f, 1.0f);
    gemv(b, dest, src, 1, 1, false, 0);
  }
  {
    Builder b(out, rng, "gemv_k4096_int4",
              "GEMV INT4 N=6 K=4096 with w_scale: a long fixed-order sum");
    b.l2(src, wordsFor(4096), -1.0f, 1.0f);
    gemv(b, dest, src, 6, 4096, true, 1);
  }
  {
    Builder b(out, rng, "gemv_k65535_int4",
              "GEMV INT4 N=2 K=65535, the largest K a shape entry holds");
    b.l2(src, wordsFor(65535), -1.0f, 1.0f);
    gemv(b, 0x02100, src, 2, 65535, true, 0);
  }
  {
    Builder b(out, rng, "gemv_last_l2_word",
              "GEMV reading and writing the last L2 words");
    b.l2(kLastL2Word - 2, 2, -2.0f, 2.0f);
    gemv(b, kLastL2Word, kLastL2Word - 2, 8, 16, false, 0);
  }
  {
    Builder b(out, rng, "gemv_in_place",
              "GEMV whose destination is its own source");
    b.l2(src, 2, -2.0f, 2.0f);
    gemv(b, src, src, 16, 16, true, 0);
  }
  {
    Builder b(out, rng, "gemv_two_findemax",
              "two findemax GEMVs accumulate one e_max; records in order");
    b.l2(src, 3, -2.0f, 2.0f).weightShape(6, 10, 24, 1);
    gemv(b, dest, src, 12, 24, true, 4);
    b.record(10, 24, false, false)
        .op(matmul("gemv", 0x00500, 0x00100, "findemax", 9, 6));
  }
  {
    Builder b(out, rng, "gemv_weight_bytes_left",
              "weight bytes left unconsumed stay pending");
    b.l2(src, 2, -2.0f, 2.0f);
    gemv(b, dest, src, 4, 16, true, 0);
    b.extraWeights(32);
  }
  // Traps.
  {
    Builder b(out, rng, "gemv_trap_parallel_lane_5",
              "trap: parallel_lane above the four cores");
    b.l2(src, 2, -2.0f, 2.0f);
    gemv(b, dest, src, 8, 16, true, 0, 5);
  }
  Builder(out, rng, "gemv_trap_weight_shape_unwritten",
          "trap: weight_shape entry never written")
      .fmap(9, 1, 0, 0)
      .op(matmul("gemv", 0x00400, 0x00100, "0", 9, 33));
  Builder(out, rng, "gemv_trap_n_zero", "trap: weight_shape a = N = 0")
      .weightShape(5, 0, 16, 0)
      .fmap(9, 1, 0, 0)
      .op(matmul("gemv", 0x00400, 0x00100, "0", 9, 5));
  Builder(out, rng, "gemv_trap_weight_format_2",
          "trap: weight_shape c = 2 is no weight format")
      .weightShape(5, 8, 16, 2)
      .fmap(9, 1, 0, 0)
      .op(matmul("gemv", 0x00400, 0x00100, "0", 9, 5));
  Builder(out, rng, "gemv_trap_m_2", "trap: GEMV with fmap a = M = 2")
      .weightShape(5, 8, 16, 0)
      .fmap(9, 2, 0, 0)
      .record(8, 16, true, false)
      .op(matmul("gemv", 0x00400, 0x00100, "0", 9, 5));
  {
    Builder b(out, rng, "gemv_trap_stream_exhausted",
              "trap: weight record longer than the bytes pending");
    gemv(b, dest, src, 8, 16, true, 1);
    b.truncateWeights(16);
  }
  {
    Builder b(out, rng, "gemv_trap_dest_past_l2",
              "trap: result spans past the last L2 word");
    b.l2(src, 2, -2.0f, 2.0f);
    gemv(b, kLastL2Word, src, 9, 16, true, 0);
  }
  {
    Builder b(out, rng, "gemv_trap_after_first",
              "the second instruction traps; the first one's result stays");
    b.l2(src, 2, -2.0f, 2.0f);
    gemv(b, dest, src, 8, 16, true, 0);
    b.op(matmul("gemv", 0x00500, 0x00100, "0", 9, 5, 6));
  }
}

void gemmVectors(std::vector<Vector> &out, Rng &rng) {
  for (int int4 = 1; int4 >= 0; --int4) {
    std::string name = std::string("gemm_") + (int4 ? "int4" : "int8") + "_m3";
    Builder b(out, rng, name.c_str(),
              std::string("GEMM ") + (int4 ? "INT4" : "INT8") +
                  " M=3 N=11 K=21, packed rows (strides 0)");
    b.l2(0x00100, 3 * wordsFor(21), -2.0f, 2.0f)
        .l2(0x00400, 3 * wordsFor(11), -1.0f, 1.0f)
        .weightShape(2, 11, 21, int4 ? 0 : 1)
        .fmap(3, 3, 0, 0)
        .record(11, 21, int4, false)
        .op(matmul("gemm", 0x00400, 0x00100, "0", 3, 2));
  }
  Builder(out, rng, "gemm_strided_all_flags",
          "GEMM M=4 N=20 K=40, row strides 7 and 4 words, "
          "findemax|accm|w_scale")
      .l2(0x00100, 4 * 7, -2.0f, 2.0f)
      .l2(0x00400, 4 * 4, -1.0f, 1.0f)
      .weightShape(2, 20, 40, 0)
      .fmap(3, 4, 7, 4)
      .record(20, 40, true, true)
      .op(matmul("gemm", 0x00400, 0x00100, "findemax|accm|w_scale", 3, 2, 2));
  Builder(out, rng, "gemm_m1", "GEMM with one row equals a GEMV")
      .l2(0x00100, 2, -2.0f, 2.0f)
      .weightShape(2, 8, 16, 1)
      .fmap(3, 1, 0, 0)
      .record(8, 16, false, true)
      .op(matmul("gemm", 0x00400, 0x00100, "w_scale", 3, 2));
  Builder(out, rng, "gemm_trap_m0", "trap: GEMM with fmap a = M = 0")
      .weightShape(2, 8, 16, 0)
      .fmap(3, 0, 0, 0)
      .record(8, 16, true, false)
      .op(matmul("gemm", 0x00400, 0x00100, "0", 3, 2));
  Builder(out, rng, "gemm_trap_src_stride",
          "trap: source row stride shorter than a row")
      .weightShape(2, 8, 24, 0)
      .fmap(3, 2, 2, 0)
      .record(8, 24, true, false)
      .op(matmul("gemm", 0x00400, 0x00100, "0", 3, 2));
  Builder(out, rng, "gemm_trap_dest_stride",
          "trap: destination row stride shorter than a row")
      .weightShape(2, 17, 8, 0)
      .fmap(3, 2, 0, 2)
      .record(17, 8, true, false)
      .op(matmul("gemm", 0x00400, 0x00100, "0", 3, 2));
}

void memcpyVectors(std::vector<Vector> &out, Rng &rng) {
  Builder(out, rng, "memcpy_host_to_l2",
          "MEMCPY host->L2: 3 rows of 5 words, host stride 8, aux 0x40")
      .host(0x40, 3 * 8, -8.0f, 8.0f)
      .l2(0x00200, 16, -1.0f, 1.0f)
      .fmap(4, 5, 3, 8)
      .op("memcpy from_device=1 to_device=0 dest_addr=0x00200 aux_addr=0x00040 "
          "shape_ptr_addr=4");
  Builder(out, rng, "memcpy_l2_to_host",
          "MEMCPY L2->host: 3 rows of 5 words into host rows 8 apart")
      .l2(0x00200, 15, -8.0f, 8.0f)
      .host(0x40, 3 * 8, -1.0f, 1.0f)
      .fmap(4, 5, 3, 8)
      .op("memcpy from_device=0 to_device=1 src_addr=0x00200 aux_addr=0x00040 "
          "shape_ptr_addr=4");
  Builder(out, rng, "memcpy_l2_to_l2_overlap",
          "MEMCPY L2->L2 of 12 words onto an overlapping range")
      .l2(0x00300, 15, -8.0f, 8.0f)
      .fmap(4, 6, 2, 0)
      .op("memcpy from_device=0 to_device=0 dest_addr=0x00303 src_addr=0x00300 "
          "shape_ptr_addr=4");
  if (!gTarget->memcpyShapeProduct) {
    Builder(out, rng, "memcpy_rows_0_means_1",
            "MEMCPY with b = 0 rows and c = 0 stride: one row")
        .host(0x10, 4, -8.0f, 8.0f)
        .fmap(4, 4, 0, 0)
        .op("memcpy from_device=1 to_device=0 dest_addr=0x00010 "
            "aux_addr=0x00010 shape_ptr_addr=4");
  } else {
    Builder(out, rng, "memcpy_shape_product",
            "MEMCPY host->L2 of (3, 5, 4): ceil(60 / 8) = 8 words")
        .host(0, 9, -8.0f, 8.0f)
        .fmap(4, 3, 5, 4)
        .op("memcpy from_device=1 to_device=0 dest_addr=0x00010 "
            "shape_ptr_addr=4");
    Builder(out, rng, "memcpy_trap_word_count",
            "trap: (65535, 2, 1) needs more than the 17-bit word count")
        .fmap(4, 65535, 2, 1)
        .op("memcpy from_device=1 to_device=0 dest_addr=0x00010 "
            "shape_ptr_addr=4");
    Builder(out, rng, "memcpy_trap_zero_elements",
            "trap: an fmap entry of a*b*c = 0 elements")
        .fmap(4, 4, 0, 1)
        .op("memcpy from_device=1 to_device=0 dest_addr=0x00010 "
            "shape_ptr_addr=4");
  }
  Builder(out, rng, "memcpy_async",
          "MEMCPY with async: the same result as synchronous")
      .l2(0x00020, 2, -8.0f, 8.0f)
      .fmap(4, 2, 1, 8)
      .op("memcpy from_device=0 to_device=1 src_addr=0x00020 aux_addr=0x00000 "
          "shape_ptr_addr=4 async=1");
  Builder(out, rng, "memcpy_window_base_last_offset",
          "MEMCPY at the end of a host window that starts at word 8000")
      .hostMemory(140000, 8000)
      .host(8000 + 0x1fffe, 2, -8.0f, 8.0f)
      .fmap(4, 2, 1, 8)
      .op("memcpy from_device=1 to_device=0 dest_addr=0x00040 aux_addr=0x1fffe "
          "shape_ptr_addr=4");
  Builder(out, rng, "memcpy_last_l2_word", "MEMCPY into the last L2 word")
      .host(0, 1, -8.0f, 8.0f)
      .fmap(4, 1, 1, 8)
      .op("memcpy from_device=1 to_device=0 dest_addr=" + hex5(kLastL2Word) +
          " aux_addr=0x00000 shape_ptr_addr=4");
  Builder(out, rng, "memcpy_trap_host_to_host",
          "trap: from_device = to_device = 1")
      .fmap(4, 1, 1, 8)
      .op("memcpy from_device=1 to_device=1 shape_ptr_addr=4");
  Builder(out, rng, "memcpy_trap_a_zero", "trap: fmap a = 0 words per row")
      .fmap(4, 0, 1, 0)
      .op("memcpy from_device=1 to_device=0 dest_addr=0x00010 "
          "shape_ptr_addr=4");
  Builder(out, rng, "memcpy_trap_unwritten_entry",
          "trap: fmap_shape entry never written")
      .op("memcpy from_device=0 to_device=0 dest_addr=0x00010 "
          "shape_ptr_addr=17");
  Builder(out, rng, "memcpy_trap_l2_range",
          "trap: two words from the last L2 word")
      .fmap(4, 2, 1, 8)
      .op("memcpy from_device=1 to_device=0 dest_addr=" + hex5(kLastL2Word) +
          " shape_ptr_addr=4");
  Builder(out, rng, "memcpy_trap_window",
          "trap: host rows past the 131072-word window")
      .fmap(4, 2, 1, 8)
      .op("memcpy from_device=1 to_device=0 dest_addr=0x00010 "
          "aux_addr=0x1ffff shape_ptr_addr=4");
  Builder(out, rng, "memcpy_trap_host_memory",
          "trap: host words past the end of a 1024-word host memory")
      .hostMemory(1024, 0)
      .fmap(4, 30, 1, 8)
      .op("memcpy from_device=0 to_device=1 src_addr=0x00010 aux_addr=0x003e8 "
          "shape_ptr_addr=4");
}

struct CvoFunc {
  const char *name;
  float lo, hi;
};
const CvoFunc kCvoFuncs[] = {
    {"exp", -4.0f, 4.0f},   {"sqrt", 0.0f, 16.0f},  {"gelu", -4.0f, 4.0f},
    {"sin", -8.0f, 8.0f},   {"cos", -8.0f, 8.0f},   {"reduce_sum", -2.0f, 2.0f},
    {"scale", -4.0f, 4.0f}, {"recip", -4.0f, 4.0f},
};

/// A CVO word on vectors at L2 words `src` and `dst`, in the address unit
/// of the target.
std::string cvo(const char *func, uint32_t src, uint32_t dst, unsigned length,
                const char *flags = "0", unsigned async = 0) {
  uint32_t unit = gTarget->cvoElementAddresses ? kLanes : 1;
  return std::string("cvo cvo_func=") + func + " src_addr=" + hex5(src * unit) +
         " dst_addr=" + hex5(dst * unit) + " length=" + num(length) +
         " flags=" + flags + " async=" + num(async);
}

/// Sets the SFU scalar register with a one-element REDUCE_SUM of `value`.
void setScalar(Builder &b, float value) {
  b.l2Element(0x00080, 0, value).op(cvo("reduce_sum", 0x00080, 0x00081, 1));
}

/// Arms e_max with a findemax GEMM of one row and 8 outputs (every target
/// writes a GEMM result back).
void armEmax(Builder &b, uint32_t src = 0x00090, uint32_t dest = 0x00098) {
  b.l2(src, 2, -2.0f, 2.0f)
      .weightShape(6, 8, 16, 0)
      .fmap(10, 1, 0, 0)
      .record(8, 16, true, false)
      .op(matmul("gemm", dest, src, "findemax", 10, 6));
}

void cvoVectors(std::vector<Vector> &out, Rng &rng) {
  const uint32_t src = 0x00100, dst = 0x00400;
  for (const CvoFunc &f : kCvoFuncs) {
    std::string name = std::string("cvo_") + f.name;
    Builder b(out, rng, name.c_str(),
              std::string("CVO ") + f.name +
                  ", 37 elements; lanes past the vector keep their values");
    b.l2(src, wordsFor(37), f.lo, f.hi).l2(dst, wordsFor(37), -1.0f, 1.0f);
    if (!std::strcmp(f.name, "sqrt"))
      b.l2Element(src, 3, -1.0f).l2Element(src, 4, 0.0f); // NaN and 0
    if (!std::strcmp(f.name, "recip"))
      b.l2Element(src, 5, 0.0f).l2Element(src, 6, -0.0f); // +inf, -inf
    if (!std::strcmp(f.name, "scale"))
      setScalar(b, 0.375f);
    b.op(cvo(f.name, src, dst, 37));
  }
  // Fixed inputs where the RTL's SFU arithmetic is known to disagree with
  // the documented functions (docs/isa-semantics.md §13); the same values
  // for every seed.
  struct FixedPoints {
    const char *func;
    float x[8];
  };
  const FixedPoints kFixed[] = {
      {"exp", {0.5f, 1, 2, 0.015625f, 100, -1, 0, 255}},
      {"sqrt", {0.25f, 1, 2, 4, 0.5f, 100, 0, 9}},
      {"gelu", {1, -1, 0.5f, 2, -3, 0, 3, 0.125f}},
      {"sin", {0, 0.5f, 1, 1.5707964f, 3.1415927f, -1, 2, 6}},
      {"cos", {0, 0.5f, 1, 1.5707964f, 3.1415927f, -1, 2, 6}},
      {"recip", {3, 0.5f, 2, -4, 10, 0.125f, 7, 1}},
      {"reduce_sum", {1, 1, 1, 1, 1, 1, 1, 1}},
      {"scale", {1, 2, 3, 4, 5, 6, 7, 8}},
  };
  for (const FixedPoints &f : kFixed) {
    std::string name = std::string("cvo_") + f.func + "_fixed_points";
    Builder b(out, rng, name.c_str(),
              std::string("CVO ") + f.func +
                  " of fixed inputs where the RTL's SFU is known to differ");
    for (unsigned i = 0; i < 8; ++i)
      b.l2Element(src, i, f.x[i]);
    if (!std::strcmp(f.func, "scale"))
      setScalar(b, 2.0f);
    b.op(cvo(f.func, src, dst, 8));
  }
  for (const char *func : {"exp", "gelu", "reduce_sum", "scale", "recip"}) {
    std::string name = std::string("cvo_") + func + "_accm";
    Builder b(out, rng, name.c_str(),
              std::string("CVO ") + func + " with accm (dst += f(x))");
    b.l2(src, 3, -2.0f, 2.0f).l2(dst, 3, -4.0f, 4.0f);
    if (!std::strcmp(func, "scale"))
      setScalar(b, -1.5f);
    b.op(cvo(func, src, dst, 20, "accm"));
  }
  for (const char *func : {"exp", "sin", "reduce_sum", "sqrt"}) {
    std::string name = std::string("cvo_") + func + "_sub_emax";
    Builder b(out, rng, name.c_str(),
              std::string("CVO ") + func +
                  " with sub_emax after a findemax "
                  "GEMV");
    b.l2(src, 2, -2.0f, 2.0f);
    armEmax(b);
    b.op(cvo(func, src, dst, 16, "sub_emax"));
  }
  {
    Builder b(out, rng, "cvo_scale_recip_scale",
              "CVO scale with recip_scale divides by the scalar");
    b.l2(src, 2, -4.0f, 4.0f);
    setScalar(b, 3.0f);
    b.op(cvo("scale", src, dst, 16, "recip_scale"));
  }
  {
    Builder b(out, rng, "cvo_scale_recip_scale_zero",
              "CVO scale with recip_scale by a zero scalar gives 0");
    b.l2(src, 2, -4.0f, 4.0f).l2(dst, 2, -1.0f, 1.0f);
    setScalar(b, 0.0f);
    b.op(cvo("scale", src, dst, 16, "recip_scale"));
  }
  {
    Builder b(out, rng, "cvo_all_flags",
              "CVO scale with sub_emax|recip_scale|accm and async");
    b.l2(src, 2, -2.0f, 2.0f).l2(dst, 2, -1.0f, 1.0f);
    armEmax(b);
    setScalar(b, 2.5f);
    b.op(cvo("scale", src, dst, 16, "sub_emax|recip_scale|accm", 1));
  }
  {
    Builder b(out, rng, "cvo_softmax",
              "GEMM findemax, then exp sub_emax, reduce_sum, scale "
              "recip_scale (the softmax sequence)");
    b.l2(src, 4, -2.0f, 2.0f)
        .weightShape(6, 24, 32, 0)
        .fmap(10, 1, 0, 0)
        .record(24, 32, true, false)
        .op(matmul("gemm", dst, src, "findemax", 10, 6));
    b.op(cvo("exp", dst, dst, 24, "sub_emax"))
        .op(cvo("reduce_sum", dst, 0x00500, 24))
        .op(cvo("scale", dst, dst, 24, "recip_scale"));
  }
  {
    Builder b(out, rng, "cvo_emax_restarts_after_use",
              "a findemax after a sub_emax CVO starts a new maximum");
    b.l2(src, 2, -2.0f, 2.0f);
    armEmax(b);
    b.op(cvo("exp", src, dst, 16, "sub_emax"));
    armEmax(b, 0x000a0, 0x000a8);
    b.op(cvo("exp", src, 0x00500, 16, "sub_emax"));
  }
  for (unsigned length : {0u, 1u, 7u, 8u, 9u, 2048u, 2049u}) {
    std::string name = "cvo_length_" + num(length);
    Builder b(out, rng, name.c_str(), "CVO sin of length " + num(length));
    b.l2(src, wordsFor(length) + 1, -8.0f, 8.0f)
        .l2(dst, wordsFor(length) + 1, -1.0f, 1.0f)
        .op(cvo("sin", src, dst, length));
  }
  {
    Builder b(out, rng, "cvo_length_65535",
              "CVO exp of the longest length, 65535 elements");
    b.l2(src, wordsFor(65535), -4.0f, 4.0f).op(cvo("exp", src, 0x02100, 65535));
  }
  Builder(out, rng, "cvo_in_place", "CVO gelu with dst = src")
      .l2(src, 3, -4.0f, 4.0f)
      .op(cvo("gelu", src, src, 24));
  // Element addresses reach only the first 16384 words.
  const uint32_t lastCvoWord =
      gTarget->cvoElementAddresses
          ? uint32_t((1u << machine::l2_address_bits) / kLanes - 1)
          : kLastL2Word;
  Builder(out, rng, "cvo_last_l2_word",
          "CVO reading and writing the last L2 word a CVO can address")
      .l2(lastCvoWord - 1, 1, -4.0f, 4.0f)
      .op(cvo("recip", lastCvoWord - 1, lastCvoWord, 8));
  // Traps.
  Builder(out, rng, "cvo_trap_recip_scale_on_exp",
          "trap: recip_scale on a function other than scale")
      .l2(src, 1, -1.0f, 1.0f)
      .op(cvo("exp", src, dst, 8, "recip_scale"));
  Builder(out, rng, "cvo_trap_recip_scale_length_0",
          "trap: recip_scale on sqrt traps even with length 0")
      .op(cvo("sqrt", src, dst, 0, "recip_scale"));
  Builder(out, rng, "cvo_trap_sub_emax_unarmed",
          "trap: sub_emax before any findemax")
      .l2(src, 1, -1.0f, 1.0f)
      .op(cvo("exp", src, dst, 8, "sub_emax"));
  Builder(out, rng, "cvo_trap_scale_without_scalar",
          "trap: scale before any reduce_sum")
      .l2(src, 1, -1.0f, 1.0f)
      .op(cvo("scale", src, dst, 8));
  if (!gTarget->cvoElementAddresses) {
    Builder(out, rng, "cvo_trap_src_past_l2",
            "trap: source spans past the last L2 word")
        .op(cvo("cos", kLastL2Word, dst, 9));
    Builder(out, rng, "cvo_trap_dst_past_l2",
            "trap: destination spans past the last L2 word")
        .l2(src, 2, -1.0f, 1.0f)
        .op(cvo("cos", src, kLastL2Word, 9));
  } else {
    Builder(out, rng, "cvo_trap_unaligned_element_address",
            "trap: a BF16 element address that does not start a word")
        .l2(src, 2, -1.0f, 1.0f)
        .op("cvo cvo_func=cos src_addr=" + hex5(src * kLanes + 3) +
            " dst_addr=" + hex5(dst * kLanes) + " length=8");
  }
}

void decodeVectors(std::vector<Vector> &out, Rng &rng) {
  Builder(out, rng, "decode_trap_reserved_opcode",
          "decode trap: opcode 0x5 is reserved; the MEMSET before it stays")
      .op("memset dest_cache=fmap_shape dest_addr=2 a_value=1 b_value=2 "
          "c_value=3")
      .rawWord(uint64_t(0x5) << isa::kOpcodeLo);
  Builder(out, rng, "decode_trap_reserved_bit",
          "decode trap: a reserved body bit of a GEMV word is set")
      .opWithBits("gemv dest_reg=0x00400 src_addr=0x00100 flags=0 "
                  "size_ptr_addr=9 shape_ptr_addr=5",
                  1);
  Builder(out, rng, "decode_trap_reserved_flag",
          "decode trap: an undefined GEMV flag bit is set")
      .opWithBits("gemv dest_reg=0x00400 src_addr=0x00100 flags=0 "
                  "size_ptr_addr=9 shape_ptr_addr=5",
                  fieldBits(Field::Matmul_flags, 1));
  Builder(out, rng, "decode_trap_cvo_func_8",
          "decode trap: cvo_func 8 is undefined")
      .opWithBits("cvo cvo_func=exp src_addr=0x00100 dst_addr=0x00400 "
                  "length=8",
                  fieldBits(Field::Cvo_cvo_func, 8));
}

//===----------------------------------------------------------------------===//
// Running a vector
//===----------------------------------------------------------------------===//

void setLanes(float *lanes, const Word &w) {
  for (unsigned l = 0; l < kLanes; ++l)
    lanes[l] = hw::bf16ToFloat(w[l]);
}

/// Non-zero words of `count` words of float lanes (every lane a BF16 value).
void capture(const float *lanes, uint64_t count, uint32_t base,
             SparseMemory &out) {
  for (uint64_t i = 0; i < count; ++i) {
    Word w;
    bool any = false;
    for (unsigned l = 0; l < kLanes; ++l) {
      w[l] = hw::floatToBf16(lanes[i * kLanes + l]);
      any |= w[l] != 0;
    }
    if (any)
      out[uint32_t(base + i)] = w;
  }
}

bool runVector(Vector &v, machine::Target target, std::string *error) {
  sim::Simulator sim(sim::Numerics::Hardware, v.hostWords, target);
  std::string err;
  if (!sim.setHostWindow(v.hostWindowBase, &err)) {
    *error = v.name + ": " + err;
    return false;
  }
  for (const ConstEntry &c : v.initial.consts) {
    isa::Instruction set(isa::Opcode::Memset);
    set.set(Field::Memset_dest_cache, c.bank)
        .set(Field::Memset_dest_addr, c.entry)
        .set(Field::Memset_a_value, c.a)
        .set(Field::Memset_b_value, c.b)
        .set(Field::Memset_c_value, c.c);
    if (!sim.execute(set, &err)) {
      *error = v.name + ": " + err;
      return false;
    }
  }
  for (const auto &[addr, w] : v.initial.l2) {
    float lanes[kLanes];
    setLanes(lanes, w);
    if (!sim.writeL2(addr, lanes, kLanes, &err)) {
      *error = v.name + ": " + err;
      return false;
    }
  }
  for (const auto &[addr, w] : v.initial.host) {
    if (addr >= v.hostWords) {
      *error = v.name + ": initial host word outside host memory";
      return false;
    }
    setLanes(sim.hostLanes() + size_t(addr) * kLanes, w);
  }
  sim.pushWeightStream(v.weights.data(), v.weights.size());

  uint64_t before = sim.stats().instructions;
  if (!sim.run(v.program.data(), v.program.size(), &err)) {
    v.traps = true;
    v.trapIndex = sim.stats().instructions - before;
    v.trapMessage = err;
  }

  MachineState &e = v.expected;
  std::vector<float> l2(size_t(machine::l2_words) * kLanes);
  if (!sim.readL2(0, l2.data(), l2.size(), &err)) {
    *error = v.name + ": " + err;
    return false;
  }
  capture(l2.data(), machine::l2_words, 0, e.l2);
  capture(sim.hostLanes(), v.hostWords, 0, e.host);
  for (unsigned bank = 0; bank < 2; ++bank)
    for (unsigned entry = 0; entry < machine::const_cache_entries; ++entry) {
      uint16_t abc[3];
      if (sim.constEntry(bank, entry, abc))
        e.consts.push_back({bank, entry, abc[0], abc[1], abc[2]});
    }
  e.emaxArmed = sim.emaxArmed();
  e.emaxBits = e.emaxArmed ? hw::floatBits(sim.emax()) : 0;
  e.scalarValid = sim.scalarValid();
  e.scalarBits = e.scalarValid ? hw::floatBits(sim.scalar()) : 0;
  e.weightPending = sim.weightStreamPending();
  // The initial state's constant list in the same order as the expected
  // one, so both files read alike.
  std::vector<ConstEntry> &init = v.initial.consts;
  std::vector<ConstEntry> sorted;
  for (unsigned bank = 0; bank < 2; ++bank)
    for (unsigned entry = 0; entry < machine::const_cache_entries; ++entry)
      for (auto it = init.rbegin(); it != init.rend(); ++it)
        if (it->bank == bank && it->entry == entry) {
          sorted.push_back(*it);
          break;
        }
  init = std::move(sorted);
  v.initial.weightPending = v.weights.size();
  return true;
}

} // namespace

std::string knownTargets() { return machine::targetNames(); }

bool buildSuite(const GenerateOptions &options, std::vector<Vector> &vectors,
                std::string *error) {
  machine::Target target;
  if (!machine::lookupTarget(options.target, target)) {
    *error = "unknown target '" + options.target +
             "' (known: " + knownTargets() + ")";
    return false;
  }
  gTarget = &machine::targetProfile(target);
  Rng rng(options.seed);
  vectors.clear();
  try {
    memsetVectors(vectors, rng);
    gemvVectors(vectors, rng);
    gemmVectors(vectors, rng);
    memcpyVectors(vectors, rng);
    cvoVectors(vectors, rng);
    decodeVectors(vectors, rng);
  } catch (const std::logic_error &e) {
    *error = std::string("internal error building the suite: ") + e.what();
    return false;
  }
  for (Vector &v : vectors)
    if (!runVector(v, target, error))
      return false;
  // A trap of the documented semantics that this target does not have
  // (e.g. host-to-host MEMCPY, routed L2->host on v002-rtl) is not a trap
  // vector here; what the word does instead is covered by other vectors.
  std::vector<Vector> kept;
  for (Vector &v : vectors)
    if (v.traps || v.name.find("_trap_") == std::string::npos)
      kept.push_back(std::move(v));
  vectors = std::move(kept);
  return true;
}

} // namespace pccx::conformance
