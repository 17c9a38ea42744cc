//===- LineEditor.cpp - line editing and history on a terminal ------------===//

#include "runtime/app/LineEditor.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef PCCX_HAVE_LIBEDIT
#include <histedit.h>

#include <clocale>
#include <cstdio>
#include <cwchar>
#include <poll.h>
#endif

namespace pccx::app {

std::string LineEditor::unusableReason(int inFd, int outFd) {
  if (!::isatty(inFd))
    return "the input is not a terminal";
  if (!::isatty(outFd))
    return "the output is not a terminal";
  const char *term = std::getenv("TERM");
  if (term && std::strcmp(term, "dumb") == 0)
    return "TERM is dumb";
  struct winsize size {};
  if (::ioctl(outFd, TIOCGWINSZ, &size) != 0 || size.ws_col == 0)
    return "the terminal reports no width";
  return {};
}

#ifdef PCCX_HAVE_LIBEDIT

namespace {
/// A history of 1000 entries (H_SETSIZE below) of long lines.
constexpr uint64_t kMaxHistoryBytes = 16u << 20;
} // namespace

struct LineEditor::Impl {
  EditLine *el = nullptr;
  History *history = nullptr;
  FILE *in = nullptr, *out = nullptr;
  int inFd = -1;
  const std::atomic<bool> *interrupt = nullptr;
  std::string prompt, historyPath;
  std::mbstate_t state{};

  ~Impl() {
    if (el)
      el_end(el); // puts the terminal back as it found it
    if (history)
      history_end(history);
    if (in)
      std::fclose(in);
    if (out)
      std::fclose(out);
  }

  static Impl *of(EditLine *el) {
    void *data = nullptr;
    el_get(el, EL_CLIENTDATA, &data);
    return static_cast<Impl *>(data);
  }

  static char *promptOf(EditLine *el) {
    return const_cast<char *>(of(el)->prompt.c_str());
  }

