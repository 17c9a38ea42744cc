//===- OpenAiApi.cpp - OpenAI-compatible requests and responses ----------===//

#include "runtime/serve/OpenAiApi.h"
#include "hw/support/JsonText.h"

#include <climits>
#include <map>
#include <cmath>

namespace pccx::serve {

using nlohmann::json;

json errorBody(const ApiError &error) {
  auto orNull = [](const std::string &s) {
    return s.empty() ? json() : json(s);
  };
  return {{"error",
           {{"message", error.message},
            {"type", error.type},
            {"param", orNull(error.param)},
            {"code", orNull(error.code)}}}};
}

ApiError apiError(int status, const std::string &code,
                  const std::string &message) {
  ApiError e;
  e.status = status;
  e.code = code;
  e.message = message;
  if (status >= 500)
    e.type = "server_error";
  return e;
}

int64_t characterCount(const std::string &text) {
  int64_t n = 0;
  for (unsigned char c : text)
    n += (c & 0xC0) != 0x80;
  return n;
}

const std::vector<RequestField> &requestFields() {
  using H = FieldHandling;
  static const std::vector<RequestField> fields = {
      // Read and honoured (parseRequest).
      {"model", kBothEndpoints, H::Supported, ""},
      {"messages", kChatEndpoint, H::Supported, ""},
      {"prompt", kCompletionsEndpoint, H::Supported, ""},
      {"max_tokens", kBothEndpoints, H::Supported, ""},
      {"max_completion_tokens", kChatEndpoint, H::Supported, ""},
      {"temperature", kBothEndpoints, H::Supported, ""},
      {"top_p", kBothEndpoints, H::Supported, ""},
      {"presence_penalty", kBothEndpoints, H::Supported, ""},
      {"frequency_penalty", kBothEndpoints, H::Supported, ""},
      {"seed", kBothEndpoints, H::Supported, ""},
      {"stop", kBothEndpoints, H::Supported, ""},
      {"stream", kBothEndpoints, H::Supported, ""},
      {"stream_options", kBothEndpoints, H::Supported, ""},
      {"n", kBothEndpoints, H::Supported, ""},
      // llama.cpp's and vLLM's sampling fields.
      {"top_k", kBothEndpoints, H::Supported, ""},
      {"min_p", kBothEndpoints, H::Supported, ""},
      {"repeat_penalty", kBothEndpoints, H::Supported, ""},
      {"repetition_penalty", kBothEndpoints, H::Supported, ""},
      // Log-probabilities (docs/serving.md, "Log-probabilities").
      {"logprobs", kChatEndpoint, H::Supported, ""},
      {"logprobs", kCompletionsEndpoint, H::Supported, ""},
      {"top_logprobs", kChatEndpoint, H::Supported, ""},
      {"response_format", kChatEndpoint, H::Supported, ""},
      {"echo", kCompletionsEndpoint, H::Supported, ""},
      // Tool calling (docs/serving.md, "Tool calling").
      {"tools", kChatEndpoint, H::Supported, ""},
      {"tool_choice", kChatEndpoint, H::Supported, ""},
      {"parallel_tool_calls", kChatEndpoint, H::Supported, ""},
      // Asking for something the server does not do: refused, so that no
      // request silently gets something else.
      {"logit_bias", kBothEndpoints, H::Refused, "{}"},
      {"functions", kChatEndpoint, H::Refused, "[]"},
      {"function_call", kChatEndpoint, H::Refused, "\"none\""},
      {"modalities", kChatEndpoint, H::Refused, "[\"text\"]"},
      {"audio", kChatEndpoint, H::Refused, ""},
      {"reasoning_effort", kChatEndpoint, H::Refused, ""},
      {"verbosity", kChatEndpoint, H::Refused, ""},
      {"web_search_options", kChatEndpoint, H::Refused, ""},
      {"best_of", kCompletionsEndpoint, H::Refused, "1"},
      {"suffix", kCompletionsEndpoint, H::Refused, "\"\""},
      // Bookkeeping and hints that do not change the reply.
      {"user", kBothEndpoints, H::Ignored, ""},
      {"store", kChatEndpoint, H::Ignored, ""},
      {"metadata", kChatEndpoint, H::Ignored, ""},
      {"service_tier", kChatEndpoint, H::Ignored, ""},
      {"safety_identifier", kChatEndpoint, H::Ignored, ""},
      {"prompt_cache_key", kChatEndpoint, H::Ignored, ""},
      {"prediction", kChatEndpoint, H::Ignored, ""},
  };
  return fields;
}

const char *fieldHandlingName(FieldHandling handling) {
  switch (handling) {
  case FieldHandling::Supported:
    return "supported";
  case FieldHandling::Refused:
    return "refused";
  case FieldHandling::Ignored:
    break;
  }
  return "ignored";
}

namespace {

/// Field readers: absent or null fields keep the default; a wrong type
/// is an error naming the field.
class Reader {
public:
  Reader(const json &body, ApiError *error) : body_(body), error_(error) {}
  bool failed() const { return failed_; }

