//===- JsonSchemaFuzzer.cpp - response_format schemas and replies ---------===//
//
// Input: a JSON Schema (any bytes, as a client's response_format may hold),
// a NUL byte, then the bytes of a reply. Compiling either refuses the
// schema with a message or gives a matcher; the reply is fed to it byte by
// byte up to the first byte it refuses. The oracle is the decoder's
// promise: wherever the matcher says the document may end, the text so far
// parses as JSON. Along the way, a token mask over a small vocabulary is
// compared with a brute-force check of every token, under the default
// work budget or (odd-sized inputs) a small one taken from the input: a
// mask past its budget must fail with the budget's error, change nothing
// and end the constraint.
//
//===----------------------------------------------------------------------===//

#include "runtime/grammar/TokenMask.h"

#include <cmath>
#include <string>
#include <vector>

using namespace pccx::grammar;

namespace {

std::shared_ptr<const TokenVocabulary> vocabulary() {
  static std::shared_ptr<const TokenVocabulary> vocab = [] {
    std::vector<std::string> texts = {""};
    for (int b = 0; b < 256; ++b)
      texts.push_back(std::string(1, char(b)));
    for (const char *piece :
         {"{\"", "\":", "\",", "\"}", "true", "null", "12", "0.", "e+", " a",
          "\n  ", "\\u00", "\\\"", "ab", "\xC3\xA9", "\xE4\xBD\xA0", "]}",
          "[{", "false", "-1", "\": \""})
      texts.push_back(piece);
    return std::make_shared<TokenVocabulary>(std::move(texts));
  }();
  return vocab;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string input(reinterpret_cast<const char *>(data), size);
  const size_t split = input.find('\0');
  const std::string schemaText = input.substr(0, split);
  const std::string reply =
      split == std::string::npos ? std::string() : input.substr(split + 1);
  Json json = Json::parse(schemaText, nullptr, false);
  if (json.is_discarded())
    return 0;
  std::string error;
  std::shared_ptr<const Schema> schema = compileSchema(json, &error);
  if (!schema) {
    if (error.empty())
      __builtin_trap(); // a refusal always says why
    return 0;
  }
  (void)requiredBytes(*schema);
  Matcher matcher(schema);
  JsonConstraint constraint(schema, vocabulary(), {0});
  MatchState state = matcher.start(), next;
  // The mask after the reply's first `fed` bytes (the constraint fed the
  // same bytes as the matcher's `state`) is the brute force's.
  auto checkMask = [&](size_t fed) {
    JsonConstraint here(schema, vocabulary(), {0});
    int64_t budget = int64_t(vocabulary()->trieNodes()) + kMaxMaskWork;
    if (size % 2)
      here.setWorkBudget(budget = int64_t(size % 2048));
    bool taken = true;
    for (size_t j = 0; j < fed && taken; ++j)
      taken = here.accept(int32_t(1 + uint8_t(reply[j])));
    std::vector<float> logits(vocabulary()->size(), 0.0f);
    const bool any = here.mask(logits.data(), logits.size());
    if (!here.error().empty()) {
      if (any || here.lastMaskWork() <= budget ||
          here.error() !=
              "the schema's token mask exceeded its work budget of " +
                  std::to_string(budget) + " steps")
        __builtin_trap(); // only the budget stops a mask here
      for (float logit : logits)
        if (logit != 0.0f)
          __builtin_trap(); // a failed mask changed the logits
      if (here.accept(1 + '"') || here.mask(logits.data(), logits.size()))
        __builtin_trap(); // a failed constraint goes on
      return;
    }
    bool expectAny = false;
    for (size_t id = 0; id < logits.size(); ++id) {
      bool allowed;
      if (id == 0) {
        allowed = matcher.canEnd(state);
      } else {
        MatchState s = state;
        allowed = matcher.feed(&s, vocabulary()->text(int32_t(id)));
      }
      expectAny |= allowed;
      if (any && std::isfinite(logits[id]) != allowed)
        __builtin_trap(); // the trie walk and the brute force disagree
    }
    if (any != expectAny)
      __builtin_trap();
  };
  for (size_t i = 0; i <= reply.size() && i < 512; ++i) {
    if (matcher.canEnd(state)) {
      auto parsed = nlohmann::json::parse(reply.substr(0, i), nullptr, false);
      if (parsed.is_discarded())
        __builtin_trap(); // the matcher let an invalid document end
    }
    if (i % 16 == 0)
      checkMask(i);
    if (i == reply.size() || !matcher.step(state, uint8_t(reply[i]), &next))
      break;
    std::swap(state, next);
  }
  (void)constraint.checkVocabulary();
  return 0;
}
