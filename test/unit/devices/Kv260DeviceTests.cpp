//===- Kv260DeviceTests.cpp - the KV260 driver against a fake board -------===//
//
// A fake board models the overlay's host protocol as Kv260Protocol.h states
// it: the NPU page (an instruction FIFO written with 64-bit stores, a status
// FIFO every read pops) and six DataMover command/status pages whose
// commands move bytes between the fake DMA buffer and the NPU's streams,
// taking a few FLAGS reads each, and answer with 8-bit statuses. Errors,
// stuck channels, full FIFOs and a silent bus are injected per test.
//
//===----------------------------------------------------------------------===//

#include "runtime/devices/Devices.h"
#include "runtime/devices/Kv260Device.h"
#include "runtime/devices/Kv260Protocol.h"
#include "runtime/devices/SimDevice.h"
#include "runtime/prof/Machines.h"
#include "runtime/prof/Profile.h"

#include "hw/isa/Isa.h"
#include "hw/machine/MachineModel.h"
#include "hw/numerics/HalfFloat.h"
#include "test/unit/devices/FakeDmaHeap.h"
#include "test/unit/devices/FakeSysfs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
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
using kv260::Channel;

namespace {

constexpr uint64_t kPhys = 0x40000000ull;
/// The fixture's zero region, right after its 1 KiB host window: where
/// every hp1 command of a GEMM reads.
constexpr uint64_t kZeroBytes = 1024;
constexpr uint64_t kZeros = kPhys + 1024;

/// What reached the board, in order: instruction words and DataMover
/// commands as the fake decoded them.
struct Event {
  bool instruction = false;
  uint64_t word = 0;
  Channel channel = Channel::Hp0;
  uint32_t address = 0, bytes = 0;
  uint8_t tag = 0;
  bool eof = false;
  uint32_t attributes = 0; ///< xUSER << 4 | xCACHE
  bool operator==(const Event &o) const {
    return instruction == o.instruction && word == o.word &&
           (instruction || (channel == o.channel && address == o.address &&
                            bytes == o.bytes && tag == o.tag && eof == o.eof));
  }
};
std::ostream &operator<<(std::ostream &os, const Event &e) {
  if (e.instruction)
    return os << "word 0x" << std::hex << e.word << std::dec;
  return os << kv260::info(e.channel).name << " 0x" << std::hex << e.address
            << std::dec << "+" << e.bytes << " tag " << int(e.tag)
            << (e.eof ? " eof" : "");
}
Event instruction(uint64_t w) {
  Event e;
  e.instruction = true;
  e.word = w;
  return e;
}
Event command(Channel c, uint64_t address, uint32_t bytes, uint8_t tag,
              bool eof = true) {
  Event e;
  e.channel = c;
  e.address = uint32_t(address);
  e.bytes = bytes;
  e.tag = tag;
  e.eof = eof;
  return e;
}

struct Memory {
  std::vector<uint8_t> bytes;
  /// (offset, bytes) of every flush / invalidate, in order.
  std::vector<std::pair<size_t, size_t>> flushes, invalidates;
  /// The driver's bulk writes (DmaBuffer::write / fill): (offset, bytes),
  /// and the stores they made that arm64 Device memory would fault on.
  std::vector<std::pair<size_t, size_t>> writes;
  std::vector<std::string> badStores;
};

/// Stores into the fake buffer that check what arm64 Device memory (the
/// driver's uncached mapping) accepts: 1, 4 or 8 bytes, naturally aligned.
Memory *checkedMemory = nullptr;
struct CheckingStores {
  static void check(uint8_t *at, size_t size) {
    if (reinterpret_cast<uintptr_t>(at) % size)
      checkedMemory->badStores.push_back(
          std::to_string(size) + "-byte store at buffer offset " +
          std::to_string(at - checkedMemory->bytes.data()));
  }
  static void store8(uint8_t *at, uint8_t v) { *at = v; }
  static void store32(uint8_t *at, uint32_t v) {
    check(at, 4);
    std::memcpy(at, &v, 4);
  }
  static void store64(uint8_t *at, uint64_t v) {
    check(at, 8);
    std::memcpy(at, &v, 8);
  }
};

struct FakeChannel {
  kv260::CommandWords staged;
  struct Pending {
    kv260::Command command;
    bool malformed;
    unsigned readsLeft;
  };
  std::deque<Pending> commands;
  std::deque<uint8_t> statuses;
  uint32_t sticky = 0;
  bool stuck = false;      ///< completes nothing
  bool reportFull = false; ///< FLAGS claims the command FIFO is full
  uint8_t nextErrors = 0;  ///< error bits of the next status (then cleared)
  uint8_t tagSkew = 0;     ///< added to every status tag
  bool splitStatus = false; ///< the next command's status words differ
  size_t maxOutstanding = 0;
  std::vector<uint8_t> streamed; ///< MM2S: bytes delivered to the NPU
  /// HP lanes: streamed bytes the NPU has taken out of the weight FIFO,
  /// where the record of the next GEMM starts, and whether the running
  /// GEMM's record has ended on this lane.
  size_t consumed = 0, recordStart = 0;
  bool laneEnded = false;
  /// Host-window channels: MEMCPY words stored whose command has not come
  /// yet, and whether a transfer no MEMCPY waited for has poisoned the
  /// channel (its next transfers fail until the bitstream is reloaded).
  unsigned memcpysWaiting = 0;
  bool poisoned = false;
  std::deque<uint8_t> produce;   ///< S2MM: bytes the NPU sends
};

struct Board {
  Memory *memory = nullptr;
  std::vector<Event> events;
  std::vector<uint32_t> strayWrites; ///< NPU-page writes other than 0x000
  std::array<FakeChannel, kv260::kChannelCount> channels;
  std::deque<uint32_t> statusScript; ///< consumed one per status read
  uint32_t statusAfterScript = kv260::kStatusDone; ///< idle
  /// Instead of statusAfterScript, the status as the board logs show it:
  /// DONE after a MEMSET, CVO or GEMM, BUSY (and no DONE) after a MEMCPY,
  /// and debug bits 2-15 that mean something else in every image.
  bool siliconStatus = false;
  uint32_t debugBits = 0xa4;
  bool lastWasMemcpy = false;
  size_t statusReads = 0;
  bool silent = false;  ///< every read returns all ones
  unsigned latency = 2; ///< FLAGS reads a command takes

  /// When set, the NPU: instruction words run on this simulator of the
  /// v002-rtl target, which takes its MEMCPY and weight bytes from the
  /// DataMover streams and gives its stores to the S2MM channel.
  SimDevice *npu = nullptr;
  std::string npuError;
  std::vector<uint8_t> record; ///< the weights of the GEMM running

  /// Bytes the weight FIFO behind each HP port holds: a command on an HP
  /// page completes only once its bytes fit, and the NPU empties the FIFO
  /// only while a GEMM it has been given runs (back-pressure).
  size_t weightFifoBytes = size_t(machine::weight_fifo_bytes_per_port);
  /// Instruction words stored and not yet run: a GEMM runs once both of
  /// its lanes have delivered their record (an EOF command each).
  std::deque<uint64_t> npuQueue;

  FakeChannel &channel(Channel c) { return channels[unsigned(c)]; }
  /// v002-rtl: (1, 0) loads from the host, every other pair stores to it.
  static Channel memcpyChannel(const isa::Instruction &inst) {
    return inst.get(isa::Field::Memcpy_from_device) &&
                   !inst.get(isa::Field::Memcpy_to_device)
               ? Channel::AcpFmap
               : Channel::AcpResult;
  }
  static bool isWeightPort(Channel c) { return unsigned(c) < 4; }

  /// Whether the status FIFO of `c` has room for a command's words: a
  /// DataMover whose status stream is not taken stalls.
  bool statusRoom(Channel c) {
    return channel(c).statuses.size() + kv260::statusWordsPerCommand(c) <=
           kv260::kPageFifoDepth;
  }

  /// Whether the oldest command of `c` can complete now.
  bool canComplete(Channel c) {
    FakeChannel &ch = channel(c);
    if (ch.commands.empty() || !statusRoom(c))
      return false;
    if (!isWeightPort(c) || ch.commands.front().malformed)
      return true;
    return ch.streamed.size() - ch.consumed +
               ch.commands.front().command.bytes <=
           weightFifoBytes;
  }

  /// The bytes an instruction consumes: every command queued on `c`, done
  /// now, as the NPU pulls the stream.
  std::vector<uint8_t> pull(Channel c) {
    FakeChannel &ch = channel(c);
    const size_t before = ch.streamed.size();
    while (!ch.commands.empty())
      complete(c);
    return std::vector<uint8_t>(ch.streamed.begin() + before,
                                ch.streamed.end());
  }

  /// A running GEMM drains lane `c` up to the end of its record; true once
  /// the lane's EOF command has completed.
  bool drainLane(Channel c) {
    FakeChannel &ch = channel(c);
    while (!ch.stuck && !ch.laneEnded && !ch.commands.empty() &&
           statusRoom(c)) {
      const bool eof = ch.commands.front().command.eof;
      complete(c);
      ch.consumed = ch.streamed.size();
      ch.laneEnded = eof;
    }
    return ch.laneEnded;
  }

  void onInstruction(uint64_t w) {
    events.push_back(instruction(w));
    isa::Instruction decoded;
    std::string why;
    lastWasMemcpy =
        isa::decode(w, decoded, &why) && decoded.opcode == isa::Opcode::Memcpy;
    if (lastWasMemcpy)
      ++channel(memcpyChannel(decoded)).memcpysWaiting;
    npuQueue.push_back(w);
    runNpu();
  }

