//===- sim-gemv.cpp - functional-simulator GEMV throughput ----------------===//
//
// Times one E4B-sized INT4 GEMV on the simulator (N = 16384 output features,
// K = 2048 inputs, one 16 MiB weight record plus its scales) and, in the same
// run, a plain memcpy and a plain read pass over the same number of bytes.
// Prints GB/s of weight bytes for each and the ratio gemv/memcpy: how close
// the simulator's GEMV gets to the machine's own memory bandwidth.
//
//   bench-sim-gemv [--reps R] [--threads T] [--isa KERNEL]
//                  [--hardware | --integer] [--group G]
//
// --group G also times, in the same run, the same weights as group-scale
// records (pccx-compile --int4-group G): K/G GEMVs over K-slices of G
// columns, each with its own record, added up with accm, as the compiler
// lowers them; and prints their time against the whole-row GEMV's.
//
// --threads 0 (the default) uses every hardware thread, as the simulator
// does; --isa picks the GEMV kernel (default: the fastest this CPU runs:
// scalar, avx2, avx512 or neon; with --integer, which times Integer
// numerics, scalar, avx2, avx512-vnni, neon or neon-dotprod).
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/Simulator.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace pccx;

namespace {

constexpr unsigned kN = 16384, kK = 2048;

double seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

bool assembleWord(const std::string &text, isa::Instruction &inst) {
  std::string err;
  if (!isa::assemble(text, inst, &err)) {
    std::fprintf(stderr, "bench-sim-gemv: %s: %s\n", text.c_str(), err.c_str());
    return false;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  unsigned reps = 10, threads = 0, group = 0;
  bool hardware = false, integer = false;
  sim::MatmulIsa isa = sim::bestMatmulIsa();
  sim::Int8Isa int8Isa = sim::bestInt8Isa();
  std::string isaName;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc)
      reps = unsigned(std::atoi(argv[++i]));
    else if (a == "--threads" && i + 1 < argc)
      threads = unsigned(std::atoi(argv[++i]));
    else if (a == "--hardware")
      hardware = true;
    else if (a == "--integer")
      integer = true;
    else if (a == "--isa" && i + 1 < argc)
      isaName = argv[++i];
    else if (a == "--group" && i + 1 < argc)
      group = unsigned(std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench-sim-gemv [--reps R] [--threads T] "
                           "[--isa KERNEL] [--hardware | --integer] "
                           "[--group G]\n");
      return 2;
    }
  }
  if (group && (group % 32 || kK % group)) {
    std::fprintf(stderr, "bench-sim-gemv: --group must be a multiple of 32 "
                         "that divides %u\n", kK);
    return 2;
  }
  if (!isaName.empty() &&
      !(integer ? sim::parseInt8Isa(isaName, &int8Isa)
                : sim::parseMatmulIsa(isaName, &isa))) {
    std::fprintf(stderr, "bench-sim-gemv: --isa %s: not %s\n", isaName.c_str(),
                 integer ? sim::int8IsaNames()
                         : "scalar, avx2, avx512 or neon");
    return 2;
  }
  if (reps == 0)
    reps = 1;

  // One weight record: N fp32 scales, then N rows of K/2 bytes (INT4).
  size_t scaleBytes = size_t(kN) * 4, rowBytes = kK / 2;
  size_t recordBytes = scaleBytes + size_t(kN) * rowBytes;
  std::vector<uint8_t> record(recordBytes);
  uint32_t seed = 12345;
  for (size_t i = scaleBytes; i < recordBytes; ++i) {
    seed = seed * 1664525u + 1013904223u;
    record[i] = uint8_t(seed >> 24);
  }
  for (size_t n = 0; n < kN; ++n) {
    float s = 1.0f / 64.0f;
    std::memcpy(&record[4 * n], &s, 4);
  }

  sim::Simulator sim(integer    ? sim::Numerics::Integer
                     : hardware ? sim::Numerics::Hardware
                                : sim::Numerics::Reference);
  sim.setThreads(threads);
  if (!sim.setMatmulIsa(isa) || !sim.setInt8Isa(int8Isa)) {
    std::fprintf(stderr, "bench-sim-gemv: this CPU cannot run the %s kernel\n",
                 integer ? sim::int8IsaName(int8Isa) : sim::matmulIsaName(isa));
    return 1;
  }
  std::vector<float> x(kK);
  for (unsigned k = 0; k < kK; ++k)
    x[k] = float(int(k % 17) - 8) / 8.0f;
  std::string err;
  if (!sim.writeL2(0, x.data(), kK, &err)) {
    std::fprintf(stderr, "bench-sim-gemv: %s\n", err.c_str());
    return 1;
  }
  isa::Instruction setShape, setSize, gemv;
  if (!assembleWord("memset dest_cache=weight_shape dest_addr=0 a_value=" +
                        std::to_string(kN) + " b_value=" + std::to_string(kK) +
                        " c_value=0",
                    setShape) ||
      !assembleWord("memset dest_cache=fmap_shape dest_addr=0 a_value=1",
                    setSize) ||
      !assembleWord("gemv dest_reg=0x01000 src_addr=0x00000 flags=w_scale "
                    "size_ptr_addr=0 shape_ptr_addr=0",
                    gemv))
    return 1;
  if (!sim.execute(setShape, &err) || !sim.execute(setSize, &err)) {
    std::fprintf(stderr, "bench-sim-gemv: %s\n", err.c_str());
    return 1;
  }

  // Warm up everything once, then time each kind of pass.
  std::vector<uint8_t> copy(recordBytes);
  std::memcpy(copy.data(), record.data(), recordBytes);
  double gemvTime = 0, copyTime = 0, readTime = 0;
  uint64_t checksum = 0;
  for (unsigned rep = 0; rep <= reps; ++rep) {
    double t0 = seconds();
    sim.pushWeightStream(record.data(), recordBytes, nullptr, integer);
    if (!sim.execute(gemv, &err)) {
      std::fprintf(stderr, "bench-sim-gemv: %s\n", err.c_str());
      return 1;
    }
    double t1 = seconds();
    std::memcpy(copy.data(), record.data(), recordBytes);
    double t2 = seconds();
    uint64_t sum = 0;
    const uint64_t *p = reinterpret_cast<const uint64_t *>(record.data());
    for (size_t i = 0; i < recordBytes / 8; ++i)
      sum += p[i];
    double t3 = seconds();
    checksum += sum + copy[rep % recordBytes];
    if (rep == 0)
      continue;
    gemvTime += t1 - t0;
    copyTime += t2 - t1;
    readTime += t3 - t2;
  }
  // The same weights as group-scale records: slice g holds columns
  // [gG, gG + G) of every row, with scales of its own.
  double groupTime = 0;
  size_t groupBytes = 0;
  if (group) {
    const unsigned slices = kK / group;
    const size_t sliceRow = (group / 2 + 15) / 16 * 16,
                 sliceBytes = scaleBytes + size_t(kN) * sliceRow;
    std::vector<std::vector<uint8_t>> slicesData(
        slices, std::vector<uint8_t>(sliceBytes, 0));
    std::vector<isa::Instruction> gemvs(slices);
    isa::Instruction setSlice;
    if (!assembleWord("memset dest_cache=weight_shape dest_addr=1 a_value=" +
                          std::to_string(kN) +
                          " b_value=" + std::to_string(group) + " c_value=0",
                      setSlice) ||
        !sim.execute(setSlice, &err))
      return 1;
    for (unsigned g = 0; g < slices; ++g) {
      std::vector<uint8_t> &rec = slicesData[g];
      std::memcpy(rec.data(), record.data(), scaleBytes);
      for (size_t n = 0; n < kN; ++n)
        std::memcpy(&rec[scaleBytes + n * sliceRow],
                    &record[scaleBytes + n * rowBytes + g * group / 2],
                    group / 2);
      char text[160];
      std::snprintf(text, sizeof text,
                    "gemv dest_reg=0x01000 src_addr=0x%05x flags=%s "
                    "size_ptr_addr=0 shape_ptr_addr=1",
                    g * group / 8, g ? "w_scale|accm" : "w_scale");
      if (!assembleWord(text, gemvs[g]))
        return 1;
    }
    groupBytes = sliceBytes * slices;
    for (unsigned rep = 0; rep <= reps; ++rep) {
      double t0 = seconds();
      for (unsigned g = 0; g < slices; ++g) {
        sim.pushWeightStream(slicesData[g].data(), sliceBytes, nullptr,
                             integer);
        if (!sim.execute(gemvs[g], &err)) {
          std::fprintf(stderr, "bench-sim-gemv: %s\n", err.c_str());
          return 1;
        }
      }
      if (rep > 0)
        groupTime += seconds() - t0;
    }
  }
  if (!sim.finishSegment(&err)) {
    std::fprintf(stderr, "bench-sim-gemv: %s\n", err.c_str());
    return 1;
  }
  float y0 = 0;
  sim.readL2(0x1000, &y0, 1, &err);

  double bytes = double(recordBytes) * reps;
  double gemvRate = bytes / gemvTime / 1e9, copyRate = bytes / copyTime / 1e9,
         readRate = bytes / readTime / 1e9;
  std::printf("sim gemv: N=%u K=%u INT4 w_scale, %.2f MiB per record, %u reps, "
              "%u thread(s), %s kernel, %s numerics\n",
              kN, kK, double(recordBytes) / (1 << 20), reps, sim.threads(),
              integer ? sim::int8IsaName(sim.int8Isa())
                      : sim::matmulIsaName(sim.matmulIsa()),
              integer ? "integer" : hardware ? "hardware" : "reference");
  std::printf("  gemv    %8.2f GB/s  (%.2f GMAC/s)\n", gemvRate,
              double(kN) * kK * reps / gemvTime / 1e9);
  std::printf("  memcpy  %8.2f GB/s\n", copyRate);
  std::printf("  read    %8.2f GB/s\n", readRate);
  std::printf("  gemv/memcpy %.3f  gemv/read %.3f\n", gemvRate / copyRate,
              gemvRate / readRate);
  if (group)
    std::printf("  groups of %u: %u GEMVs with accm, %.2f MiB of records, "
                "%.2f GB/s, %.3f x the whole-row GEMV's time\n",
                group, kK / group, double(groupBytes) / (1 << 20),
                double(groupBytes) * reps / groupTime / 1e9,
                groupTime / gemvTime);
  // Keeps the passes from being optimised away.
  std::printf("  (checksum %llx, y[0] = %g)\n", (unsigned long long)checksum,
              double(y0));
  return 0;
}
