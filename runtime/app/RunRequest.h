//===- RunRequest.h - what pccx-run is asked to do --------------*- C++ -*-===//
//
// The options of pccx-run as plain data, and the one check of how they fit
// together. A front end fills a RunRequest from its command line, refuses
// it with checkRunRequest's message, and hands it to the mode that
// mode() names (runtime/app/RunModes.h). The device and its options are
// the front end's (the device registry checks them).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_RUNREQUEST_H
#define PCCX_RUNTIME_APP_RUNREQUEST_H

#include "runtime/app/Generate.h"
#include "runtime/app/Perplexity.h"

#include <cstdint>
#include <string>

namespace pccx::app {

enum class RunMode {
  /// --prompt or --tokens: one sequence (with its dump and comparison).
  Generate,
  /// --batch-tokens or --batch-prompts: several sequences together.
  Batch,
  /// --chat or --chat-file: the console.
  Chat,
  /// --perplexity: scoring a text.
  Perplexity,
};

struct RunRequest {
  std::string bundlePath;

  // The input; exactly one of them outside chat.
  std::string prompt;
  bool hasPrompt = false; ///< --prompt given (an empty prompt is one)
  std::string tokens;     ///< comma-separated ids
  std::string batchTokens;
  std::string batchPromptsPath;
  std::string perplexityPath;
  bool noBos = false;

  // Chat.
  bool chat = false;
  std::string chatFile;
  std::string systemPrompt;
  bool contextShift = false;
  bool showSpecial = false;
  std::string historyPath;

  // Generation. `generate.draftTokens` is left 0: generateOptions() sets
  // it from draftMethod and draftTokens.
  GenerateOptions generate;
  bool hasMaxNewTokens = false; ///< chat replies default to 256 without it
  std::string stopTokens;       ///< comma-separated ids
  bool hasStopTokens = false;   ///< else the bundle's eos tokens
  std::string draftMethod = "none";
  int64_t draftTokens = 3;
  /// Sequences decoded together; 0 (the option absent) is all of them.
  int64_t parallel = 0;
  /// Structured output: --json-schema FILE, or --json-object.
  std::string jsonSchemaPath;
  bool jsonObject = false;
  /// --ctx-size: positions the session holds.
  int64_t ctxSize = 0;
  bool hasCtxSize = false;

  /// ctx and stride negative: their defaults depend on the bundle.
  PerplexityOptions perplexity = {-1, -1};

  // Output.
  std::string dumpPath;
  std::string referenceDir;
  /// --matformer-slice: the slice of referenceDir's model to compare with
  /// (default: the one the bundle records).
  std::string referenceSlice;
  bool json = false;

  /// The mode the input options select (meaningful once checked).
  RunMode mode() const;
  /// `generate` with the drafting asked for.
  GenerateOptions generateOptions() const;
};

/// "" when the options fit together, else the message to refuse them with
/// (the first conflict found, in a fixed order).
std::string checkRunRequest(const RunRequest &request);

} // namespace pccx::app

#endif
