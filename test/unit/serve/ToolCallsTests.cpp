//===- ToolCallsTests.cpp - tool calling's requests, schema and replies ---===//

#include "runtime/serve/Choices.h"
#include "runtime/serve/OpenAiApi.h"
#include "runtime/serve/ToolCalls.h"

#include <gtest/gtest.h>

using namespace pccx::serve;
using pccx::grammar::Matcher;
using nlohmann::json;

namespace {

const char *kWeatherTool = R"({"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string"},
                                  "days": {"type": "integer"}},
                   "required": ["city"], "additionalProperties": false}}})";
const char *kTimeTool = R"({"type": "function", "function": {
    "name": "get_time"}})";

std::string chatWith(const std::string &fields,
                     const std::string &messages =
                         R"([{"role": "user", "content": "Weather?"}])") {
  return R"({"messages": )" + messages + ", " + fields + "}";
}

std::optional<GenerationRequest> parse(const std::string &body,
                                       ApiError *error) {
  return parseRequest(body, true, RequestLimits(), error);
}

bool accepts(const GenerationRequest &request, const std::string &text) {
  Matcher matcher(request.schema);
  auto state = matcher.start();
  return matcher.feed(&state, text) && matcher.canEnd(state);
}

} // namespace

TEST(ToolCalls, AutoDeclaresTheToolsAndTakesCallsOrAResponse) {
  ApiError error;
  auto r = parse(chatWith(std::string(R"("tools": [)") + kWeatherTool + ", " +
                          kTimeTool + "]"),
                 &error);
  ASSERT_TRUE(r) << error.message;
  EXPECT_EQ(r->tools.choice, ToolChoice::Auto); // OpenAI's default
  ASSERT_TRUE(r->tools.active());
  ASSERT_TRUE(r->schema);
  // The instructions are the system message, before the user's.
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_NE(r->messages[0].content.find(
                R"({"name":"get_weather","description":"The weather in a city.")"),
            std::string::npos)
      << r->messages[0].content;
  EXPECT_NE(r->messages[0].content.find("{\"response\": "), std::string::npos);
  // Arguments in the parameters' order, closed objects, known names only.
  EXPECT_TRUE(accepts(
      *r, R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}]})"));
  EXPECT_TRUE(accepts(
      *r, R"({"tool_calls": [{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Rome"}}]})"));
  EXPECT_TRUE(accepts(*r, R"({"response": "It is sunny."})"));
  EXPECT_FALSE(accepts(
      *r, R"({"tool_calls": [{"name": "get_wind", "arguments": {}}]})"));
  EXPECT_FALSE(accepts(
      *r, R"({"tool_calls": [{"name": "get_weather", "arguments": {"days": 2}}]})"));
  EXPECT_FALSE(accepts(
      *r, R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo", "wind": 1}}]})"));
  EXPECT_FALSE(accepts(*r, R"({"tool_calls": []})"));
  EXPECT_FALSE(accepts(*r, R"({"response": "x", "tool_calls": []})"));
  EXPECT_FALSE(accepts(*r, "Sunny."));
}

TEST(ToolCalls, RequiredNamedAndSerialChoices) {
  ApiError error;
  const std::string tools =
      std::string(R"("tools": [)") + kWeatherTool + ", " + kTimeTool + "]";
  auto required = parse(chatWith(tools + R"(, "tool_choice": "required")"),
                        &error);
  ASSERT_TRUE(required) << error.message;
  EXPECT_FALSE(accepts(*required, R"({"response": "x"})"));
  EXPECT_TRUE(accepts(
      *required, R"({"tool_calls": [{"name": "get_time", "arguments": {}}]})"));

  auto named = parse(
      chatWith(tools + R"(, "tool_choice": {"type": "function",
                           "function": {"name": "get_time"}})"),
      &error);
  ASSERT_TRUE(named) << error.message;
  EXPECT_EQ(named->tools.choice, ToolChoice::Named);
  EXPECT_TRUE(accepts(
      *named, R"({"tool_calls": [{"name": "get_time", "arguments": {}}]})"));
  EXPECT_FALSE(accepts(
      *named,
      R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "x"}}]})"));
  EXPECT_NE(named->messages[0].content.find("Call the function get_time"),
            std::string::npos);

  auto serial = parse(chatWith(tools + R"(, "parallel_tool_calls": false)"),
                      &error);
  ASSERT_TRUE(serial) << error.message;
  EXPECT_TRUE(accepts(
      *serial, R"({"tool_calls": [{"name": "get_time", "arguments": {}}]})"));
  EXPECT_FALSE(accepts(
      *serial, R"({"tool_calls": [{"name": "get_time", "arguments": {}}, {"name": "get_time", "arguments": {}}]})"));

  // "none": the tools are neither shown nor decoded for.
  auto none = parse(chatWith(tools + R"(, "tool_choice": "none")"), &error);
  ASSERT_TRUE(none) << error.message;
  EXPECT_FALSE(none->tools.active());
  EXPECT_FALSE(none->schema);
  ASSERT_EQ(none->messages.size(), 1u);
}

