//===- JsonSchemaTests.cpp - schemas, the matcher and token masks ---------===//
//
// The matcher against documents that do and do not validate; token masks
// against a brute-force check of every token; random walks that choose
// only allowed tokens and must end with a document that parses and that an
// independent validator (below, written from the subset's rules) accepts;
// and the refusals, each naming its keyword and place.
//
//===----------------------------------------------------------------------===//

#include "runtime/grammar/TokenMask.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>

using namespace pccx::grammar;

namespace {

std::shared_ptr<const Schema> compile(const std::string &text) {
  std::string error;
  auto schema = compileSchema(Json::parse(text), &error);
  EXPECT_TRUE(schema) << error;
  return schema;
}

std::string compileError(const std::string &text) {
  std::string error;
  auto schema = compileSchema(Json::parse(text), &error);
  EXPECT_FALSE(schema) << text;
  return error;
}

bool matches(const std::shared_ptr<const Schema> &schema,
             const std::string &text) {
  Matcher matcher(schema);
  MatchState state = matcher.start();
  return matcher.feed(&state, text) && matcher.canEnd(state);
}

size_t codePoints(const std::string &s) {
  size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xC0) != 0x80;
  return n;
}

/// The subset's rules, applied to a parsed value (independent of the
/// matcher: a mistake there does not hide here).
bool validates(const nlohmann::json &v, const Json &s) {
  if (s.is_boolean())
    return s.get<bool>();
  if (s.contains("anyOf")) {
    for (const auto &alt : s["anyOf"])
      if (validates(v, alt))
        return true;
    return false;
  }
  if (s.contains("const") && nlohmann::json::parse(s["const"].dump()) != v)
    return false;
  if (s.contains("enum")) {
    bool found = false;
    for (const auto &e : s["enum"])
      found |= nlohmann::json::parse(e.dump()) == v;
    if (!found)
      return false;
  }
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_string())
      types.push_back(s["type"]);
    else
      for (const auto &t : s["type"])
        types.push_back(t);
    bool ok = false;
    for (const auto &t : types)
      ok |= (t == "null" && v.is_null()) ||
            (t == "boolean" && v.is_boolean()) ||
            (t == "integer" && (v.is_number_integer() || v.is_number_unsigned())) ||
            (t == "number" && v.is_number()) ||
            (t == "string" && v.is_string()) ||
            (t == "array" && v.is_array()) || (t == "object" && v.is_object());
    if (!ok)
      return false;
  }
  if (v.is_object()) {
    for (const auto &r : s.value("required", Json::array()))
      if (!v.contains(r.get<std::string>()))
        return false;
    for (const auto &item : v.items()) {
      if (s.contains("properties") && s["properties"].contains(item.key())) {
        if (!validates(item.value(), s["properties"][item.key()]))
          return false;
      } else if (s.contains("additionalProperties")) {
        if (!validates(item.value(), s["additionalProperties"]))
          return false;
      }
    }
  }
  if (v.is_array()) {
    if (v.size() < s.value("minItems", 0u) ||
        v.size() > s.value("maxItems", UINT32_MAX))
      return false;
    if (s.contains("items"))
      for (const auto &item : v)
        if (!validates(item, s["items"]))
          return false;
  }
  if (v.is_string()) {
    const size_t n = codePoints(v.get<std::string>());
    if (n < s.value("minLength", 0u) || n > s.value("maxLength", UINT32_MAX))
      return false;
  }
  return true;
}

