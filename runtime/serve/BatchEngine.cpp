//===- BatchEngine.cpp - replies of many clients, decoded together ---------===//

#include "runtime/serve/BatchEngine.h"

#include "runtime/grammar/TokenMask.h"

#include <algorithm>
#include <chrono>
#include <deque>

namespace pccx::serve {

using Clock = std::chrono::steady_clock;

/// What the engine thread hands to the request's thread.
struct BatchEngine::Pending {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<int32_t> tokens;
  /// ReplyOptions::topLogprobs: each token's scores, beside `tokens`.
  std::deque<app::TokenLogprob> scores;
  std::vector<app::TokenLogprob> promptScores; ///< ReplyOptions::scorePrompt
  bool done = false;
  int64_t reused = 0;
  app::GenerateResult result;
  std::string error;
};

BatchEngine::BatchEngine(exec::Session &session,
                         const Tokenizer &tokenizer, int32_t endOfTurn,
                         int parallel)
    : session_(session), tokenizer_(tokenizer), endOfTurn_(endOfTurn),
      scheduler_(session, parallel) {}

BatchEngine::~BatchEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

bool BatchEngine::start(std::string *error) {
  if (started_)
    return true;
  if (!scheduler_.init(error))
    return false;
  stats_.slots = scheduler_.parallel();
  slotOwner_.assign(size_t(scheduler_.parallel()), -1);
  positions_.assign(size_t(scheduler_.parallel()), 0);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    publishSlots();
  }
  started_ = true;
  thread_ = std::thread([this] { loop(); });
  return true;
}

void BatchEngine::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] {
      return stopping_ || !incoming_.empty() || !cancelled_.empty() ||
             !scheduler_.idle();
    });
    if (stopping_)
      return;
    for (auto &[id, request] : incoming_)
      schedulerId_[id] = scheduler_.submit(std::move(request));
    incoming_.clear();
    for (int64_t id : cancelled_) {
      auto it = schedulerId_.find(id);
      // (Only iterate() calls back into onDone, which takes the lock.)
      if (it != schedulerId_.end()) {
        scheduler_.cancel(it->second);
        schedulerId_.erase(it);
      }
      left(id); // (a cancelled request's onDone is not called)
    }
    cancelled_.clear();
    for (size_t i = 0; i < positions_.size(); ++i)
      positions_[i] = session_.position(int(i));
    lock.unlock();
    const auto t0 = Clock::now();
    std::string error;
    // A failed iteration ends every running request with its error (their
    // onDone); the engine goes on with the next ones.
    (void)scheduler_.iterate(&error);
    const double seconds =
        std::chrono::duration<double>(Clock::now() - t0).count();
    lock.lock();
    const app::BatchStats &s = scheduler_.stats();
    stats_.busySeconds += seconds;
    stats_.generatedTokens = s.generatedTokens;
    stats_.promptTokens = s.promptTokens;
    stats_.reusedTokens = s.reusedTokens;
    stats_.decodeSteps = s.decodeSteps;
    stats_.stepRows = s.stepRows;
    stats_.busy = scheduler_.running();
    stats_.waiting = scheduler_.queued() + incoming_.size();
    publishSlots();
  }
}

void BatchEngine::admitted(int64_t id, int64_t reused,
                           const std::vector<int32_t> &prompt) {
  // Admission rewinds or resets the slot it picks and no other: a free
  // slot whose position moved is it. Otherwise it held `reused` tokens
  // already, and the scheduler took the first free slot with the longest
  // prefix of the prompt (any free slot when none keeps a token).
  int chosen = -1;
  for (size_t i = 0; i < slotOwner_.size() && chosen < 0; ++i)
    if (slotOwner_[i] < 0 && session_.position(int(i)) != positions_[i])
      chosen = int(i);
  for (size_t i = 0; i < slotOwner_.size() && chosen < 0; ++i) {
    if (slotOwner_[i] >= 0 || positions_[i] != reused)
      continue;
    const std::vector<int32_t> &held = session_.tokens(int(i));
    if (reused == 0 || (size_t(reused) <= prompt.size() &&
                        held.size() >= size_t(reused) &&
                        std::equal(held.begin(), held.begin() + reused,
                                   prompt.begin())))
      chosen = int(i);
  }
  if (chosen < 0)
    return;
  slotOwner_[size_t(chosen)] = id;
  positions_[size_t(chosen)] = session_.position(chosen);
  // Shown at once, not after the iteration (a long one on a big context).
  std::lock_guard<std::mutex> lock(mutex_);
  publishSlots();
}

void BatchEngine::left(int64_t id) {
  for (int64_t &owner : slotOwner_)
    if (owner == id)
      owner = -1;
}

void BatchEngine::publishSlots() {
  slotStates_.resize(slotOwner_.size());
  publishedOwner_ = slotOwner_;
  for (size_t i = 0; i < slotOwner_.size(); ++i)
    slotStates_[i] = {slotOwner_[i] >= 0, session_.position(int(i))};
}

std::vector<SlotState> BatchEngine::slotStates() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slotStates_;
}

void BatchEngine::cancel(int64_t id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Its reply has ended: its slot is free as far as anyone asking can
    // tell, though the engine takes it back at its next iteration.
    for (size_t i = 0; i < publishedOwner_.size(); ++i)
      if (publishedOwner_[i] == id)
        slotStates_[i].processing = false;
    for (auto it = incoming_.begin(); it != incoming_.end(); ++it)
      if (it->first == id) {
        incoming_.erase(it);
        return;
      }
    cancelled_.push_back(id);
  }
  changed_.notify_all();
}

