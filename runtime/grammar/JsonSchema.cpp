//===- JsonSchema.cpp - a JSON schema as a byte automaton -----------------===//

#include "runtime/grammar/JsonSchema.h"

#include <algorithm>
#include <climits>
#include <set>
#include <unordered_map>

namespace pccx::grammar {

namespace {

enum TypeBit : uint8_t {
  kNull = 1,
  kBoolean = 2,
  kInteger = 4,
  kNumber = 8, ///< any number (integers included)
  kString = 16,
  kArray = 32,
  kObject = 64,
  kAllTypes = 127,
};

enum FrameKind : uint8_t { kValue, kObjectFrame, kArrayFrame, kStringFrame,
                           kNumberFrame, kLiteralFrame };

/// Object phases: after '{', inside a key, after a key (':' due), after a
/// member (',' or '}'), after ',' (a key due).
enum ObjectPhase : uint8_t { kOpen, kKey, kColon, kMember, kComma };
/// Array phases: after '[', after an item.
enum ArrayPhase : uint8_t { kArrayOpen, kArrayItem };
/// Number phases, in the order of JSON's number grammar.
enum NumberPhase : uint8_t { kStart, kMinus, kZero, kIntDigits, kDot,
                             kFracDigits, kExp, kExpSign, kExpDigits };

bool isSpace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
bool isDigit(uint8_t b) { return b >= '0' && b <= '9'; }
bool isHex(uint8_t b) {
  return isDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

} // namespace

/// Tries of literal texts (enum and const values, property keys, true,
/// false, null), all in one table; each set has its own root.
struct LiteralTrie {
  struct Node {
    int32_t terminal = -1;      ///< the text ending here (an index), or -1
    std::vector<int32_t> below; ///< keys: terminal indices in the subtree
    bool hasChildren = false;
  };
  std::vector<Node> nodes;
  std::unordered_map<uint64_t, int32_t> edges; ///< node << 8 | byte

  int32_t newRoot() {
    nodes.emplace_back();
    return int32_t(nodes.size() - 1);
  }
  int32_t child(int32_t node, uint8_t byte) const {
    auto it = edges.find(uint64_t(node) << 8 | byte);
    return it == edges.end() ? -1 : it->second;
  }
  /// Adds `text` under `root` as `index`; false when it is there already.
  bool insert(int32_t root, const std::string &text, int32_t index,
              bool keepBelow) {
    int32_t node = root;
    if (keepBelow)
      nodes[size_t(node)].below.push_back(index);
    for (unsigned char c : text) {
      int32_t next = child(node, c);
      if (next < 0) {
        next = int32_t(nodes.size());
        nodes.emplace_back();
        edges.emplace(uint64_t(node) << 8 | c, next);
        nodes[size_t(node)].hasChildren = true;
      }
      node = next;
      if (keepBelow)
        nodes[size_t(node)].below.push_back(index);
    }
    if (nodes[size_t(node)].terminal >= 0)
      return false;
    nodes[size_t(node)].terminal = index;
    return true;
  }
  /// Whether a text of index lo..hi ends in `node`'s subtree.
  bool reaches(int32_t node, int32_t lo, int32_t hi) const {
    const auto &below = nodes[size_t(node)].below;
    auto it = std::lower_bound(below.begin(), below.end(), lo);
    return it != below.end() && *it <= hi;
  }
};

struct Property {
  std::string key; ///< as JSON text, quotes included
  int32_t schema = 0;
  bool required = false;
};

struct SchemaNode {
  enum Kind : uint8_t { Typed, Literals, AnyOf } kind = Typed;
  uint8_t types = kAllTypes;
  // Objects.
  std::vector<Property> properties;
  /// For each i in 0..properties: the first required property from i on
  /// (properties.size() when none), so that a byte of an object costs no
  /// walk over its properties.
  std::vector<int32_t> nextRequired;
  int32_t additional = -1; ///< additional members' schema; -1: none allowed
  int32_t keyRoot = -1;
  // Arrays.
  int32_t items = -1;
  int64_t minItems = 0, maxItems = -1;
  // Strings.
  int64_t minLength = 0, maxLength = -1;
  // Literals.
  int32_t literalRoot = -1;
  // AnyOf.
  std::vector<int32_t> alternatives;
};

struct Schema {
  std::vector<SchemaNode> nodes;
  LiteralTrie trie;
  int32_t root = 0, any = 0;
  int32_t booleanRoot = -1, nullRoot = -1;
  size_t literalBytes = 0;
  /// Bytes some literal text of this schema holds.
  std::vector<bool> literalByte = std::vector<bool>(256, false);

