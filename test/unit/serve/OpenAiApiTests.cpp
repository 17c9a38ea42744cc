//===- OpenAiApiTests.cpp - request parsing and response shapes -----------===//

#include "runtime/serve/OpenAiApi.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

using namespace pccx::serve;
using nlohmann::json;

namespace {

std::optional<GenerationRequest> parse(const std::string &body, bool chat,
                                       ApiError *error,
                                       int64_t maxTokens = 100) {
  RequestLimits limits;
  limits.maxTokens = maxTokens;
  return parseRequest(body, chat, limits, error);
}

} // namespace

TEST(OpenAiApi, ChatRequest) {
  ApiError error;
  auto r = parse(R"({"model": "m", "messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi "},
                                   {"type": "text", "text": "there"}]}],
      "max_completion_tokens": 7, "temperature": 0, "top_p": 0.5,
      "seed": 3, "stop": ["x", "y"], "stream": true,
      "stream_options": {"include_usage": true}, "user": "ignored"})",
                 true, &error);
  ASSERT_TRUE(r) << error.message;
  EXPECT_EQ(r->model, "m");
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[0].role, "system"); // developer is OpenAI's system
  EXPECT_EQ(r->messages[1].content, "Hi there");
  EXPECT_EQ(*r->maxTokens, 7);
  EXPECT_EQ(r->sampling.temperature, 0.0);
  EXPECT_EQ(r->sampling.topP, 0.5);
  EXPECT_TRUE(r->hasSeed);
  EXPECT_EQ(r->sampling.seed, 3u);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->includeUsage);
}

TEST(OpenAiApi, CompletionPrompts) {
  ApiError error;
  auto text = parse(R"({"prompt": ["one string"]})", false, &error);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->prompt, "one string");
  EXPECT_FALSE(text->maxTokens.has_value());
  EXPECT_EQ(text->sampling.temperature, 1.0); // OpenAI's default
  auto ids = parse(R"({"prompt": [2, 10, 20]})", false, &error);
  ASSERT_TRUE(ids);
  EXPECT_TRUE(ids->promptIsTokens);
  EXPECT_EQ(ids->promptTokens, (std::vector<int32_t>{2, 10, 20}));
  // Several prompts, strings or token-id lists: one choice each.
  auto two = parse(R"({"prompt": ["a", "b"]})", false, &error);
  ASSERT_TRUE(two) << error.message;
  EXPECT_EQ(two->prompt, "a");
  ASSERT_EQ(two->morePrompts.size(), 1u);
  EXPECT_EQ(two->morePrompts[0].text, "b");
  auto lists = parse(R"({"prompt": [[2, 10], [2, 30, 31]]})", false, &error);
  ASSERT_TRUE(lists) << error.message;
  EXPECT_TRUE(lists->promptIsTokens);
  EXPECT_EQ(lists->promptTokens, (std::vector<int32_t>{2, 10}));
  ASSERT_EQ(lists->morePrompts.size(), 1u);
  EXPECT_TRUE(lists->morePrompts[0].isTokens);
  EXPECT_EQ(lists->morePrompts[0].tokens, (std::vector<int32_t>{2, 30, 31}));
  for (const char *bad :
       {R"({"prompt": [2, -1]})", R"({"prompt": []})", R"({"prompt": [[]]})",
        R"({"prompt": [[2], 3]})", R"({"prompt": ["a", [2, "x"]]})",
        R"({"prompt": ["a", "b"], "stream": true})"}) {
    EXPECT_FALSE(parse(bad, false, &error)) << bad;
    EXPECT_EQ(error.param, "prompt") << bad;
  }
  EXPECT_FALSE(parse(R"({"max_tokens": 3})", false, &error));
  EXPECT_EQ(error.message, "'prompt' is required");
}

