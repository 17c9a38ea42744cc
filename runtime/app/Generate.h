//===- Generate.h - prompt, then token by token -----------------*- C++ -*-===//

#ifndef PCCX_RUNTIME_APP_GENERATE_H
#define PCCX_RUNTIME_APP_GENERATE_H

#include "runtime/app/Sampler.h"
#include "runtime/exec/Session.h"

#include <functional>
#include <set>

namespace pccx::app {

using exec::Session;

struct GenerateOptions {
  int64_t maxNewTokens = 32;
  bool decodeOnly = false;
  SamplingOptions sampling;
  std::set<int32_t> stopTokens;
  /// Keep every logits row (prompt positions included), for dumps and
  /// comparisons.
  bool keepLogits = false;
  /// Called with each generated token as soon as it is chosen.
  std::function<void(int32_t)> onToken;
};

struct GenerateResult {
  std::vector<int32_t> consumed;  ///< every token fed to the model, in order
  std::vector<int32_t> generated; ///< sampled tokens (stop token included)
  std::vector<float> logits;      ///< one row per consumed token (keepLogits)
  bool stopped = false;           ///< a stop token ended generation
  bool capped = false;            ///< the KV cache capacity ended it
  double prefillSeconds = 0, decodeSeconds = 0;
};

/// Checks what every generation starts from: valid sampling options and a
/// prompt of at least one token.
bool checkGenerationInput(const std::vector<int32_t> &prompt,
                          const SamplingOptions &sampling, std::string *error);

/// Consumes the prompt, then samples up to maxNewTokens tokens, feeding each
/// back (the last one is not fed: its logits are not needed).
bool generate(exec::Session &session, const std::vector<int32_t> &prompt,
              const GenerateOptions &options, GenerateResult *result,
              std::string *error);

/// "N tokens in S s (R tokens/s)": the speed line the tools print on
/// stderr after a generation or a chat turn.
std::string formatRate(int64_t tokens, double seconds);

} // namespace pccx::app

#endif
