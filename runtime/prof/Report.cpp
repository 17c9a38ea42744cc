//===- Report.cpp - pccx-prof's outputs -----------------------------------===//

#include "runtime/prof/Report.h"
#include "hw/isa/Isa.h"
#include "hw/machine/Target.h"
#include "hw/support/OutputFile.h"

#include "hw/support/Format.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

using nlohmann::json;

namespace pccx::prof {

bool parseSamplingCost(const std::string &name, SamplingCost *out) {
  for (SamplingCost c :
       {SamplingCost::None, SamplingCost::Greedy, SamplingCost::Sampled})
    if (name == samplingCostName(c)) {
      *out = c;
      return true;
    }
  return false;
}

const char *samplingCostName(SamplingCost cost) {
  switch (cost) {
  case SamplingCost::None:
    return "none";
  case SamplingCost::Greedy:
    return "greedy";
  case SamplingCost::Sampled:
    break;
  }
  return "sampled";
}

HostWork samplingWork(SamplingCost cost, int64_t vocab) {
  HostWork w;
  const double v = double(vocab);
  if (cost == SamplingCost::Greedy) {
    // One pass: a compare per entry.
    w.flops = v;
    w.bytes = 4 * v;
  } else if (cost == SamplingCost::Sampled) {
    // Sampler::next: the best id (a compare), exp((z - max) / T) in double
    // per entry, the normalizer, top-p's floor search and the draw (a few
    // adds and compares per entry over three passes).
    w.flops = 6 * v;
    w.transcendentals = v;
    w.bytes = 3 * 4 * v;
  }
  return w;
}

namespace {
/// Adds the sampler of `rows` tokens after `step` (it runs on the host once
/// the logits are back, before the next step can start).
void addSampling(StepProfile &step, int64_t rows, int64_t vocab,
                 SamplingCost cost, const Params &params) {
  if (cost == SamplingCost::None)
    return;
  const double seconds =
      double(rows) * hostWorkNs(samplingWork(cost, vocab), params) * 1e-9;
  step.seconds += seconds;
  step.breakdown["host:sampler"] += seconds;
}
} // namespace

BatchFigures batchFigures(const ProfileRun &run, size_t i) {
  const StepProfile &b = run.batch[i];
  BatchFigures f;
  f.aggregate = double(b.rows) / b.seconds;
  f.vsOneSequence = f.aggregate * run.decode[i].seconds;
  return f;
}

namespace {

/// Whether the overlay as built (the v002 RTL) runs the decode program, and
/// the board's CPU estimate from the bytes a decode token streams.
TodayStatement todayStatement(const exec::Model &model, const Params &params,
                              uint64_t weightBytesPerToken) {
  TodayStatement t;
  std::string refused;
  for (uint64_t word : model.decode()->words) {
    isa::Instruction inst;
    std::string why;
    if (!isa::decode(word, inst, &why))
      continue;
    refused = machine::refusedByCompiler(inst, machine::Target::V002Rtl);
    if (!refused.empty())
      break;
  }
  if (model.target() != machine::Target::V002Rtl)
    t.why = std::string("the overlay as built runs the v002 RTL's "
                        "conventions and this bundle is for target ") +
            machine::targetProfile(model.target()).name +
            (refused.empty() ? "" : " (" + refused + ")") +
            "; these NPU figures model the documented design";
  else if (!refused.empty())
    t.why = "the overlay as built cannot run it: " + refused;
  else
    t.why = "the overlay as built runs the v002 RTL's conventions, as this "
            "bundle does";
  t.overlayRunsIt = model.target() == machine::Target::V002Rtl &&
                    refused.empty();
  const double cpu = params.host_cores * params.host_cpu_mhz * 1e6 *
                     kA53IntegerGemvBytesPerCycle,
               ddr = params.ddr_effective_mb_per_s * 1e6;
  if (weightBytesPerToken > 0)
    t.cpuTokensPerSecond =
        std::min(cpu, ddr) / double(weightBytesPerToken);
  return t;
}

} // namespace

bool profileModel(const exec::Model &model,
                  const std::vector<int64_t> &positions, const Params &params,
                  ProfileRun *out, std::string *error, int64_t batchRows) {
  out->params = params;
  ReplayContext context{&model.caches(), model.maxSeqLen()};
  context.target = model.target();
  if (!model.decode()) {
    *error = "the bundle has no decode program";
    return false;
  }
  for (int64_t position : positions) {
    out->decode.emplace_back();
    if (!profileStep(*model.decode(), context, position, params,
                     &out->decode.back(), error))
      return false;
    addSampling(out->decode.back(), 1, model.vocabSize(), out->sampling,
                params);
  }
  out->today = todayStatement(
      model, params,
      out->decode.empty() ? 0 : out->decode.front().counts.weightBytes);
  out->hasPrefill = model.prefill() != nullptr;
  const exec::Program *withoutLogits = model.prefillWithoutLogits();
  if (out->hasPrefill &&
      !profileStep(withoutLogits ? *withoutLogits : *model.prefill(), context,
                   0, params, &out->prefill, error))
    return false;
  out->hasPrefillWithLogits = out->hasPrefill && withoutLogits;
  if (out->hasPrefillWithLogits &&
      !profileStep(*model.prefill(), context, 0, params,
                   &out->prefillWithLogits, error))
    return false;
  if (batchRows > 1) {
    const exec::Program *batch = nullptr;
    std::string have;
    for (const auto &p : model.batches()) {
      if (p->rows == batchRows)
        batch = p.get();
      have += (have.empty() ? "" : ", ") + std::to_string(p->rows);
    }
    if (!batch) {
      *error = have.empty()
                   ? "the bundle has no batch program (compile with "
                     "--decode-batch " + std::to_string(batchRows) + ")"
                   : "the bundle has no batch program of " +
                         std::to_string(batchRows) + " rows (it has " + have +
                         ")";
      return false;
    }
    ReplayContext rows = context;
    rows.independentRows = true;
    for (int64_t position : positions) {
      out->batch.emplace_back();
      if (!profileStep(*batch, rows, position, params, &out->batch.back(),
                       error))
        return false;
      addSampling(out->batch.back(), batch->rows, model.vocabSize(),
                  out->sampling, params);
    }
  }
  return true;
}

StreamCeiling streamCeiling(const StepProfile &step, const Params &params) {
  StreamCeiling c;
  std::string names;
  unsigned busiest = 0;
  for (unsigned p = 0; p < kNumDdrPorts; ++p) {
    const double b = double(step.counts.portBytes[p]);
    c.bytes += b;
    if (b > 0) {
      ++c.ports;
      names += std::string(names.empty() ? "" : " ") + ddrPortName(p);
    }
    if (b > c.busiestBytes) {
      c.busiestBytes = b;
      busiest = p;
    }
  }
  c.portMbps = params.hp_port_bytes_per_clock * params.axi_clock_mhz;
  c.ddrSeconds = c.bytes / (params.ddr_effective_mb_per_s * 1e6);
  c.portSeconds = c.busiestBytes / (c.portMbps * 1e6);
  c.seconds = std::max(c.ddrSeconds, c.portSeconds);
  c.mbps = c.seconds > 0 ? c.bytes / c.seconds * 1e-6 : 0;
  const double mb = 1e-6;
  c.formula = formatString(
      "min(DDR %.0f MB/s, %u ports (%s) x %.0f B x %.0f MHz = %.0f MB/s",
      params.ddr_effective_mb_per_s, c.ports, names.c_str(),
      params.hp_port_bytes_per_clock, params.axi_clock_mhz,
      c.ports * c.portMbps);
  if (c.ports > 0 && c.busiestBytes * c.ports > c.bytes * 1.0001)
    c.formula +=
        formatString("; busiest %s: %.1f of %.1f MB", ddrPortName(busiest),
                     c.busiestBytes * mb, c.bytes * mb);
  c.formula += formatString(
      ") = %.0f MB/s; %.3f MB (weights %.3f, KV records and masks %.3f, "
      "MEMCPY %.3f",
      c.mbps, c.bytes * mb,
      double(step.counts.weightBytes - step.counts.kvRecordBytes) * mb,
      double(step.counts.kvRecordBytes) * mb,
      double(step.counts.memcpyBytes) * mb);
  if (step.counts.laneZeroBytes)
    c.formula += formatString(", GEMM lane zeros %.3f",
                              double(step.counts.laneZeroBytes) * mb);
  c.formula += formatString(") / %.0f MB/s = %.4f ms", c.mbps, c.seconds * 1e3);
  return c;
}

double ceilingFraction(const StepProfile &step, const Params &params) {
  return step.seconds > 0 ? streamCeiling(step, params).seconds / step.seconds
                          : 0;
}

std::vector<std::pair<std::string, double>> byLayer(const StepProfile &step) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto &[name, seconds] : step.segments) {
    std::string key = name;
    if (name.compare(0, 6, "layer.") == 0) {
      size_t end = 6;
      while (end < name.size() && std::isdigit((unsigned char)name[end]))
        ++end;
      if (end > 6)
        key = name.substr(0, end);
    }
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const auto &e) { return e.first == key; });
    if (it == out.end())
      out.push_back({key, seconds});
    else
      it->second += seconds;
  }
  return out;
}

