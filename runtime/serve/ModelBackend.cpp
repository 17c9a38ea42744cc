//===- ModelBackend.cpp - pccx-serve's backend over a real model ----------===//

#include "runtime/serve/ModelBackend.h"

#include "runtime/app/Structured.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace pccx::serve {

namespace {

/// A decoding's text and its length in characters, piece by piece.
class PieceDecoder : public TextDecoder {
public:
  int64_t push(int32_t id) override {
    const int64_t start = chars_;
    const std::string piece = next(id);
    chars_ += characterCount(piece);
    text_ += piece;
    return start;
  }
  std::string finish() override { return text_ + rest(); }

protected:
  /// The text `id` adds, and what is held back at the end.
  virtual std::string next(int32_t id) = 0;
  virtual std::string rest() { return {}; }

private:
  std::string text_;
  int64_t chars_ = 0;
};

/// A tokenizer's decoding (TextStream: the few ids since the text last came
/// out whole are decoded again, not the whole text).
class StreamDecoder : public PieceDecoder {
public:
  explicit StreamDecoder(const Tokenizer &tokenizer) : stream_(tokenizer) {}

private:
  std::string next(int32_t id) override { return stream_.push(id); }
  std::string rest() override { return stream_.finish(); }
  TextStream stream_;
};

/// Token texts one after another (backends without a tokenizer).
class ConcatenatingDecoder : public PieceDecoder {
public:
  explicit ConcatenatingDecoder(const Backend &backend) : backend_(backend) {}

private:
  std::string next(int32_t id) override { return backend_.tokenText(id); }
  const Backend &backend_;
};

/// The backend over a real model and session.
class ModelBackend : public Backend {
public:
  ModelBackend(exec::Session &session, const exec::Model &model,
               const Tokenizer &tokenizer, const app::ChatFormat &format,
               int parallel)
      : session_(session), tokenizer_(tokenizer), format_(format),
        bos_(model.bosToken()), vocab_(model.vocabSize()),
        chat_(session, tokenizer, format) {
    if (parallel > 1)
      engine_ = std::make_unique<BatchEngine>(session, tokenizer,
                                              format.endOfTurn(), parallel);
    for (int32_t id : model.eosTokens())
      stop_.insert(id);
    // A token spells at most its piece's bytes (with slack for the
    // normalizer): longer text cannot fit the context, and is refused
    // before it is tokenized.
    maxTextBytes_ = tokenizer.maxTextBytes(session.capacity());
  }

  int64_t capacity() const override { return session_.capacity(); }
  std::set<int32_t> stopTokens() const override { return stop_; }

  std::shared_ptr<grammar::JsonConstraint>
  jsonConstraint(std::shared_ptr<const grammar::Schema> schema,
                 std::string *error) override {
    std::set<int32_t> ends = stop_;
    ends.insert(format_.endOfTurn());
    return app::makeJsonConstraint(std::move(schema), vocabulary_.get(), ends,
                                   error);
  }

  bool promptIds(const GenerationRequest &request, std::vector<int32_t> *ids,
                 ApiError *error) override {
    std::string why;
    if (!request.promptIsTokens && !fits(request, error))
      return false;
    if (request.chat) {
      if (!format_.render(request.messages, true, ids, &why)) {
        error->message = why;
        error->param = "messages";
        return false;
      }
      return true;
    }
    if (request.promptIsTokens) {
      for (int32_t id : request.promptTokens)
        if (id >= vocab_) {
          error->message = "token id " + std::to_string(id) +
                           " is outside the vocabulary of " +
                           std::to_string(vocab_);
          error->param = "prompt";
          return false;
        }
      *ids = request.promptTokens;
      return true;
    }
    if (bos_ >= 0)
      ids->push_back(bos_);
    std::vector<int32_t> text;
    if (!tokenizer_.encode(request.prompt, &text, &why)) {
      error->message = why;
      error->param = "prompt";
      return false;
    }
    ids->insert(ids->end(), text.begin(), text.end());
    return true;
  }

