//===- HttpFuzzer.cpp - pccx-serve's request path from raw bytes ----------===//
//
// The bytes are one client connection: Server::serveBytes reads them with
// the server's own stream and limits, routes them through httplib and the
// handlers, parses JSON bodies and writes JSON and server-sent events, as
// for a socket. The backend is scripted (no device): its replies echo the
// prompt's bytes, so that invalid UTF-8 and stop strings reach the
// response writers. Nothing may throw out, crash or hang.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/Server.h"

#include <algorithm>
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

} // namespace

// An input that starts with '~' goes (without it) to a server with an API
// key ("k"), an allowed CORS origin and --context-shift; others to one
// without.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  const bool keyed = !input.empty() && input[0] == '~';
  if (keyed)
    input.erase(0, 1);
  std::string out = server(keyed).serveBytes(input);
  // Whatever came in, anything written back is an HTTP response.
  if (!out.empty() && out.compare(0, 9, "HTTP/1.1 ") != 0)
    __builtin_trap();
  return 0;
}
