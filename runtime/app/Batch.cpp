//===- Batch.cpp - many sequences, one pass over the weights ---------------===//

#include "runtime/app/Batch.h"

#include <algorithm>
#include <chrono>

namespace pccx::app {

using Clock = std::chrono::steady_clock;

BatchScheduler::BatchScheduler(exec::Session &session, int parallel,
                               int64_t promptChunk)
    : session_(session), parallel_(std::max(parallel, 1)),
      promptChunk_(promptChunk > 0 ? promptChunk
                                   : 4 * session.model().prefillRows()) {}

bool BatchScheduler::init(std::string *error) {
  if (!session_.reserveSlots(parallel_, error))
    return false;
  slots_.resize(size_t(parallel_));
  return true;
}

int BatchScheduler::running() const {
  int n = 0;
  for (const Slot &s : slots_)
    n += s.id >= 0;
  return n;
}

int64_t BatchScheduler::submit(BatchRequest request) {
  const int64_t id = nextId_++;
  queue_.emplace_back(id, std::move(request));
  return id;
}

void BatchScheduler::cancel(int64_t id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if (it->first == id) {
      queue_.erase(it);
      return;
    }
  for (Slot &s : slots_)
    if (s.id == id) {
      s.id = -1;
      s.generating = false;
      s.request = BatchRequest();
    }
}

void BatchScheduler::admit() {
  while (!queue_.empty()) {
    auto &[id, request] = queue_.front();
    // The free slot whose cache keeps the longest prefix of the prompt
    // (Session::reusablePrefix; a request that keeps or scores every
    // logits row consumes its whole prompt). A slot that keeps none starts
    // over, and the prompt is fed in chunks like any other.
    int best = -1;
    size_t bestKept = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].id >= 0)
        continue;
      const size_t kept =
          request.options.keepLogits || request.onPromptLogits
              ? 0
              : size_t(session_.reusablePrefix(int(i), request.prompt));
      if (best < 0 || kept > bestKept) {
        best = int(i);
        bestKept = kept;
      }
    }
    if (best < 0)
      return;
    Slot &s = slots_[size_t(best)];
    std::string why;
    if (checkGenerationInput(request.prompt, request.options.sampling, &why) &&
        int64_t(request.prompt.size()) > session_.capacity())
      why = "the prompt has " + std::to_string(request.prompt.size()) +
            " tokens; the KV cache holds " +
            std::to_string(session_.capacity()) + " positions";
    // A request that cannot run ends alone, before it takes a slot.
    if (!why.empty()) {
      GenerateResult none;
      if (request.onDone)
        request.onDone(none, why);
      queue_.pop_front();
      continue;
    }
    size_t kept = bestKept;
    std::string ignored;
    if (kept == 0 || !session_.rewind(best, int64_t(kept), &ignored)) {
      session_.reset(best);
      kept = 0;
    }
    s.id = id;
    s.request = std::move(request);
    s.sampler = std::make_unique<Sampler>(s.request.options.sampling);
    s.sampler->setConstraint(s.request.options.constraint.get());
    s.result = GenerateResult();
    s.result.consumed.assign(s.request.prompt.begin(),
                             s.request.prompt.begin() + long(kept));
    s.fed = kept;
    s.result.reusedTokens = int64_t(kept);
    s.generating = false;
    stats_.reusedTokens += int64_t(kept);
    queue_.pop_front();
    if (s.request.onAdmit)
      s.request.onAdmit(int64_t(kept));
  }
}

bool BatchScheduler::feedPrompt(int index, std::string *error) {
  Slot &s = slots_[size_t(index)];
  const std::vector<int32_t> &prompt = s.request.prompt;
  const size_t count = std::min(prompt.size() - s.fed, size_t(promptChunk_));
  std::vector<int32_t> chunk(prompt.begin() + long(s.fed),
                             prompt.begin() + long(s.fed + count));
  std::vector<float> logits;
  const auto t0 = Clock::now();
  const bool everyRow =
      s.request.options.keepLogits || bool(s.request.onPromptLogits);
  if (!session_.consume(index, chunk, s.request.options.decodeOnly, &logits,
                        error,
                        everyRow ? exec::LogitsRows::Every
                                 : exec::LogitsRows::Last))
    return false;
  if (s.request.onPromptLogits)
    s.request.onPromptLogits(s.fed, logits);
  s.result.prefillSeconds +=
      std::chrono::duration<double>(Clock::now() - t0).count();
  s.fed += count;
  stats_.promptTokens += int64_t(count);
  s.result.consumed.insert(s.result.consumed.end(), chunk.begin(), chunk.end());
  const size_t vocab = size_t(session_.model().vocabSize());
  if (s.request.options.keepLogits)
    s.result.logits.insert(s.result.logits.end(), logits.begin(),
                           logits.end());
  if (s.fed < prompt.size())
    return true;
  std::vector<float> last(logits.end() - long(vocab), logits.end());
  if (choose(index, std::move(last)))
    s.generating = true;
  return true;
}

