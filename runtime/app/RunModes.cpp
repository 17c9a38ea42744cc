//===- RunModes.cpp - what pccx-run does with a session --------------------===//

#include "runtime/app/RunModes.h"
#include "runtime/app/Structured.h"

#include "hw/support/JsonText.h"
#include "hw/support/OutputFile.h"
#include "runtime/bundle/ChatTemplate.h"
#include "runtime/reference/BundleWeights.h"
#include "runtime/reference/Reference.h"
#include "runtime/reference/ReferenceCheckpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace pccx::app {

namespace {

/// docs/numerics.md figures between two sets of logits rows.
struct Agreement {
  double relMaxAbs = 0, cosine = 0;
  int64_t top1 = 0, rows = 0;
};

Agreement compareLogits(const std::vector<float> &a,
                        const std::vector<float> &ref, int64_t vocab) {
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

nlohmann::json toJson(const Agreement &g) {
  return {{"rel_max_abs", g.relMaxAbs},
          {"cosine", g.cosine},
          {"top1_agree", g.top1},
          {"rows", g.rows}};
}

/// The bundle's logits for `consumed` against the float reference of the
/// checkpoint in `checkpointDir`: on the bundle's own (quantized) weights,
/// and the reference's cost of quantization (bundle weights vs original).
struct ReferenceComparison {
  Agreement sameWeights, quantization;
};

bool compareWithReference(const exec::Model &model,
                          const std::string &checkpointDir,
                          const std::string &matformerSlice,
                          const std::vector<int32_t> &consumed,
                          const std::vector<float> &logits,
                          bool referenceNumerics, ReferenceComparison *result,
                          std::string *error) {
  // The reference of the model the bundle was compiled from: the slice
  // asked for, else the one the bundle records.
  auto checkpoint = reference::ReferenceCheckpoint::open(
      checkpointDir, error, matformerSlice, &model.config());
  if (!checkpoint)
    return false;
  const reference::Weights &original = *checkpoint->original;
  auto effective = reference::BundleWeights::create(
      model.bundle(), original, checkpoint->prefix, error);
  if (!effective)
    return false;
  // On the bundle's weights in hardware numerics the reference also keeps
  // its KV cache as the bundle's KV records do (attention on the NPU);
  // reference numerics attend over exact keys and values, and on the
  // original weights the reference stays float throughout.
  bool kvRecords = false;
  for (const exec::CacheSpec &c : model.caches())
    kvRecords |= c.records() && !referenceNumerics;
  const int64_t rows = int64_t(consumed.size());
  auto runReference = [&](const reference::Weights &w, bool records,
                          std::vector<float> *out) {
    reference::Model ref(checkpoint->config, w, rows);
    ref.setKvRecords(records);
    return ref.ok(error) && ref.forward(consumed, *out, error);
  };
  std::vector<float> sameWeights, originalWeights, floatCaches;
  if (!runReference(*effective, kvRecords, &sameWeights) ||
      !runReference(original, false, &originalWeights) ||
      (kvRecords && !runReference(*effective, false, &floatCaches))) {
    *error = "float reference: " + *error;
    return false;
  }
  result->sameWeights = compareLogits(logits, sameWeights, model.vocabSize());
  // The weights' cost alone, whatever the numerics: both sides keep float
  // caches (the KV records' INT8 belong to the datapath, compared above).
  result->quantization =
      compareLogits(kvRecords ? floatCaches : sameWeights, originalWeights,
                    model.vocabSize());
  return true;
}

} // namespace

bool runGenerateMode(const exec::Model &model, exec::Session &session,
                     const Tokenizer *tokenizer,
                     const std::vector<int32_t> &prompt,
                     const GenerateModeOptions &options, std::ostream &out,
                     std::ostream &err, std::string *error) {
  GenerateOptions gen = options.generate;
  gen.keepLogits = !options.dumpPath.empty() || !options.referenceDir.empty();
  std::unique_ptr<TextStream> stream;
  if (tokenizer && options.streamText && !options.json) {
    stream = std::make_unique<TextStream>(*tokenizer);
    gen.onToken = [&](int32_t id) {
      if (gen.stopTokens.count(id))
        return;
      out << stream->push(id) << std::flush;
    };
  }
  GenerateResult result;
  if (!generate(session, prompt, gen, &result, error))
    return false;
  const int64_t rows = int64_t(result.consumed.size());
  // The first generated token comes out of the prompt's last step.
  const int64_t decoded =
      result.generated.empty() ? 0 : int64_t(result.generated.size()) - 1;
  if (!options.json) {
    if (stream)
      out << stream->finish() << "\n";
    else
      for (size_t i = 0; i < result.generated.size(); ++i)
        out << (i ? "," : "") << result.generated[i]
            << (i + 1 == result.generated.size() ? "\n" : "");
    if (result.capped)
      err << options.tool << ": stopped at the KV cache capacity of "
          << session.capacity() << " positions\n";
    err << options.tool << ": prompt "
        << formatRate(int64_t(prompt.size()), result.prefillSeconds)
        << ", then " << formatRate(decoded, result.decodeSeconds) << " ("
        << sim::numericsName(session.device().numerics()) << " numerics)\n";
    if (gen.draftTokens > 0)
      err << options.tool << ": " << draftSummary(result.draft) << "\n";
    if (gen.constraint) {
      err << options.tool << ": " << formatMaskCost(*gen.constraint) << "\n";
      if (!result.stopped)
        err << options.tool
            << ": the JSON document is incomplete: the reply ended before "
               "it did (--max-new-tokens or the context)\n";
    }
  }

  if (!options.dumpPath.empty()) {
    if (!writeOutputFile(options.dumpPath, result.logits.data(),
                         result.logits.size() * sizeof(float), error))
      return false;
    err << "wrote " << rows << " logit rows to " << options.dumpPath << "\n";
  }

  const bool referenceNumerics =
      session.device().numerics() == sim::Numerics::Reference;
  const char *numerics = sim::numericsName(session.device().numerics());
  nlohmann::json figures;
  if (!options.referenceDir.empty()) {
    ReferenceComparison cmp;
    if (!compareWithReference(model, options.referenceDir,
                              options.referenceSlice, result.consumed,
                              result.logits, referenceNumerics, &cmp, error))
      return false;
    figures = {{"vs_reference_same_weights", toJson(cmp.sameWeights)},
               {"quantization_cost", toJson(cmp.quantization)}};
    if (!options.json) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "%s numerics vs float reference (same weights): "
                    "rel max-abs %.3g, cosine %.6f, top-1 %lld/%lld\n",
                    numerics, cmp.sameWeights.relMaxAbs,
                    cmp.sameWeights.cosine, (long long)cmp.sameWeights.top1,
                    (long long)cmp.sameWeights.rows);
      out << line;
      std::snprintf(line, sizeof line,
                    "cost of quantization (float reference, bundle weights vs "
                    "original): cosine %.6f, top-1 %lld/%lld\n",
                    cmp.quantization.cosine, (long long)cmp.quantization.top1,
                    (long long)cmp.quantization.rows);
      out << line;
    }
  }

  if (options.json) {
    const auto &stats = session.stats();
    nlohmann::json j = {
        {"consumed_tokens", result.consumed},
        {"generated_tokens", result.generated},
        {"logits_rows", gen.keepLogits ? rows : 0},
        {"numerics", numerics},
        {"device", options.deviceName},
        {"stopped_by", result.stopped  ? "stop_token"
                       : result.capped ? "kv_capacity"
                                       : "max_new_tokens"},
        {"timing",
         {{"prompt_seconds", result.prefillSeconds},
          {"decode_seconds", result.decodeSeconds},
          {"decode_tokens_per_second",
           result.decodeSeconds > 0 ? double(decoded) / result.decodeSeconds
                                    : 0.0}}},
        {"stats",
         {{"instructions", stats.instructions},
          {"host_ops", stats.hostOps},
          {"syncs", stats.syncs},
          {"weight_bytes", stats.weightBytes},
          {"kv_record_bytes", stats.kvRecordBytes},
          {"steps", stats.steps}}}};
    if (gen.constraint)
      j["json_output"] = {
          {"complete", result.stopped && gen.constraint->complete()},
          {"masks", gen.constraint->masks()},
          {"mask_ms_per_token",
           gen.constraint->masks() ? gen.constraint->maskSeconds() * 1e3 /
                                         double(gen.constraint->masks())
                                   : 0.0}};
    if (gen.draftTokens > 0)
      j["draft"] = {{"method", "ngram"},
                    {"max_tokens", gen.draftTokens},
                    {"passes", result.draft.passes},
                    {"drafted", result.draft.drafted},
                    {"accepted", result.draft.accepted},
                    {"acceptance_rate",
                     result.draft.drafted
                         ? double(result.draft.accepted) /
                               double(result.draft.drafted)
                         : 0.0},
                    {"decode_steps", result.draft.steps},
                    {"tokens_per_step",
                     result.draft.steps ? double(result.draft.tokens) /
                                              double(result.draft.steps)
                                        : 0.0}};
    if (tokenizer)
      j["generated_text"] = tokenizer->decode(result.generated);
    if (!figures.is_null())
      j["compare_reference"] = figures;
    out << support::jsonText(j) << "\n";
  }
  return true;
}