  bool shiftedPromptIds(const GenerationRequest &request, int64_t budget,
                        std::vector<int32_t> *ids, ApiError *error) override {
    // One pass, each kept message tokenized once (ChatFormat::renderFitting):
    // no length check before it, since what is dropped is never read.
    std::string why;
    size_t dropped = 0;
    if (!format_.renderFitting(request.messages, true, budget, ids, &dropped,
                               &why)) {
      error->message = why;
      error->param = "messages";
      return false;
    }
    return true;
  }

  bool complete(const std::vector<int32_t> &prompt,
                const app::ReplyOptions &options, app::Reply *reply,
                std::string *error) override {
    if (engine_)
      return engine_->complete(prompt, options, reply, error);
    // One request at a time (the server's gate): the counters are ours,
    // and so is the session, whose position GET /slots shows as it moves
    // (read here, on the thread that moves it).
    busy_.store(true);
    app::ReplyOptions watched = options;
    watched.onText = [&](const std::string &text) {
      cached_.store(session_.position());
      if (options.onText)
        options.onText(text);
    };
    bool ok = chat_.complete(prompt, watched, reply, error);
    cached_.store(session_.position());
    busy_.store(false);
    std::lock_guard<std::mutex> lock(statsMutex_);
    stats_.slots = 1;
    if (ok) {
      stats_.generatedTokens += int64_t(reply->tokens.size());
      stats_.promptTokens += int64_t(reply->fed.size());
      stats_.reusedTokens += reply->reusedTokens;
      // Every reply token but the first comes from a decode step (several
      // from one when drafts are accepted).
      const int64_t decoded =
          std::max<int64_t>(0, int64_t(reply->tokens.size()) - 1);
      stats_.decodeSteps +=
          options.draftTokens > 0 ? reply->draft.steps : decoded;
      stats_.stepRows += decoded;
      stats_.draftedTokens += reply->draft.drafted;
      stats_.acceptedTokens += reply->draft.accepted;
      stats_.busySeconds += reply->promptSeconds + reply->replySeconds;
    }
    return ok;
  }

  bool start(std::string *error) override {
    return !engine_ || engine_->start(error);
  }

  std::string tokenText(int32_t id) const override {
    return app::tokenBytes(tokenizer_, id);
  }

  std::unique_ptr<TextDecoder> textDecoder() const override {
    return std::make_unique<StreamDecoder>(tokenizer_);
  }

  std::vector<int64_t> promptTextStarts(const GenerationRequest &request,
                                        const std::vector<int32_t> &ids) override {
    // The encoder's spans in the text as sent; BOS (prepended) spans nothing.
    std::vector<int32_t> text;
    std::vector<size_t> byteStarts;
    std::string why;
    const size_t bos = bos_ >= 0 && !ids.empty() && ids[0] == bos_ ? 1 : 0;
    if (request.chat || request.promptIsTokens ||
        !tokenizer_.encode(request.prompt, &text, &byteStarts, &why) ||
        text.size() + bos != ids.size() ||
        !std::equal(text.begin(), text.end(), ids.begin() + long(bos)))
      return Backend::promptTextStarts(request, ids);
    std::vector<int64_t> starts(bos, 0);
    int64_t chars = 0;
    size_t counted = 0;
    for (size_t begin : byteStarts) {
      // Back to the start of the character the span begins in.
      while (begin > 0 && (uint8_t(request.prompt[begin]) & 0xC0) == 0x80)
        --begin;
      for (; counted < begin; ++counted)
        chars += (uint8_t(request.prompt[counted]) & 0xC0) != 0x80;
      starts.push_back(chars);
    }
    return starts;
  }

  bool tokenize(const std::string &text, bool addSpecial,
                std::vector<int32_t> *ids, std::string *error) override {
    if (addSpecial && bos_ >= 0)
      ids->push_back(bos_);
    std::vector<int32_t> encoded;
    if (!tokenizer_.encode(text, &encoded, error))
      return false;
    ids->insert(ids->end(), encoded.begin(), encoded.end());
    return true;
  }

  int64_t vocabSize() const override { return vocab_; }