namespace {

std::vector<std::pair<std::string, double>>
sortedBreakdown(const StepProfile &step) {
  std::vector<std::pair<std::string, double>> items(step.breakdown.begin(),
                                                    step.breakdown.end());
  std::stable_sort(
      items.begin(), items.end(),
      [](const auto &a, const auto &b) { return a.second > b.second; });
  return items;
}

json countsJson(const StepCounts &c) {
  json ports = json::object();
  for (unsigned p = 0; p < kNumDdrPorts; ++p)
    ports[ddrPortName(p)] = c.portBytes[p];
  return {{"instructions", c.instructions},
          {"host_ops", c.hostOps},
          {"syncs", c.syncs},
          {"weight_bytes", c.weightBytes},
          {"kv_record_bytes", c.kvRecordBytes},
          {"memcpy_bytes", c.memcpyBytes},
          {"lane_zero_bytes", c.laneZeroBytes},
          {"port_bytes", ports}};
}

json ceilingJson(const StepProfile &step, const Params &params) {
  const StreamCeiling c = streamCeiling(step, params);
  return {{"seconds", c.seconds},
          {"bytes", c.bytes},
          {"ports", c.ports},
          {"mb_per_s", c.mbps},
          {"ddr_seconds", c.ddrSeconds},
          {"port_seconds", c.portSeconds},
          {"formula", c.formula}};
}

json stepDetails(const StepProfile &step) {
  json breakdown = json::object(), layers = json::object(),
       busy = json::object();
  for (const auto &[category, seconds] : step.breakdown)
    breakdown[category] = seconds;
  for (const auto &[layer, seconds] : byLayer(step))
    layers[layer] = seconds;
  for (const auto &[track, ns] : step.timeline.busyByTrack())
    busy[track] = ns * 1e-9;
  return {{"breakdown", breakdown},
          {"by_layer", layers},
          {"engine_busy_seconds", busy},
          {"counts", countsJson(step.counts)}};
}

void appendStep(std::string &s, const char *title, const StepProfile &step,
                const Params &params) {
  s += formatString("\n%s (critical path, ms):\n", title);
  s += "  ceiling: " + streamCeiling(step, params).formula + "\n";
  for (const auto &[category, seconds] : sortedBreakdown(step))
    s += formatString("  %-28s %12.4f  %5.1f %%\n", category.c_str(),
                      seconds * 1e3, 100 * seconds / step.seconds);
  s += "  by layer (ms):\n";
  for (const auto &[layer, seconds] : byLayer(step))
    s += formatString("    %-26s %12.4f\n", layer.c_str(), seconds * 1e3);
  s += "  engine busy (ms):\n";
  for (const auto &[track, ns] : step.timeline.busyByTrack())
    s += formatString("    %-32s %10.4f  %5.1f %%\n", track.c_str(), ns * 1e-6,
                      100 * ns * 1e-9 / step.seconds);
}

} // namespace