TEST(OpenAiApi, RefusedRequests) {
  struct Case {
    const char *body;
    bool chat;
    const char *param, *code;
  } cases[] = {
      {"{not json", true, "", "invalid_json"},
      {"[1]", true, "", ""},
      {R"({"messages": []})", true, "messages", ""},
      {R"({"messages": [{"role": "bot", "content": "x"}]})", true, "messages",
       ""},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       true, "messages", ""},
      {R"({"prompt": "x", "max_tokens": -1})", false, "max_tokens",
       "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})",
       true, "max_tokens", "invalid_value"},
      {R"({"prompt": "x", "temperature": 3})", false, "temperature",
       "invalid_value"},
      {R"({"prompt": "x", "temperature": "warm"})", false, "temperature", ""},
      {R"({"prompt": "x", "top_p": 0})", false, "top_p", "invalid_value"},
      {R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})", false, "stop",
       ""},
      {R"({"prompt": "x", "stop": [""]})", false, "stop", ""},
      {R"({"prompt": "x", "n": 9})", false, "n", "invalid_value"},
      {R"({"prompt": "x", "n": 0})", false, "n", "invalid_value"},
      {R"({"prompt": "x", "n": "2"})", false, "n", ""},
      {R"({"prompt": "x", "best_of": 2})", false, "best_of",
       "unsupported_parameter"},
      {R"({"prompt": "x", "logprobs": 21})", false, "logprobs",
       "invalid_value"},
      {R"({"prompt": "x", "logprobs": true})", false, "logprobs", ""},
      {R"({"prompt": "x", "echo": true, "stream": true})", false, "echo", ""},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true,
           "top_logprobs": 21})",
       true, "top_logprobs", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
       true, "top_logprobs", ""},
      {R"({"prompt": "x", "presence_penalty": 2.5})", false, "presence_penalty",
       "invalid_value"},
      {R"({"prompt": "x", "frequency_penalty": -3})", false,
       "frequency_penalty", "invalid_value"},
      {R"({"prompt": "x", "top_k": -1})", false, "top_k", "invalid_value"},
      {R"({"prompt": "x", "top_k": 1.5})", false, "top_k", ""},
      {R"({"prompt": "x", "min_p": 2})", false, "min_p", "invalid_value"},
      {R"({"prompt": "x", "repeat_penalty": 0})", false, "repeat_penalty",
       "invalid_value"},
      {R"({"prompt": "x", "repeat_penalty": 1.1, "repetition_penalty": 1.2})",
       false, "repeat_penalty", ""},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{}]})",
       true, "tools", ""},
      {R"({"prompt": "x", "stream": 1})", false, "stream", ""},
      {R"({"prompt": "x", "model": 5})", false, "model", ""},
  };
  for (const Case &c : cases) {
    ApiError error;
    EXPECT_FALSE(parse(c.body, c.chat, &error)) << c.body;
    EXPECT_EQ(error.status, 400) << c.body;
    EXPECT_EQ(error.param, c.param) << c.body;
    EXPECT_EQ(error.code, c.code) << c.body;
    EXPECT_FALSE(error.message.empty()) << c.body;
  }
  // Neutral values of unsupported parameters are accepted.
  ApiError error;
  EXPECT_TRUE(parse(R"({"prompt": "x", "n": 1, "presence_penalty": 0,
                        "logprobs": null, "echo": false})",
                    false, &error))
      << error.message;
}

TEST(OpenAiApi, SamplingFieldsOfOpenAiAndLlamaCpp) {
  ApiError error;
  auto req = parse(R"({"prompt": "x", "temperature": 0.7, "top_p": 0.9,
                       "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1,
                       "presence_penalty": 0.5, "frequency_penalty": -0.25,
                       "seed": 3})",
                   false, &error);
  ASSERT_TRUE(req) << error.message;
  EXPECT_EQ(req->sampling.temperature, 0.7);
  EXPECT_EQ(req->sampling.topP, 0.9);
  EXPECT_EQ(req->sampling.topK, 40);
  EXPECT_EQ(req->sampling.minP, 0.05);
  EXPECT_EQ(req->sampling.repetitionPenalty, 1.1);
  EXPECT_EQ(req->sampling.presencePenalty, 0.5);
  EXPECT_EQ(req->sampling.frequencyPenalty, -0.25);
  auto hf = parse(R"({"prompt": "x", "repetition_penalty": 1.3})", false,
                  &error);
  ASSERT_TRUE(hf) << error.message;
  EXPECT_EQ(hf->sampling.repetitionPenalty, 1.3);
}

