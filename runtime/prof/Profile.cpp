//===- Profile.cpp - a timing model of one program step -------------------===//

#include "runtime/prof/Profile.h"

#include "runtime/exec/ProgramWalk.h"

#include "hw/abi/PatchSources.h"
#include "hw/isa/Isa.h"
#include "hw/numerics/Quantize.h"
#include "runtime/devices/Kv260Protocol.h"
#include "runtime/devices/Kv260TransferPlan.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iterator>
#include <set>

namespace pccx::prof {

using abi::HostKernel;
using isa::Field;

namespace {

int64_t integerArg(const host::BoundCall &call, abi::HostParam param,
                   int64_t fallback = 0) {
  const host::BoundArg *a = call.find(param);
  return a ? a->integer : fallback;
}

double numberArg(const host::BoundCall &call, abi::HostParam param) {
  const host::BoundArg *a = call.find(param);
  return a ? a->number : 0.0;
}

abi::HostRegion regionArg(const host::BoundCall &call, abi::HostParam param) {
  const host::BoundArg *a = call.find(param);
  return a ? a->region : abi::HostRegion{};
}

double elements(const abi::HostRegion &r) { return double(r.elems * r.rows); }

/// Bytes per stored element of a KV cache.
double cacheElementBytes(host::KvStorage dtype) {
  return dtype == host::KvStorage::F32 ? 4 : dtype == host::KvStorage::F16 ? 2 : 1;
}

/// Operations to turn one stored cache element into a float (KvCache::at).
double cacheElementOps(host::KvStorage dtype) {
  return dtype == host::KvStorage::F32 ? 0 : 2;
}

const exec::CacheSpec *cacheArg(const host::BoundCall &call,
                                const ReplayContext &context,
                                abi::HostParam param) {
  const host::BoundArg *a = call.find(param);
  if (!a || !context.caches || a->cache < 0 ||
      size_t(a->cache) >= context.caches->size())
    return nullptr;
  return &(*context.caches)[size_t(a->cache)];
}

/// Keys a query at q sees with a sliding window (0: full attention).
int64_t attentionSpan(int64_t q, int64_t window) {
  return window > 0 ? std::min(q + 1, window) : q + 1;
}

double gatherRowBytes(const host::GatherTable *g, int64_t cols) {
  if (!g)
    return 4.0 * double(cols);
  return g->quantized ? double(hw::gatherRowBytes(g->format, g->group, cols))
                      : 4.0 * double(cols);
}

/// rms(): Σx², one sqrt, a scale and a gain per element.
void addRms(HostWork &w, double n) {
  w.flops += 4 * n;
  w.transcendentals += 1;
}

/// rope(): six operations per pair, and the first use of a (position,
/// theta, head_dim) in the step computes its angles: one powf, one cosf and
/// one sinf per pair.
void addRope(HostWork &w, double d, int64_t position, double theta,
             RopeTables *tables) {
  w.flops += 3 * d;
  if (tables->insert({position, theta, int64_t(d)}).second)
    w.transcendentals += 1.5 * d;
}

/// What a cost rule sees of a call.
struct CostInput {
  const host::BoundCall &call;
  const ReplayContext &context;
  int64_t position;
  RopeTables *ropeTables;
  bool is(HostKernel kernel) const { return call.kernel == kernel; }
};

// The cost rules PCCX_HOST_COST names in hw/abi/HostKernels.def: each adds
// a call's work beyond the traffic of its In and Out regions, which
// hostWork counts for every call.

void costGatherRows(const CostInput &in, HostWork &w) {
  using K = abi::param::Embed;
  abi::HostRegion out = regionArg(in.call, K::Out);
  const host::BoundArg *g = in.call.find(K::Table);
  w.bytes +=
      double(out.rows) * gatherRowBytes(g ? g->gather : nullptr, out.elems);
  w.flops += 2 * elements(out); // dequantise and scale
}

void costPerLayerInputs(const CostInput &in, HostWork &w) {
  using K = abi::param::PerLayerInputs;
  abi::HostRegion proj = regionArg(in.call, K::Proj);
  int64_t layers = std::max<int64_t>(integerArg(in.call, K::NumLayers, 1), 1);
  const host::BoundArg *g = in.call.find(K::Table);
  w.bytes +=
      double(proj.rows) * gatherRowBytes(g ? g->gather : nullptr, proj.elems);
  w.flops += 9 * elements(proj); // dequantise, scale, rms, combine
  w.transcendentals += double(proj.rows * layers);
}

void costAltUpStreams(const CostInput &in, HostWork &w) {
  bool init = in.is(HostKernel::AltUpInit);
  abi::HostRegion tokens =
      regionArg(in.call, init ? abi::HostParam(abi::param::AltUpInit::X0)
                              : abi::param::AltUpCollapse::Out);
  const host::BoundArg *list =
      in.call.find(init ? abi::HostParam(abi::param::AltUpInit::Projected)
                        : abi::param::AltUpCollapse::Projected);
  double h = double(tokens.elems), t = double(tokens.rows);
  double streams = list ? double(list->regions.size()) + 1 : 1;
  w.flops += t * (streams * 4 * h); // magnitudes and sums
  w.transcendentals += t * streams; // one sqrt per stream
}

void costAltUpRouter(const CostInput &in, HostWork &w) {
  using Predict = abi::param::AltUpPredict;
  using Correct = abi::param::AltUpCorrect;
  bool predict = in.is(HostKernel::AltUpPredict);
  auto pick = [predict](abi::HostParam p, abi::HostParam c) {
    return predict ? p : c;
  };
  abi::HostRegion streams =
      regionArg(in.call, pick(Predict::Streams, Correct::Predictions));
  double a = double(std::max<int64_t>(
      integerArg(in.call, pick(Predict::NumInputs, Correct::NumInputs), 1), 1));
  double h = double(streams.elems), t = double(streams.rows) / a;
  w.flops += 4 * h * t; // rms() of the router input per token
  w.transcendentals += t;
  const host::BoundArg *router =
      in.call.find(pick(Predict::Router, Correct::Router));
  if (router && !router->tensors.empty() && router->tensors[0]) {
    const host::HostTensor *r = router->tensors[0];
    w.flops += 2.0 * double(r->rows * r->cols) * t;
    w.bytes += 4.0 * double(r->rows * r->cols) * t;
  }
  w.transcendentals += a * t; // tanh per router output
  if (predict)
    w.flops += t * (2 * a * a * a + 2 * a * a * h + a * h);
  else
    w.flops += t * (2 * a * a + h + 2 * a * h);
}

void costRowNorm(const CostInput &in, HostWork &w) {
  const bool add = in.is(HostKernel::AddRmsNorm);
  abi::HostRegion rows =
      regionArg(in.call, add ? abi::HostParam(abi::param::AddRmsNorm::X)
                             : abi::param::RmsNorm::In);
  w.flops += 4 * elements(rows) + (add ? elements(rows) : 0);
  w.transcendentals += double(rows.rows);
}

void costCombine(const CostInput &in, HostWork &w) {
  w.flops += double(in.call.inputs.size() + 1) *
             elements(regionArg(in.call, abi::param::Combine::Out));
}

/// One operation per element of the output.
void costElementwise(const CostInput &in, HostWork &w) {
  w.flops += elements(regionArg(
      in.call, in.is(HostKernel::Mul) ? abi::HostParam(abi::param::Mul::Out)
                                      : abi::param::MulTensor::Out));
}

void costGaussianTopK(const CostInput &in, HostWork &w) {
  abi::HostRegion x = regionArg(in.call, abi::param::GaussianTopK::In);
  w.flops += 5 * elements(x);
  w.bytes += 8 * elements(x); // three passes over the row
  w.transcendentals += double(x.rows);
}

void costHeadNormRope(const CostInput &in, HostWork &w) {
  using Kv = abi::param::KvNormRope;
  using Query = abi::param::QueryNormRope;
  // Per row and head: the rms() of the head (keys: and of the value
  // head), and its rotation.
  const bool keys = in.is(HostKernel::KvNormRope);
  auto pick = [keys](abi::HostParam k, abi::HostParam q) {
    return keys ? k : q;
  };
  const int64_t rows = regionArg(in.call, pick(Kv::K, Query::Q)).rows,
                heads = integerArg(in.call, pick(Kv::KvHeads, Query::Heads), 1);
  const double d = double(
                   integerArg(in.call, pick(Kv::HeadDim, Query::HeadDim), 1)),
               theta = numberArg(in.call, pick(Kv::Theta, Query::Theta));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      addRms(w, d);
      if (keys)
        addRms(w, d);
      addRope(w, d, in.context.rowPosition(in.position, r), theta,
              in.ropeTables);
    }
}

void costCacheWrite(const CostInput &in, HostWork &w) {
  using K = abi::param::CacheWrite;
  abi::HostRegion rows = regionArg(in.call, K::Rows);
  const exec::CacheSpec *c = cacheArg(in.call, in.context, K::Cache);
  host::KvStorage dt = c ? c->dtype : host::KvStorage::F32;
  // INT8 storage (host int8 caches and the NPU's KV records) quantizes:
  // a max pass, a divide and a round per element.
  const bool int8 = dt == host::KvStorage::Int8 ||
                    dt == host::KvStorage::KeyRecords ||
                    dt == host::KvStorage::ValueRecords;
  w.flops += (int8 ? 3 : cacheElementOps(dt)) * elements(rows);
  // The NPU's KV records lie in the DMA buffer, mapped uncached.
  if (c && c->records())
    w.uncachedWriteBytes += cacheElementBytes(dt) * elements(rows);
  else
    w.bytes += cacheElementBytes(dt) * elements(rows);
}

void costAttention(const CostInput &in, HostWork &w) {
  using Scores = abi::param::AttentionScores;
  using Values = abi::param::AttentionValues;
  const bool scores = in.is(HostKernel::AttentionScores);
  auto pick = [scores](abi::HostParam s, abi::HostParam v) {
    return scores ? s : v;
  };
  const exec::CacheSpec *c =
      cacheArg(in.call, in.context, pick(Scores::KCache, Values::VCache));
  host::KvStorage dt = c ? c->dtype : host::KvStorage::F32;
  double d =
      double(integerArg(in.call, pick(Scores::HeadDim, Values::HeadDim), 1));
  int64_t heads = integerArg(in.call, pick(Scores::Heads, Values::Heads), 1);
  int64_t window = integerArg(in.call, pick(Scores::Window, Values::Window), 0);
  abi::HostRegion rowsOf = regionArg(in.call, pick(Scores::Q, Values::Out));
  int64_t first = 0, last = rowsOf.rows;
  if (!scores && in.call.find(Values::Row)) {
    first = integerArg(in.call, Values::Row);
    last = first + 1;
  }
  for (int64_t r = first; r < last; ++r) {
    double n =
        double(attentionSpan(in.context.rowPosition(in.position, r), window));
    for (int64_t h = 0; h < heads; ++h) {
      // Every key (or value) of the span is read and converted once per
      // query head, then a dot product or an axpy of head_dim.
      w.flops += n * d * (2 + cacheElementOps(dt));
      w.bytes += n * d * cacheElementBytes(dt);
      if (scores) {
        addRms(w, d);
        addRope(w, d, in.context.rowPosition(in.position, r),
                numberArg(in.call, Scores::Theta), in.ropeTables);
        // The record handed to the NPU: allocated zeroed, then filled.
        w.bytes += 2.0 * double(hw::recordBytes(hw::WeightFormat::Int4,
                                                int64_t(n), 1));
      }
    }
  }
}

void costLaurelResidual(const CostInput &in, HostWork &w) {
  abi::HostRegion act = regionArg(in.call, abi::param::LaurelResidual::Act);
  // Two rms() per row and the residual sum.
  w.flops += 12 * elements(act);
  w.transcendentals += 2 * double(act.rows);
}

void costPleInject(const CostInput &in, HostWork &w) {
  using K = abi::param::PleInject;
  abi::HostRegion streams = regionArg(in.call, K::Streams);
  double a = double(std::max<int64_t>(integerArg(in.call, K::NumInputs, 1), 1));
  double t = double(streams.rows) / a, h = double(streams.elems);
  w.flops += t * (4 * h + a * h); // rms() of the projection, the sums
  w.transcendentals += t;
}

void costSoftCapLookup(const CostInput &in, HostWork &w) {
  // The logits come back from the NPU as BF16: one table lookup each
  // (the table's one-time build is not charged to a token).
  abi::HostRegion x = regionArg(in.call, abi::param::SoftCap::In);
  w.flops += elements(x);
  w.tableLookups += elements(x);
}

/// Nothing beyond the region traffic.
void costRegionTraffic(const CostInput &, HostWork &) {}

void costEmitLogits(const CostInput &in, HostWork &w) {
  // Into the logits rows.
  w.bytes += 4 * elements(regionArg(in.call, abi::param::EmitLogits::In));
}

using CostRule = void (*)(const CostInput &, HostWork &);

/// The rule of each kernel. Declared only: a kernel without a
/// PCCX_HOST_COST row has no specialization, and kCostRules below does
/// not compile.
template <HostKernel Kernel> struct CostRuleOf;
#define PCCX_HOST_COST(Kernel, Rule)                                           \
  template <> struct CostRuleOf<HostKernel::Kernel> {                          \
    static constexpr CostRule rule = cost##Rule;                               \
  };
#include "hw/abi/HostKernels.def"

constexpr CostRule kCostRules[] = {
#define PCCX_HOST_KERNEL(Id, Name) CostRuleOf<HostKernel::Id>::rule,
#include "hw/abi/HostKernels.def"
};

} // namespace

