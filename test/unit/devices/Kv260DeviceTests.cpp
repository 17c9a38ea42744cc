//===- Kv260DeviceTests.cpp - the KV260 driver against a fake board -------===//
//
// A fake AXI-Lite window records every register write and answers status
// reads from a script; a fake DMA buffer is plain memory at a made-up
// physical address. The expected register traffic is the protocol of
// runtime/devices/Kv260Device.h, written out by hand.
//
//===----------------------------------------------------------------------===//

#include "runtime/devices/Kv260Device.h"

#include "hw/isa/Isa.h"
#include "test/unit/devices/FakeSysfs.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace pccx;
using namespace pccx::device;

namespace {

constexpr uint64_t kPhys = 0x123456000ull;

struct Write {
  uint32_t offset, value;
  bool operator==(const Write &o) const {
    return offset == o.offset && value == o.value;
  }
};

struct Board {
  std::vector<Write> writes;
  std::deque<uint64_t> statusScript; ///< consumed one per status read
  uint64_t statusAfterScript = 0;    ///< idle
  uint64_t currentStatus = 0;
  size_t statusReads = 0;
};

class FakeRegisters : public RegisterWindow {
public:
  FakeRegisters(Board &board, size_t size) : board_(board), size_(size) {}
  uint32_t read32(uint32_t offset) override {
    if (offset == kv260::kRegStatus) {
      ++board_.statusReads;
      if (!board_.statusScript.empty()) {
        board_.currentStatus = board_.statusScript.front();
        board_.statusScript.pop_front();
      } else {
        board_.currentStatus = board_.statusAfterScript;
      }
      return uint32_t(board_.currentStatus);
    }
    if (offset == kv260::kRegStatus + 4)
      return uint32_t(board_.currentStatus >> 32);
    return 0;
  }
  void write32(uint32_t offset, uint32_t value) override {
    board_.writes.push_back({offset, value});
  }
  size_t size() const override { return size_; }

private:
  Board &board_;
  size_t size_;
};

struct Memory {
  std::vector<uint8_t> bytes;
  /// (offset, bytes) of every flush / invalidate, in order.
  std::vector<std::pair<size_t, size_t>> flushes, invalidates;
};

class FakeDma : public DmaBuffer {
public:
  explicit FakeDma(Memory &m) : m_(m) {}
  uint8_t *data() override { return m_.bytes.data(); }
  uint64_t physical() const override { return kPhys; }
  size_t size() const override { return m_.bytes.size(); }
  bool flush(size_t offset, size_t bytes, std::string *) override {
    m_.flushes.push_back({offset, bytes});
    return true;
  }
  bool invalidate(size_t offset, size_t bytes, std::string *) override {
    m_.invalidates.push_back({offset, bytes});
    return true;
  }

private:
  Memory &m_;
};

uint64_t word(const isa::Instruction &inst) {
  uint64_t w = 0;
  std::string error;
  EXPECT_TRUE(isa::encode(inst, w, &error)) << error;
  return w;
}

uint64_t fmapShape(uint32_t entry, uint32_t a, uint32_t b, uint32_t c) {
  return word(isa::Instruction(isa::Opcode::Memset)
                  .set(isa::Field::Memset_dest_cache, 0)
                  .set(isa::Field::Memset_dest_addr, entry)
                  .set(isa::Field::Memset_a_value, a)
                  .set(isa::Field::Memset_b_value, b)
                  .set(isa::Field::Memset_c_value, c));
}

uint64_t memcpyWord(bool fromHost, uint32_t aux, uint32_t entry) {
  return word(isa::Instruction(isa::Opcode::Memcpy)
                  .set(isa::Field::Memcpy_from_device, fromHost)
                  .set(isa::Field::Memcpy_to_device, !fromHost)
                  .set(isa::Field::Memcpy_aux_addr, aux)
                  .set(isa::Field::Memcpy_shape_ptr_addr, entry));
}

/// A device with a 64-word window (1 KiB, staging from 4096) and a DMA
/// buffer of `dmaBytes`.
struct Fixture {
  Board board;
  Memory memory;
  std::unique_ptr<Kv260Device> device;
  std::string error;

