//===- main.cpp - pccx-run --------------------------------------*- C++ -*-===//
//
// Runs a .pccx bundle on the functional simulator or the KV260 overlay. The
// work is done by runtime/exec and runtime/app (and, for --compare-reference, by the float
// reference in runtime/reference); this file reads the command line.
//
//===----------------------------------------------------------------------===//

#include "runtime/import/Gemma3nConfig.h"
#include "runtime/reference/BundleWeights.h"
#include "hw/support/InputFile.h"
#include "hw/support/JsonText.h"
#include "hw/support/OutputFile.h"
#include "runtime/app/ChatConsole.h"
#include "runtime/reference/ReferenceCheckpoint.h"
#include "runtime/app/Generate.h"
#include "runtime/app/Perplexity.h"
#include "runtime/app/Tokenizer.h"
#include "runtime/devices/Devices.h"
#include "tools/common/CommandLine.h"
#include "tools/common/DeviceFlags.h"
#include "tools/common/GuardedMain.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

using nlohmann::json;

namespace {

// The DEVICE section between the two parts comes from the device registry.
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

INPUT:
  --prompt TEXT            text, tokenized with the bundle's SentencePiece
                           model; the generated text is streamed to stdout
  --tokens IDS             comma-separated token ids (generated ids are
                           printed comma-separated)
  --no-bos                 do not prepend the BOS token to --prompt

DEVICE:
)";

