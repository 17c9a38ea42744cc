//===- LlamaRoutesTests.cpp - llama.cpp server's routes, n, defaults ------===//
//
// POST /tokenize and /detokenize, GET /props and /slots (shapes, refusals,
// the API key, the body and token budgets), `n` choices (complete and
// streamed, counted against the request budget), and the server's
// sampling defaults, over a scripted backend whose tokenizer spells each
// byte as one id.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/InfoRoutes.h"
#include "runtime/serve/Server.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

using namespace pccx;
using namespace pccx::serve;
using nlohmann::json;

namespace {

/// Ids 3.. are bytes (id = byte + 3), 2 is BOS; replies spell "ab...".
class ByteBackend : public Backend {
public:
  static constexpr int32_t kBos = 2;
  int64_t context = 4096;
  /// complete() waits for release() while `hold` is set.
  bool hold = false;
  std::mutex mutex;
  std::condition_variable changed;
  bool released = false;
  std::vector<app::SamplingOptions> sampled; ///< each reply's settings
  std::vector<SlotState> slots;

  int64_t capacity() const override { return context; }
  std::set<int32_t> stopTokens() const override { return {}; }
  bool promptIds(const GenerationRequest &request, std::vector<int32_t> *ids,
                 ApiError *error) override {
    std::string text = request.prompt;
    for (const app::ChatMessage &m : request.messages)
      text += m.content;
    return tokenize(text, true, ids, &error->message);
  }
  bool complete(const std::vector<int32_t> &prompt,
                const app::ReplyOptions &options, app::Reply *reply,
                std::string *) override {
    {
      std::unique_lock<std::mutex> lock(mutex);
      sampled.push_back(options.sampling);
      changed.notify_all();
      changed.wait(lock, [&] { return !hold || released; });
    }
    *reply = app::Reply();
    reply->promptTokens = int64_t(prompt.size());
    reply->end = app::ReplyEnd::MaxTokens;
    for (int64_t i = 0; i < options.maxTokens; ++i) {
      // The prompt's last byte, then the alphabet: choices of a list differ.
      std::string piece(1, char(i == 0 ? prompt.back() - 3 : 'a' + i % 26));
      reply->tokens.push_back(int32_t(uint8_t(piece[0])) + 3);
      reply->text += piece;
      if (options.onText)
        options.onText(piece);
    }
    return true;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    released = true;
    changed.notify_all();
  }
  bool tokenize(const std::string &text, bool addSpecial,
                std::vector<int32_t> *ids, std::string *) override {
    if (addSpecial)
      ids->push_back(kBos);
    for (unsigned char c : text)
      ids->push_back(int32_t(c) + 3);
    return true;
  }
  int64_t vocabSize() const override { return 259; }
  uint64_t maxTextBytes(int64_t tokens) const override {
    return uint64_t(tokens);
  }
  std::string tokenText(int32_t id) const override {
    return id == kBos ? "<bos>" : std::string(1, char(id - 3));
  }
  std::vector<SlotState> slotStates() const override { return slots; }
};

ServeOptions quietOptions() {
  ServeOptions o;
  o.modelName = "m";
  o.port = 0;
  o.logRequests = false;
  o.maxBodyBytes = 1024;
  return o;
}

std::string request(const std::string &method, const std::string &path,
                    const std::string &body = "",
                    const std::string &headers = "") {
  return method + " " + path + " HTTP/1.1\r\nHost: x\r\n" + headers +
         (body.empty() && method == "GET"
              ? std::string()
              : "Content-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n") +
         "\r\n" + body;
}

/// Status and JSON body of the one response in `out`.
std::pair<int, json> response(const std::string &out) {
  const int status = out.size() > 12 ? std::atoi(out.c_str() + 9) : 0;
  const size_t at = out.find("\r\n\r\n");
  json body = json::parse(at == std::string::npos ? "" : out.substr(at + 4),
                          nullptr, false);
  return {status, body};
}

std::pair<int, json> call(Server &server, const std::string &method,
                          const std::string &path,
                          const std::string &body = "",
                          const std::string &headers = "") {
  return response(server.serveBytes(request(method, path, body, headers)));
}

/// The data events of a streamed response, parsed ([DONE] left out).
std::vector<json> events(const std::string &out) {
  std::vector<json> all;
  for (size_t at = out.find("data: "); at != std::string::npos;
       at = out.find("data: ", at + 1)) {
    const size_t end = out.find("\n\n", at);
    const std::string data = out.substr(at + 6, end - at - 6);
    if (data != "[DONE]")
      all.push_back(json::parse(data));
  }
  return all;
}

void expectRefusal(Server &server, const char *path, const std::string &body,
                   const char *param, const char *code = nullptr) {
  auto [status, reply] = call(server, "POST", path, body);
  EXPECT_EQ(status, 400) << body;
  EXPECT_EQ(reply["error"]["param"], param) << body << " " << reply.dump();
  if (code) {
    EXPECT_EQ(reply["error"]["code"], code) << body;
  }
  EXPECT_EQ(reply["error"]["type"], "invalid_request_error");
}

} // namespace

