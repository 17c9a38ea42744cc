//===- TokenMask.h - which tokens keep a reply valid ------------*- C++ -*-===//
//
// Constrained decoding at the token level. A vocabulary's token texts go
// into a byte trie once; a constraint walks the trie with the matcher's
// state, dropping a subtree at the first byte the matcher refuses, so a
// mask costs the nodes whose prefixes stay valid, not the vocabulary's
// bytes. Inside free string text, where nearly every token is valid, a
// subtree whose tokens are all plain text (no quote, backslash or control
// byte; whole UTF-8 characters) is taken at once when the string has room
// for its longest token.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_GRAMMAR_TOKENMASK_H
#define PCCX_RUNTIME_GRAMMAR_TOKENMASK_H

#include "runtime/grammar/JsonSchema.h"

#include <set>

namespace pccx::grammar {

/// Token texts in a trie. Built once per tokenizer, shared by requests.
class TokenVocabulary {
public:
  /// `texts[id]`: the bytes token `id` adds to a reply; empty for tokens
  /// that are not text (control and user-defined pieces).
  explicit TokenVocabulary(std::vector<std::string> texts);
  size_t size() const { return texts_.size(); }
  const std::string &text(int32_t id) const { return texts_[size_t(id)]; }
  /// Whether some token is exactly this one byte.
  bool hasByte(uint8_t byte) const { return singleByte_[byte]; }
  /// The longest token text: the deepest a mask's walk goes.
  size_t longestText() const { return longest_; }
  size_t trieNodes() const { return all_.nodes.size(); }

private:
  friend class JsonConstraint;
  struct Node {
    uint32_t firstChild = 0, nextSibling = 0; ///< 0: none (0 is the root)
    uint8_t byte = 0;
    bool plainBelow = true;   ///< every token in the subtree is plain text
    uint32_t charsBelow = 0;  ///< most characters a subtree token adds
    uint32_t tokenBegin = 0, tokenEnd = 0;     ///< tokens ending here
    uint32_t subtreeBegin = 0, subtreeEnd = 0; ///< tokens in the subtree
  };
  struct Trie {
    std::vector<Node> nodes;
    std::vector<int32_t> order; ///< token ids in trie (byte) order
  };
  Trie build(std::vector<int32_t> ids) const;
  std::vector<std::string> texts_;
  Trie all_;
  /// The tokens that are not plain text, for masks inside a string with no
  /// length bound, which take every plain one at once (`plain_`).
  Trie special_;
  std::vector<uint8_t> plain_;
  size_t longest_ = 0;
  bool singleByte_[256] = {};
};

/// One reply's constraint: the matcher's state, advanced token by token.
class JsonConstraint {
public:
  /// `endTokens`: ids that end the reply (allowed once the document is
  /// complete, and then only they are).
  JsonConstraint(std::shared_ptr<const Schema> schema,
                 std::shared_ptr<const TokenVocabulary> vocabulary,
                 std::set<int32_t> endTokens);
  /// Empty when every byte the schema may need has a one-byte token in the
  /// vocabulary; else which byte is missing.
  std::string checkVocabulary() const;
  /// Sets the `count` logits of the tokens that cannot come next to -inf
  /// (ids past the vocabulary never can). False when none can (then
  /// nothing is changed).
  bool mask(float *logits, size_t count);
  /// Takes the token chosen; false (state unchanged) when it is not
  /// allowed.
  bool accept(int32_t token);
  /// A complete document has been read.
  bool complete() const { return matcher_.canEnd(state_) || state_.ended; }
  /// The first end token (what a reply that cannot go on ends with).
  int32_t endToken() const;
  /// Masks made and the seconds they took.
  int64_t masks() const { return masks_; }
  double maskSeconds() const { return maskSeconds_; }

private:
  void visit(const TokenVocabulary::Trie &trie, uint32_t node, size_t depth);
  void allowRange(const TokenVocabulary::Trie &trie, uint32_t begin,
                  uint32_t end);
  Matcher matcher_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::set<int32_t> endTokens_;
  MatchState state_;
  std::vector<MatchState> levels_; ///< the state at each trie depth
  std::vector<uint8_t> allowed_;
  int64_t masks_ = 0;
  double maskSeconds_ = 0;
};

} // namespace pccx::grammar

#endif
