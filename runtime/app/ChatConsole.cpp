//===- ChatConsole.cpp - a chat on a terminal or from a script
//-------------===//

#include "runtime/app/ChatConsole.h"
#include "runtime/grammar/TokenMask.h"
#include "runtime/app/Generate.h"
#include "runtime/app/LineEditor.h"

#include "hw/support/JsonText.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <unistd.h>

namespace pccx::app {

namespace {

/// Raised by SIGINT; cleared before each reply and each prompt.
std::atomic<bool> interrupted{false};

extern "C" void onInterrupt(int) { interrupted.store(true); }

/// SIGINT sets `interrupted` while the console runs; the previous action
/// comes back after. SA_RESTART keeps interrupted writes going; the wait for
/// input is a poll(), which a signal always interrupts.
class InterruptScope {
public:
  InterruptScope() {
    struct sigaction action {};
    action.sa_handler = onInterrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptScope() { sigaction(SIGINT, &previous_, nullptr); }

private:
  struct sigaction previous_ {};
};

enum class Input { Line, End, Interrupted, Failed };

Input inputOf(LineEditor::Result result) {
  switch (result) {
  case LineEditor::Result::Line:
    return Input::Line;
  case LineEditor::Result::End:
    return Input::End;
  case LineEditor::Result::Interrupted:
    return Input::Interrupted;
  case LineEditor::Result::Failed:
    break;
  }
  return Input::Failed;
}

/// Reads one line (without its newline) from `fd`, unbuffered so that the
/// rest of the input stays for the next call.
class LineReader {
public:
  /// Lines longer than `maxBytes` keep their first maxBytes + 1 bytes (the
  /// rest is read and dropped): enough to refuse them by their length
  /// without holding input that never ends (a pipe from /dev/zero).
  LineReader(int fd, size_t maxBytes) : fd_(fd), maxBytes_(maxBytes) {}
  Input next(std::string *line) {
    for (;;) {
      size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        cut_ = dropping_;
        *line = buffer_.substr(0, dropping_ ? maxBytes_ + 1 : newline);
        dropping_ = false;
        buffer_.erase(0, newline + 1);
        return Input::Line;
      }
      if (buffer_.size() > maxBytes_) {
        // Keep the head; the line is refused by its length anyway.
        buffer_.resize(maxBytes_ + 1);
        dropping_ = true;
      }
      if (ended_) {
        if (buffer_.empty())
          return Input::End;
        cut_ = dropping_;
        dropping_ = false;
        *line = buffer_;
        buffer_.clear();
        return Input::Line;
      }
      struct pollfd ready = {fd_, POLLIN, 0};
      if (::poll(&ready, 1, -1) < 0) {
        if (errno != EINTR)
          return Input::Failed;
        if (interrupted.load())
          return Input::Interrupted;
        continue;
      }
      char chunk[4096];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return Input::Failed;
      if (n == 0)
        ended_ = true;
      buffer_.append(chunk, size_t(n));
    }
  }

