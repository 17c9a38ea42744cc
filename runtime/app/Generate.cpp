//===- Generate.cpp - prompt, then token by token -------------------------===//

#include "runtime/app/Generate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace pccx::app {

bool checkGenerationInput(const std::vector<int32_t> &prompt,
                          const SamplingOptions &sampling,
                          std::string *error) {
  std::string why = checkSamplingOptions(sampling);
  if (!why.empty()) {
    *error = why;
    return false;
  }
  if (prompt.empty()) {
    *error = "the prompt is empty";
    return false;
  }
  return true;
}

std::vector<int32_t> promptLookupDraft(const std::vector<int32_t> &context,
                                       int64_t count, int64_t maxN) {
  const int64_t size = int64_t(context.size());
  for (int64_t n = std::min(maxN, size - 1); n >= 1 && count > 0; --n) {
    // The latest earlier start whose n tokens equal the last n.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(context.begin() + start, context.begin() + start + n,
                      context.end() - n))
        continue;
      const int64_t from = start + n,
                    to = std::min(size, from + count);
      return std::vector<int32_t>(context.begin() + from, context.begin() + to);
    }
  }
  return {};
}

bool decodeStep(exec::Session &session, int slot, Sampler &sampler,
                int64_t maxDraft, int64_t remaining,
                std::vector<int32_t> &seen, int32_t *next,
                std::vector<float> *keptLogits,
                const std::function<bool(int32_t)> &emit, bool *more,
                DraftStats *stats, std::string *error) {
  const size_t vocab = size_t(session.model().vocabSize());
  // Rows of one sequence a multi-row step verifies: the batch program's,
  // within the rows a sliding cache's ring was sized for. Drafts beyond
  // what may still be generated or cached are not made.
  std::vector<int32_t> draft;
  const int64_t verifyRows =
      std::min(session.batchRows(), session.model().prefillRows());
  if (maxDraft > 0 && verifyRows > 1) {
    const int64_t room =
        std::min({maxDraft, verifyRows - 1, remaining - 1,
                  session.capacity() - session.position(slot) - 1});
    if (room > 0) {
      std::vector<int32_t> context = seen;
      context.push_back(*next);
      draft = promptLookupDraft(context, room);
    }
    // Rows a batch program has, so no row is padding: a draft of 4 with
    // programs of 2, 4 and 8 rows verifies 3.
    if (!draft.empty()) {
      size_t fit = 1;
      for (const auto &batch : session.model().batches())
        if (size_t(batch->rows) <= draft.size() + 1)
          fit = std::max(fit, size_t(batch->rows));
      draft.resize(fit - 1);
    }
  }
  stats->enabled |= maxDraft > 0;
  std::vector<exec::Session::StepRow> rows = {{slot, *next}};
  for (int32_t d : draft)
    rows.push_back({slot, d});
  const int64_t before = session.position(slot);
  std::vector<float> logits;
  if (!session.step(rows, &logits, error))
    return false;
  ++stats->steps;
  if (!draft.empty()) {
    ++stats->passes;
    stats->drafted += int64_t(draft.size());
  }
  // Row i's logits choose the token after rows[i]; drafted token i + 1
  // stands when the rule accepts it.
  size_t row = 0;
  std::vector<float> last;
  for (;;) {
    seen.push_back(rows[row].token);
    if (keptLogits)
      keptLogits->insert(keptLogits->end(),
                         logits.begin() + long(row * vocab),
                         logits.begin() + long((row + 1) * vocab));
    last.assign(logits.begin() + long(row * vocab),
                logits.begin() + long((row + 1) * vocab));
    const int32_t chosen = row < draft.size()
                               ? sampler.verify(last, seen, draft[row])
                               : sampler.next(last, seen);
    const bool accepted = row < draft.size() && chosen == draft[row];
    ++stats->tokens;
    if (accepted)
      ++stats->accepted;
    *more = emit(chosen);
    *next = chosen;
    if (!accepted || !*more)
      break;
    ++row;
  }
  // The rows after the last one that stands are forgotten.
  return session.rewind(slot, before + 1 + int64_t(row), error);
}

bool generate(exec::Session &session, const std::vector<int32_t> &prompt,
              const GenerateOptions &options, GenerateResult *result,
              std::string *error) {
  using Clock = std::chrono::steady_clock;
  if (!checkGenerationInput(prompt, options.sampling, error))
    return false;
  if (options.draftTokens < 0) {
    *error = "the draft length must be >= 0";
    return false;
  }
  Sampler sampler(options.sampling);
  sampler.setConstraint(options.constraint.get());
  std::vector<float> logits;
  auto t0 = Clock::now();
  if (!session.consume(prompt, options.decodeOnly, &logits, error,
                       options.keepLogits ? exec::LogitsRows::Every
                                          : exec::LogitsRows::Last))
    return false;
  auto t1 = Clock::now();
  result->prefillSeconds = std::chrono::duration<double>(t1 - t0).count();
  result->consumed = prompt;
  const size_t vocab = size_t(session.model().vocabSize());
  if (options.keepLogits)
    result->logits = logits;
  std::vector<float> last(logits.end() - long(vocab), logits.end());
  // Emits `token`; false when generation ends with it. A failed
  // constraint's token is not the model's: generation ends without it.
  int64_t produced = 0;
  auto emit = [&](int32_t token) {
    if (!sampler.constraintError().empty())
      return false;
    result->generated.push_back(token);
    ++produced;
    if (options.onToken)
      options.onToken(token);
    if (options.stopTokens.count(token)) {
      result->stopped = true;
      return false;
    }
    if (produced == options.maxNewTokens)
      return false;
    // Positions consumed so far: those of `consumed`.
    if (int64_t(result->consumed.size()) >= session.capacity()) {
      result->capped = true;
      return false;
    }
    return true;
  };
  if (options.maxNewTokens <= 0) {
    result->decodeSeconds = 0;
    return true;
  }
  int32_t next = sampler.next(last, result->consumed);
  bool more = emit(next);
  while (more)
    if (!decodeStep(session, 0, sampler, options.draftTokens,
                    options.maxNewTokens - produced, result->consumed, &next,
                    options.keepLogits ? &result->logits : nullptr, emit,
                    &more, &result->draft, error))
      return false;
  if (const std::string failed = sampler.constraintError(); !failed.empty()) {
    *error = failed;
    return false;
  }
  result->decodeSeconds =
      std::chrono::duration<double>(Clock::now() - t1).count();
  return true;
}

std::string formatRate(int64_t tokens, double seconds) {
  char line[96];
  std::snprintf(line, sizeof line, "%lld token%s in %.2f s (%.1f tokens/s)",
                (long long)tokens, tokens == 1 ? "" : "s", seconds,
                seconds > 0 ? double(tokens) / seconds : 0.0);
  return line;
}

} // namespace pccx::app