/// A vocabulary like a language model's, small enough to check by brute
/// force: every byte alone (byte fallback), JSON punctuation runs, words
/// with and without a leading space, digits, quotes inside pieces, white
/// space runs, multi-byte characters and pieces cut inside one.
std::vector<std::string> testVocabulary() {
  std::vector<std::string> v;
  v.push_back(""); // a control piece
  for (int b = 0; b < 256; ++b)
    v.push_back(std::string(1, char(b)));
  const char *pieces[] = {
      "{", "{\"", "\":", "\": ", "\",", "\", \"", "\"}", "}}", "]}", "},",
      "[{", "[]", "{}", "true", "false", "null", "tr", "ue", "fa", "lse",
      "nu", "ll", "12", "345", "0.", ".5", "e+", "-1", "00", "1e", " ",
      "  ", "    ", "\n", "\n  ", "\n\n\n\n", "\\n", "\\\"", "\\u00", "41",
      "\\u", "d8", "name", " name", "age", "\"name", "\"age\"", "tags", "ok",
      "hello", " world", "a", "ab", "abc", " the", "caf\xC3\xA9", "\xC3",
      "\xA9", "\xE4\xBD\xA0\xE5\xA5\xBD", "\xF0\x9F\x98", "\x80", "red",
      "green", "\"red\"", "blue", "s\"", "x\\", "\t", "id", "items", "1",
      "2", "3", "0", "-", "+", "e", "E", ".", ",", ":", "\"", "[", "]",
      "}", " {", " [", "\",\"", "\":\"", "\":[", "\":{", "\": \"",
  };
  for (const char *p : pieces)
    v.push_back(p);
  return v;
}

/// Tokens a brute-force check allows: every token whose bytes the matcher
/// takes (end tokens when the document can end).
std::vector<bool> bruteForce(const Matcher &matcher, const MatchState &state,
                             const TokenVocabulary &vocab,
                             const std::set<int32_t> &ends) {
  std::vector<bool> allowed(vocab.size());
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (ends.count(int32_t(id))) {
      allowed[id] = matcher.canEnd(state);
      continue;
    }
    MatchState s = state;
    allowed[id] =
        !vocab.text(int32_t(id)).empty() && matcher.feed(&s, vocab.text(int32_t(id)));
  }
  return allowed;
}

/// Chooses random allowed tokens until an end token; checks each mask
/// against the brute force and the final text against the validator.
void randomWalks(const std::string &schemaText, int walks, int maxTokens) {
  auto schema = compile(schemaText);
  ASSERT_TRUE(schema);
  auto vocab = std::make_shared<TokenVocabulary>(testVocabulary());
  const std::set<int32_t> ends = {0};
  Matcher matcher(schema);
  int completed = 0;
  // PCCX_GRAMMAR_WALKS=K runs K times as many (a longer search than CI's).
  if (const char *factor = getenv("PCCX_GRAMMAR_WALKS"))
    walks *= std::max(1, atoi(factor));
  for (int walk = 0; walk < walks; ++walk) {
    std::mt19937 rng(uint32_t(walk * 7919 + 1));
    JsonConstraint constraint(schema, vocab, ends);
    ASSERT_EQ(constraint.checkVocabulary(), "");
    MatchState shadow = matcher.start();
    std::string text;
    bool ended = false;
    for (int step = 0; step < maxTokens && !ended; ++step) {
      std::vector<float> logits(vocab->size(), 0.0f);
      ASSERT_TRUE(constraint.mask(logits.data(), logits.size())) << "stuck after: " << text;
      std::vector<bool> expect = bruteForce(matcher, shadow, *vocab, ends);
      std::vector<int32_t> allowed;
      for (size_t id = 0; id < logits.size(); ++id) {
        const bool on = std::isfinite(logits[id]);
        ASSERT_EQ(on, bool(expect[id]))
            << "token " << id << " '" << vocab->text(int32_t(id))
            << "' after: " << text;
        if (on)
          allowed.push_back(int32_t(id));
      }
      // Prefer closing (and ending) often enough that walks complete: of
      // three draws, one that closes something.
      int32_t token = allowed[rng() % allowed.size()];
      for (int draw = 0; draw < 2; ++draw) {
        const std::string &t = vocab->text(token);
        if (t.find_first_of("\"]}") != std::string::npos)
          break;
        token = allowed[rng() % allowed.size()];
      }
      if (constraint.complete() && rng() % 2 == 0)
        token = 0;
      ASSERT_TRUE(constraint.accept(token));
      if (token == 0) {
        ended = true;
        break;
      }
      ASSERT_TRUE(matcher.feed(&shadow, vocab->text(token)));
      text += vocab->text(token);
    }
    if (!ended) {
      if (walk == 0 && getenv("PCCX_SHOW_WALK"))
        fprintf(stderr, "cut: %s\n", text.c_str());
      continue; // cut by the token limit, as max_tokens would
    }
    ++completed;
    auto parsed = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << "[" << text << "] " << schemaText;
    EXPECT_TRUE(validates(parsed, Json::parse(schemaText))) << text;
  }
  EXPECT_GT(completed, 0) << schemaText;
}

} // namespace

