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
#include <thread>

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

//===----------------------------------------------------------------------===//
// Hostile inputs, round 4: masks bounded and fast on many branches, enum
// and const values checked against the keywords beside them, required
// names unique and looked up in linear time.
//===----------------------------------------------------------------------===//

namespace {

/// The state after `prefix`, whose mask must equal the brute force's.
void expectMaskIsBruteForce(const std::string &schemaText,
                            const std::string &prefix) {
  auto schema = compile(schemaText);
  ASSERT_TRUE(schema);
  auto vocab = std::make_shared<TokenVocabulary>(testVocabulary());
  const std::set<int32_t> ends = {0};
  Matcher matcher(schema);
  MatchState state = matcher.start();
  ASSERT_TRUE(matcher.feed(&state, prefix)) << prefix;
  JsonConstraint constraint(schema, vocab, ends);
  for (unsigned char c : prefix)
    ASSERT_TRUE(constraint.accept(int32_t(1 + c))); // the byte's own token
  std::vector<float> logits(vocab->size(), 0.0f);
  const bool any = constraint.mask(logits.data(), logits.size());
  const std::vector<bool> expect = bruteForce(matcher, state, *vocab, ends);
  EXPECT_EQ(any, std::count(expect.begin(), expect.end(), true) > 0);
  for (size_t id = 0; id < logits.size(); ++id)
    EXPECT_EQ(std::isfinite(logits[id]), bool(expect[id]))
        << "token " << id << " '" << vocab->text(int32_t(id)) << "' after "
        << prefix << " under " << schemaText;
}

/// `count` anyOf alternatives, the i-th `make(i)`.
template <typename Make> std::string anyOf(int count, Make make) {
  std::string s = R"({"anyOf":[)";
  for (int i = 0; i < count; ++i)
    s += (i ? "," : "") + make(i);
  return s + "]}";
}

std::string boundedString(int minLength, int maxLength) {
  return R"({"type":"string","minLength":)" + std::to_string(minLength) +
         R"(,"maxLength":)" + std::to_string(maxLength) + "}";
}

/// A vocabulary of `size` pieces in a language model's proportions: words
/// with and without a leading space (60 %), runs of punctuation with
/// quotes and backslashes among letters (10 %), digits, CJK and two-byte
/// letters, and every byte alone.
std::shared_ptr<TokenVocabulary> largeVocabulary(size_t size) {
  std::vector<std::string> texts = {""};
  for (int b = 0; b < 256; ++b)
    texts.push_back(std::string(1, char(b)));
  std::set<std::string> seen(texts.begin(), texts.end());
  std::mt19937 rng(7);
  const std::string punct = "{}[]\",:.\\!?'-_ ";
  const char *wide[] = {"\xE4\xBD\xA0", "\xE5\xA5\xBD", "\xD0\xB0", "\xC3\xA9",
                        "\xF0\x9F\x98\x80"};
  auto letter = [&] { return std::string(1, char('a' + rng() % 26)); };
  while (texts.size() < size) {
    std::string t;
    const unsigned kind = rng() % 100;
    for (unsigned i = 0, length = 2 + rng() % 7; i < length; ++i)
      t += kind < 60 ? letter()
           : kind < 70
               ? (rng() % 4 ? std::string(1, punct[rng() % punct.size()])
                            : letter())
           : kind < 75 ? std::string(1, char('0' + rng() % 10))
                       : std::string(wide[rng() % 5]);
    if (kind < 30)
      t = " " + t;
    if (seen.insert(t).second)
      texts.push_back(t);
  }
  return std::make_shared<TokenVocabulary>(std::move(texts));
}

/// The most work any mask took while `document` was read token by token
/// (each of its bytes by its own token), under every default bound.
int64_t mostMaskWork(const std::string &schemaText,
                     const std::shared_ptr<TokenVocabulary> &vocab,
                     const std::string &document) {
  auto schema = compile(schemaText);
  JsonConstraint constraint(schema, vocab, {0});
  std::vector<float> logits(vocab->size());
  for (unsigned char c : document) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    EXPECT_TRUE(constraint.mask(logits.data(), logits.size()))
        << constraint.error();
    EXPECT_TRUE(constraint.accept(int32_t(1 + c)));
  }
  return constraint.maxMaskWork();
}

} // namespace

