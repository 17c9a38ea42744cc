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
// A session holds one or more sequences (slots), each with its own position
// and KV caches. step() decodes rows of several slots together through the
// batch program (one pass over the weights for all of them); without one it
// runs the rows one by one. Slot 0 is the sequence of the single-sequence
// calls (position(), consume(), reset()).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_EXEC_SESSION_H
#define PCCX_RUNTIME_EXEC_SESSION_H

#include "runtime/devices/Device.h"
#include "runtime/exec/Model.h"

#include <deque>
#include <memory>

namespace pccx::sim {
class WorkerPool;
}

namespace pccx::exec {

using device::Device;

struct SessionStats {
  uint64_t instructions = 0, hostOps = 0, syncs = 0, weightBytes = 0, steps = 0;
  /// Of weightBytes: streamed from the KV records and masks.
  uint64_t kvRecordBytes = 0;
  /// Rows run through the batch program, and of them padding (unused rows).
  uint64_t batchRows = 0, paddingRows = 0;
  /// Rewinds whose target a sliding ring no longer held the window before,
  /// and the positions they prefilled again from an empty cache.
  uint64_t rewindReplays = 0, replayedTokens = 0;
};

/// The logits rows consume() returns: one per token, or only the last
/// token's. With Last, prefill steps whose rows are all unread run the
/// program without the LM head when the bundle has one.
enum class LogitsRows { Every, Last };

class Session {
public:
  /// A device computing in reference numerics gets KV caches in float32
  /// (and exact KV records) whatever the bundle says; otherwise they use
  /// the bundle's dtype.
  Session(const Model &model, std::unique_ptr<Device> device);
  ~Session();

  int64_t position() const { return position(0); }
  /// Positions the KV caches hold: the bundle's max_seq_len, or fewer
  /// (setContextSize).
  int64_t capacity() const { return contextSize_; }
  /// Holds at most `n` positions (1 .. max_seq_len; llama.cpp's -c): the
  /// host KV caches shrink to n slots, where the bundle's were longer (a
  /// cache no sequence fills past n positions never wraps). KV records keep
  /// their compiled length: the programs address them. Only before any
  /// slot holds a token.
  bool setContextSize(int64_t n, std::string *error);
  /// Forgets every cached position of every slot.
  void reset();
  /// Consumes `tokens` at the next positions of slot 0 and appends one row
  /// of vocab_size logits per token to `logits` (when not null), or only
  /// the last token's row with LogitsRows::Last.
  bool consume(const std::vector<int32_t> &tokens, bool decodeOnly,
               std::vector<float> *logits, std::string *error,
               LogitsRows which = LogitsRows::Every) {
    return consume(0, tokens, decodeOnly, logits, error, which);
  }

  // ---- several sequences ------------------------------------------------
  int slots() const { return int(sequences_.size()); }
  /// Holds at least `count` sequences (new ones empty). Refused, naming the
  /// figures, when their KV caches would pass the host memory limit.
  bool reserveSlots(int count, std::string *error);
  int64_t position(int slot) const;
  void reset(int slot);
  bool consume(int slot, const std::vector<int32_t> &tokens, bool decodeOnly,
               std::vector<float> *logits, std::string *error,
               LogitsRows which = LogitsRows::Every);
  /// Forgets the positions of `slot` from `position` on (speculative
  /// decoding drops the rejected rows this way, prompt caches what differs
  /// from a new prompt); refused only for a position the slot does not hold.
  /// The next steps see exactly what a fresh run of the kept tokens gives:
  /// when a sliding layer's ring no longer holds the window before
  /// `position` (rewindKeepsCache), the slot restarts from an empty cache and
  /// prefills its kept tokens again (counted in stats().rewindReplays).
  bool rewind(int slot, int64_t position, std::string *error);
  /// Whether rewind(slot, position) keeps the cache as it is: every ring
  /// slot in the window before `position` still holds the position that
  /// maps to it (decided from what each ring was last written with, not
  /// from the slot's current position). Callers that would rather feed the
  /// prefix themselves (in chunks, between other slots' steps) reset
  /// instead when it is false.
  bool rewindKeepsCache(int slot, int64_t position) const;
  /// The tokens `slot` holds, at positions 0..position(slot)-1.
  const std::vector<int32_t> &tokens(int slot) const;
  /// How many leading tokens of `prompt` the slot can keep (prompt caching):
  /// their common prefix with its tokens, at most all of the prompt but its
  /// last token (consumed again for its logits), or 0 when rewinding there
  /// would not keep the cache (rewindKeepsCache).
  int64_t reusablePrefix(int slot, const std::vector<int32_t> &prompt) const;