HostWork hostWork(const host::BoundCall &call, const ReplayContext &context,
                  int64_t position, RopeTables *ropeTables) {
  HostWork w;
  RopeTables ownTables; // a call's heads share their angles in any case
  if (!ropeTables)
    ropeTables = &ownTables;
  // Every In region is read and every Out region written once.
  for (const abi::HostRegion &r : call.inputs)
    w.bytes += 4 * elements(r);
  for (const abi::HostRegion &r : call.outputs)
    w.bytes += 4 * elements(r);
  kCostRules[unsigned(call.kernel)]({call, context, position, ropeTables}, w);
  w.splitsRows = host::splitsRows(call.kernel);
  return w;
}

double hostWorkNs(const HostWork &work, const Params &p, int64_t rows) {
  const double threads =
      work.splitsRows
          ? std::max(1.0, std::min(p.host_kernel_threads, double(rows)))
          : 1.0;
  const double cycles = work.flops * p.host_cycles_per_flop +
                        work.transcendentals * p.host_cycles_per_transcendental +
                        work.tableLookups * p.host_cycles_per_table_lookup;
  return p.host_call_overhead_ns +
         (cycles * 1000.0 / p.host_cpu_mhz +
          work.bytes * 1000.0 / p.host_memory_mb_per_s) /
             threads +
         work.uncachedWriteBytes * 1000.0 / p.dma_buffer_write_mb_per_s;
}

