//===- TokenizerFuzzer.cpp - a bundle's tokenizer section -----------------===//
//
// The tokenizer section of a bundle is a serialized SentencePiece model
// that every tool loads (pccx-run, pccx-serve, the C API). Loading either
// refuses the bytes with a message or yields a tokenizer that encodes,
// decodes (any id, including ones outside the vocabulary), streams text,
// builds the chat format and structured output's token trie without
// crashing.
//
//===----------------------------------------------------------------------===//

#include "runtime/app/Chat.h"
#include "runtime/grammar/TokenMask.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <string>
#include <vector>

using namespace pccx;
using namespace pccx::app;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::load(data, size, &error);
  if (!tokenizer) {
    if (error.empty())
      __builtin_trap();
    return 0;
  }
  std::vector<int32_t> ids;
  for (const char *text :
       {"hello world", "<start_of_turn>user\nhi<end_of_turn>", "\xff\xfe",
        "caf\xc3\xa9 \xe2\x96\x81"}) {
    ids.clear();
    if (tokenizer->encode(text, &ids, &error))
      (void)tokenizer->decode(ids);
  }
  (void)tokenizer->decode({-1, 0, 1, 2, 1 << 30});
  TextStream stream(*tokenizer);
  for (int32_t id : {0, 1, 2, 3, 4, 5, 100, 255, 256, 1000})
    (void)stream.push(id);
  (void)tokenizer->pieceId("<start_of_turn>");
  // Structured output's vocabulary: every token's text, in a trie.
  std::vector<std::string> texts;
  for (int32_t id = 0; id < tokenizer->size() && id < (1 << 20); ++id)
    texts.push_back(tokenizer->tokenText(id));
  (void)pccx::grammar::TokenVocabulary(std::move(texts));
  auto format = ChatFormat::create(*tokenizer, pccx::bundle::ChatTemplate(), 2, &error);
  if (format) {
    std::vector<int32_t> prompt;
    (void)format->render({{"user", "hi"}}, true, &prompt, &error);
  }
  return 0;
}
