//===- Profile.h - a timing model of one program step -----------*- C++ -*-===//
//
// Replays a prepared program (runtime/exec/Model.h) at a context position
// the way runtime/exec/Session.cpp and the KV260 driver
// (runtime/devices/Kv260Device.cpp) run it: the same segments, events,
// patch values, weight records and host calls, in the same order, but with
// no functional execution. Each step of the driver becomes timed work on
// the event model of Timeline.h; docs/performance.md describes the model.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_PROF_PROFILE_H
#define PCCX_RUNTIME_PROF_PROFILE_H

#include "hw/machine/Target.h"
#include "runtime/exec/Model.h"
#include "runtime/prof/Params.h"
#include "runtime/prof/Timeline.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace pccx::prof {

/// What Session's statistics would count for the step.
struct StepCounts {
  uint64_t instructions = 0, hostOps = 0, syncs = 0, weightBytes = 0;
  /// Of weightBytes: the KV records and attention masks.
  uint64_t kvRecordBytes = 0;
  /// Host-window bytes the step's MEMCPYs move.
  uint64_t memcpyBytes = 0;
  /// Zeros a GEMM's second lane streams beside its record, where the
  /// engine adds its lanes (gemm_lanes_summed).
  uint64_t laneZeroBytes = 0;
  /// Every streamed byte (weights, KV records, masks, MEMCPY, lane zeros)
  /// by the PS port the transfer plan puts it on.
  uint64_t portBytes[kNumDdrPorts] = {};
};

/// One item the driver hands the board, in order: an instruction word or a
/// DataMover command (runtime/devices/Kv260TransferPlan.h).
struct IssuedItem {
  bool instruction = false;
  uint64_t word = 0;
  unsigned channel = 0; ///< kv260::Channel
  uint64_t bytes = 0;
  bool eof = false;
  bool operator==(const IssuedItem &o) const {
    return instruction == o.instruction &&
           (instruction
                ? word == o.word
                : channel == o.channel && bytes == o.bytes && eof == o.eof);
  }
};

struct StepProfile {
  int64_t position = 0, rows = 1;
  double seconds = 0; ///< the step, from its first word to its last sync
  StepCounts counts;
  /// Critical-path seconds per category (they sum to `seconds`).
  std::map<std::string, double> breakdown;
  /// Host-time seconds of each segment, in program order.
  std::vector<std::pair<std::string, double>> segments;
  Timeline timeline;
};

/// The bundle facts a replay needs besides the program.
struct ReplayContext {
  const std::vector<exec::CacheSpec> *caches = nullptr;
  int64_t maxPositions = 0; ///< 0: no limit
  /// The conventions the program's words follow (MEMCPY extents, matrix
  /// pointer roles).
  machine::Target target = machine::kDefaultTarget;
  /// The driver's longest DataMover command.
  uint64_t maxCommandBytes = uint64_t(4) << 20;
  /// When set, receives what the driver would hand the board.
  std::vector<IssuedItem> *issued = nullptr;
  /// The program's rows are sequences of their own (a batch program): every
  /// row is at the step's position, not at position + row.
  bool independentRows = false;
  int64_t rowPosition(int64_t position, int64_t row) const {
    return independentRows ? position : position + row;
  }
};

/// Replays `program` at `position`. False with a message naming the
/// program, the position and the word when the step could not run (a
/// patch value out of its field, an unset constant entry, a position past
/// the KV caches).
bool profileStep(const exec::Program &program, const ReplayContext &context,
                 int64_t position, const Params &params, StepProfile *out,
                 std::string *error);

/// The work of one host call at a step: the model's input for its cost.
struct HostWork {
  double flops = 0, transcendentals = 0, bytes = 0;
  double tableLookups = 0; ///< loads from a table built once (softcap)
  /// Stores into the uncached DMA buffer (the NPU's KV records).
  double uncachedWriteBytes = 0;
  /// The kernel splits the step's rows over the host threads
  /// (host::splitsRows).
  bool splitsRows = false;
};
/// RoPE angle tables (position, theta, head_dim) a step has built; the
/// host kernels compute each once per step (runtime/host).
using RopeTables = std::set<std::tuple<int64_t, double, int64_t>>;
/// `ropeTables`, when given, holds the tables built earlier in the step and
/// gains the ones this call builds; without it every call builds its own.
HostWork hostWork(const host::BoundCall &call, const ReplayContext &context,
                  int64_t position, RopeTables *ropeTables = nullptr);
/// Nanoseconds the runtime thread spends on `work` in a step of `rows`
/// rows: a kernel that splits its rows keeps min(host_kernel_threads, rows)
/// threads busy, any other runs on the runtime thread alone.
double hostWorkNs(const HostWork &work, const Params &params,
                  int64_t rows = 1);

} // namespace pccx::prof

#endif