  const json *field(const char *name) {
    auto it = body_.find(name);
    return it == body_.end() || it->is_null() ? nullptr : &*it;
  }
  void fail(const char *name, const std::string &message,
            const char *code = nullptr) {
    if (failed_)
      return;
    failed_ = true;
    error_->status = 400;
    error_->message = message;
    error_->param = name;
    error_->code = code ? code : "";
  }
  void number(const char *name, double *out, double lo, double hi) {
    if (const json *v = field(name)) {
      if (!v->is_number())
        return fail(name, std::string("'") + name + "' must be a number");
      double d = v->get<double>();
      if (!(d >= lo && d <= hi))
        return fail(name,
                    std::string("'") + name + "' must be between " + trim(lo) +
                        " and " + trim(hi) + ", got " + trim(d),
                    "invalid_value");
      *out = d;
    }
  }
  bool integer(const char *name, int64_t *out) {
    if (const json *v = field(name)) {
      if (!v->is_number_integer()) {
        fail(name, std::string("'") + name + "' must be an integer");
        return false;
      }
      *out = v->get<int64_t>();
      return true;
    }
    return false;
  }
  void boolean(const char *name, bool *out) {
    if (const json *v = field(name)) {
      if (!v->is_boolean())
        return fail(name, std::string("'") + name + "' must be true or false");
      *out = v->get<bool>();
    }
  }
  /// A Refused field: accepted at a neutral value only.
  void refuse(const RequestField &row) {
    const json *v = field(row.name);
    if (!v)
      return;
    const std::string neutral = row.neutral;
    if (!neutral.empty() && *v == json::parse(neutral))
      return;
    fail(row.name,
         std::string("'") + row.name + "' is not supported by this server (" +
             (neutral.empty() ? "leave it out" : "only " + neutral) + ")",
         "unsupported_parameter");
  }

private:
  static std::string trim(double d) {
    std::string s = json(d).dump();
    return s;
  }
  const json &body_;
  ApiError *error_;
  bool failed_ = false;
};

/// Message content: a string, or OpenAI's list of {"type": "text"} parts.
bool contentText(const json &content, std::string *text, std::string *why) {
  if (content.is_string()) {
    *text = content.get<std::string>();
    return true;
  }
  if (content.is_array()) {
    for (const json &part : content) {
      if (!part.is_object() || part.value("type", "") != "text" ||
          !part.contains("text") || !part["text"].is_string()) {
        *why = "only text content parts ({\"type\": \"text\", \"text\": "
               "...}) are supported";
        return false;
      }
      *text += part["text"].get<std::string>();
    }
    return true;
  }
  *why = "content must be a string or a list of text parts";
  return false;
}

/// Completions' prompt: a string, a list of strings, token ids, or a list
/// of token-id lists; each string or id list is one prompt.
void readPrompts(const json &prompt, std::vector<CompletionPrompt> *out,
                 int64_t maxPrompts, Reader &r) {
  const char *shape = "'prompt' must be a string, a list of strings, a list "
                      "of token ids, or a list of token-id lists";
  auto tokens = [&](const json &list) {
    CompletionPrompt p;
    p.isTokens = true;
    for (const json &t : list) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() > INT32_MAX) {
        r.fail("prompt", "'prompt' token ids must be non-negative integers");
        return;
      }
      p.tokens.push_back(t.get<int32_t>());
    }
    if (p.tokens.empty())
      r.fail("prompt", "a 'prompt' token-id list must not be empty");
    out->push_back(std::move(p));
  };
  if (prompt.is_string()) {
    out->push_back({prompt.get<std::string>(), {}, false});
  } else if (!prompt.is_array() || prompt.empty()) {
    r.fail("prompt", shape);
  } else if (prompt[0].is_number_integer()) {
    tokens(prompt);
  } else if (int64_t(prompt.size()) > maxPrompts) {
    r.fail("prompt",
           "'prompt' lists " + std::to_string(prompt.size()) +
               " prompts; this server takes at most " +
               std::to_string(maxPrompts) +
               " per request (--max-prompts): send the others in requests "
               "of their own",
           "too_many_prompts");
  } else {
    out->reserve(prompt.size());
    for (const json &p : prompt) {
      if (p.is_string())
        out->push_back({p.get<std::string>(), {}, false});
      else if (p.is_array())
        tokens(p);
      else
        r.fail("prompt", shape);
      if (r.failed())
        return;
    }
  }
}