  explicit Fixture(size_t dmaBytes = 8192, uint64_t pollLimit = 100) {
    memory.bytes.assign(dmaBytes, 0);
    Kv260Options options;
    options.windowWords = 64;
    options.pollLimit = pollLimit;
    options.minStagingBytes = 4096;
    device = Kv260Device::create(std::make_unique<FakeRegisters>(board, 0x1000),
                                 std::make_unique<FakeDma>(memory), options,
                                 &error);
    board.writes.clear();
  }
  uint16_t lane(size_t index) const {
    uint16_t v;
    std::memcpy(&v, memory.bytes.data() + 2 * index, 2);
    return v;
  }
};

std::vector<Write> issueWrites(uint64_t w) {
  return {{0x000, uint32_t(w)},
          {0x004, uint32_t(w >> 32)},
          {0x008, 0},
          {0x00C, 0x80000000u}};
}

TEST(Kv260Device, CreateChecksSizes) {
  Board board;
  Memory memory;
  memory.bytes.assign(8192, 0);
  std::string error;
  EXPECT_EQ(Kv260Device::create(std::make_unique<FakeRegisters>(board, 0x20),
                                std::make_unique<FakeDma>(memory), {}, &error),
            nullptr);
  EXPECT_NE(error.find("0x30 bytes"), std::string::npos) << error;

  Kv260Options options;
  options.windowWords = 1024; // 16 KiB window in an 8 KiB buffer
  EXPECT_EQ(Kv260Device::create(std::make_unique<FakeRegisters>(board, 0x1000),
                                std::make_unique<FakeDma>(memory), options,
                                &error),
            nullptr);
  EXPECT_NE(error.find("16384-byte host window"), std::string::npos) << error;
}

TEST(Kv260Device, CreateProgramsTheWindowBase) {
  Board board;
  Memory memory;
  memory.bytes.assign(8192, 0);
  Kv260Options options;
  options.windowWords = 64;
  std::string error;
  auto device = Kv260Device::create(std::make_unique<FakeRegisters>(board, 0x1000),
                                    std::make_unique<FakeDma>(memory), options,
                                    &error);
  ASSERT_NE(device, nullptr) << error;
  EXPECT_EQ(board.writes, (std::vector<Write>{{0x018, 0x23456000u}, {0x01C, 0x1u}}));
  EXPECT_EQ(device->windowWords(), 64u);
}

TEST(Kv260Device, IssueWritesTheWordThenKicks) {
  Fixture f;
  ASSERT_NE(f.device, nullptr) << f.error;
  uint64_t w = fmapShape(3, 2, 1, 0);
  ASSERT_TRUE(f.device->issue(w, 0, &f.error)) << f.error;
  EXPECT_EQ(f.board.writes, issueWrites(w));
}

TEST(Kv260Device, InvalidWordNeverReachesTheBoard) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  // The highest opcode code the ISA leaves unassigned.
  unsigned reserved = (1u << (isa::kOpcodeHi - isa::kOpcodeLo + 1)) - 1;
  while (isa::lookupOpcode(reserved))
    --reserved;
  const uint64_t badOpcode = uint64_t(reserved) << isa::kOpcodeLo;
  EXPECT_FALSE(f.device->issue(badOpcode, 7, &f.error));
  EXPECT_EQ(f.error.rfind("instruction 7: ", 0), 0u) << f.error;
  EXPECT_NE(f.error.find("reserved"), std::string::npos) << f.error;
  EXPECT_TRUE(f.board.writes.empty());
}

TEST(Kv260Device, ReservedBitsAreRejectedBeforeTheShapeIsMirrored) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  const uint64_t reservedBits = isa::reservedMask(isa::Format::Memset);
  ASSERT_NE(reservedBits, 0u);
  // The lowest reserved bit set on an otherwise valid MEMSET of entry 4.
  const uint64_t bad = fmapShape(4, 1, 1, 0) | (reservedBits & -reservedBits);
  EXPECT_FALSE(f.device->issue(bad, 12, &f.error));
  EXPECT_EQ(f.error.rfind("instruction 12: ", 0), 0u) << f.error;
  EXPECT_TRUE(f.board.writes.empty());
  // The rejected MEMSET must not count as having set entry 4.
  EXPECT_FALSE(f.device->issue(memcpyWord(true, 0, 4), 13, &f.error));
  EXPECT_NE(f.error.find("no MEMSET has set"), std::string::npos) << f.error;
}

