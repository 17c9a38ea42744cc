//===- Structured.cpp - JSON replies from a bundle's tokenizer ------------===//

#include "runtime/app/Structured.h"

#include "hw/support/InputFile.h"

#include <cstdio>

namespace pccx::app {

std::shared_ptr<const grammar::TokenVocabulary> StructuredVocabulary::get() {
  std::call_once(once_, [&] {
    std::vector<std::string> texts(size_t(tokenizer_.size()));
    for (int32_t id = 0; id < tokenizer_.size(); ++id)
      texts[size_t(id)] = tokenizer_.tokenText(id);
    vocabulary_ = std::make_shared<grammar::TokenVocabulary>(std::move(texts));
  });
  return vocabulary_;
}

std::shared_ptr<const grammar::Schema> loadJsonSchema(const std::string &path,
                                                      std::string *error) {
  // A regular file of a schema's size only: /dev/zero or a FIFO named by
  // mistake used to be read without end, or to block.
  std::string text;
  if (!support::readInputFile(path, support::kMaxSchemaFileBytes, &text,
                              error))
    return nullptr;
  grammar::Json json =
      grammar::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    *error = path + ": not valid JSON";
    return nullptr;
  }
  auto schema = grammar::compileSchema(json, error);
  if (!schema)
    *error = path + ": " + *error;
  return schema;
}

std::shared_ptr<grammar::JsonConstraint>
makeJsonConstraint(std::shared_ptr<const grammar::Schema> schema,
                   std::shared_ptr<const grammar::TokenVocabulary> vocabulary,
                   const std::set<int32_t> &endTokens, std::string *error) {
  if (endTokens.empty()) {
    *error = "structured output needs an end token (<end_of_turn> or EOS)";
    return nullptr;
  }
  auto constraint = std::make_shared<grammar::JsonConstraint>(
      std::move(schema), std::move(vocabulary), endTokens);
  *error = constraint->checkVocabulary();
  if (!error->empty())
    return nullptr;
  return constraint;
}

std::string formatMaskCost(const grammar::JsonConstraint &constraint) {
  char line[128];
  std::snprintf(line, sizeof line, "json mask: %lld tokens, %.3f ms per token",
                (long long)constraint.masks(),
                constraint.masks() ? constraint.maskSeconds() * 1e3 /
                                         double(constraint.masks())
                                   : 0.0);
  return line;
}

} // namespace pccx::app