TEST(ServeTokenize, IdsPiecesAndBos) {
  ByteBackend backend;
  Server server(backend, quietOptions());
  auto [status, ids] = call(server, "POST", "/tokenize", R"({"content": "hi"})");
  ASSERT_EQ(status, 200) << ids.dump();
  EXPECT_EQ(ids, json::parse(R"({"tokens": [107, 108]})"));
  // add_special puts BOS first; pieces are strings when UTF-8, else bytes
  // ("é" is two ids here, each half a character).
  auto [status2, pieces] =
      call(server, "POST", "/tokenize",
           R"({"content": "a\u00e9", "add_special": true, "with_pieces": true})");
  ASSERT_EQ(status2, 200) << pieces.dump();
  EXPECT_EQ(pieces, json::parse(R"({"tokens": [{"id": 2, "piece": "<bos>"},
      {"id": 100, "piece": "a"}, {"id": 198, "piece": [195]},
      {"id": 172, "piece": [169]}]})"));
  auto [status3, text] =
      call(server, "POST", "/detokenize", R"({"tokens": [100, 198, 172]})");
  ASSERT_EQ(status3, 200) << text.dump();
  EXPECT_EQ(text, json::parse(R"({"content": "a\u00e9"})"));
  auto [status4, none] = call(server, "POST", "/detokenize", R"({"tokens": []})");
  EXPECT_EQ(status4, 200);
  EXPECT_EQ(none["content"], "");
}

TEST(ServeTokenize, MalformedBodiesAndIdsAreRefusedNamingTheField) {
  ByteBackend backend;
  ServeOptions o = quietOptions();
  o.limits.maxRequestTokens = 8;
  Server server(backend, o);
  auto [status, bad] = call(server, "POST", "/tokenize", "{not json");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(bad["error"]["code"], "invalid_json");
  EXPECT_EQ(call(server, "POST", "/detokenize", "[1]").first, 400);
  expectRefusal(server, "/tokenize", "{}", "content");
  expectRefusal(server, "/tokenize", R"({"content": 5})", "content");
  expectRefusal(server, "/tokenize", R"({"content": "a", "add_special": 1})",
                "add_special");
  expectRefusal(server, "/tokenize", R"({"content": "a", "with_pieces": "y"})",
                "with_pieces");
  expectRefusal(server, "/tokenize",
                R"({"content": "a", "parse_special": false})", "parse_special",
                "unsupported_parameter");
  // The request budget (--max-request-tokens), before and after encoding.
  expectRefusal(server, "/tokenize", R"({"content": "123456789"})", "content",
                "request_too_large");
  expectRefusal(server, "/tokenize",
                R"({"content": "12345678", "add_special": true})", "content",
                "request_too_large");
  expectRefusal(server, "/detokenize", "{}", "tokens");
  expectRefusal(server, "/detokenize", R"({"tokens": "1 2"})", "tokens");
  expectRefusal(server, "/detokenize", R"({"tokens": [3, "4"]})", "tokens");
  expectRefusal(server, "/detokenize", R"({"tokens": [3, 4.5]})", "tokens");
  expectRefusal(server, "/detokenize", R"({"tokens": [1,2,3,4,5,6,7,8,9]})",
                "tokens", "request_too_large");
  for (const char *ids : {"[3, 259]", "[-1]", "[18446744073709551615]",
                          "[4294967299]"})
    expectRefusal(server, "/detokenize",
                  std::string(R"({"tokens": )") + ids + "}", "tokens",
                  "invalid_value");
  auto [status2, range] =
      call(server, "POST", "/detokenize", R"({"tokens": [3, 259]})");
  EXPECT_EQ(range["error"]["message"],
            "tokens[1] is 259, outside the vocabulary of 259");
  // The body limit (--max-body-bytes) as for the generation routes.
  const std::string big =
      R"({"content": ")" + std::string(2000, 'x') + R"("})";
  EXPECT_EQ(call(server, "POST", "/tokenize", big).first, 413);
  auto [status3, get] = call(server, "GET", "/tokenize");
  EXPECT_EQ(status3, 405);
  EXPECT_EQ(get["error"]["code"], "method_not_allowed");
}

