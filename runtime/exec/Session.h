//===- Session.h - the per-token driver -------------------------*- C++ -*-===//
//
// Runs a prepared model (Model.h) on a Device: writes the patch fields,
// feeds the weight stream in consumption order, issues each segment's words,
// waits where the compiler scheduled a pccx.host.sync (and at each segment
// end), runs the bound host calls at their places, and reads the logits
// back. Prompts go through the prefill program in steps of its row
// count and the decode program for the rest (or token by token with
// decodeOnly). The KV caches are rings with a hard cap: a step past the
// positions the bundle was compiled for is refused.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_EXEC_SESSION_H
#define PCCX_RUNTIME_EXEC_SESSION_H

#include "runtime/devices/Device.h"
#include "runtime/exec/Model.h"

#include <deque>
#include <memory>

namespace pccx::exec {

using device::Device;

struct SessionStats {
  uint64_t instructions = 0, hostOps = 0, syncs = 0, weightBytes = 0, steps = 0;
  /// Of weightBytes: streamed from the KV records and masks.
  uint64_t kvRecordBytes = 0;
};

class Session {
public:
  /// A device computing in reference numerics gets KV caches in float32
  /// (and exact KV records) whatever the bundle says; otherwise they use
  /// the bundle's dtype.
  Session(const Model &model, std::unique_ptr<Device> device);

  int64_t position() const { return position_; }
  /// Positions the KV caches hold.
  int64_t capacity() const { return model_.maxSeqLen(); }
  /// Forgets every cached position.
  void reset();
  /// Consumes `tokens` at the next positions and appends one row of
  /// vocab_size logits per token to `logits` (when not null).
  bool consume(const std::vector<int32_t> &tokens, bool decodeOnly,
               std::vector<float> *logits, std::string *error);
  const SessionStats &stats() const { return stats_; }
  Device &device() { return *device_; }

private:
  bool run(const Program &program, std::vector<uint64_t> &words,
           const int32_t *tokens, int64_t count, std::vector<float> *logits,
           std::string *error);

  /// The KV records and masks in device memory, made before the first step.
  bool prepareRecords(std::string *error);
  /// Sets every mask for a step of `rows` rows at the current position.
  void setMasks(int64_t rows);

  const Model &model_;
  std::unique_ptr<Device> device_;
  bool fp32Caches_;
  std::vector<host::KvCache> caches_;
  /// Masks are shared by the key caches of one (slots, window): one record
  /// per step row.
  struct MaskSet {
    int64_t slots = 0, window = 0, recordBytes = 0;
    device::StreamableBuffer memory; ///< rows records
  };
  std::vector<MaskSet> masks_;
  std::vector<int> maskOf_; ///< per cache: index into masks_, or -1
  /// Per cache: the device buffer holding its records (record caches).
  std::vector<device::BufferId> cacheBuffer_;
  bool recordsReady_ = false;
  /// Each program's words as last patched (the unpatched bits never change).
  std::vector<uint64_t> decodeWords_, prefillWords_;
  std::deque<std::vector<uint8_t>> dynamic_, inFlight_;
  host::HostContext context_;
  std::vector<float> stepLogits_;
  /// Whether the device was given the weights section (before the first
  /// step, so a device that cannot keep it says so before any work), and
  /// the buffer the static records' handles name.
  bool weightsRegistered_ = false;
  device::BufferId weightsBuffer_ = 0;
  int64_t position_ = 0;
  SessionStats stats_;
};

} // namespace pccx::exec

#endif
