//===- Tokenizer.cpp - SentencePiece text <-> token ids -------------------===//

#include "runtime/tokenizer/Tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstdio>

namespace pccx {

namespace {

/// The type of each piece of a serialized SentencePiece ModelProto: field 1
/// holds the pieces in id order, each a message whose field 3 is its type
/// (1 normal, the default; 2 unknown, 3 control, 4 user-defined, 5 unused,
/// 6 byte). Empty when the bytes do not parse as that.
std::vector<uint8_t> pieceTypes(const uint8_t *data, size_t bytes) {
  struct Reader {
    const uint8_t *p, *end;
    bool varint(uint64_t *v) {
      *v = 0;
      for (int shift = 0; shift < 64 && p < end; shift += 7) {
        uint8_t b = *p++;
        *v |= uint64_t(b & 0x7f) << shift;
        if (!(b & 0x80))
          return true;
      }
      return false;
    }
    /// Skips a field of `wire` type; false when it does not fit.
    bool skip(unsigned wire) {
      uint64_t v;
      switch (wire) {
      case 0:
        return varint(&v);
      case 1:
        return end - p >= 8 ? (p += 8, true) : false;
      case 2:
        if (!varint(&v) || v > uint64_t(end - p))
          return false;
        p += v;
        return true;
      case 5:
        return end - p >= 4 ? (p += 4, true) : false;
      }
      return false;
    }
  };
  std::vector<uint8_t> types;
  Reader model{data, data + bytes};
  while (model.p < model.end) {
    uint64_t key, length;
    if (!model.varint(&key))
      return {};
    if (key != ((1 << 3) | 2)) {
      if (!model.skip(unsigned(key & 7)))
        return {};
      continue;
    }
    if (!model.varint(&length) || length > uint64_t(model.end - model.p))
      return {};
    Reader piece{model.p, model.p + length};
    model.p += length;
    uint8_t type = 1;
    while (piece.p < piece.end) {
      uint64_t k, v;
      if (!piece.varint(&k))
        return {};
      if (k == ((3 << 3) | 0)) {
        if (!piece.varint(&v))
          return {};
        type = uint8_t(v);
      } else if (!piece.skip(unsigned(k & 7))) {
        return {};
      }
    }
    types.push_back(type);
  }
  return types;
}

} // namespace

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
  const std::vector<uint8_t> types = pieceTypes(data, bytes);
  if (int(types.size()) == t->sp_->GetPieceSize())
    for (uint8_t type : types)
      t->userDefined_.push_back(type == 4);
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

bool Tokenizer::encode(const std::string &text, std::vector<int32_t> *ids,
                       std::vector<size_t> *byteStarts,
                       std::string *error) const {
  sentencepiece::ImmutableSentencePieceText spt;
  try {
    spt = sp_->EncodeAsImmutableProto(text);
  } catch (const std::exception &e) {
    *error = std::string("tokenizer: ") + e.what();
    return false;
  }
  ids->clear();
  byteStarts->clear();
  for (size_t i = 0, n = spt.pieces_size(); i < n; ++i) {
    const auto piece = spt.pieces(int(i));
    ids->push_back(int32_t(piece.id()));
    // Byte pieces of one character share its span; a span is never past
    // the text, whatever the model.
    byteStarts->push_back(std::min<size_t>(piece.begin(), text.size()));
  }
  if (ids->empty() && !text.empty()) {
    // An encoder that gives no pieces for some text failed.
    *error = "tokenizer: the text gave no tokens";
    return false;
  }
  return true;
}

int32_t Tokenizer::pieceId(const std::string &piece) const {
  int id = sp_->PieceToId(piece);
  // Unknown pieces map to the unknown id, whose own piece differs.
  return id >= 0 && id < sp_->GetPieceSize() && sp_->IdToPiece(id) == piece
             ? int32_t(id)
             : -1;
}

std::string Tokenizer::piece(int32_t id) const {
  return id >= 0 && id < sp_->GetPieceSize() ? sp_->IdToPiece(id)
                                             : std::string();
}

bool Tokenizer::isSpecial(int32_t id) const {
  return id >= 0 && id < sp_->GetPieceSize() &&
         (sp_->IsControl(id) ||
          (size_t(id) < userDefined_.size() && userDefined_[size_t(id)]));
}

std::string Tokenizer::tokenText(int32_t id) const {
  if (id < 0 || id >= sp_->GetPieceSize() || isSpecial(id) ||
      sp_->IsUnknown(id) || sp_->IsUnused(id))
    return {};
  const std::string piece = sp_->IdToPiece(id);
  if (sp_->IsByte(id)) {
    // "<0xNN>"
    unsigned value = 0;
    if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%2X>", &value) == 1)
      return std::string(1, char(value));
    return {};
  }
  static const std::string kSpace = "\xE2\x96\x81";
  std::string text;
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpace.size(), kSpace) == 0) {
      text += ' ';
      i += kSpace.size();
    } else {
      text += piece[i++];
    }
  }
  return text;
}

int32_t Tokenizer::size() const { return sp_->GetPieceSize(); }

std::string TextStream::push(int32_t id) {
  ids_.push_back(id);
  const std::string text = tokenizer_.decode(ids_);
  // Trailing replacement characters (EF BF BD) wait for the next id.
  static const char kReplacement[] = "\xEF\xBF\xBD";
  size_t stable = text.size();
  while (stable >= 3 && text.compare(stable - 3, 3, kReplacement) == 0)
    stable -= 3;
  std::string added;
  if (text.compare(0, emitted_.size(), emitted_) != 0) {
    // The decoding changed text already given out: give nothing, go on
    // from the new text.
    emitted_ = text.substr(0, stable);
  } else if (stable > emitted_.size()) {
    added = text.substr(emitted_.size(), stable - emitted_.size());
    emitted_ = text.substr(0, stable);
  }
  if (stable == text.size() && ids_.size() > 1) {
    // Everything is out: go on from the last id that decodes to some text
    // alone, that text as the part already given. Ids that decode to
    // nothing (control pieces) are left out: SentencePiece skips them, but
    // a window starting with one would drop the next piece's leading space
    // as at the start of a text.
    size_t last = ids_.size();
    while (last > 0 && tokenizer_.decode({ids_[last - 1]}).empty())
      --last;
    if (last == 0) {
      ids_.clear();
      emitted_.clear();
    } else {
      ids_.assign(1, ids_[last - 1]);
      emitted_ = tokenizer_.decode(ids_);
    }
  }
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

} // namespace pccx