TEST(ServeTokenize, ABackendWithoutATokenizerRefuses) {
  struct Plain : Backend {
    int64_t capacity() const override { return 64; }
    std::set<int32_t> stopTokens() const override { return {}; }
    bool promptIds(const GenerationRequest &, std::vector<int32_t> *,
                   ApiError *) override {
      return false;
    }
    bool complete(const std::vector<int32_t> &, const app::ReplyOptions &,
                  app::Reply *, std::string *) override {
      return false;
    }
  } plain;
  Server server(plain, quietOptions());
  auto [status, reply] = call(server, "POST", "/tokenize", R"({"content": "a"})");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(reply["error"]["message"], "this server's model has no tokenizer");
}

TEST(ServeProps, ModelContextDefaultsTemplateSlotsBuild) {
  ByteBackend backend;
  ServeOptions o = quietOptions();
  o.parallel = 3;
  o.limits.maxTokens = 77;
  o.limits.maxChoices = 4;
  o.defaults.sampling.temperature = 0.25;
  o.defaults.sampling.topK = 7;
  o.defaults.sampling.topP = 0.5;
  o.defaults.sampling.minP = 0.125;
  o.defaults.sampling.repetitionPenalty = 1.5;
  o.modelPath = "m.pccx";
  Server server(backend, o);
  auto [status, props] = call(server, "GET", "/props");
  ASSERT_EQ(status, 200);
  const json &settings = props["default_generation_settings"];
  EXPECT_EQ(settings["n_ctx"], 4096);
  EXPECT_EQ(settings["params"]["temperature"], 0.25);
  EXPECT_EQ(settings["params"]["top_k"], 7);
  EXPECT_EQ(settings["params"]["top_p"], 0.5);
  EXPECT_EQ(settings["params"]["min_p"], 0.125);
  EXPECT_EQ(settings["params"]["repeat_penalty"], 1.5);
  EXPECT_EQ(settings["params"]["seed"], -1); // each request its own
  EXPECT_EQ(settings["params"]["n_predict"], 77);
  EXPECT_EQ(props["total_slots"], 3);
  EXPECT_EQ(props["model_alias"], "m");
  EXPECT_EQ(props["model_path"], "m.pccx");
  EXPECT_EQ(props["max_n"], 4);
  EXPECT_EQ(props["n_ctx"], 4096);
  EXPECT_EQ(props["build_info"], std::string("pccx ") + PCCX_VERSION);
  // No template given: the built-in layout's.
  EXPECT_EQ(props["chat_template"], kBuiltInChatTemplate);
  EXPECT_EQ(props["chat_template_source"], "built-in");
  o.chatTemplate = "{{ '<start_of_turn>' }}";
  o.chatTemplateSource = "file";
  o.defaults.hasSeed = true;
  o.defaults.sampling.seed = 9;
  Server other(backend, o);
  auto [status2, more] = call(other, "GET", "/props");
  EXPECT_EQ(more["chat_template"], "{{ '<start_of_turn>' }}");
  EXPECT_EQ(more["chat_template_source"], "file");
  EXPECT_EQ(more["default_generation_settings"]["params"]["seed"], 9);
}

