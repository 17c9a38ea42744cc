//===- sampler.cpp - the cost of picking a token --------------------------===//
//
// Times Sampler::next over Gemma's 262 144-entry vocabulary (logits drawn
// like a language model's: a few likely ids over a long tail) for the
// settings people use: greedy, the server's default (temperature 1), top-k,
// top-p and min-p, with and without penalties. Prints microseconds per
// token.
//
//   bench-sampler [--vocab V] [--reps R]
//
//===----------------------------------------------------------------------===//

#include "runtime/app/Sampler.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace pccx;

int main(int argc, char **argv) {
  size_t vocab = 262144;
  int reps = 50;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--vocab" && i + 1 < argc)
      vocab = size_t(std::atol(argv[++i]));
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench-sampler [--vocab V] [--reps R]\n");
      return 2;
    }
  }
  if (vocab < 2 || reps < 1) {
    std::fprintf(stderr, "bench-sampler: --vocab must be >= 2, --reps >= 1\n");
    return 2;
  }
  // Softcapped logits (|z| < 30): a Zipf-like head over a normal tail.
  std::vector<float> base(vocab);
  uint64_t state = 1;
  for (size_t i = 0; i < vocab; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double u = double(state >> 11) * 0x1.0p-53;
    base[i] = float(30.0 * std::tanh((4.0 * u - 2.0 + 12.0 / double(i % 997 + 1)) / 4.0));
  }
  std::vector<int32_t> seen;
  for (int i = 0; i < 200; ++i)
    seen.push_back(int32_t((i * 7919) % vocab));

  struct Setting {
    const char *name;
    app::SamplingOptions options;
    bool penalties;
  };
  auto opts = [](double t, int64_t k, double p, double minP) {
    app::SamplingOptions o;
    o.temperature = t;
    o.topK = k;
    o.topP = p;
    o.minP = minP;
    return o;
  };
  std::vector<Setting> settings = {
      {"greedy", opts(0, 0, 1, 0), false},
      {"temperature 1 (server default)", opts(1, 0, 1, 0), false},
      {"temperature 0.8, top-k 40", opts(0.8, 40, 1, 0), false},
      {"temperature 0.8, top-p 0.95", opts(0.8, 0, 0.95, 0), false},
      {"temperature 0.8, min-p 0.05", opts(0.8, 0, 1, 0.05), false},
      {"top-k 40, top-p 0.95, min-p 0.05", opts(0.8, 40, 0.95, 0.05), false},
      {"temperature 1, penalties over 200 ids", opts(1, 0, 1, 0), true},
  };
  std::printf("bench-sampler: %zu entries, %d tokens each\n", vocab, reps);
  std::printf("| setting | us/token |\n|---|---:|\n");
  for (Setting &s : settings) {
    if (s.penalties) {
      s.options.repetitionPenalty = 1.1;
      s.options.presencePenalty = 0.5;
      s.options.frequencyPenalty = 0.2;
    }
    app::Sampler sampler(s.options);
    std::vector<float> logits;
    double spent = 0;
    long checksum = 0;
    for (int r = 0; r < reps; ++r) {
      logits = base;
      auto t0 = std::chrono::steady_clock::now();
      checksum += sampler.next(logits, s.penalties ? seen : std::vector<int32_t>{});
      spent += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::printf("| %s | %.1f |\n", s.name, spent / reps * 1e6);
    if (checksum < 0)
      return 1;
  }
  return 0;
}
