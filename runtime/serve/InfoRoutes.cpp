//===- InfoRoutes.cpp - llama.cpp server's token and info routes ----------===//

#include "runtime/serve/InfoRoutes.h"

#include "hw/support/JsonText.h"

#include <algorithm>
#include <climits>

namespace pccx::serve {

using nlohmann::json;

// Gemma's layout as the server renders it (docs/serving.md, "Chat
// template"), written as the Jinja template that renders the same.
const char kBuiltInChatTemplate[] =
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first = messages[0]['content'] | trim + '\\n\\n' -%}"
    "{%- set turns = messages[1:] -%}"
    "{%- else -%}{%- set first = '' -%}{%- set turns = messages -%}"
    "{%- endif -%}"
    "{%- for message in turns -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('roles must alternate user, assistant, user, ...') }}"
    "{%- endif -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' "
    "else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\\n' + (first if loop.first else '') + "
    "message['content'] | trim + '<end_of_turn>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}"
    "{%- endif -%}";

namespace {

void sendJson(httplib::Response &res, int status, const json &body) {
  res.status = status;
  res.set_content(support::jsonText(body), "application/json");
}

void sendError(httplib::Response &res, const ApiError &error) {
  sendJson(res, error.status, errorBody(error));
}

/// A body that must be a JSON object; nullopt with the error the
/// generation routes give.
std::optional<json> objectBody(const std::string &body, ApiError *error) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    *error = apiError(400, "invalid_json", "the request body is not valid JSON");
    return std::nullopt;
  }
  if (!doc.is_object()) {
    *error = apiError(400, "", "the request body must be a JSON object");
    return std::nullopt;
  }
  return doc;
}

ApiError fieldError(const char *field, const std::string &message,
                    const char *code = "") {
  ApiError e = apiError(400, code, message);
  e.param = field;
  return e;
}

/// A boolean field, absent or null: `fallback`.
bool readBoolean(const json &doc, const char *name, bool fallback, bool *out,
                 ApiError *error) {
  *out = fallback;
  auto it = doc.find(name);
  if (it == doc.end() || it->is_null())
    return true;
  if (!it->is_boolean()) {
    *error = fieldError(name, std::string("'") + name +
                                  "' must be true or false");
    return false;
  }
  *out = it->get<bool>();
  return true;
}

/// A piece as llama.cpp's server writes it: the text when it is UTF-8,
/// else the list of its bytes.
json piece(const std::string &bytes) {
  try {
    (void)json(bytes).dump(); // nlohmann's strict writer checks UTF-8
    return bytes;
  } catch (const json::exception &) {
  }
  json list = json::array();
  for (unsigned char c : bytes)
    list.push_back(int(c));
  return list;
}

ApiError tooManyTokens(const char *field, const std::string &what,
                       const RequestLimits &limits) {
  return fieldError(field,
                    what + "; this server allows at most " +
                        std::to_string(limits.maxRequestTokens) +
                        " tokens per request (--max-request-tokens)",
                    "request_too_large");
}

void refuseGet(const char *path, httplib::Response &res) {
  res.set_header("Allow", "POST");
  sendError(res, apiError(405, "method_not_allowed",
                          std::string("use POST for ") + path));
}

} // namespace

bool needsApiKey(const std::string &path) {
  return path.rfind("/v1/", 0) == 0 || path == "/props" || path == "/slots" ||
         path == "/tokenize" || path == "/detokenize";
}

