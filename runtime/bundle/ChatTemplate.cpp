//===- ChatTemplate.cpp - the chat template a bundle carries
//---------------===//

#include "runtime/bundle/ChatTemplate.h"

namespace pccx::bundle {

ChatTemplate classifyChatTemplate(const std::string &text) {
  ChatTemplate chat;
  chat.text = text;
  if (text.empty())
    return chat;
  const TurnMarkers gemma;
  // Gemma's template writes '<start_of_turn>' + role + '\n' ... and
  // '<end_of_turn>\n', mapping the 'assistant' role to "model".
  bool gemmaStyle =
      text.find(gemma.startOfTurn) != std::string::npos &&
      text.find(gemma.endOfTurn) != std::string::npos &&
      (text.find("\"" + gemma.modelRole + "\"") != std::string::npos ||
       text.find("'" + gemma.modelRole + "'") != std::string::npos ||
       text.find(gemma.startOfTurn + gemma.modelRole) != std::string::npos);
  chat.source = gemmaStyle ? ChatTemplate::Source::Bundle
                           : ChatTemplate::Source::NotGemmaStyle;
  return chat;
}

ChatTemplate chatTemplateOf(const nlohmann::json &manifest) {
  if (!manifest.is_object() || !manifest.contains(kChatTemplateKey) ||
      !manifest[kChatTemplateKey].is_string())
    return ChatTemplate();
  return classifyChatTemplate(manifest[kChatTemplateKey].get<std::string>());
}

std::string describe(const ChatTemplate &chat) {
  switch (chat.source) {
  case ChatTemplate::Source::BuiltIn:
    return "none in the bundle; the built-in Gemma turn template is used";
  case ChatTemplate::Source::Bundle:
    return "Gemma turn template from the checkpoint (" +
           std::to_string(chat.text.size()) + " characters)";
  case ChatTemplate::Source::NotGemmaStyle:
    break;
  }
  return "the checkpoint's template (" + std::to_string(chat.text.size()) +
         " characters) is not Gemma's turn layout and is not interpreted; "
         "the built-in Gemma turn template is used";
}

} // namespace pccx::bundle