  /// Runs the stored words in order while they can run.
  void runNpu() {
    while (!npuQueue.empty()) {
      const uint64_t w = npuQueue.front();
      isa::Instruction inst;
      const bool valid = isa::decode(w, inst, &npuError);
      if (valid && inst.opcode == isa::Opcode::Gemm) {
        // The RTL's GEMM takes a beat from HP0 and HP1 together and
        // multiplies each activation by the sum of the two beats' weights
        // (docs/kv260.md §5.4): a lane whose beats run out leaves it
        // waiting, and the record it computes with is the two streams
        // added weight by weight.
        FakeChannel &upper = channel(Channel::Hp0),
                    &lower = channel(Channel::Hp1);
        const size_t from[2] = {upper.recordStart, lower.recordStart};
        const bool a = drainLane(Channel::Hp0);
        const bool b = drainLane(Channel::Hp1);
        if (!a || !b)
          return; // the rest of the record is not queued yet
        const size_t bytes[2] = {upper.streamed.size() - from[0],
                                 lower.streamed.size() - from[1]};
        if ((bytes[0] + 15) / 16 != (bytes[1] + 15) / 16) {
          npuError = "the GEMM's lanes delivered " +
                     std::to_string((bytes[0] + 15) / 16) + " and " +
                     std::to_string((bytes[1] + 15) / 16) +
                     " beats: the engine waits for the missing pairs";
          return;
        }
        if (!addLanes(upper.streamed.data() + from[0], bytes[0],
                      lower.streamed.data() + from[1], bytes[1], &record)) {
          npuError = "the GEMM's lanes add up to weights beyond INT4, "
                     "which no record holds";
          return;
        }
        for (FakeChannel *ch : {&upper, &lower}) {
          ch->laneEnded = false;
          ch->recordStart = ch->streamed.size();
        }
      }
      if (valid && inst.opcode == isa::Opcode::Memcpy &&
          channel(memcpyChannel(inst)).commands.empty() &&
          channel(memcpyChannel(inst)).memcpysWaiting > 0)
        return; // the MEMCPY waits for its DataMover command
      npuQueue.pop_front();
      if (valid && npu)
        runOnSimulator(w, inst);
    }
  }

  /// The weights the engine computes with: each INT4 of one lane's bytes
  /// plus the one at the same place in the other's. False when a sum
  /// leaves -8 ... 7 (the RTL keeps the fifth bit; a record cannot).
  static bool addLanes(const uint8_t *a, size_t aBytes, const uint8_t *b,
                       size_t bBytes, std::vector<uint8_t> *out) {
    out->assign(std::max(aBytes, bBytes), 0);
    bool fits = true;
    for (size_t i = 0; i < out->size(); ++i) {
      const unsigned x = i < aBytes ? a[i] : 0, y = i < bBytes ? b[i] : 0;
      uint8_t sum = 0;
      for (unsigned shift : {0u, 4u}) {
        const int nibble =
            int(((x >> shift) & 15) ^ 8) - 8 + int(((y >> shift) & 15) ^ 8) - 8;
        fits = fits && nibble >= -8 && nibble <= 7;
        sum |= uint8_t((nibble & 15) << shift);
      }
      (*out)[i] = sum;
    }
    return fits;
  }

  void runOnSimulator(uint64_t w, const isa::Instruction &inst) {
    const bool memcpy = inst.opcode == isa::Opcode::Memcpy;
    const bool load = memcpy && inst.get(isa::Field::Memcpy_from_device) &&
                      !inst.get(isa::Field::Memcpy_to_device);
    if (load) {
      std::vector<uint8_t> bytes = pull(Channel::AcpFmap);
      for (size_t i = 0; i + 1 < bytes.size(); i += 2)
        npu->window()[i / 2] =
            hw::bf16ToFloat(uint16_t(bytes[i] | bytes[i + 1] << 8));
    }
    if (inst.opcode == isa::Opcode::Gemm)
      // The simulator reads the record when the GEMM runs: keep it here.
      npu->pushHostWeights(record.data(), record.size());
    if (!npu->issue(w, events.size(), &npuError) || !npu->sync(&npuError))
      return;
    if (memcpy && !load) {
      FakeChannel &ch = channel(Channel::AcpResult);
      uint32_t bytes = 0;
      for (const auto &p : ch.commands)
        bytes += p.command.bytes;
      for (uint32_t i = 0; i < bytes / 2; ++i) {
        const uint16_t bf = hw::floatToBf16(npu->window()[i]);
        ch.produce.push_back(uint8_t(bf));
        ch.produce.push_back(uint8_t(bf >> 8));
      }
      pull(Channel::AcpResult);
    }
  }

  void complete(Channel c) {
    FakeChannel &ch = channel(c);
    auto p = ch.commands.front();
    ch.commands.pop_front();
    uint8_t status = kv260::kStsOkay;
    const uint64_t begin = uint64_t(p.command.address) - kPhys;
    if (p.malformed) {
      status = kv260::kStsInternalError;
    } else if (p.command.address < kPhys ||
               begin + p.command.bytes > memory->bytes.size()) {
      status = kv260::kStsDecodeError;
    } else if (kv260::info(c).toMemory) {
      for (uint32_t i = 0; i < p.command.bytes; ++i) {
        memory->bytes[begin + i] = ch.produce.empty() ? 0 : ch.produce.front();
        if (!ch.produce.empty())
          ch.produce.pop_front();
      }
    } else {
      ch.streamed.insert(ch.streamed.end(), memory->bytes.begin() + begin,
                         memory->bytes.begin() + begin + p.command.bytes);
    }
    if (ch.nextErrors) {
      status = ch.nextErrors;
      ch.nextErrors = 0;
    }
    status |= (p.command.tag + ch.tagSkew) & kv260::kStsTagMask;
    // An HP page returns three identical words per command.
    for (unsigned n = 0; n < kv260::statusWordsPerCommand(c); ++n) {
      if (ch.statuses.size() >= kv260::kPageFifoDepth)
        ch.sticky |= 0x20; // a status was lost
      else
        ch.statuses.push_back(n == 1 && ch.splitStatus
                                  ? uint8_t(status & ~kv260::kStsOkay)
                                  : status);
    }
    ch.splitStatus = false;
  }

  uint32_t readPage(Channel c, uint32_t reg) {
    FakeChannel &ch = channel(c);
    if (reg == kv260::kPageFlags) {
      runNpu(); // a GEMM stalled on a full status FIFO drains on
      if (!ch.stuck && canComplete(c) &&
          (ch.commands.front().readsLeft == 0 ||
           --ch.commands.front().readsLeft == 0))
        complete(c);
      uint32_t flags = ch.sticky;
      if (ch.commands.empty())
        flags |= kv260::kFlagCmdEmpty;
      if (ch.commands.size() >= kv260::kPageFifoDepth || ch.reportFull)
        flags |= kv260::kFlagCmdFull;
      if (ch.statuses.empty())
        flags |= kv260::kFlagStatusEmpty;
      if (ch.statuses.size() >= kv260::kPageFifoDepth)
        flags |= kv260::kFlagStatusFull;
      return flags;
    }
    if (reg == kv260::kPageStatusPop) {
      if (ch.statuses.empty())
        return 0;
      uint8_t s = ch.statuses.front();
      ch.statuses.pop_front();
      return s;
    }
    if (reg == kv260::kPageCmdLevel)
      return uint32_t(ch.commands.size());
    if (reg == kv260::kPageStatusLevel)
      return uint32_t(ch.statuses.size());
    return 0;
  }