std::optional<json> tokenizeResponse(Backend &backend,
                                     const RequestLimits &limits,
                                     const std::string &body, ApiError *error) {
  std::optional<json> doc = objectBody(body, error);
  if (!doc)
    return std::nullopt;
  auto content = doc->find("content");
  if (content == doc->end() || !content->is_string()) {
    *error = fieldError("content", "'content' must be a string (the text "
                                   "to tokenize)");
    return std::nullopt;
  }
  bool addSpecial, withPieces, parseSpecial;
  if (!readBoolean(*doc, "add_special", false, &addSpecial, error) ||
      !readBoolean(*doc, "with_pieces", false, &withPieces, error) ||
      !readBoolean(*doc, "parse_special", true, &parseSpecial, error))
    return std::nullopt;
  if (!parseSpecial) {
    // The tokenizer reads control pieces written in the text as themselves.
    *error = fieldError("parse_special",
                        "'parse_special' is not supported by this server "
                        "(only true)",
                        "unsupported_parameter");
    return std::nullopt;
  }
  const std::string &text = content->get_ref<const std::string &>();
  // Text that cannot fit the budget is refused before it is encoded.
  if (text.size() > backend.maxTextBytes(limits.maxRequestTokens)) {
    *error = tooManyTokens("content",
                           "the " + std::to_string(text.size()) +
                               " bytes of 'content' make too many tokens",
                           limits);
    return std::nullopt;
  }
  std::vector<int32_t> ids;
  std::string why;
  if (!backend.tokenize(text, addSpecial, &ids, &why)) {
    *error = fieldError("content", why);
    return std::nullopt;
  }
  if (int64_t(ids.size()) > limits.maxRequestTokens) {
    *error = tooManyTokens(
        "content", "'content' makes " + std::to_string(ids.size()) + " tokens",
        limits);
    return std::nullopt;
  }
  json tokens = json::array();
  for (int32_t id : ids)
    tokens.push_back(withPieces
                         ? json{{"id", id}, {"piece", piece(backend.tokenText(id))}}
                         : json(id));
  return json{{"tokens", tokens}};
}

std::optional<json> detokenizeResponse(const Backend &backend,
                                       const RequestLimits &limits,
                                       const std::string &body,
                                       ApiError *error) {
  std::optional<json> doc = objectBody(body, error);
  if (!doc)
    return std::nullopt;
  auto tokens = doc->find("tokens");
  if (tokens == doc->end() || !tokens->is_array()) {
    *error = fieldError("tokens", "'tokens' must be a list of token ids");
    return std::nullopt;
  }
  if (int64_t(tokens->size()) > limits.maxRequestTokens) {
    *error = tooManyTokens(
        "tokens", "'tokens' lists " + std::to_string(tokens->size()), limits);
    return std::nullopt;
  }
  const int64_t vocab = backend.vocabSize();
  std::vector<int32_t> ids;
  ids.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const json &t = (*tokens)[i];
    const std::string where = "tokens[" + std::to_string(i) + "]";
    if (!t.is_number_integer()) {
      *error = fieldError("tokens", where + " is not an integer token id");
      return std::nullopt;
    }
    // Compared as signed 64 bits: a huge unsigned id is out of range too.
    const bool isUnsigned = t.is_number_unsigned();
    const int64_t id = isUnsigned && t.get<uint64_t>() > uint64_t(INT64_MAX)
                           ? INT64_MAX
                           : t.get<int64_t>();
    if (id < 0 || id > INT32_MAX || (vocab > 0 && id >= vocab)) {
      *error = fieldError(
          "tokens",
          where + " is " + t.dump() + ", outside the vocabulary" +
              (vocab > 0 ? " of " + std::to_string(vocab) : std::string()),
          "invalid_value");
      return std::nullopt;
    }
    ids.push_back(int32_t(id));
  }
  std::vector<int64_t> starts;
  return json{{"content", backend.decodeText(ids, &starts)}};
}

