//===- TokenMask.h - which tokens keep a reply valid ------------*- C++ -*-===//
//
// Constrained decoding at the token level. A vocabulary's token texts go
// into a byte trie once; a constraint walks the trie with the matcher's
// state, dropping a subtree at the first byte the matcher refuses, so a
// mask costs the nodes whose prefixes stay valid, not the vocabulary's
// bytes. Inside free string text, where nearly every token is valid, a
// subtree whose tokens are all plain text (no quote, backslash or control
// byte; whole UTF-8 characters) is taken at once when the string has room
// for its longest token, and other plain bytes are walked as a PlainRun:
// one count for every branch, not a step of each. A mask's work is bounded
// (kMaxMaskWork) and may be interrupted; either ends the constraint with
// a named error.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_GRAMMAR_TOKENMASK_H
#define PCCX_RUNTIME_GRAMMAR_TOKENMASK_H

#include "runtime/grammar/JsonSchema.h"

#include <atomic>
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
  /// (ids past the vocabulary never can). False when none can, or the mask
  /// failed (error()); then nothing is changed.
  bool mask(float *logits, size_t count);
  /// Takes the token chosen; false (state unchanged) when it is not
  /// allowed, or the constraint failed.
  bool accept(int32_t token);
  /// A flag that stops a mask at once when raised (read every few thousand
  /// steps; null: none). Not owned: it must outlive the masks.
  void setInterrupt(const std::atomic<bool> *interrupt) {
    interrupt_ = interrupt;
  }
  /// Stops the mask in progress, from any thread, and every later one.
  void interrupt() { interrupted_.store(true, std::memory_order_relaxed); }
  /// The steps a mask may take (unless set: one per trie node and
  /// kMaxMaskWork).
  void setWorkBudget(int64_t steps) { budget_ = steps; }
  /// Why the constraint failed: a mask passed its work budget or was
  /// interrupted. Empty while it has not; once set, the reply cannot go on
  /// under the constraint.
  const std::string &error() const { return error_; }
  /// The steps the latest mask took, and the most any did.
  int64_t lastMaskWork() const { return lastWork_; }
  int64_t maxMaskWork() const { return maxWork_; }
  /// A complete document has been read.
  bool complete() const { return matcher_.canEnd(state_) || state_.ended; }
  /// The first end token (what a reply that cannot go on ends with).
  int32_t endToken() const;
  /// Masks made and the seconds they took.
  int64_t masks() const { return masks_; }
  double maskSeconds() const { return maskSeconds_; }

private:
  /// Walks the subtree of `node`, whose prefix leads to levels_[depth].
  void visit(const TokenVocabulary::Trie &trie, uint32_t node, size_t depth);
  /// Walks the subtree of `node`, whose prefix leads to levels_[depth]
  /// followed by the bytes `run` read.
  void visitRun(const TokenVocabulary::Trie &trie, uint32_t node, size_t depth,
                const PlainRun &run);
  /// `*out`: levels_[depth] after `run` and its closing quote; false when
  /// no branch takes them, or the mask stops.
  bool closeRun(size_t depth, const PlainRun &run, MatchState *out);
  /// Allows the tokens ending at `node`, or every one below it when the
  /// room of plain text left takes them all (true: nothing more to walk).
  bool allowAt(const TokenVocabulary::Trie &trie, uint32_t node,
               int64_t plainRoom);
  void allowRange(const TokenVocabulary::Trie &trie, uint32_t begin,
                  uint32_t end);
  /// Matcher::step counted against the budget.
  bool step(const MatchState &in, uint8_t byte, MatchState *out);
  /// Counts `steps` of work; false once the mask must stop (its budget
  /// passed, or interrupted).
  bool spend(int64_t steps);
  Matcher matcher_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  std::set<int32_t> endTokens_;
  MatchState state_;
  std::vector<MatchState> levels_; ///< the state at each trie depth
  /// For the run that starts at each level: the states after its closing
  /// quote, by the characters read before it (`used` of them valid).
  struct Closed {
    std::vector<uint32_t> chars;
    std::vector<MatchState> states;
    size_t used = 0;
  };
  std::vector<Closed> closed_;
  MatchState scratch_;
  std::vector<uint8_t> allowed_;
  int64_t masks_ = 0;
  double maskSeconds_ = 0;
  const std::atomic<bool> *interrupt_ = nullptr;
  std::atomic<bool> interrupted_{false};
  int64_t budget_;
  int64_t work_ = 0, nextCheck_ = 0, lastWork_ = 0, maxWork_ = 0;
  bool stopped_ = false; ///< the mask in progress stops
  std::string error_;
};

} // namespace pccx::grammar

#endif
