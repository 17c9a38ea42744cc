//===- TokenMask.cpp - which tokens keep a reply valid --------------------===//

#include "runtime/grammar/TokenMask.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace pccx::grammar {

namespace {

/// Text a string takes without any change but its length: printable
/// bytes other than the quote and the backslash, in whole UTF-8
/// characters.
bool plainText(const std::string &text) {
  size_t need = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t b = uint8_t(text[i]);
    if (need > 0) {
      if ((b & 0xC0) != 0x80)
        return false;
      --need;
      continue;
    }
    if (b < 0x20 || b == '"' || b == '\\')
      return false;
    if (b < 0x80)
      continue;
    // Lead bytes, and the second byte's narrower ranges after some
    // (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
    uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF)
      need = 1;
    else if (b >= 0xE0 && b <= 0xEF)
      need = 2, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    else if (b >= 0xF0 && b <= 0xF4)
      need = 3, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    else
      return false;
    if (i + 1 >= text.size() || uint8_t(text[i + 1]) < lo ||
        uint8_t(text[i + 1]) > hi)
      return false;
  }
  return need == 0;
}

} // namespace

TokenVocabulary::TokenVocabulary(std::vector<std::string> texts)
    : texts_(std::move(texts)), plain_(texts_.size(), 0) {
  std::vector<int32_t> ids, special;
  for (size_t id = 0; id < texts_.size(); ++id)
    if (!texts_[id].empty()) {
      ids.push_back(int32_t(id));
      if (texts_[id].size() == 1)
        singleByte_[uint8_t(texts_[id][0])] = true;
      longest_ = std::max(longest_, texts_[id].size());
      if (plainText(texts_[id]))
        plain_[id] = 1;
      else
        special.push_back(int32_t(id));
    }
  all_ = build(std::move(ids));
  special_ = build(std::move(special));
}

TokenVocabulary::Trie TokenVocabulary::build(std::vector<int32_t> ids) const {
  Trie trie;
  auto &nodes = trie.nodes;
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    const int order = texts_[size_t(a)].compare(texts_[size_t(b)]);
    return order < 0 || (order == 0 && a < b);
  });
  // Insert in byte order: each node's tokens, and its subtree's, are a
  // range of `order`, and children are made in byte order.
  nodes.emplace_back();
  std::vector<uint32_t> path = {0}, lastChild = {0};
  const std::string *prev = nullptr;
  for (uint32_t i = 0; i < ids.size(); ++i) {
    const std::string &text = texts_[size_t(ids[i])];
    size_t common = 0;
    if (prev)
      while (common < prev->size() && common < text.size() &&
             (*prev)[common] == text[common])
        ++common;
    while (path.size() > common + 1) {
      nodes[path.back()].subtreeEnd = i;
      path.pop_back();
    }
    for (size_t d = common; d < text.size(); ++d) {
      const uint32_t parent = path.back();
      const uint32_t node = uint32_t(nodes.size());
      nodes.emplace_back();
      nodes[node].byte = uint8_t(text[d]);
      nodes[node].subtreeBegin = i;
      if (lastChild[parent] == 0)
        nodes[parent].firstChild = node;
      else
        nodes[lastChild[parent]].nextSibling = node;
      lastChild[parent] = node;
      lastChild.push_back(0);
      path.push_back(node);
    }
    Node &here = nodes[path.back()];
    if (prev && *prev == text)
      here.tokenEnd = i + 1;
    else
      here.tokenBegin = i, here.tokenEnd = i + 1;
    trie.order.push_back(ids[i]);
    prev = &text;
  }
  for (uint32_t node : path)
    nodes[node].subtreeEnd = uint32_t(ids.size());
  // Children come after their parents: the reverse order sees every
  // subtree before its root.
  for (size_t n = nodes.size(); n-- > 0;) {
    Node &node = nodes[n];
    if (node.tokenEnd > node.tokenBegin)
      node.plainBelow = plain_[size_t(trie.order[node.tokenBegin])] != 0;
    for (uint32_t c = node.firstChild; c; c = nodes[c].nextSibling) {
      const Node &child = nodes[c];
      node.plainBelow = node.plainBelow && child.plainBelow;
      const uint32_t starts = (child.byte & 0xC0) != 0x80 ? 1 : 0;
      node.charsBelow = std::max(node.charsBelow, starts + child.charsBelow);
    }
  }
  return trie;
}

