//===- RunRequestTests.cpp - pccx-run's options and their conflicts -------===//

#include "runtime/app/RunRequest.h"

#include <gtest/gtest.h>

using namespace pccx;
using namespace pccx::app;

namespace {

RunRequest promptRequest() {
  RunRequest request;
  request.bundlePath = "model.pccx";
  request.prompt = "Hello";
  request.hasPrompt = true;
  return request;
}

TEST(RunRequest, APromptIsAGeneration) {
  RunRequest request = promptRequest();
  EXPECT_EQ(checkRunRequest(request), "");
  EXPECT_EQ(request.mode(), RunMode::Generate);
  EXPECT_EQ(request.generateOptions().draftTokens, 0);
}

TEST(RunRequest, EachInputSelectsItsMode) {
  RunRequest chat;
  chat.bundlePath = "model.pccx";
  chat.chat = true;
  EXPECT_EQ(checkRunRequest(chat), "");
  EXPECT_EQ(chat.mode(), RunMode::Chat);

  RunRequest batch;
  batch.bundlePath = "model.pccx";
  batch.batchTokens = "2,10;2,40";
  batch.parallel = 2;
  EXPECT_EQ(checkRunRequest(batch), "");
  EXPECT_EQ(batch.mode(), RunMode::Batch);

  RunRequest perplexity;
  perplexity.bundlePath = "model.pccx";
  perplexity.perplexityPath = "text.txt";
  perplexity.referenceDir = "checkpoint";
  EXPECT_EQ(checkRunRequest(perplexity), "");
  EXPECT_EQ(perplexity.mode(), RunMode::Perplexity);
}

TEST(RunRequest, DraftingSetsTheDraftTokens) {
  RunRequest request = promptRequest();
  request.draftMethod = "ngram";
  request.draftTokens = 5;
  EXPECT_EQ(checkRunRequest(request), "");
  EXPECT_EQ(request.generateOptions().draftTokens, 5);
}

TEST(RunRequest, NoBundleIsRefused) {
  RunRequest request = promptRequest();
  request.bundlePath.clear();
  EXPECT_EQ(checkRunRequest(request), "no bundle (see --help)");
}

TEST(RunRequest, ConflictsAreRefusedWithTheirMessage) {
  RunRequest chatWithPrompt = promptRequest();
  chatWithPrompt.chat = true;
  EXPECT_EQ(checkRunRequest(chatWithPrompt),
            "--chat reads its turns from the input; --prompt, --tokens and "
            "--perplexity do not apply");

  RunRequest chatWithDump;
  chatWithDump.bundlePath = "model.pccx";
  chatWithDump.chat = true;
  chatWithDump.dumpPath = "logits.bin";
  EXPECT_EQ(checkRunRequest(chatWithDump),
            "--dump-logits and --compare-reference do not apply to --chat");

  RunRequest system = promptRequest();
  system.systemPrompt = "Be brief.";
  EXPECT_EQ(checkRunRequest(system), "--system needs --chat");

  RunRequest history = promptRequest();
  history.historyPath = "history";
  EXPECT_EQ(checkRunRequest(history), "--history needs --chat");

  RunRequest twoInputs = promptRequest();
  twoInputs.tokens = "2,10";
  EXPECT_EQ(checkRunRequest(twoInputs),
            "give exactly one of --prompt, --tokens, --batch-tokens, "
            "--batch-prompts and --perplexity");

  RunRequest noInput;
  noInput.bundlePath = "model.pccx";
  EXPECT_EQ(checkRunRequest(noInput), checkRunRequest(twoInputs));

  RunRequest parallel = promptRequest();
  parallel.parallel = 4;
  EXPECT_EQ(checkRunRequest(parallel),
            "--parallel applies to --batch-tokens and --batch-prompts");

  RunRequest unknownDraft = promptRequest();
  unknownDraft.draftMethod = "eagle";
  EXPECT_EQ(checkRunRequest(unknownDraft),
            "--draft must be ngram or none, got 'eagle'");

  RunRequest chatDraft;
  chatDraft.bundlePath = "model.pccx";
  chatDraft.chat = true;
  chatDraft.draftMethod = "ngram";
  EXPECT_EQ(checkRunRequest(chatDraft),
            "--draft applies to --prompt and --tokens");

  RunRequest structuredBatch;
  structuredBatch.bundlePath = "model.pccx";
  structuredBatch.batchTokens = "2,10";
  structuredBatch.jsonObject = true;
  EXPECT_EQ(checkRunRequest(structuredBatch),
            "--json-schema and --json-object apply to --prompt, --tokens and "
            "--chat");
  RunRequest bothStructured;
  bothStructured.bundlePath = "model.pccx";
  bothStructured.prompt = "x";
  bothStructured.hasPrompt = true;
  bothStructured.jsonObject = true;
  bothStructured.jsonSchemaPath = "schema.json";
  EXPECT_EQ(checkRunRequest(bothStructured),
            "--json-schema and --json-object exclude each other");
  RunRequest structuredChat;
  structuredChat.bundlePath = "model.pccx";
  structuredChat.chat = true;
  structuredChat.jsonSchemaPath = "schema.json";
  EXPECT_EQ(checkRunRequest(structuredChat), "");

  RunRequest batchReference;
  batchReference.bundlePath = "model.pccx";
  batchReference.batchTokens = "2,10";
  batchReference.referenceDir = "checkpoint";
  EXPECT_EQ(checkRunRequest(batchReference),
            "--compare-reference does not apply to several sequences");

  RunRequest perplexityDecodeOnly;
  perplexityDecodeOnly.bundlePath = "model.pccx";
  perplexityDecodeOnly.perplexityPath = "text.txt";
  perplexityDecodeOnly.generate.decodeOnly = true;
  EXPECT_EQ(checkRunRequest(perplexityDecodeOnly),
            "--dump-logits and --decode-only do not apply to --perplexity");
}

TEST(RunRequest, SamplingOptionsAreChecked) {
  RunRequest request = promptRequest();
  request.generate.sampling.topP = 2;
  EXPECT_EQ(checkRunRequest(request), "top-p must be in (0, 1]");
}

} // namespace
