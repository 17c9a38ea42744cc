//===- cpu-decode.cpp - decode on this CPU against its memory bandwidth ---===//
//
// Decodes tokens of a bundle on the simulator device (integer numerics by
// default, the board's CPU path: docs/kv260.md) at each thread count given
// and, in the same run, copies a buffer far larger than any cache with as
// many threads.
// For each count it prints the time per decoded token, the weight bytes the
// token streams (weight records, KV records and masks), their rate, and the
// ratio of that rate to the machine's memcpy rate at the same thread count.
//
//   bench-cpu-decode BUNDLE [--tokens N] [--threads 1,2,...]
//                    [--memcpy-mib M] [--isa scalar|avx2|avx512|neon]
//                    [--numerics integer|hardware|reference]
//
// Defaults: 16 tokens after a 4-token prompt, thread counts 1 and every
// hardware thread, a 512 MiB copy, integer numerics (--isa picks the float
// kernel of the other two).
//
//===----------------------------------------------------------------------===//

#include "runtime/devices/SimDevice.h"
#include "runtime/exec/Session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

/// Bytes per second of memcpy over `bytes` split across `threads` threads
/// (each copies its own slice), best of three passes after a warm-up.
double memcpyRate(std::vector<uint8_t> &src, std::vector<uint8_t> &dst,
                  unsigned threads) {
  const size_t bytes = src.size(), slice = (bytes + threads - 1) / threads;
  double best = 0;
  for (int pass = 0; pass < 4; ++pass) {
    double t0 = seconds();
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        size_t begin = std::min(bytes, t * slice),
               end = std::min(bytes, begin + slice);
        std::memcpy(dst.data() + begin, src.data() + begin, end - begin);
      });
    for (std::thread &w : workers)
      w.join();
    double rate = double(bytes) / (seconds() - t0);
    if (pass > 0)
      best = std::max(best, rate);
  }
  return best;
}

struct DecodeFigures {
  double secondsPerToken = 0;
  double bytesPerToken = 0;
};

bool decode(const exec::Model &model, sim::Numerics numerics, unsigned threads,
            sim::MatmulIsa isa, int tokens, DecodeFigures *out,
            std::string *error) {
  auto device = std::make_unique<device::SimDevice>(numerics, model.target());
  device->simulator().setThreads(threads);
  if (!device->simulator().setMatmulIsa(isa)) {
    *error = std::string("this CPU cannot run the ") + sim::matmulIsaName(isa) +
             " kernel";
    return false;
  }
  exec::Session session(model, std::move(device));
  const int32_t bos = model.bosToken();
  std::vector<int32_t> prompt = {bos, 100, 200, 300};
  if (!session.consume(prompt, false, nullptr, error) ||
      !session.consume({400}, false, nullptr, error)) // warm-up step
    return false;
  if (session.position() + tokens > session.capacity()) {
    *error = "the bundle's KV cache holds " +
             std::to_string(session.capacity()) + " positions; ask fewer --tokens";
    return false;
  }
  const uint64_t bytes0 = session.stats().weightBytes;
  const double t0 = seconds();
  for (int i = 0; i < tokens; ++i)
    if (!session.consume({int32_t(500 + 7 * i) % int32_t(model.vocabSize())},
                         false, nullptr, error))
      return false;
  out->secondsPerToken = (seconds() - t0) / tokens;
  out->bytesPerToken =
      double(session.stats().weightBytes - bytes0) / double(tokens);
  return true;
}

std::vector<unsigned> parseCounts(const std::string &text) {
  std::vector<unsigned> counts;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char *end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 1 || v > 1024)
      return {};
    counts.push_back(unsigned(v));
  }
  return counts;
}

int usage() {
  std::fprintf(stderr, "usage: bench-cpu-decode BUNDLE [--tokens N] "
                       "[--threads 1,2,...] [--memcpy-mib M] "
                       "[--isa scalar|avx2|avx512|neon] "
                       "[--numerics integer|hardware|reference]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string bundlePath;
  int tokens = 16;
  size_t memcpyMiB = 512;
  const unsigned all = std::max(1u, std::thread::hardware_concurrency());
  std::vector<unsigned> counts = {1};
  if (all > 1)
    counts.push_back(all);
  sim::MatmulIsa isa = sim::bestMatmulIsa();
  sim::Numerics numerics = sim::Numerics::Integer;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--tokens" && i + 1 < argc)
      tokens = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      counts = parseCounts(argv[++i]);
    else if (a == "--memcpy-mib" && i + 1 < argc)
      memcpyMiB = size_t(std::atol(argv[++i]));
    else if (a == "--isa" && i + 1 < argc) {
      if (!sim::parseMatmulIsa(argv[++i], &isa))
        return usage();
    } else if (a == "--numerics" && i + 1 < argc) {
      if (!sim::parseNumerics(argv[++i], &numerics))
        return usage();
    } else if (!a.empty() && a[0] != '-' && bundlePath.empty())
      bundlePath = a;
    else
      return usage();
  }
  if (bundlePath.empty() || counts.empty() || tokens < 1 || memcpyMiB < 1)
    return usage();

  std::string error;
  auto model = exec::Model::load(bundlePath, &error);
  if (!model) {
    std::fprintf(stderr, "bench-cpu-decode: %s\n", error.c_str());
    return 1;
  }
  std::vector<uint8_t> src(memcpyMiB << 20, 1), dst(memcpyMiB << 20, 0);
  std::printf("bench-cpu-decode: %s, %d tokens after a 4-token prompt, "
              "%s numerics, %s kernel; memcpy of %zu MiB\n",
              bundlePath.c_str(), tokens, sim::numericsName(numerics),
              numerics == sim::Numerics::Integer
                  ? sim::int8IsaName(sim::bestInt8Isa())
                  : sim::matmulIsaName(isa),
              memcpyMiB);
  std::printf("| threads | ms/token | tok/s | MiB streamed/token | GB/s "
              "streamed | memcpy GB/s | streamed/memcpy |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  for (unsigned threads : counts) {
    DecodeFigures f;
    if (!decode(*model, numerics, threads, isa, tokens, &f, &error)) {
      std::fprintf(stderr, "bench-cpu-decode: %s\n", error.c_str());
      return 1;
    }
    const double copy = memcpyRate(src, dst, threads),
                 rate = f.bytesPerToken / f.secondsPerToken;
    std::printf("| %u | %.1f | %.2f | %.1f | %.2f | %.2f | %.3f |\n", threads,
                f.secondsPerToken * 1e3, 1.0 / f.secondsPerToken,
                f.bytesPerToken / double(1 << 20), rate / 1e9, copy / 1e9,
                rate / copy);
  }
  return 0;
}
