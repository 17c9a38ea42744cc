//===- Report.h - pccx-prof's outputs ---------------------------*- C++ -*-===//
//
// The figures of a profile as text, as the stable JSON shape scripts read
// (docs/performance.md), and as a Chrome/Perfetto trace.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_PROF_REPORT_H
#define PCCX_RUNTIME_PROF_REPORT_H

#include "runtime/prof/Profile.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace pccx::prof {

/// What picks each generated token on the host after a step's logits
/// (runtime/app/Sampler.cpp), counted per row of every decode step.
enum class SamplingCost {
  None,    ///< not counted (the program alone)
  Greedy,  ///< argmax over the vocabulary
  Sampled, ///< temperature > 0: one exp per entry, the normalizer, top-p
};
bool parseSamplingCost(const std::string &name, SamplingCost *out);
const char *samplingCostName(SamplingCost cost);
/// The host work of choosing one token from `vocab` logits.
HostWork samplingWork(SamplingCost cost, int64_t vocab);

/// Whether the overlay as built can run a bundle today, and what the
/// board's CPU would do instead.
struct TodayStatement {
  bool overlayRunsIt = false;
  std::string why;   ///< why not (or that it can)
  /// Decode tokens/s of the CPU path on the board's cores (an estimate).
  double cpuTokensPerSecond = 0;
};

/// The integer GEMV's bytes per A53 cycle and core: bench/a53-estimate.sh's
/// llvm-mca figure for its NEON loop (26.9 cycles per 16 bytes), an
/// estimate.
constexpr double kA53IntegerGemvBytesPerCycle = 16.0 / 26.9;

struct ProfileRun {
  std::string bundle;
  TodayStatement today;
  SamplingCost sampling = SamplingCost::Sampled;
  std::string machine = "v002";    ///< hw/machine/MachineProfiles.def
  std::vector<StepProfile> decode; ///< one per position
  bool hasPrefill = false;
  /// At position 0: the step of a prompt whose logits are not read (the
  /// program without the LM head when the bundle has one, else the prefill
  /// program).
  StepProfile prefill;
  /// The prefill program with its LM head (the last step of a prompt that
  /// ends on a step, every step of --perplexity), when `prefill` is the
  /// program without it.
  bool hasPrefillWithLogits = false;
  StepProfile prefillWithLogits;
  /// --batch B: the batch program of B rows (B sequences, each at the
  /// position) at each position; empty otherwise.
  std::vector<StepProfile> batch;
  Params params;
};

/// Replays the bundle's decode program at each position and its prefill
/// program (if any) at position 0; with `batchRows` > 1, its batch program
/// of that many rows at each position too (an error names the rows the
/// bundle has).
bool profileModel(const exec::Model &model,
                  const std::vector<int64_t> &positions, const Params &params,
                  ProfileRun *out, std::string *error,
                  int64_t batchRows = 0);

/// Batch step `i` of a run: its aggregate tokens/s and that over one
/// sequence's (the decode step at the same position).
struct BatchFigures {
  double aggregate = 0, vsOneSequence = 0;
};
BatchFigures batchFigures(const ProfileRun &run, size_t i);

/// The least time a step's streamed bytes (weights, KV records, masks,
/// MEMCPY, a GEMM's lane of zeros) can take: every byte through DDR at its effective rate, and each
/// PS port's share through that port at its width times the AXI clock;
/// the slower of the two.
struct StreamCeiling {
  double bytes = 0;
  unsigned ports = 0;      ///< the PS ports the transfer plan used
  double portMbps = 0;     ///< one port: width x AXI clock
  double busiestBytes = 0; ///< on the busiest port
  double ddrSeconds = 0, portSeconds = 0, seconds = 0;
  double mbps = 0; ///< bytes / seconds: the step's ceiling bandwidth
  std::string formula;
};
StreamCeiling streamCeiling(const StepProfile &step, const Params &params);
/// streamCeiling().seconds over the step's time: 1 means the step runs at
/// the ceiling its bytes and wiring allow; the model never exceeds 1.
double ceilingFraction(const StepProfile &step, const Params &params);

/// Segment seconds summed by layer: "layer.N..." segments under "layer.N",
/// others under their own name, in first-seen order.
std::vector<std::pair<std::string, double>> byLayer(const StepProfile &step);

std::string renderText(const ProfileRun &run);
nlohmann::json renderJson(const ProfileRun &run);
/// Chrome trace-event JSON: the first decode position and the prefill step
/// as two processes, one thread per engine track.
nlohmann::json renderTrace(const ProfileRun &run);
/// One self-contained HTML page (its style and script inline; no other
/// file, no network): the figures table (and the batched decode's), an SVG
/// timeline of the first position's decode token with one lane per engine
/// track, zoomed with the mouse wheel or buttons and moved by dragging,
/// coloured by category in a few families (legend below it), an SVG plot
/// of the time per token over the positions, the breakdown and by-layer
/// tables of that token, the engine busy table of every step, and the
/// prefill step's figures, breakdown and layers. Deterministic: the same
/// run gives the same bytes.
std::string renderHtml(const ProfileRun &run);

/// Writes `text` to `path` through a temporary file renamed into place.
bool writeFileAtomically(const std::string &path, const std::string &text,
                         std::string *error);

} // namespace pccx::prof

#endif
