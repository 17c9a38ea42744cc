//===- main.cpp - pccx-run --------------------------------------*- C++ -*-===//
//
// Runs a .pccx bundle on the functional simulator or the KV260 overlay. The
// modes are library calls of runtime/app/RunModes.h (over runtime/exec, and
// for --compare-reference the float reference in runtime/reference), and
// runtime/app/RunRequest.h says which one the options ask for and refuses
// those that conflict; this file reads the command line, the prompt and the
// device.
//
//===----------------------------------------------------------------------===//

#include "hw/support/InputFile.h"
#include "runtime/app/Structured.h"
#include "runtime/app/RunModes.h"
#include "runtime/app/RunRequest.h"
#include "runtime/devices/Devices.h"
#include "tools/common/CommandLine.h"
#include "tools/common/DeviceFlags.h"
#include "tools/common/GuardedMain.h"
#include "tools/common/SamplingFlags.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <unistd.h>

namespace {

// The help in parts: --host-threads comes from tools/common/DeviceFlags.h,
// the DEVICE section from the device registry.
const char kHelpBeforeDevice[] =
    R"(USAGE: pccx-run MODEL.pccx (--prompt TEXT | --tokens IDS) [options]
       pccx-run MODEL.pccx --chat [--chat-file FILE] [options]
       pccx-run MODEL.pccx --perplexity FILE [--ctx N] [--stride S] [options]

Runs a compiled Gemma 3n bundle: the prompt through the prefill program
(in steps of its rows; the rest and every generated token through the
decode program), then generation until --max-new-tokens or a stop token.
With --perplexity it scores a text file instead.

CHAT:
  --chat                   a conversation in Gemma's turn template (the
                           bundle's chat template when it is Gemma's
                           layout, the built-in one otherwise): one turn
                           per input line, replies streamed, the KV cache
                           kept between turns. Interactive on a terminal
                           (Ctrl-C stops a reply, Ctrl-D or Ctrl-C twice
                           exits), else turns are read from stdin. Lines
                           starting with / are the console's commands
                           (/help, /reset, /exit), never sent; a line
                           ending in \ continues the message; // sends a
                           line that starts with /. Replies stop at
                           <end_of_turn>, the stop tokens or
                           --max-new-tokens (default 256)
  --chat-file FILE         read the turns from FILE (implies --chat)
  --system TEXT            system prompt (put before the first turn, as
                           Gemma's template does)
  -c, --ctx-size N         hold at most N positions (default: the bundle's
                           --max-seq-len): less host memory for the KV
                           caches; generation and chat stop, or shift, at
                           N (llama.cpp's -c; --ctx is --perplexity's
                           window)
  --context-shift          when a turn would not fit the context (with
                           room for min(--max-new-tokens, context/4) reply
                           tokens), drop the oldest exchanges after the
                           first (which holds the system prompt) instead of
                           refusing the turn
  --show-special           print the special tokens of replies (control
                           and user-defined pieces such as <start_of_turn>,
                           <eos>, and the <end_of_turn> that ends a reply)
                           as their pieces; by default they are left out
                           of the printed text (--json's reply_text too)
  --history FILE           on a terminal with line editing: read the
                           earlier lines from FILE (if it exists) and keep
                           the session's in it (e.g.
                           ~/.local/state/pccx/chat_history). Without it
                           the history lasts as long as the session.
                           Line editing (libedit: arrows, Emacs keys,
                           Up/Ctrl-P for earlier lines) is on when stdin
                           and stdout are a terminal that reports its
                           width and TERM is not dumb, in builds with
                           libedit

INPUT:
  -p, --prompt TEXT        text, tokenized with the bundle's SentencePiece
                           model; the generated text is streamed to stdout
  --tokens IDS             comma-separated token ids (generated ids are
                           printed comma-separated)
  --no-bos                 do not prepend the BOS token to --prompt

SEVERAL SEQUENCES (docs/serving.md):
  --batch-tokens LISTS     several prompts of token ids, ';' between them
                           (e.g. "2,10,11;2,40"): generated together, each
                           as it would be alone; one line of ids per prompt
  --batch-prompts FILE     several text prompts, one per line of FILE; one
                           line of text per prompt
  --parallel N             sequences decoded together (default: all of
                           them); with a bundle compiled with
                           --decode-batch B, up to B share each pass over
                           the weights. Sequences join as others finish

DEVICE:
)";

