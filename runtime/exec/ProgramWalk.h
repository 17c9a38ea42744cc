//===- ProgramWalk.h - patch a program and walk its segments ----*- C++ -*-===//
//
// The one way a step goes through a program, shared by the session that
// runs it and by the timing model that replays it (pccx-prof): the patch
// fields get their values with checked arithmetic, then the segments are
// walked in execution order, each event before the word it stands at.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_EXEC_PROGRAMWALK_H
#define PCCX_RUNTIME_EXEC_PROGRAMWALK_H

#include "runtime/exec/Model.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pccx::exec {

/// Writes every patch site of `program` into `words` (the program's words,
/// or a copy already patched for an earlier step) for one step: step row r
/// is at position rowPosition(r) with token rowToken(r). Each value is
/// source * scale + offset, computed without overflow and checked against
/// its field; on failure `why` names the field, the word and the value.
bool patchProgram(const Program &program, std::vector<uint64_t> &words,
                  const std::function<int64_t(int64_t)> &rowPosition,
                  const std::function<int32_t(int64_t)> &rowToken,
                  std::string *why);

/// Walks `program`'s segments in execution order: onSegment(seg) first,
/// then for each word i its events (onEvent(seg, e)) and the word itself
/// (onWord(seg, i)), then the events after the last word, then
/// onSegmentEnd(seg). Stops at the first callback that returns false.
template <typename OnSegment, typename OnEvent, typename OnWord,
          typename OnSegmentEnd>
bool walkProgram(const Program &program, OnSegment onSegment, OnEvent onEvent,
                 OnWord onWord, OnSegmentEnd onSegmentEnd) {
  for (const Segment &seg : program.segments) {
    if (!onSegment(seg))
      return false;
    size_t next = 0;
    for (uint32_t i = seg.begin; i < seg.end; ++i) {
      while (next < seg.events.size() && seg.events[next].at == i)
        if (!onEvent(seg, seg.events[next++]))
          return false;
      if (!onWord(seg, i))
        return false;
    }
    while (next < seg.events.size())
      if (!onEvent(seg, seg.events[next++]))
        return false;
    if (!onSegmentEnd(seg))
      return false;
  }
  return true;
}

} // namespace pccx::exec

#endif