TEST(ServeProps, TheBuiltInTemplateIsGemmasLayout) {
  // What /props shows must be a template the server would take from a
  // file (--chat-template-file).
  const std::string text = kBuiltInChatTemplate;
  EXPECT_NE(text.find("<start_of_turn>"), std::string::npos);
  EXPECT_NE(text.find("<end_of_turn>"), std::string::npos);
  EXPECT_NE(text.find("'model'"), std::string::npos);
}

TEST(ServeSlots, OneEntryPerSlotWithoutPromptText) {
  ByteBackend backend;
  backend.slots = {{true, 12}, {false, 30}};
  ServeOptions o = quietOptions();
  o.parallel = 2;
  Server server(backend, o);
  auto [status, slots] = call(server, "GET", "/slots");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(slots, json::parse(R"([
      {"id": 0, "n_ctx": 4096, "speculative": false, "is_processing": true,
       "n_cached": 12},
      {"id": 1, "n_ctx": 4096, "speculative": false, "is_processing": false,
       "n_cached": 30}])"));
  EXPECT_EQ(call(server, "GET", "/slots?fail_on_no_slot=1").first, 200);
  backend.slots = {{true, 12}, {true, 30}};
  auto [busy, refusal] = call(server, "GET", "/slots?fail_on_no_slot=1");
  EXPECT_EQ(busy, 503);
  EXPECT_EQ(refusal["error"]["code"], "no_slot_available");
}

TEST(ServeSlots, TheServersCountWhenTheBackendDoesNotKnow) {
  ByteBackend backend; // no slotStates()
  backend.hold = true;
  ServeOptions o = quietOptions();
  o.parallel = 2;
  Server server(backend, o);
  std::string error;
  const int port = server.bind(&error);
  ASSERT_GT(port, 0) << error;
  std::thread run([&] { server.run(); });
  auto client = [port] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30, 0);
    return c;
  };
  std::thread reply([&] {
    client().Post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})",
                  "application/json");
  });
  {
    std::unique_lock<std::mutex> lock(backend.mutex);
    EXPECT_TRUE(backend.changed.wait_for(lock, std::chrono::seconds(30), [&] {
      return !backend.sampled.empty();
    }));
  }
  auto busy = client().Get("/slots");
  backend.release();
  reply.join();
  auto idle = client().Get("/slots");
  server.stop();
  run.join();
  ASSERT_TRUE(busy && idle);
  const json slots = json::parse(busy->body);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0]["is_processing"], true);
  EXPECT_EQ(slots[1]["is_processing"], false);
  EXPECT_EQ(json::parse(idle->body)[0]["is_processing"], false);
}

TEST(ServeAuth, LlamaRoutesNeedTheKey) {
  ByteBackend backend;
  ServeOptions o = quietOptions();
  o.apiKey = "sesame";
  Server server(backend, o);
  const std::string key = "Authorization: Bearer sesame\r\n";
  for (auto [method, path, body] :
       {std::tuple<const char *, const char *, const char *>{"GET", "/props", ""},
        {"GET", "/slots", ""},
        {"POST", "/tokenize", R"({"content": "a"})"},
        {"POST", "/detokenize", R"({"tokens": [100]})"}}) {
    EXPECT_EQ(call(server, method, path, body).first, 401) << path;
    EXPECT_EQ(call(server, method, path, body, key).first, 200) << path;
  }
  EXPECT_EQ(call(server, "GET", "/health").first, 200);
  EXPECT_FALSE(needsApiKey("/health"));
  EXPECT_FALSE(needsApiKey("/metrics"));
  EXPECT_TRUE(needsApiKey("/v1/models"));
}

