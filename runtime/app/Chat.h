//===- Chat.h - conversations over a session --------------------*- C++ -*-===//
//
// Gemma's chat turns over a Session, with the KV cache kept between calls:
// the longest common prefix of the cached tokens and the next prompt (the
// next turn of the same conversation, or a client resending its history)
// is not consumed again. Replies stream as text, stop at
// <end_of_turn>, the model's EOS ids or a stop string, and end cleanly when
// the KV cache is full or an interrupt flag is raised.
//
// The turn layout is the one Gemma's chat template renders
// (docs/serving.md, "Chat template"):
//   <bos><start_of_turn>user\n{system}\n\n{text}<end_of_turn>\n
//   <start_of_turn>model\n{reply}<end_of_turn>\n ... <start_of_turn>model\n
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_CHAT_H
#define PCCX_RUNTIME_APP_CHAT_H

#include "runtime/app/Generate.h"
#include "runtime/app/Logprobs.h"
#include "runtime/app/Sampler.h"
#include "runtime/bundle/ChatTemplate.h"
#include "runtime/exec/Session.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <atomic>
#include <functional>
#include <memory>
#include <set>

namespace pccx::app {

struct ChatMessage {
  std::string role; ///< "system", "user" or "assistant" ("model" too)
  std::string content;
};

/// Renders turns to token ids with Gemma's layout. The turn markers must be
/// single pieces of the tokenizer's vocabulary.
class ChatFormat {
public:
  static std::unique_ptr<ChatFormat> create(const Tokenizer &tokenizer,
                                            const bundle::ChatTemplate &chat,
                                            int32_t bosToken,
                                            std::string *error);
  /// A whole conversation: an optional leading system message (prepended
  /// to the first turn, as Gemma's template does), then turns alternating
  /// user / assistant from a user turn; with `openModelTurn` it ends with
  /// the opening of the model's turn.
  bool render(const std::vector<ChatMessage> &messages, bool openModelTurn,
              std::vector<int32_t> *ids, std::string *error) const;
  /// render() of the conversation after its oldest exchanges are dropped
  /// until it takes at most `budget` tokens: from the first user message
  /// on, two messages at a time (roles keep alternating), while at least
  /// one message would remain after them; the system message stays, joined
  /// to the first turn kept. `*dropped` counts the pairs. Each message is tokenized at most once,
  /// newest first, and none that must be dropped anyway: the work is
  /// bounded by the budget and the messages kept, not by the conversation.
  /// When even the shortest form does not fit, that form is returned (the
  /// caller refuses it by its length).
  bool renderFitting(const std::vector<ChatMessage> &messages,
                     bool openModelTurn, int64_t budget,
                     std::vector<int32_t> *ids, size_t *dropped,
                     std::string *error) const;
  /// Appends one closed turn of `role` ("user" or "model").
  bool appendTurn(const std::string &role, const std::string &text,
                  std::vector<int32_t> *ids, std::string *error) const;
  /// Appends "<start_of_turn>model\n".
  bool appendModelOpening(std::vector<int32_t> *ids, std::string *error) const;
  /// Appends the end of a turn, "<end_of_turn>\n".
  bool appendTurnEnd(std::vector<int32_t> *ids, std::string *error) const;

  /// Whether message text may contain the turn markers as control tokens.
  /// Off (the default): "<start_of_turn>" typed in a message is encoded as
  /// the text it is, so a user cannot forge or close turns. On: it becomes
  /// the marker, as Hugging Face transformers' chat templates do.
  void setMarkersInText(bool on) { markersInText_ = on; }
  bool markersInText() const { return markersInText_; }