bool BatchScheduler::choose(int index, std::vector<float> logits) {
  Slot &s = slots_[size_t(index)];
  const GenerateOptions &o = s.request.options;
  if (o.maxNewTokens <= 0) {
    finish(index, {});
    return false;
  }
  if (o.onLogits)
    o.onLogits(logits);
  const int32_t token = s.sampler->next(logits, s.result.consumed);
  // A failed constraint's token is not the model's: the request ends
  // without it, with the constraint's error.
  if (const std::string failed = s.sampler->constraintError();
      !failed.empty()) {
    finish(index, failed);
    return false;
  }
  s.result.generated.push_back(token);
  ++stats_.generatedTokens;
  if (o.onToken)
    o.onToken(token);
  // onToken may have cancelled the request.
  if (s.id < 0)
    return false;
  if (o.stopTokens.count(token))
    s.result.stopped = true;
  else if (int64_t(s.result.generated.size()) < o.maxNewTokens &&
           session_.position(index) >= session_.capacity())
    s.result.capped = true;
  if (s.result.stopped || s.result.capped ||
      int64_t(s.result.generated.size()) >= o.maxNewTokens) {
    finish(index, {});
    return false;
  }
  s.next = token;
  return true;
}

void BatchScheduler::finish(int index, const std::string &error) {
  Slot &s = slots_[size_t(index)];
  BatchRequest request = std::move(s.request);
  GenerateResult result = std::move(s.result);
  s.id = -1;
  s.generating = false;
  s.request = BatchRequest();
  s.result = GenerateResult();
  if (request.onDone)
    request.onDone(result, error);
}

bool BatchScheduler::iterate(std::string *error) {
  ++stats_.iterations;
  admit();
  // One newcomer's prompt chunk: the one that has waited longest (lowest
  // id) among those still consuming their prompt.
  int feeding = -1;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].id >= 0 && !slots_[i].generating &&
        (feeding < 0 || slots_[i].id < slots_[size_t(feeding)].id))
      feeding = int(i);
  auto failAll = [&](const std::string &why) {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].id >= 0) {
        session_.reset(int(i));
        finish(int(i), why);
      }
    *error = why;
    return false;
  };
  std::string why;
  if (feeding >= 0 && !feedPrompt(feeding, &why))
    return failAll(why);

  // Every generating sequence feeds its latest token (one that finished
  // its prompt in this iteration included).
  std::vector<exec::Session::StepRow> rows;
  std::vector<int> owners;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].id >= 0 && slots_[i].generating) {
      rows.push_back({int(i), slots_[i].next});
      owners.push_back(int(i));
    }
  if (rows.empty())
    return true;
  std::vector<float> logits;
  const auto t0 = Clock::now();
  if (!session_.step(rows, &logits, &why))
    return failAll(why);
  const double seconds =
      std::chrono::duration<double>(Clock::now() - t0).count();
  ++stats_.decodeSteps;
  stats_.stepRows += int64_t(rows.size());
  const size_t vocab = size_t(session_.model().vocabSize());
  for (size_t r = 0; r < rows.size(); ++r) {
    Slot &s = slots_[size_t(owners[r])];
    if (s.id < 0)
      continue;
    s.result.decodeSeconds += seconds;
    s.result.consumed.push_back(rows[r].token);
    std::vector<float> row(logits.begin() + long(r * vocab),
                           logits.begin() + long((r + 1) * vocab));
    if (s.request.options.keepLogits)
      s.result.logits.insert(s.result.logits.end(), row.begin(), row.end());
    choose(owners[r], std::move(row));
  }
  return true;
}

bool BatchScheduler::runAll(std::string *error) {
  while (!idle())
    if (!iterate(error))
      return false;
  return true;
}

} // namespace pccx::app