TEST(Kv260Device, HostToDeviceCopyConvertsToBf16) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  float *window = f.device->window();
  window[10 * 8 + 0] = 1.0f;
  window[10 * 8 + 1] = 1.00390625f; // a tie: rounds to even, 1.0
  window[12 * 8 + 0] = 5.0f;        // outside the copied rows
  window[14 * 8 + 0] = -2.0f;
  // Entry 5: 2 words per row, 2 rows, stride 4 words -> [10,12) and [14,16).
  ASSERT_TRUE(f.device->issue(fmapShape(5, 2, 2, 4), 0, &f.error)) << f.error;
  ASSERT_TRUE(f.device->issue(memcpyWord(true, 10, 5), 1, &f.error)) << f.error;
  EXPECT_EQ(f.lane(10 * 8 + 0), 0x3F80);
  EXPECT_EQ(f.lane(10 * 8 + 1), 0x3F80);
  EXPECT_EQ(f.lane(12 * 8 + 0), 0x0000);
  EXPECT_EQ(f.lane(14 * 8 + 0), 0xC000);
  // One flush for the span of both rows, words [10, 16).
  ASSERT_EQ(f.memory.flushes.size(), 1u);
  EXPECT_EQ(f.memory.flushes[0], std::make_pair(size_t(10 * 16), size_t(6 * 16)));
}

TEST(Kv260Device, Bf16RoundingOverExactlyTheCopiedWords) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  float *window = f.device->window();
  // Every lane of words 2..6 holds 7.0 so an over- or under-copy shows.
  for (size_t i = 2 * 8; i < 7 * 8; ++i)
    window[i] = 7.0f;
  // bf16 keeps 7 mantissa bits: one ulp at 1.0 is 2^-7.
  window[3 * 8 + 0] = 1.0f + 0x1.0p-8f + 0x1.0p-12f; // above half: up, 0x3F81
  window[3 * 8 + 1] = 1.0f + 3 * 0x1.0p-8f;          // tie, odd below: 0x3F82
  window[3 * 8 + 2] = 1.0f + 0x1.0p-9f;              // below half: 0x3F80
  window[3 * 8 + 3] = -0.5f;                         // 0xBF00
  window[3 * 8 + 4] = 0x1.fffffep127f;               // past bf16 max: +inf
  window[3 * 8 + 5] = 0x1.0p-130f;                   // subnormal: 8 * 2^-133
  // Entry 0: 2 contiguous words from word 3 -> exactly words 3 and 4.
  ASSERT_TRUE(f.device->issue(fmapShape(0, 2, 1, 0), 0, &f.error)) << f.error;
  ASSERT_TRUE(f.device->issue(memcpyWord(true, 3, 0), 1, &f.error)) << f.error;
  EXPECT_EQ(f.lane(3 * 8 + 0), 0x3F81);
  EXPECT_EQ(f.lane(3 * 8 + 1), 0x3F82);
  EXPECT_EQ(f.lane(3 * 8 + 2), 0x3F80);
  EXPECT_EQ(f.lane(3 * 8 + 3), 0xBF00);
  EXPECT_EQ(f.lane(3 * 8 + 4), 0x7F80);
  EXPECT_EQ(f.lane(3 * 8 + 5), 0x0008);
  for (size_t i = 3 * 8 + 6; i < 5 * 8; ++i)
    EXPECT_EQ(f.lane(i), 0x40E0) << "lane " << i; // 7.0
  for (size_t i : {size_t(2 * 8 + 7), size_t(5 * 8), size_t(6 * 8)})
    EXPECT_EQ(f.lane(i), 0x0000) << "lane " << i;
}

TEST(Kv260Device, DeviceToHostCopyArrivesAtSync) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  ASSERT_TRUE(f.device->issue(fmapShape(1, 1, 1, 0), 0, &f.error));
  ASSERT_TRUE(f.device->issue(memcpyWord(false, 20, 1), 1, &f.error));
  // The "NPU" writes bf16 3.140625 into word 20, lane 3.
  uint16_t bits = 0x4049;
  std::memcpy(f.memory.bytes.data() + 2 * (20 * 8 + 3), &bits, 2);
  EXPECT_EQ(f.device->window()[20 * 8 + 3], 0.0f);
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  EXPECT_EQ(f.device->window()[20 * 8 + 3], 3.140625f);
  // Only the word the NPU wrote is invalidated, once.
  ASSERT_EQ(f.memory.invalidates.size(), 1u);
  EXPECT_EQ(f.memory.invalidates[0], std::make_pair(size_t(20 * 16), size_t(16)));
}

