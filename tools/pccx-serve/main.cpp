//===- main.cpp - pccx-serve ------------------------------------*- C++ -*-===//
//
// Serves a .pccx bundle over HTTP with OpenAI's API. The server is
// runtime/serve; this file reads the command line, opens the model and
// turns SIGTERM/SIGINT into a graceful stop.
//
//===----------------------------------------------------------------------===//

#include "hw/support/InputFile.h"
#include "runtime/devices/Devices.h"
#include "runtime/serve/Server.h"
#include "tools/common/CommandLine.h"
#include "tools/common/DeviceFlags.h"
#include "tools/common/GuardedMain.h"

#include <csignal>
#include <iostream>
#include <pthread.h>
#include <thread>

namespace {

/// An API key file holds one short line.
constexpr uint64_t kMaxApiKeyFileBytes = 4096;

// The DEVICE section between the two parts comes from the device registry.
const char kHelpBeforeDevice[] =
    R"(USAGE: pccx-serve MODEL.pccx [options]

Serves one compiled Gemma 3n bundle with OpenAI's HTTP API:
  POST /v1/completions        a prompt (string or token ids) continued
  POST /v1/chat/completions   messages in Gemma's chat template
                              ("stream": true sends server-sent events)
  GET  /v1/models             the one model
  GET  /health                status, queue length, context length
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
  --model-name NAME        the model id clients use (default: the bundle's
                           file name without .pccx)
  --api-key KEY            every /v1/* request must carry "Authorization:
                           Bearer KEY", else 401 (/health stays open)
  --api-key-file FILE      the same, with the key read from FILE (one
                           trailing newline dropped), so that it is not on
                           the command line
  --cors-origin ORIGIN     lets web pages from ORIGIN (e.g.
                           http://localhost:3000; repeatable; * for any)
                           call the API: CORS preflights are answered and
                           responses carry Access-Control-Allow-Origin
                           (default: no CORS headers)

DEVICE:
)";

const char kHelpAfterDevice[] = R"(
LIMITS:
  --max-body-bytes N       larger request bodies get 413 (default 1048576)
  --max-tokens N           largest max_tokens a request may ask (default
                           1024); prompt + reply must also fit the
                           bundle's context (400 context_length_exceeded)
  --parallel N             requests generated at once (default 1): with a
                           bundle compiled with --decode-batch, up to that
                           many share each pass over the weights; requests
                           join and leave between steps (continuous
                           batching), a newcomer's prompt runs in chunks
                           between the others' steps, and each slot keeps
                           its KV cache for the next request that shares a
                           prefix with its tokens (docs/serving.md)
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

} // namespace

static int run(int argc, char **argv) {
  std::string bundlePath, draftMethod = "none";
  int64_t draftTokens = 3;
  bool markersInText = false;
  pccx::tools::DeviceChoice device;
  pccx::serve::ServeOptions options;
  pccx::tools::CommandLine cl("pccx-serve", argc, argv);
  while (cl.next()) {
    const std::string &a = cl.arg();
    if (a == "-h" || a == "--help") {
      std::cout << kHelpBeforeDevice << pccx::device::deviceHelp()
                << kHelpAfterDevice;
      return 0;
    } else if (cl.is("--host")) {
      options.host = cl.value();
    } else if (cl.is("--port")) {
      int64_t port = cl.count();
      if (port > 65535)
        return cl.fail("--port must be at most 65535");
      options.port = int(port);
    } else if (cl.is("--model-name")) {
      options.modelName = cl.value();
      if (options.modelName.empty())
        return cl.fail("--model-name must not be empty");
    } else if (cl.is("--api-key")) {
      options.apiKey = cl.value();
      if (options.apiKey.empty())
        return cl.fail("--api-key must not be empty");
    } else if (cl.is("--api-key-file")) {
      std::string path = cl.value(), error;
      if (!pccx::support::readInputFile(path, kMaxApiKeyFileBytes,
                                        &options.apiKey, &error))
        return cl.fail(error);
      // The newline an editor or `echo` leaves is not part of the key.
      if (!options.apiKey.empty() && options.apiKey.back() == '\n')
        options.apiKey.pop_back();
      if (!options.apiKey.empty() && options.apiKey.back() == '\r')
        options.apiKey.pop_back();
      if (options.apiKey.empty())
        return cl.fail("--api-key-file: " + path + " holds no key");
    } else if (cl.is("--cors-origin")) {
      std::string origin = cl.value();
      if (origin.empty())
        return cl.fail("--cors-origin must not be empty");
      options.corsOrigins.push_back(origin);
    } else if (pccx::tools::takeDeviceFlag(cl, &device)) {
    } else if (cl.is("--max-body-bytes")) {
      options.maxBodyBytes = size_t(cl.count());
    } else if (cl.is("--max-tokens")) {
      options.limits.maxTokens = cl.count();
      if (options.limits.maxTokens < 1)
        return cl.fail("--max-tokens must be at least 1");
    } else if (a == "--markers-in-text") {
      markersInText = true;
    } else if (a == "--quiet") {
      options.logRequests = false;
    } else if (cl.is("--parallel")) {
      int64_t n = cl.count();
      if (n < 1 || n > 256)
        return cl.fail("--parallel must be between 1 and 256");
      options.parallel = int(n);
    } else if (a == "--context-shift") {
      options.contextShift = true;
    } else if (cl.is("--draft")) {
      draftMethod = cl.value();
      if (draftMethod != "ngram" && draftMethod != "none")
        return cl.fail("--draft must be ngram or none, got '" + draftMethod +
                       "'");
    } else if (cl.is("--draft-tokens")) {
      draftTokens = cl.count();
      if (draftTokens < 1 || draftTokens > 255)
        return cl.fail("--draft-tokens must be between 1 and 255");
    } else if (cl.is("--max-queue")) {
      int64_t n = cl.count();
      if (n > 4096)
        return cl.fail("--max-queue must be at most 4096");
      options.maxQueue = int(n);
    } else if (cl.is("--connection-threads")) {
      int64_t n = cl.count();
      if (n < 1 || n > 1024)
        return cl.fail("--connection-threads must be between 1 and 1024");
      options.threads = int(n);
    } else if (cl.is("--request-timeout")) {
      int64_t n = cl.count();
      if (n < 1 || n > 3600)
        return cl.fail("--request-timeout must be between 1 and 3600 seconds");
      options.requestTimeoutSeconds = int(n);
    } else if (cl.is("--idle-timeout")) {
      int64_t n = cl.count();
      if (n < 1 || n > 3600)
        return cl.fail("--idle-timeout must be between 1 and 3600 seconds");
      options.idleTimeoutSeconds = int(n);
    } else if (!cl.positional(&bundlePath, "bundle")) {
      return 1;
    }
  }
  if (bundlePath.empty())
    return cl.fail("no bundle (see --help)");
  // A header value cannot carry it intact (httplib trims white space).
  if (options.apiKey.find_first_of(" \t\r\n") != std::string::npos)
    return cl.fail("the API key must not contain white space");
  if (options.modelName.empty()) {
    std::string name = bundlePath.substr(bundlePath.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".pccx") == 0)
      name.resize(name.size() - 5);
    options.modelName = name;
  }

  std::string error;
  if (!pccx::device::checkDeviceOptions(device.name, device.options, &error))
    return cl.fail(error);
  auto model = pccx::exec::Model::load(bundlePath, &error);
  if (!model)
    return cl.fail(error);
  size_t tokBytes = 0;
  const uint8_t *tok = model->tokenizer(&tokBytes);
  if (!tok)
    return cl.fail(bundlePath + " carries no tokenizer; the server needs "
                                "one (compile with a tokenizer.model)");
  auto tokenizer = pccx::app::Tokenizer::load(tok, tokBytes, &error);
  if (!tokenizer)
    return cl.fail(error);
  auto format = pccx::app::ChatFormat::create(
      *tokenizer, pccx::bundle::chatTemplateOf(model->bundle().manifest()),
      model->bosToken(), &error);
  if (!format)
    return cl.fail(error);
  format->setMarkersInText(markersInText);
  auto dev = pccx::device::openDevice(device.name, device.options,
                                      model->target(), &error);
  if (!dev)
    return cl.fail(error);
  pccx::exec::Session session(*model, std::move(dev));
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
  int port = server.bind(&error);
  if (port < 0)
    return cl.fail(error);
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
            << session.capacity() << " tokens, " << device.name << ")"
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