  void writePage(Channel c, uint32_t reg, uint32_t value) {
    FakeChannel &ch = channel(c);
    switch (reg) {
    case kv260::kPageCmdLow:
      ch.staged.low = value;
      return;
    case kv260::kPageCmdHigh:
      ch.staged.high = value;
      return;
    case kv260::kPageCmdExt:
      ch.staged.ext = value;
      return;
    case kv260::kPageErrorClear:
      ch.sticky &= ~value;
      return;
    case kv260::kPageCmdPush: {
      if (ch.commands.size() >= kv260::kPageFifoDepth) {
        ch.sticky |= 0x10; // command overflow: dropped
        return;
      }
      FakeChannel::Pending p{};
      std::string why;
      p.malformed = !kv260::unpack(ch.staged, &p.command, &why);
      p.readsLeft = latency;
      ch.commands.push_back(p);
      ch.maxOutstanding = std::max(ch.maxOutstanding, ch.commands.size());
      events.push_back(command(c, p.command.address, p.command.bytes,
                               p.command.tag, p.command.eof));
      events.back().attributes = p.command.attributes;
      if (!isWeightPort(c)) {
        if (ch.poisoned)
          p.malformed = true; // fails: see complete()
        if (ch.memcpysWaiting > 0)
          --ch.memcpysWaiting;
        else
          ch.poisoned = true;
        ch.commands.back().malformed = p.malformed;
      }
      runNpu(); // a GEMM waiting for the rest of its record
      return;
    }
    }
  }
};

class FakeRegisters : public RegisterWindow {
public:
  FakeRegisters(Board &board, size_t size) : board_(board), size_(size) {}
  uint32_t read32(uint32_t offset) override {
    if (board_.silent)
      return 0xffffffffu;
    if (offset < kv260::kControlPageBytes) {
      ++board_.statusReads;
      if (board_.statusScript.empty() && board_.siliconStatus)
        return board_.debugBits |
               (board_.lastWasMemcpy ? kv260::kStatusBusy : kv260::kStatusDone);
      if (board_.statusScript.empty())
        return board_.statusAfterScript;
      uint32_t s = board_.statusScript.front();
      board_.statusScript.pop_front();
      return s;
    }
    return board_.readPage(channelAt(offset), offset % 0x1000);
  }
  void write32(uint32_t offset, uint32_t value) override {
    if (offset < kv260::kControlPageBytes) {
      // A 32-bit store to the instruction register would push half a word.
      board_.strayWrites.push_back(offset);
      return;
    }
    board_.writePage(channelAt(offset), offset % 0x1000, value);
  }
  void write64(uint32_t offset, uint64_t value) override {
    if (offset == kv260::kRegInstruction)
      board_.onInstruction(value);
    else
      board_.strayWrites.push_back(offset);
  }
  size_t size() const override { return size_; }

private:
  static Channel channelAt(uint32_t offset) {
    return Channel(offset / 0x1000 - 1);
  }
  Board &board_;
  size_t size_;
};

class FakeDma : public DmaBuffer {
public:
  FakeDma(Memory &m, uint64_t phys) : m_(m), phys_(phys) {}
  uint8_t *data() override { return m_.bytes.data(); }
  uint64_t physical() const override { return phys_; }
  size_t size() const override { return m_.bytes.size(); }
  bool flush(size_t offset, size_t bytes, std::string *) override {
    m_.flushes.push_back({offset, bytes});
    return true;
  }
  bool invalidate(size_t offset, size_t bytes, std::string *) override {
    m_.invalidates.push_back({offset, bytes});
    return true;
  }
  void write(size_t offset, const uint8_t *src, size_t bytes) override {
    m_.writes.push_back({offset, bytes});
    checkedMemory = &m_;
    hw::copyToDeviceMemory<CheckingStores>(data() + offset, src, bytes);
  }
  void fill(size_t offset, uint8_t value, size_t bytes) override {
    m_.writes.push_back({offset, bytes});
    checkedMemory = &m_;
    hw::fillDeviceMemory<CheckingStores>(data() + offset, value, bytes);
  }

private:
  Memory &m_;
  uint64_t phys_;
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

const uint64_t kGemm = word(isa::Instruction(isa::Opcode::Gemm));

/// A device with a 64-word window (1 KiB, then 1 KiB of zeros, staging
/// from 4096) and a DMA buffer of `dmaBytes`.
struct Fixture {
  Board board;
  Memory memory;
  std::unique_ptr<Kv260Device> device;
  std::string error;

  explicit Fixture(size_t dmaBytes = 8192, uint64_t pollLimit = 100,
                   uint64_t maxCommandBytes = kv260::kChunkBytes) {
    memory.bytes.assign(dmaBytes, 0);
    board.memory = &memory;
    Kv260Options options;
    options.windowWords = 64;
    options.zeroBytes = kZeroBytes;
    options.pollLimit = pollLimit;
    options.minStagingBytes = 4096;
    options.maxCommandBytes = maxCommandBytes;
    device = Kv260Device::create(
        std::make_unique<FakeRegisters>(board, kv260::kMapBytes),
        std::make_unique<FakeDma>(memory, kPhys), options, &error);
    board.events.clear();
    board.statusReads = 0;
    // The zero region's fill and flush at open.
    memory.writes.clear();
    memory.flushes.clear();
  }
  uint16_t lane(size_t index) const {
    uint16_t v;
    std::memcpy(&v, memory.bytes.data() + 2 * index, 2);
    return v;
  }
  bool issueAll(const std::vector<uint64_t> &words) {
    for (size_t i = 0; i < words.size(); ++i)
      if (!device->issue(words[i], i, &error))
        return false;
    return true;
  }
};

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

//===-- The command and status formats ------------------------------------===//

TEST(Kv260Protocol, CommandPacksAsTheDataMoverReadsIt) {
  kv260::CommandWords w;
  std::string why;
  ASSERT_TRUE(kv260::pack(0x40001000, 0x200, 9, true, &w, &why)) << why;
  EXPECT_EQ(w.low, 0x200u | (1u << 23) | (1u << 30));
  EXPECT_EQ(w.high, 0x40001000u);
  // CMD_EXT: the tag in 3:0, xCACHE = xUSER = 0xF in 15:8.
  EXPECT_EQ(w.ext, 0xff09u);
  kv260::Command c;
  ASSERT_TRUE(kv260::unpack(w, &c, &why)) << why;
  EXPECT_EQ(c.address, 0x40001000u);
  EXPECT_EQ(c.bytes, 0x200u);
  EXPECT_EQ(c.tag, 9);
  EXPECT_EQ(c.attributes, 0xffu);
  EXPECT_TRUE(c.eof);
  ASSERT_TRUE(kv260::pack(0, 16, 0, false, &w, &why));
  EXPECT_EQ(w.low, 16u | (1u << 23));
}

TEST(Kv260Protocol, MalformedCommandsAreRefused) {
  kv260::CommandWords w;
  std::string why;
  EXPECT_FALSE(kv260::pack(kPhys, 0, 0, true, &w, &why));
  EXPECT_TRUE(contains(why, "moves 1 to 8388607 bytes, not 0")) << why;
  EXPECT_FALSE(
      kv260::pack(kPhys, kv260::kMaxCommandBytes + 1, 0, true, &w, &why));
  EXPECT_FALSE(kv260::pack(0xfffffff0ull, 32, 0, true, &w, &why));
  EXPECT_TRUE(contains(why, "beyond the DataMover's 32-bit address")) << why;
  EXPECT_FALSE(kv260::pack(kPhys, 16, 16, true, &w, &why));
  EXPECT_TRUE(contains(why, "4 bits")) << why;
  // What the DataMover answers with INTERR.
  kv260::Command c;
  EXPECT_FALSE(kv260::unpack({16, 0, 0}, &c, &why)); // FIXED burst
  EXPECT_FALSE(kv260::unpack({16 | (1u << 23) | (1u << 24), 0, 0}, &c, &why));
  EXPECT_FALSE(kv260::unpack({16 | (1u << 23), 0, 0x10}, &c, &why));
  EXPECT_FALSE(kv260::unpack({16 | (1u << 23), 0, 0x10000}, &c, &why));
  EXPECT_FALSE(kv260::unpack({1u << 23, 0, 0}, &c, &why));
  EXPECT_TRUE(contains(why, "0 bytes")) << why;
}

TEST(Kv260Protocol, StatusBitsAreNamed) {
  EXPECT_EQ(kv260::describeStatus(0x83), "OKAY");
  EXPECT_EQ(kv260::describeStatus(0x43).substr(0, 6), "SLVERR");
  EXPECT_EQ(kv260::describeStatus(0x23).substr(0, 6), "DECERR");
  EXPECT_EQ(kv260::describeStatus(0x13).substr(0, 6), "INTERR");
  EXPECT_EQ(kv260::describeStatus(0x03), "not OKAY");
}

//===-- Opening
//--------------------------------------------------------------===//

TEST(Kv260Device, CreateChecksSizesAndAddresses) {
  Board board;
  Memory memory;
  memory.bytes.assign(8192, 0);
  board.memory = &memory;
  std::string error;
  Kv260Options options;
  options.windowWords = 64;
  options.zeroBytes = kZeroBytes;
  EXPECT_EQ(Kv260Device::create(std::make_unique<FakeRegisters>(board, 0x1000),
                                std::make_unique<FakeDma>(memory, kPhys),
                                options, &error),
            nullptr);
  EXPECT_TRUE(contains(error, "smaller than the 0x7000 bytes")) << error;

  Memory tiny;
  tiny.bytes.assign(1024, 0);
  EXPECT_EQ(Kv260Device::create(
                std::make_unique<FakeRegisters>(board, kv260::kMapBytes),
                std::make_unique<FakeDma>(tiny, kPhys), options, &error),
            nullptr);
  EXPECT_TRUE(contains(error, "must hold the 1024-byte host window")) << error;

  EXPECT_EQ(Kv260Device::create(
                std::make_unique<FakeRegisters>(board, kv260::kMapBytes),
                std::make_unique<FakeDma>(memory, 0x123456000ull), options,
                &error),
            nullptr);
  EXPECT_TRUE(contains(error, "beyond the DataMovers' 32-bit addresses"))
      << error;

  options.maxCommandBytes = 24;
  EXPECT_EQ(Kv260Device::create(
                std::make_unique<FakeRegisters>(board, kv260::kMapBytes),
                std::make_unique<FakeDma>(memory, kPhys), options, &error),
            nullptr);
  EXPECT_TRUE(contains(error, "multiple of 16 bytes")) << error;
}

TEST(Kv260Device, CreateClearsWhatAnEarlierRunLeft) {
  Board board;
  Memory memory;
  memory.bytes.assign(8192, 0);
  board.memory = &memory;
  board.channel(Channel::Hp1).statuses = {0x83, 0x84};
  board.channel(Channel::AcpResult).sticky = 0x30;
  std::string error;
  Kv260Options options;
  options.windowWords = 64;
  options.zeroBytes = kZeroBytes;
  auto device = Kv260Device::create(
      std::make_unique<FakeRegisters>(board, kv260::kMapBytes),
      std::make_unique<FakeDma>(memory, kPhys), options, &error);
  ASSERT_NE(device, nullptr) << error;
  EXPECT_TRUE(board.channel(Channel::Hp1).statuses.empty());
  EXPECT_EQ(board.channel(Channel::AcpResult).sticky, 0u);
  EXPECT_TRUE(board.events.empty());

  // Commands still queued from before: the channel is not ours to use.
  Board busy;
  busy.memory = &memory;
  busy.channel(Channel::Hp2).commands.push_back({{}, false, 1000});
  busy.channel(Channel::Hp2).stuck = true;
  EXPECT_EQ(Kv260Device::create(
                std::make_unique<FakeRegisters>(busy, kv260::kMapBytes),
                std::make_unique<FakeDma>(memory, kPhys), options, &error),
            nullptr);
  EXPECT_TRUE(contains(error, "DataMover hp2 (GEMV weights, lane A): still "
                              "holds commands of an earlier run"))
      << error;
}

TEST(Kv260Device, ASilentBusIsReportedAtOpen) {
  Board board;
  Memory memory;
  memory.bytes.assign(8192, 0);
  board.memory = &memory;
  board.silent = true;
  std::string error;
  Kv260Options options;
  options.windowWords = 64;
  options.zeroBytes = kZeroBytes;
  EXPECT_EQ(Kv260Device::create(
                std::make_unique<FakeRegisters>(board, kv260::kMapBytes),
                std::make_unique<FakeDma>(memory, kPhys), options, &error),
            nullptr);
  EXPECT_TRUE(contains(error, "nothing answers at the overlay's control page"))
      << error;
}

TEST(Kv260Device, OnlyBundlesForTheRtlTargetAreOpened) {
  std::string error;
  EXPECT_EQ(openDevice("kv260", {}, machine::Target::V002, &error), nullptr);
  EXPECT_TRUE(contains(error, "kv260: the overlay runs the v002 RTL's "
                              "conventions; this bundle is for target v002. "
                              "Gemma 3n runs on the board's CPU today"))
      << error;
  EXPECT_TRUE(contains(error, "without --device kv260")) << error;
  EXPECT_EQ(openDevice("kv260", {{"uio-name", "pccx-absent-device"}},
                       machine::Target::V002Rtl, &error),
            nullptr);
  // Past the target check: the board itself is what is missing here, and
  // the refusal names the CPU path.
  EXPECT_FALSE(contains(error, "this bundle is for target")) << error;
  EXPECT_TRUE(contains(error, "without --device kv260")) << error;
}

//===-- Instructions
//---------------------------------------------------------===//

TEST(Kv260Device, AnInstructionIsOne64BitStoreWithoutAKick) {
  Fixture f;
  ASSERT_NE(f.device, nullptr) << f.error;
  uint64_t w = fmapShape(3, 1, 2, 3);
  ASSERT_TRUE(f.device->issue(w, 0, &f.error)) << f.error;
  EXPECT_EQ(f.board.events, std::vector<Event>{instruction(w)});
  EXPECT_TRUE(f.board.strayWrites.empty());
}

TEST(Kv260Device, InvalidWordNeverReachesTheBoard) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  EXPECT_FALSE(f.device->issue(0xF000000000000000ull, 7, &f.error));
  EXPECT_TRUE(contains(f.error, "instruction 7:")) << f.error;
  // Reserved bits set: refused before the shape mirror changes.
  uint64_t bad = fmapShape(5, 4, 1, 1) | 1;
  EXPECT_FALSE(f.device->issue(bad, 8, &f.error));
  EXPECT_FALSE(f.device->issue(memcpyWord(true, 0, 5), 9, &f.error));
  EXPECT_TRUE(contains(f.error, "no MEMSET has set")) << f.error;
  EXPECT_TRUE(f.board.events.empty());
}

TEST(Kv260Device, GemvIsRefusedForWantOfAResultPath) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> record(32);
  f.device->pushHostWeights(record.data(), record.size());
  EXPECT_FALSE(
      f.device->issue(word(isa::Instruction(isa::Opcode::Gemv)), 4, &f.error));
  EXPECT_TRUE(contains(f.error, "instruction 4: the overlay cannot run it: "
                                "target v002-rtl has no GEMV result "
                                "write-back path"))
      << f.error;
  EXPECT_TRUE(f.board.events.empty());
}