TEST(OpenAiApi, ChoicesPerPrompt) {
  ApiError error;
  auto one = parse(R"({"prompt": "x"})", false, &error);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->n, 1);
  auto eight = parse(R"({"messages": [{"role": "user", "content": "x"}],
                         "n": 8, "stream": true})",
                     true, &error);
  ASSERT_TRUE(eight) << error.message;
  EXPECT_EQ(eight->n, 8);
  // The limit is the server's (--max-n), named in the refusal.
  RequestLimits limits;
  limits.maxChoices = 2;
  EXPECT_FALSE(parseRequest(R"({"prompt": "x", "n": 3})", false, limits,
                            &error));
  EXPECT_EQ(error.param, "n");
  EXPECT_EQ(error.message, "'n' is 3; this server generates at most 2 "
                           "choices per prompt (--max-n)");
}

TEST(OpenAiApi, ServerSamplingDefaults) {
  RequestDefaults defaults;
  defaults.sampling.temperature = 0.2;
  defaults.sampling.topK = 5;
  defaults.sampling.topP = 0.8;
  defaults.sampling.minP = 0.1;
  defaults.sampling.repetitionPenalty = 1.2;
  defaults.sampling.seed = 77;
  defaults.hasSeed = true;
  ApiError error;
  // The fields a request leaves out are the server's ...
  auto r = parseRequest(R"({"prompt": "x", "top_k": 9})", false,
                        RequestLimits(), defaults, &error);
  ASSERT_TRUE(r) << error.message;
  EXPECT_EQ(r->sampling.temperature, 0.2);
  EXPECT_EQ(r->sampling.topK, 9); // ... the ones it sets are its own
  EXPECT_EQ(r->sampling.topP, 0.8);
  EXPECT_EQ(r->sampling.minP, 0.1);
  EXPECT_EQ(r->sampling.repetitionPenalty, 1.2);
  EXPECT_TRUE(r->hasSeed);
  EXPECT_EQ(r->sampling.seed, 77u);
  auto seeded = parseRequest(R"({"prompt": "x", "seed": 5,
                                 "temperature": 1.5})",
                             false, RequestLimits(), defaults, &error);
  ASSERT_TRUE(seeded);
  EXPECT_EQ(seeded->sampling.seed, 5u);
  EXPECT_EQ(seeded->sampling.temperature, 1.5);
  // Without flags: OpenAI's defaults, no seed.
  auto plain = parseRequest(R"({"prompt": "x"})", false, RequestLimits(),
                            RequestDefaults(), &error);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->sampling.temperature, 1.0);
  EXPECT_FALSE(plain->hasSeed);

  EXPECT_EQ(checkRequestDefaults(defaults), "");
  RequestDefaults bad;
  bad.sampling.temperature = 3;
  EXPECT_EQ(checkRequestDefaults(bad), "--temp must be between 0 and 2, got 3.0");
  bad = RequestDefaults();
  bad.sampling.topP = 0;
  EXPECT_NE(checkRequestDefaults(bad).find("--top-p"), std::string::npos);
  bad = RequestDefaults();
  bad.sampling.repetitionPenalty = 0;
  EXPECT_NE(checkRequestDefaults(bad).find("--repeat-penalty"),
            std::string::npos);
  bad = RequestDefaults();
  bad.sampling.minP = -0.5;
  EXPECT_NE(checkRequestDefaults(bad).find("--min-p"), std::string::npos);
}

TEST(OpenAiApi, ErrorBody) {
  ApiError e;
  e.status = 404;
  e.message = "gone";
  e.code = "model_not_found";
  EXPECT_EQ(errorBody(e).dump(),
            R"({"error":{"code":"model_not_found","message":"gone",)"
            R"("param":null,"type":"invalid_request_error"}})");
}