/// logprobs and top_logprobs (chat), logprobs and echo (completions).
void readLogprobs(bool chat, Reader &r, GenerationRequest *req) {
  auto count = [&](const char *name, int *out) {
    int64_t n = 0;
    if (!r.integer(name, &n))
      return false;
    if (n < 0 || n > kMaxTopLogprobs)
      r.fail(name,
             std::string("'") + name + "' must be between 0 and " +
                 std::to_string(kMaxTopLogprobs) + ", got " +
                 std::to_string(n),
             "invalid_value");
    *out = int(n);
    return true;
  };
  if (chat) {
    r.boolean("logprobs", &req->logprobs);
    if (count("top_logprobs", &req->topLogprobs) && !req->logprobs)
      r.fail("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
    return;
  }
  req->logprobs = count("logprobs", &req->topLogprobs);
  r.boolean("echo", &req->echo);
}

/// response_format (chat): text, json_object (with llama.cpp's optional
/// "schema"), or json_schema {"name", "schema", "strict", "description"}.
/// The schema is read again from the body in its written order: properties
/// are generated in the order the schema declares them.
void readResponseFormat(const std::string &body, Reader &r,
                        GenerationRequest *req) {
  const json *format = r.field("response_format");
  if (!format || format->is_null())
    return;
  const char *kParam = "response_format";
  if (!format->is_object() || !format->contains("type") ||
      !(*format)["type"].is_string())
    return r.fail(kParam, "'response_format' must be an object with a "
                          "string 'type' (text, json_object or json_schema)");
  const std::string type = (*format)["type"].get<std::string>();
  if (type == "text")
    return;
  const grammar::Json ordered = grammar::Json::parse(body, nullptr, false);
  const grammar::Json &spec = ordered["response_format"];
  const grammar::Json *schema = nullptr;
  std::string where;
  if (type == "json_object") {
    if (spec.contains("schema")) {
      schema = &spec["schema"];
      where = "response_format.schema";
    }
  } else if (type == "json_schema") {
    if (!spec.contains("json_schema") || !spec["json_schema"].is_object() ||
        !spec["json_schema"].contains("schema"))
      return r.fail(kParam, "response_format of type json_schema needs "
                            "'json_schema': {\"name\", \"schema\"}");
    schema = &spec["json_schema"]["schema"];
    where = "response_format.json_schema.schema";
  } else {
    return r.fail(kParam, "response_format type '" + type +
                              "' is not one of text, json_object, "
                              "json_schema",
                  "invalid_value");
  }
  if (!schema) {
    req->schema = grammar::anyObjectSchema();
    return;
  }
  std::string why;
  req->schema = grammar::compileSchema(*schema, &why);
  if (!req->schema)
    r.fail(where.c_str(), where + ": " + why, "invalid_value");
}

/// tools, tool_choice and parallel_tool_calls, read keeping the order of
/// the body's members (a tool's arguments are written in the order its
/// parameters declare them).
void readTools(const std::string &body, Reader &r, GenerationRequest *req) {
  if (!r.field("tools") && !r.field("tool_choice") &&
      !r.field("parallel_tool_calls"))
    return;
  const grammar::Json ordered = grammar::Json::parse(body, nullptr, false);
  std::string param, why;
  if (!readTools(ordered, &req->tools, &param, &why))
    r.fail(param.c_str(), why,
           param == "tools" ? nullptr : "invalid_value");
}

/// Chat's messages: system (developer), user and assistant turns, an
/// assistant's tool calls and the tool results after them, as the turns
/// the model reads; with active tools, their instructions in the system
/// message.
void readMessages(const json &messages, Reader &r, GenerationRequest *req) {
  if (!messages.is_array() || messages.empty())
    return r.fail("messages", "'messages' must be a non-empty list");
  // The function each earlier call named, by call id.
  std::map<std::string, std::string> callNames;
  bool lastFromTool = false;
  for (size_t i = 0; i < messages.size() && !r.failed(); ++i) {
    const json &m = messages[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return r.fail("messages", where + " needs a string 'role'");
    app::ChatMessage message;
    message.role = m["role"].get<std::string>();
    if (message.role != "system" && message.role != "user" &&
        message.role != "assistant" && message.role != "developer" &&
        message.role != "tool")
      return r.fail("messages", where + ": role '" + message.role +
                                    "' is not one of system, developer, "
                                    "user, assistant, tool");
    if (message.role == "developer") // OpenAI's newer name for system
      message.role = "system";
    const bool hasCalls = message.role == "assistant" &&
                          m.contains("tool_calls") && !m["tool_calls"].is_null();
    std::string why;
    if (hasCalls) {
      if (!toolCallsText(m["tool_calls"], &message.content, &why))
        return r.fail("messages", where + "." + why);
      for (const json &call : m["tool_calls"])
        if (call.contains("id") && call["id"].is_string())
          callNames[call["id"].get<std::string>()] =
              call["function"]["name"].get<std::string>();
    } else if (!m.contains("content") || m["content"].is_null() ||
               !contentText(m["content"], &message.content, &why)) {
      return r.fail("messages", where + ": " +
                                    (why.empty() ? "'content' is missing"
                                                 : why));
    }
    const bool fromTool = message.role == "tool";
    if (fromTool) {
      // Gemma's turns are the user's and the model's: a result is a user
      // turn, and results in a row (or a user message after them) share
      // one.
      std::string id;
      if (m.contains("tool_call_id") && m["tool_call_id"].is_string())
        id = m["tool_call_id"].get<std::string>();
      auto named = callNames.find(id);
      message.role = "user";
      message.content =
          toolResultText(named == callNames.end() ? "" : named->second, id,
                         message.content);
    }
    if ((fromTool || lastFromTool) && !req->messages.empty() &&
        req->messages.back().role == "user" && message.role == "user") {
      req->messages.back().content += "\n\n" + message.content;
    } else {
      req->messages.push_back(std::move(message));
    }
    lastFromTool = fromTool;
  }
  if (r.failed() || !req->tools.active())
    return;
  const std::string instructions = toolInstructions(req->tools);
  if (req->messages.front().role == "system")
    req->messages.front().content += "\n\n" + instructions;
  else
    req->messages.insert(req->messages.begin(),
                         app::ChatMessage{"system", instructions});
}

} // namespace

std::string checkRequestDefaults(const RequestDefaults &defaults) {
  const app::SamplingOptions &s = defaults.sampling;
  auto outside = [](const char *flag, double v, const char *range) {
    return std::string(flag) + " must be " + range + ", got " +
           json(v).dump();
  };
  if (!(s.temperature >= 0 && s.temperature <= 2))
    return outside("--temp", s.temperature, "between 0 and 2");
  if (!(s.topP > 0 && s.topP <= 1))
    return outside("--top-p", s.topP, "greater than 0 and at most 1");
  if (!(s.minP >= 0 && s.minP <= 1))
    return outside("--min-p", s.minP, "between 0 and 1");
  if (!(s.repetitionPenalty > 0 && s.repetitionPenalty <= 10))
    return outside("--repeat-penalty", s.repetitionPenalty,
                   "greater than 0 and at most 10");
  if (!(s.presencePenalty >= -2 && s.presencePenalty <= 2))
    return outside("--presence-penalty", s.presencePenalty,
                   "between -2 and 2");
  if (!(s.frequencyPenalty >= -2 && s.frequencyPenalty <= 2))
    return outside("--frequency-penalty", s.frequencyPenalty,
                   "between -2 and 2");
  return "";
}

std::optional<GenerationRequest> parseRequest(const std::string &body,
                                              bool chat,
                                              const RequestLimits &limits,
                                              ApiError *error) {
  return parseRequest(body, chat, limits, RequestDefaults(), error);
}

std::optional<GenerationRequest>
parseRequest(const std::string &body, bool chat, const RequestLimits &limits,
             const RequestDefaults &defaults, ApiError *error) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    error->status = 400;
    error->message = "the request body is not valid JSON";
    error->code = "invalid_json";
    return std::nullopt;
  }
  if (!doc.is_object()) {
    error->status = 400;
    error->message = "the request body must be a JSON object";
    return std::nullopt;
  }
  Reader r(doc, error);
  GenerationRequest req;
  req.chat = chat;
  // The server's defaults (OpenAI's unless set: temperature 1, top_p 1).
  req.sampling = defaults.sampling;
  req.hasSeed = defaults.hasSeed;
  if (const json *m = r.field("model")) {
    if (!m->is_string())
      r.fail("model", "'model' must be a string");
    else
      req.model = m->get<std::string>();
  }
  if (chat) {
    readTools(body, r, &req);
    if (const json *messages = r.field("messages"))
      readMessages(*messages, r, &req);
    else
      r.fail("messages", "'messages' must be a non-empty list");
  } else {
    std::vector<CompletionPrompt> prompts;
    if (const json *prompt = r.field("prompt"))
      readPrompts(*prompt, &prompts, limits.maxPrompts, r);
    else
      r.fail("prompt", "'prompt' is required");
    if (!prompts.empty()) {
      req.prompt = prompts[0].text;
      req.promptTokens = prompts[0].tokens;
      req.promptIsTokens = prompts[0].isTokens;
      req.morePrompts.assign(prompts.begin() + 1, prompts.end());
    }
  }

  int64_t maxTokens = 0;
  const char *maxName = "max_tokens";
  bool hasMax = r.integer(maxName, &maxTokens);
  if (chat && !hasMax && !r.failed()) {
    maxName = "max_completion_tokens";
    hasMax = r.integer(maxName, &maxTokens);
  }
  if (hasMax && !r.failed()) {
    // Completions may ask for no token: the prompt alone, echoed and
    // scored (lm-evaluation-harness' loglikelihood requests).
    const int64_t least = chat ? 1 : 0;
    // Above --max-tokens-limit, or past the context, a budget is clamped
    // (expandChoices), as llama-server does: clients send 2048 or 4096
    // as a default meaning "as long as it takes".
    if (maxTokens < least)
      r.fail(maxName,
             std::string("'") + maxName + "' must be at least " +
                 std::to_string(least),
             "invalid_value");
    req.maxTokens = maxTokens;
  }
  r.number("temperature", &req.sampling.temperature, 0.0, 2.0);
  r.number("top_p", &req.sampling.topP, 0.0, 1.0);
  if (req.sampling.topP == 0.0 && !r.failed())
    r.fail("top_p", "'top_p' must be greater than 0", "invalid_value");
  // What llama.cpp's server and vLLM take beside OpenAI's fields.
  int64_t topK = 0;
  if (r.integer("top_k", &topK)) {
    if (topK < 0)
      r.fail("top_k", "'top_k' must be 0 (off) or more", "invalid_value");
    req.sampling.topK = topK;
  }
  r.number("min_p", &req.sampling.minP, 0.0, 1.0);
  if (r.field("repeat_penalty") && r.field("repetition_penalty"))
    r.fail("repeat_penalty",
           "give 'repeat_penalty' or 'repetition_penalty', not both");
  r.number("repeat_penalty", &req.sampling.repetitionPenalty, 0.0, 10.0);
  r.number("repetition_penalty", &req.sampling.repetitionPenalty, 0.0, 10.0);
  if (req.sampling.repetitionPenalty == 0.0 && !r.failed())
    r.fail(r.field("repeat_penalty") ? "repeat_penalty" : "repetition_penalty",
           "the repetition penalty must be greater than 0", "invalid_value");
  r.number("presence_penalty", &req.sampling.presencePenalty, -2.0, 2.0);
  r.number("frequency_penalty", &req.sampling.frequencyPenalty, -2.0, 2.0);
  int64_t seed = 0;
  if (r.integer("seed", &seed)) {
    req.hasSeed = true;
    req.sampling.seed = uint64_t(seed);
  }
  if (const json *stop = r.field("stop")) {
    if (stop->is_string())
      req.stop.push_back(stop->get<std::string>());
    else if (stop->is_array() && stop->size() <= 4) {
      for (const json &s : *stop)
        if (s.is_string())
          req.stop.push_back(s.get<std::string>());
        else
          r.fail("stop", "'stop' must be a string or a list of up to 4 "
                         "strings");
    } else {
      r.fail("stop", "'stop' must be a string or a list of up to 4 strings");
    }
    for (const std::string &s : req.stop)
      if (s.empty())
        r.fail("stop", "'stop' strings must not be empty");
  }
  if (r.integer("n", &req.n) && !r.failed()) {
    if (req.n < 1)
      r.fail("n", "'n' must be at least 1", "invalid_value");
    else if (req.n > limits.maxChoices)
      r.fail("n",
             "'n' is " + std::to_string(req.n) +
                 "; this server generates at most " +
                 std::to_string(limits.maxChoices) +
                 " choices per prompt (--max-n)",
             "invalid_value");
  }
  r.boolean("stream", &req.stream);
  if (const json *options = r.field("stream_options")) {
    if (!options->is_object())
      r.fail("stream_options", "'stream_options' must be an object");
    else if (options->contains("include_usage")) {
      const json &v = (*options)["include_usage"];
      if (!v.is_boolean())
        r.fail("stream_options", "'include_usage' must be true or false");
      else
        req.includeUsage = v.get<bool>();
    }
  }
  readLogprobs(chat, r, &req);
  if (chat)
    readResponseFormat(body, r, &req);
  if (req.tools.active() && !r.failed()) {
    // The reply is a tool-call document: its schema is the tools'.
    if (req.schema)
      r.fail("response_format",
             "'response_format' cannot be combined with 'tools' unless "
             "'tool_choice' is \"none\"");
    std::string why;
    if (!r.failed() && !(req.schema = toolReplySchema(req.tools, &why)))
      r.fail("tools", why, "invalid_value");
  }
  if (!chat && !r.failed() && req.stream) {
    // A stream has one choice, and its chunks carry only generated text.
    if (!req.morePrompts.empty())
      r.fail("prompt", "a streamed request takes one prompt; send the "
                       "others in requests of their own");
    else if (req.echo)
      r.fail("echo", "'echo' is not supported with 'stream'");
  }
  const unsigned endpoint = chat ? kChatEndpoint : kCompletionsEndpoint;
  for (const RequestField &row : requestFields())
    if (row.handling == FieldHandling::Refused && (row.endpoints & endpoint))
      r.refuse(row);
  if (r.failed())
    return std::nullopt;
  return req;
}