std::string draftSummary(const DraftStats &d) {
  char line[200];
  std::snprintf(line, sizeof line,
                "draft: %lld of %lld drafted tokens accepted (%.0f%%), %lld "
                "tokens in %lld decode steps (%.2f per step)",
                (long long)d.accepted, (long long)d.drafted,
                d.drafted ? 100.0 * double(d.accepted) / double(d.drafted) : 0.0,
                (long long)d.tokens, (long long)d.steps,
                d.steps ? double(d.tokens) / double(d.steps) : 0.0);
  return line;
}

bool runBatchMode(exec::Session &session, const Tokenizer *tokenizer,
                  const std::vector<std::vector<int32_t>> &prompts,
                  const BatchModeOptions &options, std::ostream &out,
                  std::ostream &err, std::string *error) {
  BatchScheduler scheduler(session, options.parallel);
  if (!scheduler.init(error))
    return false;
  std::vector<GenerateResult> results(prompts.size());
  std::vector<std::string> errors(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    BatchRequest request;
    request.prompt = prompts[i];
    request.options = options.generate;
    request.options.keepLogits = !options.dumpPath.empty();
    request.onDone = [&results, &errors, i](const GenerateResult &r,
                                            const std::string &why) {
      results[i] = r;
      errors[i] = why;
    };
    scheduler.submit(std::move(request));
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!scheduler.runAll(error))
    return false;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  for (size_t i = 0; i < prompts.size(); ++i)
    if (!errors[i].empty()) {
      *error = "sequence " + std::to_string(i) + ": " + errors[i];
      return false;
    }
  const BatchStats &stats = scheduler.stats();
  if (!options.dumpPath.empty()) {
    std::vector<float> all;
    int64_t rows = 0;
    for (const GenerateResult &r : results) {
      all.insert(all.end(), r.logits.begin(), r.logits.end());
      rows += int64_t(r.consumed.size());
    }
    if (!writeOutputFile(options.dumpPath, all.data(),
                         all.size() * sizeof(float), error))
      return false;
    err << "wrote " << rows << " logit rows to " << options.dumpPath << "\n";
  }
  const double rowsPerStep =
      stats.decodeSteps ? double(stats.stepRows) / double(stats.decodeSteps)
                        : 0.0;
  if (options.json) {
    nlohmann::json sequences = nlohmann::json::array();
    for (const GenerateResult &r : results) {
      nlohmann::json j = {{"consumed_tokens", r.consumed},
                          {"generated_tokens", r.generated},
                          {"stopped_by", r.stopped  ? "stop_token"
                                         : r.capped ? "kv_capacity"
                                                    : "max_new_tokens"}};
      if (tokenizer)
        j["generated_text"] = tokenizer->decode(r.generated);
      sequences.push_back(j);
    }
    nlohmann::json j = {
        {"sequences", sequences},
        {"parallel", options.parallel},
        {"batch_rows", session.batchRows()},
        {"decode_steps", stats.decodeSteps},
        {"mean_sequences_per_step", rowsPerStep},
        {"generated_tokens", stats.generatedTokens},
        {"seconds", seconds},
        {"aggregate_tokens_per_second",
         seconds > 0 ? double(stats.generatedTokens) / seconds : 0.0},
        {"session",
         {{"weight_bytes", session.stats().weightBytes},
          {"steps", session.stats().steps},
          {"batch_rows", session.stats().batchRows},
          {"padding_rows", session.stats().paddingRows}}}};
    out << support::jsonText(j) << "\n";
    return true;
  }
  for (const GenerateResult &r : results) {
    if (tokenizer && options.text)
      out << tokenizer->decode(r.generated) << "\n";
    else
      for (size_t i = 0; i < r.generated.size(); ++i)
        out << (i ? "," : "") << r.generated[i]
            << (i + 1 == r.generated.size() ? "\n" : "");
    if (r.generated.empty())
      out << "\n";
  }
  char line[160];
  std::snprintf(line, sizeof line,
                ": %zu sequences, %lld decode steps (%.2f sequences per step), ",
                prompts.size(), (long long)stats.decodeSteps, rowsPerStep);
  err << options.tool << line
      << formatRate(stats.generatedTokens, seconds) << " in all\n";
  return true;
}