namespace {

struct Entry {
  bool set = false;
  uint32_t a = 0, b = 0, c = 0;
};

int64_t wordsFor(int64_t elems) { return (elems + 7) / 8; }

/// The replay of one step: the driver's actions as timed work.
class Replay {
public:
  Replay(const exec::Program &program, const ReplayContext &context,
         int64_t position, const Params &params, StepProfile *out,
         std::string *error)
      : prog_(program), ctx_(context), pos_(position), p_(params), out_(out),
        error_(error) {}

  bool run();

private:
  double cyclesNs(double cycles) const {
    return cycles * 1000.0 / p_.core_clock_mhz;
  }
  double mbpsNs(double bytes, double mbPerS) const {
    return bytes * 1000.0 / mbPerS;
  }
  double pollNs() const { return 2 * p_.axil_read_ns; }
  /// The PS port a DataMover's traffic takes.
  unsigned portOf(device::kv260::Channel c) const {
    const unsigned i = unsigned(c);
    if (i < 4)
      return i;
    return p_.host_window_on_hp0 ? 0 : 4;
  }
  /// The bytes of a transfer plan on the op's ports and DDR: each port
  /// carries its share at 16 B per AXI clock, DDR all of them.
  void chargePorts(const device::kv260::TransferPlan &plan, NpuOp &op) {
    double total = 0;
    for (const device::kv260::PlannedCommand &c : plan.commands) {
      const unsigned port = portOf(c.channel);
      op.portBytes[port] += double(c.bytes);
      out_->counts.portBytes[port] += c.bytes;
      if (c.zeros)
        out_->counts.laneZeroBytes += c.bytes;
      total += double(c.bytes);
    }
    const double portMbps = p_.hp_port_bytes_per_clock * p_.axi_clock_mhz;
    for (unsigned q = 0; q < kNumDdrPorts; ++q)
      op.portNs[q] = mbpsNs(op.portBytes[q], portMbps);
    op.ddrNs = mbpsNs(total, p_.ddr_effective_mb_per_s);
  }
  /// How long the op streams: the busiest port or DDR, after the latency.
  static double streamNs(const NpuOp &op) {
    double ns = op.ddrNs;
    for (unsigned q = 0; q < kNumDdrPorts; ++q)
      ns = std::max(ns, op.portNs[q]);
    return op.latencyNs + ns;
  }
  void logWord(uint64_t word) {
    if (ctx_.issued) {
      IssuedItem item;
      item.instruction = true;
      item.word = word;
      ctx_.issued->push_back(item);
    }
  }
  void logCommand(const device::kv260::PlannedCommand &c) {
    if (ctx_.issued) {
      IssuedItem item;
      item.channel = unsigned(c.channel);
      item.bytes = c.bytes;
      item.eof = c.eof;
      ctx_.issued->push_back(item);
    }
  }
  /// The driver waits until the commands of `c` are done (the plan's
  /// drainFirst) and pops their statuses.
  void drain(device::kv260::Channel c, const std::string &what) {
    std::deque<double> &q = queued_[unsigned(c)];
    if (q.empty())
      return;
    const double until = *std::max_element(q.begin(), q.end());
    if (until > tl().hostNow())
      tl().host(until - tl().hostNow(), channelCategory_[unsigned(c)],
                std::string("wait for DataMover ") +
                    device::kv260::info(c).name + " before " + what);
    const double words =
        double(q.size()) * device::kv260::statusWordsPerCommand(c);
    tl().host(2 * words * p_.axil_read_ns, "sync",
              std::string("DataMover ") + device::kv260::info(c).name +
                  " statuses before " + what);
    statusesPending_ -= words;
    q.clear();
  }
  /// pushCommand: with queueDepth commands outstanding on the channel,
  /// first wait for the oldest and pop its status. `doneAt` < 0: the
  /// command belongs to the instruction being issued, whose times are
  /// known once it is placed.
  void push(const device::kv260::PlannedCommand &c, double doneAt,
            double &hostNs, const std::string &what) {
    const unsigned ch = unsigned(c.channel);
    std::deque<double> &q = queued_[ch];
    if (!q.empty() && q.size() + pendingOnChannel_[ch] >=
                          device::kv260::queueDepth(c.channel)) {
      tl().host(hostNs, "issue", "issue " + what);
      hostNs = 0;
      if (q.front() > tl().hostNow())
        tl().host(q.front() - tl().hostNow(), channelCategory_[ch],
                  "DataMover queue slot for " + what);
      // A flags read and a pop per status word.
      hostNs +=
          2 * device::kv260::statusWordsPerCommand(c.channel) * p_.axil_read_ns;
      q.pop_front();
      statusesPending_ -= device::kv260::statusWordsPerCommand(c.channel);
    }
    hostNs += pushCommandNs(c.channel);
    if (doneAt < 0)
      ++pendingOnChannel_[ch];
    else
      q.push_back(doneAt);
    logCommand(c);
  }
  /// Queues one DataMover command (docs/kv260.md §5) and returns its cost:
  /// a flags read for room, then three command words and the push. Its
  /// status words are popped (a flags read and the pop each) at the next
  /// sync.
  double pushCommandNs(device::kv260::Channel c) {
    statusesPending_ += device::kv260::statusWordsPerCommand(c);
    return p_.axil_read_ns + 4 * p_.axil_write_ns;
  }
  void waitIdle(const std::string &name) {
    // The poll that straddles completion still reads busy: on average the
    // host notices one and a half polls after the last instruction.
    tl().waitIdle(pollNs(), 1.5 * pollNs(), name);
  }
  Timeline &tl() { return out_->timeline; }
  bool fail(uint32_t word, const std::string &what) {
    *error_ = prog_.section + " at position " + std::to_string(pos_) +
              ": word " + std::to_string(word) + ": " + what;
    return false;
  }
  void sync(const std::string &name);
  bool issue(uint32_t index, const std::string &segment);
  /// The cost of one instruction, one function per opcode as the simulator
  /// executes them: each fills `op` (the NPU's work) and adds the driver's
  /// work before the word to `hostNs`. `index` is the word's, `what` its
  /// name in the timeline.
  void costMemset(const isa::Instruction &inst, NpuOp &op);
  bool costMemcpy(const isa::Instruction &inst, uint32_t index,
                  const std::string &what, double &hostNs, NpuOp &op);
  /// A MEMCPY between L2 and the host window: the DataMover commands, and
  /// the driver's conversion of the rows to or from BF16.
  void costHostCopy(const isa::Instruction &inst, bool fromHost, double words,
                    double spanWords, double aux, const std::string &what,
                    double &hostNs, NpuOp &op);
  void costCvo(const isa::Instruction &inst, NpuOp &op);
  /// GEMV and GEMM.
  bool costMatmul(const isa::Instruction &inst, uint32_t index,
                  const std::string &what, double &hostNs, NpuOp &op);
  /// The weight record of a GEMV/GEMM (`bytes` of `ref`) streamed to the
  /// engine: staged and queued as the driver does, charged to `op`'s ports.
  void streamWeights(bool gemm, const exec::WeightRef &ref, uint64_t bytes,
                     const std::string &what, double &hostNs, NpuOp &op);
  bool entry(const Entry *bank, uint32_t e, const char *bankName, uint32_t word,
             Entry *out);
  /// The commands of plan_ that follow the word of `op` (ending at `end`).
  void afterWord(const NpuOp &op, double end, const std::string &what);

