//===- Timeline.h - the event model of the KV260 system ---------*- C++ -*-===//
//
// Places work on engines in time. The runtime thread on host core 0 is the
// spine: it runs host kernels and driver copies, issues words and waits.
// The NPU starts instructions in program order; an instruction without
// `async` holds the dispatcher until it completes, an `async` MEMCPY/CVO
// lets the next one start at once, subject to its engine being free and
// to read-after-write, write-after-read and write-after-write overlaps of
// L2 word ranges with instructions still running (docs/isa-semantics.md
// section 10: the Global Scheduler resolves those hazards). A wait blocks
// the host until every issued instruction has completed.
//
// Each interval's category, and for each NPU instruction the earlier one
// that decided its start, give the critical path: the host's own work plus,
// for each wait, the chain of NPU instructions that kept it waiting.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_PROF_TIMELINE_H
#define PCCX_RUNTIME_PROF_TIMELINE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pccx::prof {

/// Trace tracks. The host cores other than the runtime's stay empty while
/// the runtime runs its kernels on one thread; they are listed so the
/// trace shows the idle cores.
enum class Track : uint8_t {
  HostCore0,
  HostCore1,
  HostCore2,
  HostCore3,
  Dispatch, ///< AXI-Lite issue into the NPU and MEMSET
  GemvGemm,
  Sfu,
  Memcpy,
  HpPort0,
  HpPort1,
  HpPort2,
  HpPort3,
};
constexpr unsigned kNumTracks = 12;
const char *trackName(Track track);

/// The PS ports DDR traffic takes: the four HP ports and the host window's
/// own (ACP) path, which the as-built overlay routes through HP0.
constexpr unsigned kNumDdrPorts = 5;
const char *ddrPortName(unsigned port);

/// A half-open range of L2 words an instruction reads or writes.
struct WordRange {
  int64_t begin = 0, end = 0;
  bool overlaps(const WordRange &o) const {
    return begin < o.end && o.begin < end;
  }
};

struct Interval {
  Track track = Track::HostCore0;
  double start = 0, end = 0; ///< ns
  std::string category;      ///< breakdown key, e.g. "weight_streaming"
  std::string name;          ///< what it is, for the trace
};

/// One NPU instruction to place.
struct NpuOp {
  Track engine = Track::GemvGemm;
  double busyNs = 0; ///< time the engine is occupied
  std::string category, name;
  bool async = false;
  std::vector<WordRange> reads, writes;
  /// DDR traffic: bytes and the time each PS port is occupied by them, and
  /// the DDR time of all of them. A port or DDR carries one transfer's
  /// bytes after another's: the op ends no earlier than the port's and
  /// DDR's earlier occupancy plus its own.
  double portBytes[kNumDdrPorts] = {};
  double portNs[kNumDdrPorts] = {};
  double ddrNs = 0;
  double latencyNs = 0; ///< before the first byte
};

class Timeline {
public:
  double hostNow() const { return host_; }

  /// The runtime thread works for `ns`.
  void host(double ns, const std::string &category, const std::string &name);

  /// Hands `op` to the NPU at the current host time (after the kick
  /// write). Returns the op's completion time.
  double npu(const NpuOp &op);

  /// Start time of the op npu() placed last.
  double lastStart() const { return lastStart_; }

  /// Completion time of every instruction issued so far.
  double npuDone() const { return lastEnd_; }

  /// The host polls until the NPU is idle: `idleLagNs` when it is idle
  /// already, else until `busyLagNs` after the last completion. The wait
  /// goes on the critical path to the chain of instructions that caused it.
  void waitIdle(double idleLagNs, double busyLagNs, const std::string &name);

  const std::vector<Interval> &intervals() const { return intervals_; }
  /// Critical-path time per category; sums to hostNow().
  const std::map<std::string, double> &criticalPath() const {
    return critical_;
  }
  /// Busy time per track.
  std::map<std::string, double> busyByTrack() const;

private:
  struct Placed {
    double start, end;
    int pred; ///< op whose end decided the start, -1: the host's issue
    unsigned interval;
    std::vector<WordRange> reads, writes;
  };
  double host_ = 0, dispatch_ = 0, lastEnd_ = 0;
  int dispatchPred_ = -1;
  double engineFree_[kNumTracks] = {};
  double portFree_[kNumDdrPorts] = {}, ddrFree_ = 0;
  double lastStart_ = 0;
  int enginePred_[kNumTracks];
  bool enginePredSet_ = false;
  std::vector<Placed> ops_;
  /// Ops that may still be running when the next one starts.
  std::vector<int> inFlight_;
  int lastOp_ = -1; ///< the op that ends last
  std::vector<Interval> intervals_;
  std::map<std::string, double> critical_;
};

} // namespace pccx::prof

#endif
