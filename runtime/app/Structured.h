//===- Structured.h - JSON replies from a bundle's tokenizer ----*- C++ -*-===//
//
// Structured output for the tools: a tokenizer's vocabulary as the
// grammar's token trie, JSON schema files, and a reply's constraint with
// the checks that make it safe to decode under (docs/serving.md,
// "Structured output").
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_STRUCTURED_H
#define PCCX_RUNTIME_APP_STRUCTURED_H

#include "runtime/grammar/TokenMask.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <memory>
#include <mutex>
#include <set>

namespace pccx::app {

/// The token trie of `tokenizer`, built on first use and kept (a 262 144
/// piece vocabulary takes a fraction of a second). Thread safe.
class StructuredVocabulary {
public:
  explicit StructuredVocabulary(const Tokenizer &tokenizer)
      : tokenizer_(tokenizer) {}
  std::shared_ptr<const grammar::TokenVocabulary> get();

private:
  const Tokenizer &tokenizer_;
  std::once_flag once_;
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;
};

/// Reads and compiles a JSON Schema file; errors name the file.
std::shared_ptr<const grammar::Schema> loadJsonSchema(const std::string &path,
                                                      std::string *error);

/// A reply's constraint; null with `*error` when the vocabulary lacks a
/// byte the schema may need, or there is no end token.
std::shared_ptr<grammar::JsonConstraint>
makeJsonConstraint(std::shared_ptr<const grammar::Schema> schema,
                   std::shared_ptr<const grammar::TokenVocabulary> vocabulary,
                   const std::set<int32_t> &endTokens, std::string *error);

/// "json mask: N tokens, M ms per token" for the tools' statistics.
std::string formatMaskCost(const grammar::JsonConstraint &constraint);

} // namespace pccx::app

#endif
