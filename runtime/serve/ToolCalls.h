//===- ToolCalls.h - OpenAI tool calling over constrained JSON --*- C++ -*-===//
//
// Gemma 3n has no tool tokens, so a request's tools become text the model
// reads and a JSON reply the constrained decoder makes exact
// (docs/serving.md, "Tool calling"):
//  - the tools' declarations, and the reply's two shapes, are added to the
//    system message;
//  - the reply is decoded under a schema whose only documents are
//      {"tool_calls": [{"name": <a tool>, "arguments": <its parameters>}]}
//    and, when tool_choice is "auto", {"response": "<text>"};
//  - earlier calls and tool results in the conversation are written back
//    in the same JSON and as user turns.
// This file holds that mapping; OpenAiApi reads the fields with it and the
// server shapes replies with it.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_TOOLCALLS_H
#define PCCX_RUNTIME_SERVE_TOOLCALLS_H

#include "runtime/grammar/JsonSchema.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pccx::serve {

/// tool_choice: "none", "auto", "required", or a named function.
enum class ToolChoice { None, Auto, Required, Named };

/// A request's tools, as the decoder and the prompt need them.
struct ToolRequest {
  /// Each tool's {"name", "description"?, "parameters"?} in the order
  /// written (parameters' properties keep theirs: arguments are written in
  /// that order).
  std::vector<grammar::Json> functions;
  ToolChoice choice = ToolChoice::None;
  std::string named; ///< ToolChoice::Named: the function's name
  bool parallel = true; ///< parallel_tool_calls: several calls per reply
  /// Whether replies are tool-call documents (tools given, choice not none).
  bool active() const {
    return choice != ToolChoice::None && !functions.empty();
  }
};

/// The most tools a request may declare, and calls a reply may hold.
constexpr size_t kMaxTools = 32;
constexpr int kMaxParallelCalls = 8;

/// Reads `tools`, `tool_choice` and `parallel_tool_calls` from a chat
/// request (`body` read keeping its members' order). False with the field
/// in `*param` and why in `*why`.
bool readTools(const grammar::Json &body, ToolRequest *out, std::string *param,
               std::string *why);

/// The schema every reply of an active request is decoded under; null with
/// `*why` (naming the tool) when a tool's parameters are outside the
/// subset of docs/serving.md.
std::shared_ptr<const grammar::Schema>
toolReplySchema(const ToolRequest &tools, std::string *why);

/// What the system message gains for an active request: the declarations
/// and how to reply.
std::string toolInstructions(const ToolRequest &tools);

/// An assistant message's `tool_calls` (OpenAI's shape) as the reply the
/// model would have written. False with `*why`.
bool toolCallsText(const nlohmann::json &calls, std::string *text,
                   std::string *why);

/// A `tool` message as the user turn that carries it; `name` is the
/// function the call named (empty when no earlier call has its id).
std::string toolResultText(const std::string &name, const std::string &callId,
                           const std::string &content);

/// What a finished reply of an active request says.
struct ToolReply {
  /// OpenAI's message.tool_calls ([{"id", "type", "function": {"name",
  /// "arguments"}}]); empty when the model answered in text.
  nlohmann::json calls = nlohmann::json::array();
  std::string content; ///< the "response" text (no calls)
};

/// Parses a complete reply document; call ids are `idPrefix` and the
/// call's place. Nullopt when the text is not a whole reply document (a
/// reply cut by its token budget).
std::optional<ToolReply> parseToolReply(const std::string &text,
                                        const std::string &idPrefix);

} // namespace pccx::serve

#endif