namespace {

/// The statement of renderText and renderHtml (plain text).
std::string todayText(const ProfileRun &run) {
  const TodayStatement &t = run.today;
  std::string s = formatString(
      "today: %s: %s.\n", t.overlayRunsIt ? "the overlay can run this bundle"
                                         : "no overlay runs this bundle",
      t.why.c_str());
  if (t.cpuTokensPerSecond > 0)
    s += formatString(
        "  the board's CPU runs it (pccx-run without --device kv260): at most "
        "about %.2f tokens/s at position %lld on %.0f x Cortex-A53 at "
        "%.0f MHz (integer numerics: the weights a token streams at the "
        "GEMV loop's rate from static analysis, bench/a53-estimate.sh; host "
        "work comes on top; an estimate)\n",
        t.cpuTokensPerSecond,
        (long long)(run.decode.empty() ? 0 : run.decode.front().position),
        run.params.host_cores, run.params.host_cpu_mhz);
  return s;
}

} // namespace

std::string renderText(const ProfileRun &run) {
  const Params &p = run.params;
  std::string s = formatString(
      "%s on the KV260 model, machine %s: v002 overlay at %.0f MHz core, "
      "%.0f MHz AXI, %.0f x Cortex-A53 at %.0f MHz, DDR %.0f MB/s "
      "effective\n",
      run.bundle.c_str(), run.machine.c_str(), p.core_clock_mhz,
      p.axi_clock_mhz, p.host_cores, p.host_cpu_mhz, p.ddr_effective_mb_per_s);
  s += formatString("sampler: %s (host:sampler, per generated token)\n",
                    samplingCostName(run.sampling));
  s += todayText(run);
  s += "\ndecode:\n  position    ms/token       tok/s  weight MB/token  "
       "ceiling fraction\n";
  for (const StepProfile &d : run.decode)
    s += formatString("  %8lld %11.4f %11.3f %16.3f %17.4f\n",
                      (long long)d.position, d.seconds * 1e3, 1 / d.seconds,
                      double(d.counts.weightBytes) * 1e-6,
                      ceilingFraction(d, p));
  if (run.hasPrefill)
    s += formatString("\nprefill: %lld rows at position 0: %.4f ms/step, "
                      "%.3f tok/s, %.3f weight MB/step\n",
                      (long long)run.prefill.rows, run.prefill.seconds * 1e3,
                      double(run.prefill.rows) / run.prefill.seconds,
                      double(run.prefill.counts.weightBytes) * 1e-6);
  else
    s += "\nprefill: the bundle has no prefill program\n";
  if (run.hasPrefillWithLogits)
    s += formatString("  (without the LM head; the step with it, the last of "
                      "a prompt that ends on a step and every step of "
                      "--perplexity: %.4f ms, %.3f weight MB)\n",
                      run.prefillWithLogits.seconds * 1e3,
                      double(run.prefillWithLogits.counts.weightBytes) * 1e-6);
  if (!run.batch.empty()) {
    s += formatString("\nbatched decode: %lld sequences per step\n  position  "
                      "  ms/step  aggregate tok/s  vs one sequence  weight "
                      "MB/step\n",
                      (long long)run.batch[0].rows);
    for (size_t i = 0; i < run.batch.size(); ++i) {
      const StepProfile &b = run.batch[i];
      const BatchFigures f = batchFigures(run, i);
      s += formatString("  %8lld %10.4f %16.3f %15.2fx %16.3f\n",
                        (long long)b.position, b.seconds * 1e3, f.aggregate,
                        f.vsOneSequence,
                        double(b.counts.weightBytes) * 1e-6);
    }
  }
  for (const StepProfile &d : run.decode) {
    std::string title =
        "decode token at position " + std::to_string(d.position);
    appendStep(s, title.c_str(), d, p);
  }
  if (run.hasPrefill)
    appendStep(s, "prefill step at position 0", run.prefill, p);
  for (const StepProfile &b : run.batch) {
    std::string title = "batched decode step of " + std::to_string(b.rows) +
                        " sequences at position " + std::to_string(b.position);
    appendStep(s, title.c_str(), b, p);
  }
  return s;
}