int runChatMode(const exec::Model &model, exec::Session &session,
                const Tokenizer &tokenizer, const ChatModeOptions &options,
                std::ostream &out, std::ostream &err, std::string *error) {
  auto chatTemplate = bundle::chatTemplateOf(model.bundle().manifest());
  auto format =
      ChatFormat::create(tokenizer, chatTemplate, model.bosToken(), error);
  if (!format)
    return -1;
  int input = 0;
  if (!options.chatFile.empty()) {
    input = ::open(options.chatFile.c_str(), O_RDONLY | O_CLOEXEC);
    if (input < 0) {
      *error = options.chatFile + ": " + std::strerror(errno);
      return -1;
    }
  }
  ChatSession conversation(session, tokenizer, *format);
  conversation.setSystemPrompt(options.systemPrompt);
  conversation.setContextShift(options.contextShift);
  ChatConsoleOptions console = options.console;
  console.interactive = options.chatFile.empty() && ::isatty(0);
  if (console.interactive)
    err << "chat template: " << bundle::describe(chatTemplate) << "\n";
  int status = runChatConsole(conversation, input, console, out, err);
  if (input != 0)
    ::close(input);
  return status;
}

bool runPerplexityMode(const exec::Model &model, exec::Session &session,
                       const std::vector<int32_t> &text,
                       const std::string &referenceDir,
                       const std::string &referenceSlice,
                       PerplexityOptions options, bool noBos, bool json,
                       bool showProgress, std::ostream &out, std::ostream &err,
                       std::string *error) {
  if (options.ctx < 0)
    options.ctx = std::min<int64_t>(128, session.capacity());
  if (options.stride < 0)
    options.stride = std::max<int64_t>(1, options.ctx / 2);
  if (options.ctx > session.capacity()) {
    *error = "--ctx " + std::to_string(options.ctx) +
             " exceeds the bundle's KV cache of " +
             std::to_string(session.capacity()) +
             " positions (compile with a larger --max-seq-len)";
    return false;
  }
  options.bos = noBos ? -1 : model.bosToken();
  LogitsFunction bundleLogits = [&](const std::vector<int32_t> &tokens,
                                    std::vector<float> *logits,
                                    std::string *why) {
    session.reset();
    return session.consume(tokens, false, logits, why);
  };
  std::unique_ptr<reference::WindowedReference> ref;
  LogitsFunction referenceLogits;
  if (!referenceDir.empty()) {
    ref = reference::WindowedReference::open(referenceDir, options.ctx, error,
                                             referenceSlice, &model.config());
    if (!ref)
      return false;
    if (ref->vocabSize() != model.vocabSize()) {
      *error = referenceDir + ": vocab_size " +
               std::to_string(ref->vocabSize()) + " differs from the bundle's " +
               std::to_string(model.vocabSize());
      return false;
    }
    referenceLogits = [&](const std::vector<int32_t> &tokens,
                          std::vector<float> *logits, std::string *why) {
      return ref->logits(tokens, logits, why);
    };
  }
  auto progress = [&](int64_t done, int64_t total) {
    if (showProgress)
      err << "\rpccx-run: window " << done << "/" << total
          << (done == total ? "\n" : "") << std::flush;
  };
  PerplexityFigures figures;
  if (!perplexity(text, options, model.vocabSize(), bundleLogits,
                  referenceLogits, &figures, error, progress))
    return false;
  if (json)
    out << perplexityJson(figures, options).dump() << "\n";
  else
    out << formatPerplexity(figures, options);
  return true;
}

} // namespace pccx::app