const char kHelpAfterDevice[] = R"(
GENERATION:
  --max-new-tokens N       tokens to generate (default 32)
  --temperature T          0 (default) is greedy
  --top-k K                keep the K most likely tokens (0: off)
  --top-p P                keep the smallest set with mass >= P (1: off)
  --min-p P                keep the ids at least P times as likely as the
                           most likely one (0: off; after top-k and top-p)
  --repetition-penalty R   divide (multiply, if negative) the logits of
                           every id seen so far by R (1: off)
  --presence-penalty A     subtract A from the logit of every id seen so far
                           (OpenAI's; -2..2, 0: off)
  --frequency-penalty F    subtract F times its count from the logit of
                           every id seen so far (OpenAI's; -2..2, 0: off)
  --seed S                 sampling seed (default 0)
  --stop-tokens IDS        stop after any of these ids (default: the
                           config's eos_token_id)
  --decode-only            feed the prompt token by token through the decode
                           program (the logits rows are the same positions)

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
                           agreement figures (and the cost of quantization against
                           the original weights)
  --json                   one JSON object on stdout at the end (token ids,
                           row count, numerics, device, timing, figures);
                           with --chat, one per turn (fed and reply token
                           ids, reused cache positions, position after,
                           reply text, what ended it)
  -h, --help               show this help
  --version                print the version and exit
)";

/// numerics.md figures between two sets of logits rows.
struct Agreement {
  double relMaxAbs = 0, cosine = 0;
  int64_t top1 = 0, rows = 0;
};

Agreement compare(const std::vector<float> &a, const std::vector<float> &ref,
                  int64_t vocab) {
  Agreement g;
  g.rows = int64_t(ref.size()) / vocab;
  double dot = 0, aa = 0, rr = 0;
  for (int64_t r = 0; r < g.rows; ++r) {
    const float *x = a.data() + r * vocab, *y = ref.data() + r * vocab;
    auto [lo, hi] = std::minmax_element(y, y + vocab);
    double range = double(*hi - *lo), worst = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      worst = std::max(worst, std::fabs(double(x[i]) - double(y[i])));
      dot += double(x[i]) * y[i];
      aa += double(x[i]) * x[i];
      rr += double(y[i]) * y[i];
    }
    g.relMaxAbs = std::max(g.relMaxAbs, range > 0 ? worst / range : worst);
    if (std::max_element(x, x + vocab) - x == std::max_element(y, y + vocab) - y)
      ++g.top1;
  }
  g.cosine = aa > 0 && rr > 0 ? dot / std::sqrt(aa * rr) : 0;
  return g;
}

json toJson(const Agreement &g) {
  return {{"rel_max_abs", g.relMaxAbs},
          {"cosine", g.cosine},
          {"top1_agree", g.top1},
          {"rows", g.rows}};
}

/// --perplexity: the bundle on `session` (and the float reference on the
/// original weights of `referenceDir`, if given) over the windows of `text`.
int runPerplexity(const pccx::tools::CommandLine &cl,
                  const pccx::exec::Model &model, pccx::exec::Session &session,
                  const std::vector<int32_t> &text,
                  const std::string &referenceDir,
                  pccx::app::PerplexityOptions options, bool noBos,
                  bool asJson) {
  std::string error;
  if (options.ctx < 0)
    options.ctx = std::min<int64_t>(128, session.capacity());
  if (options.stride < 0)
    options.stride = std::max<int64_t>(1, options.ctx / 2);
  if (options.ctx > session.capacity())
    return cl.fail("--ctx " + std::to_string(options.ctx) +
                   " exceeds the bundle's KV cache of " +
                   std::to_string(session.capacity()) +
                   " positions (compile with a larger --max-seq-len)");
  options.bos = noBos ? -1 : model.bosToken();
  pccx::app::LogitsFunction bundleLogits =
      [&](const std::vector<int32_t> &tokens, std::vector<float> *logits,
          std::string *why) {
        session.reset();
        return session.consume(tokens, false, logits, why);
      };
  std::unique_ptr<pccx::reference::WindowedReference> ref;
  pccx::app::LogitsFunction referenceLogits;
  if (!referenceDir.empty()) {
    ref = pccx::reference::WindowedReference::open(referenceDir, options.ctx,
                                                   &error);
    if (!ref)
      return cl.fail(error);
    if (ref->vocabSize() != model.vocabSize())
      return cl.fail(
          referenceDir + ": vocab_size " + std::to_string(ref->vocabSize()) +
          " differs from the bundle's " + std::to_string(model.vocabSize()));
    referenceLogits = [&](const std::vector<int32_t> &tokens,
                          std::vector<float> *logits, std::string *why) {
      return ref->logits(tokens, logits, why);
    };
  }
  const bool showProgress = !asJson && isatty(STDERR_FILENO);
  auto progress = [&](int64_t done, int64_t total) {
    if (showProgress)
      std::cerr << "\rpccx-run: window " << done << "/" << total
                << (done == total ? "\n" : "") << std::flush;
  };
  pccx::app::PerplexityFigures figures;
  if (!pccx::app::perplexity(text, options, model.vocabSize(), bundleLogits,
                             referenceLogits, &figures, &error, progress))
    return cl.fail(error);
  if (asJson)
    std::cout << pccx::app::perplexityJson(figures, options).dump() << "\n";
  else
    std::cout << pccx::app::formatPerplexity(figures, options);
  return 0;
}

} // namespace

