//===- RunRequest.cpp - what pccx-run is asked to do ----------------------===//

#include "runtime/app/RunRequest.h"

#include "runtime/app/Sampler.h"

namespace pccx::app {

namespace {

bool batchInput(const RunRequest &request) {
  return !request.batchTokens.empty() || !request.batchPromptsPath.empty();
}

bool drafting(const RunRequest &request) {
  return request.draftMethod == "ngram";
}

/// The options that only chat takes, or the one input outside chat.
std::string checkInputs(const RunRequest &r) {
  if (r.chat) {
    if (r.hasPrompt || !r.tokens.empty() || !r.perplexityPath.empty())
      return "--chat reads its turns from the input; --prompt, "
             "--tokens and --perplexity do not apply";
    if (!r.dumpPath.empty() || !r.referenceDir.empty())
      return "--dump-logits and --compare-reference do not apply to "
             "--chat";
    return "";
  }
  if (!r.referenceSlice.empty() && r.referenceDir.empty())
    return "--matformer-slice names the slice of --compare-reference's "
           "checkpoint; give --compare-reference DIR";
  if (!r.systemPrompt.empty())
    return "--system needs --chat";
  if (r.contextShift)
    return "--context-shift needs --chat";
  if (r.showSpecial || !r.historyPath.empty())
    return std::string(r.showSpecial ? "--show-special" : "--history") +
           " needs --chat";
  if (int(r.hasPrompt) + int(!r.tokens.empty()) +
          int(!r.perplexityPath.empty()) + int(!r.batchTokens.empty()) +
          int(!r.batchPromptsPath.empty()) !=
      1)
    return "give exactly one of --prompt, --tokens, --batch-tokens, "
           "--batch-prompts and --perplexity";
  return "";
}

} // namespace

RunMode RunRequest::mode() const {
  // Several sequences win over --chat, which checkInputs does not refuse
  // them with.
  if (batchInput(*this))
    return RunMode::Batch;
  if (!perplexityPath.empty())
    return RunMode::Perplexity;
  if (chat)
    return RunMode::Chat;
  return RunMode::Generate;
}

GenerateOptions RunRequest::generateOptions() const {
  GenerateOptions options = generate;
  if (drafting(*this))
    options.draftTokens = draftTokens;
  return options;
}

std::string checkRunRequest(const RunRequest &r) {
  if (r.bundlePath.empty())
    return "no bundle (see --help)";
  std::string why = checkInputs(r);
  if (!why.empty())
    return why;
  if (r.parallel && !batchInput(r))
    return "--parallel applies to --batch-tokens and --batch-prompts";
  if (r.draftMethod != "none" && !drafting(r))
    return "--draft must be ngram or none, got '" + r.draftMethod + "'";
  if (r.draftTokens < 1)
    return "--draft-tokens must be at least 1";
  if (drafting(r) && (r.chat || batchInput(r) || !r.perplexityPath.empty()))
    return "--draft applies to --prompt and --tokens";
  const bool structured = !r.jsonSchemaPath.empty() || r.jsonObject;
  if (!r.jsonSchemaPath.empty() && r.jsonObject)
    return "--json-schema and --json-object exclude each other";
  if (structured && (batchInput(r) || !r.perplexityPath.empty()))
    return "--json-schema and --json-object apply to --prompt, --tokens and "
           "--chat";
  if (batchInput(r) && !r.referenceDir.empty())
    return "--compare-reference does not apply to several sequences";
  if (!r.perplexityPath.empty() &&
      (!r.dumpPath.empty() || r.generate.decodeOnly))
    return "--dump-logits and --decode-only do not apply to --perplexity";
  return checkSamplingOptions(r.generate.sampling);
}

} // namespace pccx::app