TEST(OpenAiApi, ResponsesAndChunks) {
  ApiError error;
  auto chat = parse(R"({"messages": [{"role": "user", "content": "x"}]})", true,
                    &error);
  ASSERT_TRUE(chat);
  ResponseIds ids{"chatcmpl-1", 100, "m"};
  pccx::app::Reply reply;
  reply.text = "hello";
  reply.tokens = {5, 6, 7};
  reply.promptTokens = 4;
  reply.end = pccx::app::ReplyEnd::EndOfTurn;
  json whole = completionResponse(*chat, ids, reply);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "hello");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(whole["usage"]["total_tokens"], 7);

  json first = streamChunk(*chat, ids, "he", true, nullptr);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "he");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json last = streamChunk(*chat, ids, "", false, "length");
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(usageChunk(*chat, ids, reply)["choices"].empty());

  auto completion = parse(R"({"prompt": "x"})", false, &error);
  ASSERT_TRUE(completion);
  json chunk = streamChunk(*completion, ids, "lo", false, nullptr);
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["text"], "lo");

  EXPECT_STREQ(finishReason(pccx::app::ReplyEnd::StopString), "stop");
  EXPECT_STREQ(finishReason(pccx::app::ReplyEnd::ContextFull), "length");
  EXPECT_STREQ(finishReason(pccx::app::ReplyEnd::Interrupted), "length");
}

TEST(OpenAiApi, LogprobsFields) {
  ApiError error;
  auto chat = parse(R"({"messages": [{"role": "user", "content": "x"}],
                        "logprobs": true, "top_logprobs": 20})",
                    true, &error);
  ASSERT_TRUE(chat) << error.message;
  EXPECT_TRUE(chat->logprobs);
  EXPECT_EQ(chat->topLogprobs, 20);
  auto off = parse(R"({"messages": [{"role": "user", "content": "x"}],
                       "logprobs": false, "top_logprobs": 0})",
                   true, &error);
  ASSERT_FALSE(off);
  EXPECT_EQ(error.param, "top_logprobs");
  // lm-evaluation-harness' loglikelihood request.
  auto scored = parse(R"({"model": "m", "prompt": [[2, 5, 6], [2, 7]],
                          "temperature": 0, "max_tokens": 0, "logprobs": 1,
                          "echo": true, "seed": 1234})",
                      false, &error);
  ASSERT_TRUE(scored) << error.message;
  EXPECT_TRUE(scored->logprobs);
  EXPECT_EQ(scored->topLogprobs, 1);
  EXPECT_TRUE(scored->echo);
  EXPECT_EQ(*scored->maxTokens, 0);
  auto zero = parse(R"({"prompt": "x", "logprobs": 0})", false, &error);
  ASSERT_TRUE(zero);
  EXPECT_TRUE(zero->logprobs);
  EXPECT_EQ(zero->topLogprobs, 0);
  auto none = parse(R"({"prompt": "x"})", false, &error);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->logprobs);
  EXPECT_FALSE(none->echo);
}

