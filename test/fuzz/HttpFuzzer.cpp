//===- HttpFuzzer.cpp - pccx-serve's request path from raw bytes ----------===//
//
// The bytes are one client connection: Server::serveBytes reads them with
// the server's own stream and limits, routes them through httplib and the
// handlers, parses JSON bodies and writes JSON and server-sent events, as
// for a socket. The backend is scripted (no device): its replies echo the
// prompt's bytes and its tokenizer spells one id per byte, so that invalid
// UTF-8 and stop strings reach the response writers (the llama.cpp routes'
// too). Nothing may throw out, crash or hang.
//
// Sequence mode (an input that starts with '='): the bytes are a sequence
// of edits to a token prompt, each followed by a completion request to one
// server over a real model, the bundle PCCX_FUZZ_HTTP_BUNDLE names
// (bench/fuzz.sh compiles one whose sliding rings are small); its oracle is
// a fresh server, which must give every request alone the reply the
// reused cache gave. Single requests cannot find a reuse bug; sequences
// can.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/ChatTemplate.h"
#include "runtime/devices/SimDevice.h"
#include "runtime/serve/Server.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace pccx;
using namespace pccx::serve;

namespace {

class EchoBackend : public Backend {
public:
  int64_t capacity() const override { return 256; }
  std::set<int32_t> stopTokens() const override { return {1}; }
  bool promptIds(const GenerationRequest &request, std::vector<int32_t> *ids,
                 ApiError *error) override {
    std::string text = request.prompt;
    for (const app::ChatMessage &m : request.messages)
      text += m.content;
    if (request.promptIsTokens) {
      for (int32_t id : request.promptTokens)
        if (id >= 1000) {
          error->message = "token id outside the vocabulary";
          error->param = "prompt";
          return false;
        }
      *ids = request.promptTokens;
      return true;
    }
    ids->assign(std::min<size_t>(text.size() + 1, 300), 2);
    last_ = text;
    return true;
  }
  bool complete(const std::vector<int32_t> &, const app::ReplyOptions &options,
                app::Reply *reply, std::string *) override {
    *reply = app::Reply();
    std::string source = last_.empty() ? std::string("\xff ok") : last_;
    int64_t n = std::min<int64_t>(options.maxTokens, 64);
    reply->end = app::ReplyEnd::MaxTokens;
    for (int64_t i = 0; i < n; ++i) {
      std::string piece(1, source[size_t(i) % source.size()]);
      reply->tokens.push_back(3);
      reply->text += piece;
      if (options.onText)
        options.onText(piece);
      if (options.interrupt && options.interrupt->load()) {
        reply->end = app::ReplyEnd::Interrupted;
        break;
      }
    }
    return true;
  }