const char *finishReason(app::ReplyEnd end) {
  switch (end) {
  case app::ReplyEnd::EndOfTurn:
  case app::ReplyEnd::StopToken:
  case app::ReplyEnd::StopString:
    return "stop";
  case app::ReplyEnd::MaxTokens:
  case app::ReplyEnd::ContextFull:
  case app::ReplyEnd::Interrupted:
    break;
  }
  return "length";
}

namespace {

json usage(const app::Reply &reply) {
  int64_t completion = int64_t(reply.tokens.size());
  // cached_tokens: prompt tokens found in the KV cache (not recomputed).
  json u = {{"prompt_tokens", reply.promptTokens},
            {"completion_tokens", completion},
            {"total_tokens", reply.promptTokens + completion},
            {"prompt_tokens_details", {{"cached_tokens", reply.reusedTokens}}}};
  // Speculative decoding (pccx-serve --draft): OpenAI's fields for
  // predicted tokens that were, and were not, part of the reply.
  if (reply.draft.enabled)
    u["completion_tokens_details"] = {
        {"accepted_prediction_tokens", reply.draft.accepted},
        {"rejected_prediction_tokens",
         reply.draft.drafted - reply.draft.accepted}};
  return u;
}

json envelope(const GenerationRequest &request, const ResponseIds &ids,
              bool chunk) {
  const char *object =
      request.chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                   : "text_completion";
  return {{"id", ids.id},
          {"object", object},
          {"created", ids.created},
          {"model", ids.model}};
}

} // namespace

