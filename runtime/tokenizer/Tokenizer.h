//===- Tokenizer.h - SentencePiece text <-> token ids -----------*- C++ -*-===//

#ifndef PCCX_RUNTIME_TOKENIZER_TOKENIZER_H
#define PCCX_RUNTIME_TOKENIZER_TOKENIZER_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace pccx {

class Tokenizer {
public:
  /// From a serialized SentencePiece model (the bundle's tokenizer section).
  static std::unique_ptr<Tokenizer> load(const uint8_t *data, size_t bytes,
                                         std::string *error);
  ~Tokenizer();
  bool encode(const std::string &text, std::vector<int32_t> *ids,
              std::string *error) const;
  /// encode() that also tells where each id's text begins in `text` (as
  /// given, before normalization), in bytes: an echoed prompt's offsets
  /// follow the text the client sent, not its normalized decoding.
  bool encode(const std::string &text, std::vector<int32_t> *ids,
              std::vector<size_t> *byteStarts, std::string *error) const;
  std::string decode(const std::vector<int32_t> &ids) const;
  /// The id of a piece of the vocabulary (e.g. "<start_of_turn>"), -1 when
  /// the vocabulary has no such piece.
  int32_t pieceId(const std::string &piece) const;
  /// The piece of `id` as the vocabulary spells it ("<eos>", "\u2581the"),
  /// empty for an id outside the vocabulary.
  std::string piece(int32_t id) const;
  /// Whether `id` is markup rather than text: a control piece (<bos>,
  /// <eos>, <pad>: decoding gives no text for it) or a user-defined one
  /// (Gemma's <start_of_turn>, <end_of_turn>: decoding spells it out).
  bool isSpecial(int32_t id) const;
  /// The bytes `id` adds to a decoding inside a text: its piece with
  /// U+2581 as a space, or a byte piece's byte. Empty for special,
  /// unknown and unused pieces, which are not text, and outside the
  /// vocabulary. (At the very start of a decoding a leading space may be
  /// dropped, when the model adds a dummy prefix; Gemma's does not.)
  std::string tokenText(int32_t id) const;
  /// The pieces of the vocabulary (ids 0 .. size() - 1).
  int32_t size() const;
  /// The longest piece's bytes: a token never spells more text than this
  /// (before normalization), which bounds a text's token count from below.
  size_t maxPieceBytes() const { return maxPieceBytes_; }
  /// Text longer than this cannot encode to at most `tokens` tokens (with
  /// slack for the normalizer): refused before it is tokenized, which takes
  /// far more memory than the text.
  uint64_t maxTextBytes(int64_t tokens) const {
    return uint64_t(tokens > 1 ? tokens : 1) *
           uint64_t(maxPieceBytes_ > 1 ? maxPieceBytes_ : 1) * 4;
  }

private:
  Tokenizer();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  size_t maxPieceBytes_ = 1;
  /// Ids of the user-defined pieces (read from the serialized model: the
  /// library's API of this version does not tell them).
  std::vector<bool> userDefined_;
};

/// Turns ids into text as they arrive: each push returns the text the new
/// id completes (SentencePiece pieces may join with the previous ones).
/// Text the next ids may still change is held back: a decoding that ends
/// in U+FFFD may be a character whose bytes (byte-fallback pieces, an emoji
/// or a rare CJK character) are still arriving. finish() returns what is
/// held back at the end, so the pushes and finish() together spell exactly
/// the decoding of all the ids. Each push costs the few ids since the text
/// last came out whole, not the whole reply: once everything decoded is
/// out, the ids before the last one with text are dropped (it stays, so
/// that the next id is decoded inside a text, as in the whole decoding).
class TextStream {
public:
  explicit TextStream(const Tokenizer &tokenizer) : tokenizer_(tokenizer) {}
  std::string push(int32_t id);
  std::string finish();

private:
  const Tokenizer &tokenizer_;
  std::vector<int32_t> ids_;
  std::string emitted_;
};

} // namespace pccx

#endif
