//===- Kv260Protocol.h - the v002 overlay's host protocol -------*- C++ -*-===//
//
// The one description of what the host sees of the pccx v002 overlay on a
// KV260: the NPU's AXI-Lite command/status page and the six AXI DataMover
// command/status pages next to it, in one UIO map. The driver
// (Kv260Device.cpp) and the fake board of its tests both read it.
// docs/kv260.md §5 gives the source of every value.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_KV260PROTOCOL_H
#define PCCX_RUNTIME_DEVICES_KV260PROTOCOL_H

#include <cstdint>
#include <string>

namespace pccx::device::kv260 {

/// The UIO device of the overlay: the name its device-tree entry gives it
/// on the board (deploy repository pccxai/v002-kv260-deploy-20260527, board
/// logs of the v28-v37 images: /sys/class/uio/uioN/name reads "pccx-npu",
/// map0 at 0xa0000000, size 0x10000).
constexpr const char *kUioName = "pccx-npu";

//===-- The NPU control page (page 0 of the map) --------------------------===//

/// A 64-bit store pushes the word into the 8-deep instruction FIFO; the
/// decoder takes it at once. It must be one 64-bit access: the RTL pushes
/// the whole data bus on every accepted write to this address.
constexpr uint32_t kRegInstruction = 0x000;
/// A write pushes the marker 0x8000000000000000 (opcode 8), which the v002
/// decoder drops: the driver never writes it.
constexpr uint32_t kRegKick = 0x008;
/// Every read anywhere in the page pops one word of the 8-deep status
/// FIFO, which the NPU refills every clock with its current status: the
/// first reads after a pause return old words.
constexpr uint32_t kRegStatus = 0x000;
constexpr uint32_t kControlPageBytes = 0x1000;
constexpr unsigned kInstructionFifoDepth = 8;
constexpr unsigned kStatusFifoDepth = 8;

/// Status word bits (pccx_npu_top `mmio_npu_stat`; bits 63:32 are 0). Only
/// bits 0 and 1 mean the same in every image; bits 2-15 are debug bits
/// each bitstream maps differently (deploy repository
/// pccxai/v002-kv260-deploy-20260527, board logs of the v28-v37 images), so
/// the driver reads nothing else.
constexpr uint32_t kStatusBusy = 1u << 0; ///< an op started and no done yet
/// An op that pulses done completed since the last op started (sticky).
/// MEMSET, CVO and the GEMM's result store (store_done) pulse it; neither
/// MEMCPY direction does, and BUSY stays set after one (the same logs).
constexpr uint32_t kStatusDone = 1u << 1;
constexpr uint32_t kStatusStableBits = kStatusBusy | kStatusDone;
/// What a read returns when nothing answers at the address.
constexpr uint32_t kStatusNoResponse = 0xffffffffu;

//===-- The DataMover command/status pages --------------------------------===//

/// One AXI DataMover per stream port of the NPU, each behind a 4 KiB page.
enum class Channel : unsigned { Hp0, Hp1, Hp2, Hp3, AcpFmap, AcpResult };
constexpr unsigned kChannelCount = 6;

struct ChannelInfo {
  const char *name;
  uint32_t page; ///< byte offset of its page in the map
  bool toMemory; ///< S2MM (the NPU writes DDR); otherwise MM2S
  const char *feeds;
};
constexpr ChannelInfo kChannels[kChannelCount] = {
    {"hp0", 0x1000, false, "GEMM weights, upper INT4 lane"},
    {"hp1", 0x2000, false, "GEMM weights, lower INT4 lane"},
    {"hp2", 0x3000, false, "GEMV weights, lane A"},
    {"hp3", 0x4000, false, "GEMV weights, lane B"},
    {"acp_fmap", 0x5000, false, "MEMCPY host -> L2"},
    {"acp_result", 0x6000, true, "MEMCPY L2 -> host"},
};
inline const ChannelInfo &info(Channel c) { return kChannels[unsigned(c)]; }
/// The map must reach the end of the last page.
constexpr uint32_t kMapBytes = 0x7000;

/// Registers of a command/status page.
constexpr uint32_t kPageCmdLow = 0x000;    ///< command bits 31:0 (staged)
constexpr uint32_t kPageCmdHigh = 0x004;   ///< command bits 63:32 (staged)
constexpr uint32_t kPageCmdExt = 0x008;    ///< command bits 79:64 in 15:0
constexpr uint32_t kPageCmdPush = 0x00c;   ///< write 1: push the staged command
constexpr uint32_t kPageStatusPop = 0x010; ///< read: pop one 8-bit status
constexpr uint32_t kPageFlags = 0x014;
constexpr uint32_t kPageCmdLevel = 0x018;
constexpr uint32_t kPageStatusLevel = 0x01c;
constexpr uint32_t kPageErrorClear = 0x020; ///< write 1s to clear sticky errors
constexpr unsigned kPageFifoDepth = 8;
/// Status words a command leaves in its page's status FIFO: the HP pages
/// return three identical words per command (deploy repository
/// pccxai/v002-kv260-deploy-20260527, board logs of the v28-v37 images),
/// the host-window pages one.
inline unsigned statusWordsPerCommand(Channel c) {
  return unsigned(c) < 4 ? 3 : 1;
}
/// Commands the driver keeps outstanding on a channel: as many as both the
/// command FIFO and the status FIFO hold, so that no status is lost while
/// the driver is not reading (2 on an HP page, 8 on a host-window page).
inline unsigned queueDepth(Channel c) {
  const unsigned byStatus = kPageFifoDepth / statusWordsPerCommand(c);
  return byStatus < kPageFifoDepth ? byStatus : kPageFifoDepth;
}

constexpr uint32_t kFlagCmdEmpty = 1u << 0;
constexpr uint32_t kFlagCmdFull = 1u << 1;
constexpr uint32_t kFlagStatusEmpty = 1u << 2;
constexpr uint32_t kFlagStatusFull = 1u << 3;
constexpr uint32_t kFlagStickyErrors = 0xf0u;

//===-- The 80-bit DataMover command (AXI DataMover, PG022) ---------------===//
//
// The overlay's DataMovers are built with the xCACHE/xUSER fields, so a
// command has 80 bits: PG022's 72 bits plus xCACHE in 75:72 and xUSER in
// 79:76, i.e. CMD_EXT bits 11:8 and 15:12 (deploy repository
// pccxai/v002-kv260-deploy-20260527, board software and logs of the v28-v37
// images: every command is written with xCACHE = xUSER = 0xF).

constexpr unsigned kBttBits = 23;
constexpr uint64_t kMaxCommandBytes = (uint64_t(1) << kBttBits) - 1;
constexpr uint32_t kCmdTypeIncr = 1u << 23; ///< INCR bursts
constexpr uint32_t kCmdEof = 1u << 30;      ///< TLAST at the end (MM2S)
constexpr uint32_t kCmdDsaMask = 0x3fu << 24;
constexpr uint32_t kCmdDrr = 1u << 31;
constexpr unsigned kTagBits = 4;
constexpr unsigned kCmdExtCacheShift = 8, kCmdExtUserShift = 12;
/// What every command carries in xCACHE and xUSER: the values the board
/// software writes (write-back, read- and write-allocate; the user bits
/// the block design passes to the PS port), the only ones run on silicon.
constexpr uint32_t kCmdCache = 0xf, kCmdUser = 0xf;
constexpr uint32_t kCmdExtAttributes =
    kCmdCache << kCmdExtCacheShift | kCmdUser << kCmdExtUserShift;
/// The longest command the driver issues: a multiple of the 16-byte beat
/// well inside BTT.
constexpr uint64_t kChunkBytes = uint64_t(4) << 20;

struct Command {
  uint32_t address = 0; ///< DDR address (source for MM2S, target for S2MM)
  uint32_t bytes = 0;   ///< BTT
  uint8_t tag = 0;      ///< echoed in the status
  bool eof = true;
  uint32_t attributes = 0; ///< xUSER << 4 | xCACHE (CMD_EXT 15:8)
};

/// The three staged words of a command.
struct CommandWords {
  uint32_t low = 0, high = 0, ext = 0;
};

/// Packs a command: BTT in 22:0, INCR, EOF in 30, address in 63:32, the tag
/// in 67:64, xCACHE and xUSER in 79:72 (kCmdExtAttributes); DRR, DSA and
/// 71:68 zero. False (with the reason) for what the command cannot express.
inline bool pack(uint64_t address, uint64_t bytes, unsigned tag, bool eof,
                 CommandWords *out, std::string *why) {
  if (bytes == 0 || bytes > kMaxCommandBytes) {
    *why = "a DataMover command moves 1 to " +
           std::to_string(kMaxCommandBytes) + " bytes, not " +
           std::to_string(bytes);
    return false;
  }
  if (address + bytes > (uint64_t(1) << 32)) {
    *why = "DDR bytes [" + std::to_string(address) + ", " +
           std::to_string(address + bytes) +
           ") are beyond the DataMover's 32-bit address";
    return false;
  }
  if (tag >= (1u << kTagBits)) {
    *why = "DataMover tags have 4 bits";
    return false;
  }
  out->low = uint32_t(bytes) | kCmdTypeIncr | (eof ? kCmdEof : 0);
  out->high = uint32_t(address);
  out->ext = tag | kCmdExtAttributes;
  return true;
}

/// Reads a staged command back; false (with the reason) when a reserved
/// field is set or the command moves nothing, which the DataMover reports
/// as an internal error.
inline bool unpack(const CommandWords &w, Command *out, std::string *why) {
  if (!(w.low & kCmdTypeIncr) || (w.low & (kCmdDsaMask | kCmdDrr)) ||
      (w.ext & ~(0xfu | 0xff00u))) {
    *why = "a reserved command field is set or the burst type is not INCR";
    return false;
  }
  out->bytes = w.low & uint32_t(kMaxCommandBytes);
  if (out->bytes == 0) {
    *why = "the command moves 0 bytes";
    return false;
  }
  out->eof = w.low & kCmdEof;
  out->address = w.high;
  out->tag = uint8_t(w.ext & 0xf);
  out->attributes = (w.ext >> kCmdExtCacheShift) & 0xff;
  return true;
}

//===-- The 8-bit DataMover status ----------------------------------------===//

constexpr uint32_t kStsTagMask = 0x0f;
constexpr uint32_t kStsInternalError = 1u << 4;
constexpr uint32_t kStsDecodeError = 1u << 5;
constexpr uint32_t kStsSlaveError = 1u << 6;
constexpr uint32_t kStsOkay = 1u << 7;

/// "OKAY", or the error bits of a status byte, e.g. "SLVERR DECERR".
inline std::string describeStatus(uint32_t status) {
  if ((status & kStsOkay) &&
      !(status & (kStsInternalError | kStsDecodeError | kStsSlaveError)))
    return "OKAY";
  std::string s;
  if (status & kStsInternalError)
    s += " INTERR (internal: a zero-length or malformed command)";
  if (status & kStsDecodeError)
    s += " DECERR (no memory at the address)";
  if (status & kStsSlaveError)
    s += " SLVERR (the memory refused the access)";
  if (s.empty())
    s = " not OKAY";
  return s.substr(1);
}

} // namespace pccx::device::kv260

#endif
