//===- ChatTemplate.h - the chat template a bundle carries ------*- C++ -*-===//
//
// pccx-compile embeds the checkpoint's Jinja chat template verbatim under
// the manifest key "chat_template". The runtime does not run Jinja: it
// recognises Gemma's turn structure in the template and then lays turns out
// the way Gemma's template does (docs/serving.md, "Chat template"). Any
// other template is reported as not interpreted, and Gemma's built-in
// layout is used instead.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_BUNDLE_CHATTEMPLATE_H
#define PCCX_RUNTIME_BUNDLE_CHATTEMPLATE_H

#include <nlohmann/json.hpp>

#include <string>

namespace pccx::bundle {

/// The manifest key holding the template text.
constexpr const char *kChatTemplateKey = "chat_template";

/// Gemma's turn markers and role names.
struct TurnMarkers {
  std::string startOfTurn = "<start_of_turn>";
  std::string endOfTurn = "<end_of_turn>";
  std::string userRole = "user";
  std::string modelRole = "model";
};

struct ChatTemplate {
  enum class Source {
    BuiltIn,      ///< the bundle has no template
    Bundle,       ///< the bundle's template, recognised as Gemma's layout
    NotGemmaStyle ///< the bundle's template is something else (not used)
  };
  Source source = Source::BuiltIn;
  TurnMarkers markers;
  /// The embedded text (empty for BuiltIn).
  std::string text;
};

/// Classifies a template text: Gemma's layout when it writes both turn
/// markers and names the assistant role "model".
ChatTemplate classifyChatTemplate(const std::string &text);

/// The template of a bundle's manifest (BuiltIn when the key is absent).
ChatTemplate chatTemplateOf(const nlohmann::json &manifest);

/// One line for people: where the turn layout comes from.
std::string describe(const ChatTemplate &chat);

} // namespace pccx::bundle

#endif
