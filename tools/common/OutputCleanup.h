//===- OutputCleanup.h - no half-written output survives a tool -*- C++ -*-===//
//
// The tools' handlers for the signals that end them: the temp files of
// unfinished outputs go (hw/support/OutputFile.h, removePartialOutputs),
// then the signal acts as it would have. Every tool main installs them,
// through guardedMain (tools/common/GuardedMain.h) or, in the LLVM-style
// tools built without exceptions, directly.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TOOLS_COMMON_OUTPUTCLEANUP_H
#define PCCX_TOOLS_COMMON_OUTPUTCLEANUP_H

#include "hw/support/OutputFile.h"

#include <csignal>
#include <cstring>

namespace pccx::tools {

namespace detail {
constexpr int kEndingSignals[] = {SIGINT, SIGTERM, SIGHUP};
inline struct sigaction (&previousEndingActions())[3] {
  static struct sigaction actions[3];
  return actions;
}
/// Removes the unfinished outputs, then lets what handled the signal before
/// (by default: termination) act on it.
inline void removeOutputsAndReraise(int sig) {
  removePartialOutputs();
  for (int i = 0; i < 3; ++i)
    if (kEndingSignals[i] == sig)
      ::sigaction(sig, &previousEndingActions()[i], nullptr);
  ::raise(sig);
}
} // namespace detail

/// Installs the tool's handlers for the signals that end it, so that no
/// half-written output survives it. A signal the parent made the process
/// ignore (nohup, a background job) stays ignored: removing the temp file
/// and carrying on would only turn it into a failure at the end. SIGXFSZ is
/// ignored: a file over RLIMIT_FSIZE is then a failed write (EFBIG),
/// reported as an error, rather than a signal that looks like a crash.
inline void installOutputCleanup() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = detail::removeOutputsAndReraise;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) {
    ::sigaction(detail::kEndingSignals[i], nullptr,
                &detail::previousEndingActions()[i]);
    if (detail::previousEndingActions()[i].sa_handler != SIG_IGN)
      ::sigaction(detail::kEndingSignals[i], &action, nullptr);
  }
  std::signal(SIGXFSZ, SIG_IGN);
}

} // namespace pccx::tools

#endif
