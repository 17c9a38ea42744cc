//===- GuardedMain.h - no exception escapes a tool's main -------*- C++ -*-===//
//
// The libraries return errors as values; an exception reaching main (an
// allocation a hostile input made huge, a library bug) would otherwise end
// in std::terminate and abort(). It is reported like any other error:
// "TOOL: error: ..." and exit status 1. SIGBUS, which a mapped bundle or
// checkpoint truncated under the process raises, is reported the same way.
// The signals that end a tool (SIGINT, SIGTERM, SIGHUP) first remove the
// temp files of unfinished outputs (tools/common/OutputCleanup.h). Output
// that could not be written to stdout in full is an error too.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TOOLS_COMMON_GUARDEDMAIN_H
#define PCCX_TOOLS_COMMON_GUARDEDMAIN_H

#include "tools/common/OutputCleanup.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <cstring>
#include <exception>
#include <new>
#include <unistd.h>

namespace pccx::tools {

namespace detail {
inline const char *&faultingTool() {
  static const char *tool = "";
  return tool;
}
/// SIGBUS comes from a mapped file that shrank under the process (a bundle
/// truncated or rewritten in place while it runs): reported as an error,
/// with async-signal-safe calls only, instead of a core dump.
inline void reportBusError(int) {
  const char *tool = faultingTool();
  const char tail[] = ": error: a mapped file (the bundle or checkpoint) "
                      "was truncated or changed while in use\n";
  (void)!::write(2, tool, std::strlen(tool));
  (void)!::write(2, tail, sizeof tail - 1);
  ::_exit(1);
}

} // namespace detail

/// `status`, or 1 when standard output was not written in full (a full
/// disk, /dev/full): a tool whose output was cut must not exit 0.
inline int checkStdout(const char *tool, int status) {
  std::cout.flush();
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout) && std::cout.good())
    return status;
  // A write that failed earlier (stdio's buffer filled) left no errno.
  std::fprintf(stderr, "%s: error: writing standard output: %s\n", tool,
               errno ? std::strerror(errno)
                     : "a write failed (disk full, or the output closed); "
                       "the output is incomplete");
  return status ? status : 1;
}

template <typename Body> int guardedMain(const char *tool, Body body) {
  detail::faultingTool() = tool;
  std::signal(SIGBUS, detail::reportBusError);
  installOutputCleanup();
  try {
    return checkStdout(tool, body());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "%s: error: out of memory\n", tool);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: internal error: %s\n", tool, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: error: internal error\n", tool);
  }
  return 1;
}

} // namespace pccx::tools

#endif
