//===- Batch.h - many sequences, one pass over the weights ------*- C++ -*-===//
//
// Continuous batching over a session's slots: requests wait in arrival
// order, join at the next iteration with a free slot and leave as soon as
// they finish. Each iteration runs one chunk of one newcomer's prompt (so a
// long prompt never stalls the others for long), then one batched decode
// step for every sequence that is generating (Session::step: one pass over
// the weights for all of them). A newcomer takes the free slot whose cached
// tokens share the longest prefix with its prompt and consumes only the
// rest.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_BATCH_H
#define PCCX_RUNTIME_APP_BATCH_H

#include "runtime/app/Generate.h"

#include <deque>
#include <functional>

namespace pccx::app {

struct BatchRequest {
  std::vector<int32_t> prompt;
  /// maxNewTokens, sampling, stopTokens, keepLogits and onToken apply;
  /// decodeOnly feeds the prompt token by token.
  GenerateOptions options;
  /// Called when the request gets its slot, with the prompt tokens found
  /// in the slot's cache.
  std::function<void(int64_t reused)> onAdmit;
  /// Set: the prompt is consumed from an empty cache (reused positions
  /// have no logits) and this is called with the logits rows of each
  /// chunk of it, the first of position `from`.
  std::function<void(size_t from, const std::vector<float> &rows)>
      onPromptLogits;
  /// Called once when the request ends: its result, or an error.
  std::function<void(const GenerateResult &, const std::string &error)> onDone;
};

struct BatchStats {
  int64_t iterations = 0, decodeSteps = 0;
  int64_t promptTokens = 0, reusedTokens = 0, generatedTokens = 0;
  /// Sum over decode steps of the sequences they served.
  int64_t stepRows = 0;
};

class BatchScheduler {
public:
  /// `parallel` sequences at once (the session gets that many slots);
  /// `promptChunk` prompt tokens per iteration (0: 4 x prefill rows).
  BatchScheduler(exec::Session &session, int parallel, int64_t promptChunk = 0);

  /// Makes the slots; false with the session's reason.
  bool init(std::string *error);
  /// Queues a request; returns its id.
  int64_t submit(BatchRequest request);
  /// Ends request `id` (queued or running) without calling its onDone.
  void cancel(int64_t id);
  /// One iteration. False only when the session fails; every running
  /// request then ends with that error.
  bool iterate(std::string *error);
  /// Iterates until nothing is queued or running.
  bool runAll(std::string *error);

  bool idle() const { return queue_.empty() && running() == 0; }
  int running() const;
  size_t queued() const { return queue_.size(); }
  int parallel() const { return parallel_; }
  const BatchStats &stats() const { return stats_; }

private:
  struct Slot {
    int64_t id = -1; ///< the request in it, or -1
    BatchRequest request;
    std::unique_ptr<Sampler> sampler;
    GenerateResult result;
    /// Prompt tokens not yet consumed (from `fed` on).
    size_t fed = 0;
    bool generating = false;
    int32_t next = 0; ///< the token the next step feeds
  };
  void admit();
  bool feedPrompt(int index, std::string *error);
  /// Samples from `logits` for slot `index`; false when the request ends.
  bool choose(int index, std::vector<float> logits);
  void finish(int index, const std::string &error);

  exec::Session &session_;
  int parallel_;
  int64_t promptChunk_;
  std::vector<Slot> slots_;
  std::deque<std::pair<int64_t, BatchRequest>> queue_;
  int64_t nextId_ = 0;
  BatchStats stats_;
};

} // namespace pccx::app

#endif