TEST(ServeChoices, NChoicesEachWithItsOwnSeed) {
  ByteBackend backend;
  ServeOptions o = quietOptions();
  o.maxBodyBytes = 4096;
  Server server(backend, o);
  auto [status, reply] = call(server, "POST", "/v1/completions",
                              R"({"prompt": "x", "max_tokens": 2, "n": 3,
                                  "seed": 5})");
  ASSERT_EQ(status, 200) << reply.dump();
  ASSERT_EQ(reply["choices"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(reply["choices"][i]["index"], i);
    EXPECT_EQ(reply["choices"][i]["text"], "xb");
  }
  EXPECT_EQ(reply["usage"]["completion_tokens"], 6);
  EXPECT_EQ(reply["usage"]["prompt_tokens"], 6);
  ASSERT_EQ(backend.sampled.size(), 3u);
  EXPECT_EQ(backend.sampled[0].seed, 5u); // the first is the request's seed
  EXPECT_NE(backend.sampled[1].seed, backend.sampled[0].seed);
  EXPECT_NE(backend.sampled[2].seed, backend.sampled[1].seed);
  EXPECT_NE(backend.sampled[2].seed, backend.sampled[0].seed);
  // The same request, the same seeds.
  call(server, "POST", "/v1/completions",
       R"({"prompt": "x", "max_tokens": 2, "n": 3, "seed": 5})");
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(backend.sampled[3 + i].seed, backend.sampled[i].seed);
  // A list of prompts: each prompt's n choices together, in order.
  auto [status2, list] = call(server, "POST", "/v1/completions",
                              R"({"prompt": ["x", "y"], "max_tokens": 1,
                                  "n": 2})");
  ASSERT_EQ(status2, 200) << list.dump();
  std::vector<std::string> texts;
  for (const json &c : list["choices"])
    texts.push_back(c["text"]);
  EXPECT_EQ(texts, (std::vector<std::string>{"x", "x", "y", "y"}));
  // Chat too.
  auto [status3, chat] =
      call(server, "POST", "/v1/chat/completions",
           R"({"messages": [{"role": "user", "content": "q"}],
               "max_tokens": 1, "n": 2})");
  ASSERT_EQ(status3, 200) << chat.dump();
  ASSERT_EQ(chat["choices"].size(), 2u);
  EXPECT_EQ(chat["choices"][1]["index"], 1);
  EXPECT_EQ(chat["choices"][1]["message"]["content"], "q");
}