  Schema() {
    booleanRoot = trie.newRoot();
    trie.insert(booleanRoot, "true", 0, false);
    trie.insert(booleanRoot, "false", 1, false);
    nullRoot = trie.newRoot();
    trie.insert(nullRoot, "null", 0, false);
    // The node every free value uses: any type, members and items of any
    // type again (the reader bounds the nesting).
    any = int32_t(nodes.size());
    nodes.emplace_back();
    nodes[size_t(any)].additional = any;
    nodes[size_t(any)].items = any;
  }
};

namespace {

/// Keywords that describe a schema without constraining values.
const std::set<std::string> &annotationKeywords() {
  static const std::set<std::string> words = {
      "title", "description", "$schema", "$id", "$comment", "default",
      "examples", "deprecated", "readOnly", "writeOnly"};
  return words;
}

const std::set<std::string> &subsetKeywords() {
  static const std::set<std::string> words = {
      "type", "properties", "required", "additionalProperties", "items",
      "minItems", "maxItems", "minLength", "maxLength", "enum", "const",
      "anyOf"};
  return words;
}

std::string pointerToken(const std::string &name) {
  std::string out;
  for (char c : name)
    out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

uint8_t typeOf(const Json &value) {
  if (value.is_null())
    return kNull;
  if (value.is_boolean())
    return kBoolean;
  if (value.is_number_integer() || value.is_number_unsigned())
    return kInteger | kNumber;
  if (value.is_number())
    return kNumber;
  if (value.is_string())
    return kString;
  if (value.is_array())
    return kArray;
  return kObject;
}

class SchemaCompiler {
public:
  SchemaCompiler(Schema &schema, std::string *error)
      : schema_(schema), error_(error) {}

  /// The node index of `json` (at `path`, `depth` levels deep); -1 on error.
  int32_t compile(const Json &json, const std::string &path,
                  int depth) {
    const std::string where = path.empty() ? "/" : path;
    if (depth > kMaxSchemaDepth)
      return fail(where, "the schema nests deeper than " +
                             std::to_string(kMaxSchemaDepth) + " levels");
    if (schema_.nodes.size() >= kMaxSchemaNodes)
      return fail(where, "the schema has more than " +
                             std::to_string(kMaxSchemaNodes) + " subschemas");
    if (json.is_boolean()) {
      if (!json.get<bool>())
        return fail(where, "the schema `false` matches no value");
      return schema_.any;
    }
    if (!json.is_object())
      return fail(where, "a schema must be an object or a boolean");
    for (const auto &item : json.items())
      if (!subsetKeywords().count(item.key()) &&
          !annotationKeywords().count(item.key()))
        return fail(path + "/" + pointerToken(item.key()),
                    "the keyword '" + item.key() +
                        "' is not supported (the subset: type, properties, "
                        "required, additionalProperties, items, minItems, "
                        "maxItems, minLength, maxLength, enum, const, anyOf)");
    const int32_t index = int32_t(schema_.nodes.size());
    schema_.nodes.emplace_back();

    if (json.contains("anyOf")) {
      for (const auto &item : json.items())
        if (item.key() != "anyOf" && !annotationKeywords().count(item.key()))
          return fail(path + "/" + pointerToken(item.key()),
                      "'" + item.key() +
                          "' beside 'anyOf' is not supported: put it in "
                          "each alternative");
      const auto &alternatives = json["anyOf"];
      if (!alternatives.is_array() || alternatives.empty())
        return fail(path + "/anyOf", "'anyOf' must be a non-empty array");
      std::vector<int32_t> alts;
      for (size_t i = 0; i < alternatives.size(); ++i) {
        int32_t alt = compile(alternatives[i],
                              path + "/anyOf/" + std::to_string(i), depth + 1);
        if (alt < 0)
          return -1;
        // A nested anyOf's alternatives are this one's.
        const SchemaNode &node = schema_.nodes[size_t(alt)];
        if (node.kind == SchemaNode::AnyOf)
          alts.insert(alts.end(), node.alternatives.begin(),
                      node.alternatives.end());
        else
          alts.push_back(alt);
      }
      SchemaNode &node = schema_.nodes[size_t(index)];
      node.kind = SchemaNode::AnyOf;
      node.alternatives = std::move(alts);
      return index;
    }

    uint8_t types = kAllTypes;
    if (json.contains("type")) {
      const auto &type = json["type"];
      std::vector<Json> names;
      if (type.is_string())
        names.push_back(type);
      else if (type.is_array() && !type.empty())
        names.assign(type.begin(), type.end());
      else
        return fail(path + "/type",
                    "'type' must be a type name or a non-empty array of them");
      types = 0;
      for (const auto &name : names) {
        static const std::pair<const char *, uint8_t> kTypes[] = {
            {"null", kNull},       {"boolean", kBoolean}, {"integer", kInteger},
            {"number", kNumber | kInteger}, {"string", kString},
            {"array", kArray},     {"object", kObject}};
        const auto *found = std::find_if(
            std::begin(kTypes), std::end(kTypes), [&](const auto &t) {
              return name.is_string() && name.get<std::string>() == t.first;
            });
        if (found == std::end(kTypes))
          return fail(path + "/type",
                      "unknown type " + name.dump(-1, ' ', false,
                                                  nlohmann::json::error_handler_t::replace));
        types |= found->second;
      }
    }

    if (json.contains("enum") || json.contains("const")) {
      if (json.contains("enum") && json.contains("const"))
        return fail(path + "/const", "'const' beside 'enum' is not supported");
      std::vector<Json> values;
      if (json.contains("const")) {
        values.push_back(json["const"]);
      } else {
        const auto &list = json["enum"];
        if (!list.is_array() || list.empty())
          return fail(path + "/enum", "'enum' must be a non-empty array");
        values.assign(list.begin(), list.end());
      }
      const int32_t root = schema_.trie.newRoot();
      size_t kept = 0;
      for (const auto &value : values) {
        if (!(typeOf(value) & types))
          continue; // a value of another type than `type` allows
        const std::string text =
            value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        if (!addLiteralBytes(text, path))
          return -1;
        schema_.trie.insert(root, text, 0, false);
        ++kept;
      }
      if (kept == 0)
        return fail(path, "no value of 'enum'/'const' has a type 'type' allows");
      SchemaNode &node = schema_.nodes[size_t(index)];
      node.kind = SchemaNode::Literals;
      node.literalRoot = root;
      return index;
    }

    // Object keywords.
    std::vector<Property> properties;
    if (json.contains("properties")) {
      const auto &props = json["properties"];
      if (!props.is_object())
        return fail(path + "/properties", "'properties' must be an object");
      for (const auto &item : props.items()) {
        Property p;
        p.key = nlohmann::json(item.key()).dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
        p.schema = compile(item.value(),
                           path + "/properties/" + pointerToken(item.key()),
                           depth + 1);
        if (p.schema < 0)
          return -1;
        properties.push_back(std::move(p));
      }
    }
    if (json.contains("required")) {
      const auto &required = json["required"];
      if (!required.is_array())
        return fail(path + "/required", "'required' must be an array of names");
      for (size_t i = 0; i < required.size(); ++i) {
        if (!required[i].is_string())
          return fail(path + "/required/" + std::to_string(i),
                      "'required' must be an array of names");
        const std::string key = required[i].dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
        auto it = std::find_if(properties.begin(), properties.end(),
                               [&](const Property &p) { return p.key == key; });
        if (it == properties.end())
          return fail(path + "/required/" + std::to_string(i),
                      "required property " + key + " is not in 'properties'");
        it->required = true;
      }
    }
    int32_t additional = schema_.any;
    if (json.contains("additionalProperties")) {
      const auto &extra = json["additionalProperties"];
      if (extra.is_boolean() && !extra.get<bool>())
        additional = -1;
      else if ((additional = compile(extra, path + "/additionalProperties",
                                     depth + 1)) < 0)
        return -1;
    }
    int32_t items = schema_.any;
    if (json.contains("items")) {
      if (json["items"].is_array())
        return fail(path + "/items",
                    "'items' as an array (a tuple) is not supported");
      if ((items = compile(json["items"], path + "/items", depth + 1)) < 0)
        return -1;
    }
    int64_t bounds[4] = {0, -1, 0, -1};
    const char *boundNames[4] = {"minItems", "maxItems", "minLength",
                                 "maxLength"};
    for (int i = 0; i < 4; ++i) {
      if (!json.contains(boundNames[i]))
        continue;
      const auto &v = json[boundNames[i]];
      if (!(v.is_number_unsigned() ||
            (v.is_number_integer() && v.get<int64_t>() >= 0)) ||
          v.get<uint64_t>() > 1000000)
        return fail(path + "/" + boundNames[i],
                    std::string("'") + boundNames[i] +
                        "' must be an integer from 0 to 1000000");
      bounds[i] = v.get<int64_t>();
    }
    if (bounds[1] >= 0 && bounds[0] > bounds[1])
      return fail(path + "/minItems", "'minItems' is above 'maxItems'");
    if (bounds[3] >= 0 && bounds[2] > bounds[3])
      return fail(path + "/minLength", "'minLength' is above 'maxLength'");

    SchemaNode &node = schema_.nodes[size_t(index)];
    node.types = types;
    node.additional = additional;
    node.items = items;
    node.minItems = bounds[0];
    node.maxItems = bounds[1];
    node.minLength = bounds[2];
    node.maxLength = bounds[3];
    if (!properties.empty()) {
      node.keyRoot = schema_.trie.newRoot();
      for (size_t i = 0; i < properties.size(); ++i) {
        if (!addLiteralBytes(properties[i].key, path))
          return -1;
        schema_.trie.insert(node.keyRoot, properties[i].key, int32_t(i), true);
      }
      std::vector<int32_t> nextRequired(properties.size() + 1);
      nextRequired.back() = int32_t(properties.size());
      for (size_t i = properties.size(); i-- > 0;)
        nextRequired[i] = properties[i].required ? int32_t(i) : nextRequired[i + 1];
      schema_.nodes[size_t(index)].nextRequired = std::move(nextRequired);
      schema_.nodes[size_t(index)].properties = std::move(properties);
    }
    return index;
  }

private:
  int32_t fail(const std::string &where, const std::string &message) {
    if (error_->empty())
      *error_ = "schema " + (where.empty() ? std::string("/") : where) + ": " +
                message;
    return -1;
  }
  bool addLiteralBytes(const std::string &text, const std::string &path) {
    schema_.literalBytes += text.size();
    if (schema_.literalBytes > kMaxLiteralBytes) {
      fail(path, "the schema's enum, const and property texts exceed " +
                     std::to_string(kMaxLiteralBytes) + " bytes");
      return false;
    }
    for (unsigned char c : text)
      schema_.literalByte[c] = true;
    return true;
  }
  Schema &schema_;
  std::string *error_;
};

} // namespace

std::shared_ptr<const Schema> compileSchema(const Json &json,
                                            std::string *error) {
  auto schema = std::make_shared<Schema>();
  error->clear();
  SchemaCompiler compiler(*schema, error);
  const int32_t root = compiler.compile(json, "", 0);
  if (root < 0)
    return nullptr;
  schema->root = root;
  return schema;
}

std::shared_ptr<const Schema> anyObjectSchema() {
  auto schema = std::make_shared<Schema>();
  SchemaNode node;
  node.types = kObject;
  node.additional = schema->any;
  schema->root = int32_t(schema->nodes.size());
  schema->nodes.push_back(node);
  return schema;
}

std::vector<bool> requiredBytes(const Schema &schema) {
  std::vector<bool> bytes = schema.literalByte;
  for (unsigned char c : std::string("{}[],:\"-0123456789truefalsn"))
    bytes[c] = true;
  return bytes;
}

bool Frame::operator==(const Frame &o) const {
  return kind == o.kind && phase == o.phase && ws == o.ws &&
         escape == o.escape && need == o.need && lo == o.lo && hi == o.hi &&
         freeKey == o.freeKey && schema == o.schema && node == o.node &&
         next == o.next && value == o.value && chars == o.chars;
}

//===----------------------------------------------------------------------===//
// The matcher
//===----------------------------------------------------------------------===//

namespace {

/// One byte of string text (after the opening quote). `keys` refuses the
/// escapes that would spell a declared key another way (\/ and \u).
enum class StringStep { Char, Close, Refuse };
StringStep stringByte(Frame &f, uint8_t b, int64_t maxLength, bool keys) {
  if (f.escape == 1) {
    switch (b) {
    case '/':
      if (keys)
        return StringStep::Refuse;
      [[fallthrough]];
    case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't':
      f.escape = 0;
      ++f.chars;
      return StringStep::Char;
    case 'u':
      if (keys)
        return StringStep::Refuse;
      f.escape = 2;
      return StringStep::Char;
    default:
      return StringStep::Refuse;
    }
  }
  if (f.escape >= 2) {
    // \uXXXX: digits 0..3 at escape 2..5 (+8 once the first is d/D, whose
    // second must be 0-7: no surrogates, which a lone \u cannot pair).
    const bool d = f.escape & 8;
    const uint8_t digit = uint8_t((f.escape & 7) - 2);
    if (!isHex(b))
      return StringStep::Refuse;
    if (digit == 1 && d && !(b >= '0' && b <= '7'))
      return StringStep::Refuse;
    if (digit == 3) {
      f.escape = 0;
      ++f.chars;
      return StringStep::Char;
    }
    const bool high = d || (digit == 0 && (b == 'd' || b == 'D'));
    f.escape = uint8_t((digit + 3) | (high ? 8 : 0));
    return StringStep::Char;
  }
  if (f.need > 0) {
    if (b < f.lo || b > f.hi)
      return StringStep::Refuse;
    f.lo = 0x80;
    f.hi = 0xBF;
    if (--f.need == 0)
      ++f.chars;
    return StringStep::Char;
  }
  if (b == '"')
    return StringStep::Close;
  // A new character starts: is there room for it?
  if (maxLength >= 0 && int64_t(f.chars) >= maxLength)
    return StringStep::Refuse;
  if (b == '\\') {
    f.escape = 1;
    return StringStep::Char;
  }
  if (b < 0x20)
    return StringStep::Refuse;
  if (b < 0x80) {
    ++f.chars;
    return StringStep::Char;
  }
  // UTF-8 lead bytes (RFC 3629: no overlong forms, no surrogates).
  if (b >= 0xC2 && b <= 0xDF)
    f.need = 1;
  else if (b == 0xE0)
    f.need = 2, f.lo = 0xA0;
  else if (b == 0xED)
    f.need = 2, f.hi = 0x9F;
  else if (b >= 0xE1 && b <= 0xEF)
    f.need = 2;
  else if (b == 0xF0)
    f.need = 3, f.lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3)
    f.need = 3;
  else if (b == 0xF4)
    f.need = 3, f.hi = 0x8F;
  else
    return StringStep::Refuse;
  return StringStep::Char;
}

/// A number's next byte; false when it does not continue the number.
bool numberByte(Frame &f, uint8_t b, bool integer) {
  auto digit = [&](uint8_t phase, int limit) {
    if (f.phase != phase)
      f.node = 0, f.phase = phase;
    if (f.node >= limit)
      return false;
    ++f.node;
    return true;
  };
  switch (f.phase) {
  case kStart:
    if (b == '-') {
      f.phase = kMinus;
      return true;
    }
    [[fallthrough]];
  case kMinus:
    if (b == '0') {
      f.phase = kZero;
      return true;
    }
    return b >= '1' && b <= '9' && digit(kIntDigits, kMaxIntegerDigits);
  case kIntDigits:
    if (isDigit(b))
      return digit(kIntDigits, kMaxIntegerDigits);
    [[fallthrough]];
  case kZero:
    if (integer)
      return false;
    if (b == '.') {
      f.phase = kDot;
      return true;
    }
    if (b == 'e' || b == 'E') {
      f.phase = kExp;
      return true;
    }
    return false;
  case kDot:
    return isDigit(b) && digit(kFracDigits, kMaxFractionDigits);
  case kFracDigits:
    if (isDigit(b))
      return digit(kFracDigits, kMaxFractionDigits);
    if (b == 'e' || b == 'E') {
      f.phase = kExp;
      return true;
    }
    return false;
  case kExp:
    if (b == '+' || b == '-') {
      f.phase = kExpSign;
      return true;
    }
    [[fallthrough]];
  case kExpSign:
  case kExpDigits:
    return isDigit(b) && digit(kExpDigits, kMaxExponentDigits);
  }
  return false;
}

/// White space between tokens: one space, or a line break and up to
/// kMaxIndent spaces or tabs (f.ws: 0 none yet, 1 a space, 2 + n a line
/// break and n of indentation). Enough for compact and pretty-printed
/// JSON, and a model cannot spend its tokens on blank space.
bool takeSpace(Frame &f, uint8_t b) {
  if (b == ' ' && f.ws == 0) {
    f.ws = 1;
    return true;
  }
  if (b == '\n' && f.ws == 0) {
    f.ws = 2;
    return true;
  }
  if ((b == ' ' || b == '\t') && f.ws >= 2 && f.ws < 2 + kMaxIndent) {
    ++f.ws;
    return true;
  }
  return false;
}

bool numberComplete(const Frame &f) {
  return f.phase == kZero || f.phase == kIntDigits || f.phase == kFracDigits ||
         f.phase == kExpDigits;
}

Frame valueFrame(int32_t schema) {
  Frame f;
  f.kind = kValue;
  f.schema = schema;
  return f;
}

} // namespace

Matcher::Matcher(std::shared_ptr<const Schema> schema)
    : schema_(std::move(schema)) {}

MatchState Matcher::start() const {
  MatchState state;
  state.frames.push_back(valueFrame(schema_->root));
  state.ends.push_back(1);
  return state;
}

void Matcher::feedStack(Stack &s, uint8_t b, MatchState *out) const {
  const Schema &schema = *schema_;
  const LiteralTrie &trie = schema.trie;
  auto emit = [&] {
    out->frames.insert(out->frames.end(), s.begin(), s.end());
    out->ends.push_back(uint32_t(out->frames.size()));
  };
  auto deepEnough = [&] { return s.size() >= size_t(kMaxValueDepth) * 2; };
  for (;;) {
    if (s.empty())
      return; // the document is complete: nothing more may follow
    Frame &f = s.back();
    const SchemaNode &node = schema.nodes[size_t(f.schema)];
    switch (f.kind) {
    case kValue: {
      if (isSpace(b)) {
        if (!takeSpace(f, b))
          return;
        return emit();
      }
      if (node.kind == SchemaNode::AnyOf) {
        for (int32_t alt : node.alternatives) {
          Stack branch = s;
          branch.back().schema = alt;
          feedStack(branch, b, out);
        }
        return;
      }
      if (node.kind == SchemaNode::Literals) {
        f.kind = kLiteralFrame;
        f.node = node.literalRoot;
        continue;
      }
      const uint8_t t = node.types;
      if ((b == '{' && (t & kObject)) || (b == '[' && (t & kArray))) {
        if (deepEnough())
          return;
        f.kind = b == '{' ? kObjectFrame : kArrayFrame;
        f.phase = b == '{' ? kOpen : kArrayOpen;
        f.ws = 0;
        f.next = 0;
        return emit();
      }
      if (b == '"' && (t & kString)) {
        f.kind = kStringFrame;
        f.ws = 0;
        return emit();
      }
      if ((b == '-' || isDigit(b)) && (t & (kInteger | kNumber))) {
        f.kind = kNumberFrame;
        f.phase = kStart;
        f.node = 0;
        continue;
      }
      if ((b == 't' || b == 'f') && (t & kBoolean)) {
        f.kind = kLiteralFrame;
        f.node = schema.booleanRoot;
        continue;
      }
      if (b == 'n' && (t & kNull)) {
        f.kind = kLiteralFrame;
        f.node = schema.nullRoot;
        continue;
      }
      return;
    }
    case kLiteralFrame: {
      const int32_t next = trie.child(f.node, b);
      if (next >= 0) {
        f.node = next;
        return emit();
      }
      if (trie.nodes[size_t(f.node)].terminal < 0)
        return;
      s.pop_back(); // the literal is complete: the byte is the parent's
      continue;
    }
    case kNumberFrame: {
      const bool integer = !(node.types & kNumber);
      Frame probe = f;
      if (numberByte(probe, b, integer)) {
        f = probe;
        return emit();
      }
      if (!numberComplete(f))
        return;
      s.pop_back();
      continue;
    }
    case kStringFrame: {
      switch (stringByte(f, b, node.maxLength, false)) {
      case StringStep::Refuse:
        return;
      case StringStep::Char:
        return emit();
      case StringStep::Close:
        if (int64_t(f.chars) < node.minLength)
          return;
        s.pop_back();
        return emit();
      }
      return;
    }
    case kArrayFrame: {
      if (isSpace(b)) {
        if (!takeSpace(f, b))
          return;
        return emit();
      }
      if (b == ']') {
        if (f.next < node.minItems)
          return;
        s.pop_back();
        return emit();
      }
      const bool room = node.maxItems < 0 || f.next < node.maxItems;
      if (f.phase == kArrayItem) {
        if (b != ',' || !room)
          return;
        ++f.next;
        f.ws = 0;
        s.push_back(valueFrame(node.items));
        return emit();
      }
      // The first item starts with this byte.
      if (!room)
        return;
      f.phase = kArrayItem;
      f.next = 1;
      f.ws = 0;
      s.push_back(valueFrame(node.items));
      continue;
    }
    case kObjectFrame: {
      const auto &props = node.properties;
      const int32_t count = int32_t(props.size());
      // Declared keys the next member may have: from the next property
      // up to the first required one (properties come in their order).
      const int32_t firstRequired =
          count ? node.nextRequired[size_t(std::min(f.next, count))] : 0;
      const int32_t hi = std::min(firstRequired, count - 1);
      const bool declaredLeft = f.next < count;
      const bool requiredLeft = firstRequired < count;
      if (f.phase != kKey && isSpace(b)) {
        if (!takeSpace(f, b))
          return;
        return emit();
      }
      switch (f.phase) {
      case kOpen:
      case kComma:
        if (b == '}' && f.phase == kOpen) {
          if (requiredLeft)
            return;
          s.pop_back();
          return emit();
        }
        if (b != '"')
          return;
        // The key's spelling is followed in the trie of every declared
        // key (an additional key must not be one of them), and may become
        // a declared key only from the next one up to the first required.
        f.node = node.keyRoot >= 0 ? trie.child(node.keyRoot, '"') : -1;
        f.freeKey = node.additional >= 0;
        if (!f.freeKey &&
            !(f.node >= 0 && declaredLeft && trie.reaches(f.node, f.next, hi)))
          return;
        f.phase = kKey;
        f.ws = 0;
        f.escape = f.need = 0;
        f.lo = 0x80;
        f.hi = 0xBF;
        f.chars = 0;
        return emit();
      case kKey: {
        const int32_t nextNode = f.node >= 0 ? trie.child(f.node, b) : -1;
        StringStep free = StringStep::Refuse;
        if (f.freeKey)
          free = stringByte(f, b, -1, true);
        if (nextNode >= 0 && trie.nodes[size_t(nextNode)].terminal >= 0) {
          // A declared key is complete (its closing quote): taken when it
          // may come here, never as an additional key.
          const int32_t index = trie.nodes[size_t(nextNode)].terminal;
          if (index < f.next || index > hi)
            return;
          f.value = props[size_t(index)].schema;
          f.next = index + 1;
          f.phase = kColon;
          f.ws = 0;
          return emit();
        }
        if (free == StringStep::Close) {
          f.value = node.additional;
          f.phase = kColon;
          f.ws = 0;
          return emit();
        }
        const bool declared = nextNode >= 0 && declaredLeft &&
                              trie.reaches(nextNode, f.next, hi);
        if (!declared && free != StringStep::Char)
          return;
        f.node = nextNode;
        f.freeKey = free == StringStep::Char;
        return emit();
      }
      case kColon:
        if (b != ':')
          return;
        f.phase = kMember;
        f.ws = 0;
        s.push_back(valueFrame(f.value));
        return emit();
      case kMember:
        if (b == '}') {
          if (requiredLeft)
            return;
          s.pop_back();
          return emit();
        }
        if (b != ',' || !(declaredLeft || node.additional >= 0))
          return;
        f.phase = kComma;
        f.ws = 0;
        return emit();
      }
      return;
    }
    }
    return;
  }
}

namespace {

uint64_t stackHash(const Frame *begin, const Frame *end) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const Frame *f = begin; f != end; ++f) {
    mix(uint64_t(f->kind) | uint64_t(f->phase) << 8 | uint64_t(f->ws) << 16 |
        uint64_t(f->escape) << 24 | uint64_t(f->need) << 32 |
        uint64_t(f->lo) << 40 | uint64_t(f->hi) << 48 |
        uint64_t(f->freeKey) << 56);
    mix(uint64_t(uint32_t(f->schema)) | uint64_t(uint32_t(f->node)) << 32);
    mix(uint64_t(uint32_t(f->next)) | uint64_t(uint32_t(f->value)) << 32);
    mix(f->chars);
  }
  return h;
}

/// Branches that met again are one; past kMaxBranches the newest are
/// dropped (each one kept still ends in a valid document). In place, by
/// hash first.
void dedupe(MatchState *state) {
  thread_local std::vector<uint64_t> kept;
  kept.clear();
  std::vector<Frame> &frames = state->frames;
  uint32_t begin = 0, write = 0;
  size_t stacks = 0;
  for (uint32_t end : state->ends) {
    const uint64_t h = stackHash(frames.data() + begin, frames.data() + end);
    bool seen = false;
    uint32_t kb = 0;
    for (size_t k = 0; k < kept.size() && !seen; ++k) {
      const uint32_t ke = state->ends[k];
      seen = kept[k] == h && ke - kb == end - begin &&
             std::equal(frames.begin() + kb, frames.begin() + ke,
                        frames.begin() + begin);
      kb = ke;
    }
    if (!seen && stacks < kMaxBranches) {
      std::copy(frames.begin() + begin, frames.begin() + end,
                frames.begin() + write);
      write += end - begin;
      state->ends[stacks++] = write;
      kept.push_back(h);
    }
    begin = end;
  }
  frames.resize(write);
  state->ends.resize(stacks);
}

} // namespace