json renderJson(const ProfileRun &run) {
  json decode = json::array();
  for (const StepProfile &d : run.decode) {
    json e = {{"position", d.position},
              {"seconds_per_token", d.seconds},
              {"tokens_per_second", 1 / d.seconds},
              {"weight_bytes_per_token", d.counts.weightBytes},
              {"ceiling_fraction", ceilingFraction(d, run.params)},
              {"ceiling", ceilingJson(d, run.params)}};
    e.update(stepDetails(d));
    decode.push_back(e);
  }
  json prefill = nullptr;
  if (run.hasPrefill) {
    const StepProfile &f = run.prefill;
    prefill = {{"rows", f.rows},
               {"position", f.position},
               {"seconds_per_step", f.seconds},
               {"tokens_per_second", double(f.rows) / f.seconds},
               {"weight_bytes_per_step", f.counts.weightBytes},
               {"ceiling_fraction", ceilingFraction(f, run.params)},
               {"ceiling", ceilingJson(f, run.params)}};
    prefill.update(stepDetails(f));
    prefill["lm_head"] = !run.hasPrefillWithLogits;
    if (run.hasPrefillWithLogits)
      prefill["with_lm_head"] = {
          {"seconds_per_step", run.prefillWithLogits.seconds},
          {"weight_bytes_per_step", run.prefillWithLogits.counts.weightBytes},
          {"counts", countsJson(run.prefillWithLogits.counts)},
          {"ceiling_fraction",
           ceilingFraction(run.prefillWithLogits, run.params)}};
  }
  json batch = nullptr;
  if (!run.batch.empty()) {
    batch = json::array();
    for (size_t i = 0; i < run.batch.size(); ++i) {
      const StepProfile &b = run.batch[i];
      json e = {{"position", b.position},
                {"sequences", b.rows},
                {"seconds_per_step", b.seconds},
                {"aggregate_tokens_per_second", batchFigures(run, i).aggregate},
                {"vs_one_sequence", batchFigures(run, i).vsOneSequence},
                {"weight_bytes_per_step", b.counts.weightBytes},
                {"ceiling_fraction", ceilingFraction(b, run.params)}};
      e.update(stepDetails(b));
      batch.push_back(e);
    }
  }
  json params = json::object();
  for (const Params::Info &i : Params::all())
    params[i.name] = run.params.*(i.field);
  json out = {{"bundle", run.bundle},
              {"machine", run.machine},
              {"today",
               {{"overlay_runs_it", run.today.overlayRunsIt},
                {"why", run.today.why},
                {"board_cpu_tokens_per_second_estimate",
                 run.today.cpuTokensPerSecond}}},
              {"sampling", samplingCostName(run.sampling)},
              {"decode", decode},
              {"prefill", prefill},
              {"parameters", params}};
  if (!batch.is_null())
    out["batch"] = batch;
  return out;
}

json renderTrace(const ProfileRun &run) {
  json events = json::array();
  auto process = [&](int pid, const std::string &name,
                     const StepProfile &step) {
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"name", "process_name"},
                      {"args", {{"name", name}}}});
    for (unsigned t = 0; t < kNumTracks; ++t) {
      events.push_back({{"ph", "M"},
                        {"pid", pid},
                        {"tid", t},
                        {"name", "thread_name"},
                        {"args", {{"name", trackName(Track(t))}}}});
      events.push_back({{"ph", "M"},
                        {"pid", pid},
                        {"tid", t},
                        {"name", "thread_sort_index"},
                        {"args", {{"sort_index", t}}}});
    }
    for (const Interval &i : step.timeline.intervals())
      events.push_back({{"ph", "X"},
                        {"pid", pid},
                        {"tid", unsigned(i.track)},
                        {"ts", i.start * 1e-3},
                        {"dur", (i.end - i.start) * 1e-3},
                        {"cat", i.category},
                        {"name", i.name}});
  };
  if (!run.decode.empty())
    process(1,
            "decode token at position " +
                std::to_string(run.decode.front().position),
            run.decode.front());
  if (run.hasPrefill)
    process(2,
            "prefill step of " + std::to_string(run.prefill.rows) +
                " rows at position 0",
            run.prefill);
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

bool writeFileAtomically(const std::string &path, const std::string &text,
                         std::string *error) {
  return writeOutputFile(path, text.data(), text.size(), error);
}

} // namespace pccx::prof