  /// libedit's character source: waits in poll(), which a signal always
  /// interrupts (a read() under SA_RESTART would not return), so that an
  /// interrupt ends the wait; multibyte characters are put together in the
  /// terminal's encoding (LC_CTYPE).
  static int readChar(EditLine *el, wchar_t *c) {
    Impl *self = of(el);
    for (;;) {
      if (self->interrupt && self->interrupt->load()) {
        errno = EINTR;
        return -1;
      }
      struct pollfd ready = {self->inFd, POLLIN, 0};
      if (::poll(&ready, 1, -1) < 0) {
        if (errno == EINTR)
          continue;
        return -1;
      }
      char byte;
      ssize_t n = ::read(self->inFd, &byte, 1);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return -1;
      if (n == 0)
        return 0;
      size_t used = std::mbrtowc(c, &byte, 1, &self->state);
      if (used == size_t(-2))
        continue; // more bytes of this character to come
      if (used == size_t(-1)) {
        // Not a character of the encoding: the byte as it is.
        self->state = std::mbstate_t{};
        *c = wchar_t(static_cast<unsigned char>(byte));
      }
      return 1;
    }
  }
};

bool LineEditor::available() { return true; }

std::unique_ptr<LineEditor>
LineEditor::open(int inFd, int outFd, const std::string &historyPath,
                 const std::atomic<bool> *interrupt, std::string *why) {
  *why = unusableReason(inFd, outFd);
  if (!why->empty())
    return nullptr;
  // The terminal's character encoding, for the characters typed and
  // echoed (only the character type category: numbers print as before).
  std::setlocale(LC_CTYPE, "");
  auto impl = std::make_unique<Impl>();
  impl->inFd = inFd;
  impl->interrupt = interrupt;
  impl->historyPath = historyPath;
  int inCopy = ::dup(inFd), outCopy = ::dup(outFd);
  if (inCopy >= 0)
    impl->in = ::fdopen(inCopy, "r");
  if (outCopy >= 0)
    impl->out = ::fdopen(outCopy, "w");
  if (!impl->in || !impl->out) {
    *why = std::string("opening the terminal: ") + std::strerror(errno);
    if (!impl->in && inCopy >= 0)
      ::close(inCopy);
    if (!impl->out && outCopy >= 0)
      ::close(outCopy);
    return nullptr;
  }
  impl->el = el_init_fd("pccx-run", impl->in, impl->out, impl->out, inFd,
                        outFd, outFd);
  impl->history = history_init();
  if (!impl->el || !impl->history) {
    *why = "libedit could not start";
    return nullptr;
  }
  HistEvent event;
  history(impl->history, &event, H_SETSIZE, 1000);
  history(impl->history, &event, H_SETUNIQUE, 1);
  // A file that is not libedit's history (another program's, a typo) is
  // neither read nor overwritten; editing goes on without it.
  // Only a regular file of a history's size is read: a FIFO would block,
  // a device or a huge file would never end.
  std::string historyError;
  struct stat st {};
  const bool exists =
      !historyPath.empty() && ::stat(historyPath.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    historyError = historyPath + ": not a regular file (left as it is)";
    impl->historyPath.clear();
  } else if (exists && uint64_t(st.st_size) > kMaxHistoryBytes) {
    historyError = historyPath + ": " + std::to_string(st.st_size) +
                   " bytes, more than a history of " +
                   std::to_string(kMaxHistoryBytes) +
                   " bytes (left as it is)";
    impl->historyPath.clear();
  } else if (exists &&
             history(impl->history, &event, H_LOAD, historyPath.c_str()) < 0) {
    historyError = historyPath +
                   ": not a history file libedit can read (left as it is)";
    impl->historyPath.clear();
  }
  el_set(impl->el, EL_CLIENTDATA, impl.get());
  el_set(impl->el, EL_EDITOR, "emacs");
  el_set(impl->el, EL_SIGNAL, 0);
  el_set(impl->el, EL_HIST, history, impl->history);
  el_set(impl->el, EL_PROMPT, &Impl::promptOf);
  el_set(impl->el, EL_GETCFN, &Impl::readChar);
  std::unique_ptr<LineEditor> editor(new LineEditor(std::move(impl)));
  editor->historyError_ = historyError;
  return editor;
}

LineEditor::Result LineEditor::read(const std::string &prompt,
                                    std::string *line) {
  impl_->prompt = prompt;
  impl_->state = std::mbstate_t{};
  int count = 0;
  errno = 0;
  const char *text = el_gets(impl_->el, &count);
  if (impl_->interrupt && impl_->interrupt->load())
    return Result::Interrupted;
  if (!text)
    return count < 0 ? Result::Failed : Result::End;
  *line = text;
  if (!line->empty() && line->back() == '\n')
    line->pop_back();
  else
    std::fputc('\n', impl_->out); // the input ended after this line
  std::fflush(impl_->out);
  if (line->find_first_not_of(" \t") != std::string::npos) {
    HistEvent event;
    history(impl_->history, &event, H_ENTER, line->c_str());
    if (!impl_->historyPath.empty() && historyError_.empty() &&
        history(impl_->history, &event, H_SAVE,
                impl_->historyPath.c_str()) < 0)
      historyError_ = impl_->historyPath + ": " +
                      (errno ? std::strerror(errno) : "cannot be written");
  }
  return Result::Line;
}

#else // no libedit

struct LineEditor::Impl {};

bool LineEditor::available() { return false; }

std::unique_ptr<LineEditor> LineEditor::open(int inFd, int outFd,
                                             const std::string &,
                                             const std::atomic<bool> *,
                                             std::string *why) {
  *why = unusableReason(inFd, outFd);
  if (why->empty())
    *why = "this build has no line editing (libedit)";
  return nullptr;
}

LineEditor::Result LineEditor::read(const std::string &, std::string *) {
  return Result::Failed;
}

#endif

LineEditor::LineEditor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LineEditor::~LineEditor() = default;

} // namespace pccx::app