const char kHelpAfterDevice[] = R"(
GENERATION:
  -n, --max-new-tokens N   tokens to generate (default 32)
  --temperature T, --temp T
                           0 (default) is greedy
  --top-k K                keep the K most likely tokens (0: off)
  --top-p P                keep the smallest set with mass >= P (1: off)
  --min-p P                keep the ids at least P times as likely as the
                           most likely one (0: off; after top-k and top-p)
  --repetition-penalty R, --repeat-penalty R
                           divide (multiply, if negative) the logits of
                           every id seen so far by R (1: off)
  --presence-penalty A     subtract A from the logit of every id seen so far
                           (OpenAI's; -2..2, 0: off)
  --frequency-penalty F    subtract F times its count from the logit of
                           every id seen so far (OpenAI's; -2..2, 0: off)
  -s, --seed S             sampling seed (default 0)
  --stop-tokens IDS        stop after any of these ids (default: the
                           config's eos_token_id)
  --json-schema FILE       structured output: every token is chosen among
                           those that keep the text a prefix of a JSON
                           document valid under the schema in FILE (the
                           subset in docs/serving.md), and the reply ends
                           (with a stop token) only once it is complete.
                           Prints the mask's cost per token. With --chat:
                           each turn's reply
  --json-object            the same for any JSON object
)";

// After --host-threads (tools/common/DeviceFlags.h).
const char kHelpAfterHostThreads[] = R"(  --decode-only            feed the prompt token by token through the decode
                           program (the logits rows are the same positions)
  --draft METHOD           speculative decoding: ngram (drafts the tokens
                           that followed the latest earlier occurrence of
                           the last 1-3 tokens, verified in one multi-row
                           step; needs a bundle compiled with
                           --decode-batch 2 or more) or none (default).
                           Greedy output is the same as without it;
                           sampled output keeps its distribution. Prints
                           the acceptance rate
  --draft-tokens K         tokens drafted per step, at most (default 3;
                           trimmed so that the step fills a batch program:
                           its rows - 1)

PERPLEXITY:
  --perplexity FILE        tokenize FILE with the bundle's tokenizer (no BOS;
                           the whole file as one text) and print its
                           perplexity +/- standard error. Windows of --ctx
                           positions each start with BOS; window w feeds text
                           tokens [w*S, w*S + ctx - 1); every text token is
                           scored exactly once, from the row before it, in
                           the first window that reaches it (window 0 scores
                           all its tokens, later windows only their last S,
                           which have at least ctx - 1 - S tokens of
                           context). With --compare-reference DIR, the float
                           reference on DIR's original weights scores the
                           same windows and the perplexity change, mean KL
                           divergence (reference || bundle) and top-1
                           agreement are printed too
  --ctx N                  positions per window, BOS included (default: 128,
                           or the bundle's KV cache positions if fewer)
  --stride S               text tokens between window starts (default: ctx/2)
  --max-windows N          score only the first N windows (default: all)

OUTPUT:
  --dump-logits FILE       float32 little-endian rows of vocab_size logits,
                           one per consumed token position (prompt
                           positions included), in order; prints the count
  --compare-reference DIR  run the float reference on checkpoint DIR beside
                           it, with the bundle's weights, and print the
                           agreement figures (and the cost of quantization
                           against the original weights); the simulator then
                           runs hardware numerics unless --numerics is given;
                           a bundle compiled with --matformer-slice is
                           compared with the same slice of DIR's model
  --matformer-slice S      with --compare-reference: compare with this
                           MatFormer slice of DIR's model instead (a
                           published name or a slice file, as pccx-compile
                           takes it)
  --json                   one JSON object on stdout at the end (token ids,
                           row count, numerics, device, timing, figures);
                           with --chat, one per turn (fed and reply token
                           ids, reused cache positions, position after,
                           reply text, what ended it)
  -h, --help               show this help
  --version                print the version and exit
)";

} // namespace

