//===- ChatConsole.h - a chat on a terminal or from a script ----*- C++ -*-===//
//
// The loop behind `pccx-run --chat`: reads user turns one line at a time
// (from a terminal, a pipe or a file), streams each reply, and keeps the
// conversation in one ChatSession. On a terminal Ctrl-C (SIGINT) stops the
// reply being written, not the session; Ctrl-C twice at the prompt, or
// end of input, ends it. "/reset" starts a new conversation; "/exit" ends.
// On a terminal that can be edited on (LineEditor) lines are read with
// line editing and the session's history; otherwise, and always from a
// pipe or a file, they are read as they come.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_CHATCONSOLE_H
#define PCCX_RUNTIME_APP_CHATCONSOLE_H

#include "runtime/app/Chat.h"

#include <cstdio>
#include <ostream>

namespace pccx::app {

struct ChatConsoleOptions {
  ReplyOptions reply;
  /// Prompts and hints for a person (input from a terminal).
  bool interactive = false;
  /// One JSON object per turn instead of text (for programs and tests).
  bool json = false;
  /// With line editing: the file the history is read from and kept in
  /// (none when empty: the history lasts as long as the session).
  std::string historyPath;
  /// Stands before messages on `err`.
  std::string tool = "pccx-run";
  /// Structured output: a new constraint for each reply (each turn's
  /// reply is one JSON document). None: free text.
  std::function<std::shared_ptr<grammar::JsonConstraint>()> newConstraint;
};

/// Runs the conversation reading turns from file descriptor `input`
/// (interactive: with line editing when `input` and standard output are a
/// terminal that allows it).
/// Returns the exit status: 0, or 1 when a turn failed (e.g. the context
/// was full), or when reading failed.
int runChatConsole(ChatSession &chat, int input,
                   const ChatConsoleOptions &options, std::ostream &out,
                   std::ostream &err);

} // namespace pccx::app

#endif
