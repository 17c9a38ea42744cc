//===- main.cpp - pccx-serve ------------------------------------*- C++ -*-===//
//
// Serves a .pccx bundle over HTTP with OpenAI's API. The server is
// runtime/serve; this file reads the command line, opens the model and
// turns SIGTERM/SIGINT into a graceful stop.
//
//===----------------------------------------------------------------------===//

#include "hw/support/InputFile.h"
#include "runtime/bundle/ChatTemplate.h"
#include "runtime/bundle/Objdump.h"
#include "runtime/devices/Devices.h"
#include "runtime/serve/LoadingServer.h"
#include "runtime/serve/Server.h"
#include "tools/common/CommandLine.h"
#include "tools/common/DeviceFlags.h"
#include "tools/common/GuardedMain.h"
#include "tools/common/SamplingFlags.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <pthread.h>
#include <sstream>
#include <thread>

namespace {

/// An API key file holds one short line.
constexpr uint64_t kMaxApiKeyFileBytes = 4096;

// The help in parts: --host-threads comes from tools/common/DeviceFlags.h,
// the DEVICE section from the device registry.
const char kHelpOptions[] =
    R"(USAGE: pccx-serve MODEL.pccx [options]

Serves one compiled Gemma 3n bundle with OpenAI's HTTP API:
  POST /v1/completions        a prompt (string or token ids) continued
  POST /v1/chat/completions   messages in Gemma's chat template
                              ("stream": true sends server-sent events;
                              "n": several choices, up to --max-n)
  GET  /v1/models             the one model
  GET  /health                status, queue length, context length
  GET  /                      a chat page for a browser (--no-webui: off)
and llama.cpp server's routes:
  POST /tokenize, /detokenize text to token ids and back
  GET  /props                 model, context, default sampling settings,
                              chat template, slots, build
  GET  /slots                 each slot: processing or not, cached tokens
Generation requests are answered one at a time, in arrival order; the
others wait in a queue (docs/serving.md). SIGTERM or SIGINT stops the
server: the reply being generated ends, queued requests get 503.

OPTIONS:
  --host ADDR              address to listen on (default 127.0.0.1, this
                           machine only; 0.0.0.0 exposes the model to the
                           network)
  --port N                 TCP port (default 8080; 0 picks a free one). The
                           chosen port is printed on the first line:
                           "pccx-serve: listening on http://ADDR:PORT"
  -a, --alias NAME, --model-name NAME
                           the model id clients use (default: the bundle's
                           file name without .pccx)
  --api-key KEY            every /v1/* request (and /tokenize, /detokenize,
                           /props, /slots) must carry "Authorization:
                           Bearer KEY", else 401 (/health, /metrics and
                           the chat page at / stay open)
  --api-key-file FILE      the same, with the key read from FILE (one
                           trailing newline dropped), so that it is not on
                           the command line
  --cors-origin ORIGIN     lets web pages from ORIGIN (e.g.
                           http://localhost:3000; repeatable; * for any)
                           call the API: CORS preflights are answered and
                           responses carry Access-Control-Allow-Origin
                           (default: no CORS headers)
  --no-webui               no chat page at / (then 404); the page itself
                           needs no key, its API calls do
  --chat-template-file FILE
                           the chat template instead of the bundle's: Gemma's
                           turn layout (the one the server renders), else
                           an error at start; GET /props shows it
)";

// After --host-threads (tools/common/DeviceFlags.h).
const char kHelpDeviceHeading[] = R"(
DEVICE:
)";

const char kHelpAfterDevice[] = R"(
SAMPLING (what a request gets for the fields it leaves out; GET /props
shows them):
  --temp T, --temperature T
                           temperature, 0 (greedy) .. 2 (default 1)
  --top-k K                keep the K most likely ids (default 0: off)
  --top-p P                keep the smallest set with mass >= P, 0 < P <= 1
                           (default 1: off)
  --min-p P                keep the ids at least P times as likely as the
                           best one, 0 .. 1 (default 0: off)
  --repeat-penalty R, --repetition-penalty R
                           a seen id's logit divided by R, 0 < R <= 10
                           (default 1: off)
  --presence-penalty X     -2 .. 2, subtracted once per seen id (default 0)
  --frequency-penalty X    -2 .. 2, subtracted per occurrence (default 0)
  --seed S                 requests without a seed use S, so that the same
                           request gets the same reply (default, or -1:
                           each request draws from a seed of its own)

LIMITS:
  --max-body-bytes N       larger request bodies get 413 (default 1048576)
  -n, --n-predict N, --max-tokens-limit N
                           most tokens one reply may have (default 1024):
                           a larger max_tokens is clamped to it, and to
                           what the context has left after the prompt; a
                           prompt longer than the context is a 400
                           context_length_exceeded
  --max-prompts N          prompts one /v1/completions request may list
                           (default 32); more get 400 too_many_prompts
  --max-request-tokens N   tokens one request may need, over all its
                           prompts: each prompt's tokens plus its reply's
                           max_tokens (default 4 x the context); more get
                           400 request_too_large before anything runs.
                           A list's prompts each wait for a turn of their
                           own, so other requests go in between them
  --max-scored-tokens N    prompt tokens one request may have scored
                           (echo with logprobs; default 2 x the context)
  --max-n N                the largest "n" (choices per prompt) a request
                           may ask (default 8); each choice counts against
                           --max-request-tokens as a prompt of a list does
  -np, --parallel N        requests generated at once (default 1): with a
                           bundle compiled with --decode-batch, up to that
                           many share each pass over the weights; requests
                           join and leave between steps (continuous
                           batching), a newcomer's prompt runs in chunks
                           between the others' steps, and each slot keeps
                           its KV cache for the next request that shares a
                           prefix with its tokens (docs/serving.md)
  -c, --ctx-size N         hold at most N positions (default: the bundle's
                           --max-seq-len): less host memory for the KV
                           caches, requests limited to N (llama.cpp's -c)
  --context-shift          a chat request whose messages and max_tokens do
                           not fit the context loses its oldest exchanges
                           after the first user message (and the system
                           message) until it fits, instead of a 400
                           context_length_exceeded
  --draft METHOD           speculative decoding of each reply: ngram
                           (prompt lookup, verified in one multi-row step
                           of a bundle compiled with --decode-batch; the
                           replies are the same, greedy or sampled in
                           distribution) or none (default). Only with
                           --parallel 1; /metrics and each reply's
                           usage.completion_tokens_details report the
                           drafted tokens accepted and rejected
  --draft-tokens K         tokens drafted per step, at most (default 3)
  --max-queue N            generation requests that may wait behind the
                           ones being served; more get 503 (default 16)
  --connection-threads N   connection threads beyond max-queue + parallel
                           that generation requests may hold; these answer
                           /health and refusals while the model is busy
                           (default 8)
  --request-timeout S      a request (line, headers, body) must arrive
                           within S seconds, else 408 and the connection
                           closes (default 10)
  --idle-timeout S         a kept-alive connection idle this long is closed
                           (default 5)
  --markers-in-text        "<start_of_turn>" and "<end_of_turn>" typed in a
                           message become the turn markers, as Hugging Face
                           transformers does (by default they stay text, so
                           a client cannot forge turns; docs/serving.md)
  --quiet                  no line per request on stderr (by default:
                           "pccx-serve: CLIENT METHOD PATH STATUS")
  -h, --help               show this help
  --version                print the version and exit
)";

/// --chat-template-file: the template must be one the server renders
/// (Gemma's turn layout); another is an error rather than a template
/// silently not used.
bool readChatTemplate(const std::string &path,
                      pccx::bundle::ChatTemplate *chat, std::string *error) {
  std::string text;
  if (!pccx::support::readInputFile(path, pccx::support::kMaxTemplateFileBytes, &text,
                                    error)) {
    *error = "--chat-template-file: " + *error;
    return false;
  }
  *chat = pccx::bundle::classifyChatTemplate(text);
  if (chat->source == pccx::bundle::ChatTemplate::Source::Bundle)
    return true;
  *error = "--chat-template-file: " + path +
           (text.empty() ? " is empty"
                         : " is not Gemma's turn layout (it must write "
                           "<start_of_turn> and <end_of_turn> and name the "
                           "assistant role 'model'; docs/serving.md, \"Chat "
                           "template\")");
  return false;
}

} // namespace

static int run(int argc, char **argv) {
  std::string bundlePath, draftMethod = "none";
  int64_t draftTokens = 3;
  bool markersInText = false;
  pccx::tools::DeviceChoice device;
  pccx::serve::ServeOptions options;
  pccx::tools::CommandLine cl("pccx-serve");
  cl.help([] {
    return kHelpOptions + std::string(pccx::tools::kHostThreadsHelp) +
           kHelpDeviceHeading + pccx::device::deviceHelp() + kHelpAfterDevice;
  });
  cl.positional("bundle", &bundlePath);
  auto nonEmpty = [](const char *option, std::string *out) {
    return [option, out](const std::string &value) {
      *out = value;
      return value.empty() ? std::string(option) + " must not be empty"
                           : std::string();
    };
  };
  cl.text("--host", &options.host);
  cl.range("--port", 0, 65535, [&](int64_t n) { options.port = int(n); });
  cl.value("-a, --alias, --model-name",
           nonEmpty("--model-name", &options.modelName));
  cl.value("--api-key", nonEmpty("--api-key", &options.apiKey));
  cl.value("--api-key-file", [&](const std::string &path) {
    std::string error;
    if (!pccx::support::readInputFile(path, kMaxApiKeyFileBytes,
                                      &options.apiKey, &error))
      return error;
    // The newline an editor or `echo` leaves is not part of the key.
    if (!options.apiKey.empty() && options.apiKey.back() == '\n')
      options.apiKey.pop_back();
    if (!options.apiKey.empty() && options.apiKey.back() == '\r')
      options.apiKey.pop_back();
    if (options.apiKey.empty())
      return "--api-key-file: " + path + " holds no key";
    return std::string();
  });
  cl.value("--cors-origin", [&](const std::string &origin) {
    if (origin.empty())
      return std::string("--cors-origin must not be empty");
    options.corsOrigins.push_back(origin);
    return std::string();
  });
  pccx::tools::declareDeviceOptions(cl, &device);
  cl.range("--max-body-bytes", 0, INT64_MAX,
           [&](int64_t n) { options.maxBodyBytes = size_t(n); });
  cl.range("-n, --n-predict, --max-tokens-limit", 1, INT64_MAX,
           [&](int64_t n) { options.limits.maxTokens = n; });
  cl.renamed("--max-tokens", "--max-tokens-limit");
  cl.range("--max-prompts", 1, 100000,
           [&](int64_t n) { options.limits.maxPrompts = n; });
  cl.range("--max-request-tokens", 1, INT64_MAX,
           [&](int64_t n) { options.limits.maxRequestTokens = n; });
  cl.range("--max-scored-tokens", 1, INT64_MAX,
           [&](int64_t n) { options.limits.maxScoredTokens = n; });
  cl.range("--max-n", 1, 128,
           [&](int64_t n) { options.limits.maxChoices = n; });
  std::string templatePath;
  cl.value("--chat-template-file",
           nonEmpty("--chat-template-file", &templatePath));
  pccx::app::SamplingOptions &sampling = options.defaults.sampling;
  pccx::tools::declareSamplingOptions(cl, &sampling);
  cl.value("--seed", [&](const std::string &value) {
    // -1, as llama.cpp's server takes it: each request its own seed.
    if (value == "-1") {
      options.defaults.hasSeed = false;
      return std::string();
    }
    char *end = nullptr;
    errno = 0;
    const unsigned long long seed = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || value[0] == '-' || *end || errno)
      return "--seed must be a non-negative integer or -1, got '" + value +
             "'";
    options.defaults.sampling.seed = seed;
    options.defaults.hasSeed = true;
    return std::string();
  });
  cl.flag("--markers-in-text", &markersInText);
  cl.flag("--quiet", [&] { options.logRequests = false; });
  cl.flag("--no-webui", [&] { options.webUi = false; });
  cl.range("-np, --parallel", 1, 256,
           [&](int64_t n) { options.parallel = int(n); });
  cl.flag("--context-shift", &options.contextShift);
  int64_t ctxSize = 0;
  bool hasCtxSize = false;
  cl.count("-c, --ctx-size", &ctxSize, &hasCtxSize);
  cl.value("--draft", [&](const std::string &method) {
    draftMethod = method;
    if (method != "ngram" && method != "none")
      return "--draft must be ngram or none, got '" + method + "'";
    return std::string();
  });
  cl.range("--draft-tokens", 1, 255, [&](int64_t n) { draftTokens = n; });
  cl.range("--max-queue", 0, 4096, [&](int64_t n) { options.maxQueue = int(n); });
  cl.range("--connection-threads", 1, 1024,
           [&](int64_t n) { options.threads = int(n); });
  cl.range("--request-timeout", 1, 3600,
           [&](int64_t n) { options.requestTimeoutSeconds = int(n); },
           "seconds");
  cl.range("--idle-timeout", 1, 3600,
           [&](int64_t n) { options.idleTimeoutSeconds = int(n); }, "seconds");
  int status = 0;
  if (!cl.parse(argc, argv, &status))
    return status;
  if (bundlePath.empty())
    return cl.fail("no bundle (see --help)");
  // A header value cannot carry it intact (httplib trims white space).
  if (options.apiKey.find_first_of(" \t\r\n") != std::string::npos)
    return cl.fail("the API key must not contain white space");
  std::string invalid = pccx::serve::checkRequestDefaults(options.defaults);
  if (!invalid.empty())
    return cl.fail(invalid);
  if (options.modelName.empty()) {
    std::string name = bundlePath.substr(bundlePath.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".pccx") == 0)
      name.resize(name.size() - 5);
    options.modelName = name;
  }

  std::string error;
  if (!pccx::device::checkDeviceOptions(device.name, device.options, &error))
    return cl.fail(error);
  // Loading reads and checks the whole bundle (seconds for E2B from a
  // page cache, far longer from a board's SD card): the port answers 503
  // meanwhile (a busy one is reported now, not after), and the log says
  // how long it took, before the "listening on" line.
  const auto loadStart = std::chrono::steady_clock::now();
  pccx::serve::LoadingServer loading(options.modelName);
  const int loadingPort = loading.start(options.host, options.port, &error);
  if (loadingPort < 0)
    return cl.fail(error);
  options.port = loadingPort;
  if (options.logRequests)
    pccx::serve::logLine("pccx-serve: loading " + bundlePath + " (http://" +
                         options.host + ":" + std::to_string(loadingPort) +
                         " answers 503 until it is ready)\n");
  auto model = pccx::exec::Model::load(bundlePath, &error);
  if (!model)
    return cl.fail(error);
  size_t tokBytes = 0;
  const uint8_t *tok = model->tokenizer(&tokBytes);
  if (!tok)
    return cl.fail(bundlePath + " carries no tokenizer; the server needs "
                                "one (compile with a tokenizer.model)");
  auto tokenizer = pccx::Tokenizer::load(tok, tokBytes, &error);
  if (!tokenizer)
    return cl.fail(error);
  pccx::bundle::ChatTemplate chat =
      pccx::bundle::chatTemplateOf(model->bundle().manifest());
  options.chatTemplateSource = "bundle";
  if (!templatePath.empty()) {
    if (!readChatTemplate(templatePath, &chat, &error))
      return cl.fail(error);
    options.chatTemplateSource = "file";
  }
  // A template the server does not interpret is not the one in use.
  if (chat.source == pccx::bundle::ChatTemplate::Source::Bundle)
    options.chatTemplate = chat.text;
  auto format = pccx::app::ChatFormat::create(*tokenizer, chat,
                                              model->bosToken(), &error);
  if (!format)
    return cl.fail(error);
  options.modelPath = bundlePath.substr(bundlePath.find_last_of('/') + 1);
  format->setMarkersInText(markersInText);
  // The chat page shows it (GET /v1/model-card).
  std::ostringstream card;
  pccx::bundle::printModelCard(model->bundle(), card);
  options.modelCard = card.str();
  auto dev = pccx::device::openDevice(device.name, device.options,
                                      model->target(), &error);
  if (!dev)
    return cl.fail(error);
  pccx::exec::Session session(*model, std::move(dev));
  session.setHostThreads(unsigned(device.hostThreads));
  if (hasCtxSize && !session.setContextSize(ctxSize, &error))
    return cl.fail("--ctx-size: " + error);
  if (draftMethod == "ngram") {
    if (options.parallel > 1)
      return cl.fail("--draft applies with --parallel 1 (drafts are verified "
                     "with the batch rows the other sequences would take)");
    if (std::min(session.batchRows(), model->prefillRows()) < 2)
      return cl.fail(bundlePath + " has no multi-row decode program to "
                                  "verify drafts with; compile it with "
                                  "--decode-batch 2 or more");
    options.draftTokens = draftTokens;
  }
  if (options.parallel > 1 && session.batchRows() < options.parallel)
    pccx::serve::logLine(
        "pccx-serve: note: " + bundlePath +
        (session.batchRows() > 1
             ? " decodes at most " + std::to_string(session.batchRows()) +
                   " sequences per pass over the weights"
             : std::string(" has no batch program: its sequences are "
                           "interleaved but decoded one by one")) +
        " (compile with --decode-batch " + std::to_string(options.parallel) +
        ")\n");

  // SIGTERM and SIGINT are taken by one thread that stops the server; the
  // server's threads (created after this) never see them.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  pccx::serve::Server server(session, *model, *tokenizer, *format, options);
  loading.stop();
  int port = server.bind(&error);
  if (port < 0)
    return cl.fail(error);
  if (options.logRequests) {
    char loaded[160];
    std::snprintf(
        loaded, sizeof loaded,
        "pccx-serve: loaded %.1f MiB in %.2f s\n",
        double(model->bundle().fileSize()) / (1 << 20),
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      loadStart)
            .count());
    pccx::serve::logLine(loaded);
  }
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    if (signal == 0) // woken to end (the server stopped on its own)
      return;
    pccx::serve::logLine(std::string("pccx-serve: ") +
        (signal == SIGTERM ? "SIGTERM" : "SIGINT") + ": stopping\n");
    server.stop();
  });
  std::cout << "pccx-serve: listening on http://" << options.host << ":" << port
            << " (model " << options.modelName << ", context "
            << session.capacity() << " tokens, " << device.name << ", "
            << pccx::sim::numericsName(session.device().numerics())
            << " numerics)"
            << std::endl;
  if (options.host != "127.0.0.1" && options.host != "localhost" &&
      options.host != "::1" && options.apiKey.empty())
    pccx::serve::logLine(
        "pccx-serve: warning: listening on " + options.host +
        " without --api-key: every machine that reaches it can use the "
        "model\n");
  bool ran = server.run();
  if (stopper.joinable()) {
    pthread_kill(stopper.native_handle(), SIGTERM); // no-op if it returned
    stopper.join();
  }
  if (!ran)
    return cl.fail("the server stopped with an error");
  pccx::serve::logLine("pccx-serve: stopped\n");
  return 0;
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-serve",
                                  [&] { return run(argc, argv); });
}