namespace {

using pccx::app::RunMode;
using pccx::app::RunRequest;

/// Declares every option of pccx-run, filling `request`, `device` and
/// `seed` (an unsigned seed the option layer reads as a count).
void declareOptions(pccx::tools::CommandLine &cl, RunRequest &request,
                    pccx::tools::DeviceChoice &device, int64_t &seed) {
  pccx::app::GenerateOptions &gen = request.generate;
  cl.help([] {
    return kHelpBeforeDevice + pccx::device::deviceHelp() + kHelpAfterDevice +
           pccx::tools::kHostThreadsHelp + kHelpAfterHostThreads;
  });
  cl.positional("bundle", &request.bundlePath);
  cl.text("-p, --prompt", &request.prompt, &request.hasPrompt);
  cl.flag("--chat", &request.chat);
  cl.text("--chat-file", &request.chatFile, &request.chat);
  cl.flag("--context-shift", &request.contextShift);
  cl.count("-c, --ctx-size", &request.ctxSize, &request.hasCtxSize);
  cl.text("--system", &request.systemPrompt);
  cl.flag("--show-special", &request.showSpecial);
  cl.value("--history", [&request](const std::string &path) {
    request.historyPath = path;
    return path.empty() ? std::string("--history needs a file name")
                        : std::string();
  });
  cl.text("--tokens", &request.tokens);
  cl.flag("--no-bos", &request.noBos);
  pccx::tools::declareDeviceOptions(cl, &device);
  cl.count("-n, --max-new-tokens", &gen.maxNewTokens,
           &request.hasMaxNewTokens);
  pccx::tools::declareSamplingOptions(cl, &gen.sampling);
  cl.count("-s, --seed", &seed);
  cl.text("--stop-tokens", &request.stopTokens, &request.hasStopTokens);
  cl.text("--json-schema", &request.jsonSchemaPath);
  cl.flag("--json-object", &request.jsonObject);
  cl.flag("--decode-only", &gen.decodeOnly);
  cl.text("--draft", &request.draftMethod);
  cl.count("--draft-tokens", &request.draftTokens);
  cl.text("--batch-tokens", &request.batchTokens);
  cl.text("--batch-prompts", &request.batchPromptsPath);
  // 0 stands for "all of them" only when the option is absent.
  cl.range("--parallel", 1, 256,
           [&request](int64_t n) { request.parallel = n; });
  cl.text("--dump-logits", &request.dumpPath);
  cl.text("--compare-reference", &request.referenceDir);
  cl.text("--matformer-slice", &request.referenceSlice);
  cl.text("--perplexity", &request.perplexityPath);
  cl.count("--ctx", &request.perplexity.ctx);
  cl.count("--stride", &request.perplexity.stride);
  cl.count("--max-windows", &request.perplexity.maxWindows);
  cl.flag("--json", &request.json);
}

/// The bundle's tokenizer into `out`, which stays null when it has none.
bool loadTokenizer(const pccx::exec::Model &model,
                   std::unique_ptr<pccx::Tokenizer> *out,
                   std::string *error) {
  size_t bytes = 0;
  if (const uint8_t *data = model.tokenizer(&bytes)) {
    *out = pccx::Tokenizer::load(data, bytes, error);
    if (!*out)
      return false;
  }
  return true;
}

/// The ids of one sequence: the --perplexity text, the --prompt (after
/// BOS) or the --tokens; none for the other modes.
bool readInputIds(const RunRequest &request, const pccx::exec::Model &model,
                  const pccx::Tokenizer *tokenizer,
                  std::vector<int32_t> *ids, std::string *error) {
  if (!request.perplexityPath.empty()) {
    std::string text; // an empty file is refused later, for its length
    if (!pccx::support::readInputFile(request.perplexityPath,
                                      pccx::support::kMaxDataFileBytes, &text,
                                      error))
      return false;
    if (!tokenizer) {
      *error = request.bundlePath + " carries no tokenizer; --perplexity "
                                    "needs one (compile with a "
                                    "tokenizer.model)";
      return false;
    }
    if (!tokenizer->encode(text, ids, error)) {
      *error = request.perplexityPath + ": " + *error;
      return false;
    }
    return true;
  }
  if (request.hasPrompt) {
    if (!tokenizer) {
      *error = request.bundlePath + " carries no tokenizer; use --tokens (or "
                                    "compile with a tokenizer.model)";
      return false;
    }
    if (!request.noBos && model.bosToken() >= 0)
      ids->push_back(model.bosToken());
    std::vector<int32_t> text;
    if (!tokenizer->encode(request.prompt, &text, error))
      return false;
    ids->insert(ids->end(), text.begin(), text.end());
    return true;
  }
  return pccx::tools::parseTokenIds(request.tokens, "--tokens", ids, error);
}

/// --batch-tokens: the prompts between the ';'.
bool splitBatchTokens(const std::string &lists,
                      std::vector<std::vector<int32_t>> *prompts,
                      std::string *error) {
  size_t from = 0;
  for (;;) {
    const size_t end = lists.find(';', from);
    std::vector<int32_t> one;
    if (!pccx::tools::parseTokenIds(lists.substr(from, end == std::string::npos
                                                           ? std::string::npos
                                                           : end - from),
                                    "--batch-tokens", &one, error)) {
      *error = "prompt " + std::to_string(prompts->size()) + ": " + *error;
      return false;
    }
    prompts->push_back(std::move(one));
    if (end == std::string::npos)
      return true;
    from = end + 1;
  }
}

/// --batch-prompts: one prompt per non-empty line of the file, each after
/// BOS.
bool readBatchPromptFile(const RunRequest &request,
                         const pccx::exec::Model &model,
                         const pccx::Tokenizer *tokenizer,
                         std::vector<std::vector<int32_t>> *prompts,
                         std::string *error) {
  const std::string &path = request.batchPromptsPath;
  std::string text;
  if (!pccx::support::readInputFile(path, pccx::support::kMaxDataFileBytes,
                                    &text, error))
    return false;
  if (!tokenizer) {
    *error = request.bundlePath + " carries no tokenizer; use --batch-tokens "
                                  "(or compile with a tokenizer.model)";
    return false;
  }
  size_t from = 0, line = 0;
  while (from < text.size()) {
    size_t end = text.find('\n', from);
    if (end == std::string::npos)
      end = text.size();
    const std::string one = text.substr(from, end - from);
    from = end + 1;
    ++line;
    if (one.empty())
      continue;
    // Refused by its length before it is tokenized (which takes far
    // more memory than the text).
    if (one.size() > tokenizer->maxTextBytes(model.maxSeqLen())) {
      *error = path + ":" + std::to_string(line) + ": the prompt's " +
               std::to_string(one.size()) +
               " bytes cannot fit the model's context of " +
               std::to_string(model.maxSeqLen()) + " tokens";
      return false;
    }
    std::vector<int32_t> ids, body;
    if (!request.noBos && model.bosToken() >= 0)
      ids.push_back(model.bosToken());
    if (!tokenizer->encode(one, &body, error)) {
      *error = path + ":" + std::to_string(line) + ": " + *error;
      return false;
    }
    ids.insert(ids.end(), body.begin(), body.end());
    prompts->push_back(std::move(ids));
  }
  if (prompts->empty()) {
    *error = path + " has no prompt (one per line)";
    return false;
  }
  return true;
}

bool runBatch(const RunRequest &request, const pccx::exec::Model &model,
              pccx::exec::Session &session,
              const pccx::Tokenizer *tokenizer,
              const pccx::app::GenerateOptions &gen, std::string *error) {
  std::vector<std::vector<int32_t>> prompts;
  if (!request.batchTokens.empty()
          ? !splitBatchTokens(request.batchTokens, &prompts, error)
          : !readBatchPromptFile(request, model, tokenizer, &prompts, error))
    return false;
  pccx::app::BatchModeOptions options;
  options.generate = gen;
  options.parallel =
      request.parallel ? int(request.parallel) : int(prompts.size());
  options.text = !request.batchPromptsPath.empty();
  options.dumpPath = request.dumpPath;
  options.json = request.json;
  return pccx::app::runBatchMode(session, tokenizer, prompts, options,
                                 std::cout, std::cerr, error);
}

/// The chat console's options: replies default to 256 tokens.
pccx::app::ChatModeOptions chatOptions(const RunRequest &request,
                                       const pccx::app::GenerateOptions &gen) {
  pccx::app::ChatModeOptions options;
  options.systemPrompt = request.systemPrompt;
  options.chatFile = request.chatFile;
  options.contextShift = request.contextShift;
  options.console.reply.sampling = gen.sampling;
  options.console.reply.maxTokens =
      request.hasMaxNewTokens ? gen.maxNewTokens : 256;
  options.console.reply.stopTokens = gen.stopTokens;
  options.console.reply.decodeOnly = gen.decodeOnly;
  options.console.json = request.json;
  options.console.historyPath = request.historyPath;
  options.console.reply.special = request.showSpecial
                                      ? pccx::app::SpecialTokens::Shown
                                      : pccx::app::SpecialTokens::Hidden;
  return options;
}

pccx::app::GenerateModeOptions
generateModeOptions(const RunRequest &request,
                    const pccx::app::GenerateOptions &gen,
                    const std::string &deviceName) {
  pccx::app::GenerateModeOptions options;
  options.generate = gen;
  options.streamText = request.hasPrompt;
  options.dumpPath = request.dumpPath;
  options.referenceDir = request.referenceDir;
  options.referenceSlice = request.referenceSlice;
  options.json = request.json;
  options.deviceName = deviceName;
  return options;
}

} // namespace