TEST(Kv260Device, StridedCopiesLeaveTheGapsAlone) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  // Rows at words 20 and 22 (1 word each, stride 2); word 21 is the host's.
  f.device->window()[21 * 8] = 9.0f;
  ASSERT_TRUE(f.device->issue(fmapShape(2, 1, 2, 2), 0, &f.error));
  ASSERT_TRUE(f.device->issue(memcpyWord(false, 20, 2), 1, &f.error));
  uint16_t one = 0x3F80;
  std::memcpy(f.memory.bytes.data() + 2 * (22 * 8), &one, 2);
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  EXPECT_EQ(f.device->window()[22 * 8], 1.0f);
  EXPECT_EQ(f.device->window()[21 * 8], 9.0f);
  // And host -> device leaves the NPU's bytes in the gap alone.
  uint16_t two = 0x4000;
  std::memcpy(f.memory.bytes.data() + 2 * (21 * 8), &two, 2);
  ASSERT_TRUE(f.device->issue(memcpyWord(true, 20, 2), 2, &f.error));
  EXPECT_EQ(f.lane(21 * 8), 0x4000);
  EXPECT_EQ(f.lane(22 * 8), 0x3F80);
}

TEST(Kv260Device, CopyChecks) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  EXPECT_FALSE(f.device->issue(memcpyWord(true, 0, 9), 4, &f.error));
  EXPECT_NE(f.error.find("no MEMSET has set"), std::string::npos) << f.error;
  ASSERT_TRUE(f.device->issue(fmapShape(9, 8, 2, 8), 5, &f.error));
  f.board.writes.clear();
  // Rows at 60 and 68: the second ends at word 76 > 64.
  EXPECT_FALSE(f.device->issue(memcpyWord(true, 60, 9), 6, &f.error));
  EXPECT_NE(f.error.find("[60, 76), outside the 64-word window"),
            std::string::npos)
      << f.error;
  EXPECT_TRUE(f.board.writes.empty());
  // A shape of zero words per row copies nothing and is refused as well.
  ASSERT_TRUE(f.device->issue(fmapShape(10, 0, 1, 0), 7, &f.error));
  f.board.writes.clear();
  EXPECT_FALSE(f.device->issue(memcpyWord(false, 0, 10), 8, &f.error));
  EXPECT_EQ(f.error, "instruction 8: MEMCPY shape has 0 words per row");
  EXPECT_TRUE(f.board.writes.empty());
  // Host to host is not a route (docs/isa-semantics.md section 9).
  uint64_t both = word(isa::Instruction(isa::Opcode::Memcpy)
                           .set(isa::Field::Memcpy_from_device, 1)
                           .set(isa::Field::Memcpy_to_device, 1)
                           .set(isa::Field::Memcpy_shape_ptr_addr, 9));
  EXPECT_FALSE(f.device->issue(both, 9, &f.error));
  EXPECT_EQ(f.error, "instruction 9: host-to-host MEMCPY is not supported");
  EXPECT_TRUE(f.board.writes.empty());
}

TEST(Kv260Device, WeightsAreStagedBeforeTheGemv) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> record(100);
  for (size_t i = 0; i < record.size(); ++i)
    record[i] = uint8_t(i * 7 + 1);
  f.device->pushWeights(record.data(), record.size());
  uint64_t gemv = word(isa::Instruction(isa::Opcode::Gemv));
  ASSERT_TRUE(f.device->issue(gemv, 0, &f.error)) << f.error;
  // The 1 KiB window rounds up to a 4 KiB page: staging starts at 4096.
  EXPECT_EQ(std::vector<uint8_t>(f.memory.bytes.begin() + 4096,
                                 f.memory.bytes.begin() + 4196),
            record);
  std::vector<Write> expected = {{0x020, uint32_t(kPhys + 4096)},
                                 {0x024, uint32_t((kPhys + 4096) >> 32)},
                                 {0x028, 100},
                                 {0x02C, 0}};
  for (const Write &w : issueWrites(gemv))
    expected.push_back(w);
  EXPECT_EQ(f.board.writes, expected);
  EXPECT_TRUE(f.device->finishSegment(&f.error)) << f.error;
}