//===-- Host-window transfers
//------------------------------------------------===//

TEST(Kv260Device, HostToDeviceCopyIsOnePageAtTheWindowBase) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  float *window = f.device->window();
  for (size_t i = 0; i < 64 * 8; ++i)
    window[i] = 1.0f + float(i) / 1024.0f;
  // a*b*c = 4*3*1 = 12 elements: 2 words. aux_addr never reaches the board.
  const uint64_t shape = fmapShape(2, 4, 3, 1), copy = memcpyWord(true, 9, 2);
  ASSERT_TRUE(f.issueAll({shape, copy})) << f.error;
  // The word first, then its command (Kv260TransferPlan.h).
  EXPECT_EQ(f.board.events,
            (std::vector<Event>{instruction(shape), instruction(copy),
                                command(Channel::AcpFmap, kPhys, 32, 0)}));
  for (size_t i = 0; i < 16; ++i)
    EXPECT_EQ(f.lane(i), hw::floatToBf16(window[i])) << i;
  EXPECT_EQ(f.lane(16), 0); // the third word is not converted
  // One cache command for exactly the converted words.
  ASSERT_EQ(f.memory.flushes.size(), 1u);
  EXPECT_EQ(f.memory.flushes[0], std::make_pair(size_t(0), size_t(32)));
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  // The DataMover took exactly the converted words.
  EXPECT_EQ(f.board.channel(Channel::AcpFmap).streamed,
            std::vector<uint8_t>(f.memory.bytes.begin(),
                                 f.memory.bytes.begin() + 32));
}

TEST(Kv260Device, DeviceToHostCopyArrivesAtSync) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  std::deque<uint8_t> &produce = f.board.channel(Channel::AcpResult).produce;
  for (size_t i = 0; i < 24; ++i) {
    uint16_t bf = hw::floatToBf16(float(i) - 3.5f);
    produce.push_back(uint8_t(bf));
    produce.push_back(uint8_t(bf >> 8));
  }
  // 3*1*8 = 24 elements: 3 words, to the host.
  const uint64_t shape = fmapShape(1, 3, 1, 8), copy = memcpyWord(false, 0, 1);
  ASSERT_TRUE(f.issueAll({shape, copy})) << f.error;
  EXPECT_EQ(f.board.events,
            (std::vector<Event>{instruction(shape), instruction(copy),
                                command(Channel::AcpResult, kPhys, 48, 0)}));
  EXPECT_EQ(f.device->window()[5], 0.0f); // not before the sync
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  for (size_t i = 0; i < 24; ++i)
    EXPECT_EQ(f.device->window()[i], float(i) - 3.5f) << i;
  EXPECT_EQ(f.device->window()[24], 0.0f);
  // One cache command for exactly the words the NPU wrote.
  ASSERT_EQ(f.memory.invalidates.size(), 1u);
  EXPECT_EQ(f.memory.invalidates[0], std::make_pair(size_t(0), size_t(48)));
  // A MEMCPY ends with no done pulse: its DataMover status is its
  // completion, and the NPU status is not read.
  EXPECT_EQ(f.board.statusReads, 0u);
}

// A DataMover transfer no MEMCPY waits for poisons the channel's next
// transfer on the board; the board software stores the MEMCPY word first.
// Two loads and two stores in a row: none fails (the driver that pushed
// the command before the word failed the second of each here).
TEST(Kv260Device, MemcpyWordsGoBeforeTheirCommands) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  const uint64_t shape = fmapShape(1, 8, 1, 1), load = memcpyWord(true, 0, 1),
                 store = memcpyWord(false, 0, 1);
  ASSERT_TRUE(f.issueAll({shape, load, store, load, store})) << f.error;
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
  EXPECT_FALSE(f.board.channel(Channel::AcpFmap).poisoned);
  EXPECT_FALSE(f.board.channel(Channel::AcpResult).poisoned);
  ASSERT_EQ(f.board.events.size(), 9u);
  for (size_t i = 1; i < 9; i += 2) {
    EXPECT_TRUE(f.board.events[i].instruction) << i;
    EXPECT_FALSE(f.board.events[i + 1].instruction) << i;
  }
}

TEST(Kv260Device, CopyLengthChecks) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  ASSERT_TRUE(f.issueAll({fmapShape(1, 0, 4, 4)})) << f.error;
  EXPECT_FALSE(f.device->issue(memcpyWord(true, 0, 1), 1, &f.error));
  EXPECT_TRUE(contains(f.error, "a*b*c = 0 elements")) << f.error;
  ASSERT_TRUE(f.issueAll({fmapShape(2, 65, 1, 8)}));
  EXPECT_FALSE(f.device->issue(memcpyWord(false, 0, 2), 1, &f.error));
  EXPECT_TRUE(contains(f.error, "MEMCPY moves 65 words, more than the 64-word "
                                "host window"))
      << f.error;
  ASSERT_TRUE(f.issueAll({fmapShape(3, 1024, 128, 1)}));
  EXPECT_FALSE(f.device->issue(memcpyWord(false, 0, 3), 1, &f.error));
  EXPECT_TRUE(contains(f.error, "the overlay moves 1 to 131064")) << f.error;
  EXPECT_EQ(f.board.events.size(), 3u); // the three MEMSETs only
}

//===-- Weight streams
//-------------------------------------------------------===//

