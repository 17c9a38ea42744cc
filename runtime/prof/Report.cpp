//===- Report.cpp - pccx-prof's outputs -----------------------------------===//

#include "runtime/prof/Report.h"

#include "hw/support/Format.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

using nlohmann::json;

namespace pccx::prof {

bool profileModel(const exec::Model &model,
                  const std::vector<int64_t> &positions, const Params &params,
                  ProfileRun *out, std::string *error) {
  out->params = params;
  ReplayContext context{&model.caches(), model.maxPositions()};
  if (!model.decode()) {
    *error = "the bundle has no decode program";
    return false;
  }
  for (int64_t position : positions) {
    out->decode.emplace_back();
    if (!profileStep(*model.decode(), context, position, params,
                     &out->decode.back(), error))
      return false;
  }
  out->hasPrefill = model.prefill() != nullptr;
  if (out->hasPrefill &&
      !profileStep(*model.prefill(), context, 0, params, &out->prefill, error))
    return false;
  return true;
}

double ddrCeilingFraction(const StepProfile &step, const Params &params) {
  const double ddrSeconds =
      double(step.counts.weightBytes) / (params.ddr_effective_mb_per_s * 1e6);
  return step.seconds > 0 ? ddrSeconds / step.seconds : 0;
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
  return {{"instructions", c.instructions},
          {"host_ops", c.hostOps},
          {"syncs", c.syncs},
          {"weight_bytes", c.weightBytes}};
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

void appendStep(std::string &s, const char *title, const StepProfile &step) {
  s += formatString("\n%s (critical path, ms):\n", title);
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

std::string renderText(const ProfileRun &run) {
  const Params &p = run.params;
  std::string s = formatString(
      "%s on the KV260 model: v002 overlay at %.0f MHz, %.0f x Cortex-A53 "
      "at %.0f MHz, DDR %.0f MB/s effective\n",
      run.bundle.c_str(), p.core_clock_mhz, p.host_cores, p.host_cpu_mhz,
      p.ddr_effective_mb_per_s);
  s += "\ndecode:\n  position    ms/token       tok/s  weight MB/token  "
       "DDR-ceiling fraction\n";
  for (const StepProfile &d : run.decode)
    s += formatString("  %8lld %11.4f %11.3f %16.3f %21.4f\n",
                      (long long)d.position, d.seconds * 1e3, 1 / d.seconds,
                      double(d.counts.weightBytes) * 1e-6,
                      ddrCeilingFraction(d, p));
  if (run.hasPrefill)
    s += formatString("\nprefill: %lld rows at position 0: %.4f ms/step, "
                      "%.3f tok/s, %.3f weight MB/step\n",
                      (long long)run.prefill.rows, run.prefill.seconds * 1e3,
                      double(run.prefill.rows) / run.prefill.seconds,
                      double(run.prefill.counts.weightBytes) * 1e-6);
  else
    s += "\nprefill: the bundle has no prefill program\n";
  for (const StepProfile &d : run.decode) {
    std::string title =
        "decode token at position " + std::to_string(d.position);
    appendStep(s, title.c_str(), d);
  }
  if (run.hasPrefill)
    appendStep(s, "prefill step at position 0", run.prefill);
  return s;
}

json renderJson(const ProfileRun &run) {
  json decode = json::array();
  for (const StepProfile &d : run.decode) {
    json e = {{"position", d.position},
              {"seconds_per_token", d.seconds},
              {"tokens_per_second", 1 / d.seconds},
              {"weight_bytes_per_token", d.counts.weightBytes},
              {"ddr_ceiling_fraction", ddrCeilingFraction(d, run.params)}};
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
               {"ddr_ceiling_fraction", ddrCeilingFraction(f, run.params)}};
    prefill.update(stepDetails(f));
  }
  json params = json::object();
  for (const Params::Info &i : Params::all())
    params[i.name] = run.params.*(i.field);
  return {{"bundle", run.bundle},
          {"decode", decode},
          {"prefill", prefill},
          {"parameters", params}};
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
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      *error = "cannot write '" + tmp + "': " + std::strerror(errno);
      return false;
    }
    out << text;
    out.flush();
    if (!out) {
      *error = "write to '" + tmp + "' failed";
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename '" + tmp + "' to '" + path +
             "': " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

} // namespace pccx::prof