TEST(OpenAiApi, LogprobsShapes) {
  EXPECT_EQ(tokenString(" the"), " the");
  EXPECT_EQ(tokenString("\xE2\x80"), "bytes:\\xe2\\x80");
  std::vector<TokenScore> tokens(2);
  tokens[0].bytes = "<bos>";
  tokens[1].bytes = "\xE2\x80";
  tokens[1].logprob = -0.5;
  tokens[1].top = {{"a", -0.25}, {"b", -1.0}};
  tokens[1].offset = 3;
  json chat = chatLogprobs({tokens[1]});
  EXPECT_TRUE(chat["refusal"].is_null());
  ASSERT_EQ(chat["content"].size(), 1u);
  const json &entry = chat["content"][0];
  EXPECT_EQ(entry["token"], "bytes:\\xe2\\x80");
  EXPECT_EQ(entry["logprob"], -0.5);
  EXPECT_EQ(entry["bytes"], json::array({0xE2, 0x80}));
  ASSERT_EQ(entry["top_logprobs"].size(), 2u);
  EXPECT_EQ(entry["top_logprobs"][0],
            json({{"token", "a"}, {"logprob", -0.25}, {"bytes", {97}}}));

  // The legacy shape: an echoed prompt's first token has nothing that
  // predicts it; each top_logprobs holds the token itself too.
  json legacy = completionLogprobs(tokens);
  EXPECT_EQ(legacy["tokens"], json::array({"<bos>", "bytes:\\xe2\\x80"}));
  EXPECT_EQ(legacy["token_logprobs"], json::array({nullptr, -0.5}));
  EXPECT_EQ(legacy["text_offset"], json::array({0, 3}));
  EXPECT_TRUE(legacy["top_logprobs"][0].is_null());
  EXPECT_EQ(legacy["top_logprobs"][1],
            json({{"a", -0.25}, {"b", -1.0}, {"bytes:\\xe2\\x80", -0.5}}));

  // Several choices: indexes in order, usage summed.
  ApiError error;
  auto request = parse(R"({"prompt": ["a", "b"]})", false, &error);
  ASSERT_TRUE(request);
  pccx::app::Reply one, two;
  one.promptTokens = 2;
  one.tokens = {5};
  two.promptTokens = 3;
  two.tokens = {6, 7};
  json whole = completionResponse(
      *request, {"cmpl-1", 1, "m"},
      {{&one, "x", nullptr, nullptr}, {&two, "yz", legacy, nullptr}});
  ASSERT_EQ(whole["choices"].size(), 2u);
  EXPECT_EQ(whole["choices"][1]["index"], 1);
  EXPECT_EQ(whole["choices"][1]["text"], "yz");
  EXPECT_TRUE(whole["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(whole["choices"][1]["logprobs"], legacy);
  EXPECT_EQ(whole["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(whole["usage"]["completion_tokens"], 3);
}

namespace {

const char *endpointName(unsigned endpoints) {
  return endpoints == kBothEndpoints  ? "both"
         : endpoints == kChatEndpoint ? "chat"
                                      : "completions";
}

/// A request on one endpoint that is accepted as it is, with `name` set to
/// `value`.
std::string requestWith(bool chat, const std::string &name, const json &value) {
  json body = chat ? json{{"messages", {{{"role", "user"}, {"content", "x"}}}}}
                   : json{{"prompt", "x"}};
  body[name] = value;
  return body.dump();
}

/// Calls `check(chat)` for each endpoint the row covers.
template <typename Check>
void forEachEndpoint(const RequestField &row, Check check) {
  if (row.endpoints & kChatEndpoint)
    check(true);
  if (row.endpoints & kCompletionsEndpoint)
    check(false);
}

/// A value of the wrong type for every field the server reads.
const json kWrongType = json::array({json::array()});

} // namespace

// docs/serving.md's "Request fields" table is requestFields(), row for row.
TEST(OpenAiApi, FieldTableMatchesTheDocs) {
  std::ifstream in(PCCX_SOURCE_DIR "/docs/serving.md");
  ASSERT_TRUE(in) << "docs/serving.md";
  std::set<std::string> documented, coded;
  std::string line;
  bool inTable = false;
  while (std::getline(in, line)) {
    if (line == "| field | endpoint | handling | neutral value |") {
      inTable = true;
      continue;
    }
    if (!inTable || line.rfind("|---", 0) == 0)
      continue;
    if (line.empty() || line[0] != '|')
      break;
    documented.insert(line);
  }
  for (const RequestField &row : requestFields()) {
    std::string neutral =
        *row.neutral ? "`" + std::string(row.neutral) + "`" : std::string("—");
    coded.insert(std::string("| `") + row.name + "` | " +
                 endpointName(row.endpoints) + " | " +
                 fieldHandlingName(row.handling) + " | " + neutral + " |");
  }
  EXPECT_EQ(documented, coded);
}

TEST(OpenAiApi, FieldTableHasOneRowPerFieldAndEndpoint) {
  std::set<std::pair<std::string, bool>> seen;
  for (const RequestField &row : requestFields()) {
    EXPECT_TRUE(row.endpoints != 0 && (row.endpoints & ~kBothEndpoints) == 0)
        << row.name;
    EXPECT_TRUE(row.handling == FieldHandling::Refused || !*row.neutral)
        << row.name;
    forEachEndpoint(row, [&](bool chat) {
      EXPECT_TRUE(seen.insert({row.name, chat}).second)
          << row.name << " twice for " << (chat ? "chat" : "completions");
    });
  }
}

// A supported field is read: a wrong type is an error naming it.
TEST(OpenAiApi, SupportedFieldsAreRead) {
  for (const RequestField &row : requestFields())
    if (row.handling == FieldHandling::Supported)
      forEachEndpoint(row, [&](bool chat) {
        ApiError error;
        EXPECT_FALSE(
            parse(requestWith(chat, row.name, kWrongType), chat, &error))
            << row.name << (chat ? " (chat)" : " (completions)");
        EXPECT_EQ(error.param, row.name);
      });
}

// A refused field is a 400 naming it, unless null or its neutral value.
TEST(OpenAiApi, RefusedFieldsNameTheField) {
  for (const RequestField &row : requestFields())
    if (row.handling == FieldHandling::Refused)
      forEachEndpoint(row, [&](bool chat) {
        const char *where = chat ? " (chat)" : " (completions)";
        ApiError error;
        EXPECT_FALSE(
            parse(requestWith(chat, row.name, "something"), chat, &error))
            << row.name << where;
        EXPECT_EQ(error.status, 400) << row.name << where;
        EXPECT_EQ(error.param, row.name) << where;
        EXPECT_EQ(error.code, "unsupported_parameter") << row.name << where;
        EXPECT_NE(error.message.find(std::string("'") + row.name + "'"),
                  std::string::npos)
            << error.message;
        EXPECT_TRUE(parse(requestWith(chat, row.name, nullptr), chat, &error))
            << row.name << where << ": " << error.message;
        if (*row.neutral) {
          EXPECT_TRUE(
              parse(requestWith(chat, row.name, json::parse(row.neutral)), chat,
                    &error))
              << row.name << where << ": " << error.message;
        }
      });
  ApiError error;
  EXPECT_FALSE(parse(requestWith(true, "modalities", {"text", "audio"}),
                     true, &error));
  EXPECT_EQ(error.message, "'modalities' is not supported by this server "
                           "(only [\"text\"])");
  EXPECT_FALSE(parse(requestWith(true, "tool_choice", "auto"), true, &error));
  EXPECT_EQ(error.param, "tool_choice");
  EXPECT_FALSE(parse(requestWith(true, "audio", 0), true, &error));
  EXPECT_EQ(error.message,
            "'audio' is not supported by this server (leave it out)");
}

// Ignored fields, and fields in no row, are accepted whatever their value.
TEST(OpenAiApi, IgnoredAndUnknownFieldsAreAccepted) {
  for (const RequestField &row : requestFields())
    if (row.handling == FieldHandling::Ignored)
      forEachEndpoint(row, [&](bool chat) {
        ApiError error;
        EXPECT_TRUE(
            parse(requestWith(chat, row.name, kWrongType), chat, &error))
            << row.name << ": " << error.message;
      });
  for (bool chat : {true, false}) {
    ApiError error;
    EXPECT_TRUE(parse(requestWith(chat, "x_vendor_extension", kWrongType), chat,
                      &error))
        << error.message;
  }
  // A field of the other endpoint is unknown here.
  ApiError error;
  EXPECT_TRUE(parse(requestWith(true, "echo", true), true, &error))
      << error.message;
}

TEST(OpenAiApi, MaxTokensErrorsNameTheFieldGiven) {
  ApiError error;
  EXPECT_FALSE(
      parse(requestWith(true, "max_completion_tokens", 0), true, &error));
  EXPECT_EQ(error.param, "max_completion_tokens");
  EXPECT_EQ(error.message, "'max_completion_tokens' must be at least 1");
}