  int32_t bos() const { return bos_; }
  int32_t startOfTurn() const { return startOfTurn_; }
  int32_t endOfTurn() const { return endOfTurn_; }
  const bundle::ChatTemplate &chatTemplate() const { return template_; }

private:
  ChatFormat(const Tokenizer &tokenizer) : tokenizer_(tokenizer) {}
  /// The roles' order render() requires; the index of the first turn (1
  /// after a system message, else 0).
  bool checkRoles(const std::vector<ChatMessage> &messages, size_t *first,
                  std::string *error) const;
  /// Message `i`'s turn, the system message's text (messages[0]) joined
  /// to it when `joinSystem` (render() joins it to the first turn).
  bool appendRendered(const std::vector<ChatMessage> &messages, size_t i,
                      bool joinSystem, std::vector<int32_t> *ids,
                      std::string *error) const;
  bool appendText(const std::string &text, std::vector<int32_t> *ids,
                  std::string *error) const;
  /// `prefix` (ours) then a message's `text` (the user's), honouring
  /// markersInText().
  bool appendMessage(const std::string &prefix, const std::string &text,
                     std::vector<int32_t> *ids, std::string *error) const;
  const Tokenizer &tokenizer_;
  bundle::ChatTemplate template_;
  int32_t bos_ = -1, startOfTurn_ = -1, endOfTurn_ = -1;
  bool markersInText_ = false;
};

/// Why a reply ended.
enum class ReplyEnd {
  EndOfTurn,   ///< the model wrote <end_of_turn>
  StopToken,   ///< another stop id (the model's EOS)
  StopString,  ///< one of ReplyOptions::stopStrings appeared
  MaxTokens,   ///< ReplyOptions::maxTokens were generated
  ContextFull, ///< the KV cache has no position left
  Interrupted, ///< ReplyOptions::interrupt was raised
};
const char *replyEndName(ReplyEnd end);

/// What a reply's text makes of special tokens (Tokenizer::isSpecial).
enum class SpecialTokens {
  Decoded, ///< as SentencePiece decodes them: user-defined pieces such as
           ///< <start_of_turn> spelled out, control pieces (<eos>) not
  Hidden,  ///< none of them in the text
  Shown,   ///< each as its piece, the one that ended the reply included
};

struct ReplyOptions {
  SamplingOptions sampling;
  int64_t maxTokens = 256;
  /// Ids that end the reply besides <end_of_turn> (the model's EOS ids).
  std::set<int32_t> stopTokens;
  /// Text that ends the reply; it is not part of the reply.
  std::vector<std::string> stopStrings;
  bool decodeOnly = false;
  /// Speculative decoding: prompt-lookup drafts of up to this many tokens
  /// per step (GenerateOptions::draftTokens). 0: off.
  int64_t draftTokens = 0;
  /// Checked after every token and inside structured output's token
  /// masks; raising it ends the reply.
  const std::atomic<bool> *interrupt = nullptr;
  SpecialTokens special = SpecialTokens::Decoded;
  /// The reply's text as it is produced (stop strings never reach it).
  std::function<void(const std::string &)> onText;
  /// Structured output (GenerateOptions::constraint).
  std::shared_ptr<grammar::JsonConstraint> constraint;
  /// Log-probabilities (app/Logprobs.h) of each generated token, with this
  /// many most likely alternatives, in Reply::logprobs; -1: none.
  int topLogprobs = -1;
  /// Also those of the prompt's tokens after the first (with topLogprobs
  /// alternatives, at least 0), in Reply::promptLogprobs. Positions taken
  /// from the KV cache have no logits, so the whole prompt is consumed
  /// again, from an empty cache.
  bool scorePrompt = false;
};

struct Reply {
  std::vector<int32_t> fed;    ///< prompt tokens consumed by this call
  std::vector<int32_t> tokens; ///< generated ids (a stop id included)
  std::string text;            ///< the reply's text
  ReplyEnd end = ReplyEnd::MaxTokens;
  int64_t promptTokens = 0; ///< length of the whole prompt
  int64_t reusedTokens = 0; ///< prompt tokens found in the KV cache
  int64_t positionAfter = 0;
  double promptSeconds = 0, replySeconds = 0;
  DraftStats draft; ///< with ReplyOptions::draftTokens
  /// How many of `tokens`, from the first, spell the reply's text: all but
  /// a stop id that ended it and the tokens from where a stop string
  /// begins. While the reply is produced: those whose text (some of it,
  /// for a token that spans several pieces of it) went to onText, updated
  /// before each call.
  size_t textTokens = 0;
  /// With ReplyOptions::topLogprobs: one per token of `tokens`, added
  /// before the token reaches the text.
  std::vector<TokenLogprob> logprobs;
  /// With ReplyOptions::scorePrompt: prompt tokens 1, 2, ... (nothing
  /// predicts the first).
  std::vector<TokenLogprob> promptLogprobs;
};

/// The text side of a reply, token by token: decodes the tokens as a
/// stream, ends at <end_of_turn>, a stop id or a stop string, and passes
/// the text to onText as soon as no stop string can still begin in it.
/// Shared by the single-sequence chat and the batched server.
class ReplyText {
public:
  ReplyText(const Tokenizer &tokenizer, int32_t endOfTurn,
            const ReplyOptions &options, Reply *reply)
      : tokenizer_(tokenizer), stream_(tokenizer), endOfTurn_(endOfTurn),
        options_(options), reply_(reply) {}
  /// Takes the next generated token; false when the reply ends with it
  /// (reply->end says why).
  bool push(int32_t token);
  /// Ends the reply: the held text (unless a stop string ended it) goes to
  /// onText, and reply->text is set.
  void finish();

private:
  /// Text for `token`, honouring options_.special.
  std::string textOf(int32_t token, bool ends);
  const Tokenizer &tokenizer_;
  TextStream stream_;
  int32_t endOfTurn_;
  const ReplyOptions &options_;
  Reply *reply_;
  /// Reply::textTokens: the tokens whose text starts before byte `end`.
  void countTextTokens(size_t end);
  std::string text_;   ///< every piece decoded so far
  size_t emitted_ = 0; ///< bytes of text_ passed to onText
  /// Where each token's text starts in text_ (a token whose bytes complete
  /// a character begun by earlier ones: where that character starts).
  std::vector<size_t> starts_;
};

/// A conversation (or a series of prompts) on one session.
class ChatSession {
public:
  ChatSession(exec::Session &session, const Tokenizer &tokenizer,
              const ChatFormat &format)
      : session_(session), tokenizer_(tokenizer), format_(format) {}