json propsResponse(const Backend &backend, const ServeOptions &options) {
  const app::SamplingOptions &s = options.defaults.sampling;
  const int64_t context = backend.capacity();
  json params = {
      {"temperature", s.temperature},
      {"top_k", s.topK},
      {"top_p", s.topP},
      {"min_p", s.minP},
      {"repeat_penalty", s.repetitionPenalty},
      {"presence_penalty", s.presencePenalty},
      {"frequency_penalty", s.frequencyPenalty},
      // -1 as llama.cpp writes it: each request draws from a seed of its own.
      {"seed", options.defaults.hasSeed ? json(s.seed) : json(-1)},
      // The largest max_tokens a request may ask (--max-tokens-limit).
      {"n_predict", options.limits.maxTokens},
      {"max_tokens", options.limits.maxTokens},
      {"n_probs", 0},
      {"stream", false},
      {"stop", json::array()},
      // Sampler's order (runtime/app/Sampler.h).
      {"samplers", {"penalties", "temperature", "top_k", "top_p", "min_p"}}};
  const bool hasTemplate = !options.chatTemplate.empty();
  return {{"default_generation_settings",
           {{"n_ctx", context},
            {"speculative", options.draftTokens > 0},
            {"is_processing", false},
            {"params", params}}},
          {"total_slots", std::max(1, options.parallel)},
          {"model_alias", options.modelName},
          {"model_path", options.modelPath},
          {"n_ctx", context},
          {"max_n", options.limits.maxChoices},
          {"chat_template",
           hasTemplate ? options.chatTemplate : std::string(kBuiltInChatTemplate)},
          {"chat_template_source",
           hasTemplate ? options.chatTemplateSource : std::string("built-in")},
          {"modalities", {{"vision", false}, {"audio", false}}},
          {"build_info", std::string("pccx ") + PCCX_VERSION}};
}

json slotsResponse(const Backend &backend, const ServeOptions &options,
                   int busy) {
  std::vector<SlotState> slots = backend.slotStates();
  if (slots.empty()) {
    // The server's own count: the first `busy` slots.
    slots.resize(size_t(std::max(1, options.parallel)));
    for (size_t i = 0; i < slots.size(); ++i)
      slots[i].processing = int64_t(i) < busy;
  }
  json out = json::array();
  for (size_t i = 0; i < slots.size(); ++i)
    out.push_back({{"id", i},
                   {"n_ctx", backend.capacity()},
                   {"speculative", options.draftTokens > 0},
                   {"is_processing", slots[i].processing},
                   {"n_cached", slots[i].cachedTokens}});
  return out;
}

void addLlamaRoutes(httplib::Server &http, const LlamaRouteContext &context) {
  using Request = httplib::Request;
  using Response = httplib::Response;
  LlamaRouteContext c = context;
  http.Get("/props", [c](const Request &, Response &res) {
    sendJson(res, 200, propsResponse(*c.backend, *c.options));
  });
  http.Get("/slots", [c](const Request &req, Response &res) {
    json slots = slotsResponse(*c.backend, *c.options, c.busySlots());
    // llama.cpp's ?fail_on_no_slot=1: 503 when every slot is busy.
    if (req.get_param_value("fail_on_no_slot") == "1") {
      bool idle = false;
      for (const json &slot : slots)
        idle |= !slot["is_processing"].get<bool>();
      if (!idle)
        return sendError(res, apiError(503, "no_slot_available",
                                       "every slot is processing a request"));
    }
    sendJson(res, 200, slots);
  });
  for (const char *path : {"/tokenize", "/detokenize"}) {
    const bool tokenize = std::string(path) == "/tokenize";
    http.Post(path, [c, tokenize](const Request &, Response &res,
                                  const httplib::ContentReader &reader) {
      std::string body;
      if (!c.readBody(reader, &body, res))
        return;
      ApiError error;
      std::optional<json> out =
          tokenize
              ? tokenizeResponse(*c.backend, c.options->limits, body, &error)
              : detokenizeResponse(*c.backend, c.options->limits, body, &error);
      if (!out)
        return sendError(res, error);
      sendJson(res, 200, *out);
    });
    http.Get(path, [path](const Request &, Response &res) {
      refuseGet(path, res);
    });
  }
}

} // namespace pccx::serve