static int run(int argc, char **argv) {
  RunRequest request;
  pccx::tools::DeviceChoice device;
  int64_t seed = 0;
  pccx::tools::CommandLine cl("pccx-run");
  auto fail = [&](const std::string &message) { return cl.fail(message); };
  declareOptions(cl, request, device, seed);
  int status = 0;
  if (!cl.parse(argc, argv, &status))
    return status;
  request.generate.sampling.seed = uint64_t(seed);
  std::string error = pccx::app::checkRunRequest(request);
  if (!error.empty())
    return fail(error);
  if (!request.referenceDir.empty())
    pccx::tools::defaultSimNumerics(&device, "hardware");
  if (!pccx::device::checkDeviceOptions(device.name, device.options, &error))
    return fail(error);
  auto model = pccx::exec::Model::load(request.bundlePath, &error);
  if (!model)
    return fail(error);

  // Prompt tokens.
  std::unique_ptr<pccx::Tokenizer> tokenizer;
  if (!loadTokenizer(*model, &tokenizer, &error))
    return fail(error);
  if (request.chat && !tokenizer)
    return fail(request.bundlePath + " carries no tokenizer; --chat needs "
                                     "one (compile with a tokenizer.model)");
  std::vector<int32_t> ids;
  if (!readInputIds(request, *model, tokenizer.get(), &ids, &error))
    return fail(error);
  pccx::app::GenerateOptions gen = request.generateOptions();
  std::vector<int32_t> stops;
  if (!request.hasStopTokens)
    stops = model->eosTokens();
  else if (!pccx::tools::parseTokenIds(request.stopTokens, "--stop-tokens",
                                       &stops, &error))
    return fail(error);
  gen.stopTokens.insert(stops.begin(), stops.end());
  // Structured output: the constraint of the reply (a chat: of each
  // turn's reply, which also ends at <end_of_turn>).
  std::function<std::shared_ptr<pccx::grammar::JsonConstraint>()> newConstraint;
  if (!request.jsonSchemaPath.empty() || request.jsonObject) {
    if (!tokenizer)
      return fail(request.bundlePath + " carries no tokenizer; structured "
                                       "output needs one");
    auto schema = request.jsonObject
                      ? pccx::grammar::anyObjectSchema()
                      : pccx::app::loadJsonSchema(request.jsonSchemaPath,
                                                  &error);
    if (!schema)
      return fail(error);
    std::set<int32_t> ends = gen.stopTokens;
    if (int32_t eot = tokenizer->pieceId("<end_of_turn>");
        request.chat && eot >= 0)
      ends.insert(eot);
    auto vocabulary =
        pccx::app::StructuredVocabulary(*tokenizer).get();
    gen.constraint =
        pccx::app::makeJsonConstraint(schema, vocabulary, ends, &error);
    if (!gen.constraint)
      return fail(error);
    newConstraint = [schema, vocabulary, ends] {
      return std::make_shared<pccx::grammar::JsonConstraint>(schema,
                                                             vocabulary, ends);
    };
  }

  // Device.
  auto dev = pccx::device::openDevice(device.name, device.options,
                                      model->target(), &error);
  if (!dev)
    return fail(error);
  pccx::exec::Session session(*model, std::move(dev));
  session.setHostThreads(unsigned(device.hostThreads));
  if (request.hasCtxSize && !session.setContextSize(request.ctxSize, &error))
    return fail("--ctx-size: " + error);
  if (gen.draftTokens > 0 &&
      std::min(session.batchRows(), model->prefillRows()) < 2)
    return fail(request.bundlePath + " has no multi-row decode program to "
                                     "verify drafts with; compile it with "
                                     "--decode-batch 2 or more");

  switch (request.mode()) {
  case RunMode::Batch:
    if (!runBatch(request, *model, session, tokenizer.get(), gen, &error))
      return fail(error);
    return 0;
  case RunMode::Perplexity: {
    const bool showProgress = !request.json && isatty(STDERR_FILENO);
    if (!pccx::app::runPerplexityMode(*model, session, ids,
                                      request.referenceDir,
                                      request.referenceSlice,
                                      request.perplexity,
                                      request.noBos, request.json, showProgress,
                                      std::cout, std::cerr, &error))
      return fail(error);
    return 0;
  }
  case RunMode::Chat: {
    pccx::app::ChatModeOptions options = chatOptions(request, gen);
    options.console.newConstraint = newConstraint;
    int chatStatus = pccx::app::runChatMode(*model, session, *tokenizer,
                                            options, std::cout, std::cerr,
                                            &error);
    return chatStatus < 0 ? fail(error) : chatStatus;
  }
  case RunMode::Generate:
    if (!pccx::app::runGenerateMode(
            *model, session, tokenizer.get(), ids,
            generateModeOptions(request, gen, device.name), std::cout,
            std::cerr, &error))
      return fail(error);
    return 0;
  }
  return 0;
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-run", [&] { return run(argc, argv); });
}
