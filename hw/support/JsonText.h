//===- JsonText.h - JSON text that never throws on bad UTF-8 ----*- C++ -*-===//
//
// nlohmann::json::dump throws on a string that is not valid UTF-8, and
// such strings reach JSON from hostile places: request paths, bundle and
// model names, tokenizer pieces, user text. Every JSON a tool writes for
// others (responses, streamed events, logs, reports) goes through here,
// where invalid bytes become U+FFFD instead of an exception.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_SUPPORT_JSONTEXT_H
#define PCCX_HW_SUPPORT_JSONTEXT_H

#include <nlohmann/json.hpp>

#include <string>

namespace pccx::support {

inline std::string jsonText(const nlohmann::json &value, int indent = -1) {
  return value.dump(indent, ' ', /*ensure_ascii=*/false,
                    nlohmann::json::error_handler_t::replace);
}

/// Appends `byte` written \xNN (lower-case hex).
inline void appendHexEscape(std::string &out, unsigned char byte) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 15];
}

/// `text` for a one-line log: printable ASCII kept, backslash and every
/// other byte (controls, newlines, non-ASCII) written as \xNN, so request
/// data can neither forge a line nor carry terminal escapes.
inline std::string logSafe(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out += char(c);
    else
      appendHexEscape(out, c);
  }
  return out;
}

} // namespace pccx::support

#endif