  const exec::Program &prog_;
  const ReplayContext &ctx_;
  int64_t pos_;
  const Params &p_;
  StepProfile *out_;
  std::string *error_;
  std::vector<uint64_t> words_;
  Entry fmap_[64], weight_[64];
  /// The transfer plan of the instruction being issued.
  device::kv260::TransferPlan plan_;
  const char *planCategory_ = "";
  double toShadowElements_ = 0;
  /// DataMover status words the next sync pops.
  double statusesPending_ = 0;
  /// Something was issued since the last sync, and the last word was a
  /// MEMCPY (no done pulse).
  bool npuActive_ = false, lastWasMemcpy_ = false;
  /// Host-window words [lo, hi) the NPU wrote since the last sync.
  double toShadowLo_ = 0, toShadowHi_ = 0;
  /// Completion times of the commands outstanding per DataMover (their
  /// statuses not yet popped), what they do, and how many of the current
  /// instruction's are pushed but not yet placed.
  std::deque<double> queued_[device::kv260::kChannelCount];
  const char *channelCategory_[device::kv260::kChannelCount] = {};
  unsigned pendingOnChannel_[device::kv260::kChannelCount] = {};

  /// The CPU's bandwidth on the host window: cached (with u-dma-buf's
  /// cache commands) or through the uncached mapping.
  double windowReadMbps() const {
    return p_.dma_window_cached ? p_.host_memory_mb_per_s
                                : p_.dma_buffer_read_mb_per_s;
  }
  double windowWriteMbps() const {
    return p_.dma_window_cached ? p_.host_memory_mb_per_s
                                : p_.dma_buffer_write_mb_per_s;
  }
  /// One sync_for_cpu / sync_for_device command over `bytes` of the window.
  double windowCacheCommandNs(double bytes) const {
    return p_.dma_window_cached
               ? p_.dma_sync_call_ns + mbpsNs(bytes, p_.dma_sync_mb_per_s)
               : 0.0;
  }
};

void Replay::sync(const std::string &name) {
  // Kv260Device::sync: every outstanding DataMover status is popped, then
  // the NPU waited for, if anything was issued since it was last idle.
  tl().host(2 * statusesPending_ * p_.axil_read_ns, "sync",
            "DataMover statuses (" + name + ")");
  statusesPending_ = 0;
  for (std::deque<double> &q : queued_)
    q.clear();
  if (npuActive_ && lastWasMemcpy_) {
    // A MEMCPY raises no done: its DataMover status is the completion of
    // it and of everything before it; no NPU status read. The driver polls
    // the channel's flags (one read a poll) until the status is there.
    tl().waitIdle(p_.axil_read_ns, 1.5 * p_.axil_read_ns, name);
  } else if (npuActive_) {
    // The status FIFO's stale words are read before polling for DONE.
    tl().host(device::kv260::kStatusFifoDepth * p_.axil_read_ns, "sync",
              "stale NPU status words (" + name + ")");
    waitIdle(name);
  }
  npuActive_ = false;
  if (toShadowElements_ > 0) {
    tl().host(toShadowElements_ * p_.host_bf16_widen_cycles_per_element *
                      1000.0 /
                      p_.host_cpu_mhz +
                  mbpsNs(2 * toShadowElements_, windowReadMbps()) +
                  windowCacheCommandNs(16 * (toShadowHi_ - toShadowLo_)),
              "runtime_copy:bf16_from_npu",
              "BF16 results to float (" + name + ")");
    toShadowElements_ = 0;
  }
}

bool Replay::entry(const Entry *bank, uint32_t e, const char *bankName,
                   uint32_t word, Entry *out) {
  if (!bank[e % 64].set)
    return fail(word, std::string("constant-cache ") + bankName + " entry " +
                          std::to_string(e) + " was never written");
  *out = bank[e % 64];
  return true;
}

bool Replay::issue(uint32_t index, const std::string &segment) {
  isa::Instruction inst;
  std::string why;
  if (!isa::decode(words_[index], inst, &why))
    return fail(index, why);
  const std::string what = segment + "[" + std::to_string(index) + "] " +
                           isa::opcodeInfo(inst.opcode).mnemonic;
  double hostNs = p_.host_issue_cycles * 1000.0 / p_.host_cpu_mhz;
  NpuOp op;
  op.name = what;
  op.engine = Track::Dispatch;
  switch (inst.opcode) {
  case isa::Opcode::Memset:
    costMemset(inst, op);
    break;
  case isa::Opcode::Memcpy:
    if (!costMemcpy(inst, index, what, hostNs, op))
      return false;
    break;
  case isa::Opcode::Cvo:
    costCvo(inst, op);
    break;
  case isa::Opcode::Gemv:
  case isa::Opcode::Gemm:
    if (!costMatmul(inst, index, what, hostNs, op))
      return false;
    break;
  }
  // The word: one 64-bit store into the instruction FIFO.
  hostNs += p_.axil_write_ns;
  tl().host(hostNs, "issue", "issue " + what);
  logWord(words_[index]);
  // The Global Scheduler's own step before the engine starts.
  op.busyNs += cyclesNs(p_.npu_dispatch_cycles);
  const double end = tl().npu(op);
  ++out_->counts.instructions;
  npuActive_ = true;
  lastWasMemcpy_ = inst.opcode == isa::Opcode::Memcpy;
  if (!plan_.commands.empty()) {
    afterWord(op, end, what);
    plan_ = device::kv260::TransferPlan();
  }
  return true;
}

void Replay::costMemset(const isa::Instruction &inst, NpuOp &op) {
  Entry &e = (inst.get(Field::Memset_dest_cache) == 0
                  ? fmap_
                  : weight_)[inst.get(Field::Memset_dest_addr) % 64];
  e = {true, inst.get(Field::Memset_a_value), inst.get(Field::Memset_b_value),
       inst.get(Field::Memset_c_value)};
  op.category = "memset";
  op.busyNs = cyclesNs(p_.memset_cycles);
}

bool Replay::costMemcpy(const isa::Instruction &inst, uint32_t index,
                        const std::string &what, double &hostNs, NpuOp &op) {
  const machine::TargetProfile &target = machine::targetProfile(ctx_.target);
  Entry shape;
  if (!entry(fmap_, inst.get(Field::Memcpy_shape_ptr_addr), "fmap_shape", index,
             &shape))
    return false;
  bool fromHost = inst.get(Field::Memcpy_from_device),
       toHost = inst.get(Field::Memcpy_to_device);
  if (!target.memcpyL2ToL2) {
    // (1, 0) loads from the host; every other pair stores to it.
    fromHost = fromHost && !toHost;
    toHost = !fromHost;
  }
  if (fromHost && toHost)
    return fail(index, "host-to-host MEMCPY is not supported");
  const int64_t a = shape.a, rows = shape.b ? shape.b : 1;
  const double words =
      target.memcpyShapeProduct
          ? double((uint64_t(shape.a) * shape.b * shape.c + 7) / 8)
          : double(a * rows);
  op.engine = Track::Memcpy;
  op.category = "memcpy";
  op.async = inst.get(Field::Memcpy_async);
  if (fromHost || toHost) {
    // The rows' span in the host window (one cache command covers it).
    const double aux = target.memcpyAuxAddr
                           ? double(inst.get(Field::Memcpy_aux_addr))
                           : 0.0,
                 stride = double(shape.c ? shape.c : a),
                 spanWords = target.memcpyShapeProduct
                                 ? words
                                 : double(rows - 1) * stride + double(a);
    costHostCopy(inst, fromHost, words, spanWords, aux, what, hostNs, op);
    return true;
  }
  op.busyNs = cyclesNs(words / p_.l2_copy_words_per_cycle);
  op.reads.push_back(
      {int64_t(inst.get(Field::Memcpy_src_addr)),
       int64_t(inst.get(Field::Memcpy_src_addr)) + int64_t(words)});
  op.writes.push_back(
      {int64_t(inst.get(Field::Memcpy_dest_addr)),
       int64_t(inst.get(Field::Memcpy_dest_addr)) + int64_t(words)});
  return true;
}

void Replay::costHostCopy(const isa::Instruction &inst, bool fromHost,
                          double words, double spanWords, double aux,
                          const std::string &what, double &hostNs, NpuOp &op) {
  const device::kv260::TransferPlan plan = device::kv260::planTransfer(
      fromHost ? device::kv260::Stream::HostToL2
               : device::kv260::Stream::L2ToHost,
      uint64_t(16 * words), device::kv260::PlanOptions());
  for (device::kv260::Channel c : plan.drainFirst)
    drain(c, what);
  for (size_t i = 0; i < plan.beforeWord; ++i)
    push(plan.commands[i], -1, hostNs, what);
  op.latencyNs = p_.host_dma_latency_ns;
  chargePorts(plan, op);
  op.busyNs = streamNs(op);
  out_->counts.memcpyBytes += uint64_t(16 * words);
  plan_ = plan;
  planCategory_ = "memcpy";
  if (fromHost) {
    op.writes.push_back(
        {int64_t(inst.get(Field::Memcpy_dest_addr)),
         int64_t(inst.get(Field::Memcpy_dest_addr)) + int64_t(words)});
    // The driver converts the rows to BF16 in the DMA buffer first.
    const double lanes = 8 * words;
    tl().host(lanes * p_.host_bf16_cycles_per_element * 1000.0 /
                      p_.host_cpu_mhz +
                  mbpsNs(2 * lanes, windowWriteMbps()) +
                  windowCacheCommandNs(16 * spanWords),
              "runtime_copy:bf16_to_npu", "float to BF16 for " + what);
  } else {
    op.reads.push_back(
        {int64_t(inst.get(Field::Memcpy_src_addr)),
         int64_t(inst.get(Field::Memcpy_src_addr)) + int64_t(words)});
    if (toShadowElements_ == 0)
      toShadowLo_ = aux, toShadowHi_ = aux + spanWords;
    toShadowLo_ = std::min(toShadowLo_, aux);
    toShadowHi_ = std::max(toShadowHi_, aux + spanWords);
    toShadowElements_ += 8 * words;
  }
}

void Replay::costCvo(const isa::Instruction &inst, NpuOp &op) {
  static const double Params::*const perElement[8] = {
      &Params::sfu_exp_cycles_per_element,
      &Params::sfu_sqrt_cycles_per_element,
      &Params::sfu_gelu_cycles_per_element,
      &Params::sfu_sin_cycles_per_element,
      &Params::sfu_cos_cycles_per_element,
      &Params::sfu_reduce_sum_cycles_per_element,
      &Params::sfu_scale_cycles_per_element,
      &Params::sfu_recip_cycles_per_element};
  const uint32_t func = inst.get(Field::Cvo_cvo_func) & 7;
  const int64_t length = inst.get(Field::Cvo_length);
  op.engine = Track::Sfu;
  op.category = "sfu";
  op.name += std::string(" ") + isa::enumName(Field::Cvo_cvo_func, func) +
             " x" + std::to_string(length);
  op.async = inst.get(Field::Cvo_async);
  op.busyNs = cyclesNs(p_.sfu_latency_cycles +
                       double(length) * p_.*perElement[func] /
                           std::max(p_.sfu_elements_per_clock, 1e-9));
  const int64_t src = inst.get(Field::Cvo_src_addr),
                dst = inst.get(Field::Cvo_dst_addr);
  op.reads.push_back({src, src + wordsFor(length)});
  op.writes.push_back(
      {dst,
       dst + (func == isa::Cvo_cvo_func_reduce_sum ? 1 : wordsFor(length))});
}

bool Replay::costMatmul(const isa::Instruction &inst, uint32_t index,
                        const std::string &what, double &hostNs, NpuOp &op) {
  const bool gemm = inst.opcode == isa::Opcode::Gemm;
  // v002-rtl swaps the roles of the two pointers (hw/machine/Targets.def).
  const bool swapped =
      machine::targetProfile(ctx_.target).matmulPointersSwapped;
  const uint32_t weightEntry = inst.get(swapped ? Field::Matmul_size_ptr_addr
                                                : Field::Matmul_shape_ptr_addr),
                 fmapEntry = inst.get(swapped ? Field::Matmul_shape_ptr_addr
                                              : Field::Matmul_size_ptr_addr);
  Entry shape, size;
  if (!entry(weight_, weightEntry, "weight_shape", index, &shape) ||
      !entry(fmap_, fmapEntry, "fmap_shape", index, &size))
    return false;
  const int64_t n = shape.a, k = shape.b, m = gemm ? size.a : 1;
  if (n == 0 || k == 0 || shape.c > 1)
    return fail(index, "weight_shape entry " + std::to_string(weightEntry) +
                           " is not a valid N, K, format");
  const auto format = hw::WeightFormat(shape.c);
  const bool scaled = inst.has(Field::Matmul_flags, isa::Matmul_flags_w_scale);
  const uint64_t record = uint64_t((scaled ? hw::recordScaleBytes(n) : 0) +
                                   n * hw::recordRowStride(format, k));
  const exec::WeightRef &ref = prog_.weights[index];
  if (ref.kind == exec::WeightRef::Kind::None)
    return fail(index, "GEMV/GEMM has no weight record");
  const uint64_t bytes =
      ref.kind == exec::WeightRef::Kind::Static ? ref.bytes : record;
  out_->counts.weightBytes += bytes;
  if (ref.kind == exec::WeightRef::Kind::Cache ||
      ref.kind == exec::WeightRef::Kind::Mask)
    out_->counts.kvRecordBytes += bytes;
  unsigned lanes = inst.get(Field::Matmul_parallel_lane);
  lanes = lanes == 0 ? unsigned(p_.gemv_cores) : std::min(lanes, 4u);

  streamWeights(gemm, ref, bytes, what, hostNs, op);

  const double divisor = format == hw::WeightFormat::Int8
                             ? std::max(p_.int8_weight_rate_divisor, 1e-9)
                             : 1.0;
  const double macs = double(m) * double(n) * double(k);
  const double computeNs =
      gemm ? cyclesNs(p_.gemm_fill_cycles +
                      macs * divisor / p_.gemm_macs_per_clock)
           : cyclesNs(p_.gemv_reduction_stages + p_.gemv_fill_cycles +
                      macs * divisor /
                          (lanes * p_.gemv_macs_per_core_per_clock));
  const double stream = streamNs(op);
  op.engine = Track::GemvGemm;
  op.busyNs = std::max(computeNs, stream);
  op.category = stream >= computeNs ? "weight_streaming" : "npu_compute";
  op.name += " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
             std::to_string(k) +
             (format == hw::WeightFormat::Int8 ? " int8" : " int4");
  const int64_t src = inst.get(Field::Matmul_src_addr),
                dst = inst.get(Field::Matmul_dest_reg);
  const int64_t s = size.b ? size.b : wordsFor(k),
                d = size.c ? size.c : wordsFor(n);
  op.reads.push_back({src, src + (m - 1) * s + wordsFor(k)});
  op.writes.push_back({dst, dst + (m - 1) * d + wordsFor(n)});
  return true;
}

void Replay::streamWeights(bool gemm, const exec::WeightRef &ref,
                           uint64_t bytes, const std::string &what,
                           double &hostNs, NpuOp &op) {
  // flushPendingWeights, by the transfer plan both share
  // (runtime/devices/Kv260TransferPlan.h): the record streams over the
  // engine's two ports (a GEMM whose engine adds its lanes,
  // gemm_lanes_summed: the record on one, as many zeros on the other) in
  // commands the driver queues without waiting for the NPU, up to the
  // command FIFOs' depth; the rest follow the word. A record made at run
  // time by a host kernel (host attention's scores) is first copied into
  // the DMA staging area, once the commands reading the previous staged
  // record are done; a static one streams from the resident weights
  // section (copied once when the model is opened), a KV record or mask
  // from where the host wrote it in the DMA buffer.
  device::kv260::PlanOptions planOptions;
  planOptions.maxCommandBytes = ctx_.maxCommandBytes;
  planOptions.staged = ref.kind == exec::WeightRef::Kind::Dynamic;
  planOptions.gemmLanes = p_.gemm_lanes_summed != 0
                              ? device::kv260::GemmLanes::Summed
                              : device::kv260::GemmLanes::Split;
  const device::kv260::TransferPlan plan =
      device::kv260::planTransfer(gemm ? device::kv260::Stream::GemmWeights
                                       : device::kv260::Stream::GemvWeights,
                                  bytes, planOptions);
  for (device::kv260::Channel c : plan.drainFirst)
    drain(c, what);
  if (planOptions.staged)
    tl().host(mbpsNs(double(bytes), p_.dma_buffer_write_mb_per_s),
              "runtime_copy:weight_staging", "weight record copy for " + what);
  for (size_t i = 0; i < plan.beforeWord; ++i)
    push(plan.commands[i], -1, hostNs, what);
  plan_ = plan;
  planCategory_ = "weight_streaming";
  op.latencyNs = p_.weight_stream_latency_ns;
  chargePorts(plan, op);
}

void Replay::afterWord(const NpuOp &op, double end, const std::string &what) {
  // Each command completes as the NPU drains the record: at its lane's
  // share of the op's stream time.
  const double start = tl().lastStart() + op.latencyNs;
  double laneBytes[device::kv260::kChannelCount] = {},
         through[device::kv260::kChannelCount] = {};
  for (const device::kv260::PlannedCommand &c : plan_.commands)
    laneBytes[unsigned(c.channel)] += double(c.bytes);
  std::vector<double> doneAt(plan_.commands.size());
  for (size_t i = 0; i < plan_.commands.size(); ++i) {
    const unsigned lane = unsigned(plan_.commands[i].channel);
    through[lane] += double(plan_.commands[i].bytes);
    doneAt[i] = start + (end - start) * through[lane] / laneBytes[lane];
    channelCategory_[lane] = planCategory_;
    if (i < plan_.beforeWord)
      queued_[lane].push_back(doneAt[i]);
  }
  std::fill(std::begin(pendingOnChannel_), std::end(pendingOnChannel_), 0u);
  // The rest are pushed after the word, each waiting for a queue slot.
  double hostNs = 0;
  for (size_t i = plan_.beforeWord; i < plan_.commands.size(); ++i)
    push(plan_.commands[i], doneAt[i], hostNs, what);
  tl().host(hostNs, "issue", "DataMover commands after " + what);
}

bool Replay::run() {
  const int64_t lastPos = ctx_.rowPosition(pos_, prog_.rows - 1);
  if (ctx_.maxPositions > 0 && (pos_ < 0 || lastPos >= ctx_.maxPositions)) {
    *error_ = prog_.section + ": positions " + std::to_string(pos_) + ".." +
              std::to_string(lastPos) +
              " exceed the KV cache of " + std::to_string(ctx_.maxPositions) +
              " positions";
    return false;
  }
  out_->position = pos_;
  out_->rows = prog_.rows;
  words_ = prog_.words;
  // The runtime's patch values; token ids only move host-window offsets
  // and gather rows, which cost the same for every id, so token 0 stands
  // in for them.
  std::string why;
  if (!exec::patchProgram(
          prog_, words_,
          [&](int64_t r) { return ctx_.rowPosition(pos_, r); },
          [](int64_t) { return 0; }, &why)) {
    *error_ = prog_.section + " at position " + std::to_string(pos_) + ": " +
              why;
    return false;
  }
  // Session::setMasks: one scale per slot and step row of every distinct
  // (slots, window) of the key records, stored into the DMA buffer.
  if (ctx_.caches) {
    std::set<std::pair<int64_t, int64_t>> maskSets;
    for (const exec::CacheSpec &c : *ctx_.caches)
      if (c.dtype == host::KvStorage::KeyRecords)
        maskSets.insert({c.slots, c.window});
    double bytes = 0;
    for (const auto &[slots, window] : maskSets)
      bytes += 4.0 * double(slots) * double(prog_.rows);
    if (bytes > 0)
      tl().host(mbpsNs(bytes, p_.dma_buffer_write_mb_per_s),
                "runtime_copy:attention_masks", "attention masks of the step");
  }
  RopeTables ropeTables; // built once per step, as the kernels do
  double begin = 0;
  auto startSegment = [&](const exec::Segment &) {
    begin = tl().hostNow();
    return true;
  };
  auto runEvent = [&](const exec::Segment &seg, const exec::Event &e) {
    if (e.kind == exec::Event::Kind::Sync) {
      ++out_->counts.syncs;
      sync("sync in " + seg.name);
      return true;
    }
    const host::BoundCall &call = prog_.calls[e.call];
    const std::string kernel = abi::kernelInfo(call.kernel).name;
    tl().host(hostWorkNs(hostWork(call, ctx_, pos_, &ropeTables), p_,
                         prog_.rows),
              "host:" + kernel, seg.name + " " + kernel);
    ++out_->counts.hostOps;
    return true;
  };
  auto issueWord = [&](const exec::Segment &seg, uint32_t i) {
    return issue(i, seg.name);
  };
  auto endSegment = [&](const exec::Segment &seg) {
    // Session: sync, then finishSegment (which syncs again).
    sync("end of " + seg.name);
    sync("finish " + seg.name);
    out_->segments.push_back({seg.name, (tl().hostNow() - begin) * 1e-9});
    return true;
  };
  if (!exec::walkProgram(prog_, startSegment, runEvent, issueWord, endSegment))
    return false;
  out_->seconds = tl().hostNow() * 1e-9;
  for (const auto &[category, ns] : tl().criticalPath())
    out_->breakdown[category] = ns * 1e-9;
  return true;
}

} // namespace

bool profileStep(const exec::Program &program, const ReplayContext &context,
                 int64_t position, const Params &params, StepProfile *out,
                 std::string *error) {
  *out = StepProfile();
  Replay replay(program, context, position, params, out, error);
  return replay.run();
}

} // namespace pccx::prof