TEST(JsonSchemaHostile, BoundedStringMasksEqualBruteForce) {
  // Branches of different bounds read the same text: a run of plain bytes
  // stands for all of them until a closing quote.
  const std::string strings =
      anyOf(5, [](int i) { return boundedString(i, 2 * i + 1); });
  for (const char *prefix :
       {"\"", "\"a", "\"ab", "\"abc", "\"abcd", "\"abcdefghi", "\"\\",
        "\"\\u00", "\"\\ud", "\"\\u00e", "\"a\\n", "\"caf\xC3", "\"caf\xC3\xA9",
        "\"\xF0\x9F", "\"\xE4\xBD\xA0\xE5", "\"ab\xE4\xBD\xA0"})
    expectMaskIsBruteForce(strings, prefix);
  // In arrays and objects, beside numbers and enums; free keys of objects
  // that allow additional members.
  const std::string mixed =
      R"({"type":"array","items":)" +
      anyOf(6,
            [](int i) {
              return i % 3 == 0   ? boundedString(0, i + 1)
                     : i % 3 == 1 ? std::string(R"({"type":"number"})")
                                  : std::string(R"({"enum":["ab","x\"y"]})");
            }) +
      "}";
  for (const char *prefix :
       {"[", "[\"", "[\"a", "[\"ab", "[\"x\\", "[1", "[\"a\",", "[\"\xC3"})
    expectMaskIsBruteForce(mixed, prefix);
  const std::string objects = anyOf(3, [](int i) {
    return R"({"type":"object","properties":{"name":)" +
           boundedString(0, i + 2) + R"(},"additionalProperties":)" +
           boundedString(1, 3 - i) + "}";
  });
  for (const char *prefix :
       {"{", "{\"", "{\"n", "{\"x", "{\"xy\\", "{\"xy\\n", "{\"x\xC3",
        "{\"name\":\"", "{\"name\":\"ab", "{\"q\":\"a", "{\"q\":\"ab"})
    expectMaskIsBruteForce(objects, prefix);
  randomWalks(strings, 40, 40);
  randomWalks(mixed, 40, 80);
  randomWalks(objects, 40, 80);
}

TEST(JsonSchemaHostile, ManyBranchesMaskInLittleWork) {
  auto vocab = largeVocabulary(60000);
  const int64_t nodes = int64_t(vocab->trieNodes());
  const std::string prose = "Bounded strings in every branch, caf\xC3\xA9 "
                            "\xE4\xBD\xA0\xE5\xA5\xBD and "
                            "\\\"escapes\\\" too";
  // Sixty-four branches of bounded strings: before, every trie node
  // stepped every branch (64 steps a node, more for deeper stacks); now a
  // run of plain text walks a node in one step, whatever the branches.
  const std::string strings =
      R"({"type":"object","properties":{"text":)" +
      anyOf(64, [](int i) { return boundedString(0, 200 + i); }) +
      R"(},"required":["text"]})";
  EXPECT_LT(mostMaskWork(strings, vocab, "{\"text\": \"" + prose + "\"}"),
            nodes);
  // Arrays of arrays of them, and bounds small enough that the walk goes
  // deep.
  const std::string arrays = anyOf(64, [](int i) {
    return R"({"type":"array","items":{"type":"array","items":)" +
           boundedString(0, 4 + i) + "}}";
  });
  EXPECT_LT(
      mostMaskWork(arrays, vocab, "[[\"ab\", \"" + prose + "\"], [\"c\"]]"),
      nodes);
  // Strings beside numbers: numbers that read the same are one branch.
  const std::string mixed =
      R"({"type":"array","items":)" +
      anyOf(64,
            [](int i) {
              return i % 2 ? std::string(R"({"type":"number"})")
                           : boundedString(0, 20 + i);
            }) +
      "}";
  EXPECT_LT(mostMaskWork(mixed, vocab, "[\"alpha\", 12.5, \"beta\", -3e5]"),
            nodes);
  // Thousands of alternatives: those a byte cannot begin are not fed, and
  // feeding stops at the branches kept.
  const std::string wide =
      anyOf(4000, [](int i) { return boundedString(0, i + 1); });
  EXPECT_LT(mostMaskWork(wide, vocab, "\"short words\""), nodes);
}

