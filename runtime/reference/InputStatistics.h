//===- InputStatistics.h - projection inputs on calibration text -*- C++
//-*-===//
//
// Runs the float reference on the original weights over calibration windows
// and sums, for every tensor the default policy quantizes, the Gram matrix
// X^T X of the inputs it is multiplied with: the statistics GPTQ-style
// rounding minimises the projection's output error with
// (pccx-compile --int4-rounding gptq, hw/numerics/Gptq.h).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_REFERENCE_INPUTSTATISTICS_H
#define PCCX_RUNTIME_REFERENCE_INPUTSTATISTICS_H

#include "runtime/reference/ReferenceCheckpoint.h"
#include "hw/numerics/Gptq.h"

#include <map>

namespace pccx::reference {

/// `windows` as for measureSensitivity. The result is keyed by the full
/// checkpoint name (with the text-decoder prefix; "lm_head.weight"
/// without), the name weight recipes use. A tied LM head's inputs belong
/// to "embed_tokens.weight".
bool collectInputGrams(const ReferenceCheckpoint &checkpoint,
                       const std::vector<std::vector<int32_t>> &windows,
                       int64_t positions,
                       std::map<std::string, hw::InputGram> *grams,
                       std::string *error);

/// The data-free stand-in for the LM head's inputs: the Gram matrix of the
/// head's own rows, sum_v E_v E_v^T (its final hidden states point along
/// the rows of the tokens it predicts). Keyed like collectInputGrams: the
/// embedding table for a tied head, "lm_head.weight" otherwise.
bool lmHeadSelfGram(const ReferenceCheckpoint &checkpoint,
                    std::map<std::string, hw::InputGram> *grams,
                    std::string *error);

} // namespace pccx::reference

#endif
