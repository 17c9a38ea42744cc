//===- Calibrate.cpp - host costs measured on this machine ----------------===//

#include "runtime/prof/Calibrate.h"

#include "hw/numerics/HalfFloat.h"
#include "hw/support/Format.h"
#include "runtime/host/HostKernels.h"

#include <chrono>
#include <cmath>
#include <vector>

namespace pccx::prof {
namespace {

/// Keeps results alive so the measured loops are not optimised away.
volatile float gSink;

/// The best of five runs of `body`, in nanoseconds: the least disturbed.
template <typename F> double bestNs(F body) {
  double best = 1e300;
  for (int run = 0; run < 5; ++run) {
    auto t0 = std::chrono::steady_clock::now();
    body();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best,
                    std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  return best;
}

/// ns per fp32 operation: the kernels' 8-accumulator dot product over a
/// vector that stays in L1.
double flopNs() {
  std::vector<float> a(2048, 1.0001f), b(2048, 0.9999f);
  const int reps = 2000;
  double ns = bestNs([&] {
    float acc[8] = {};
    for (int r = 0; r < reps; ++r)
      for (size_t i = 0; i < a.size(); i += 8)
        for (int j = 0; j < 8; ++j)
          acc[j] += a[i + j] * b[i + j];
    gSink = acc[0] + acc[7];
  });
  return ns / (2.0 * reps * double(a.size()));
}

/// ns per libm call, over the mix the kernels use (tanh, exp, sin, cos,
/// pow, sqrt).
double transcendentalNs() {
  const int n = 20000;
  double ns = bestNs([&] {
    float s = 0;
    for (int i = 0; i < n; ++i) {
      float x = 0.001f * float(i % 1000);
      s += std::tanh(x) + std::exp(-x) + std::sin(x) + std::cos(x) +
           float(std::pow(10000.0, double(x))) + std::sqrt(x + 1.0f);
    }
    gSink = s;
  });
  return ns / (6.0 * n);
}

/// MB/s of one core reading a buffer much larger than its caches.
double memoryMbPerS() {
  std::vector<float> big(size_t(16) << 20, 1.0f); // 64 MiB
  double ns = bestNs([&] {
    float s[4] = {};
    for (size_t i = 0; i < big.size(); i += 4)
      for (int j = 0; j < 4; ++j)
        s[j] += big[i + j];
    gSink = s[0] + s[3];
  });
  return double(big.size() * sizeof(float)) * 1000.0 / ns;
}

/// ns of a bound host call that does almost nothing: a one-element fill.
double callOverheadNs() {
  std::vector<float> window(8, 0.0f);
  host::HostContext context;
  context.window = window.data();
  context.windowWords = 1;
  host::BindTables tables;
  host::BoundCall call;
  std::string error;
  using Fill = abi::param::Fill;
  const nlohmann::json params = {{abi::paramInfo(Fill::Out).key, {0, 1, 1, 1}},
                                 {abi::paramInfo(Fill::Value).key, 1.0}};
  if (!host::bindCall(abi::kernelInfo(Fill::kernel).name, params, tables, &call,
                      &error))
    return 0;
  const int reps = 20000;
  double ns = bestNs([&] {
    for (int r = 0; r < reps; ++r)
      host::runKernel(call, context, &error);
  });
  return ns / reps;
}

/// ns per lane of the driver's float-to-BF16 conversion (`narrow`) or of
/// its BF16-to-float conversion.
double bf16Ns(bool narrow) {
  std::vector<float> floats(65536, 1.2345f);
  std::vector<uint16_t> lanes(floats.size(), 0x3f9e);
  const int reps = 20;
  double ns = bestNs([&] {
    for (int r = 0; r < reps; ++r) {
      if (narrow)
        hw::floatToBf16Row(floats.data(), lanes.data(), floats.size());
      else
        hw::bf16ToFloatRow(lanes.data(), floats.data(), lanes.size());
    }
    gSink = narrow ? float(lanes[7]) : floats[7];
  });
  return ns / (double(reps) * double(floats.size()));
}

} // namespace

std::string calibrateHost(const Params &params) {
  const double cyclesPerNs = params.host_cpu_mhz / 1000.0;
  std::string s =
      "# Host costs measured by pccx-prof --calibrate on the machine it ran\n"
      "# on (best of five runs each); cycles at host_cpu_mhz = " +
      formatString("%g", params.host_cpu_mhz) +
      ".\n# Load with: pccx-prof MODEL.pccx --params FILE\n"
      "# Not measured here: the DMA-buffer and AXI-Lite costs (they need the\n"
      "# board's u-dma-buf and register window; docs/performance.md).\n";
  s += formatString("host_cycles_per_flop=%.4g\n", flopNs() * cyclesPerNs);
  s += formatString("host_cycles_per_transcendental=%.4g\n",
                    transcendentalNs() * cyclesPerNs);
  s += formatString("host_memory_mb_per_s=%.4g\n", memoryMbPerS());
  s += formatString("host_call_overhead_ns=%.4g\n", callOverheadNs());
  s += formatString("host_bf16_cycles_per_element=%.4g\n",
                    bf16Ns(true) * cyclesPerNs);
  s += formatString("host_bf16_widen_cycles_per_element=%.4g\n",
                    bf16Ns(false) * cyclesPerNs);
  return s;
}

} // namespace pccx::prof
