//===- RunModes.h - what pccx-run does with a session ------------*- C++ -*-===//
//
// The modes of pccx-run as library calls, so that a front end only reads
// its command line: generation from a prompt (with a logits dump and the
// comparison against the float reference), the chat console, and
// perplexity over a text. Each prints its results on `out` and its
// progress and speed on `err`, as the tool documents.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_RUNMODES_H
#define PCCX_RUNTIME_APP_RUNMODES_H

#include "runtime/app/Batch.h"
#include "runtime/app/ChatConsole.h"
#include "runtime/app/Generate.h"
#include "runtime/app/Perplexity.h"
#include "runtime/exec/Model.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <ostream>
#include <string>
#include <vector>

namespace pccx::app {

struct GenerateModeOptions {
  GenerateOptions generate;
  /// Print the text as it is generated (a prompt with a tokenizer);
  /// otherwise the generated ids.
  bool streamText = false;
  /// Write every logits row here (float32, row-major), if not empty.
  std::string dumpPath;
  /// Compare with the float reference of this checkpoint, if not empty:
  /// cut to the MatFormer slice `referenceSlice` names, else to the one the
  /// bundle records (runtime/import/MatFormer.h).
  std::string referenceDir, referenceSlice;
  /// One JSON object on `out` instead of text.
  bool json = false;
  /// The device name recorded in the JSON output.
  std::string deviceName;
  std::string tool = "pccx-run";
};

/// --prompt / --tokens: generate from `prompt`, then dump and compare as
/// asked. `tokenizer` may be null (token ids in and out).
bool runGenerateMode(const exec::Model &model, exec::Session &session,
                     const Tokenizer *tokenizer,
                     const std::vector<int32_t> &prompt,
                     const GenerateModeOptions &options, std::ostream &out,
                     std::ostream &err, std::string *error);

/// "draft: A of D drafted tokens accepted (R%), T tokens in S decode steps
/// (X per step)".
std::string draftSummary(const DraftStats &draft);

struct BatchModeOptions {
  GenerateOptions generate;
  /// Sequences decoded together (continuous batching over that many slots).
  int parallel = 1;
  /// Print each sequence's text (a tokenizer) instead of its ids.
  bool text = false;
  /// Every sequence's logits rows, sequence after sequence.
  std::string dumpPath;
  bool json = false;
  std::string tool = "pccx-run";
};

/// Several prompts at once: each sequence generates as it would alone,
/// `parallel` of them per pass over the weights. Prints one line per
/// sequence, in order, and the aggregate speed on `err`.
bool runBatchMode(exec::Session &session, const Tokenizer *tokenizer,
                  const std::vector<std::vector<int32_t>> &prompts,
                  const BatchModeOptions &options, std::ostream &out,
                  std::ostream &err, std::string *error);

struct ChatModeOptions {
  ChatConsoleOptions console;
  std::string systemPrompt;
  /// Read the turns from this file instead of standard input.
  std::string chatFile;
  /// Drop the oldest exchanges when a turn would not fit (ChatSession).
  bool contextShift = false;
};

/// --chat: the console over the bundle's chat template. Returns the exit
/// status (runChatConsole), or -1 with `error` set when it cannot start.
int runChatMode(const exec::Model &model, exec::Session &session,
                const Tokenizer &tokenizer, const ChatModeOptions &options,
                std::ostream &out, std::ostream &err, std::string *error);

/// --perplexity: the bundle (and, with `referenceDir`, the float reference
/// on the checkpoint's original weights) over the windows of `text`.
/// Negative ctx/stride take their defaults from the session's capacity.
bool runPerplexityMode(const exec::Model &model, exec::Session &session,
                       const std::vector<int32_t> &text,
                       const std::string &referenceDir,
                       const std::string &referenceSlice,
                       PerplexityOptions options, bool noBos, bool json,
                       bool showProgress, std::ostream &out, std::ostream &err,
                       std::string *error);

} // namespace pccx::app

#endif