namespace pccx::prof {
namespace {

std::string escapeHtml(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// The families the categories are coloured by: one hue each, a shade per
/// member, so that pictures of different runs compare and the ~20 host
/// kernels read as a few kinds of work.
struct Family {
  const char *name;
  const char *base; ///< the family's colour in the legend
  std::vector<std::pair<const char *, const char *>> members;
};

const std::vector<Family> &families() {
  static const std::vector<Family> all = {
      {"NPU matrix engine (GEMV/GEMM)",
       "#1f77b4",
       {{"weight_streaming", "#1f77b4"}, {"npu_compute", "#6baed6"}}},
      {"NPU vector and memory engines",
       "#2ca02c",
       {{"sfu", "#2ca02c"}, {"memcpy", "#74c476"}, {"memset", "#196619"}}},
      {"driver: issue, sync, waits",
       "#bcbd22",
       {{"issue", "#7f7f1a"}, {"sync", "#bcbd22"}, {"wait", "#e8e8e8"}}},
      {"runtime copies",
       "#d62728",
       {{"runtime_copy:weight_staging", "#d62728"},
        {"runtime_copy:bf16_to_npu", "#e377c2"},
        {"runtime_copy:bf16_from_npu", "#f7b6d2"},
        {"runtime_copy:attention_masks", "#ff9896"}}},
      {"host: norms and RoPE",
       "#17becf",
       {{"host:rms_norm", "#0e7c87"},
        {"host:add_rms_norm", "#17becf"},
        {"host:query_norm_rope", "#5fd3df"},
        {"host:kv_norm_rope", "#a3e6ee"}}},
      {"host: attention and KV cache",
       "#ff7f0e",
       {{"host:attention_scores", "#b35300"},
        {"host:attention_values", "#ff7f0e"},
        {"host:cache_write", "#ffb26b"}}},
      {"host: AltUp, LAuReL, per-layer inputs",
       "#9467bd",
       {{"host:altup_init", "#4b2a73"},
        {"host:altup_predict", "#6a3d9a"},
        {"host:altup_correct", "#9467bd"},
        {"host:altup_collapse", "#b39ddb"},
        {"host:laurel_residual", "#c5b0d5"},
        {"host:per_layer_inputs", "#7b68ee"},
        {"host:ple_inject", "#dcd0ff"}}},
      {"host: embedding, elementwise, logits",
       "#8c564b",
       {{"host:embed", "#5c3a2e"},
        {"host:combine", "#8c564b"},
        {"host:mul", "#a9746a"},
        {"host:mul_tensor", "#c49c94"},
        {"host:gaussian_topk", "#6e4b3f"},
        {"host:fill", "#dbbfb8"},
        {"host:softcap", "#b08070"},
        {"host:emit_logits", "#3d2620"}}},
  };
  return all;
}

/// The family of categories no family lists (host kernels added later):
/// grey-blue shades by a stable hash of the name.
const char kOtherFamily[] = "other host work";

struct Style {
  std::string family, colour;
};

Style categoryStyle(const std::string &category) {
  for (const Family &f : families())
    for (const auto &[name, colour] : f.members)
      if (category == name)
        return {f.name, colour};
  uint32_t h = 2166136261u;
  for (unsigned char c : category)
    h = (h ^ c) * 16777619u;
  const unsigned v = 0x60 + (h & 0x5f);
  return {kOtherFamily, formatString("#%02x%02x%02x", v, v + 0x10, v + 0x20)};
}

std::string categoryColour(const std::string &category) {
  return categoryStyle(category).colour;
}

/// The timeline's geometry (px).
constexpr double kTimelineWidth = 1100, kTimelineLeft = 230,
                 kTimelineRow = 18;

/// One lane per engine track, boxes coloured by category; the script after
/// it (timelineScript) redraws the boxes when the view is zoomed or moved.
std::string timelineSvg(const StepProfile &step) {
  const double width = kTimelineWidth, left = kTimelineLeft,
               rowHeight = kTimelineRow, plot = width - left - 10;
  const double total = std::max(step.seconds * 1e9, 1e-9);
  const double scale = plot / total; // px per ns
  std::string s =
      "<div class=\"controls\"><button type=\"button\" id=\"tl-in\">Zoom "
      "in</button> <button type=\"button\" id=\"tl-out\">Zoom out</button> "
      "<button type=\"button\" id=\"tl-reset\">Whole step</button> "
      "<span id=\"tl-view\">" +
      formatString("the whole step, %.4f ms", total * 1e-6) +
      "</span> <span class=\"hint\">mouse wheel on the lanes: zoom at the "
      "pointer; drag: move</span></div>\n";
  s += formatString(
      "<svg id=\"tl-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\" "
      "shape-rendering=\"crispEdges\">\n"
      "<defs><clipPath id=\"tl-clip\"><rect x=\"%.0f\" y=\"0\" "
      "width=\"%.0f\" height=\"%.0f\"/></clipPath></defs>\n",
      width + 40, rowHeight * (kNumTracks + 2), left, plot + 1,
      rowHeight * kNumTracks);
  for (unsigned t = 0; t < kNumTracks; ++t) {
    if (t % 2 == 1)
      s += formatString("<rect x=\"0\" y=\"%.1f\" width=\"%.0f\" "
                        "height=\"%.1f\" fill=\"#f3f3f3\"/>\n",
                        rowHeight * t, width, rowHeight);
    s +=
        formatString("<text x=\"4\" y=\"%.1f\">%s</text>\n", rowHeight * t + 13,
                     escapeHtml(trackName(Track(t))).c_str());
  }
  // Merge neighbours of one category closer than half a pixel: a full-size
  // token has tens of thousands of intervals. Boxes are at least a pixel
  // wide and drawn without anti-aliasing, so a short interval still shows
  // in its own colour.
  struct Box {
    double x0, x1;
    std::string category;
  };
  std::vector<std::vector<Box>> rows(kNumTracks);
  for (const Interval &i : step.timeline.intervals()) {
    std::vector<Box> &row = rows[unsigned(i.track)];
    const double x0 = left + i.start * scale, x1 = left + i.end * scale;
    if (!row.empty() && row.back().category == i.category &&
        x0 - row.back().x1 < 0.5)
      row.back().x1 = std::max(row.back().x1, x1);
    else
      row.push_back({x0, x1, i.category});
  }
  s += "<g id=\"tl-lanes\" clip-path=\"url(#tl-clip)\">\n";
  for (unsigned t = 0; t < kNumTracks; ++t) {
    s += formatString("<g data-lane=\"%u\">\n", t);
    for (const Box &b : rows[t])
      s += formatString(
          "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
          "fill=\"%s\"><title>%s</title></rect>\n",
          b.x0, rowHeight * t + 2, std::max(b.x1 - b.x0, 1.0), rowHeight - 4,
          categoryColour(b.category).c_str(), escapeHtml(b.category).c_str());
    s += "</g>\n";
  }
  s += "</g>\n<g id=\"tl-axis\">\n";
  const double axisY = rowHeight * kNumTracks + 12;
  for (int tick = 0; tick <= 4; ++tick) {
    const double x = left + plot * tick / 4;
    s += formatString("<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%.1f\" "
                      "stroke=\"#ccc\" stroke-width=\"0.5\"/>\n"
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
                      "%.3f ms</text>\n",
                      x, x, axisY - 10, x, axisY + 6, total * 1e-6 * tick / 4);
  }
  return s + "</g>\n</svg>\n";
}

/// The legend: each family present in `step`'s timeline with its members'
/// shades.
std::string legendHtml(const StepProfile &step) {
  std::set<std::string> present;
  for (const Interval &i : step.timeline.intervals())
    present.insert(i.category);
  std::vector<std::pair<std::string, std::string>> groups; // family, items
  std::vector<std::string> baseOf;
  auto add = [&](const std::string &family, const std::string &base,
                 const std::string &category, const std::string &colour) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto &g) { return g.first == family; });
    if (it == groups.end()) {
      groups.push_back({family, ""});
      baseOf.push_back(base);
      it = groups.end() - 1;
    }
    it->second += "<span class=\"item\"><span class=\"swatch\" "
                  "style=\"background:" +
                  colour + "\"></span>" + escapeHtml(category) + "</span> ";
  };
  for (const Family &f : families())
    for (const auto &[name, colour] : f.members)
      if (present.count(name))
        add(f.name, f.base, name, colour);
  for (const std::string &category : present) {
    const Style style = categoryStyle(category);
    if (style.family == kOtherFamily)
      add(kOtherFamily, "#8090a0", category, style.colour);
  }
  std::string s = "<div class=\"legend\" id=\"legend\">\n";
  for (size_t g = 0; g < groups.size(); ++g)
    s += "<div class=\"family\"><span class=\"family-name\" "
         "style=\"border-left-color:" +
         baseOf[g] + "\">" + escapeHtml(groups[g].first) + "</span> " +
         groups[g].second + "</div>\n";
  return s + "</div>\n";
}

