//===- LineEditorTests.cpp - line editing on a pseudo-terminal ------------===//

#include "runtime/app/LineEditor.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <pthread.h>
#include <sstream>
#include <sys/ioctl.h>
#include <termios.h>
#include <thread>
#include <unistd.h>

using pccx::app::LineEditor;

namespace {

/// A pseudo-terminal: the program's side (`slave`) and the person's.
struct Pty {
  int master = -1, slave = -1;
  explicit Pty(unsigned short cols) {
    master = ::posix_openpt(O_RDWR | O_NOCTTY);
    EXPECT_GE(master, 0);
    EXPECT_EQ(::grantpt(master), 0);
    EXPECT_EQ(::unlockpt(master), 0);
    slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
    EXPECT_GE(slave, 0);
    struct winsize size {};
    size.ws_row = 24;
    size.ws_col = cols;
    EXPECT_EQ(::ioctl(slave, TIOCSWINSZ, &size), 0);
  }
  ~Pty() {
    ::close(slave);
    ::close(master);
  }
  void type(const std::string &keys) {
    ASSERT_EQ(::write(master, keys.data(), keys.size()),
              ssize_t(keys.size()));
  }
  /// Reads a line with `editor`, typing `keys` once `prompt` shows and the
  /// editor has the terminal in its mode, as a person does (keys typed
  /// before would meet the terminal's own line editing, where Ctrl-D is
  /// end of file).
  LineEditor::Result readTyped(LineEditor &editor, const std::string &prompt,
                               const std::string &keys, std::string *line) {
    std::thread person([&] {
      std::string shown;
      char chunk[256];
      while (shown.find(prompt) == std::string::npos) {
        ssize_t n = ::read(master, chunk, sizeof chunk);
        if (n <= 0)
          return;
        shown.append(chunk, size_t(n));
      }
      // The editor reads keys in its own mode (not the terminal's lines).
      for (int wait = 0; wait < 5000; ++wait) {
        struct termios mode {};
        if (::tcgetattr(slave, &mode) != 0 || !(mode.c_lflag & ICANON))
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      type(keys);
    });
    LineEditor::Result result = editor.read(prompt, line);
    person.join();
    return result;
  }
};

/// Sets TERM for one test.
struct Term {
  std::string old;
  bool had;
  explicit Term(const char *value) {
    const char *was = std::getenv("TERM");
    had = was != nullptr;
    if (had)
      old = was;
    ::setenv("TERM", value, 1);
  }
  ~Term() {
    if (had)
      ::setenv("TERM", old.c_str(), 1);
    else
      ::unsetenv("TERM");
  }
};

} // namespace

// Pipes and files (the tests', scripts') are never edited: the console
// reads them as they come.
TEST(LineEditor, NotOnAPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_EQ(LineEditor::unusableReason(fds[0], fds[1]),
            "the input is not a terminal");
  std::string why;
  EXPECT_FALSE(LineEditor::open(fds[0], fds[1], "", nullptr, &why));
  EXPECT_EQ(why, "the input is not a terminal");
  Pty pty(80);
  EXPECT_EQ(LineEditor::unusableReason(pty.slave, fds[1]),
            "the output is not a terminal");
  ::close(fds[0]);
  ::close(fds[1]);
}

// A terminal without a size (script(1) fed by a pipe) or TERM=dumb is read
// as plain lines too.
TEST(LineEditor, NotOnATerminalWithoutWidthOrDumb) {
  Term term("xterm");
  Pty sizeless(0);
  EXPECT_EQ(LineEditor::unusableReason(sizeless.slave, sizeless.slave),
            "the terminal reports no width");
  Pty pty(80);
  EXPECT_EQ(LineEditor::unusableReason(pty.slave, pty.slave), "");
  Term dumb("dumb");
  EXPECT_EQ(LineEditor::unusableReason(pty.slave, pty.slave), "TERM is dumb");
}

// Editing keys, the session's history (Ctrl-P), the history file, and
// end of input.
TEST(LineEditor, EditsAndRecallsLines) {
  if (!LineEditor::available())
    GTEST_SKIP() << "built without libedit";
  Term term("xterm");
  Pty pty(80);
  char path[] = "/tmp/pccx-history-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  ::unlink(path); // a history file that does not exist yet is created
  std::string why, line;
  {
    auto editor = LineEditor::open(pty.slave, pty.slave, path, nullptr, &why);
    ASSERT_TRUE(editor) << why;
    // "/elp", to the start (Ctrl-A), forward one (Ctrl-F), "h".
    ASSERT_EQ(pty.readTyped(*editor, "1> ", "/elp\x01\x06h\r", &line),
              LineEditor::Result::Line);
    EXPECT_EQ(line, "/help");
    ASSERT_EQ(pty.readTyped(*editor, "2> ", "second line\r", &line),
              LineEditor::Result::Line);
    EXPECT_EQ(line, "second line");
    // Two lines back (Ctrl-P twice), end of line (Ctrl-E), " me".
    ASSERT_EQ(pty.readTyped(*editor, "3> ", "\x10\x10\x05 me\r", &line),
              LineEditor::Result::Line);
    EXPECT_EQ(line, "/help me");
    EXPECT_EQ(editor->historyError(), "");
    // Ctrl-D on an empty line.
    EXPECT_EQ(pty.readTyped(*editor, "4> ", "\x04", &line),
              LineEditor::Result::End);
  }
  std::ifstream saved(path);
  std::stringstream text;
  text << saved.rdbuf();
  EXPECT_NE(text.str().find("second"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("/help"), std::string::npos) << text.str();
  // A new editor starts with the file's lines.
  {
    auto editor = LineEditor::open(pty.slave, pty.slave, path, nullptr, &why);
    ASSERT_TRUE(editor) << why;
    ASSERT_EQ(pty.readTyped(*editor, "5> ", "\x10\r", &line),
              LineEditor::Result::Line);
    EXPECT_EQ(line, "/help me");
  }
  ::unlink(path);
}

// A file that is not libedit's history is neither read nor overwritten;
// editing goes on.
TEST(LineEditor, LeavesAForeignHistoryFileAlone) {
  if (!LineEditor::available())
    GTEST_SKIP() << "built without libedit";
  Term term("xterm");
  Pty pty(80);
  char path[] = "/tmp/pccx-history-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string foreign = "ls -l\ncd /tmp\n"; // a shell's history
  ASSERT_EQ(::write(fd, foreign.data(), foreign.size()),
            ssize_t(foreign.size()));
  ::close(fd);
  std::string why, line;
  {
    auto editor = LineEditor::open(pty.slave, pty.slave, path, nullptr, &why);
    ASSERT_TRUE(editor) << why;
    EXPECT_NE(editor->historyError().find("not a history file"),
              std::string::npos)
        << editor->historyError();
    ASSERT_EQ(pty.readTyped(*editor, "1> ", "hello\r", &line),
              LineEditor::Result::Line);
    EXPECT_EQ(line, "hello");
  }
  std::ifstream saved(path);
  std::stringstream text;
  text << saved.rdbuf();
  EXPECT_EQ(text.str(), foreign);
  ::unlink(path);
}

// A history that is not a regular file (a FIFO, a device) or is larger
// than any history is not read: /dev/zero used to be read without end, a
// FIFO to block the console forever.
TEST(LineEditor, ReadsOnlyARegularHistoryOfAHistorysSize) {
  if (!LineEditor::available())
    GTEST_SKIP() << "built without libedit";
  Term term("xterm");
  Pty pty(80);
  char dir[] = "/tmp/pccx-history-dir-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string big = std::string(dir) + "/big";
  ASSERT_EQ(::truncate(big.c_str(), 0), -1); // does not exist yet
  {
    std::ofstream out(big);
    out.seekp((17 << 20) - 1);
    out.put('\n');
  }
  for (const std::string &path : {std::string("/dev/zero"), fifo, big}) {
    std::string why, line;
    auto editor =
        LineEditor::open(pty.slave, pty.slave, path, nullptr, &why);
    ASSERT_TRUE(editor) << why;
    EXPECT_NE(editor->historyError().find(path == big ? "more than a history"
                                                      : "not a regular file"),
              std::string::npos)
        << editor->historyError();
    ASSERT_EQ(pty.readTyped(*editor, "1> ", "hi\r", &line),
              LineEditor::Result::Line);
    EXPECT_EQ(line, "hi");
  }
  ::unlink(fifo.c_str());
  ::unlink(big.c_str());
  ::rmdir(dir);
}

// Without a history file nothing is written anywhere.
TEST(LineEditor, NoHistoryFileUnlessNamed) {
  if (!LineEditor::available())
    GTEST_SKIP() << "built without libedit";
  Term term("xterm");
  Pty pty(80);
  std::string why, line;
  auto editor = LineEditor::open(pty.slave, pty.slave, "", nullptr, &why);
  ASSERT_TRUE(editor) << why;
  ASSERT_EQ(pty.readTyped(*editor, "1> ", "hello\r", &line),
            LineEditor::Result::Line);
  EXPECT_EQ(line, "hello");
  EXPECT_EQ(editor->historyError(), "");
}

extern "C" void ignoreSignal(int) {}

// Raising the interrupt flag and signalling ends the wait for a line.
TEST(LineEditor, InterruptEndsTheWait) {
  if (!LineEditor::available())
    GTEST_SKIP() << "built without libedit";
  Term term("xterm");
  Pty pty(80);
  struct sigaction action {}, previous {};
  action.sa_handler = ignoreSignal;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &previous), 0);
  std::atomic<bool> interrupt{false};
  std::string why, line;
  auto editor = LineEditor::open(pty.slave, pty.slave, "", &interrupt, &why);
  ASSERT_TRUE(editor) << why;
  const pthread_t reader = ::pthread_self();
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    interrupt.store(true);
    ::pthread_kill(reader, SIGUSR1);
  });
  EXPECT_EQ(pty.readTyped(*editor, "1> ", "half a li", &line),
            LineEditor::Result::Interrupted);
  signaller.join();
  ::sigaction(SIGUSR1, &previous, nullptr);
  // The next line starts empty.
  interrupt.store(false);
  ASSERT_EQ(pty.readTyped(*editor, "2> ", "next\r", &line),
            LineEditor::Result::Line);
  EXPECT_EQ(line, "next");
}