  // /tokenize and /detokenize: one id per byte, so that pieces of half a
  // character reach the writers.
  bool tokenize(const std::string &text, bool addSpecial,
                std::vector<int32_t> *ids, std::string *) override {
    if (addSpecial)
      ids->push_back(2);
    for (unsigned char c : text)
      ids->push_back(int32_t(c) + 3);
    return true;
  }
  int64_t vocabSize() const override { return 1000; }
  uint64_t maxTextBytes(int64_t tokens) const override {
    return uint64_t(tokens);
  }
  std::string tokenText(int32_t id) const override {
    return id >= 3 && id < 259 ? std::string(1, char(id - 3)) : "";
  }

private:
  std::string last_;
};

Server &server(bool keyed) {
  static EchoBackend backend;
  auto make = [](bool withKey) {
    ServeOptions o;
    o.modelName = "fuzz";
    o.logRequests = false;
    o.maxBodyBytes = 4096;
    o.limits.maxTokens = 64;
    if (withKey) {
      // The API key, CORS and context-shift paths.
      o.apiKey = "k";
      o.corsOrigins = {"https://a.example"};
      o.contextShift = true;
    }
    return new Server(backend, o);
  };
  static Server *plain = make(false), *withKey = make(true);
  return keyed ? *withKey : *plain;
}

/// The model of sequence mode, loaded once; null without one.
struct RealModel {
  std::unique_ptr<exec::Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<app::ChatFormat> format;
};

const RealModel *realModel() {
  static const RealModel *loaded = [] () -> const RealModel * {
    const char *path = std::getenv("PCCX_FUZZ_HTTP_BUNDLE");
    if (!path || !*path) {
      std::fprintf(stderr, "fuzz-http: PCCX_FUZZ_HTTP_BUNDLE is not set: "
                           "sequence inputs ('=') are skipped\n");
      return nullptr;
    }
    auto m = new RealModel;
    std::string error;
    size_t bytes = 0;
    const uint8_t *tok = nullptr;
    if ((m->model = exec::Model::load(path, &error)) &&
        (tok = m->model->tokenizer(&bytes)) &&
        (m->tokenizer = Tokenizer::load(tok, bytes, &error)))
      m->format = app::ChatFormat::create(
          *m->tokenizer,
          bundle::chatTemplateOf(m->model->bundle().manifest()),
          m->model->bosToken(), &error);
    if (!m->format) {
      std::fprintf(stderr, "fuzz-http: %s: %s\n", path,
                   tok ? error.c_str() : "no tokenizer");
      std::abort();
    }
    return m;
  }();
  return loaded;
}

/// A server over a new session of the real model.
struct RealServer {
  RealServer(const RealModel &m, int parallel, int64_t draft)
      : session(*m.model, std::make_unique<device::SimDevice>(
                              sim::Numerics::Hardware, m.model->target())) {
    serve::ServeOptions o;
    o.modelName = "fuzz";
    o.logRequests = false;
    o.parallel = parallel;
    o.draftTokens = draft;
    std::string error;
    if (!session.reserveSlots(parallel, &error))
      std::abort();
    server = std::make_unique<Server>(session, *m.model, *m.tokenizer,
                                      *m.format, o);
    if (!server->start(&error))
      std::abort();
  }
  /// The reply's JSON without what differs between servers by design.
  nlohmann::json complete(const std::vector<int32_t> &prompt,
                          int64_t maxTokens) {
    const std::string body =
        nlohmann::json{{"prompt", prompt},
                       {"max_tokens", maxTokens},
                       {"temperature", 0}}
            .dump();
    const std::string out = server->serveBytes(
        "POST /v1/completions HTTP/1.1\r\nHost: f\r\nContent-Type: "
        "application/json\r\nConnection: close\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    const size_t at = out.find("\r\n\r\n");
    nlohmann::json reply = nlohmann::json::parse(
        at == std::string::npos ? std::string() : out.substr(at + 4), nullptr,
        false);
    if (reply.is_object()) {
      reply.erase("id");
      reply.erase("created");
      if (reply.contains("usage") && reply["usage"].is_object())
        reply["usage"].erase("prompt_tokens_details"); // cached_tokens
    }
    return reply;
  }
  exec::Session session;
  std::unique_ptr<Server> server;
};

/// Byte pairs edit the prompt as a chat front end does (a new prompt,
/// tokens more, tokens less, an edit near the end, the reply length) and
/// send it; every reply must equal a fresh server's.
void runSequence(const std::string &input) {
  const RealModel *m = realModel();
  if (!m || input.empty())
    return;
  const uint8_t mode = uint8_t(input[0]);
  const int parallel = mode % 3 == 1 ? 4 : 1;
  const int64_t draft = mode % 3 == 2 ? 3 : 0;
  RealServer server(*m, parallel, draft);
  const int64_t capacity = server.session.capacity();
  auto token = [](unsigned a, unsigned i) {
    return int32_t(6 + (a * 31 + i * 17) % 50);
  };
  std::vector<int32_t> prompt = {2, token(1, 0), token(1, 1)};
  int64_t maxTokens = 4;
  int requests = 0;
  for (size_t i = 1; i + 1 < input.size() && requests < 24; i += 2) {
    const unsigned op = uint8_t(input[i]) % 8, arg = uint8_t(input[i + 1]);
    if (op == 0) {
      prompt = {2};
      for (unsigned k = 0; k <= arg % 16; ++k)
        prompt.push_back(token(arg, k));
    } else if (op == 1) {
      for (unsigned k = 0; k <= arg % 3; ++k)
        prompt.push_back(token(arg, unsigned(prompt.size())));
    } else if (op == 2) {
      prompt.resize(size_t(
          std::max<int64_t>(1, int64_t(prompt.size()) - 1 - int64_t(arg % 4))));
    } else if (op == 3) {
      prompt[prompt.size() - 1 - std::min<size_t>(prompt.size() - 1, arg % 6)] =
          token(arg, 7);
    } else if (op == 4) {
      maxTokens = 1 + arg % 8;
      continue;
    }
    if (int64_t(prompt.size()) + maxTokens > capacity)
      prompt.resize(size_t(capacity - maxTokens));
    ++requests;
    const nlohmann::json reused = server.complete(prompt, maxTokens);
    RealServer freshServer(*m, parallel, draft);
    const nlohmann::json fresh = freshServer.complete(prompt, maxTokens);
    if (reused != fresh) {
      std::fprintf(stderr,
                   "fuzz-http: request %d of the sequence (prompt of %zu "
                   "tokens, max_tokens %lld, --parallel %d, draft %lld): "
                   "the reused cache replied\n  %s\na fresh server\n  %s\n",
                   requests, prompt.size(), (long long)maxTokens, parallel,
                   (long long)draft, reused.dump().c_str(),
                   fresh.dump().c_str());
      __builtin_trap();
    }
  }
}

} // namespace

// An input that starts with '~' goes (without it) to a server with an API
// key ("k"), an allowed CORS origin and --context-shift; one that starts
// with '=' is a sequence (above); others go to a server without.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  if (!input.empty() && input[0] == '=') {
    runSequence(input.substr(1));
    return 0;
  }
  const bool keyed = !input.empty() && input[0] == '~';
  if (keyed)
    input.erase(0, 1);
  std::string out = server(keyed).serveBytes(input);
  // Whatever came in, anything written back is an HTTP response.
  if (!out.empty() && out.compare(0, 9, "HTTP/1.1 ") != 0)
    __builtin_trap();
  return 0;
}
