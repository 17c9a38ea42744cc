//===- ProfTests.cpp - the timing model's event model and replay ----------===//

#include "runtime/prof/Machines.h"
#include "runtime/prof/Profile.h"
#include "runtime/prof/Report.h"

#include "hw/isa/Isa.h"

#include <gtest/gtest.h>

#include <set>

using namespace pccx;
using namespace pccx::prof;

namespace {

NpuOp op(Track engine, double ns, bool async = false,
         std::vector<WordRange> reads = {},
         std::vector<WordRange> writes = {}) {
  NpuOp o;
  o.engine = engine;
  o.busyNs = ns;
  o.async = async;
  o.category = engine == Track::Sfu      ? "sfu"
               : engine == Track::Memcpy ? "memcpy"
                                         : "npu_compute";
  o.reads = std::move(reads);
  o.writes = std::move(writes);
  return o;
}

TEST(Timeline, InstructionsWithoutAsyncRunOneAfterAnother) {
  Timeline t;
  EXPECT_DOUBLE_EQ(t.npu(op(Track::Sfu, 100)), 100);
  EXPECT_DOUBLE_EQ(t.npu(op(Track::Memcpy, 50)), 150);
  t.waitIdle(0, 0, "sync");
  EXPECT_DOUBLE_EQ(t.hostNow(), 150);
  EXPECT_DOUBLE_EQ(t.criticalPath().at("sfu"), 100);
  EXPECT_DOUBLE_EQ(t.criticalPath().at("memcpy"), 50);
}

TEST(Timeline, AsyncLetsTheNextInstructionStartOnAnotherEngine) {
  Timeline t;
  t.npu(op(Track::Memcpy, 100, true, {}, {{0, 10}}));
  EXPECT_DOUBLE_EQ(
      t.npu(op(Track::GemvGemm, 80, false, {{20, 30}}, {{40, 50}})), 80);
  t.waitIdle(0, 0, "sync");
  EXPECT_DOUBLE_EQ(t.hostNow(), 100);
  // The wait is the MEMCPY's: it ends last and nothing delayed its start.
  EXPECT_DOUBLE_EQ(t.criticalPath().at("memcpy"), 100);
  EXPECT_EQ(t.criticalPath().count("npu_compute"), 0u);
}

TEST(Timeline, AsyncWaitsForTheSameEngine) {
  Timeline t;
  t.npu(op(Track::Sfu, 100, true));
  EXPECT_DOUBLE_EQ(t.npu(op(Track::Sfu, 10, true)), 110);
}

TEST(Timeline, HazardsOnL2WordsOrderAsyncInstructions) {
  // Read after write.
  Timeline raw;
  raw.npu(op(Track::Memcpy, 100, true, {}, {{0, 10}}));
  EXPECT_DOUBLE_EQ(raw.npu(op(Track::Sfu, 5, false, {{9, 12}}, {{50, 60}})),
                   105);
  // Write after read.
  Timeline war;
  war.npu(op(Track::Memcpy, 100, true, {{0, 10}}, {{100, 110}}));
  EXPECT_DOUBLE_EQ(war.npu(op(Track::Sfu, 5, false, {{50, 60}}, {{5, 6}})),
                   105);
  // Write after write.
  Timeline waw;
  waw.npu(op(Track::Memcpy, 100, true, {}, {{0, 10}}));
  EXPECT_DOUBLE_EQ(waw.npu(op(Track::Sfu, 5, false, {}, {{0, 1}})), 105);
  // Disjoint words: no wait.
  Timeline none;
  none.npu(op(Track::Memcpy, 100, true, {{0, 10}}, {{10, 20}}));
  EXPECT_DOUBLE_EQ(none.npu(op(Track::Sfu, 5, false, {{20, 30}}, {{30, 40}})),
                   5);
}

TEST(Timeline, TheHostIssuesBeforeTheNpuStarts) {
  Timeline t;
  t.host(40, "issue", "issue");
  EXPECT_DOUBLE_EQ(t.npu(op(Track::Sfu, 10)), 50);
  t.host(100, "host:mul", "kernel"); // overlaps the SFU
  t.waitIdle(3, 7, "sync");
  // Idle already: only the idle poll.
  EXPECT_DOUBLE_EQ(t.hostNow(), 143);
  double sum = 0;
  for (const auto &[category, ns] : t.criticalPath())
    sum += ns;
  EXPECT_DOUBLE_EQ(sum, t.hostNow());
  EXPECT_EQ(t.criticalPath().count("sfu"), 0u); // hidden by the host
}

TEST(Timeline, AWaitIsChargedToTheChainThatCausedIt) {
  Timeline t;
  t.npu(op(Track::Sfu, 100));
  t.host(30, "issue", "issue");
  t.npu(op(Track::Memcpy, 50));
  t.waitIdle(1, 2, "sync");
  EXPECT_DOUBLE_EQ(t.hostNow(), 152);
  // Host issue 0..30; the wait 30..150 is the SFU (30..100) then the MEMCPY.
  EXPECT_DOUBLE_EQ(t.criticalPath().at("issue"), 30);
  EXPECT_DOUBLE_EQ(t.criticalPath().at("sfu"), 70);
  EXPECT_DOUBLE_EQ(t.criticalPath().at("memcpy"), 50);
  EXPECT_DOUBLE_EQ(t.criticalPath().at("sync"), 2);
}

TEST(Params, SetOverridesAndRejects) {
  Params p;
  std::string error;
  EXPECT_TRUE(p.set("ddr_effective_mb_per_s=12000", &error));
  EXPECT_DOUBLE_EQ(p.ddr_effective_mb_per_s, 12000);
  EXPECT_TRUE(p.set("axil_read_ns=0", &error));
  EXPECT_FALSE(p.set("host_cpu_mhz=0", &error));
  EXPECT_NE(error.find("must be positive"), std::string::npos);
  EXPECT_FALSE(p.set("nope=1", &error));
  EXPECT_FALSE(p.set("axil_read_ns=-1", &error));
  // Values that would overflow the model, divide by almost nothing, or
  // make a count fractional or a shift undefined.
  EXPECT_FALSE(p.set("ddr_effective_mb_per_s=1e300", &error));
  EXPECT_NE(error.find("outside"), std::string::npos) << error;
  EXPECT_FALSE(p.set("host_cpu_mhz=1e-300", &error));
  EXPECT_FALSE(p.set("gemv_cores=2.5", &error));
  EXPECT_NE(error.find("whole number"), std::string::npos) << error;
  EXPECT_FALSE(p.set("l2_address_bits=64", &error));
  EXPECT_FALSE(p.set("dma_window_cached=2", &error));
  EXPECT_TRUE(p.set("gemv_cores=8", &error)) << error;
  for (const Params::Info &i : Params::all())
    EXPECT_GT(std::string(i.source).size(), 3u) << i.name;
}

uint64_t word(const char *text) {
  isa::Instruction inst;
  std::string error;
  EXPECT_TRUE(isa::assemble(text, inst, &error)) << error;
  uint64_t w = 0;
  EXPECT_TRUE(isa::encode(inst, w, &error)) << error;
  return w;
}

/// One GEMV of 1024 x 1024 INT4 whose N is patched to the attention length.
exec::Program patchedGemv() {
  exec::Program p;
  p.section = "program.decode";
  p.words = {word("memset dest_cache=weight_shape dest_addr=1 a_value=1 "
                  "b_value=1024 c_value=0"),
             word("memset dest_cache=fmap_shape dest_addr=0 a_value=1"),
             word("gemv dest_reg=0x01000 src_addr=0 shape_ptr_addr=1 "
                  "size_ptr_addr=0 flags=w_scale")};
  p.weights.resize(3);
  p.weights[2].kind = exec::WeightRef::Kind::Dynamic;
  exec::PatchSite site;
  site.word = 0;
  isa::Field field;
  EXPECT_TRUE(isa::lookupField(isa::Format::Memset, "a_value", field));
  site.field = field;
  site.lo = isa::fieldInfo(field).lo;
  site.maxValue = isa::fieldInfo(field).maxValue();
  site.source = bundle::PatchSource::WindowLen;
  site.window = 100;
  p.patches.push_back(site);
  exec::Segment seg;
  seg.name = "layer.3.attn";
  seg.begin = 0;
  seg.end = 3;
  p.segments.push_back(seg);
  return p;
}

TEST(Replay, PatchedShapesSizeDynamicRecords) {
  exec::Program p = patchedGemv();
  Params params;
  std::string error;
  StepProfile at10, at500;
  ASSERT_TRUE(profileStep(p, {}, 10, params, &at10, &error)) << error;
  ASSERT_TRUE(profileStep(p, {}, 500, params, &at500, &error)) << error;
  // N = min(q + 1, 100) rows of 512 bytes plus pad16(4N) bytes of scales.
  EXPECT_EQ(at10.counts.weightBytes, uint64_t(11 * 512 + 48));
  EXPECT_EQ(at500.counts.weightBytes, uint64_t(100 * 512 + 400));
  EXPECT_EQ(at10.counts.instructions, 3u);
  EXPECT_GT(at500.seconds, at10.seconds);
  ASSERT_EQ(at10.segments.size(), 1u);
  EXPECT_EQ(at10.segments[0].first, "layer.3.attn");
}

TEST(Replay, RefusesPositionsPastTheCaches) {
  exec::Program p = patchedGemv();
  StepProfile out;
  std::string error;
  ReplayContext context;
  context.maxPositions = 64;
  EXPECT_FALSE(profileStep(p, context, 64, Params(), &out, &error));
  EXPECT_NE(error.find("exceed the KV cache of 64 positions"),
            std::string::npos);
}

TEST(HostWork, AttentionCostFollowsTheSpan) {
  host::BoundCall call;
  call.kernel = pccx::abi::HostKernel::AttentionValues;
  call.args.resize(pccx::abi::kernelInfo(call.kernel).params.size());
  auto setInt = [&](const char *key, int64_t v) {
    host::BoundArg &a =
        call.args[pccx::abi::lookupParam(call.kernel, key)->slot];
    a.present = true;
    a.integer = v;
  };
  setInt("heads", 8);
  setInt("kv_heads", 2);
  setInt("head_dim", 256);
  setInt("window", 512);
  host::BoundArg &out =
      call.args[pccx::abi::lookupParam(call.kernel, "out")->slot];
  out.present = true;
  out.region = {0, 2048, 1, 256};
  std::vector<exec::CacheSpec> caches(1);
  caches[0].dtype = host::KvStorage::F32;
  call.args[pccx::abi::lookupParam(call.kernel, "v_cache")->slot].present =
      true;
  call.args[pccx::abi::lookupParam(call.kernel, "v_cache")->slot].cache = 0;
  ReplayContext context{&caches, 0};
  // Position 99 sees 100 keys, 2047 sees the window's 512.
  HostWork early = hostWork(call, context, 99);
  HostWork late = hostWork(call, context, 2047);
  EXPECT_DOUBLE_EQ(early.flops, 8 * 100 * 256 * 2.0);
  EXPECT_DOUBLE_EQ(late.flops, 8 * 512 * 256 * 2.0);
  EXPECT_DOUBLE_EQ(late.bytes - early.bytes, 8 * (512 - 100) * 256 * 4.0);
}

TEST(HostWork, RopeAnglesAreBuiltOncePerStep) {
  host::BoundCall call;
  call.kernel = pccx::abi::HostKernel::QueryNormRope;
  call.args.resize(pccx::abi::kernelInfo(call.kernel).params.size());
  auto arg = [&](const char *key) -> host::BoundArg & {
    host::BoundArg &a =
        call.args[pccx::abi::lookupParam(call.kernel, key)->slot];
    a.present = true;
    return a;
  };
  arg("heads").integer = 8;
  arg("head_dim").integer = 256;
  arg("theta").number = 10000.0;
  arg("q").region = {0, 2048, 1, 256};
  ReplayContext context;
  // 8 heads of 256: per head an rms (one sqrt) and 128 rotated pairs; the
  // angles (powf, cosf, sinf per pair) only on the first use in the step.
  RopeTables tables;
  HostWork first = hostWork(call, context, 5, &tables);
  HostWork again = hostWork(call, context, 5, &tables);
  EXPECT_DOUBLE_EQ(first.transcendentals, 8 + 128 * 3);
  EXPECT_DOUBLE_EQ(again.transcendentals, 8);
  EXPECT_DOUBLE_EQ(first.flops, again.flops);
  // Another theta (a global layer) or position builds its own.
  arg("theta").number = 1e6;
  EXPECT_DOUBLE_EQ(hostWork(call, context, 5, &tables).transcendentals,
                   8 + 128 * 3);
  EXPECT_DOUBLE_EQ(hostWork(call, context, 6, &tables).transcendentals,
                   8 + 128 * 3);
  // Without a step's tables every call pays for its angles.
  EXPECT_DOUBLE_EQ(hostWork(call, context, 5).transcendentals, 8 + 128 * 3);
}

TEST(Report, LayersGroupTheirSegments) {
  StepProfile step;
  step.segments = {{"prologue", 1},   {"layer.0", 2},    {"layer.1.attn", 3},
                   {"layer.1.mlp", 4}, {"layer.x", 5},    {"epilogue", 6},
                   {"layer.10", 7}};
  std::vector<std::pair<std::string, double>> expected = {
      {"prologue", 1}, {"layer.0", 2}, {"layer.1", 7},
      {"layer.x", 5},  {"epilogue", 6}, {"layer.10", 7}};
  EXPECT_EQ(byLayer(step), expected);
}

TEST(Report, TheCeilingIsTheBusiestPortOrDdr) {
  StepProfile step;
  // 1 GB over hp2 and hp3 at 16 B x 250 MHz = 4000 MB/s each: 0.125 s;
  // DDR at 10000 MB/s would take 0.1 s.
  step.counts.portBytes[2] = step.counts.portBytes[3] = 500000000;
  step.counts.weightBytes = 1000000000;
  step.seconds = 0.5;
  Params params;
  StreamCeiling c = streamCeiling(step, params);
  EXPECT_EQ(c.ports, 2u);
  EXPECT_DOUBLE_EQ(c.seconds, 0.125);
  EXPECT_DOUBLE_EQ(c.mbps, 8000);
  EXPECT_DOUBLE_EQ(ceilingFraction(step, params), 0.25);
  EXPECT_NE(c.formula.find("min(DDR 10000 MB/s, 2 ports (hp2 hp3) x 16 B x "
                           "250 MHz = 8000 MB/s) = 8000 MB/s"),
            std::string::npos)
      << c.formula;
  // Four ports: DDR bounds it. Lowering DDR lowers the fraction.
  step.counts.portBytes[0] = step.counts.portBytes[1] = 250000000;
  step.counts.portBytes[2] = step.counts.portBytes[3] = 250000000;
  EXPECT_DOUBLE_EQ(streamCeiling(step, params).seconds, 0.1);
  params.ddr_effective_mb_per_s = 5000;
  EXPECT_DOUBLE_EQ(ceilingFraction(step, params), 0.4);
  params.ddr_effective_mb_per_s = 10000;
  // One busy port bounds it however many others there are.
  step.counts.portBytes[0] = 700000000;
  step.counts.portBytes[1] = step.counts.portBytes[2] =
      step.counts.portBytes[3] = 100000000;
  EXPECT_DOUBLE_EQ(streamCeiling(step, params).seconds, 0.175);
  step.seconds = 0;
  EXPECT_DOUBLE_EQ(ceilingFraction(step, params), 0);
}

} // namespace