  struct StepRow {
    int slot = 0;
    int32_t token = 0;
  };
  /// Consumes each row's token at the next position of its slot (rows of
  /// one slot in order, at consecutive positions) and appends one logits
  /// row per row, in order. With batch programs the rows run together in
  /// steps of the largest one's rows, each step through the smallest
  /// program that holds its rows (rows it has beyond them run at position
  /// 0 of a spare sequence, their logits dropped); a single row, or a
  /// bundle without batch programs, runs through the decode program.
  bool step(const std::vector<StepRow> &rows, std::vector<float> *logits,
            std::string *error);
  /// Rows one batched step holds: the batch program's, or 1 without one.
  int64_t batchRows() const {
    return model_.batch() ? model_.batch()->rows : 1;
  }

  const SessionStats &stats() const { return stats_; }
  /// Threads the row-wise host kernels split a step's rows over (0: one per
  /// hardware thread; 1, the default: the calling thread only). Results are
  /// the same bit for bit at every count.
  void setHostThreads(unsigned threads);
  unsigned hostThreads() const;
  const Model &model() const { return model_; }
  Device &device() { return *device_; }

private:
  struct Sequence;
  /// Row r of a step: its sequence and position, and the last position its
  /// sequence reaches in the step.
  struct RowBinding {
    Sequence *sequence = nullptr;
    int64_t position = 0, last = 0;
  };

  /// Pushes the weight record word `i` of `program` consumes, if any: a
  /// static record, a KV record or mask of the step's rows, or the next one
  /// a host kernel produced.
  bool pushRecord(const Program &program, uint32_t i,
                  const std::vector<RowBinding> &rows, std::string *why);
  bool run(const Program &program, std::vector<uint64_t> &words,
           const int32_t *tokens, const std::vector<RowBinding> &rows,
           std::vector<float> *logits, std::string *error);
  /// One batch-program step of `rows` (at most its rows; the rest padded).
  bool runBatch(const std::vector<StepRow> &rows, std::vector<float> *logits,
                std::string *error);
  bool checkSlot(int slot, std::string *error) const;
  bool checkToken(int32_t token, std::string *error) const;
  bool checkRoom(int slot, int64_t count, std::string *error) const;

  std::unique_ptr<Sequence> newSequence();
  /// Marks the ring slots the rows write as holding their positions (before
  /// the step runs: a step that fails may have written them).
  void markWritten(const std::vector<RowBinding> &rows);
  /// The KV records of `sequence` in device memory, made before its first
  /// step; the masks too, before the session's first step.
  bool prepareRecords(Sequence &sequence, std::string *error);
  bool prepareMasks(std::string *error);
  /// Sets every mask for the step's rows.
  void setMasks(const std::vector<RowBinding> &rows);

  const Model &model_;
  std::unique_ptr<Device> device_;
  bool fp32Caches_;
  int64_t contextSize_; ///< capacity(): max_seq_len unless set lower
  std::vector<std::unique_ptr<Sequence>> sequences_;
  /// The KV caches shorter than the context (sliding layers' rings), one
  /// entry per distinct slot count: positions a step at p reads back to
  /// (p - reach + 1).
  struct RingSpec {
    int64_t slots = 0, reach = 0;
  };
  std::vector<RingSpec> rings_;
  /// Runs the unused rows of a batched step (always at position 0).
  std::unique_ptr<Sequence> spare_;
  /// Masks are shared by the key caches of one (slots, window): one record
  /// per step row.
  struct MaskSet {
    int64_t slots = 0, window = 0, recordBytes = 0;
    device::StreamableBuffer memory; ///< rows records
  };
  std::vector<MaskSet> masks_;
  std::vector<int> maskOf_; ///< per cache: index into masks_, or -1
  bool masksReady_ = false;
  /// Each program's words as last patched (the unpatched bits never change).
  std::vector<uint64_t> decodeWords_, prefillWords_, prefillNoLogitsWords_;
  std::vector<std::vector<uint64_t>> batchWords_; ///< per Model::batches()
  std::deque<std::vector<uint8_t>> dynamic_, inFlight_;
  host::HostContext context_;
  std::unique_ptr<sim::WorkerPool> hostPool_;
  std::vector<float> stepLogits_;
  /// Whether the device was given the weights section (before the first
  /// step, so a device that cannot keep it says so before any work), and
  /// the buffer the static records' handles name.
  bool weightsRegistered_ = false;
  device::BufferId weightsBuffer_ = 0;
  SessionStats stats_;
};

} // namespace pccx::exec

#endif