// The RTL's GEMM adds its two lanes' weights: the record streams on hp0,
// hp1 streams as many bytes from the zero region.
TEST(Kv260Device, GemmRecordStreamsOnHp0BesideZerosOnHp1) {
  // 4 KiB window page, 4 KiB staging, then the 8 KiB section at the end.
  Fixture f(20480);
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> section(8192);
  for (size_t i = 0; i < section.size(); ++i)
    section[i] = uint8_t(i * 13 + 5);
  BufferId weights = 7;
  ASSERT_TRUE(f.device->registerWeights(section.data(), section.size(),
                                        &weights, &f.error))
      << f.error;
  EXPECT_EQ(weights, 0u);
  // 2500 bytes = 157 beats on each lane, in commands no longer than the
  // 1 KiB of zeros, which every hp1 command reads from its start.
  ASSERT_TRUE(f.device->pushWeights({weights, 1024, 2500}, nullptr, &f.error))
      << f.error;
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  const uint64_t at = kPhys + 12288 + 1024;
  EXPECT_EQ(f.board.events,
            (std::vector<Event>{
                command(Channel::Hp0, at, 1024, 0, false),
                command(Channel::Hp1, kZeros, 1024, 0, false),
                command(Channel::Hp0, at + 1024, 1024, 1, false),
                command(Channel::Hp1, kZeros, 1024, 1, false),
                instruction(kGemm), command(Channel::Hp0, at + 2048, 452, 2),
                command(Channel::Hp1, kZeros, 452, 2)}));
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
  EXPECT_EQ(
      f.board.channel(Channel::Hp0).streamed,
      std::vector<uint8_t>(section.begin() + 1024, section.begin() + 3524));
  EXPECT_EQ(f.board.channel(Channel::Hp1).streamed,
            std::vector<uint8_t>(2500, 0));
  // Nothing was staged.
  EXPECT_EQ(f.memory.bytes[4096], 0);
}

TEST(Kv260Device, LongRecordsAreChunkedAndTheFifosNeverOverflow) {
  // Commands of at most 32 bytes: a 640-byte record is 20 a lane. An HP
  // page returns three status words per command into its 8-word status
  // FIFO, so the driver keeps two commands a lane outstanding: the first 2
  // of each lane go before the word, the other 18 after it
  // (Kv260TransferPlan.h).
  Fixture f(8192, 100, 32);
  ASSERT_NE(f.device, nullptr);
  // Slow enough that the driver must pop a status to push its ninth.
  f.board.latency = 20;
  std::vector<uint8_t> record(640);
  for (size_t i = 0; i < record.size(); ++i)
    record[i] = uint8_t(i * 7 + 1);
  f.device->pushHostWeights(record.data(), record.size());
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  std::vector<Event> expected;
  for (uint8_t i = 0; i < 20; ++i) {
    if (i == kv260::queueDepth(Channel::Hp0))
      expected.push_back(instruction(kGemm));
    expected.push_back(
        command(Channel::Hp0, kPhys + 4096 + 32 * i, 32, i % 16, i == 19));
    expected.push_back(command(Channel::Hp1, kZeros, 32, i % 16, i == 19));
  }
  EXPECT_EQ(f.board.events, expected);
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  EXPECT_EQ(kv260::queueDepth(Channel::Hp0), 2u);
  EXPECT_EQ(f.board.channel(Channel::Hp0).maxOutstanding, 2u);
  EXPECT_EQ(f.board.channel(Channel::Hp0).sticky, 0u);
  EXPECT_EQ(f.board.channel(Channel::Hp1).sticky, 0u);
  EXPECT_EQ(f.board.channel(Channel::Hp0).streamed, record);
  EXPECT_EQ(f.board.channel(Channel::Hp1).streamed,
            std::vector<uint8_t>(640, 0));
}

// An LM-head tile of 67 362 784 B is 17 commands of 4 MiB per lane, and the
// 64 KiB weight FIFO holds less than one: no command of the record can
// complete before the GEMM's word is stored. Pushing a ninth command
// before the word (waiting for the first's status) never returns. Here
// with 32-byte commands and a 16-byte FIFO, two GEMMs in a row.
TEST(Kv260Device, ARecordLongerThanTheQueuesDoesNotDeadlock) {
  Fixture f(8192, 1000, 32);
  ASSERT_NE(f.device, nullptr);
  f.board.weightFifoBytes = 16;
  std::vector<uint8_t> first(640), second(576);
  for (size_t i = 0; i < first.size(); ++i)
    first[i] = uint8_t(i * 7 + 1);
  for (size_t i = 0; i < second.size(); ++i)
    second[i] = uint8_t(i * 5 + 3);
  f.device->pushHostWeights(first.data(), first.size());
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  f.device->pushHostWeights(second.data(), second.size());
  ASSERT_TRUE(f.device->issue(kGemm, 1, &f.error)) << f.error;
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
  EXPECT_TRUE(f.board.npuQueue.empty());
  std::vector<uint8_t> expected = first;
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(f.board.channel(Channel::Hp0).streamed, expected);
  EXPECT_EQ(f.board.channel(Channel::Hp1).streamed,
            std::vector<uint8_t>(expected.size(), 0));
  for (Channel c : {Channel::Hp0, Channel::Hp1}) {
    EXPECT_EQ(f.board.channel(c).sticky, 0u);
    EXPECT_LE(f.board.channel(c).maxOutstanding, kv260::queueDepth(c));
  }
}

TEST(Kv260Device, StagingWaitsUntilThePreviousRecordIsRead) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  f.board.latency = 50;
  std::vector<uint8_t> first(64, 0x11), second(64, 0x22);
  f.device->pushHostWeights(first.data(), first.size());
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  f.device->pushHostWeights(second.data(), second.size());
  ASSERT_TRUE(f.device->issue(kGemm, 1, &f.error)) << f.error;
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  std::vector<uint8_t> expected(64, 0x11);
  expected.insert(expected.end(), 64, 0x22);
  EXPECT_EQ(f.board.channel(Channel::Hp0).streamed, expected);
}

TEST(Kv260Device, RecordsInTheBufferStreamFromWhereTheyLie) {
  Fixture f(16384);
  ASSERT_NE(f.device, nullptr);
  const StreamableBuffer kv = f.device->allocateStreamable(100, &f.error);
  ASSERT_NE(kv.data, nullptr) << f.error;
  const size_t offset = size_t(kv.data - f.memory.bytes.data());
  EXPECT_EQ(offset, 12288u);
  std::memset(kv.data, 0x5a, 100);
  ASSERT_TRUE(f.device->pushWeights({kv.id, 0, 100}, nullptr, &f.error))
      << f.error;
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  EXPECT_EQ(f.board.events[0], command(Channel::Hp0, kPhys + offset, 100, 0));
  EXPECT_EQ(f.board.events[1], command(Channel::Hp1, kZeros, 100, 0));
  EXPECT_EQ(f.memory.bytes[4096], 0); // not staged
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
}

// A handle names a record by buffer, offset and length: the driver streams
// it from where that buffer lies in the DMA buffer (flushed first when the
// host writes the buffer), without staging, and refuses a handle outside
// every registered buffer.
TEST(Kv260Device, HandlesStreamFromTheirRegisteredBuffer) {
  Fixture f(24576);
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> section(4096, 0x33);
  BufferId weights = 0;
  ASSERT_TRUE(f.device->registerWeights(section.data(), section.size(),
                                        &weights, &f.error))
      << f.error;
  const StreamableBuffer kv = f.device->allocateStreamable(256, &f.error);
  ASSERT_NE(kv.data, nullptr) << f.error;
  EXPECT_NE(kv.id, weights);
  // The section at the end (20480), the KV buffer the page below it.
  const size_t kvOffset = size_t(kv.data - f.memory.bytes.data());
  EXPECT_EQ(kvOffset, 16384u);
  for (size_t i = 0; i < 256; ++i)
    kv.data[i] = uint8_t(i);
  f.memory.flushes.clear();
  ASSERT_TRUE(f.device->pushWeights({kv.id, 128, 32}, nullptr, &f.error))
      << f.error;
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  EXPECT_EQ(f.board.events[0],
            command(Channel::Hp0, kPhys + kvOffset + 128, 32, 0));
  EXPECT_EQ(f.board.events[1], command(Channel::Hp1, kZeros, 32, 0));
  EXPECT_EQ(f.memory.flushes,
            (std::vector<std::pair<size_t, size_t>>{{kvOffset + 128, 32}}));
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
  EXPECT_EQ(f.board.channel(Channel::Hp0).streamed,
            std::vector<uint8_t>(kv.data + 128, kv.data + 160));
  // The weights section was flushed once, when registered: not again.
  f.memory.flushes.clear();
  ASSERT_TRUE(f.device->pushWeights({weights, 4064, 32}, nullptr, &f.error))
      << f.error;
  ASSERT_TRUE(f.device->issue(kGemm, 1, &f.error)) << f.error;
  EXPECT_TRUE(f.memory.flushes.empty());
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
  EXPECT_EQ(f.memory.bytes[4096], 0); // nothing staged

  EXPECT_FALSE(f.device->pushWeights({weights, 4064, 48}, nullptr, &f.error));
  EXPECT_EQ(f.error, "a weight record of 48 bytes at offset 4064 of buffer 0 "
                     "lies outside the buffer's 4096 bytes");
  EXPECT_FALSE(f.device->pushWeights({kv.id, ~uint64_t(0), 2}, nullptr,
                                     &f.error));
  EXPECT_TRUE(contains(f.error, "lies outside the buffer's 256 bytes"))
      << f.error;
  EXPECT_FALSE(f.device->pushWeights({2, 0, 16}, nullptr, &f.error));
  EXPECT_TRUE(contains(f.error, "of buffer 2: no such buffer (2 registered)"))
      << f.error;
  // A refused handle queues nothing.
  EXPECT_FALSE(f.device->issue(kGemm, 2, &f.error));
  EXPECT_TRUE(contains(f.error, "a GEMM with no weight record")) << f.error;
}