bool Matcher::step(const MatchState &in, uint8_t byte, MatchState *out) const {
  out->frames.clear();
  out->ends.clear();
  out->ended = false;
  if (in.ended)
    return false;
  // One scratch stack per thread: a mask makes thousands of steps.
  thread_local Stack scratch;
  uint32_t begin = 0;
  for (uint32_t end : in.ends) {
    scratch.assign(in.frames.begin() + begin, in.frames.begin() + end);
    feedStack(scratch, byte, out);
    begin = end;
  }
  if (out->ends.size() > 1)
    dedupe(out);
  return !out->ends.empty();
}

bool Matcher::feed(MatchState *state, std::string_view bytes) const {
  MatchState current = *state, next;
  for (char c : bytes) {
    if (!step(current, uint8_t(c), &next))
      return false;
    std::swap(current, next);
  }
  *state = std::move(current);
  return true;
}

bool Matcher::canEnd(const MatchState &state) const {
  if (state.ended)
    return false;
  uint32_t begin = 0;
  for (uint32_t end : state.ends) {
    const uint32_t size = end - begin;
    if (size == 0)
      return true;
    if (size == 1) {
      const Frame &f = state.frames[begin];
      if (f.kind == kNumberFrame && numberComplete(f))
        return true;
      if (f.kind == kLiteralFrame &&
          schema_->trie.nodes[size_t(f.node)].terminal >= 0)
        return true;
    }
    begin = end;
  }
  return false;
}