TEST(ServeChoices, StreamedChunksCarryTheirIndex) {
  ByteBackend backend;
  ServeOptions o = quietOptions();
  o.maxBodyBytes = 4096;
  Server server(backend, o);
  const std::string out = server.serveBytes(request(
      "POST", "/v1/chat/completions",
      R"({"messages": [{"role": "user", "content": "q"}], "max_tokens": 2,
          "n": 2, "stream": true, "stream_options": {"include_usage": true}})"));
  std::vector<json> all = events(out);
  ASSERT_FALSE(all.empty()) << out;
  std::string text[2];
  int finished[2] = {0, 0}, roles[2] = {0, 0};
  for (const json &e : all) {
    if (e["choices"].empty()) {
      EXPECT_EQ(e["usage"]["completion_tokens"], 4); // both choices
      continue;
    }
    const json &c = e["choices"][0];
    const size_t i = c["index"].get<size_t>();
    ASSERT_LT(i, 2u);
    if (c["delta"].contains("role"))
      ++roles[i];
    if (c["delta"].contains("content"))
      text[i] += c["delta"]["content"].get<std::string>();
    if (!c["finish_reason"].is_null())
      ++finished[i];
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(text[i], "qb") << i;
    EXPECT_EQ(finished[i], 1) << i;
    EXPECT_EQ(roles[i], 1) << i;
  }
  EXPECT_NE(out.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(all.back()["choices"].size(), 0u); // usage comes last
}

TEST(ServeChoices, CountedAgainstTheRequestBudgetAndTheLimit) {
  ByteBackend backend;
  ServeOptions o = quietOptions();
  o.limits.maxRequestTokens = 20;
  o.limits.maxChoices = 4;
  Server server(backend, o);
  // 2 prompt tokens (BOS, "x") + 4 reply tokens = 6 a choice: 3 fit, 4 do not.
  EXPECT_EQ(call(server, "POST", "/v1/completions",
                 R"({"prompt": "x", "max_tokens": 4, "n": 3})")
                .first,
            200);
  const size_t before = backend.sampled.size();
  expectRefusal(server, "/v1/completions",
                R"({"prompt": "x", "max_tokens": 4, "n": 4})", "n",
                "request_too_large");
  // Two prompts, two choices each: counted as four prompts.
  expectRefusal(server, "/v1/completions",
                R"({"prompt": ["x", "y"], "max_tokens": 4, "n": 2})", "prompt",
                "request_too_large");
  expectRefusal(server, "/v1/completions", R"({"prompt": "x", "n": 5})", "n",
                "invalid_value");
  EXPECT_EQ(backend.sampled.size(), before); // refused before any work
}

// max_tokens past --max-tokens-limit or past what the context has left is
// clamped, as llama-server does; a prompt longer than the context is not.
TEST(ServeChoices, MaxTokensIsClampedToTheLimitAndTheContext) {
  ByteBackend backend;
  backend.context = 10;
  ServeOptions o = quietOptions();
  o.limits.maxTokens = 6;
  Server server(backend, o);
  // 2 prompt tokens: 9 left in the context, 6 by the limit.
  auto [status, reply] = call(server, "POST", "/v1/completions",
                              R"({"prompt": "x", "max_tokens": 4096})");
  ASSERT_EQ(status, 200) << reply.dump();
  EXPECT_EQ(reply["usage"]["completion_tokens"], 6);
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "length");
  // 7 prompt tokens: 4 left (positions 0..9 hold the prompt and every
  // reply token but the last).
  auto [status2, chat] = call(server, "POST", "/v1/chat/completions",
                              R"({"messages": [{"role": "user",
                                  "content": "abcdef"}], "max_tokens": 2048})");
  ASSERT_EQ(status2, 200) << chat.dump();
  EXPECT_EQ(chat["usage"]["completion_tokens"], 4);
  expectRefusal(server, "/v1/completions",
                R"({"prompt": "abcdefghijk", "max_tokens": 1})", "prompt",
                "context_length_exceeded");
}

TEST(ServeDefaults, RequestsWithoutAFieldGetTheServers) {
  ByteBackend backend;
  ServeOptions o = quietOptions();
  o.defaults.sampling.temperature = 0.3;
  o.defaults.sampling.topK = 11;
  o.defaults.sampling.seed = 1234;
  o.defaults.hasSeed = true;
  Server server(backend, o);
  for (int i = 0; i < 2; ++i)
    call(server, "POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 1})");
  call(server, "POST", "/v1/completions",
       R"({"prompt": "x", "max_tokens": 1, "temperature": 0.9, "seed": 8})");
  ASSERT_EQ(backend.sampled.size(), 3u);
  EXPECT_EQ(backend.sampled[0].temperature, 0.3);
  EXPECT_EQ(backend.sampled[0].topK, 11);
  // --seed: every request without one draws from it.
  EXPECT_EQ(backend.sampled[0].seed, 1234u);
  EXPECT_EQ(backend.sampled[1].seed, 1234u);
  EXPECT_EQ(backend.sampled[2].temperature, 0.9);
  EXPECT_EQ(backend.sampled[2].topK, 11);
  EXPECT_EQ(backend.sampled[2].seed, 8u);
  // Without --seed, each request its own.
  ByteBackend plain;
  Server unseeded(plain, quietOptions());
  for (int i = 0; i < 2; ++i)
    call(unseeded, "POST", "/v1/completions",
         R"({"prompt": "x", "max_tokens": 1})");
  ASSERT_EQ(plain.sampled.size(), 2u);
  EXPECT_NE(plain.sampled[0].seed, plain.sampled[1].seed);
  EXPECT_EQ(plain.sampled[0].temperature, 1.0);
}