TEST(JsonSchemaHostile, MaskPastItsWorkBudgetNamesIt) {
  auto schema =
      compile(R"({"type":"object","properties":{"a":{"type":"string"}}})");
  auto vocab = std::make_shared<TokenVocabulary>(testVocabulary());
  JsonConstraint constraint(schema, vocab, {0});
  constraint.setWorkBudget(100);
  std::vector<float> logits(vocab->size(), 0.5f);
  EXPECT_FALSE(constraint.mask(logits.data(), logits.size()));
  EXPECT_EQ(constraint.error(),
            "the schema's token mask exceeded its work budget of 100 steps");
  EXPECT_EQ(std::count(logits.begin(), logits.end(), 0.5f),
            std::ptrdiff_t(logits.size())); // nothing changed
  EXPECT_LE(constraint.lastMaskWork(), 200);
  // The constraint is done: no mask, no token.
  EXPECT_FALSE(constraint.accept(1 + '{'));
  EXPECT_FALSE(constraint.mask(logits.data(), logits.size()));

  // Under the default bound, branches of deep stacks reading a free value
  // stop at it instead of stepping on.
  const std::string deep = anyOf(64, [](int i) {
    std::string s = "{}";
    for (int d = 0; d < 28; ++d)
      s = R"({"type":"array",)" +
          std::string(d == 27 ? R"("maxItems":)" + std::to_string(100 + i) + ","
                              : "") +
          R"("items":)" + s + "}";
    return s;
  });
  auto big = largeVocabulary(60000);
  JsonConstraint hostile(compile(deep), big, {0});
  std::vector<float> row(big->size(), 0.0f);
  bool failed = false;
  for (int i = 0; i < 28 && !failed; ++i) {
    failed = !hostile.mask(row.data(), row.size());
    ASSERT_TRUE(failed || hostile.accept(1 + '['));
  }
  if (!failed)
    failed = !hostile.mask(row.data(), row.size());
  EXPECT_TRUE(failed);
  EXPECT_NE(hostile.error().find(
                "exceeded its work budget of " +
                std::to_string(int64_t(big->trieNodes()) + kMaxMaskWork) +
                " steps"),
            std::string::npos);
  EXPECT_LE(hostile.maxMaskWork(),
            int64_t(big->trieNodes()) + kMaxMaskWork + 64 * 2 * kMaxValueDepth);
}

TEST(JsonSchemaHostile, InterruptStopsAMaskAtOnce) {
  auto schema =
      compile(anyOf(64, [](int i) { return boundedString(0, 10 + i); }));
  auto vocab = largeVocabulary(20000);
  std::vector<float> logits(vocab->size(), 0.5f);
  std::atomic<bool> stop{false};
  JsonConstraint constraint(schema, vocab, {0});
  constraint.setInterrupt(&stop);
  ASSERT_TRUE(constraint.accept(1 + '"'));
  ASSERT_TRUE(constraint.mask(logits.data(), logits.size()));
  EXPECT_GT(constraint.lastMaskWork(), 100);
  stop.store(true);
  std::fill(logits.begin(), logits.end(), 0.5f);
  EXPECT_FALSE(constraint.mask(logits.data(), logits.size()));
  EXPECT_EQ(constraint.error(), "the token mask was interrupted");
  EXPECT_LE(constraint.lastMaskWork(), 1);
  EXPECT_EQ(std::count(logits.begin(), logits.end(), 0.5f),
            std::ptrdiff_t(logits.size()));

  // interrupt(), from another thread, while masks are made on this one.
  JsonConstraint other(schema, vocab, {0});
  ASSERT_TRUE(other.accept(1 + '"'));
  std::thread stopper([&] { other.interrupt(); });
  stopper.join();
  EXPECT_FALSE(other.mask(logits.data(), logits.size()));
  EXPECT_EQ(other.error(), "the token mask was interrupted");
}