TEST(Kv260Device, EveryQueuedRecordIsStreamedInOrder) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  // The second record fills the staging area exactly: allowed.
  std::vector<uint8_t> first(48, 0xAA), second(8192 - 4096, 0x55);
  f.device->pushWeights(first.data(), first.size());
  f.device->pushWeights(second.data(), second.size());
  f.board.statusReads = 0;
  uint64_t gemm = word(isa::Instruction(isa::Opcode::Gemm));
  ASSERT_TRUE(f.device->issue(gemm, 0, &f.error)) << f.error;
  const uint32_t staging = uint32_t(kPhys + 4096);
  std::vector<Write> expected = {
      {0x020, staging}, {0x024, uint32_t((kPhys + 4096) >> 32)},
      {0x028, 48},      {0x02C, 0},
      {0x020, staging}, {0x024, uint32_t((kPhys + 4096) >> 32)},
      {0x028, 4096},    {0x02C, 0}};
  for (const Write &w : issueWrites(gemm))
    expected.push_back(w);
  EXPECT_EQ(f.board.writes, expected);
  // The staging bytes are reused only after the board went idle.
  EXPECT_EQ(f.board.statusReads, 2u);
  EXPECT_EQ(f.memory.bytes[4096], 0x55);
  EXPECT_EQ(f.memory.bytes[8191], 0x55);
  // Consumed: a second GEMM streams nothing and the segment ends cleanly.
  f.board.writes.clear();
  ASSERT_TRUE(f.device->issue(gemm, 1, &f.error)) << f.error;
  EXPECT_EQ(f.board.writes, issueWrites(gemm));
  EXPECT_TRUE(f.device->finishSegment(&f.error)) << f.error;
}

TEST(Kv260Device, ResidentRecordsStreamFromWhereTheyLie) {
  // 4 KiB window page, 4 KiB staging, then the 8 KiB section at the end.
  Fixture f(20480);
  ASSERT_NE(f.device, nullptr);
  // The section is the start of a larger block, so that the record below
  // that reaches past the section's end is still memory of its owner.
  constexpr size_t kSectionBytes = 8192;
  std::vector<uint8_t> section(kSectionBytes + 512);
  for (size_t i = 0; i < section.size(); ++i)
    section[i] = uint8_t(i * 13 + 5);
  ASSERT_TRUE(
      f.device->keepWeightsResident(section.data(), kSectionBytes, &f.error))
      << f.error;
  EXPECT_EQ(
      std::vector<uint8_t>(f.memory.bytes.begin() + 12288,
                           f.memory.bytes.end()),
      std::vector<uint8_t>(section.begin(), section.begin() + kSectionBytes));
  // A record inside the section: its address in the buffer, nothing copied.
  f.board.writes.clear();
  std::vector<uint8_t> staging(f.memory.bytes.begin() + 4096,
                               f.memory.bytes.begin() + 8192);
  f.device->pushWeights(section.data() + 1000, 300);
  uint64_t gemv = word(isa::Instruction(isa::Opcode::Gemv));
  ASSERT_TRUE(f.device->issue(gemv, 0, &f.error)) << f.error;
  const uint64_t at = kPhys + 12288 + 1000;
  std::vector<Write> expected = {{0x020, uint32_t(at)},
                                 {0x024, uint32_t(at >> 32)},
                                 {0x028, 300},
                                 {0x02C, 0}};
  for (const Write &w : issueWrites(gemv))
    expected.push_back(w);
  EXPECT_EQ(f.board.writes, expected);
  EXPECT_EQ(std::vector<uint8_t>(f.memory.bytes.begin() + 4096,
                                 f.memory.bytes.begin() + 8192),
            staging);
  // A record made at run time is still staged, before the section.
  f.board.writes.clear();
  std::vector<uint8_t> scores(64, 0x77);
  f.device->pushWeights(scores.data(), scores.size());
  ASSERT_TRUE(f.device->issue(gemv, 1, &f.error)) << f.error;
  EXPECT_EQ(f.board.writes[0], (Write{0x020, uint32_t(kPhys + 4096)}));
  EXPECT_EQ(f.memory.bytes[4096], 0x77);
  // A record reaching past the section's end is not taken for resident.
  f.board.writes.clear();
  f.device->pushWeights(section.data() + 8000, 300);
  ASSERT_TRUE(f.device->issue(gemv, 2, &f.error)) << f.error;
  EXPECT_EQ(f.board.writes[0], (Write{0x020, uint32_t(kPhys + 4096)}));
  EXPECT_TRUE(f.device->finishSegment(&f.error)) << f.error;
}