EngineStats BatchEngine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

bool BatchEngine::complete(const std::vector<int32_t> &prompt,
                           const app::ReplyOptions &options, app::Reply *reply,
                           std::string *error) {
  *reply = app::Reply();
  // (The scheduler checks the prompt and the sampling options on admission
  // and ends a request it cannot run with the reason, through onDone.)
  if (!started_) {
    *error = "the batch engine was not started";
    return false;
  }
  auto pending = std::make_shared<Pending>();
  app::BatchRequest request;
  request.prompt = prompt;
  request.options.maxNewTokens = options.maxTokens;
  request.options.sampling = options.sampling;
  request.options.constraint = options.constraint;
  request.options.decodeOnly = options.decodeOnly;
  // The scheduler ends the sequence at a stop id; the text side (stop
  // strings, the client leaving) ends it from here.
  request.options.stopTokens = options.stopTokens;
  if (endOfTurn_ >= 0)
    request.options.stopTokens.insert(endOfTurn_);
  // Log-probabilities are computed on the engine thread, from the row the
  // scheduler hands to onLogits before the sampler warps its copy, so that
  // only the scores (not rows of the vocabulary) wait for a slow client.
  const int top = options.topLogprobs;
  const size_t vocab = size_t(session_.model().vocabSize());
  auto row = std::make_shared<std::vector<float>>();
  if (top >= 0)
    request.options.onLogits = [row](const std::vector<float> &logits) {
      *row = logits;
    };
  request.options.onToken = [pending, row, top, vocab](int32_t token) {
    {
      std::lock_guard<std::mutex> lock(pending->mutex);
      pending->tokens.push_back(token);
      if (top >= 0)
        pending->scores.push_back(
            app::scoreToken(row->data(), vocab, token, top));
    }
    pending->changed.notify_all();
  };
  if (options.scorePrompt)
    request.onPromptLogits = [pending, prompt, top,
                              vocab](size_t from, const std::vector<float> &rows) {
      std::vector<app::TokenLogprob> scores;
      app::scorePromptRows(prompt, from, rows, vocab, std::max(top, 0),
                           &scores);
      std::lock_guard<std::mutex> lock(pending->mutex);
      pending->promptScores.insert(pending->promptScores.end(),
                                   scores.begin(), scores.end());
    };
  int64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = nextId_++;
  }
  // These run on the engine thread, inside an iteration (mutex_ not held).
  request.onAdmit = [this, id, pending, prompt](int64_t reused) {
    admitted(id, reused, prompt);
    std::lock_guard<std::mutex> lock(pending->mutex);
    pending->reused = reused;
  };
  request.onDone = [this, id, pending](const app::GenerateResult &result,
                                       const std::string &why) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      schedulerId_.erase(id);
      left(id);
      publishSlots(); // before its client has the reply
    }
    {
      std::lock_guard<std::mutex> lock(pending->mutex);
      pending->done = true;
      pending->result = result;
      pending->error = why;
    }
    pending->changed.notify_all();
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming_.emplace_back(id, std::move(request));
  }
  changed_.notify_all();

  const auto t0 = Clock::now();
  app::ReplyText text(tokenizer_, endOfTurn_, options, reply);
  reply->promptTokens = int64_t(prompt.size());
  reply->end = app::ReplyEnd::MaxTokens;
  bool ended = false, first = true;
  std::unique_lock<std::mutex> lock(pending->mutex);
  for (;;) {
    pending->changed.wait_for(lock, std::chrono::milliseconds(100), [&] {
      return pending->done || !pending->tokens.empty();
    });
    while (!pending->tokens.empty() && !ended) {
      const int32_t token = pending->tokens.front();
      pending->tokens.pop_front();
      if (top >= 0) {
        reply->logprobs.push_back(std::move(pending->scores.front()));
        pending->scores.pop_front();
      }
      if (first) {
        reply->promptSeconds =
            std::chrono::duration<double>(Clock::now() - t0).count();
        first = false;
      }
      lock.unlock(); // onText may write to a slow client
      ended = !text.push(token);
      lock.lock();
    }
    if (!ended && options.interrupt && options.interrupt->load()) {
      reply->end = app::ReplyEnd::Interrupted;
      ended = true;
    }
    if (ended || (pending->done && pending->tokens.empty()))
      break;
  }
  const bool done = pending->done;
  const int64_t reused = pending->reused;
  const app::GenerateResult result = pending->result;
  const std::string why = pending->error;
  reply->promptLogprobs = std::move(pending->promptScores);
  lock.unlock();
  if (!done) {
    // Ended here (stop string, stop id, interrupt): the sequence stops at
    // the engine's next iteration, and a mask the engine thread may be
    // making for it now stops at once.
    if (options.constraint)
      options.constraint->interrupt();
    cancel(id);
  } else if (!why.empty()) {
    *error = why;
    return false;
  } else if (!ended && result.capped) {
    reply->end = app::ReplyEnd::ContextFull;
  }
  text.finish();
  reply->reusedTokens = reused;
  reply->fed.assign(prompt.begin() + long(reused), prompt.end());
  reply->replySeconds =
      std::chrono::duration<double>(Clock::now() - t0).count() -
      reply->promptSeconds;
  return true;
}

} // namespace pccx::serve