namespace {

TEST(Machines, EverySettingNamesAParameterWithASource) {
  std::set<std::string> names;
  for (const Params::Info &p : Params::all())
    names.insert(p.name);
  ASSERT_GE(machines().size(), 2u);
  EXPECT_EQ(std::string(machines()[0].name), kDefaultMachine);
  for (const Machine &m : machines())
    for (const MachineSetting &s : m.settings) {
      EXPECT_TRUE(names.count(s.param)) << m.name << ": " << s.param;
      EXPECT_GT(std::string(s.source).size(), 10u) << s.param;
    }
}

TEST(Machines, AsBuiltRunsOneClock) {
  Params p;
  std::string error;
  ASSERT_TRUE(applyMachine("v002", &p, &error)) << error;
  EXPECT_EQ(p.core_clock_mhz, 400);
  EXPECT_EQ(p.axi_clock_mhz, 250);
  EXPECT_EQ(p.gemm_lanes_summed, 0);
  ASSERT_TRUE(applyMachine("kv260-as-built", &p, &error)) << error;
  EXPECT_EQ(p.core_clock_mhz, 100);
  EXPECT_EQ(p.axi_clock_mhz, 100);
  EXPECT_EQ(p.host_window_on_hp0, 1);
  EXPECT_EQ(p.sfu_exp_cycles_per_element, 3);
  // Its GEMM adds the two lanes: the record on hp0, zeros on hp1, one
  // useful MAC a DSP.
  EXPECT_EQ(p.gemm_lanes_summed, 1);
  EXPECT_EQ(p.gemm_macs_per_clock, 1024);
  EXPECT_FALSE(applyMachine("kv261", &p, &error));
  EXPECT_NE(error.find("no machine named 'kv261' (v002, kv260-as-built)"),
            std::string::npos)
      << error;
}

} // namespace

TEST(HostWork, RowWiseKernelsShareTheRowsOverTheHostThreads) {
  Params p;
  p.host_kernel_threads = 4;
  p.host_call_overhead_ns = 0;
  HostWork rows;
  rows.flops = 1e6;
  rows.bytes = 1e6;
  rows.splitsRows = true;
  HostWork alone = rows;
  alone.splitsRows = false;
  // Sixteen prefill rows keep four threads busy, one decode row one, and a
  // kernel that does not split its rows runs on the runtime thread.
  EXPECT_DOUBLE_EQ(hostWorkNs(rows, p, 16) * 4, hostWorkNs(rows, p, 1));
  EXPECT_DOUBLE_EQ(hostWorkNs(rows, p, 2) * 2, hostWorkNs(rows, p, 1));
  EXPECT_DOUBLE_EQ(hostWorkNs(alone, p, 16), hostWorkNs(alone, p, 1));
  EXPECT_TRUE(host::splitsRows(pccx::abi::HostKernel::AltUpPredict));
  EXPECT_FALSE(host::splitsRows(pccx::abi::HostKernel::QueryNormRope));
}
