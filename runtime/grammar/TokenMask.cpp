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
  PlainRun run;
  run.room = INT64_MAX;
  for (char c : text)
    if (c == '\\' || run.take(uint8_t(c)) != PlainRun::Step::Taken)
      return false;
  return run.text.need == 0;
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

JsonConstraint::JsonConstraint(
    std::shared_ptr<const Schema> schema,
    std::shared_ptr<const TokenVocabulary> vocabulary,
    std::set<int32_t> endTokens)
    : matcher_(std::move(schema)), vocabulary_(std::move(vocabulary)),
      endTokens_(std::move(endTokens)),
      budget_(int64_t(vocabulary_->trieNodes()) + kMaxMaskWork) {
  state_ = matcher_.start();
  // A walk's level grows by one per trie byte but a plain-text run's.
  levels_.resize(vocabulary_->longestText() + 1);
  closed_.resize(levels_.size());
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

bool JsonConstraint::spend(int64_t steps) {
  // The interrupt is read every this many steps (a few microseconds).
  constexpr int64_t kInterruptCheck = 4096;
  work_ += steps;
  if (work_ > budget_) {
    error_ = "the schema's token mask exceeded its work budget of " +
             std::to_string(budget_) + " steps";
    stopped_ = true;
  } else if (work_ >= nextCheck_) {
    nextCheck_ = work_ + kInterruptCheck;
    if (interrupted_.load(std::memory_order_relaxed) ||
        (interrupt_ && interrupt_->load(std::memory_order_relaxed))) {
      error_ = "the token mask was interrupted";
      stopped_ = true;
    }
  }
  return !stopped_;
}

bool JsonConstraint::step(const MatchState &in, uint8_t byte, MatchState *out) {
  int64_t fed = 0;
  const bool taken = matcher_.step(in, byte, out, &fed);
  return spend(fed) && taken;
}

bool JsonConstraint::allowAt(const TokenVocabulary::Trie &trie, uint32_t index,
                             int64_t plainRoom) {
  const TokenVocabulary::Node &node = trie.nodes[index];
  if (node.plainBelow && node.subtreeEnd > node.subtreeBegin &&
      plainRoom >= int64_t(node.charsBelow)) {
    allowRange(trie, node.subtreeBegin, node.subtreeEnd);
    return true;
  }
  allowRange(trie, node.tokenBegin, node.tokenEnd);
  return false;
}

void JsonConstraint::visit(const TokenVocabulary::Trie &trie, uint32_t index,
                           size_t depth) {
  const auto &nodes = trie.nodes;
  const TokenVocabulary::Node &node = nodes[index];
  if (!spend(1) ||
      allowAt(trie, index,
              node.plainBelow ? matcher_.plainRoom(levels_[depth]) : -1))
    return;
  const PlainRun run = matcher_.plainRun(levels_[depth]);
  closed_[depth].used = 0; // a new run's
  for (uint32_t c = node.firstChild; c && !stopped_; c = nodes[c].nextSibling) {
    const uint8_t byte = nodes[c].byte;
    if (run.active()) {
      PlainRun next = run;
      const PlainRun::Step taken = next.take(byte);
      if (taken == PlainRun::Step::Taken)
        visitRun(trie, c, depth, next);
      if (taken != PlainRun::Step::Close)
        continue;
    }
    if (step(levels_[depth], byte, &levels_[depth + 1]))
      visit(trie, c, depth + 1);
  }
}

void JsonConstraint::visitRun(const TokenVocabulary::Trie &trie, uint32_t index,
                              size_t depth, const PlainRun &run) {
  // Any token that ends here is allowed: the run refuses every byte after
  // which no branch has room.
  const auto &nodes = trie.nodes;
  if (!spend(1) || allowAt(trie, index, run.roomLeft()))
    return;
  for (uint32_t c = nodes[index].firstChild; c && !stopped_;
       c = nodes[c].nextSibling) {
    PlainRun next = run;
    switch (next.take(nodes[c].byte)) {
    case PlainRun::Step::Taken:
      visitRun(trie, c, depth, next);
      break;
    case PlainRun::Step::Refused:
      break;
    case PlainRun::Step::Close:
      if (closeRun(depth, run, &levels_[depth + 1]))
        visit(trie, c, depth + 1);
      break;
    }
  }
}

bool JsonConstraint::closeRun(size_t depth, const PlainRun &run,
                              MatchState *out) {
  // Which branches a closing quote keeps depends only on the characters
  // the run read: made once per count.
  Closed &closed = closed_[depth];
  const uint32_t chars = run.text.chars;
  size_t i = 0;
  while (i < closed.used && closed.chars[i] != chars)
    ++i;
  if (i == closed.used) {
    if (closed.states.size() == i)
      closed.states.emplace_back(), closed.chars.push_back(0);
    closed.chars[i] = chars;
    ++closed.used;
    int64_t fed = 0;
    matcher_.materialize(levels_[depth], run, &scratch_, &fed);
    matcher_.step(scratch_, '"', &closed.states[i], &fed);
    if (!spend(fed))
      return false;
  }
  *out = closed.states[i];
  return !out->empty();
}

bool JsonConstraint::mask(float *logits, size_t count) {
  if (!error_.empty())
    return false;
  const auto t0 = std::chrono::steady_clock::now();
  allowed_.assign(std::max(count, vocabulary_->size()), 0);
  work_ = 0;
  nextCheck_ = 0;
  stopped_ = false;
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
  lastWork_ = work_;
  maxWork_ = std::max(maxWork_, work_);
  bool any = false;
  for (size_t i = 0; i < count && !any && !stopped_; ++i)
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
  if (state_.ended || !error_.empty())
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
