//===- ProgressLine.h - one rewritten status line on a terminal -*- C++ -*-===//
//
// Long tool runs (compiling a full-size checkpoint takes minutes) show where
// they are on one line of the terminal, rewritten in place: the stage, its
// step, and for byte streams the rate and the time left. A disabled line
// prints nothing, so callers need no checks of their own.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TOOLS_COMMON_PROGRESSLINE_H
#define PCCX_TOOLS_COMMON_PROGRESSLINE_H

#include "hw/support/Format.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace pccx::tools {

class ProgressLine {
public:
  ProgressLine(std::FILE *out, bool enabled, int stages)
      : out_(out), enabled_(enabled), stages_(stages) {}
  ~ProgressLine() { finish(); }

  /// Starts stage `index` (1-based) of the run.
  void stage(int index, const std::string &name) {
    stage_ = index;
    name_ = name;
    start_ = Clock::now();
    firstStep_ = true;
    show("", true);
  }
  /// A step of the current stage ("pass 3 of 12: name").
  void step(const std::string &detail) {
    show(detail, firstStep_);
    firstStep_ = false;
  }
  /// Bytes of the current stage written so far, with rate and time left;
  /// `prefix` names the item being written ("tensor 3 of 120").
  void bytes(uint64_t done, uint64_t total, const std::string &prefix = "") {
    double seconds =
        std::chrono::duration<double>(Clock::now() - start_).count();
    double rate = seconds > 0 ? double(done) / seconds : 0;
    std::string detail = prefix + pccx::formatString(
        "%.1f / %.1f MiB (%d%%)", double(done) / (1 << 20),
        double(total) / (1 << 20), total ? int(100 * done / total) : 100);
    if (rate > 0) {
      detail += pccx::formatString(", %.1f MiB/s", rate / (1 << 20));
      if (done < total)
        detail += ", ETA " + duration(double(total - done) / rate);
    }
    show(detail, done >= total);
  }
  /// Ends the line (the next output starts on a fresh one).
  void finish() {
    if (!pending_.empty())
      show(pending_, true);
    if (enabled_ && open_)
      std::fputc('\n', out_);
    open_ = false;
  }

private:
  using Clock = std::chrono::steady_clock;

  static std::string duration(double seconds) {
    long s = long(seconds + 0.5);
    return s >= 60 ? pccx::formatString("%ldm%02lds", s / 60, s % 60)
                   : pccx::formatString("%lds", s);
  }
  /// Rewrites the line at most ten times a second (always when `force`).
  void show(std::string detail, bool force) {
    if (!enabled_)
      return;
    auto now = Clock::now();
    if (!force && open_ && now - shown_ < std::chrono::milliseconds(100)) {
      pending_ = detail; // shown by the next update or by finish()
      return;
    }
    pending_.clear();
    shown_ = now;
    std::fprintf(out_, "\r\033[K[%d/%d] %s%s%s", stage_, stages_, name_.c_str(),
                 detail.empty() ? "" : ": ", detail.c_str());
    std::fflush(out_);
    open_ = true;
  }

  std::FILE *out_;
  bool enabled_;
  int stages_, stage_ = 0;
  std::string name_, pending_;
  bool firstStep_ = false;
  Clock::time_point start_ = Clock::now(), shown_;
  bool open_ = false;
};

} // namespace pccx::tools

#endif
