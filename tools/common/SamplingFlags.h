//===- SamplingFlags.h - the sampling flags of the runtime tools -*- C++ -*-===//
//
// pccx-run and pccx-serve spell the sampler's settings the same way, with
// the aliases llama.cpp's tools take (--temp, --repeat-penalty); each tool
// describes them in its own --help (pccx-serve's are its defaults for
// requests). The seed is each tool's own: pccx-serve also takes -1.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TOOLS_COMMON_SAMPLINGFLAGS_H
#define PCCX_TOOLS_COMMON_SAMPLINGFLAGS_H

#include "runtime/app/Sampler.h"
#include "tools/common/CommandLine.h"

namespace pccx::tools {

inline void declareSamplingOptions(CommandLine &cl,
                                   app::SamplingOptions *sampling) {
  cl.number("--temp, --temperature", &sampling->temperature);
  cl.count("--top-k", &sampling->topK);
  cl.number("--top-p", &sampling->topP);
  cl.number("--min-p", &sampling->minP);
  cl.number("--repeat-penalty, --repetition-penalty",
            &sampling->repetitionPenalty);
  cl.number("--presence-penalty", &sampling->presencePenalty);
  cl.number("--frequency-penalty", &sampling->frequencyPenalty);
}

} // namespace pccx::tools

#endif
