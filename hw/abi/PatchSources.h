//===- PatchSources.h - run-time values a patch point can take --*- C++ -*-===//
//
// A patch point rewrites an instruction field before the word is issued:
//   field = source(q) * scale + offset,   q = step position + delta
// (delta selects the row of a multi-token step). The one list of sources,
// shared by the pccx dialect's verifier, the emitter and the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_ABI_PATCHSOURCES_H
#define PCCX_HW_ABI_PATCHSOURCES_H

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace pccx::bundle {

enum class PatchSource {
  TokenId,     ///< token id of row `delta` of the step
  Position,    ///< q
  AttnLen,     ///< q + 1: keys a full-attention query at q sees
  WindowLen,   ///< min(q + 1, window): keys a sliding query sees
  WindowStart, ///< max(0, q + 1 - window): first key a sliding query sees
};

constexpr const char *kPatchSourceNames[] = {
    "token_id", "position", "attn_len", "window_len", "window_start"};

inline bool parsePatchSource(const char *name, PatchSource *out) {
  for (int i = 0; i < 5; ++i)
    if (std::strcmp(name, kPatchSourceNames[i]) == 0) {
      *out = PatchSource(i);
      return true;
    }
  return false;
}

/// Whether the source needs a `window` (> 0).
inline bool patchSourceNeedsWindow(PatchSource s) {
  return s == PatchSource::WindowLen || s == PatchSource::WindowStart;
}

/// The source's value for query position q.
inline int64_t patchSourceValue(PatchSource s, int64_t q, int64_t token,
                                 int64_t window) {
  switch (s) {
  case PatchSource::TokenId:
    return token;
  case PatchSource::Position:
    return q;
  case PatchSource::AttnLen:
    return q + 1;
  case PatchSource::WindowLen:
    return std::min(q + 1, window);
  case PatchSource::WindowStart:
    return std::max<int64_t>(0, q + 1 - window);
  }
  return 0;
}

} // namespace pccx::bundle

#endif
