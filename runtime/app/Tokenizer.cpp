//===- Tokenizer.cpp - SentencePiece text <-> token ids -------------------===//

#include "runtime/app/Tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>

namespace pccx::app {

Tokenizer::Tokenizer()
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::load(const uint8_t *data, size_t bytes,
                                           std::string *error) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  sentencepiece::util::Status status;
  // SentencePiece throws on some malformed models (a zero-length piece
  // fails its trie builder): a hostile bundle's tokenizer section is an
  // error, not an exception through every caller.
  try {
    status = t->sp_->LoadFromSerializedProto(
        std::string_view(reinterpret_cast<const char *>(data), bytes));
  } catch (const std::exception &e) {
    *error = std::string("tokenizer: malformed model: ") + e.what();
    return nullptr;
  }
  if (!status.ok()) {
    *error = "tokenizer: " + status.ToString();
    return nullptr;
  }
  for (int id = 0, n = t->sp_->GetPieceSize(); id < n; ++id)
    t->maxPieceBytes_ = std::max(t->maxPieceBytes_, t->sp_->IdToPiece(id).size());
  return t;
}

bool Tokenizer::encode(const std::string &text, std::vector<int32_t> *ids,
                       std::string *error) const {
  std::vector<int> out;
  sentencepiece::util::Status status;
  try {
    status = sp_->Encode(text, &out);
  } catch (const std::exception &e) {
    *error = std::string("tokenizer: ") + e.what();
    return false;
  }
  if (!status.ok()) {
    *error = "tokenizer: " + status.ToString();
    return false;
  }
  ids->assign(out.begin(), out.end());
  return true;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids) const {
  std::vector<int> in(ids.begin(), ids.end());
  std::string text;
  try {
    (void)sp_->Decode(in, &text);
  } catch (const std::exception &) {
    text.clear(); // ids a malformed model cannot decode: no text
  }
  return text;
}

int32_t Tokenizer::pieceId(const std::string &piece) const {
  int id = sp_->PieceToId(piece);
  // Unknown pieces map to the unknown id, whose own piece differs.
  return id >= 0 && id < sp_->GetPieceSize() && sp_->IdToPiece(id) == piece
             ? int32_t(id)
             : -1;
}

std::string TextStream::push(int32_t id) {
  ids_.push_back(id);
  const std::string text = tokenizer_.decode(ids_);
  // Trailing replacement characters (EF BF BD) wait for the next id.
  static const char kReplacement[] = "\xEF\xBF\xBD";
  size_t stable = text.size();
  while (stable >= 3 && text.compare(stable - 3, 3, kReplacement) == 0)
    stable -= 3;
  if (text.compare(0, emitted_.size(), emitted_) != 0) {
    // The decoding changed text already given out: give nothing, go on
    // from the new text.
    emitted_ = text.substr(0, stable);
    return {};
  }
  if (stable <= emitted_.size())
    return {};
  std::string added = text.substr(emitted_.size(), stable - emitted_.size());
  emitted_ = text.substr(0, stable);
  return added;
}

std::string TextStream::finish() {
  const std::string text = tokenizer_.decode(ids_);
  std::string rest;
  if (text.compare(0, emitted_.size(), emitted_) == 0)
    rest = text.substr(emitted_.size());
  emitted_ = text;
  return rest;
}

} // namespace pccx::app
