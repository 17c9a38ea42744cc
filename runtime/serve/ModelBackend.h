//===- ModelBackend.h - pccx-serve's backend over a real model --*- C++ -*-===//
//
// The Backend the server asks of a bundle's model: prompts through its
// tokenizer and chat format, replies on its session (one at a time, or
// over several slots with a BatchEngine), token texts and decodings for
// log-probabilities, constraints for structured output.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_MODELBACKEND_H
#define PCCX_RUNTIME_SERVE_MODELBACKEND_H

#include "runtime/serve/Server.h"

#include <memory>

namespace pccx::serve {

/// The backend over `session` of `model`; with `parallel` above 1, replies
/// are decoded together by a BatchEngine over that many slots.
std::unique_ptr<Backend> makeModelBackend(exec::Session &session,
                                          const exec::Model &model,
                                          const Tokenizer &tokenizer,
                                          const app::ChatFormat &format,
                                          int parallel);

} // namespace pccx::serve

#endif