  /// Generates a reply to `prompt`. The longest prefix of `prompt` already
  /// in the KV cache is not consumed again (the cache forgets the rest). A
  /// prompt longer than the cache is refused (the error says by how much).
  bool complete(const std::vector<int32_t> &prompt, const ReplyOptions &options,
                Reply *reply, std::string *error);

  /// The next user turn of the conversation kept by this object; the first
  /// turn carries the system prompt.
  bool say(const std::string &text, const ReplyOptions &options, Reply *reply,
           std::string *error);
  void setSystemPrompt(const std::string &text) { system_ = text; }
  /// When a turn and its reply would not fit the context: off (the
  /// default), say() refuses and names --context-shift; on, the oldest
  /// exchanges after the first (which carries the system prompt) are
  /// dropped until the turn, with room for its reply, fits.
  void setContextShift(bool on) { contextShift_ = on; }
  /// Exchanges dropped by context shifts so far.
  int64_t shiftedExchanges() const { return shifted_; }
  /// Starts a new conversation (and forgets the KV cache).
  void reset();
  /// Tokens of the conversation so far (say()): every turn, replies closed.
  const std::vector<int32_t> &history() const { return history_; }
  int64_t capacity() const { return session_.capacity(); }
  /// The longest message say() takes: longer text cannot fit the context.
  uint64_t maxMessageBytes() const {
    return tokenizer_.maxTextBytes(capacity());
  }
  int64_t position() const { return session_.position(); }

private:
  exec::Session &session_;
  const Tokenizer &tokenizer_;
  const ChatFormat &format_;
  std::vector<int32_t> history_;
  /// Where each exchange (a user turn and its reply) starts in history_.
  std::vector<size_t> exchanges_;
  std::string system_;
  bool contextShift_ = false;
  int64_t shifted_ = 0;
};

} // namespace pccx::app

#endif
