//===- Generate.cpp - prompt, then token by token -------------------------===//

#include "runtime/app/Generate.h"

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

bool generate(exec::Session &session, const std::vector<int32_t> &prompt,
              const GenerateOptions &options, GenerateResult *result,
              std::string *error) {
  using Clock = std::chrono::steady_clock;
  if (!checkGenerationInput(prompt, options.sampling, error))
    return false;
  Sampler sampler(options.sampling);
  std::vector<float> logits;
  auto t0 = Clock::now();
  if (!session.consume(prompt, options.decodeOnly, &logits, error))
    return false;
  auto t1 = Clock::now();
  result->prefillSeconds = std::chrono::duration<double>(t1 - t0).count();
  result->consumed = prompt;
  const size_t vocab = logits.size() / prompt.size();
  if (options.keepLogits)
    result->logits = logits;
  std::vector<float> last(logits.end() - long(vocab), logits.end());
  for (int64_t n = 0; n < options.maxNewTokens; ++n) {
    int32_t next = sampler.next(last, result->consumed);
    result->generated.push_back(next);
    if (options.onToken)
      options.onToken(next);
    if (options.stopTokens.count(next)) {
      result->stopped = true;
      break;
    }
    if (n + 1 == options.maxNewTokens)
      break;
    if (session.position() >= session.capacity()) {
      result->capped = true;
      break;
    }
    last.clear();
    if (!session.consume({next}, true, &last, error))
      return false;
    result->consumed.push_back(next);
    if (options.keepLogits)
      result->logits.insert(result->logits.end(), last.begin(), last.end());
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