// The simulator reads registered buffers where they lie, with the same
// bounds on handles.
TEST(SimDevice, HandlesReadRegisteredBuffersInPlace) {
  SimDevice sim(sim::Numerics::Hardware);
  std::vector<uint8_t> section(64, 1);
  BufferId weights = 0;
  std::string error;
  ASSERT_TRUE(sim.registerWeights(section.data(), section.size(), &weights,
                                  &error));
  const StreamableBuffer kv = sim.allocateStreamable(32, &error);
  ASSERT_NE(kv.data, nullptr);
  EXPECT_EQ(kv.id, weights + 1);
  EXPECT_TRUE(sim.pushWeights({weights, 32, 32}, nullptr, &error)) << error;
  EXPECT_TRUE(sim.pushWeights({kv.id, 0, 32}, nullptr, &error)) << error;
  EXPECT_EQ(sim.simulator().weightStreamPending(), 64u);
  EXPECT_FALSE(sim.pushWeights({kv.id, 16, 17}, nullptr, &error));
  EXPECT_EQ(error, "a weight record of 17 bytes at offset 16 of buffer 1 "
                   "lies outside the buffer's 32 bytes");
  EXPECT_FALSE(sim.pushWeights({9, 0, 1}, nullptr, &error));
  EXPECT_TRUE(contains(error, "no such buffer (2 registered)")) << error;
  EXPECT_EQ(sim.simulator().weightStreamPending(), 64u);
}

// Everything the driver writes into the buffer in bulk (the resident
// section, staged records, zeroed KV records) goes through DmaBuffer::write
// and fill, whose stores are aligned words: memcpy and memset would fault on
// the uncached mapping (Device memory on arm64). Odd sizes and addresses.
TEST(Kv260Device, BulkWritesUseAlignedStoresOnly) {
  Fixture f(20480);
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> section(8191 + 3), record(1001 + 5);
  for (size_t i = 0; i < section.size(); ++i)
    section[i] = uint8_t(i * 29 + 3);
  for (size_t i = 0; i < record.size(); ++i)
    record[i] = uint8_t(i * 31 + 7);
  // Sources at odd addresses too.
  BufferId weights = 0;
  ASSERT_TRUE(f.device->registerWeights(section.data() + 3, 8191, &weights,
                                        &f.error))
      << f.error;
  const StreamableBuffer kv = f.device->allocateStreamable(37, &f.error);
  ASSERT_NE(kv.data, nullptr) << f.error;
  f.device->pushHostWeights(record.data() + 5, 1001);
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;

  EXPECT_TRUE(f.memory.badStores.empty()) << f.memory.badStores[0];
  // The section, the zeroed KV record and the staged record, in order.
  ASSERT_EQ(f.memory.writes.size(), 3u);
  const size_t resident = f.memory.writes[0].first;
  EXPECT_EQ(f.memory.writes[0].second, 8191u);
  EXPECT_EQ(std::memcmp(f.memory.bytes.data() + resident, section.data() + 3,
                        8191),
            0);
  EXPECT_EQ(f.memory.writes[1],
            (std::pair<size_t, size_t>{
                size_t(kv.data - f.memory.bytes.data()), 37}));
  EXPECT_EQ(f.memory.writes[2].second, 1001u);
  EXPECT_EQ(std::memcmp(f.memory.bytes.data() + f.memory.writes[2].first,
                        record.data() + 5, 1001),
            0);
}

// On a buffer from a CMA heap (mapped cached, not snooped by the HP ports)
// the driver hands memory over where it does with u-dma-buf's cache
// commands: the zeros at open, the window's rows before a MEMCPY to the
// NPU, a staged record before its GEMM, and the window's words the NPU
// wrote before the host reads them.
TEST(Kv260Device, OnADmaHeapBufferEveryHandOverIsSynced) {
  pccx::testsupport::FakeDmaHeap kernel;
  std::string error;
  auto buffer = openDmaHeap("reserved", 8192, &error, kernel, kernel.paths);
  ASSERT_NE(buffer, nullptr) << error;
  Board board;
  Memory memory;
  memory.bytes.assign(8192, 0);
  board.memory = &memory;
  Kv260Options options;
  options.windowWords = 64;
  options.zeroBytes = kZeroBytes;
  options.minStagingBytes = 4096;
  options.pollLimit = 100;
  auto device = Kv260Device::create(
      std::make_unique<FakeRegisters>(board, kv260::kMapBytes),
      std::move(buffer), options, &error);
  ASSERT_NE(device, nullptr) << error;
  std::vector<uint8_t> record(64, 0x11);
  // 8*2*1 = 16 elements: 2 words each way.
  ASSERT_TRUE(device->issue(fmapShape(1, 8, 2, 1), 0, &error)) << error;
  ASSERT_TRUE(device->issue(memcpyWord(true, 0, 1), 1, &error)) << error;
  device->pushHostWeights(record.data(), record.size());
  ASSERT_TRUE(device->issue(kGemm, 2, &error)) << error;
  ASSERT_TRUE(device->issue(memcpyWord(false, 0, 1), 3, &error)) << error;
  ASSERT_TRUE(device->sync(&error)) << error;
  const uint64_t endWrite = DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE,
                 startRead = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ;
  EXPECT_EQ(kernel.syncs,
            (std::vector<uint64_t>{endWrite, endWrite, endWrite, startRead}));
  EXPECT_EQ(kernel.cleaned, (std::vector<std::pair<size_t, size_t>>{
                                {1024, 1024}, {0, 32}, {4096, 64}, {0, 32}}));
}

TEST(Kv260Device, ASectionTooBigForTheBufferIsRefusedAtOpen) {
  Fixture f(16384);
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> section(12288);
  BufferId weights = 0;
  EXPECT_FALSE(f.device->registerWeights(section.data(), section.size(),
                                         &weights, &f.error));
  EXPECT_TRUE(contains(f.error, "the weights section (0.0 MiB) does not fit "
                                "the DMA buffer"))
      << f.error;
  EXPECT_TRUE(contains(f.error, "configure u-dma-buf with at least 1 MiB"))
      << f.error;
}

TEST(Kv260Device, WeightStreamErrors) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> big(8192 - 4096 + 1);
  f.device->pushHostWeights(big.data(), big.size());
  EXPECT_FALSE(f.device->issue(kGemm, 2, &f.error));
  EXPECT_TRUE(contains(f.error, "instruction 2: a weight record of 4097 bytes "
                                "exceeds the DMA staging area of 4096 bytes"))
      << f.error;

  Fixture g;
  EXPECT_FALSE(g.device->issue(kGemm, 3, &g.error));
  EXPECT_TRUE(contains(g.error, "a GEMM with no weight record")) << g.error;
  std::vector<uint8_t> small(16);
  g.device->pushHostWeights(small.data(), small.size());
  EXPECT_FALSE(g.device->finishSegment(&g.error));
  EXPECT_TRUE(contains(g.error, "1 weight records were queued")) << g.error;
}

/// Issues `program` on the fake board of `f` (whose NPU it fed through the
/// DataMover streams) and on `direct`, handing the GEMMs `records` in
/// order, and finishes the segment on both.
void runOnBoth(Fixture &f, SimDevice &direct,
               const std::vector<const char *> &program,
               const std::vector<std::vector<uint8_t>> &records) {
  size_t gemms = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    isa::Instruction inst;
    ASSERT_TRUE(isa::assemble(program[i], inst, &f.error)) << f.error;
    const uint64_t w = word(inst);
    if (inst.opcode == isa::Opcode::Gemm) {
      ASSERT_LT(gemms, records.size());
      const std::vector<uint8_t> &r = records[gemms++];
      f.device->pushHostWeights(r.data(), r.size());
      direct.pushHostWeights(r.data(), r.size());
    }
    ASSERT_TRUE(f.device->issue(w, i, &f.error)) << f.error;
    ASSERT_TRUE(direct.issue(w, i, &f.error)) << f.error;
    ASSERT_TRUE(f.board.npuError.empty()) << f.board.npuError;
  }
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
  ASSERT_TRUE(direct.finishSegment(&f.error)) << f.error;
}