static int run(int argc, char **argv) {
  std::string bundlePath, prompt, tokensText, dumpPath, referenceDir,
      perplexityPath, stopText;
  pccx::tools::DeviceChoice device;
  bool hasPrompt = false, noBos = false, asJson = false, hasStop = false,
       chat = false, hasMaxNew = false;
  std::string chatFile, systemPrompt;
  pccx::app::GenerateOptions gen;
  pccx::app::PerplexityOptions ppl;
  ppl.ctx = ppl.stride = -1; // defaults depend on the bundle
  pccx::tools::CommandLine cl("pccx-run", argc, argv);
  auto fail = [&](const std::string &message) { return cl.fail(message); };
  while (cl.next()) {
    const std::string &a = cl.arg();
    if (a == "-h" || a == "--help") {
      std::cout << kHelpBeforeDevice << pccx::device::deviceHelp()
                << kHelpAfterDevice;
      return 0;
    } else if (cl.is("--prompt")) {
      prompt = cl.value();
      hasPrompt = true;
    } else if (a == "--chat") {
      chat = true;
    } else if (cl.is("--chat-file")) {
      chatFile = cl.value();
      chat = true;
    } else if (cl.is("--system")) {
      systemPrompt = cl.value();
    } else if (cl.is("--tokens")) {
      tokensText = cl.value();
    } else if (a == "--no-bos") {
      noBos = true;
    } else if (pccx::tools::takeDeviceFlag(cl, &device)) {
    } else if (cl.is("--max-new-tokens")) {
      gen.maxNewTokens = cl.count();
      hasMaxNew = true;
    } else if (cl.is("--temperature")) {
      gen.sampling.temperature = cl.number();
    } else if (cl.is("--top-k")) {
      gen.sampling.topK = cl.count();
    } else if (cl.is("--top-p")) {
      gen.sampling.topP = cl.number();
    } else if (cl.is("--min-p")) {
      gen.sampling.minP = cl.number();
    } else if (cl.is("--presence-penalty")) {
      gen.sampling.presencePenalty = cl.number();
    } else if (cl.is("--frequency-penalty")) {
      gen.sampling.frequencyPenalty = cl.number();
    } else if (cl.is("--repetition-penalty")) {
      gen.sampling.repetitionPenalty = cl.number();
    } else if (cl.is("--seed")) {
      gen.sampling.seed = uint64_t(cl.count());
    } else if (cl.is("--stop-tokens")) {
      stopText = cl.value();
      hasStop = true;
    } else if (a == "--decode-only") {
      gen.decodeOnly = true;
    } else if (cl.is("--dump-logits")) {
      dumpPath = cl.value();
    } else if (cl.is("--compare-reference")) {
      referenceDir = cl.value();
    } else if (cl.is("--perplexity")) {
      perplexityPath = cl.value();
    } else if (cl.is("--ctx")) {
      ppl.ctx = cl.count();
    } else if (cl.is("--stride")) {
      ppl.stride = cl.count();
    } else if (cl.is("--max-windows")) {
      ppl.maxWindows = cl.count();
    } else if (a == "--json") {
      asJson = true;
    } else if (!cl.positional(&bundlePath, "bundle")) {
      return 1;
    }
  }
  if (bundlePath.empty())
    return fail("no bundle (see --help)");
  if (chat) {
    if (hasPrompt || !tokensText.empty() || !perplexityPath.empty())
      return fail("--chat reads its turns from the input; --prompt, "
                  "--tokens and --perplexity do not apply");
    if (!dumpPath.empty() || !referenceDir.empty())
      return fail("--dump-logits and --compare-reference do not apply to "
                  "--chat");
  } else if (!systemPrompt.empty()) {
    return fail("--system needs --chat");
  } else if (int(hasPrompt) + int(!tokensText.empty()) +
                 int(!perplexityPath.empty()) !=
             1) {
    return fail("give exactly one of --prompt, --tokens and --perplexity");
  }
  if (!perplexityPath.empty() && (!dumpPath.empty() || gen.decodeOnly))
    return fail("--dump-logits and --decode-only do not apply to "
                "--perplexity");
  std::string why = pccx::app::checkSamplingOptions(gen.sampling);
  if (!why.empty())
    return fail(why);
  std::string error;
  if (!pccx::device::checkDeviceOptions(device.name, device.options, &error))
    return fail(error);
  auto model = pccx::exec::Model::load(bundlePath, &error);
  if (!model)
    return fail(error);

  // Prompt tokens.
  std::unique_ptr<pccx::app::Tokenizer> tokenizer;
  size_t tokBytes = 0;
  if (const uint8_t *tok = model->tokenizer(&tokBytes)) {
    tokenizer = pccx::app::Tokenizer::load(tok, tokBytes, &error);
    if (!tokenizer)
      return fail(error);
  }
  if (chat && !tokenizer)
    return fail(bundlePath + " carries no tokenizer; --chat needs one "
                             "(compile with a tokenizer.model)");
  std::vector<int32_t> ids;
  if (!perplexityPath.empty()) {
    std::string text; // an empty file is refused below, for its length
    if (!pccx::support::readInputFile(perplexityPath,
                                      pccx::support::kMaxDataFileBytes, &text,
                                      &error))
      return fail(error);
    if (!tokenizer)
      return fail(bundlePath + " carries no tokenizer; --perplexity needs "
                               "one (compile with a tokenizer.model)");
    if (!tokenizer->encode(text, &ids, &error))
      return fail(perplexityPath + ": " + error);
  } else if (hasPrompt) {
    if (!tokenizer)
      return fail(bundlePath + " carries no tokenizer; use --tokens (or "
                               "compile with a tokenizer.model)");
    if (!noBos && model->bosToken() >= 0)
      ids.push_back(model->bosToken());
    std::vector<int32_t> text;
    if (!tokenizer->encode(prompt, &text, &error))
      return fail(error);
    ids.insert(ids.end(), text.begin(), text.end());
  } else if (!pccx::tools::parseTokenIds(tokensText, "--tokens", &ids,
                                         &error)) {
    return fail(error);
  }
  std::vector<int32_t> stops;
  if (hasStop) {
    if (!stopText.empty() && !pccx::tools::parseTokenIds(stopText, "--stop-tokens", &stops, &error))
      return fail(error);
  } else {
    stops = model->eosTokens();
  }
  gen.stopTokens.insert(stops.begin(), stops.end());

  // Device.
  auto dev = pccx::device::openDevice(device.name, device.options,
                                      model->target(), &error);
  if (!dev)
    return fail(error);
  const bool reference = dev->numerics() == pccx::sim::Numerics::Reference;
  const std::string numerics = reference ? "reference" : "hardware";
  pccx::exec::Session session(*model, std::move(dev));
  if (!perplexityPath.empty())
    return runPerplexity(cl, *model, session, ids, referenceDir, ppl, noBos,
                         asJson);

  if (chat) {
    auto chatTemplate =
        pccx::bundle::chatTemplateOf(model->bundle().manifest());
    auto format = pccx::app::ChatFormat::create(
        *tokenizer, chatTemplate, model->bosToken(), &error);
    if (!format)
      return fail(error);
    int input = 0;
    if (!chatFile.empty()) {
      input = ::open(chatFile.c_str(), O_RDONLY | O_CLOEXEC);
      if (input < 0)
        return fail(chatFile + ": " + std::strerror(errno));
    }
    pccx::app::ChatSession conversation(session, *tokenizer, *format);
    conversation.setSystemPrompt(systemPrompt);
    pccx::app::ChatConsoleOptions console;
    console.reply.sampling = gen.sampling;
    console.reply.maxTokens = hasMaxNew ? gen.maxNewTokens : 256;
    console.reply.stopTokens = gen.stopTokens;
    console.reply.decodeOnly = gen.decodeOnly;
    console.interactive = chatFile.empty() && ::isatty(0);
    console.json = asJson;
    if (console.interactive)
      std::cerr << "chat template: " << pccx::bundle::describe(chatTemplate)
                << "\n";
    int status =
        pccx::app::runChatConsole(conversation, input, console, std::cout,
                                  std::cerr);
    if (input != 0)
      ::close(input);
    return status;
  }

  gen.keepLogits = !dumpPath.empty() || !referenceDir.empty();
  std::unique_ptr<pccx::app::TextStream> stream;
  if (tokenizer && hasPrompt && !asJson) {
    stream = std::make_unique<pccx::app::TextStream>(*tokenizer);
    gen.onToken = [&](int32_t id) {
      if (gen.stopTokens.count(id))
        return;
      std::cout << stream->push(id) << std::flush;
    };
  }
  pccx::app::GenerateResult result;
  if (!pccx::app::generate(session, ids, gen, &result, &error))
    return fail(error);
  const int64_t vocab = model->vocabSize();
  const int64_t rows = int64_t(result.consumed.size());
  if (!asJson) {
    if (stream)
      std::cout << stream->finish() << "\n";
    else
      for (size_t i = 0; i < result.generated.size(); ++i)
        std::cout << (i ? "," : "") << result.generated[i]
                  << (i + 1 == result.generated.size() ? "\n" : "");
    if (result.capped)
      std::cerr << "pccx-run: stopped at the KV cache capacity of "
                << session.capacity() << " positions\n";
    // The first generated token comes out of the prompt's last step.
    std::cerr << "pccx-run: prompt "
              << pccx::app::formatRate(int64_t(ids.size()), result.prefillSeconds)
              << ", then "
              << pccx::app::formatRate(
                     int64_t(result.generated.size() > 0
                                 ? result.generated.size() - 1
                                 : 0),
                     result.decodeSeconds)
              << "\n";
  }

  if (!dumpPath.empty()) {
    if (!pccx::writeOutputFile(dumpPath, result.logits.data(),
                               result.logits.size() * sizeof(float), &error))
      return fail(error);
    std::cerr << "wrote " << rows << " logit rows to " << dumpPath << "\n";
  }

  json figures;
  if (!referenceDir.empty()) {
    auto checkpoint =
        pccx::reference::ReferenceCheckpoint::open(referenceDir, &error);
    if (!checkpoint)
      return fail(error);
    const pccx::reference::Weights &original = *checkpoint->original;
    auto effective = pccx::reference::BundleWeights::create(
        model->bundle(), original, checkpoint->prefix, &error);
    if (!effective)
      return fail(error);
    // On the bundle's weights in hardware numerics the reference also keeps
    // its KV cache as the bundle's KV records do (attention on the NPU);
    // reference numerics attend over exact keys and values, and on the
    // original weights the reference stays float throughout.
    bool kvRecords = false;
    for (const pccx::exec::CacheSpec &c : model->caches())
      kvRecords |= c.records() && !reference;
    auto runReference = [&](const pccx::reference::Weights &w, bool records,
                            std::vector<float> *out) {
      pccx::reference::Model ref(checkpoint->config, w, rows);
      ref.setKvRecords(records);
      return ref.ok(&error) && ref.forward(result.consumed, *out, &error);
    };
    std::vector<float> sameWeights, originalWeights;
    if (!runReference(*effective, kvRecords, &sameWeights) ||
        !runReference(original, false, &originalWeights))
      return fail("float reference: " + error);
    Agreement run = compare(result.logits, sameWeights, vocab);
    Agreement quant = compare(sameWeights, originalWeights, vocab);
    figures = {{"vs_reference_same_weights", toJson(run)},
               {"quantization_cost", toJson(quant)}};
    if (!asJson) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "%s numerics vs float reference (same weights): "
                    "rel max-abs %.3g, cosine %.6f, top-1 %lld/%lld\n",
                    numerics.c_str(), run.relMaxAbs, run.cosine,
                    (long long)run.top1, (long long)run.rows);
      std::cout << line;
      std::snprintf(line, sizeof line,
                    "cost of quantization (float reference, bundle weights vs "
                    "original): cosine %.6f, top-1 %lld/%lld\n",
                    quant.cosine, (long long)quant.top1,
                    (long long)quant.rows);
      std::cout << line;
    }
  }

  if (asJson) {
    const auto &stats = session.stats();
    json out = {
        {"consumed_tokens", result.consumed},
        {"generated_tokens", result.generated},
        {"logits_rows", gen.keepLogits ? rows : 0},
        {"numerics", numerics},
        {"device", device.name},
        {"stopped_by", result.stopped  ? "stop_token"
                       : result.capped ? "kv_capacity"
                                       : "max_new_tokens"},
        {"timing",
         {{"prompt_seconds", result.prefillSeconds},
          {"decode_seconds", result.decodeSeconds},
          {"decode_tokens_per_second",
           result.decodeSeconds > 0
               ? double(result.generated.size() > 0
                            ? result.generated.size() - 1
                            : 0) /
                     result.decodeSeconds
               : 0.0}}},
        {"stats",
         {{"instructions", stats.instructions},
          {"host_ops", stats.hostOps},
          {"syncs", stats.syncs},
          {"weight_bytes", stats.weightBytes},
          {"kv_record_bytes", stats.kvRecordBytes},
          {"steps", stats.steps}}}};
    if (tokenizer)
      out["generated_text"] = tokenizer->decode(result.generated);
    if (!figures.is_null())
      out["compare_reference"] = figures;
    std::cout << pccx::support::jsonText(out) << "\n";
  }
  return 0;
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-run", [&] { return run(argc, argv); });
}
