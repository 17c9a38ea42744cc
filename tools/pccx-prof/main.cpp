//===- main.cpp - pccx-prof -------------------------------------*- C++ -*-===//
//
// Predicts how a .pccx bundle runs on the KV260: replays its prepared
// programs on the timing model of runtime/prof. This file reads the
// command line.
//
//===----------------------------------------------------------------------===//

#include "hw/support/Format.h"
#include "runtime/prof/Calibrate.h"
#include "runtime/prof/Machines.h"
#include "runtime/prof/Report.h"
#include "tools/common/CommandLine.h"
#include "tools/common/GuardedMain.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

namespace {

const char kHelp[] =
    R"(USAGE: pccx-prof MODEL.pccx [options]
       pccx-prof --calibrate FILE [--set host_cpu_mhz=MHZ]

Predicts the time of a bundle on the KV260 (v002 overlay plus the board's
Cortex-A53 host) without running it: the decode program is replayed at each
context position and the prefill program at position 0, in the runtime's
order (segments, syncs, patch values, weight records, host calls) and with
the KV260 driver's copies, on an event model of the NPU engines, the HP
ports, DDR and the host. Nothing is executed functionally. The model and
every parameter's source are in docs/performance.md.

OPTIONS:
  --machine NAME        the machine modelled (default v002): v002, the
                        overlay as documented (400 MHz core, 250 MHz AXI);
                        kv260-as-built, the overlay as built (one 100 MHz
                        clock, host window through HP0, SFU bridge at 3
                        clocks an element); --params and --set apply after
  --positions P,...     decode context positions (default 512, or the
                        bundle's last position if it holds fewer); the
                        attention span of sliding layers is
                        min(position + 1, window)
  --sampling MODE       the host's choice of each generated token, added
                        to every decode step as host:sampler: sampled
                        (default; temperature > 0, as pccx-serve's
                        default: an exp per vocabulary entry), greedy (an
                        argmax) or none (the program alone)
  --batch B             also the batch program of B rows (a bundle compiled
                        with --decode-batch): B sequences decoded in one
                        step at each position, their aggregate tokens/s
                        and its ratio to one sequence's (JSON: "batch")
  --set NAME=VALUE      override a parameter (repeatable), e.g.
                        --set ddr_effective_mb_per_s=12000
  --params FILE         load parameters from a file of NAME=VALUE lines
                        ('#' starts a comment); --set applies after it
  --list-parameters     print every parameter with its unit and source
                        (values changed by --params or --set are marked)
  --calibrate FILE      measure the host costs (fp32 operation, libm call,
                        memory read rate, host-call overhead, BF16
                        conversion) on this machine and write them as a
                        parameter file for --params; run it on the board
  --json                print the figures as one JSON object:
                        {"bundle", "decode": [{"position",
                        "seconds_per_token", "tokens_per_second",
                        "weight_bytes_per_token", "ceiling_fraction",
                        "ceiling": {"seconds", "formula", ...},
                        "breakdown": {CATEGORY: seconds}, "by_layer",
                        "engine_busy_seconds", "counts"}], "prefill":
                        {"rows", "position", "seconds_per_step",
                        "tokens_per_second", ...} or null, "parameters"}
  --trace FILE.json     write a Chrome/Perfetto trace (one track per engine)
                        of the first decode position and the prefill step
  --report FILE.html    write one self-contained page (its script and
                        style inline, nothing fetched): the figures, an SVG
                        timeline of the first position's decode token with
                        a lane per engine (mouse wheel or buttons zoom,
                        drag moves; #zoom=F after the file name opens it
                        zoomed F times), coloured by families of
                        categories with a legend, an SVG plot of the time
                        per token over the positions, the breakdown and
                        layers of that token, the engine busy table of
                        every step, and the prefill step's breakdown and
                        layers
  -h, --help            show this help
  --version             print the version and exit

The breakdown is the critical path: the runtime thread's own work (issue,
runtime copies, host kernels by kind, sync latency) plus, while it waits,
the chain of NPU instructions it waits for (weight streaming or NPU compute
per GEMV/GEMM, SFU, MEMCPY, MEMSET); its categories sum to the step time.
)";

bool parsePositions(const std::string &text, std::vector<int64_t> *out,
                    std::string *error) {
  out->clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(start, end - start);
    char *stop = nullptr;
    long long v = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop || v < 0) {
      *error = "--positions: '" + item + "' is not a position";
      return false;
    }
    out->push_back(v);
    start = end + 1;
  }
  return true;
}

} // namespace

