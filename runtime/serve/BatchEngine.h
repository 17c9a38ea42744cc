//===- BatchEngine.h - replies of many clients, decoded together -*- C++ -*-===//
//
// The model side of `pccx-serve --parallel N`: a thread runs the continuous
// batching scheduler (runtime/app/Batch.h) over N slots of the session,
// and any number of request threads call complete(), each blocking until
// its reply ends, as the single-sequence chat does. Tokens go from the
// engine thread to the request's thread through a queue; the text,
// stop strings and the client's pace are the request thread's business, so
// a slow client never holds up the other sequences.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_BATCHENGINE_H
#define PCCX_RUNTIME_SERVE_BATCHENGINE_H

#include "runtime/app/Batch.h"
#include "runtime/app/Chat.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace pccx::serve {

/// One slot of the session as GET /slots shows it.
struct SlotState {
  bool processing = false; ///< a request holds it
  /// Tokens its KV cache holds: a request whose prompt starts with them
  /// does not consume them again.
  int64_t cachedTokens = 0;
};

struct EngineStats {
  int slots = 0, busy = 0;
  size_t waiting = 0;
  int64_t generatedTokens = 0, promptTokens = 0, reusedTokens = 0;
  int64_t decodeSteps = 0, stepRows = 0;
  /// Speculative decoding: tokens drafted, and of them accepted.
  int64_t draftedTokens = 0, acceptedTokens = 0;
  /// Seconds the engine spent iterating (the denominator of its rate).
  double busySeconds = 0;
};

class BatchEngine {
public:
  BatchEngine(exec::Session &session, const Tokenizer &tokenizer,
              int32_t endOfTurn, int parallel);
  ~BatchEngine();
  /// Makes the slots and starts the engine thread.
  bool start(std::string *error);
  /// A reply to `prompt` (ChatSession::complete's contract). Thread safe.
  bool complete(const std::vector<int32_t> &prompt,
                const app::ReplyOptions &options, app::Reply *reply,
                std::string *error);
  EngineStats stats() const;
  /// Each slot: whether a request holds it, the tokens its cache holds (as
  /// of the engine's last iteration).
  std::vector<SlotState> slotStates() const;

private:
  struct Pending;
  void loop();
  void cancel(int64_t id);
  /// The engine thread's record of which request holds which slot (the
  /// scheduler does not tell): the slot request `id` was admitted to, with
  /// `reused` prompt tokens kept, and the slot a request leaves.
  void admitted(int64_t id, int64_t reused, const std::vector<int32_t> &prompt);
  void left(int64_t id);
  /// Publishes slotStates() (engine thread, mutex_ held).
  void publishSlots();

  exec::Session &session_;
  const Tokenizer &tokenizer_;
  int32_t endOfTurn_;
  app::BatchScheduler scheduler_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false, started_ = false;
  int64_t nextId_ = 0;
  /// Submitted, not yet handed to the scheduler; cancellations to apply.
  std::vector<std::pair<int64_t, app::BatchRequest>> incoming_;
  std::vector<int64_t> cancelled_;
  std::map<int64_t, int64_t> schedulerId_; ///< ours -> the scheduler's
  EngineStats stats_;
  /// Engine thread only: each slot's request (ours, -1: free), and each
  /// slot's position before the iteration that admits.
  std::vector<int64_t> slotOwner_, positions_;
  /// Published, under mutex_: slotStates() and the owners behind it.
  std::vector<SlotState> slotStates_;
  std::vector<int64_t> publishedOwner_;
};

} // namespace pccx::serve

#endif