TEST(Kv260Device, AProgramGivesTheSimulatorsResultThroughTheProtocol) {
  // Load a vector, multiply it by a 2x3 INT8 matrix, store the result: on
  // a fake board whose NPU is the v002-rtl simulator fed only through the
  // DataMover streams, and on the simulator directly.
  const char *program[] = {
      "memset dest_cache=fmap_shape dest_addr=4 a_value=1 b_value=1 "
      "c_value=8",
      "memset dest_cache=fmap_shape dest_addr=2 a_value=1 b_value=0 "
      "c_value=0",
      "memset dest_cache=weight_shape dest_addr=7 a_value=2 b_value=3 "
      "c_value=1",
      "memcpy from_device=1 to_device=0 dest_addr=0x00010 shape_ptr_addr=4",
      "gemm dest_reg=0x00020 src_addr=0x00010 size_ptr_addr=7 "
      "shape_ptr_addr=2",
      "memcpy from_device=0 to_device=1 src_addr=0x00020 shape_ptr_addr=4"};
  std::vector<uint8_t> record(32, 0); // rows [1, 2, 3] and [-1, 0, 2]
  record[0] = 1, record[1] = 2, record[2] = 3;
  record[16] = uint8_t(-1), record[18] = 2;
  const float input[8] = {1, 2, 3, 0, 0, 0, 0, 0};

  SimDevice npu(sim::Numerics::Hardware, machine::Target::V002Rtl);
  SimDevice direct(sim::Numerics::Hardware, machine::Target::V002Rtl);
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  f.board.npu = &npu;
  std::copy(input, input + 8, f.device->window());
  std::copy(input, input + 8, direct.window());
  runOnBoth(f, direct, {program, program + 6}, {record});
  if (HasFatalFailure())
    return;
  EXPECT_EQ(std::vector<float>(f.device->window(), f.device->window() + 8),
            std::vector<float>(direct.window(), direct.window() + 8));
  EXPECT_EQ(f.device->window()[0], 14.0f);
  EXPECT_EQ(f.device->window()[1], 5.0f);
}

// The RTL's GEMM multiplies each activation by the sum of its two lanes'
// weights and takes their beats in pairs (docs/kv260.md §5.4): on a fake
// board that does the same, two INT4 GEMMs (3 beats and 10) give the
// simulator's result, the record on hp0 and as many beats of zeros on hp1.
TEST(Kv260Device, TheRecordOnOneLaneAndZerosOnTheOtherGiveTheSumTheRtlMakes) {
  const char *program[] = {
      "memset dest_cache=fmap_shape dest_addr=4 a_value=1 b_value=1 "
      "c_value=64",
      "memset dest_cache=fmap_shape dest_addr=2 a_value=1 b_value=0 "
      "c_value=0",
      "memset dest_cache=weight_shape dest_addr=7 a_value=3 b_value=20 "
      "c_value=0",
      "memset dest_cache=weight_shape dest_addr=8 a_value=5 b_value=60 "
      "c_value=0",
      "memcpy from_device=1 to_device=0 dest_addr=0x00010 shape_ptr_addr=4",
      "gemm dest_reg=0x00020 src_addr=0x00010 size_ptr_addr=7 "
      "shape_ptr_addr=2",
      "gemm dest_reg=0x00021 src_addr=0x00010 size_ptr_addr=8 "
      "shape_ptr_addr=2",
      "memcpy from_device=0 to_device=1 src_addr=0x00020 shape_ptr_addr=4"};
  // INT4 rows of K weights (two a byte), each padded with zeros to 16 bytes
  // (docs/isa-semantics.md §6): 3 x 16 bytes and 5 x 32 bytes.
  auto int4Record = [](size_t n, size_t k, unsigned seed) {
    const size_t stride = (k / 2 + 15) / 16 * 16;
    std::vector<uint8_t> record(n * stride, 0);
    for (size_t row = 0; row < n; ++row)
      for (size_t j = 0; j < k / 2; ++j)
        record[row * stride + j] = uint8_t((row * 31 + j) * seed + 5);
    return record;
  };
  const std::vector<uint8_t> records[2] = {int4Record(3, 20, 37),
                                           int4Record(5, 60, 53)};
  float input[64];
  for (size_t i = 0; i < 64; ++i)
    input[i] = float(int(i % 7) - 3);

  SimDevice npu(sim::Numerics::Hardware, machine::Target::V002Rtl);
  SimDevice direct(sim::Numerics::Hardware, machine::Target::V002Rtl);
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  f.board.npu = &npu;
  std::copy(input, input + 64, f.device->window());
  std::copy(input, input + 64, direct.window());
  runOnBoth(f, direct,
            {program, program + sizeof(program) / sizeof(program[0])},
            {records[0], records[1]});
  if (HasFatalFailure())
    return;
  EXPECT_TRUE(f.board.npuQueue.empty());
  EXPECT_EQ(std::vector<float>(f.device->window(), f.device->window() + 64),
            std::vector<float>(direct.window(), direct.window() + 64));
  std::vector<uint8_t> both = records[0];
  both.insert(both.end(), records[1].begin(), records[1].end());
  EXPECT_EQ(f.board.channel(Channel::Hp0).streamed, both);
  EXPECT_EQ(f.board.channel(Channel::Hp1).streamed,
            std::vector<uint8_t>(both.size(), 0));
}

//===-- DataMover errors and timeouts
//----------------------------------------===//

TEST(Kv260Device, DataMoverErrorStatusIsReported) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  f.board.channel(Channel::Hp1).nextErrors = kv260::kStsSlaveError;
  std::vector<uint8_t> record(64);
  f.device->pushHostWeights(record.data(), record.size());
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  EXPECT_FALSE(f.device->sync(&f.error));
  EXPECT_TRUE(contains(f.error, "DataMover hp1 (GEMM weights, lower INT4 "
                                "lane): the 64-byte transfer at 0x40000400 "
                                "failed: SLVERR"))
      << f.error;

  Fixture g;
  g.board.channel(Channel::AcpFmap).nextErrors = kv260::kStsDecodeError;
  ASSERT_TRUE(g.issueAll({fmapShape(0, 8, 1, 1), memcpyWord(true, 0, 0)}));
  EXPECT_FALSE(g.device->sync(&g.error));
  EXPECT_TRUE(contains(g.error, "DECERR")) << g.error;
}

// Each HP command's status comes as three words, all of which the driver
// pops; words that differ are reported.
TEST(Kv260Device, AnHpCommandsThreeStatusWordsArePoppedAndCompared) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  std::vector<uint8_t> record(64);
  f.device->pushHostWeights(record.data(), record.size());
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
  for (Channel c : {Channel::Hp0, Channel::Hp1}) {
    EXPECT_TRUE(f.board.channel(c).statuses.empty());
    EXPECT_EQ(f.board.channel(c).sticky, 0u);
  }
  f.board.channel(Channel::Hp1).splitStatus = true;
  f.device->pushHostWeights(record.data(), record.size());
  ASSERT_TRUE(f.device->issue(kGemm, 1, &f.error)) << f.error;
  EXPECT_FALSE(f.device->sync(&f.error));
  EXPECT_TRUE(contains(f.error, "DataMover hp1 (GEMM weights, lower INT4 "
                                "lane): the status words of one command "
                                "differ (0x81, then 0x01)"))
      << f.error;
}

TEST(Kv260Device, StatusTagsOutOfStepAreReported) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  f.board.channel(Channel::AcpResult).tagSkew = 3;
  ASSERT_TRUE(f.issueAll({fmapShape(0, 8, 1, 1), memcpyWord(false, 0, 0)}));
  EXPECT_FALSE(f.device->sync(&f.error));
  EXPECT_TRUE(contains(f.error, "status 0x83 carries tag 3 where the oldest "
                                "command has tag 0"))
      << f.error;
}

TEST(Kv260Device, StickyErrorsWithoutAStatusAreReported) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  f.board.channel(Channel::Hp0).stuck = true;
  f.board.channel(Channel::Hp0).sticky = 0x40;
  std::vector<uint8_t> record(64);
  f.device->pushHostWeights(record.data(), record.size());
  ASSERT_TRUE(f.device->issue(kGemm, 0, &f.error)) << f.error;
  EXPECT_FALSE(f.device->sync(&f.error));
  EXPECT_TRUE(contains(f.error, "DataMover hp0 (GEMM weights, upper INT4 "
                                "lane): sticky error bits 0x4"))
      << f.error;
}

TEST(Kv260Device, AStuckDataMoverTimesOut) {
  Fixture f(8192, 20);
  ASSERT_NE(f.device, nullptr);
  f.board.channel(Channel::AcpFmap).stuck = true;
  ASSERT_TRUE(f.issueAll({fmapShape(0, 8, 2, 1), memcpyWord(true, 0, 0)}));
  EXPECT_FALSE(f.device->sync(&f.error));
  EXPECT_TRUE(contains(f.error, "timed out waiting for DataMover acp_fmap "
                                "(MEMCPY host -> L2): no status for its "
                                "32-byte transfer at 0x40000000 after 20 "
                                "reads"))
      << f.error;
}

TEST(Kv260Device, AFullCommandFifoIsReported) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  f.board.channel(Channel::Hp0).reportFull = true;
  std::vector<uint8_t> record(64);
  f.device->pushHostWeights(record.data(), record.size());
  EXPECT_FALSE(f.device->issue(kGemm, 6, &f.error));
  EXPECT_TRUE(contains(f.error, "instruction 6: DataMover hp0 (GEMM weights, "
                                "upper INT4 lane): the command FIFO is full "
                                "while this driver has 0 commands "
                                "outstanding"))
      << f.error;
  EXPECT_TRUE(f.board.events.empty());
}

//===-- NPU status
//-----------------------------------------------------------===//

TEST(Kv260Device, SyncSkipsStaleStatusWordsAndWaitsForDone) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  ASSERT_TRUE(f.issueAll({fmapShape(0, 1, 1, 1)}));
  const uint32_t busy = kv260::kStatusBusy;
  // Eight old words, the MEMSET running, a word with neither bit (not
  // idle: no done yet), then done.
  for (unsigned i = 0; i < kv260::kStatusFifoDepth; ++i)
    f.board.statusScript.push_back(kv260::kStatusDone);
  f.board.statusScript.insert(f.board.statusScript.end(), {busy, busy, 0});
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  EXPECT_EQ(f.board.statusReads, kv260::kStatusFifoDepth + 4);
  // Nothing issued since: no status reads.
  ASSERT_TRUE(f.device->sync(&f.error));
  EXPECT_EQ(f.board.statusReads, kv260::kStatusFifoDepth + 4);
}