bool Matcher::plainFixed(const MatchState &state) const {
  uint32_t begin = 0;
  for (uint32_t end : state.ends) {
    if (end == begin)
      return false;
    const Frame &f = state.frames[end - 1];
    if (f.kind != kStringFrame || f.escape || f.need)
      return false;
    const SchemaNode &node = schema_->nodes[size_t(f.schema)];
    // The count matters to maxLength, and to minLength until it is met.
    if (node.maxLength >= 0 || int64_t(f.chars) < node.minLength)
      return false;
    begin = end;
  }
  return !state.ends.empty();
}

int64_t Matcher::plainRoom(const MatchState &state) const {
  int64_t room = -1;
  uint32_t begin = 0;
  for (uint32_t end : state.ends) {
    if (end > begin) {
      const Frame &f = state.frames[end - 1];
      if (f.escape == 0 && f.need == 0) {
        if (f.kind == kStringFrame) {
          const SchemaNode &node = schema_->nodes[size_t(f.schema)];
          // minLength does not matter: more characters are always taken.
          if (node.maxLength < 0)
            return INT64_MAX;
          else
            room = std::max(room, node.maxLength - int64_t(f.chars));
        } else if (f.kind == kObjectFrame && f.phase == kKey && f.freeKey) {
          return INT64_MAX;
        }
      }
    }
    begin = end;
  }
  return room;
}

} // namespace pccx::grammar
