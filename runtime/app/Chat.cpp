//===- Chat.cpp - conversations over a session
//-----------------------------===//

#include "runtime/app/Chat.h"

#include "runtime/app/Generate.h"
#include "runtime/grammar/TokenMask.h"

#include <algorithm>
#include <chrono>

namespace pccx::app {

namespace {

/// Gemma's template trims every message's text.
std::string trimmed(const std::string &text) {
  const char *space = " \t\n\r\f\v";
  size_t first = text.find_first_not_of(space);
  if (first == std::string::npos)
    return {};
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

/// Length of the longest suffix of `text` that begins one of `stops`.
size_t heldBack(const std::string &text,
                const std::vector<std::string> &stops) {
  size_t held = 0;
  for (const std::string &stop : stops)
    for (size_t n = std::min(stop.size() - 1, text.size()); n > held; --n)
      if (text.compare(text.size() - n, n, stop, 0, n) == 0) {
        held = n;
        break;
      }
  return held;
}

} // namespace

std::unique_ptr<ChatFormat> ChatFormat::create(const Tokenizer &tokenizer,
                                               const bundle::ChatTemplate &chat,
                                               int32_t bosToken,
                                               std::string *error) {
  std::unique_ptr<ChatFormat> format(new ChatFormat(tokenizer));
  format->template_ = chat;
  // A template that is not Gemma's layout is not interpreted: Gemma's
  // built-in markers are used, as for a bundle without a template.
  const bundle::TurnMarkers &markers = chat.markers;
  format->bos_ = bosToken;
  format->startOfTurn_ = tokenizer.pieceId(markers.startOfTurn);
  format->endOfTurn_ = tokenizer.pieceId(markers.endOfTurn);
  for (auto [piece, id] : {std::pair(markers.startOfTurn, format->startOfTurn_),
                           std::pair(markers.endOfTurn, format->endOfTurn_)})
    if (id < 0) {
      *error = "the bundle's tokenizer has no '" + piece +
               "' piece; chat needs Gemma's turn markers as single tokens";
      return nullptr;
    }
  return format;
}

bool ChatFormat::appendText(const std::string &text, std::vector<int32_t> *ids,
                            std::string *error) const {
  if (text.empty())
    return true;
  std::vector<int32_t> encoded;
  if (!tokenizer_.encode(text, &encoded, error))
    return false;
  ids->insert(ids->end(), encoded.begin(), encoded.end());
  return true;
}

bool ChatFormat::appendMessage(const std::string &prefix,
                               const std::string &text,
                               std::vector<int32_t> *ids,
                               std::string *error) const {
  const std::string *markers[] = {&template_.markers.startOfTurn,
                                  &template_.markers.endOfTurn};
  // The first marker in `text` at or after `from`, and which one.
  auto nextMarker = [&](size_t from, const std::string **which) {
    size_t at = std::string::npos;
    for (const std::string *m : markers) {
      size_t found = m->empty() ? std::string::npos : text.find(*m, from);
      if (found < at) {
        at = found;
        *which = m;
      }
    }
    return at;
  };
  const std::string *marker = nullptr;
  size_t at = nextMarker(0, &marker);
  if (markersInText_ || at == std::string::npos)
    return appendText(prefix + text, ids, error); // one piece, as before
  // Each marker is encoded in two parts, "<" and the rest, which no piece
  // of the vocabulary spans as the marker: the ids spell the text.
  std::string pending = prefix;
  size_t from = 0;
  while (at != std::string::npos) {
    if (!appendText(pending + text.substr(from, at - from), ids, error) ||
        !appendText(marker->substr(0, 1), ids, error))
      return false;
    pending = marker->substr(1);
    from = at + marker->size();
    at = nextMarker(from, &marker);
  }
  return appendText(pending + text.substr(from), ids, error);
}

bool ChatFormat::appendTurnEnd(std::vector<int32_t> *ids,
                               std::string *error) const {
  ids->push_back(endOfTurn_);
  return appendText("\n", ids, error);
}

bool ChatFormat::appendTurn(const std::string &role, const std::string &text,
                            std::vector<int32_t> *ids,
                            std::string *error) const {
  ids->push_back(startOfTurn_);
  return appendMessage(role + "\n", trimmed(text), ids, error) &&
         appendTurnEnd(ids, error);
}

bool ChatFormat::appendModelOpening(std::vector<int32_t> *ids,
                                    std::string *error) const {
  ids->push_back(startOfTurn_);
  return appendText(template_.markers.modelRole + "\n", ids, error);
}

bool ChatFormat::checkRoles(const std::vector<ChatMessage> &messages,
                            size_t *first, std::string *error) const {
  *first = !messages.empty() && messages[0].role == "system" ? 1 : 0;
  for (size_t i = *first; i < messages.size(); ++i) {
    const bool userTurn = (i - *first) % 2 == 0;
    const std::string &r = messages[i].role;
    const std::string role = r == "assistant" ? "model" : r;
    if (role != (userTurn ? "user" : "model")) {
      *error = "message " + std::to_string(i) + " has role '" + r +
               "': after an optional system message, roles must alternate "
               "user, assistant, user, ...";
      return false;
    }
  }
  return true;
}

bool ChatFormat::appendRendered(const std::vector<ChatMessage> &messages,
                                size_t i, bool joinSystem,
                                std::vector<int32_t> *ids,
                                std::string *error) const {
  const ChatMessage &m = messages[i];
  const std::string role = m.role == "assistant" ? "model" : m.role;
  std::string text = trimmed(m.content);
  // The system message is prepended to the first turn, as Gemma's template
  // does.
  if (joinSystem)
    text = trimmed(messages[0].content) + "\n\n" + text;
  ids->push_back(startOfTurn_);
  return appendMessage(role + "\n", text, ids, error) &&
         appendTurnEnd(ids, error);
}

bool ChatFormat::render(const std::vector<ChatMessage> &messages,
                        bool openModelTurn, std::vector<int32_t> *ids,
                        std::string *error) const {
  size_t first = 0;
  if (!checkRoles(messages, &first, error))
    return false;
  if (bos_ >= 0)
    ids->push_back(bos_);
  for (size_t i = first; i < messages.size(); ++i)
    if (!appendRendered(messages, i, i == first && first == 1, ids, error))
      return false;
  return !openModelTurn || appendModelOpening(ids, error);
}

bool ChatFormat::renderFitting(const std::vector<ChatMessage> &messages,
                               bool openModelTurn, int64_t budget,
                               std::vector<int32_t> *ids, size_t *dropped,
                               std::string *error) const {
  *dropped = 0;
  size_t first = 0;
  if (!checkRoles(messages, &first, error))
    return false;
  const bool system = first == 1;
  // Each turn's tokens do not depend on the others', except that the
  // first turn kept carries the system text: the rendering is BOS, that
  // turn joined, the later turns, and the opening.
  std::vector<int32_t> head, opening;
  if (bos_ >= 0)
    head.push_back(bos_);
  if (openModelTurn && !appendModelOpening(&opening, error))
    return false;
  // Pairs from the first turn on may go while at least one message stays
  // after them: at most `most` pairs.
  const size_t n = messages.size(), rest = n - first;
  const size_t most = rest >= 3 ? (rest - 1) / 2 : 0;
  // Newest first: the turns that stay whatever happens, each tokenized
  // once (every older pair goes if they alone pass the budget).
  std::vector<std::vector<int32_t>> plain(n);
  size_t start = first + 2 * most; // the first turn kept
  int64_t total = int64_t(head.size() + opening.size());
  for (size_t i = n; i > start;) {
    --i;
    if (!appendRendered(messages, i, false, &plain[i], error))
      return false;
    total += int64_t(plain[i].size());
  }
  // The first turn kept as it is written, with the system text.
  std::vector<int32_t> lead;
  auto leadOf = [&](size_t i, std::vector<int32_t> *out) {
    out->clear();
    if (!system) {
      *out = plain[i];
      return true;
    }
    return appendRendered(messages, i, true, out, error);
  };
  if (start < n && !leadOf(start, &lead))
    return false;
  auto size = [&](size_t i) { return int64_t(plain[i].size()); };
  // The least pairs dropped: each older pair is tokenized only while the
  // conversation with it fits.
  while (start > first) {
    const size_t a = start - 2;
    if (!appendRendered(messages, a, false, &plain[a], error) ||
        !appendRendered(messages, a + 1, false, &plain[a + 1], error))
      return false;
    std::vector<int32_t> candidate;
    if (!leadOf(a, &candidate))
      return false;
    const int64_t with = total + size(a) + size(a + 1);
    if (with - size(a) + int64_t(candidate.size()) > budget)
      break;
    total = with;
    start = a;
    lead = std::move(candidate);
  }
  *dropped = (start - first) / 2;
  ids->insert(ids->end(), head.begin(), head.end());
  ids->insert(ids->end(), lead.begin(), lead.end());
  for (size_t i = start + 1; i < n; ++i)
    ids->insert(ids->end(), plain[i].begin(), plain[i].end());
  ids->insert(ids->end(), opening.begin(), opening.end());
  return true;
}

const char *replyEndName(ReplyEnd end) {
  switch (end) {
  case ReplyEnd::EndOfTurn:
    return "end_of_turn";
  case ReplyEnd::StopToken:
    return "stop_token";
  case ReplyEnd::StopString:
    return "stop_string";
  case ReplyEnd::MaxTokens:
    return "max_tokens";
  case ReplyEnd::ContextFull:
    return "context_full";
  case ReplyEnd::Interrupted:
    return "interrupted";
  }
  return "?";
}

void ChatSession::reset() {
  session_.reset();
  history_.clear();
  exchanges_.clear();
}

std::string ReplyText::textOf(int32_t token, bool ends) {
  if (options_.special == SpecialTokens::Decoded ||
      !tokenizer_.isSpecial(token))
    return ends ? std::string() : stream_.push(token);
  if (options_.special == SpecialTokens::Hidden)
    return {};
  // Shown: the text held back so far, then the piece. The stream goes on
  // past the token, which adds no text of its own to what it decodes
  // later (a user-defined piece's spelling is in what it gave out).
  std::string text = stream_.finish() + tokenizer_.piece(token);
  if (!ends)
    stream_.push(token);
  (void)stream_.finish();
  return text;
}

void ReplyText::countTextTokens(size_t end) {
  size_t &n = reply_->textTokens;
  while (n < starts_.size() && starts_[n] < end)
    ++n;
}

bool ReplyText::push(int32_t token) {
  reply_->tokens.push_back(token);
  starts_.push_back(text_.size());
  const bool endOfTurn = token == endOfTurn_;
  if (endOfTurn || options_.stopTokens.count(token)) {
    reply_->end = endOfTurn ? ReplyEnd::EndOfTurn : ReplyEnd::StopToken;
    if (options_.special == SpecialTokens::Shown)
      text_ += textOf(token, true);
    return false;
  }
  text_ += textOf(token, false);
  size_t stopAt = std::string::npos;
  for (const std::string &stop : options_.stopStrings)
    if (!stop.empty())
      stopAt = std::min(stopAt, text_.find(stop));
  if (stopAt != std::string::npos) {
    text_.resize(stopAt);
    reply_->end = ReplyEnd::StopString;
    return false;
  }
  // Text that may be the start of a stop string waits for the next piece.
  size_t ready = text_.size() - heldBack(text_, options_.stopStrings);
  countTextTokens(ready);
  if (options_.onText && ready > emitted_)
    options_.onText(text_.substr(emitted_, ready - emitted_));
  emitted_ = std::max(emitted_, ready);
  if (options_.interrupt && options_.interrupt->load()) {
    reply_->end = ReplyEnd::Interrupted;
    return false;
  }
  return true;
}

void ReplyText::finish() {
  // Characters still incomplete at the end (a byte-fallback piece that no
  // other followed) come out as they decode; after a stop string nothing
  // does.
  if (reply_->end != ReplyEnd::StopString)
    text_ += stream_.finish();
  // Every token spells the reply but a stop id that ended it, and those
  // from where a stop string begins.
  if (reply_->end == ReplyEnd::StopString)
    countTextTokens(text_.size());
  else
    reply_->textTokens = reply_->tokens.size() -
                         (reply_->end == ReplyEnd::EndOfTurn ||
                          reply_->end == ReplyEnd::StopToken);
  if (options_.onText && text_.size() > emitted_)
    options_.onText(text_.substr(emitted_));
  reply_->text = text_;
}

bool ChatSession::complete(const std::vector<int32_t> &prompt,
                           const ReplyOptions &options, Reply *reply,
                           std::string *error) {
  using Clock = std::chrono::steady_clock;
  *reply = Reply();
  if (!checkGenerationInput(prompt, options.sampling, error))
    return false;
  if (int64_t(prompt.size()) > capacity()) {
    *error = "the prompt has " + std::to_string(prompt.size()) +
             " tokens; the model's context holds " +
             std::to_string(capacity()) +
             " positions including the reply (compile with a larger "
             "--max-seq-len" +
             (contextShift_ ? std::string(" or start a new conversation)")
                            : std::string(", start a new conversation, or "
                                          "use --context-shift)"));
    return false;
  }
  // Reuse the longest common prefix of the cache and the prompt (a resent
  // conversation that re-tokenizes slightly differently keeps everything
  // before the first difference; Session::reusablePrefix). A prompt that
  // keeps none is fed again from an empty cache.
  // A scored prompt needs the logits of every position: none is reused.
  size_t reused =
      options.scorePrompt ? 0 : size_t(session_.reusablePrefix(0, prompt));
  std::string ignored;
  if (reused == 0 || !session_.rewind(0, int64_t(reused), &ignored)) {
    session_.reset();
    reused = 0;
  }
  reply->promptTokens = int64_t(prompt.size());
  reply->reusedTokens = int64_t(reused);
  reply->fed.assign(prompt.begin() + long(reused), prompt.end());

  auto t0 = Clock::now();
  std::vector<float> logits;
  const size_t vocab = size_t(session_.model().vocabSize());
  if (options.scorePrompt) {
    // Every row, a chunk at a time (as the batch scheduler feeds prompts)
    // so that the rows held stay a few, whatever the prompt's length.
    const size_t chunk = size_t(4 * session_.model().prefillRows());
    for (size_t from = 0; from < prompt.size(); from += chunk) {
      const std::vector<int32_t> part(
          prompt.begin() + long(from),
          prompt.begin() + long(std::min(prompt.size(), from + chunk)));
      if (!session_.consume(part, options.decodeOnly, &logits, error,
                            exec::LogitsRows::Every)) {
        session_.reset();
        return false;
      }
      scorePromptRows(prompt, from, logits, vocab,
                      std::max(options.topLogprobs, 0),
                      &reply->promptLogprobs);
    }
  } else if (!session_.consume(reply->fed, options.decodeOnly, &logits, error,
                               exec::LogitsRows::Last)) {
    session_.reset();
    return false;
  }
  std::vector<float> last(logits.end() - long(vocab), logits.end());
  auto t1 = Clock::now();
  reply->promptSeconds = std::chrono::duration<double>(t1 - t0).count();

  Sampler sampler(options.sampling);
  sampler.setConstraint(options.constraint.get());
  // The constraint's masks stop at the reply's interrupt too, while this
  // reply is made (the flag is the caller's).
  struct InterruptScope {
    grammar::JsonConstraint *constraint;
    ~InterruptScope() {
      if (constraint)
        constraint->setInterrupt(nullptr);
    }
  } interruptScope{options.constraint.get()};
  if (options.constraint)
    options.constraint->setInterrupt(options.interrupt);
  ReplyText replyText(tokenizer_, format_.endOfTurn(), options, reply);
  reply->end = ReplyEnd::MaxTokens;
  // Every token the session holds: the ids the sampler has seen.
  std::vector<int32_t> seen = prompt;
  int64_t produced = 0;
  // With log-probabilities: the row the next token is chosen from, as the
  // sampler gets it (it warps its own copy).
  const bool scored = options.topLogprobs >= 0;
  std::vector<float> row;
  // A failed constraint's token is not the model's: the reply ends
  // without it.
  auto emit = [&](int32_t token) {
    if (!sampler.constraintError().empty())
      return false;
    ++produced;
    if (scored) {
      reply->logprobs.push_back(
          scoreToken(row.data(), vocab, token, options.topLogprobs));
      row.clear();
    }
    if (!replyText.push(token) || produced == options.maxTokens)
      return false;
    if (int64_t(seen.size()) >= capacity()) {
      reply->end = ReplyEnd::ContextFull;
      return false;
    }
    return true;
  };
  if (options.maxTokens > 0) {
    if (scored)
      row = last;
    int32_t next = sampler.next(last, seen);
    bool more = emit(next);
    // decodeStep keeps the row of each token it chooses in `row`, before
    // that token is emitted.
    while (more)
      if (!decodeStep(session_, 0, sampler, options.draftTokens,
                      options.maxTokens - produced, seen, &next,
                      scored ? &row : nullptr, emit, &more, &reply->draft,
                      error)) {
        session_.reset();
        return false;
      }
  }
  if (const std::string failed = sampler.constraintError(); !failed.empty()) {
    // A mask the interrupt stopped ends the reply as any interrupt does.
    if (!options.interrupt || !options.interrupt->load()) {
      *error = failed;
      return false;
    }
    reply->end = ReplyEnd::Interrupted;
  }
  replyText.finish();
  reply->positionAfter = session_.position();
  reply->replySeconds =
      std::chrono::duration<double>(Clock::now() - t1).count();
  return true;
}

bool ChatSession::say(const std::string &text, const ReplyOptions &options,
                      Reply *reply, std::string *error) {
  if (text.size() > maxMessageBytes()) {
    *error = "the message's " + std::to_string(text.size()) +
             " bytes cannot fit the model's context of " +
             std::to_string(capacity()) + " tokens";
    return false;
  }
  std::vector<int32_t> turn;
  if (history_.empty()) {
    std::vector<ChatMessage> first;
    if (!system_.empty())
      first.push_back({"system", system_});
    first.push_back({"user", text});
    if (!format_.render(first, true, &turn, error))
      return false;
  } else if (!format_.appendTurn("user", text, &turn, error) ||
             !format_.appendModelOpening(&turn, error)) {
    return false;
  }
  // Room for the reply: what it may take, at most a quarter of the context
  // (a reply budget as large as the context would leave no history).
  const int64_t reserve =
      std::max<int64_t>(1, std::min(options.maxTokens, capacity() / 4));
  auto fits = [&] {
    return int64_t(history_.size() + turn.size()) + reserve <= capacity();
  };
  if (contextShift_ && !history_.empty() && !fits()) {
    // Drop the oldest exchanges after the first, which holds the system
    // prompt, until the turn fits.
    while (!fits() && exchanges_.size() > 1) {
      const size_t from = exchanges_[1],
                   to = exchanges_.size() > 2 ? exchanges_[2] : history_.size();
      history_.erase(history_.begin() + long(from), history_.begin() + long(to));
      exchanges_.erase(exchanges_.begin() + 1);
      for (size_t i = 1; i < exchanges_.size(); ++i)
        exchanges_[i] -= to - from;
      ++shifted_;
    }
  }
  std::vector<int32_t> prompt = history_;
  prompt.insert(prompt.end(), turn.begin(), turn.end());
  if (!complete(prompt, options, reply, error))
    return false;
  // The reply joins the history as Gemma's template writes a model turn:
  // its text tokens, then <end_of_turn>\n (whatever ended it).
  exchanges_.push_back(history_.size());
  history_ = prompt;
  for (int32_t id : reply->tokens)
    if (id != format_.endOfTurn() && !options.stopTokens.count(id))
      history_.push_back(id);
  return format_.appendTurnEnd(&history_, error);
}

} // namespace pccx::app