TEST(Kv260Device, ASectionTooBigForTheBufferIsRefusedAtOpen) {
  Fixture f(16384);
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> section(12288);
  EXPECT_FALSE(f.device->keepWeightsResident(section.data(), section.size(),
                                             &f.error));
  EXPECT_NE(f.error.find("the weights section (0.0 MiB) does not fit the DMA "
                         "buffer"),
            std::string::npos)
      << f.error;
  EXPECT_NE(f.error.find("configure u-dma-buf with at least 1 MiB"),
            std::string::npos)
      << f.error;
}

TEST(Kv260Device, WeightStreamErrors) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> big(8192 - 4096 + 1);
  f.device->pushWeights(big.data(), big.size());
  EXPECT_FALSE(f.device->issue(word(isa::Instruction(isa::Opcode::Gemm)), 2,
                               &f.error));
  EXPECT_NE(f.error.find("a weight record of 4097 bytes exceeds the DMA "
                         "staging area of 4096 bytes"),
            std::string::npos)
      << f.error;

  Fixture g;
  std::vector<uint8_t> small(16);
  g.device->pushWeights(small.data(), small.size());
  EXPECT_FALSE(g.device->finishSegment(&g.error));
  EXPECT_NE(g.error.find("1 weight records were queued"), std::string::npos)
      << g.error;
}

TEST(Kv260Device, StatusProtocol) {
  Fixture busy(8192, 5);
  ASSERT_NE(busy.device, nullptr);
  busy.board.statusAfterScript = kv260::kStatusBusy;
  busy.board.statusReads = 0;
  EXPECT_FALSE(busy.device->sync(&busy.error));
  EXPECT_NE(busy.error.find("timed out"), std::string::npos) << busy.error;
  EXPECT_EQ(busy.board.statusReads, 5u);

  Fixture slow;
  slow.board.statusScript = {kv260::kStatusBusy, kv260::kStatusBusy, 0};
  EXPECT_TRUE(slow.device->sync(&slow.error)) << slow.error;

  Fixture failed;
  failed.board.statusScript = {kv260::kStatusBusy | kv260::kStatusError};
  EXPECT_FALSE(failed.device->sync(&failed.error));
  EXPECT_NE(failed.error.find("the NPU reports an error (status 0x5)"),
            std::string::npos)
      << failed.error;
}

/// A throw-away sysfs tree.
using pccx::testsupport::FakeSysfs;

TEST(Kv260Device, FindsTheUioDevice) {
  FakeSysfs sys;
  sys.file("uio0/name", "axi-intc");
  sys.file("uio1/name", "pccx");
  sys.file("uio1/maps/map0/addr", "0xa0000000");
  sys.file("uio1/maps/map0/size", "0x10000");
  UioInfo info;
  std::string error;
  ASSERT_TRUE(findUio(sys.root, "pccx", &info, &error)) << error;
  EXPECT_EQ(info.device, "/dev/uio1");
  EXPECT_EQ(info.address, 0xa0000000ull);
  EXPECT_EQ(info.size, 0x10000ull);

  EXPECT_FALSE(findUio(sys.root, "npu", &info, &error));
  EXPECT_NE(error.find("no UIO device named 'npu'"), std::string::npos);
  EXPECT_NE(error.find("found: uio0 (axi-intc), uio1 (pccx)"),
            std::string::npos)
      << error;

  EXPECT_FALSE(findUio(sys.root + "/absent", "pccx", &info, &error));
  EXPECT_NE(error.find("is the UIO driver loaded"), std::string::npos) << error;
}

TEST(Kv260Device, UioWithoutMapIsReported) {
  FakeSysfs sys;
  sys.file("uio0/name", "pccx");
  UioInfo info;
  std::string error;
  EXPECT_FALSE(findUio(sys.root, "pccx", &info, &error));
  EXPECT_NE(error.find("map0 has no readable addr/size"), std::string::npos)
      << error;
}

} // namespace