TEST(JsonSchemaHostile, EnumAndConstValuesSatisfyTheKeywordsBesideThem) {
  // Values that fail a keyword beside them are not offered.
  auto strings = compile(R"({"enum":["far too long","ok"],"maxLength":2})");
  EXPECT_TRUE(matches(strings, R"("ok")"));
  EXPECT_FALSE(matches(strings, R"("far too long")"));
  auto objects = compile(
      R"({"enum":[{},{"a":1}],"properties":{"a":{}},"required":["a"]})");
  EXPECT_FALSE(matches(objects, "{}"));
  EXPECT_TRUE(matches(objects, R"({"a":1})"));
  auto arrays = compile(R"({"enum":[[],[1,2]],"minItems":2})");
  EXPECT_FALSE(matches(arrays, "[]"));
  EXPECT_TRUE(matches(arrays, "[1,2]"));
  // Members in any order, and 1.0 is 1, where an enum holds another.
  auto nested = compile(R"({"enum":[{"p":{"y":1,"x":2}},{"p":[1.0]}],
      "properties":{"p":{"anyOf":[{"enum":[{"x":2,"y":1}]},{"items":{"enum":[1]}}]}}})");
  EXPECT_TRUE(matches(nested, R"({"p":{"y":1,"x":2}})"));
  EXPECT_TRUE(matches(nested, R"({"p":[1.0]})"));
  // None left: refused, naming the keyword that refused the first.
  EXPECT_EQ(compileError(R"({"const":"far too long","maxLength":2})"),
            "schema /maxLength: the value of 'const' (\"far too long\") fails "
            "this keyword beside it");
  EXPECT_EQ(
      compileError(R"({"enum":[{}],"properties":{"a":{}},"required":["a"]})"),
      "schema /required: no value of 'enum' satisfies the keywords beside "
      "it (the first, {}, fails this one)");
  EXPECT_EQ(
      compileError(
          R"({"type":"object","properties":{"o":{"enum":[[]],"minItems":2}}})"),
      "schema /properties/o/minItems: no value of 'enum' satisfies the "
      "keywords beside it (the first, [], fails this one)");
  EXPECT_NE(compileError(
                R"({"enum":[{"a":"xyz"}],"properties":{"a":{"maxLength":2}}})")
                .find("schema /properties/a/maxLength: "),
            std::string::npos);
  EXPECT_NE(compileError(R"({"enum":[[1,"x"]],"items":{"type":"integer"}})")
                .find("schema /items/type: "),
            std::string::npos);
  EXPECT_NE(
      compileError(
          R"({"enum":[{"b":1}],"properties":{"a":{}},"additionalProperties":false})")
          .find("schema /additionalProperties: "),
      std::string::npos);
  EXPECT_NE(
      compileError(R"({"enum":[{"p":2}],"properties":{"p":{"enum":[1]}}})")
          .find("schema /properties/p/enum: "),
      std::string::npos);
  // A long value is shown by its start.
  EXPECT_NE(compileError(R"({"const":")" + std::string(200, 'x') +
                         R"(","maxLength":2})")
                .find("(\"" + std::string(56, 'x') + "...)"),
            std::string::npos);
  randomWalks(
      R"({"type":"object","properties":{"c":{"enum":["a","bb","ccc"],"maxLength":2},
      "d":{"enum":[[],[1],[1,2]],"minItems":1}},"required":["c","d"],
      "additionalProperties":false})",
      20, 60);
}

TEST(JsonSchemaHostile, RequiredNamesUniqueInLinearWork) {
  EXPECT_EQ(
      compileError(
          R"({"properties":{"a":{},"b":{}},"required":["a","b","a"]})"),
      "schema /required/2: 'required' names \"a\" again (its names must be "
      "unique)");
  // 110 000 names over 4 000 properties: before, each name searched the
  // properties (440 million comparisons) and repeats were taken; now the
  // first repeat is refused after as many steps as there are properties.
  std::string properties, required;
  for (int i = 0; i < 4000; ++i)
    properties += (i ? ",\"p" : "\"p") + std::to_string(i) + "\":true";
  for (int i = 0; i < 110000; ++i)
    required += (i ? ",\"p" : "\"p") + std::to_string(i % 4000) + "\"";
  std::string error;
  int64_t work = 0;
  EXPECT_FALSE(compileSchema(Json::parse("{\"properties\":{" + properties +
                                         "},\"required\":[" + required + "]}"),
                             &error, &work));
  EXPECT_EQ(error, "schema /required/4000: 'required' names \"p0\" again (its "
                   "names must be unique)");
  EXPECT_LT(work, 3 * 4000);
  // Each of them once: compiled in steps linear in their number.
  required.resize(required.find(",\"p0\"", 1));
  auto schema = compileSchema(Json::parse("{\"properties\":{" + properties +
                                          "},\"required\":[" + required + "]}"),
                              &error, &work);
  EXPECT_TRUE(schema) << error;
  EXPECT_LT(work, 3 * 4000);
}

TEST(JsonSchemaHostile, CompileWorkIsBounded) {
  // Checking a long enum value's items against thousands of alternatives
  // (each item passes only the last) would take seconds: the compile
  // stops at its budget.
  std::string alternatives;
  for (int i = 0; i < 2000; ++i)
    alternatives += std::string(R"({"type":"array","maxItems":)") +
                    std::to_string(i + 1) + R"(,"items":{"type":"string"}},)";
  alternatives += R"({"type":"array"})";
  std::string value;
  for (int i = 0; i < 4000; ++i)
    value += (i ? ",[1]" : "[1]");
  std::string error;
  int64_t work = 0;
  EXPECT_FALSE(compileSchema(Json::parse(R"({"enum":[[)" + value +
                                         R"(]],"items":{"anyOf":[)" +
                                         alternatives + "]}}"),
                             &error, &work));
  EXPECT_EQ(error, "schema /enum: the schema's compile exceeded its work "
                   "budget of " +
                       std::to_string(kMaxCompileWork) + " steps");
  EXPECT_LE(work, kMaxCompileWork + 1);
}