/// The timeline's intervals for the script: per lane, start and end (ns)
/// and the category's index, flat.
std::string timelineData(const StepProfile &step) {
  std::vector<std::string> categories;
  std::map<std::string, size_t> index;
  std::vector<std::string> lanes(kNumTracks);
  for (const Interval &i : step.timeline.intervals()) {
    auto [it, added] = index.emplace(i.category, categories.size());
    if (added)
      categories.push_back(i.category);
    std::string &lane = lanes[unsigned(i.track)];
    lane += formatString("%s%.3f,%.3f,%zu", lane.empty() ? "" : ",", i.start,
                         i.end, it->second);
  }
  json names = categories, colours = json::array();
  for (const std::string &c : categories)
    colours.push_back(categoryColour(c));
  std::string s = formatString(
      "{\"total\":%.3f,\"left\":%.0f,\"width\":%.0f,\"row\":%.0f,",
      std::max(step.seconds * 1e9, 1e-9), kTimelineLeft,
      kTimelineWidth - kTimelineLeft - 10, kTimelineRow);
  // "</" never appears in the data: the names are escaped for a script.
  std::string namesText = names.dump(), coloursText = colours.dump();
  for (std::string *text : {&namesText, &coloursText})
    for (size_t at = 0; (at = text->find("</", at)) != std::string::npos;)
      text->replace(at, 2, "<\\/");
  s += "\"categories\":" + namesText + ",\"colours\":" + coloursText +
       ",\"lanes\":[";
  for (unsigned t = 0; t < kNumTracks; ++t)
    s += std::string(t ? "," : "") + "[" + lanes[t] + "]";
  return s + "]}";
}

/// Zoom and move for the timeline, in the page (no other file). Redraws
/// the boxes of the view as timelineSvg draws the whole step: neighbours
/// of one category closer than half a pixel merged, at least a pixel wide.
/// "#zoom=F" in the address opens the page zoomed F times at the middle.
const char kTimelineScript[] = R"JS(
(function () {
  var d = PCCX_TIMELINE, svg = document.getElementById("tl-svg");
  if (!svg) return;
  var NS = "http://www.w3.org/2000/svg";
  var lanes = document.querySelectorAll("#tl-lanes > g");
  var axis = document.getElementById("tl-axis");
  var label = document.getElementById("tl-view");
  var v0 = 0, v1 = d.total, minSpan = Math.max(d.total / 65536, 1e-3);
  function fmt(ms, span) {
    var digits = span >= 1 ? 3 : span >= 0.01 ? 4 : 6;
    return ms.toFixed(digits);
  }
  function draw() {
    var scale = d.width / (v1 - v0);
    for (var t = 0; t < lanes.length; t++) {
      var g = lanes[t], data = d.lanes[t];
      while (g.firstChild) g.removeChild(g.firstChild);
      var boxes = [];
      for (var k = 0; k + 2 < data.length; k += 3) {
        if (data[k + 1] < v0 || data[k] > v1) continue;
        var x0 = d.left + (data[k] - v0) * scale;
        var x1 = d.left + (data[k + 1] - v0) * scale, c = data[k + 2];
        var last = boxes[boxes.length - 1];
        if (last && last[2] === c && x0 - last[1] < 0.5)
          last[1] = Math.max(last[1], x1);
        else
          boxes.push([x0, x1, c]);
      }
      for (var b = 0; b < boxes.length; b++) {
        var r = document.createElementNS(NS, "rect");
        r.setAttribute("x", boxes[b][0].toFixed(2));
        r.setAttribute("y", (d.row * t + 2).toFixed(1));
        r.setAttribute("width", Math.max(boxes[b][1] - boxes[b][0], 1).toFixed(2));
        r.setAttribute("height", (d.row - 4).toFixed(1));
        r.setAttribute("fill", d.colours[boxes[b][2]]);
        var title = document.createElementNS(NS, "title");
        title.textContent = d.categories[boxes[b][2]];
        r.appendChild(title);
        g.appendChild(r);
      }
    }
    var texts = axis.querySelectorAll("text"), span = (v1 - v0) * 1e-6;
    for (var i = 0; i < texts.length; i++)
      texts[i].textContent =
          fmt((v0 + (v1 - v0) * i / (texts.length - 1)) * 1e-6, span) + " ms";
    var zoom = d.total / (v1 - v0);
    label.textContent = fmt(v0 * 1e-6, span) + "\u2013" + fmt(v1 * 1e-6, span) +
        " ms of " + (d.total * 1e-6).toFixed(4) + " ms (" +
        (zoom < 10 ? zoom.toFixed(1) : zoom.toFixed(0)) + "\u00d7)";
    svg.setAttribute("data-zoom", zoom.toFixed(3));
  }
  function view(a, b) {
    var span = Math.min(Math.max(b - a, minSpan), d.total);
    a = Math.min(Math.max(a, 0), d.total - span);
    v0 = a; v1 = a + span;
    draw();
  }
  function zoomAt(t, factor) {
    view(t - (t - v0) / factor, t + (v1 - t) / factor);
  }
  function timeAt(clientX) {
    var x = clientX - svg.getBoundingClientRect().left - d.left;
    return v0 + Math.min(Math.max(x, 0), d.width) * (v1 - v0) / d.width;
  }
  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    zoomAt(timeAt(e.clientX), e.deltaY < 0 ? 1.25 : 0.8);
  }, {passive: false});
  var dragX = null;
  svg.addEventListener("mousedown", function (e) { dragX = e.clientX; });
  window.addEventListener("mouseup", function () { dragX = null; });
  window.addEventListener("mousemove", function (e) {
    if (dragX === null) return;
    var dt = (dragX - e.clientX) * (v1 - v0) / d.width;
    dragX = e.clientX;
    view(v0 + dt, v1 + dt);
  });
  document.getElementById("tl-in").onclick = function () {
    zoomAt((v0 + v1) / 2, 2);
  };
  document.getElementById("tl-out").onclick = function () {
    zoomAt((v0 + v1) / 2, 0.5);
  };
  document.getElementById("tl-reset").onclick = function () {
    view(0, d.total);
  };
  var m = /zoom=([0-9.]+)/.exec(window.location.hash);
  if (m && parseFloat(m[1]) > 0) zoomAt(d.total / 2, parseFloat(m[1]));
  else draw();
})();
)JS";