TEST(Kv260Device, AStuckBusyNpuTimesOut) {
  Fixture f(8192, 5);
  ASSERT_NE(f.device, nullptr);
  f.board.statusAfterScript = kv260::kStatusBusy | (1u << 5);
  ASSERT_TRUE(f.issueAll({fmapShape(0, 1, 1, 1)}));
  EXPECT_FALSE(f.device->sync(&f.error));
  EXPECT_TRUE(contains(f.error, "timed out waiting for the NPU: no done after "
                                "5 status reads (last status 0x00000021 "
                                "(busy, debug bits 0x20))"))
      << f.error;
}

// The board logs: MEMSET, CVO and the GEMM's result store raise DONE;
// neither MEMCPY direction does (BUSY stays 1); bits 2-15 are debug bits
// that differ between images. The driver waits for DONE after the first
// three and takes a MEMCPY's DataMover status as its completion; it never
// reads the debug bits (the old wait for "engines idle" bits after a GEMM,
// and for DONE after a MEMCPY store, timed out here).
TEST(Kv260Device, DoneIsWaitedForAfterAGemmButNotAfterAMemcpy) {
  Fixture f(8192, 50);
  ASSERT_NE(f.device, nullptr);
  f.board.siliconStatus = true;
  std::vector<uint8_t> record(64);
  ASSERT_TRUE(f.issueAll({fmapShape(0, 8, 1, 1)}));
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  f.device->pushHostWeights(record.data(), record.size());
  ASSERT_TRUE(f.device->issue(kGemm, 1, &f.error)) << f.error;
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  const size_t readsAfterGemm = f.board.statusReads;
  EXPECT_GT(readsAfterGemm, size_t(kv260::kStatusFifoDepth));
  ASSERT_TRUE(f.device->issue(memcpyWord(false, 0, 0), 2, &f.error)) << f.error;
  ASSERT_TRUE(f.device->sync(&f.error)) << f.error;
  ASSERT_TRUE(f.device->issue(memcpyWord(true, 0, 0), 3, &f.error)) << f.error;
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
  // No status read after either MEMCPY: BUSY would never clear.
  EXPECT_EQ(f.board.statusReads, readsAfterGemm);

  // A GEMM whose done never comes is reported.
  Fixture g(8192, 5);
  g.board.statusAfterScript = kv260::kStatusBusy;
  g.device->pushHostWeights(record.data(), record.size());
  ASSERT_TRUE(g.device->issue(kGemm, 0, &g.error)) << g.error;
  EXPECT_FALSE(g.device->sync(&g.error));
  EXPECT_TRUE(contains(g.error, "no done after 5 status reads (last status "
                                "0x00000001 (busy))"))
      << g.error;
}

TEST(Kv260Device, AnNpuThatStopsAnsweringIsReported) {
  Fixture f;
  ASSERT_NE(f.device, nullptr);
  ASSERT_TRUE(f.issueAll({fmapShape(0, 1, 1, 1)}));
  f.board.silent = true;
  EXPECT_FALSE(f.device->sync(&f.error));
  EXPECT_TRUE(contains(f.error, "the NPU stopped answering")) << f.error;
}

//===-- UIO discovery ----------------------------------------------------===//

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

//===-- One transfer plan for the driver and the timing model
//---------------===//

// The same program through the driver (on the fake board) and through
// pccx-prof's replay: both take their DataMover commands from
// Kv260TransferPlan.h, so the words and commands reach the board in the
// same order with the same channels, sizes and EOF marks. Records longer
// than the command queues (32-byte commands) put commands after the word.
TEST(Kv260TransferPlan, TheDriverAndTheTimingModelIssueTheSameStream) {
  const char *text[] = {
      "memset dest_cache=fmap_shape dest_addr=4 a_value=1 b_value=1 "
      "c_value=8",
      "memset dest_cache=fmap_shape dest_addr=2 a_value=1 b_value=0 "
      "c_value=0",
      "memset dest_cache=weight_shape dest_addr=7 a_value=2 b_value=3 "
      "c_value=1",
      "memcpy from_device=1 to_device=0 dest_addr=0x00010 shape_ptr_addr=4",
      "gemm dest_reg=0x00020 src_addr=0x00010 size_ptr_addr=7 "
      "shape_ptr_addr=2",
      "gemm dest_reg=0x00030 src_addr=0x00010 size_ptr_addr=7 "
      "shape_ptr_addr=2",
      "gemm dest_reg=0x00040 src_addr=0x00010 size_ptr_addr=7 "
      "shape_ptr_addr=2",
      "memcpy from_device=0 to_device=1 src_addr=0x00020 shape_ptr_addr=4"};
  const size_t count = sizeof(text) / sizeof(text[0]);
  // Records at offsets of a resident section: 640 B (20 commands a lane),
  // 48 B (3 beats: 2 commands a lane), 1000 B (63 beats: 32 commands a
  // lane), each on hp0 beside as many zeros on hp1.
  std::vector<uint8_t> section(2048);
  for (size_t i = 0; i < section.size(); ++i)
    section[i] = uint8_t(i * 11 + 3);
  const std::pair<size_t, size_t> records[] = {
      {0, 640}, {640, 48}, {688, 1000}};

  exec::Program program;
  program.section = "decode";
  program.weights.resize(count);
  size_t gemms = 0;
  for (size_t i = 0; i < count; ++i) {
    isa::Instruction inst;
    std::string error;
    ASSERT_TRUE(isa::assemble(text[i], inst, &error)) << error;
    program.words.push_back(word(inst));
    if (inst.opcode == isa::Opcode::Gemm) {
      exec::WeightRef &ref = program.weights[i];
      ref.kind = exec::WeightRef::Kind::Static;
      ref.offset = records[gemms].first;
      ref.bytes = records[gemms].second;
      ++gemms;
    }
  }
  exec::Segment segment;
  segment.name = "all";
  segment.end = uint32_t(count);
  program.segments.push_back(segment);

  // The timing model's stream.
  std::vector<prof::IssuedItem> modelled;
  prof::ReplayContext context;
  context.target = machine::Target::V002Rtl;
  context.maxCommandBytes = 32;
  context.issued = &modelled;
  prof::StepProfile step;
  std::string error;
  // The overlay as built: its GEMM adds the two lanes (gemm_lanes_summed).
  prof::Params params;
  ASSERT_TRUE(prof::applyMachine("kv260-as-built", &params, &error)) << error;
  ASSERT_TRUE(prof::profileStep(program, context, 0, params, &step, &error))
      << error;

  // The driver's, on a board whose weight FIFOs hold less than a command.
  Fixture f(16384, 1000, 32);
  ASSERT_NE(f.device, nullptr);
  f.board.weightFifoBytes = 16;
  BufferId weights = 0;
  ASSERT_TRUE(f.device->registerWeights(section.data(), section.size(),
                                        &weights, &f.error))
      << f.error;
  f.board.events.clear();
  for (size_t i = 0; i < count; ++i) {
    const exec::WeightRef &ref = program.weights[i];
    if (ref.kind == exec::WeightRef::Kind::Static) {
      ASSERT_TRUE(f.device->pushWeights({weights, ref.offset, ref.bytes},
                                        nullptr, &f.error))
          << f.error;
    }
    ASSERT_TRUE(f.device->issue(program.words[i], i, &f.error)) << f.error;
  }
  ASSERT_TRUE(f.device->finishSegment(&f.error)) << f.error;
  std::vector<prof::IssuedItem> driven;
  for (const Event &e : f.board.events) {
    prof::IssuedItem item;
    item.instruction = e.instruction;
    item.word = e.word;
    item.channel = unsigned(e.channel);
    item.bytes = e.bytes;
    item.eof = e.eof;
    driven.push_back(item);
  }
  ASSERT_EQ(driven.size(), modelled.size());
  // Every command carries the xCACHE/xUSER the board software writes.
  for (const Event &e : f.board.events) {
    if (!e.instruction) {
      EXPECT_EQ(e.attributes, 0xffu) << e;
    }
  }
  for (size_t i = 0; i < driven.size(); ++i)
    EXPECT_TRUE(driven[i] == modelled[i])
        << "item " << i << ": the driver issued " << f.board.events[i];
  // 8 words; 40, 4 and 64 weight commands; 2 MEMCPY commands.
  EXPECT_EQ(driven.size(), size_t(8 + 40 + 4 + 64 + 2));
  // The first long record's word follows 2 commands of each lane (after
  // 3 MEMSETs and the load's word and command).
  EXPECT_TRUE(driven[3 + 2 + 4].instruction);
  EXPECT_FALSE(driven[3 + 2 + 3].instruction);
  // Every command's status was taken and every record streamed whole.
  EXPECT_EQ(f.board.channel(Channel::Hp0).streamed.size(),
            size_t(640 + 48 + 1000));
  EXPECT_EQ(f.board.channel(Channel::Hp1).streamed,
            std::vector<uint8_t>(640 + 48 + 1000, 0));
  // As built, the host window's DataMovers share PS HP0 too.
  EXPECT_EQ(step.counts.portBytes[0], uint64_t(640 + 48 + 1000 + 2 * 16));
  EXPECT_EQ(step.counts.portBytes[1], uint64_t(640 + 48 + 1000));
  EXPECT_EQ(step.counts.memcpyBytes, uint64_t(2 * 16));
}
