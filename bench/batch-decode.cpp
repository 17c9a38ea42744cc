//===- batch-decode.cpp - aggregate decode speed by sequences per step ----===//
//
// Decodes B sequences together (Session::step over B slots: one pass over
// the weights per step) for each B given, on the simulator device
// (integer numerics by default), and prints per B the time per step, the aggregate and
// per-sequence tokens/s, the weight bytes a step streams, and the aggregate
// against B = 1 measured in the same run. The bundle needs a decode_batch
// program of at least the largest B (pccx-compile --decode-batch).
//
//   bench-batch-decode BUNDLE [--batch 1,2,4,8] [--steps N] [--threads T]
//                      [--numerics integer|hardware|reference]
//
// Defaults: B = 1, 2, 4, 8; 8 steps after a 4-token prompt per sequence
// and a warm-up step; every hardware thread.
//
//===----------------------------------------------------------------------===//

#include "runtime/devices/SimDevice.h"
#include "runtime/exec/Session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace pccx;

namespace {

double seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

struct StepFigures {
  double secondsPerStep = 0, bytesPerStep = 0;
};

bool measure(const exec::Model &model, sim::Numerics numerics, int batch,
             int steps, unsigned threads, StepFigures *out,
             std::string *error) {
  auto device = std::make_unique<device::SimDevice>(numerics, model.target());
  device->simulator().setThreads(threads);
  exec::Session session(model, std::move(device));
  if (!session.reserveSlots(batch, error))
    return false;
  const int32_t vocab = int32_t(model.vocabSize());
  for (int s = 0; s < batch; ++s)
    if (!session.consume(s, {model.bosToken() >= 0 ? model.bosToken() : 1,
                             100 + s, 200 + s, 300 + s},
                         true, nullptr, error))
      return false;
  auto rows = [&](int step) {
    std::vector<exec::Session::StepRow> r;
    for (int s = 0; s < batch; ++s)
      r.push_back({s, int32_t(500 + 7 * step + 13 * s) % vocab});
    return r;
  };
  if (!session.step(rows(0), nullptr, error)) // warm-up
    return false;
  if (session.position(0) + steps > session.capacity()) {
    *error = "the bundle's KV cache holds " +
             std::to_string(session.capacity()) + " positions; ask fewer --steps";
    return false;
  }
  const uint64_t bytes0 = session.stats().weightBytes;
  const double t0 = seconds();
  for (int i = 1; i <= steps; ++i)
    if (!session.step(rows(i), nullptr, error))
      return false;
  out->secondsPerStep = (seconds() - t0) / steps;
  out->bytesPerStep =
      double(session.stats().weightBytes - bytes0) / double(steps);
  return true;
}

std::vector<int> parseList(const std::string &text) {
  std::vector<int> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char *end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 1 || v > 256)
      return {};
    values.push_back(int(v));
  }
  return values;
}

int usage() {
  std::fprintf(stderr, "usage: bench-batch-decode BUNDLE [--batch 1,2,4,8] "
                       "[--steps N] [--threads T] "
                       "[--numerics integer|hardware|reference]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string bundlePath;
  std::vector<int> batches = {1, 2, 4, 8};
  int steps = 8;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  sim::Numerics numerics = sim::Numerics::Integer;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--batch" && i + 1 < argc)
      batches = parseList(argv[++i]);
    else if (a == "--steps" && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      threads = unsigned(std::max(1, std::atoi(argv[++i])));
    else if (a == "--numerics" && i + 1 < argc) {
      if (!sim::parseNumerics(argv[++i], &numerics))
        return usage();
    } else if (!a.empty() && a[0] != '-' && bundlePath.empty())
      bundlePath = a;
    else
      return usage();
  }
  if (bundlePath.empty() || batches.empty() || steps < 1)
    return usage();
  std::string error;
  auto model = exec::Model::load(bundlePath, &error);
  if (!model) {
    std::fprintf(stderr, "bench-batch-decode: %s\n", error.c_str());
    return 1;
  }
  const int64_t rows = model->batch() ? model->batch()->rows : 1;
  for (int b : batches)
    if (b > rows) {
      std::fprintf(stderr,
                   "bench-batch-decode: %s decodes at most %lld sequences "
                   "per step (compile with --decode-batch %d)\n",
                   bundlePath.c_str(), (long long)rows, b);
      return 1;
    }
  std::printf("bench-batch-decode: %s, batch program of %lld rows, %d steps "
              "after a 4-token prompt per sequence, %s numerics, %u "
              "thread%s\n",
              bundlePath.c_str(), (long long)rows, steps,
              sim::numericsName(numerics), threads,
              threads == 1 ? "" : "s");
  std::printf("| sequences | ms/step | aggregate tok/s | tok/s per sequence "
              "| MiB streamed/step | aggregate vs 1 |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|\n");
  double single = 0;
  for (int b : batches) {
    StepFigures f;
    if (!measure(*model, numerics, b, steps, threads, &f, &error)) {
      std::fprintf(stderr, "bench-batch-decode: %s\n", error.c_str());
      return 1;
    }
    const double aggregate = b / f.secondsPerStep;
    if (single == 0 && b == 1)
      single = aggregate;
    char ratio[32] = "-";
    if (single > 0)
      std::snprintf(ratio, sizeof ratio, "%.2fx", aggregate / single);
    std::printf("| %d | %.1f | %.2f | %.2f | %.1f | %s |\n", b,
                f.secondsPerStep * 1e3, aggregate, aggregate / b,
                f.bytesPerStep / double(1 << 20), ratio);
  }
  return 0;
}