  /// Whether the last line was longer than the bound (only its head kept).
  bool cut() const { return cut_; }

private:
  int fd_;
  size_t maxBytes_;
  std::string buffer_;
  bool ended_ = false, dropping_ = false, cut_ = false;
};

} // namespace

int runChatConsole(ChatSession &chat, int input,
                   const ChatConsoleOptions &options, std::ostream &out,
                   std::ostream &err) {
  InterruptScope scope;
  // A message longer than this cannot fit the context: the reader keeps no
  // more of a line, and ChatSession::say refuses it by its length.
  const size_t maxLine = size_t(std::min<uint64_t>(
      chat.maxMessageBytes(), uint64_t(SIZE_MAX / 2)));
  LineReader reader(input, maxLine);
  std::unique_ptr<LineEditor> editor;
  if (options.interactive) {
    std::string why;
    editor = LineEditor::open(input, STDOUT_FILENO, options.historyPath,
                              &interrupted, &why);
    if (!editor && !options.historyPath.empty())
      err << "(no line editing, so no history file: " << why << ")\n";
  }
  bool historyWarned = false;
  if (editor && !editor->historyError().empty()) {
    err << "(the history file is not used: " << editor->historyError()
        << ")\n";
    historyWarned = true;
  }
  ReplyOptions reply = options.reply;
  reply.interrupt = &interrupted;
  int status = 0, turn = 0;
  bool interruptedAtPrompt = false;
  if (options.interactive)
    err << "Chat: Ctrl-C stops a reply; Ctrl-D (or Ctrl-C twice) at the "
           "prompt exits; /reset starts a new conversation.\n";
  std::string pending; // the lines of a message continued with '\'
  for (;;) {
    const char *prompt = pending.empty() ? "> " : ". ";
    if (options.interactive && !editor)
      out << prompt << std::flush;
    interrupted.store(false);
    std::string line;
    Input got;
    if (editor) {
      out << std::flush;
      got = inputOf(editor->read(prompt, &line));
      if (!editor->historyError().empty() && !historyWarned) {
        err << "(the history is not saved: " << editor->historyError()
            << ")\n";
        historyWarned = true;
      }
    } else {
      got = reader.next(&line);
    }
    if (got == Input::Interrupted) {
      if (interruptedAtPrompt) {
        out << "\n";
        return status;
      }
      interruptedAtPrompt = true;
      out << "\n";
      err << "(Ctrl-C again or Ctrl-D to exit)\n";
      continue;
    }
    interruptedAtPrompt = false;
    if (got == Input::End) {
      if (options.interactive)
        out << "\n";
      return status;
    }
    if (got == Input::Failed) {
      err << options.tool
          << ": error: reading the chat input: " << std::strerror(errno)
          << "\n";
      return 1;
    }
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    // A line that ends in a backslash continues on the next one (while the
    // message could still fit).
    if (!line.empty() && line.back() == '\\' &&
        pending.size() + line.size() <= maxLine) {
      line.pop_back();
      pending += line + "\n";
      continue;
    }
    if (!pending.empty()) {
      line = pending + line;
      pending.clear();
    } else if (line.size() > 1 && line[0] == '/' && line[1] == '/') {
      line.erase(0, 1); // "//..." sends a message that starts with '/'
    } else if (!line.empty() && line[0] == '/') {
      // Commands are the console's own; none reaches the model.
      const std::string command = line.substr(0, line.find(' '));
      if (command == "/exit" || command == "/quit")
        return status;
      if (command == "/reset") {
        chat.reset();
        if (options.interactive)
          err << "(new conversation)\n";
      } else if (command == "/help") {
        err << "Commands: /reset starts a new conversation, /exit (or "
               "/quit) ends the chat, /help shows this. A line that ends "
               "in \\ continues on the next; a line that starts with // "
               "is sent with one / less.\n";
      } else {
        err << "(unknown command " << command
            << "; /help lists the commands, // sends a line starting "
               "with /)\n";
      }
      continue;
    }
    if (line.find_first_not_of(" \t\n") == std::string::npos)
      continue;
    ++turn;
    if (!editor && reader.cut()) {
      err << options.tool << ": error: turn " << turn
          << ": the message is longer than " << maxLine
          << " bytes, more than the model's context of " << chat.capacity()
          << " tokens can hold\n";
      status = 1;
      continue;
    }
    if (!options.interactive && !options.json)
      out << "> " << line << "\n";
    if (!options.json)
      reply.onText = [&](const std::string &text) {
        out << text << std::flush;
      };
    else
      reply.onText = nullptr;
    if (options.newConstraint)
      reply.constraint = options.newConstraint();
    Reply result;
    std::string error;
    const int64_t shiftedBefore = chat.shiftedExchanges();
    if (!chat.say(line, reply, &result, &error)) {
      err << options.tool << ": error: turn " << turn << ": " << error << "\n";
      if (chat.position() > 0 && options.interactive)
        err << "(type /reset to start a new conversation)\n";
      status = 1;
      continue;
    }
    if (options.json) {
      nlohmann::json record = {{"turn", turn},
                               {"fed_tokens", result.fed},
                               {"reused_tokens", result.reusedTokens},
                               {"prompt_tokens", result.promptTokens},
                               {"reply_tokens", result.tokens},
                               {"reply_text", result.text},
                               {"ended_by", replyEndName(result.end)},
                               {"position_after", result.positionAfter},
                               {"dropped_exchanges",
                                chat.shiftedExchanges() - shiftedBefore},
                               {"json_complete",
                                reply.constraint
                                    ? nlohmann::json(reply.constraint->complete())
                                    : nlohmann::json()},
                               {"prompt_seconds", result.promptSeconds},
                               {"reply_seconds", result.replySeconds}};
      out << support::jsonText(record) << "\n" << std::flush;
    } else {
      out << "\n";
      if (chat.shiftedExchanges() > shiftedBefore)
        err << "(context shift: the " << chat.shiftedExchanges() - shiftedBefore
            << " oldest exchange(s) after the first were dropped to fit)\n";
      if (result.end == ReplyEnd::Interrupted)
        err << "(reply interrupted)\n";
      else if (result.end == ReplyEnd::ContextFull)
        err << "(the model's context of " << chat.capacity()
            << " positions is full; /reset starts a new conversation)\n";
      else if (result.end == ReplyEnd::MaxTokens)
        err << "(reply cut at " << reply.maxTokens << " tokens"
            << (reply.constraint ? ": the JSON document is incomplete" : "")
            << ")\n";
      err << "(" << formatRate(int64_t(result.tokens.size()), result.replySeconds)
          << ")\n";
    }
  }
}

} // namespace pccx::app
