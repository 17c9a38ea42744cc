//===- ToolCalls.cpp - OpenAI tool calling over constrained JSON ----------===//

#include "runtime/serve/ToolCalls.h"

#include <cctype>
#include <set>

namespace pccx::serve {

using grammar::Json;
using nlohmann::json;

namespace {

/// OpenAI's rule for function names: letters, digits, '_' and '-', at
/// most 64 of them.
bool validFunctionName(const std::string &name) {
  if (name.empty() || name.size() > 64)
    return false;
  for (unsigned char c : name)
    if (!std::isalnum(c) && c != '_' && c != '-')
      return false;
  return true;
}

bool fail(const std::string &param, const std::string &message,
          std::string *paramOut, std::string *why) {
  *paramOut = param;
  *why = message;
  return false;
}

/// {"type": "object", "properties": {...}, "required": [...],
///  "additionalProperties": false} with the members in `properties`' order.
Json closedObject(Json properties) {
  Json required = Json::array();
  for (const auto &item : properties.items())
    required.push_back(item.key());
  Json out = Json::object();
  out["type"] = "object";
  out["properties"] = std::move(properties);
  out["required"] = std::move(required);
  out["additionalProperties"] = false;
  return out;
}

/// One call of `function`: {"name": its name, "arguments": its parameters}.
Json callSchema(const Json &function) {
  Json properties = Json::object();
  properties["name"] = Json::object({{"const", function["name"]}});
  if (function.contains("parameters"))
    properties["arguments"] = function["parameters"];
  else
    properties["arguments"] = Json::object({{"type", "object"}});
  return closedObject(std::move(properties));
}

} // namespace

bool readTools(const Json &body, ToolRequest *out, std::string *param,
               std::string *why) {
  std::set<std::string> names;
  auto present = [&](const char *name) {
    return body.contains(name) && !body[name].is_null();
  };
  if (present("tools")) {
    const Json &tools = body["tools"];
    if (!tools.is_array())
      return fail("tools",
                  "'tools' must be a list of {\"type\": \"function\", "
                  "\"function\": {\"name\", \"description\", \"parameters\"}}",
                  param, why);
    if (tools.size() > kMaxTools)
      return fail("tools",
                  "'tools' lists " + std::to_string(tools.size()) +
                      " tools; this server takes at most " +
                      std::to_string(kMaxTools) + " per request",
                  param, why);
    for (size_t i = 0; i < tools.size(); ++i) {
      const Json &tool = tools[i];
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object() || !tool.contains("type") ||
          tool["type"] != "function")
        return fail("tools",
                    where + " must be {\"type\": \"function\", \"function\": "
                            "{...}}: only function tools are supported",
                    param, why);
      if (!tool.contains("function") || !tool["function"].is_object())
        return fail("tools", where + " needs a 'function' object", param, why);
      const Json &function = tool["function"];
      if (!function.contains("name") || !function["name"].is_string() ||
          !validFunctionName(function["name"].get<std::string>()))
        return fail("tools",
                    where + ".function.name must be 1 to 64 letters, digits, "
                            "'_' or '-'",
                    param, why);
      const std::string name = function["name"].get<std::string>();
      if (!names.insert(name).second)
        return fail("tools",
                    where + ": the function '" + name + "' is declared twice",
                    param, why);
      Json declaration = Json::object();
      declaration["name"] = name;
      if (function.contains("description") &&
          !function["description"].is_null()) {
        if (!function["description"].is_string())
          return fail("tools", where + ".function.description must be a string",
                      param, why);
        declaration["description"] = function["description"];
      }
      if (function.contains("parameters") &&
          !function["parameters"].is_null()) {
        if (!function["parameters"].is_object())
          return fail("tools",
                      where + ".function.parameters must be a JSON schema "
                              "object",
                      param, why);
        declaration["parameters"] = function["parameters"];
      }
      out->functions.push_back(std::move(declaration));
    }
    // OpenAI's default: "auto" when tools are given.
    out->choice = out->functions.empty() ? ToolChoice::None : ToolChoice::Auto;
  }
  if (present("tool_choice")) {
    const Json &choice = body["tool_choice"];
    const char *shape = "'tool_choice' must be \"none\", \"auto\", "
                        "\"required\" or {\"type\": \"function\", "
                        "\"function\": {\"name\": ...}}";
    if (choice.is_string()) {
      const std::string value = choice.get<std::string>();
      if (value == "none")
        out->choice = ToolChoice::None;
      else if (value == "auto")
        out->choice = ToolChoice::Auto;
      else if (value == "required")
        out->choice = ToolChoice::Required;
      else
        return fail("tool_choice", shape, param, why);
    } else if (choice.is_object() && choice.contains("type") &&
               choice["type"] == "function" && choice.contains("function") &&
               choice["function"].is_object() &&
               choice["function"].contains("name") &&
               choice["function"]["name"].is_string()) {
      out->choice = ToolChoice::Named;
      out->named = choice["function"]["name"].get<std::string>();
      if (!names.count(out->named))
        return fail("tool_choice",
                    "'tool_choice' names the function '" + out->named +
                        "', which 'tools' does not declare",
                    param, why);
    } else {
      return fail("tool_choice", shape, param, why);
    }
    if (out->choice != ToolChoice::None && out->functions.empty())
      return fail("tool_choice",
                  "'tool_choice' asks for a tool call, but 'tools' declares "
                  "no function",
                  param, why);
  }
  if (present("parallel_tool_calls")) {
    if (!body["parallel_tool_calls"].is_boolean())
      return fail("parallel_tool_calls",
                  "'parallel_tool_calls' must be true or false", param, why);
    out->parallel = body["parallel_tool_calls"].get<bool>();
  }
  return true;
}

