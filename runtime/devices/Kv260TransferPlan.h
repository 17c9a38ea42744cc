//===- Kv260TransferPlan.h - how an instruction's bytes move ----*- C++ -*-===//
//
// The one rule for how the bytes of a GEMV, GEMM or host-window MEMCPY
// travel between DDR and the v002 overlay: which DataMovers, the commands
// in the order they are pushed, their sizes, which are pushed before the
// instruction word is stored and which after, and which channels must be
// idle first. The KV260 driver (Kv260Device.cpp) pushes exactly these
// commands and pccx-prof (runtime/prof/Profile.cpp) charges exactly these,
// so the two cannot disagree; a test replays one program through both and
// compares the streams. docs/kv260.md §5.4 describes the plan.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_KV260TRANSFERPLAN_H
#define PCCX_RUNTIME_DEVICES_KV260TRANSFERPLAN_H

#include "runtime/devices/Kv260Protocol.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace pccx::device::kv260 {

/// What an instruction moves.
enum class Stream : uint8_t {
  GemmWeights, ///< a GEMM's weight record: hp0 and hp1
  GemvWeights, ///< a GEMV's weight record: hp2 and hp3
  HostToL2,    ///< MEMCPY load from the host window: acp_fmap
  L2ToHost,    ///< MEMCPY store to the host window: acp_result
};

/// The DataMovers a stream uses, in the order its commands alternate
/// (docs/kv260.md §5.1: each matrix engine has two weight ports).
struct StreamChannels {
  Channel lanes[2];
  unsigned count;
};
inline StreamChannels channelsOf(Stream s) {
  switch (s) {
  case Stream::GemmWeights:
    return {{Channel::Hp0, Channel::Hp1}, 2};
  case Stream::GemvWeights:
    return {{Channel::Hp2, Channel::Hp3}, 2};
  case Stream::HostToL2:
    return {{Channel::AcpFmap, Channel::AcpFmap}, 1};
  case Stream::L2ToHost:
    break;
  }
  return {{Channel::AcpResult, Channel::AcpResult}, 1};
}

struct PlannedCommand {
  Channel channel = Channel::Hp0;
  /// From the transfer's first byte, or from the zero region's (`zeros`).
  uint64_t offset = 0;
  uint64_t bytes = 0;
  bool eof = false; ///< the last command of its lane
  /// Reads the driver's region of zeros instead of the transfer.
  bool zeros = false;
};

struct TransferPlan {
  /// Channels whose outstanding commands must have completed before the
  /// transfer starts: the bytes it overwrites or rereads are theirs.
  std::vector<Channel> drainFirst;
  /// In push order.
  std::vector<PlannedCommand> commands;
  /// commands[0, beforeWord) are pushed before the instruction word is
  /// stored, the rest after it.
  size_t beforeWord = 0;
};

/// How a GEMM's engine combines its two weight ports (docs/kv260.md §5.4).
enum class GemmLanes : uint8_t {
  /// The v002 RTL: the engine takes a beat from hp0 and hp1 together and
  /// multiplies each activation by the sum of the two beats' weights. The
  /// record streams on hp0 and hp1 streams as many beats of zeros.
  Summed,
  /// The documented dual MAC: each lane carries weights of its own; the
  /// record's first ceil(beats / 2) beats go to hp0, the rest to hp1.
  Split,
};

struct PlanOptions {
  /// The longest command: a multiple of the 16-byte beat within BTT.
  uint64_t maxCommandBytes = kChunkBytes;
  /// The record is copied into the staging area first, which the previous
  /// staged record's commands must have finished reading.
  bool staged = false;
  GemmLanes gemmLanes = GemmLanes::Summed;
  /// The driver's region of zeros (Summed lanes): no command reads more.
  uint64_t zeroBytes = kChunkBytes;
};

/// The plan of a transfer of `bytes` (> 0).
///
/// A weight record goes over its stream's two lanes in commands of at most
/// maxCommandBytes that alternate between the lanes, so that neither lane
/// waits for one whose commands are not queued. A GEMM on the v002 RTL
/// (GemmLanes::Summed) sends the record on hp0 and, command for command,
/// as many bytes of the zero region on hp1: its engine adds the two lanes'
/// weights and waits for a beat on both. Otherwise (a GEMV, or the
/// documented GEMM) the first ceil(beats / 2) 16-byte beats go on the
/// first lane and the rest on the second (docs/kv260.md, hardware request
/// 3). The weight FIFO behind each port is bounded (64 KiB) and the NPU
/// drains it only once the instruction word is stored, so a lane's
/// commands complete only after the word: at most queueDepth(lane)
/// commands per lane go before the word (the driver then never waits on a
/// status of this record before storing it), the rest after it, each
/// waiting for a slot as the NPU drains the record.
///
/// A host-window MEMCPY is one command, pushed after its word is stored:
/// the board software does it in that order, and a DataMover transfer the
/// NPU is not waiting for poisons the channel's next one until the
/// bitstream is reloaded (deploy repository
/// pccxai/v002-kv260-deploy-20260527, board logs of the v28-v37 images). A
/// load waits for the window's last store to have landed, a store for the
/// last load to have read the window.
inline TransferPlan planTransfer(Stream stream, uint64_t bytes,
                                 const PlanOptions &options) {
  TransferPlan plan;
  const StreamChannels ch = channelsOf(stream);
  if (stream == Stream::HostToL2 || stream == Stream::L2ToHost) {
    plan.drainFirst.push_back(stream == Stream::HostToL2 ? Channel::AcpResult
                                                         : Channel::AcpFmap);
    plan.commands.push_back({ch.lanes[0], 0, bytes, true});
    plan.beforeWord = 0;
    return plan;
  }
  if (options.staged)
    plan.drainFirst.assign(ch.lanes, ch.lanes + ch.count);
  const bool summed =
      stream == Stream::GemmWeights && options.gemmLanes == GemmLanes::Summed;
  const uint64_t beats = (bytes + 15) / 16;
  const uint64_t first =
      summed ? bytes : std::min<uint64_t>(bytes, (beats + 1) / 2 * 16);
  // Per lane: where its bytes start and how many.
  const uint64_t lane[2][2] = {
      {0, first}, {summed ? 0 : first, summed ? bytes : bytes - first}};
  uint64_t step = std::max<uint64_t>(options.maxCommandBytes, 16);
  if (summed)
    step = std::min(step, std::max<uint64_t>(options.zeroBytes / 16 * 16, 16));
  unsigned perLane[2] = {0, 0};
  plan.beforeWord = SIZE_MAX;
  for (uint64_t done = 0;; done += step) {
    bool any = false;
    for (unsigned l = 0; l < 2; ++l) {
      const uint64_t laneBytes = lane[l][1];
      if (done >= laneBytes)
        continue;
      const uint64_t n = std::min(step, laneBytes - done);
      if (perLane[l] == queueDepth(ch.lanes[l]) && plan.beforeWord == SIZE_MAX)
        plan.beforeWord = plan.commands.size();
      // A zero command reads the region from its start: every one is the
      // same zeros.
      const bool zeros = summed && l == 1;
      plan.commands.push_back({ch.lanes[l], zeros ? 0 : lane[l][0] + done, n,
                               done + n == laneBytes, zeros});
      ++perLane[l];
      any = true;
    }
    if (!any)
      break;
  }
  if (plan.beforeWord == SIZE_MAX)
    plan.beforeWord = plan.commands.size();
  return plan;
}

} // namespace pccx::device::kv260

#endif