TEST(JsonSchema, AcceptsWhatValidatesAndNothingElse) {
  auto person = compile(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":8},
      "age":{"type":"integer"},
      "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":2}},
      "required":["name","age"],"additionalProperties":false})");
  EXPECT_TRUE(matches(person, R"({"name":"Ann","age":31})"));
  EXPECT_TRUE(matches(person, "{ \"name\" : \"Ann\",\n  \"age\": -4, \"tags\": [\"a\",\"b\"] }"));
  EXPECT_TRUE(matches(person, "{\n  \"name\": \"Ann\",\n  \"age\": 3\n}"));
  EXPECT_TRUE(matches(person, R"({"name":"caf\u00e9","age":0})"));
  EXPECT_FALSE(matches(person, R"({"age":31,"name":"Ann"})"));  // order
  EXPECT_FALSE(matches(person, R"({"name":"Ann"})"));            // required
  EXPECT_FALSE(matches(person, R"({"name":"Ann","age":3.5})"));  // integer
  EXPECT_FALSE(matches(person, R"({"name":"Ann","age":01})"));   // leading 0
  EXPECT_FALSE(matches(person, R"({"name":"Ann","age":3,"x":1})"));
  EXPECT_FALSE(matches(person, R"({"name":"Annabelle","age":3})")); // maxLength
  EXPECT_FALSE(matches(person, R"({"name":"Ann","age":3,"tags":["a","b","a"]})"));
  EXPECT_FALSE(matches(person, R"({"name":"Ann","age":3,"tags":["c"]})"));
  EXPECT_FALSE(matches(person, R"({"name":"\ud800","age":3})")); // surrogate
  EXPECT_FALSE(matches(person, "{\"name\":\"\xC0\xAF\",\"age\":3}")); // overlong
  EXPECT_FALSE(matches(person, R"({"name":"Ann","age":3} )"));  // after the end

  auto free = compile(R"({"type":"object","properties":{"a":{"type":"number"}}})");
  EXPECT_TRUE(matches(free, R"({"b":[1,{"c":null}],"a":1.5e-3})"));
  EXPECT_FALSE(matches(free, R"({"a":1,"a":2})")); // a declared key again
  EXPECT_TRUE(matches(free, R"({"a":1,"ab":2})"));

  auto any = anyObjectSchema();
  EXPECT_TRUE(matches(any, R"({"x":[true,false,null,"s",-0.5,{}]})"));
  EXPECT_FALSE(matches(any, "[1]"));
  std::string deep = "{\"a\":";
  for (int i = 0; i < 40; ++i)
    deep += "[";
  EXPECT_FALSE(matches(any, deep)); // nesting is bounded

  auto number = compile(R"({"anyOf":[{"type":"integer"},{"type":"null"},{"const":"x"}]})");
  EXPECT_TRUE(matches(number, "12"));
  EXPECT_TRUE(matches(number, "null"));
  EXPECT_TRUE(matches(number, "\"x\""));
  EXPECT_FALSE(matches(number, "\"y\""));
  EXPECT_FALSE(matches(number, "1.5"));
  EXPECT_FALSE(matches(number, "12345678901234567")); // digits are bounded

  auto spaces = compile(R"({"type":"array"})");
  EXPECT_TRUE(matches(spaces, "[\n" + std::string(kMaxIndent, ' ') + "1, 2,\n\t3\n]"));
  EXPECT_FALSE(matches(spaces, "[\n" + std::string(kMaxIndent + 1, ' ') + "]"));
  EXPECT_FALSE(matches(spaces, "[  1]"));    // two spaces
  EXPECT_FALSE(matches(spaces, "[\n\n1]"));  // two line breaks
  EXPECT_FALSE(matches(spaces, "[\r\n1]"));  // a carriage return
}