JsonConstraint::JsonConstraint(std::shared_ptr<const Schema> schema,
                               std::shared_ptr<const TokenVocabulary> vocabulary,
                               std::set<int32_t> endTokens)
    : matcher_(std::move(schema)), vocabulary_(std::move(vocabulary)),
      endTokens_(std::move(endTokens)) {
  state_ = matcher_.start();
  levels_.resize(vocabulary_->longestText() + 1);
}

std::string JsonConstraint::checkVocabulary() const {
  const std::vector<bool> needed = requiredBytes(matcher_.schema());
  for (int b = 0; b < 256; ++b)
    if (needed[size_t(b)] && !vocabulary_->hasByte(uint8_t(b))) {
      char spelled[64];
      if (b >= 0x21 && b < 0x7F)
        std::snprintf(spelled, sizeof spelled, "'%c' (0x%02X)", b, b);
      else
        std::snprintf(spelled, sizeof spelled, "byte 0x%02X", b);
      return std::string("the tokenizer has no one-byte token for ") +
             spelled +
             ", which a reply of this schema may need (constrained decoding "
             "needs one for every such byte: a vocabulary with byte "
             "fallback, as Gemma's, has them all)";
    }
  return {};
}

void JsonConstraint::allowRange(const TokenVocabulary::Trie &trie,
                                uint32_t begin, uint32_t end) {
  const auto &order = trie.order;
  for (uint32_t i = begin; i < end; ++i)
    allowed_[size_t(order[i])] = 1;
}

void JsonConstraint::visit(const TokenVocabulary::Trie &trie, uint32_t index,
                           size_t depth) {
  const auto &nodes = trie.nodes;
  const TokenVocabulary::Node &node = nodes[index];
  allowRange(trie, node.tokenBegin, node.tokenEnd);
  if (node.plainBelow && node.subtreeEnd > node.subtreeBegin &&
      matcher_.plainRoom(levels_[depth]) >= int64_t(node.charsBelow)) {
    allowRange(trie, node.subtreeBegin, node.subtreeEnd);
    return;
  }
  const bool fixed = matcher_.plainFixed(levels_[depth]);
  for (uint32_t c = node.firstChild; c; c = nodes[c].nextSibling) {
    const uint8_t byte = nodes[c].byte;
    if (fixed && byte >= 0x20 && byte < 0x80 && byte != '"' && byte != '\\')
      visit(trie, c, depth); // the same state: no step
    else if (matcher_.step(levels_[depth], byte, &levels_[depth + 1]))
      visit(trie, c, depth + 1);
  }
}

bool JsonConstraint::mask(float *logits, size_t count) {
  const auto t0 = std::chrono::steady_clock::now();
  allowed_.assign(std::max(count, vocabulary_->size()), 0);
  if (!state_.ended) {
    levels_[0] = state_;
    if (matcher_.plainRoom(state_) == INT64_MAX) {
      // Inside a string with no bound: every plain token at once, and the
      // walk only over the others.
      std::copy(vocabulary_->plain_.begin(), vocabulary_->plain_.end(),
                allowed_.begin());
      visit(vocabulary_->special_, 0, 0);
    } else {
      visit(vocabulary_->all_, 0, 0);
    }
    if (matcher_.canEnd(state_))
      for (int32_t id : endTokens_)
        if (id >= 0 && size_t(id) < allowed_.size())
          allowed_[size_t(id)] = 1;
  }
  bool any = false;
  for (size_t i = 0; i < count && !any; ++i)
    any = allowed_[i] && !std::isnan(logits[i]);
  if (any)
    for (size_t i = 0; i < count; ++i)
      if (!allowed_[i])
        logits[i] = -INFINITY;
  ++masks_;
  maskSeconds_ += std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
  return any;
}

bool JsonConstraint::accept(int32_t token) {
  if (state_.ended)
    return false;
  if (endTokens_.count(token)) {
    if (!matcher_.canEnd(state_))
      return false;
    state_.ended = true;
    return true;
  }
  if (token < 0 || size_t(token) >= vocabulary_->size())
    return false;
  const std::string &text = vocabulary_->text(token);
  return !text.empty() && matcher_.feed(&state_, text);
}

int32_t JsonConstraint::endToken() const {
  return endTokens_.empty() ? -1 : *endTokens_.begin();
}

} // namespace pccx::grammar