std::string sweepSvg(const ProfileRun &run) {
  const double width = 600, height = 300, left = 70, bottom = 40, top = 15,
               right = 20;
  double maxPos = 1, maxMs = 0;
  for (const StepProfile &d : run.decode) {
    maxPos = std::max(maxPos, double(d.position));
    maxMs = std::max(maxMs, d.seconds * 1e3);
  }
  maxMs = maxMs > 0 ? maxMs * 1.1 : 1;
  auto px = [&](double pos) {
    return left + (width - left - right) * pos / maxPos;
  };
  auto py = [&](double ms) {
    return height - bottom - (height - bottom - top) * ms / maxMs;
  };
  std::string s = formatString(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
      "stroke=\"#000\"/>\n"
      "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
      "stroke=\"#000\"/>\n"
      "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">context "
      "position</text>\n"
      "<text x=\"14\" y=\"%.0f\" transform=\"rotate(-90 14 %.0f)\" "
      "text-anchor=\"middle\">ms per decode token</text>\n",
      width, height, left, height - bottom, width - right, height - bottom,
      left, top, left, height - bottom, (left + width - right) / 2, height - 6,
      (top + height - bottom) / 2, (top + height - bottom) / 2);
  for (int tick = 0; tick <= 4; ++tick) {
    const double ms = maxMs * tick / 4, pos = maxPos * tick / 4;
    // Plain decimals (no exponent) with as many digits as the scale needs.
    const int decimals = maxMs >= 100 ? 0 : maxMs >= 1 ? 2 : 4;
    s += formatString("<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.*f"
                      "</text>\n<text x=\"%.1f\" y=\"%.0f\" "
                      "text-anchor=\"middle\">%.0f</text>\n",
                      left - 4, py(ms) + 4, decimals, ms, px(pos),
                      height - bottom + 14, pos);
  }
  std::string points;
  for (const StepProfile &d : run.decode) {
    points +=
        formatString("%.1f,%.1f ", px(double(d.position)), py(d.seconds * 1e3));
    s += formatString("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                      "fill=\"#1f77b4\"><title>position %lld: %.4f ms"
                      "</title></circle>\n",
                      px(double(d.position)), py(d.seconds * 1e3),
                      (long long)d.position, d.seconds * 1e3);
  }
  s += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" "
       "points=\"" +
       points + "\"/>\n";
  return s + "</svg>\n";
}


/// A step's critical path, category by category, largest first.
std::string breakdownTable(const StepProfile &step) {
  std::string s = "<table><tr><th>category</th><th>ms</th><th>share</th>"
                  "</tr>\n";
  for (const auto &[category, seconds] : sortedBreakdown(step))
    s += formatString("<tr><td><span class=\"swatch\" style=\"background:%s"
                      "\"></span>%s</td><td>%.4f</td><td>%.1f %%</td></tr>\n",
                      categoryColour(category).c_str(),
                      escapeHtml(category).c_str(), seconds * 1e3,
                      100 * seconds / step.seconds);
  return s + "</table>\n";
}

std::string layersTable(const StepProfile &step) {
  std::string s = "<table><tr><th>segment group</th><th>ms</th></tr>\n";
  for (const auto &[layer, seconds] : byLayer(step))
    s += formatString("<tr><td>%s</td><td>%.4f</td></tr>\n",
                      escapeHtml(layer).c_str(), seconds * 1e3);
  return s + "</table>\n";
}