std::shared_ptr<const grammar::Schema>
toolReplySchema(const ToolRequest &tools, std::string *why) {
  Json calls = Json::array();
  std::vector<size_t> declared; // each call's place in `tools`
  for (size_t i = 0; i < tools.functions.size(); ++i) {
    const Json &function = tools.functions[i];
    if (tools.choice == ToolChoice::Named && function["name"] != tools.named)
      continue;
    calls.push_back(callSchema(function));
    declared.push_back(i);
  }
  Json array = Json::object();
  array["type"] = "array";
  array["items"] =
      calls.size() == 1 ? calls[0] : Json::object({{"anyOf", calls}});
  array["minItems"] = 1;
  array["maxItems"] = tools.parallel ? kMaxParallelCalls : 1;
  Json properties = Json::object();
  properties["tool_calls"] = std::move(array);
  Json schema = closedObject(std::move(properties));
  if (tools.choice == ToolChoice::Auto) {
    Json response = Json::object();
    response["response"] = Json::object({{"type", "string"}});
    schema = Json::object(
        {{"anyOf", Json::array({std::move(schema),
                                closedObject(std::move(response))})}});
  }
  std::shared_ptr<const grammar::Schema> compiled =
      grammar::compileSchema(schema, why);
  if (compiled)
    return compiled;
  // A refusal names the tool and the keyword: the parameters that fail on
  // their own (only on this path, so that a valid request compiles once).
  for (size_t c = 0; c < calls.size(); ++c) {
    std::string wrong;
    if (!grammar::compileSchema(calls[c]["properties"]["arguments"], &wrong)) {
      *why = "tools[" + std::to_string(declared[c]) +
             "].function.parameters: " + wrong;
      break;
    }
  }
  return nullptr;
}

std::string toolInstructions(const ToolRequest &tools) {
  std::string text = "You can call these functions. Each is declared as a "
                     "JSON object with its name, what it does and the JSON "
                     "schema of its arguments:\n";
  for (const Json &function : tools.functions)
    text += function.dump() + "\n";
  const std::string calls =
      tools.parallel ? "{\"tool_calls\": [{\"name\": \"<function name>\", "
                       "\"arguments\": {<arguments>}}]} (one or more calls)"
                     : "{\"tool_calls\": [{\"name\": \"<function name>\", "
                       "\"arguments\": {<arguments>}}]} (one call)";
  switch (tools.choice) {
  case ToolChoice::Auto:
    text += "Reply with one JSON object and nothing else: " + calls +
            " to call functions, or {\"response\": \"<your reply>\"} to "
            "answer directly.";
    break;
  case ToolChoice::Required:
    text += "Call one of them now. Reply with one JSON object and nothing "
            "else: " +
            calls + ".";
    break;
  case ToolChoice::Named:
    text += "Call the function " + tools.named +
            " now. Reply with one JSON object and nothing else: " + calls +
            ".";
    break;
  case ToolChoice::None:
    break;
  }
  text += "\nThe results of calls come back in a turn that starts with "
          "\"Tool result\".";
  return text;
}

bool toolCallsText(const json &calls, std::string *text, std::string *why) {
  if (!calls.is_array() || calls.empty()) {
    *why = "'tool_calls' must be a non-empty list";
    return false;
  }
  Json list = Json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const json &call = calls[k];
    const std::string where = "tool_calls[" + std::to_string(k) + "]";
    if (!call.is_object() || !call.contains("function") ||
        !call["function"].is_object() ||
        !call["function"].contains("name") ||
        !call["function"]["name"].is_string()) {
      *why = where + " must be {\"id\", \"type\": \"function\", "
                     "\"function\": {\"name\", \"arguments\"}}";
      return false;
    }
    const json &function = call["function"];
    Json arguments = Json::object();
    if (function.contains("arguments") && !function["arguments"].is_null()) {
      if (!function["arguments"].is_string()) {
        *why = where + ".function.arguments must be a string of JSON";
        return false;
      }
      arguments = Json::parse(function["arguments"].get<std::string>(),
                              nullptr, /*allow_exceptions=*/false);
      if (arguments.is_discarded()) {
        *why = where + ".function.arguments is not valid JSON";
        return false;
      }
    }
    Json one = Json::object();
    one["name"] = function["name"].get<std::string>();
    one["arguments"] = std::move(arguments);
    list.push_back(std::move(one));
  }
  Json reply = Json::object();
  reply["tool_calls"] = std::move(list);
  *text = reply.dump();
  return true;
}

std::string toolResultText(const std::string &name, const std::string &callId,
                           const std::string &content) {
  std::string head = "Tool result";
  if (!name.empty())
    head += " of " + name;
  if (!callId.empty())
    head += " (call " + callId + ")";
  return head + ":\n" + content;
}

std::optional<ToolReply> parseToolReply(const std::string &text,
                                        const std::string &idPrefix) {
  const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return std::nullopt;
  ToolReply reply;
  if (doc.contains("response") && doc["response"].is_string()) {
    reply.content = doc["response"].get<std::string>();
    return reply;
  }
  if (!doc.contains("tool_calls") || !doc["tool_calls"].is_array() ||
      doc["tool_calls"].empty())
    return std::nullopt;
  const Json &calls = doc["tool_calls"];
  for (size_t k = 0; k < calls.size(); ++k) {
    const Json &call = calls[k];
    if (!call.is_object() || !call.contains("name") ||
        !call["name"].is_string() || !call.contains("arguments"))
      return std::nullopt;
    reply.calls.push_back(
        {{"id", idPrefix + std::to_string(k)},
         {"type", "function"},
         {"function",
          {{"name", call["name"].get<std::string>()},
           {"arguments", call["arguments"].dump()}}}});
  }
  return reply;
}

} // namespace pccx::serve