TEST(ToolCalls, ConversationWithCallsAndResults) {
  ApiError error;
  auto r = parse(
      chatWith(std::string(R"("tools": [)") + kWeatherTool + "]",
               R"([{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": "Weather in Oslo?"},
                   {"role": "assistant", "content": null, "tool_calls": [
                     {"id": "c1", "type": "function", "function": {
                       "name": "get_weather",
                       "arguments": "{\"city\": \"Oslo\"}"}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "12 C"},
                   {"role": "tool", "tool_call_id": "c9", "content": "?"},
                   {"role": "user", "content": "And tomorrow?"}])"),
      &error);
  ASSERT_TRUE(r) << error.message;
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[0].content.rfind("Be brief.\n\nYou can call", 0), 0u);
  EXPECT_EQ(r->messages[2].role, "assistant");
  EXPECT_EQ(r->messages[2].content,
            R"({"tool_calls":[{"name":"get_weather","arguments":{"city":"Oslo"}}]})");
  // Results, and the user's message after them, are one user turn.
  EXPECT_EQ(r->messages[3].role, "user");
  EXPECT_EQ(r->messages[3].content,
            "Tool result of get_weather (call c1):\n12 C\n\n"
            "Tool result (call c9):\n?\n\nAnd tomorrow?");
}

TEST(ToolCalls, Refusals) {
  struct Case {
    std::string body;
    const char *param;
    const char *text;
  };
  const std::string weather = std::string("[") + kWeatherTool + "]";
  const std::vector<Case> cases = {
      {chatWith(R"("tools": {})"), "tools", "must be a list"},
      {chatWith(R"("tools": [{"type": "retrieval"}])"), "tools",
       "only function tools"},
      {chatWith(R"("tools": [{"type": "function", "function": {"name": "a b"}}])"),
       "tools", "tools[0].function.name must be"},
      {chatWith(R"("tools": [{"type": "function", "function": {"name": "f"}},
                             {"type": "function", "function": {"name": "f"}}])"),
       "tools", "declared twice"},
      {chatWith(R"("tools": [{"type": "function", "function": {"name": "f",
                   "parameters": {"type": "string", "pattern": "x"}}}])"),
       "tools", "tools[0].function.parameters: schema /pattern"},
      {chatWith(R"("tool_choice": "required")"), "tool_choice",
       "declares no function"},
      {chatWith(R"("tools": )" + weather + R"(, "tool_choice": "always")"),
       "tool_choice", "must be \"none\""},
      {chatWith(R"("tools": )" + weather +
                R"(, "tool_choice": {"type": "function", "function": {"name": "f"}})"),
       "tool_choice", "does not declare"},
      {chatWith(R"("tools": )" + weather + R"(, "parallel_tool_calls": 1)"),
       "parallel_tool_calls", "true or false"},
      {chatWith(R"("tools": )" + weather +
                R"(, "response_format": {"type": "json_object"})"),
       "response_format", "cannot be combined"},
      {chatWith(R"("tools": )" + weather,
                R"([{"role": "assistant", "tool_calls": [{"function": {
                    "name": "f", "arguments": "{"}}]}])"),
       "messages", "messages[0].tool_calls[0].function.arguments is not valid JSON"},
      {chatWith(R"("tools": )" + weather,
                R"([{"role": "tool", "content": null}])"),
       "messages", "'content' is missing"},
  };
  for (const Case &c : cases) {
    ApiError error;
    EXPECT_FALSE(parse(c.body, &error)) << c.body;
    EXPECT_EQ(error.status, 400) << c.body;
    EXPECT_EQ(error.param, c.param) << c.body;
    EXPECT_NE(error.message.find(c.text), std::string::npos)
        << c.body << "\n" << error.message;
  }
}

TEST(ToolCalls, RepliesBecomeCallsOrText) {
  ApiError error;
  auto r = parse(chatWith(std::string(R"("tools": [)") + kWeatherTool + "]"),
                 &error);
  ASSERT_TRUE(r) << error.message;
  pccx::app::Reply reply;
  reply.end = pccx::app::ReplyEnd::EndOfTurn;
  reply.promptTokens = 4;
  reply.tokens = {1, 2, 3};
  ChoiceResult call;
  call.reply = &reply;
  call.text = R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}]})";
  readToolReply(*r, toolCallIdPrefix({"chatcmpl-7", 1, "m"}, 0), &call);
  json response = completionResponse(*r, {"chatcmpl-7", 1, "m"}, {call});
  const json &choice = response["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  EXPECT_EQ(choice["message"]["tool_calls"],
            json::parse(R"([{"id": "call_chatcmpl-7_0_0", "type": "function",
                "function": {"name": "get_weather",
                             "arguments": "{\"city\":\"Oslo\",\"days\":2}"}}])"));

  ChoiceResult text;
  text.reply = &reply;
  text.text = R"({"response": "Sunny \"today\"."})";
  readToolReply(*r, "call_", &text);
  EXPECT_TRUE(text.toolCalls.is_null());
  EXPECT_EQ(text.text, "Sunny \"today\".");

  // A reply cut by its budget keeps its text.
  pccx::app::Reply cut = reply;
  cut.end = pccx::app::ReplyEnd::MaxTokens;
  ChoiceResult partial;
  partial.reply = &cut;
  partial.text = R"({"tool_calls": [{"name": "get_w)";
  readToolReply(*r, "call_", &partial);
  EXPECT_TRUE(partial.toolCalls.is_null());
  EXPECT_EQ(partial.text, R"({"tool_calls": [{"name": "get_w)");
  json cutResponse = completionResponse(*r, {"chatcmpl-7", 1, "m"}, {partial});
  EXPECT_EQ(cutResponse["choices"][0]["finish_reason"], "length");
}