std::string tokenString(const std::string &bytes) {
  // nlohmann's strict writer is the UTF-8 check the responses' writer
  // relies on.
  try {
    (void)json(bytes).dump();
    return bytes;
  } catch (const json::type_error &) {
  }
  std::string out = "bytes:";
  for (unsigned char c : bytes)
    support::appendHexEscape(out, c);
  return out;
}

namespace {

json byteList(const std::string &bytes) {
  json list = json::array();
  for (unsigned char c : bytes)
    list.push_back(int(c));
  return list;
}

} // namespace

json chatLogprobs(const std::vector<TokenScore> &tokens) {
  json content = json::array();
  for (const TokenScore &t : tokens) {
    json top = json::array();
    for (const auto &[bytes, logprob] : t.top)
      top.push_back({{"token", tokenString(bytes)},
                     {"logprob", logprob},
                     {"bytes", byteList(bytes)}});
    content.push_back({{"token", tokenString(t.bytes)},
                       {"logprob", t.logprob ? json(*t.logprob) : json()},
                       {"bytes", byteList(t.bytes)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

json completionLogprobs(const std::vector<TokenScore> &tokens) {
  json texts = json::array(), logprobs = json::array(), tops = json::array(),
       offsets = json::array();
  for (const TokenScore &t : tokens) {
    texts.push_back(tokenString(t.bytes));
    logprobs.push_back(t.logprob ? json(*t.logprob) : json());
    offsets.push_back(t.offset);
    if (!t.logprob) {
      tops.push_back(nullptr);
      continue;
    }
    // OpenAI's shape: the alternatives and the token itself, so that its
    // value is among them even when it is not one of the most likely
    // (lm-evaluation-harness compares it with their maximum). Texts that
    // two ids share keep the likelier one.
    json top = json::object();
    for (const auto &[bytes, logprob] : t.top)
      top.emplace(tokenString(bytes), logprob);
    top.emplace(tokenString(t.bytes), *t.logprob);
    tops.push_back(top);
  }
  return {{"tokens", texts},
          {"token_logprobs", logprobs},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

app::Reply sumReplies(const std::vector<const app::Reply *> &replies) {
  app::Reply total;
  for (const app::Reply *reply : replies) {
    total.promptTokens += reply->promptTokens;
    total.reusedTokens += reply->reusedTokens;
    total.tokens.insert(total.tokens.end(), reply->tokens.begin(),
                        reply->tokens.end());
    total.draft.enabled |= reply->draft.enabled;
    total.draft.drafted += reply->draft.drafted;
    total.draft.accepted += reply->draft.accepted;
  }
  return total;
}

json completionResponse(const GenerationRequest &request,
                        const ResponseIds &ids,
                        const std::vector<ChoiceResult> &choices) {
  json out = envelope(request, ids, false);
  out["choices"] = json::array();
  std::vector<const app::Reply *> replies;
  for (size_t i = 0; i < choices.size(); ++i) {
    const app::Reply &reply = *choices[i].reply;
    const bool calls = !choices[i].toolCalls.is_null();
    json choice = {{"index", i},
                   {"finish_reason",
                    calls ? "tool_calls" : finishReason(reply.end)},
                   {"logprobs", choices[i].logprobs}};
    if (calls)
      choice["message"] = {{"role", "assistant"},
                           {"content", nullptr},
                           {"tool_calls", choices[i].toolCalls}};
    else if (request.chat)
      choice["message"] = {{"role", "assistant"},
                           {"content", choices[i].text}};
    else
      choice["text"] = choices[i].text;
    out["choices"].push_back(choice);
    replies.push_back(&reply);
  }
  out["usage"] = usage(sumReplies(replies));
  return out;
}

json completionResponse(const GenerationRequest &request,
                        const ResponseIds &ids, const app::Reply &reply) {
  return completionResponse(request, ids,
                            {{&reply, reply.text, nullptr, nullptr}});
}

json streamDelta(const GenerationRequest &request, const ResponseIds &ids,
                 json delta, const char *finish, const json &logprobs,
                 size_t index) {
  json out = envelope(request, ids, true);
  json choice = {{"index", index},
                 {"logprobs", logprobs},
                 {"finish_reason", finish ? json(finish) : json()}};
  choice["delta"] = std::move(delta);
  out["choices"] = json::array({choice});
  return out;
}

json streamChunk(const GenerationRequest &request, const ResponseIds &ids,
                 const std::string &text, bool first, const char *finish,
                 const json &logprobs, size_t index) {
  if (request.chat) {
    json delta = json::object();
    if (first)
      delta["role"] = "assistant";
    if (!finish)
      delta["content"] = text;
    return streamDelta(request, ids, std::move(delta), finish, logprobs,
                       index);
  }
  json out = envelope(request, ids, true);
  json choice = {{"index", index},
                 {"logprobs", logprobs},
                 {"finish_reason", finish ? json(finish) : json()},
                 {"text", text}};
  out["choices"] = json::array({choice});
  return out;
}

json usageChunk(const GenerationRequest &request, const ResponseIds &ids,
                const app::Reply &reply) {
  json out = envelope(request, ids, true);
  out["choices"] = json::array();
  out["usage"] = usage(reply);
  return out;
}

} // namespace pccx::serve