static int run(int argc, char **argv) {
  pccx::tools::CommandLine cl("pccx-prof");
  std::string machine = pccx::prof::kDefaultMachine;
  std::string bundlePath, tracePath, reportPath, paramsPath, calibratePath;
  std::vector<std::string> sets;
  std::vector<int64_t> positions;
  pccx::prof::Params params;
  bool asJson = false, listParams = false;
  int64_t batchRows = 0;
  pccx::prof::SamplingCost sampling = pccx::prof::SamplingCost::Sampled;
  std::string error;
  cl.help([] { return std::string(kHelp); });
  cl.positional("bundle", &bundlePath);
  cl.text("--machine", &machine);
  cl.value("--positions", [&](const std::string &text) {
    std::string why;
    parsePositions(text, &positions, &why);
    return why;
  });
  cl.value("--sampling", [&](const std::string &text) {
    return pccx::prof::parseSamplingCost(text, &sampling)
               ? std::string()
               : std::string("--sampling must be sampled, greedy or none");
  });
  cl.range("--batch", 2, 256, [&](int64_t n) { batchRows = n; });
  cl.value("--set", [&](const std::string &assignment) {
    sets.push_back(assignment);
    return std::string();
  });
  cl.text("--params", &paramsPath);
  cl.text("--calibrate", &calibratePath);
  cl.flag("--list-parameters", &listParams);
  cl.flag("--json", &asJson);
  cl.text("--trace", &tracePath);
  cl.text("--report", &reportPath);
  int status = 0;
  if (!cl.parse(argc, argv, &status))
    return status;
  if (!pccx::prof::applyMachine(machine, &params, &error))
    return cl.fail(error);
  if (!paramsPath.empty() && !params.load(paramsPath, &error))
    return cl.fail(error);
  for (const std::string &assignment : sets)
    if (!params.set(assignment, &error))
      return cl.fail(error);
  if (!calibratePath.empty()) {
    if (!pccx::prof::writeFileAtomically(
            calibratePath, pccx::prof::calibrateHost(params), &error))
      return cl.fail(error);
    std::cout << "wrote " << calibratePath << "\n";
    return 0;
  }
  if (listParams) {
    // A value from --params or --set says so: its source line is the
    // default's; a machine's value gives the machine's source.
    pccx::prof::Params defaults;
    pccx::prof::applyMachine(machine, &defaults, &error);
    std::map<std::string, std::string> machineSources;
    for (const auto &m : pccx::prof::machines())
      if (machine == m.name)
        for (const auto &setting : m.settings)
          machineSources[setting.param] =
              "machine " + machine + ": " + setting.source;
    for (const auto &p : pccx::prof::Params::all()) {
      const double value = params.*(p.field), initial = defaults.*(p.field);
      const auto fromMachine = machineSources.find(p.name);
      std::string source =
          fromMachine != machineSources.end() ? fromMachine->second : p.source;
      if (value != initial)
        source =
            pccx::formatString("set (default %g: %s)", initial, source.c_str());
      std::printf("%-36s %14g %-14s %s\n", p.name, value, p.unit,
                  source.c_str());
    }
    return 0;
  }
  if (bundlePath.empty())
    return cl.fail("no bundle given (usage: pccx-prof MODEL.pccx; see --help)");
  auto model = pccx::exec::Model::load(bundlePath, &error);
  if (!model)
    return cl.fail(error);
  if (positions.empty()) // a small bundle (the demo's 256) holds fewer
    positions = {std::max<int64_t>(0, std::min<int64_t>(512, model->maxSeqLen() - 1))};
  pccx::prof::ProfileRun run;
  run.bundle = bundlePath;
  run.machine = machine;
  run.sampling = sampling;
  if (!pccx::prof::profileModel(*model, positions, params, &run, &error,
                                batchRows))
    return cl.fail(bundlePath + ": " + error);
  if (!tracePath.empty() &&
      !pccx::prof::writeFileAtomically(
          tracePath, pccx::prof::renderTrace(run).dump() + "\n", &error))
    return cl.fail(error);
  if (!reportPath.empty() &&
      !pccx::prof::writeFileAtomically(reportPath, pccx::prof::renderHtml(run),
                                       &error))
    return cl.fail(error);
  if (asJson)
    std::cout << pccx::prof::renderJson(run).dump(2) << "\n";
  else
    std::cout << pccx::prof::renderText(run);
  return 0;
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-prof", [&] { return run(argc, argv); });
}
