//===- LineEditor.h - line editing and history on a terminal ----*- C++ -*-===//
//
// The chat console's input on a terminal, through libedit (BSD editline):
// cursor movement, Emacs key bindings, and the session's earlier lines
// with Up/Ctrl-P, kept in a file only when one is named. A build without
// libedit (the board's, the cross build's) has none: open() says why, and
// the console reads plain lines as it does from a pipe or a file.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_LINEEDITOR_H
#define PCCX_RUNTIME_APP_LINEEDITOR_H

#include <atomic>
#include <memory>
#include <string>

namespace pccx::app {

class LineEditor {
public:
  enum class Result { Line, End, Interrupted, Failed };

  /// Whether this build has line editing (libedit found at configure time).
  static bool available();

  /// Why lines on `inFd` / `outFd` are not edited, or empty when they can
  /// be: both must be terminals, TERM must not be "dumb", and the terminal
  /// must report its width (a pseudo-terminal fed by a program, such as
  /// script(1)'s when its input is a pipe, has none; the editor could not
  /// redraw a line on it).
  static std::string unusableReason(int inFd, int outFd);

  /// An editor on the terminal `inFd` / `outFd`, or null with `why` set
  /// (unusableReason(), or no libedit in this build). `historyPath`, when
  /// not empty, is read (if it exists) and rewritten after each line; a
  /// file that is not a libedit history is left alone (historyError()).
  /// Raising `interrupt` (from a signal handler) ends the wait for input:
  /// read() returns Interrupted and drops the line being edited.
  static std::unique_ptr<LineEditor>
  open(int inFd, int outFd, const std::string &historyPath,
       const std::atomic<bool> *interrupt, std::string *why);

  ~LineEditor();

  /// Reads one line after `prompt`, without its newline. A non-empty line
  /// joins the history.
  Result read(const std::string &prompt, std::string *line);

  /// The first error with the history file (reading it, or writing it
  /// after a line), or empty.
  const std::string &historyError() const { return historyError_; }

  struct Impl;

private:
  explicit LineEditor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string historyError_;
};

} // namespace pccx::app

#endif