TEST(JsonSchema, RefusalsNameTheKeywordAndPlace) {
  EXPECT_NE(compileError(R"({"type":"object","properties":{"a":{"type":"string","pattern":"x"}}})")
                .find("schema /properties/a/pattern: the keyword 'pattern' is not supported"),
            std::string::npos);
  EXPECT_NE(compileError(R"({"$ref":"#"})").find("'$ref' is not supported"),
            std::string::npos);
  EXPECT_NE(compileError(R"({"type":"integer","minimum":0})").find("/minimum"),
            std::string::npos);
  EXPECT_NE(compileError(R"({"type":"object","required":["x"]})")
                .find("required property \"x\" is not in 'properties'"),
            std::string::npos);
  EXPECT_NE(compileError("false").find("matches no value"), std::string::npos);
  EXPECT_NE(compileError(R"({"type":"strin"})").find("unknown type \"strin\""),
            std::string::npos);
  EXPECT_NE(compileError(R"({"items":[{}]})").find("tuple"), std::string::npos);
  EXPECT_NE(compileError(R"({"minItems":3,"maxItems":2})").find("above"),
            std::string::npos);
  EXPECT_NE(compileError(R"({"type":"string","enum":[1,2]})").find("no value"),
            std::string::npos);
  // Deep nesting: a schema 40 levels deep.
  std::string deep = "{}";
  for (int i = 0; i < 40; ++i)
    deep = R"({"type":"array","items":)" + deep + "}";
  EXPECT_NE(compileError(deep).find("deeper than 32 levels"), std::string::npos);
}

TEST(JsonSchema, MasksEqualBruteForceAndWalksValidate) {
  randomWalks(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":6},
      "age":{"type":"integer"},
      "ok":{"type":"boolean"},
      "tags":{"type":"array","items":{"type":"string","enum":["red","green","blue"]},
              "minItems":1,"maxItems":3}},
      "required":["name","age"],"additionalProperties":false})",
              40, 200);
  randomWalks(R"({"anyOf":[{"type":"object","properties":{"id":{"type":"integer"}},
      "required":["id"],"additionalProperties":false},{"type":"null"},
      {"type":"array","items":{"type":"number"},"maxItems":3}]})",
              40, 120);
  randomWalks(R"({"type":"object","properties":{"a":{"type":"string","minLength":2,"maxLength":4},
      "b":{"type":"boolean"}},"required":["a"],"additionalProperties":false})",
              40, 120);
  randomWalks(R"({"type":["string","null"],"maxLength":5})", 40, 60);
  randomWalks(R"({"type":"array","maxItems":2,"items":{"type":"object","properties":{
      "k":{"type":"string","maxLength":3},"v":{"anyOf":[{"type":"number"},{"type":"boolean"}]}},
      "required":["k"]}})",
              40, 200);
}

TEST(JsonSchema, HugeEnumAndFreeObjects) {
  std::string values = "[";
  for (int i = 0; i < 20000; ++i)
    values += (i ? "," : "") + std::string("\"v") + std::to_string(i * 37) + "\"";
  values += "]";
  auto schema = compile(R"({"type":"object","properties":{"v":{"enum":)" +
                        values + R"(}},"required":["v"],"additionalProperties":false})");
  EXPECT_TRUE(matches(schema, R"({"v":"v37"})"));
  EXPECT_FALSE(matches(schema, R"({"v":"v38"})"));
  randomWalks(R"({"type":"object","additionalProperties":{"type":["integer","string"],"maxLength":3}})",
              40, 150);
}

TEST(JsonSchema, VocabularyCheckNamesAMissingByte) {
  std::vector<std::string> texts = {"", "a", "b"};
  auto vocab = std::make_shared<TokenVocabulary>(texts);
  JsonConstraint constraint(anyObjectSchema(), vocab, {0});
  EXPECT_NE(constraint.checkVocabulary().find("'\"' (0x22)"), std::string::npos);
}