  uint64_t maxTextBytes(int64_t tokens) const override {
    return tokenizer_.maxTextBytes(tokens);
  }

  std::vector<SlotState> slotStates() const override {
    if (engine_)
      return engine_->slotStates();
    return {{busy_.load(), cached_.load()}};
  }

  EngineStats stats() const override {
    if (engine_)
      return engine_->stats();
    std::lock_guard<std::mutex> lock(statsMutex_);
    EngineStats s = stats_;
    s.slots = 1;
    return s;
  }

private:
  bool fits(const GenerationRequest &request, ApiError *error) const {
    uint64_t bytes = request.prompt.size();
    for (const app::ChatMessage &m : request.messages)
      bytes += m.content.size() + m.role.size();
    if (bytes <= maxTextBytes_)
      return true;
    error->message = "the prompt's " + std::to_string(bytes) +
                     " bytes cannot fit this model's context of " +
                     std::to_string(session_.capacity()) + " tokens";
    error->param = request.chat ? "messages" : "prompt";
    error->code = "context_length_exceeded";
    return false;
  }

  exec::Session &session_;
  const Tokenizer &tokenizer_;
  app::StructuredVocabulary vocabulary_{tokenizer_};
  const app::ChatFormat &format_;
  int32_t bos_;
  int64_t vocab_;
  std::set<int32_t> stop_;
  uint64_t maxTextBytes_;
  app::ChatSession chat_;
  /// With parallel > 1: replies decoded together over several slots.
  std::unique_ptr<BatchEngine> engine_;
  mutable std::mutex statsMutex_;
  EngineStats stats_;
  /// Without an engine: whether a reply is generating, and the session's
  /// position.
  std::atomic<bool> busy_{false};
  std::atomic<int64_t> cached_{0};
};

} // namespace

std::unique_ptr<Backend> makeModelBackend(exec::Session &session,
                                          const exec::Model &model,
                                          const Tokenizer &tokenizer,
                                          const app::ChatFormat &format,
                                          int parallel) {
  return std::make_unique<ModelBackend>(session, model, tokenizer, format,
                                        parallel);
}

std::shared_ptr<grammar::JsonConstraint>
Backend::jsonConstraint(std::shared_ptr<const grammar::Schema>,
                        std::string *error) {
  *error = "this server's model has no tokenizer to constrain replies with";
  return nullptr;
}

bool Backend::tokenize(const std::string &, bool, std::vector<int32_t> *,
                       std::string *error) {
  *error = "this server's model has no tokenizer";
  return false;
}

uint64_t Backend::maxTextBytes(int64_t) const { return UINT64_MAX; }

std::unique_ptr<TextDecoder> Backend::textDecoder() const {
  return std::make_unique<ConcatenatingDecoder>(*this);
}

std::vector<int64_t>
Backend::promptTextStarts(const GenerationRequest &,
                          const std::vector<int32_t> &ids) {
  std::vector<int64_t> starts;
  (void)decodeText(ids, &starts);
  return starts;
}

std::string Backend::decodeText(const std::vector<int32_t> &ids,
                                std::vector<int64_t> *starts) const {
  std::unique_ptr<TextDecoder> decoder = textDecoder();
  for (int32_t id : ids)
    starts->push_back(decoder->push(id));
  return decoder->finish();
}

bool Backend::shiftedPromptIds(const GenerationRequest &request,
                               int64_t budget, std::vector<int32_t> *ids,
                               ApiError *error) {
  GenerationRequest shorter = request;
  // The system message stays; the oldest exchanges after it go.
  const size_t keep =
      !shorter.messages.empty() && shorter.messages[0].role == "system" ? 1
                                                                        : 0;
  for (;;) {
    ids->clear();
    if (!promptIds(shorter, ids, error))
      return false;
    if (int64_t(ids->size()) <= budget || shorter.messages.size() < keep + 3)
      return true;
    // A user message and the reply after it; the roles alternate.
    shorter.messages.erase(shorter.messages.begin() + long(keep),
                           shorter.messages.begin() + long(keep + 2));
  }
}
} // namespace pccx::serve