/// Busy time of every engine track (the text output's "engine busy"), one
/// column pair per step.
std::string engineBusyTable(
    const std::vector<std::pair<std::string, const StepProfile *>> &steps) {
  std::string s = "<table id=\"engine-busy\"><tr><th>engine</th>";
  std::vector<std::map<std::string, double>> busy;
  for (const auto &[title, step] : steps) {
    s += "<th>" + escapeHtml(title) + " (ms)</th><th>share</th>";
    busy.push_back(step->timeline.busyByTrack());
  }
  s += "</tr>\n";
  for (unsigned t = 0; t < kNumTracks; ++t) {
    const std::string name = trackName(Track(t));
    s += "<tr><td>" + escapeHtml(name) + "</td>";
    for (size_t k = 0; k < steps.size(); ++k) {
      auto it = busy[k].find(name);
      const double ns = it == busy[k].end() ? 0 : it->second;
      s += formatString("<td>%.4f</td><td>%.1f %%</td>", ns * 1e-6,
                        100 * ns * 1e-9 / steps[k].second->seconds);
    }
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

} // namespace

std::string renderHtml(const ProfileRun &run) {
  const Params &p = run.params;
  std::string s =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>"
      "pccx-prof: " +
      escapeHtml(run.bundle) +
      "</title>\n<style>body{font-family:sans-serif;margin:20px}"
      "table{border-collapse:collapse;margin:8px 0 20px}"
      "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}"
      "td:first-child,th:first-child{text-align:left}"
      ".swatch{display:inline-block;width:12px;height:12px;margin-right:6px;"
      "vertical-align:middle}"
      ".controls{margin:6px 0}.controls button{margin-right:4px}"
      ".hint{color:#666;font-size:90%}"
      "#tl-svg{cursor:grab;user-select:none}"
      ".legend{margin:8px 0 20px;font-size:13px}"
      ".family{margin:3px 0}.family-name{display:inline-block;"
      "min-width:280px;font-weight:bold;border-left:14px solid;"
      "padding-left:6px;margin-right:8px}"
      ".item{display:inline-block;margin-right:12px}"
      "</style></head><body>\n<h1>pccx-prof: " +
      escapeHtml(run.bundle) + "</h1>\n";
  s += formatString("<p>Modelled on the KV260, machine %s: v002 overlay at "
                    "%.0f MHz core, %.0f MHz AXI, "
                    "%.0f &times; Cortex-A53 at %.0f MHz, DDR %.0f MB/s "
                    "effective. A model, not a measurement: "
                    "docs/performance.md lists every assumption.</p>\n",
                    escapeHtml(run.machine).c_str(), p.core_clock_mhz,
                    p.axi_clock_mhz, p.host_cores, p.host_cpu_mhz,
                    p.ddr_effective_mb_per_s);
  s += "<p class=\"today\"><b>" + escapeHtml(todayText(run)) + "</b></p>\n";
  s += "<h2>Figures</h2>\n<table><tr><th>step</th><th>ms</th><th>tok/s</th>"
       "<th>weight MB/step</th><th>ceiling fraction</th></tr>\n";
  for (const StepProfile &d : run.decode)
    s += formatString("<tr><td>decode at position %lld</td><td>%.4f</td>"
                      "<td>%.3f</td><td>%.3f</td><td>%.4f</td></tr>\n",
                      (long long)d.position, d.seconds * 1e3, 1 / d.seconds,
                      double(d.counts.weightBytes) * 1e-6,
                      ceilingFraction(d, p));
  if (run.hasPrefill)
    s += formatString("<tr><td>prefill, %lld rows at position 0</td>"
                      "<td>%.4f</td><td>%.3f</td><td>%.3f</td><td>%.4f</td>"
                      "</tr>\n",
                      (long long)run.prefill.rows, run.prefill.seconds * 1e3,
                      double(run.prefill.rows) / run.prefill.seconds,
                      double(run.prefill.counts.weightBytes) * 1e-6,
                      ceilingFraction(run.prefill, p));
  s += "</table>\n";
  if (!run.batch.empty()) {
    s += formatString("<h2>Batched decode: %lld sequences per step</h2>\n"
                      "<table id=\"batch\"><tr><th>position</th><th>ms/step"
                      "</th><th>aggregate tok/s</th><th>vs one sequence</th>"
                      "<th>weight MB/step</th></tr>\n",
                      (long long)run.batch[0].rows);
    for (size_t i = 0; i < run.batch.size(); ++i) {
      const StepProfile &b = run.batch[i];
      const BatchFigures f = batchFigures(run, i);
      s += formatString("<tr><td>%lld</td><td>%.4f</td><td>%.3f</td>"
                        "<td>%.2f&times;</td><td>%.3f</td></tr>\n",
                        (long long)b.position, b.seconds * 1e3, f.aggregate,
                        f.vsOneSequence,
                        double(b.counts.weightBytes) * 1e-6);
    }
    s += "</table>\n";
  }
  if (run.decode.empty())
    return s + "</body></html>\n";
  const StepProfile &first = run.decode.front();
  s += formatString("<h2>Timeline of a decode token at position %lld</h2>\n",
                    (long long)first.position) +
       timelineSvg(first) + legendHtml(first);
  s += "<script>\nvar PCCX_TIMELINE = " + timelineData(first) + ";\n" +
       kTimelineScript + "</script>\n";
  s += "<h2>Time per decode token over the context position</h2>\n" +
       sweepSvg(run);
  s += "<h2>Critical path of that token</h2>\n" + breakdownTable(first);
  s += "<h2>By layer</h2>\n" + layersTable(first);
  std::vector<std::pair<std::string, const StepProfile *>> steps;
  for (const StepProfile &d : run.decode)
    steps.push_back({"decode at " + std::to_string(d.position), &d});
  if (run.hasPrefill)
    steps.push_back({"prefill", &run.prefill});
  for (const StepProfile &b : run.batch)
    steps.push_back({std::to_string(b.rows) + " sequences at " +
                         std::to_string(b.position),
                     &b});
  s += "<h2>Engine busy</h2>\n<p>Time each engine track is occupied in the "
       "step, and its share of the step's time (tracks run side by side; "
       "the host's waits are not counted).</p>\n" +
       engineBusyTable(steps);
  if (run.hasPrefill) {
    const StepProfile &f = run.prefill;
    s += formatString(
        "<h2>Prefill step: %lld rows at position 0</h2>\n<p id=\"prefill\">"
        "%.4f ms per step, %.3f tok/s, %.3f weight MB per step, ceiling "
        "fraction %.4f.</p>\n<h3>Critical path</h3>\n",
        (long long)f.rows, f.seconds * 1e3, double(f.rows) / f.seconds,
        double(f.counts.weightBytes) * 1e-6, ceilingFraction(f, p));
    s += breakdownTable(f) + "<h3>By layer</h3>\n" + layersTable(f);
  } else {
    s += "<h2>Prefill step</h2>\n<p id=\"prefill\">The bundle has no prefill "
         "program.</p>\n";
  }
  return s + "</body></html>\n";
}

} // namespace pccx::prof
