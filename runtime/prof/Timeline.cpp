//===- Timeline.cpp - the event model of the KV260 system -----------------===//

#include "runtime/prof/Timeline.h"

#include <algorithm>

namespace pccx::prof {

const char *trackName(Track track) {
  static const char *const names[kNumTracks] = {
      "host core 0 (runtime thread)",
      "host core 1",
      "host core 2",
      "host core 3",
      "NPU dispatch (AXI-Lite, MEMSET)",
      "GEMV/GEMM",
      "SFU (CVO)",
      "MEMCPY",
      "HP port 0",
      "HP port 1",
      "HP port 2",
      "HP port 3"};
  return names[unsigned(track)];
}

const char *ddrPortName(unsigned port) {
  static const char *const names[kNumDdrPorts] = {"hp0", "hp1", "hp2", "hp3",
                                                  "acp"};
  return port < kNumDdrPorts ? names[port] : "?";
}

void Timeline::host(double ns, const std::string &category,
                    const std::string &name) {
  if (ns <= 0)
    return;
  intervals_.push_back({Track::HostCore0, host_, host_ + ns, category, name});
  host_ += ns;
  critical_[category] += ns;
}

double Timeline::npu(const NpuOp &op) {
  const unsigned engine = unsigned(op.engine);
  // The latest of: the host's kick, the dispatcher, the engine, and every
  // running instruction whose L2 words conflict.
  double start = host_;
  int pred = -1;
  auto later = [&](double t, int by) {
    if (t > start) {
      start = t;
      pred = by;
    }
  };
  later(dispatch_, dispatchPred_);
  later(engineFree_[engine], enginePredSet_ ? enginePred_[engine] : -1);
  for (int j : inFlight_) {
    const Placed &p = ops_[size_t(j)];
    bool conflict = false;
    for (const WordRange &w : p.writes) {
      for (const WordRange &r : op.reads)
        conflict |= w.overlaps(r);
      for (const WordRange &w2 : op.writes)
        conflict |= w.overlaps(w2);
    }
    for (const WordRange &r : p.reads)
      for (const WordRange &w : op.writes)
        conflict |= r.overlaps(w);
    if (conflict)
      later(p.end, j);
  }
  double end = start + std::max(op.busyNs, 0.0);
  // Ports and DDR pass one transfer's bytes after another's.
  double streamEnd[kNumDdrPorts] = {};
  for (unsigned p = 0; p < kNumDdrPorts; ++p)
    if (op.portNs[p] > 0) {
      portFree_[p] =
          std::max(portFree_[p], start + op.latencyNs) + op.portNs[p];
      streamEnd[p] = portFree_[p];
      end = std::max(end, portFree_[p]);
    }
  if (op.ddrNs > 0) {
    ddrFree_ = std::max(ddrFree_, start + op.latencyNs) + op.ddrNs;
    end = std::max(end, ddrFree_);
  }
  const int index = int(ops_.size());
  lastStart_ = start;
  intervals_.push_back({op.engine, start, end, op.category, op.name});
  ops_.push_back(
      {start, end, pred, unsigned(intervals_.size() - 1), op.reads, op.writes});
  for (unsigned p = 0; p < 4; ++p)
    if (op.portNs[p] > 0)
      intervals_.push_back(
          {Track(unsigned(Track::HpPort0) + p), streamEnd[p] - op.portNs[p],
           streamEnd[p], "weight_streaming",
           op.name + " (" + std::to_string(int64_t(op.portBytes[p])) +
               " bytes)"});
  if (!enginePredSet_) {
    std::fill(enginePred_, enginePred_ + kNumTracks, -1);
    enginePredSet_ = true;
  }
  engineFree_[engine] = end;
  enginePred_[engine] = index;
  if (op.async) {
    dispatch_ = start;
    dispatchPred_ = pred;
  } else {
    dispatch_ = end;
    dispatchPred_ = index;
  }
  inFlight_.erase(
      std::remove_if(inFlight_.begin(), inFlight_.end(),
                     [&](int j) { return ops_[size_t(j)].end <= start; }),
      inFlight_.end());
  inFlight_.push_back(index);
  if (lastOp_ < 0 || end > lastEnd_) {
    lastEnd_ = end;
    lastOp_ = index;
  }
  return end;
}

void Timeline::waitIdle(double idleLagNs, double busyLagNs,
                        const std::string &name) {
  const double from = host_;
  double lagNs = idleLagNs;
  if (lastEnd_ > from) {
    lagNs = busyLagNs;
    intervals_.push_back({Track::HostCore0, from, lastEnd_, "wait", name});
    // Walk back along the instructions that decided each other's start.
    double cur = lastEnd_;
    for (int j = lastOp_; j >= 0 && cur > from; j = ops_[size_t(j)].pred) {
      const Placed &p = ops_[size_t(j)];
      const double s = std::max(p.start, from);
      critical_[intervals_[p.interval].category] += cur - s;
      cur = s;
    }
    if (cur > from)
      critical_["sync"] += cur - from;
    host_ = lastEnd_;
  }
  host(lagNs, "sync", name);
  inFlight_.clear();
}

std::map<std::string, double> Timeline::busyByTrack() const {
  std::map<std::string, double> busy;
  for (const Interval &i : intervals_)
    if (i.category != "wait")
      busy[trackName(i.track)] += i.end - i.start;
  return busy;
}

} // namespace pccx::prof
