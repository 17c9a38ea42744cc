//===- JsonSchema.cpp - a JSON schema as a byte automaton -----------------===//

#include "runtime/grammar/JsonSchema.h"

#include <algorithm>
#include <bitset>
#include <climits>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

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

/// What a typed node reads a scalar as (SchemaNode::repeats).
enum ScalarReading : uint8_t {
  kReadsString = 1,
  kReadsNumber = 2,
  kReadsBoolean = 4,
  kReadsNull = 8
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
  /// Bytes a value of this node may begin with (white space aside): an
  /// anyOf feeds a byte only to the alternatives it may begin.
  std::bitset<256> starts;
  /// The first node whose strings (numbers) read the same: what a string
  /// (number) frame holds, so that branches that differ only in which of
  /// such nodes they read are one.
  int32_t stringAs = 0, numberAs = 0;
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
  /// For each alternative, the scalars (kReads*) it reads as an earlier
  /// one does: fed the byte that begins one, it would give a branch that
  /// is there already.
  std::vector<uint8_t> repeats;
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

/// The bytes a value of `types` may begin with.
std::bitset<256> startsOfTypes(uint8_t types) {
  std::bitset<256> starts;
  auto add = [&](const char *bytes) {
    for (; *bytes; ++bytes)
      starts.set(uint8_t(*bytes));
  };
  if (types & kObject)
    add("{");
  if (types & kArray)
    add("[");
  if (types & kString)
    add("\"");
  if (types & (kInteger | kNumber))
    add("-0123456789");
  if (types & kBoolean)
    add("tf");
  if (types & kNull)
    add("n");
  return starts;
}

/// Sets what typed and anyOf nodes begin with (literal nodes have theirs
/// from their texts; an anyOf's alternatives come after it), and how
/// typed nodes read strings and numbers.
void finish(Schema &schema) {
  std::map<std::pair<int64_t, int64_t>, int32_t> byLengths;
  int32_t byFraction[2] = {-1, -1}; // integers only, any number
  for (size_t i = 0; i < schema.nodes.size(); ++i) {
    SchemaNode &node = schema.nodes[i];
    if (node.kind != SchemaNode::Typed)
      continue;
    node.stringAs =
        byLengths
            .emplace(std::make_pair(node.minLength, node.maxLength), int32_t(i))
            .first->second;
    int32_t &number = byFraction[(node.types & kNumber) != 0];
    if (number < 0)
      number = int32_t(i);
    node.numberAs = number;
  }
  for (size_t i = schema.nodes.size(); i-- > 0;) {
    SchemaNode &node = schema.nodes[i];
    if (node.kind == SchemaNode::Typed) {
      node.starts = startsOfTypes(node.types);
      continue;
    }
    if (node.kind != SchemaNode::AnyOf)
      continue;
    std::set<int32_t> strings, numbers;
    uint8_t literals = 0; // true and false, null: one trie each for all
    node.repeats.assign(node.alternatives.size(), 0);
    for (size_t a = 0; a < node.alternatives.size(); ++a) {
      const SchemaNode &alt = schema.nodes[size_t(node.alternatives[a])];
      node.starts |= alt.starts;
      if (alt.kind != SchemaNode::Typed)
        continue;
      uint8_t &repeats = node.repeats[a];
      if ((alt.types & kString) && !strings.insert(alt.stringAs).second)
        repeats |= kReadsString;
      if ((alt.types & (kInteger | kNumber)) &&
          !numbers.insert(alt.numberAs).second)
        repeats |= kReadsNumber;
      const uint8_t own = ((alt.types & kBoolean) ? kReadsBoolean : 0) |
                          ((alt.types & kNull) ? kReadsNull : 0);
      repeats |= literals & own;
      literals |= own;
    }
  }
}

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

/// Counts a string's characters (its UTF-8 text's non-continuation bytes).
int64_t codePoints(const std::string &text) {
  int64_t n = 0;
  for (unsigned char c : text)
    n += (c & 0xC0) != 0x80;
  return n;
}

/// A value as JSON Schema compares it: members in any order (a plain
/// json orders them by name), numbers with an integral value as integers
/// (1.0 is 1).
nlohmann::json comparable(const Json &value) {
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto &item : value.items())
      out[item.key()] = comparable(item.value());
    return out;
  }
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto &item : value)
      out.push_back(comparable(item));
    return out;
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d >= -9.2e18 && d <= 9.2e18 && d == double(int64_t(d)))
      return int64_t(d);
    return d;
  }
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer())
    return value.get<int64_t>();
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_boolean())
    return value.get<bool>();
  return nullptr;
}

std::string comparableText(const Json &value) {
  return comparable(value).dump(-1, ' ', false,
                                nlohmann::json::error_handler_t::replace);
}

/// A value in an error message: its start when it is long.
std::string shortText(const Json &value) {
  std::string text =
      value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 60) {
    size_t cut = 57;
    while (cut > 0 && (uint8_t(text[cut]) & 0xC0) == 0x80)
      --cut; // not inside a character
    text = text.substr(0, cut) + "...";
  }
  return text;
}

class SchemaCompiler {
public:
  SchemaCompiler(Schema &schema, std::string *error)
      : schema_(schema), error_(error) {}

  int64_t work() const { return work_; }

  /// The node index of `json` (at `path`, `depth` levels deep); -1 on error.
  /// One keyword group at a time: anyOf (alone), type, the object's, the
  /// array's and the bounds, then enum and const over what those allow.
  int32_t compile(const Json &json, const std::string &path, int depth) {
    const std::string where = path.empty() ? "/" : path;
    if (!spend(1, where))
      return -1;
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
    if (!knownKeywords(json, path))
      return -1;
    const int32_t index = int32_t(schema_.nodes.size());
    schema_.nodes.emplace_back();
    if (json.contains("anyOf"))
      return anyOf(json, path, depth, index);

    uint8_t types = kAllTypes;
    if (!typeKeyword(json, path, &types))
      return -1;
    if (json.contains("enum") && json.contains("const"))
      return fail(path + "/const", "'const' beside 'enum' is not supported");
    std::vector<Property> properties;
    int32_t additional = schema_.any, items = schema_.any;
    int64_t bounds[4] = {0, -1, 0, -1};
    if (!objectKeywords(json, path, depth, &properties, &additional) ||
        !itemsKeyword(json, path, depth, &items) ||
        !boundKeywords(json, path, bounds))
      return -1;

    SchemaNode &node = schema_.nodes[size_t(index)];
    node.types = types;
    node.additional = additional;
    node.items = items;
    node.minItems = bounds[0];
    node.maxItems = bounds[1];
    node.minLength = bounds[2];
    node.maxLength = bounds[3];
    if (!properties.empty() && !keyTrie(index, std::move(properties), path))
      return -1;
    if (json.contains("enum") || json.contains("const"))
      return literals(json, path, index);
    return index;
  }

private:
  /// Every keyword is in the subset or an annotation.
  bool knownKeywords(const Json &json, const std::string &path) {
    for (const auto &item : json.items())
      if (!subsetKeywords().count(item.key()) &&
          !annotationKeywords().count(item.key())) {
        fail(path + "/" + pointerToken(item.key()),
             "the keyword '" + item.key() +
                 "' is not supported (the subset: type, properties, "
                 "required, additionalProperties, items, minItems, "
                 "maxItems, minLength, maxLength, enum, const, anyOf)");
        return false;
      }
    return true;
  }

  /// Node `index` as the anyOf of `json` (no other keyword beside it); a
  /// nested anyOf's alternatives are this one's.
  int32_t anyOf(const Json &json, const std::string &path, int depth,
                int32_t index) {
    const std::string where = path.empty() ? "/" : path;
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
      const SchemaNode &node = schema_.nodes[size_t(alt)];
      if (node.kind == SchemaNode::AnyOf) {
        if (!spend(int64_t(node.alternatives.size()), where))
          return -1;
        alts.insert(alts.end(), node.alternatives.begin(),
                    node.alternatives.end());
      } else {
        alts.push_back(alt);
      }
    }
    SchemaNode &node = schema_.nodes[size_t(index)];
    node.kind = SchemaNode::AnyOf;
    node.alternatives = std::move(alts);
    return index;
  }

  /// `type`: a name or a list of them, as a set of kinds.
  bool typeKeyword(const Json &json, const std::string &path, uint8_t *types) {
    if (!json.contains("type"))
      return true;
    const auto &type = json["type"];
    std::vector<Json> names;
    if (type.is_string())
      names.push_back(type);
    else if (type.is_array() && !type.empty())
      names.assign(type.begin(), type.end());
    else
      return refuse(path + "/type",
                  "'type' must be a type name or a non-empty array of "
                  "them");
    *types = 0;
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
        return refuse(path + "/type",
                    "unknown type " +
                        name.dump(-1, ' ', false,
                                  nlohmann::json::error_handler_t::replace));
      *types |= found->second;
    }
    return true;
  }

  /// `properties`, `required` and `additionalProperties` (-1: none may
  /// come).
  bool objectKeywords(const Json &json, const std::string &path, int depth,
                      std::vector<Property> *properties, int32_t *additional) {
    if (json.contains("properties")) {
      const auto &props = json["properties"];
      if (!props.is_object())
        return refuse(path + "/properties", "'properties' must be an object");
      for (const auto &item : props.items()) {
        Property p;
        p.key = nlohmann::json(item.key()).dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
        p.schema = compile(item.value(),
                           path + "/properties/" + pointerToken(item.key()),
                           depth + 1);
        if (p.schema < 0)
          return false;
        properties->push_back(std::move(p));
      }
    }
    if (json.contains("required") &&
        !requiredKeyword(json["required"], path, properties))
      return false;
    if (json.contains("additionalProperties")) {
      const auto &extra = json["additionalProperties"];
      if (extra.is_boolean() && !extra.get<bool>())
        *additional = -1;
      else if ((*additional = compile(extra, path + "/additionalProperties",
                                      depth + 1)) < 0)
        return false;
    }
    return true;
  }

  /// `required`: unique names of declared properties.
  bool requiredKeyword(const Json &required, const std::string &path,
                       std::vector<Property> *properties) {
    if (!required.is_array())
      return refuse(path + "/required", "'required' must be an array of names");
    std::unordered_map<std::string, size_t> byKey;
    for (size_t i = 0; i < properties->size(); ++i)
      byKey.emplace((*properties)[i].key, i);
    for (size_t i = 0; i < required.size(); ++i) {
      const std::string at = path + "/required/" + std::to_string(i);
      if (!spend(1, at))
        return false;
      if (!required[i].is_string())
        return refuse(at, "'required' must be an array of names");
      const std::string key = required[i].dump(
          -1, ' ', false, nlohmann::json::error_handler_t::replace);
      auto it = byKey.find(key);
      if (it == byKey.end())
        return refuse(at, "required property " + key +
                            " is not in 'properties'");
      Property &property = (*properties)[it->second];
      if (property.required)
        return refuse(at, "'required' names " + key +
                            " again (its names must be unique)");
      property.required = true;
    }
    return true;
  }

  /// `items` (one schema for every item).
  bool itemsKeyword(const Json &json, const std::string &path, int depth,
                    int32_t *items) {
    if (!json.contains("items"))
      return true;
    if (json["items"].is_array())
      return refuse(path + "/items",
                  "'items' as an array (a tuple) is not supported");
    return (*items = compile(json["items"], path + "/items", depth + 1)) >= 0;
  }

  /// minItems, maxItems, minLength, maxLength (-1: no maximum).
  bool boundKeywords(const Json &json, const std::string &path,
                     int64_t bounds[4]) {
    const char *boundNames[4] = {"minItems", "maxItems", "minLength",
                                 "maxLength"};
    for (int i = 0; i < 4; ++i) {
      if (!json.contains(boundNames[i]))
        continue;
      const auto &v = json[boundNames[i]];
      if (!(v.is_number_unsigned() ||
            (v.is_number_integer() && v.get<int64_t>() >= 0)) ||
          v.get<uint64_t>() > 1000000)
        return refuse(path + "/" + boundNames[i],
                    std::string("'") + boundNames[i] +
                        "' must be an integer from 0 to 1000000");
      bounds[i] = v.get<int64_t>();
    }
    if (bounds[1] >= 0 && bounds[0] > bounds[1])
      return refuse(path + "/minItems", "'minItems' is above 'maxItems'");
    if (bounds[3] >= 0 && bounds[2] > bounds[3])
      return refuse(path + "/minLength", "'minLength' is above 'maxLength'");
    return true;
  }

  /// Node `index`'s declared keys in a trie, and for each property the
  /// first required one from it on.
  bool keyTrie(int32_t index, std::vector<Property> properties,
               const std::string &path) {
    const int32_t root = schema_.trie.newRoot();
    schema_.nodes[size_t(index)].keyRoot = root;
    for (size_t i = 0; i < properties.size(); ++i) {
      if (!addLiteralBytes(properties[i].key, path))
        return false;
      schema_.trie.insert(root, properties[i].key, int32_t(i), true);
    }
    std::vector<int32_t> nextRequired(properties.size() + 1);
    nextRequired.back() = int32_t(properties.size());
    for (size_t i = properties.size(); i-- > 0;)
      nextRequired[i] =
          properties[i].required ? int32_t(i) : nextRequired[i + 1];
    schema_.nodes[size_t(index)].nextRequired = std::move(nextRequired);
    schema_.nodes[size_t(index)].properties = std::move(properties);
    return true;
  }

  /// Makes node `index`, compiled from the keywords beside `enum` or
  /// `const`, the node of the values that satisfy them.
  int32_t literals(const Json &json, const std::string &path, int32_t index) {
    const bool isConst = json.contains("const");
    // The values stay in the caller's document while the compile runs.
    std::vector<const Json *> values;
    if (isConst) {
      values.push_back(&json["const"]);
    } else {
      const auto &list = json["enum"];
      if (!list.is_array() || list.empty())
        return fail(path + "/enum", "'enum' must be a non-empty array");
      for (const auto &value : list)
        values.push_back(&value);
    }
    const int32_t root = schema_.trie.newRoot();
    Literals &kept = literals_[index];
    kept.place = isConst ? "/const" : "/enum";
    std::bitset<256> starts;
    const std::string where = path + kept.place;
    std::string firstRefusal;
    const Json *refused = nullptr;
    for (const Json *value : values) {
      // Where a value fails: the first one's, for the message.
      if (!validates(*value, index, where, refused ? nullptr : &firstRefusal)) {
        if (!error_->empty())
          return -1; // the work budget
        if (!refused)
          refused = value;
        continue;
      }
      const std::string text =
          value->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      if (!addLiteralBytes(text, path))
        return -1;
      schema_.trie.insert(root, text, 0, false);
      starts.set(uint8_t(text[0]));
      kept.values.push_back(value);
    }
    if (kept.values.empty())
      return fail(path + firstRefusal,
                  isConst ? "the value of 'const' (" + shortText(*refused) +
                                ") fails this keyword beside it"
                          : "no value of 'enum' satisfies the keywords beside "
                            "it (the first, " +
                                shortText(*refused) + ", fails this one)");
    SchemaNode &node = schema_.nodes[size_t(index)];
    node.kind = SchemaNode::Literals;
    node.literalRoot = root;
    node.starts = starts;
    return index;
  }

  /// Whether `value` satisfies node `index` by JSON Schema's rules (not the
  /// reader's spelling: members in any order). When not, `*failedAt` (when
  /// asked for) is the keyword's place under the node. `path` names where
  /// a passed work budget stopped.
  bool validates(const Json &value, int32_t index, const std::string &path,
                 std::string *failedAt) {
    if (index == schema_.any)
      return true;
    if (!spend(1, path))
      return false;
    const SchemaNode &node = schema_.nodes[size_t(index)];
    // Places are spelled only when asked for: an anyOf tries alternatives
    // that fail by the thousand.
    std::string below;
    std::string *under = failedAt ? &below : nullptr;
    auto refuse = [&](const char *keyword) {
      if (failedAt)
        *failedAt = keyword + below;
      return false;
    };
    if (node.kind == SchemaNode::AnyOf) {
      for (int32_t alt : node.alternatives)
        if (validates(value, alt, path, nullptr))
          return true;
        else if (!error_->empty())
          return false;
      return refuse("/anyOf");
    }
    if (node.kind == SchemaNode::Literals) {
      Literals &literals = literals_.at(index);
      if (literals.texts.empty()) {
        if (!spend(int64_t(literals.values.size()), path))
          return false;
        for (const Json *v : literals.values)
          literals.texts.insert(comparableText(*v));
      }
      if (literals.texts.count(comparableText(value)))
        return true;
      return refuse(literals.place);
    }
    if (!(typeOf(value) & node.types))
      return refuse("/type");
    if (value.is_string()) {
      const int64_t n = codePoints(value.get_ref<const std::string &>());
      if (n < node.minLength)
        return refuse("/minLength");
      if (node.maxLength >= 0 && n > node.maxLength)
        return refuse("/maxLength");
    } else if (value.is_array()) {
      const int64_t n = int64_t(value.size());
      if (n < node.minItems)
        return refuse("/minItems");
      if (node.maxItems >= 0 && n > node.maxItems)
        return refuse("/maxItems");
      for (const auto &item : value)
        if (!validates(item, node.items, path, under))
          return refuse("/items");
    } else if (value.is_object()) {
      std::vector<bool> present(node.properties.size());
      for (const auto &member : value.items()) {
        const int32_t declared = propertyIndex(node, member.key());
        if (declared >= 0) {
          present[size_t(declared)] = true;
          if (!validates(member.value(),
                         node.properties[size_t(declared)].schema, path,
                         under)) {
            if (failedAt)
              below = "/" + pointerToken(member.key()) + below;
            return refuse("/properties");
          }
        } else if (node.additional < 0) {
          return refuse("/additionalProperties");
        } else if (!validates(member.value(), node.additional, path, under)) {
          return refuse("/additionalProperties");
        }
      }
      for (size_t i = 0; i < node.properties.size(); ++i)
        if (node.properties[i].required && !present[i])
          return refuse("/required");
    }
    return true;
  }

  /// The index of the property named `name` in `node`, or -1 (its key
  /// trie, not a search).
  int32_t propertyIndex(const SchemaNode &node, const std::string &name) const {
    if (node.keyRoot < 0)
      return -1;
    int32_t at = node.keyRoot;
    for (unsigned char c : nlohmann::json(name).dump(
             -1, ' ', false, nlohmann::json::error_handler_t::replace))
      if ((at = schema_.trie.child(at, c)) < 0)
        return -1;
    return schema_.trie.nodes[size_t(at)].terminal;
  }

  bool spend(int64_t steps, const std::string &where) {
    work_ += steps;
    if (work_ <= kMaxCompileWork)
      return true;
    fail(where, "the schema's compile exceeded its work budget of " +
                    std::to_string(kMaxCompileWork) + " steps");
    return false;
  }
  /// fail() for the keyword readers that answer whether they read.
  bool refuse(const std::string &where, const std::string &message) {
    fail(where, message);
    return false;
  }

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
  int64_t work_ = 0;
  /// A literal node's keyword (as a place) and values, and their
  /// comparableText once a value that may hold one of them is checked.
  struct Literals {
    const char *place = "/enum";
    std::vector<const Json *> values;
    std::unordered_set<std::string> texts;
  };
  std::unordered_map<int32_t, Literals> literals_;
};

} // namespace

std::shared_ptr<const Schema> compileSchema(const Json &json,
                                            std::string *error, int64_t *work) {
  auto schema = std::make_shared<Schema>();
  error->clear();
  SchemaCompiler compiler(*schema, error);
  const int32_t root = compiler.compile(json, "", 0);
  if (work)
    *work = compiler.work();
  if (root < 0)
    return nullptr;
  schema->root = root;
  finish(*schema);
  return schema;
}

std::shared_ptr<const Schema> anyObjectSchema() {
  auto schema = std::make_shared<Schema>();
  SchemaNode node;
  node.types = kObject;
  node.additional = schema->any;
  schema->root = int32_t(schema->nodes.size());
  schema->nodes.push_back(node);
  finish(*schema);
  return schema;
}

std::vector<bool> requiredBytes(const Schema &schema) {
  std::vector<bool> bytes = schema.literalByte;
  for (unsigned char c : std::string("{}[],:\"-0123456789truefalsn"))
    bytes[c] = true;
  return bytes;
}

bool utf8Lead(uint8_t b, uint8_t *need, uint8_t *lo, uint8_t *hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (b < 0x80)
    *need = 0;
  else if (b >= 0xC2 && b <= 0xDF)
    *need = 1;
  else if (b >= 0xE0 && b <= 0xEF)
    *need = 2, *lo = b == 0xE0 ? 0xA0 : 0x80, *hi = b == 0xED ? 0x9F : 0xBF;
  else if (b >= 0xF0 && b <= 0xF4)
    *need = 3, *lo = b == 0xF0 ? 0x90 : 0x80, *hi = b == 0xF4 ? 0x8F : 0xBF;
  else
    return false;
  return true;
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
  if (!utf8Lead(b, &f.need, &f.lo, &f.hi))
    return StringStep::Refuse;
  if (f.need == 0)
    ++f.chars;
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
/// dropped (each one kept still ends in a valid document). In place, the
/// kept ones found by hash in an open-addressing table.
void dedupe(MatchState *state) {
  thread_local std::vector<uint64_t> hashes;
  thread_local std::vector<uint32_t> table; // a kept stack's index + 1
  size_t slots = 16;
  while (slots < 2 * state->ends.size())
    slots *= 2;
  table.assign(slots, 0);
  hashes.clear();
  std::vector<Frame> &frames = state->frames;
  std::vector<uint32_t> &ends = state->ends;
  uint32_t begin = 0, write = 0;
  size_t stacks = 0;
  for (size_t i = 0, count = ends.size(); i < count && stacks < kMaxBranches;
       ++i) {
    const uint32_t end = ends[i];
    const uint64_t h = stackHash(frames.data() + begin, frames.data() + end);
    size_t slot = size_t(h) & (slots - 1);
    bool seen = false;
    for (; table[slot] && !seen; slot = (slot + 1) & (slots - 1)) {
      const size_t k = table[slot] - 1;
      const uint32_t kb = k ? ends[k - 1] : 0, ke = ends[k];
      seen = hashes[k] == h && ke - kb == end - begin &&
             std::equal(frames.begin() + kb, frames.begin() + ke,
                        frames.begin() + begin);
    }
    if (!seen) {
      std::copy(frames.begin() + begin, frames.begin() + end,
                frames.begin() + write);
      write += end - begin;
      ends[stacks] = write;
      hashes.push_back(h);
      table[slot] = uint32_t(++stacks);
    }
    begin = end;
  }
  frames.resize(write);
  ends.resize(stacks);
}

/// Whether `out` holds the kMaxBranches stacks dedupe keeps: those fed
/// after would be dropped.
bool holdsMostBranches(MatchState *out) {
  if (out->ends.size() < 2 * kMaxBranches)
    return false; // dedupe not yet: it is paid for by many stacks at once
  dedupe(out);
  return out->ends.size() >= kMaxBranches;
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

namespace {

/// Keeps `s` as one of `out`'s stacks.
void emitStack(const std::vector<Frame> &s, MatchState *out) {
  out->frames.insert(out->frames.end(), s.begin(), s.end());
  out->ends.push_back(uint32_t(out->frames.size()));
}

/// A frame that opens an array or object may not nest deeper.
bool deepEnough(const std::vector<Frame> &s) {
  return s.size() >= size_t(kMaxValueDepth) * 2;
}

/// What a byte may start, for the anyOf alternatives that repeat a kind.
uint8_t readingOf(uint8_t b) {
  return b == '"'                 ? kReadsString
         : b == '-' || isDigit(b) ? kReadsNumber
         : b == 't' || b == 'f'   ? kReadsBoolean
         : b == 'n'               ? kReadsNull
                                  : 0;
}

} // namespace

void Matcher::feedStack(Stack &s, uint8_t b, MatchState *out,
                        int64_t &work) const {
  work += int64_t(s.size()); // its frames are copied, hashed and compared
  // Each frame kind reads the byte, or passes it to the frame below
  // (Feed::Again) when its own value is complete.
  for (;;) {
    if (s.empty())
      return; // the document is complete: nothing more may follow
    Feed next = Feed::Done;
    switch (s.back().kind) {
    case kValue:
      next = feedValue(s, b, out, work);
      break;
    case kLiteralFrame:
      next = feedLiteral(s, b, out);
      break;
    case kNumberFrame:
      next = feedNumber(s, b, out);
      break;
    case kStringFrame:
      next = feedString(s, b, out);
      break;
    case kArrayFrame:
      next = feedArray(s, b, out);
      break;
    case kObjectFrame:
      next = s.back().phase == kKey ? feedKey(s, b, out)
                                    : feedObject(s, b, out);
      break;
    }
    if (next == Feed::Done)
      return;
  }
}

Matcher::Feed Matcher::feedValue(Stack &s, uint8_t b, MatchState *out,
                                 int64_t &work) const {
  const Schema &schema = *schema_;
  Frame &f = s.back();
  const SchemaNode &node = schema.nodes[size_t(f.schema)];
  if (isSpace(b)) {
    if (takeSpace(f, b))
      emitStack(s, out);
    return Feed::Done;
  }
  if (node.kind == SchemaNode::AnyOf) {
    feedAnyOf(s, b, out, work);
    return Feed::Done;
  }
  // A literal's reading needs only its trie node.
  auto literal = [&](int32_t root) {
    f.kind = kLiteralFrame;
    f.node = root;
    f.schema = schema.any;
    return Feed::Again;
  };
  if (node.kind == SchemaNode::Literals)
    return literal(node.literalRoot);
  const uint8_t t = node.types;
  if ((b == '{' && (t & kObject)) || (b == '[' && (t & kArray))) {
    if (deepEnough(s))
      return Feed::Done;
    f.kind = b == '{' ? kObjectFrame : kArrayFrame;
    f.phase = b == '{' ? uint8_t(kOpen) : uint8_t(kArrayOpen);
    f.ws = 0;
    f.next = 0;
    emitStack(s, out);
    return Feed::Done;
  }
  if (b == '"' && (t & kString)) {
    f.kind = kStringFrame;
    f.schema = node.stringAs;
    f.ws = 0;
    emitStack(s, out);
    return Feed::Done;
  }
  if ((b == '-' || isDigit(b)) && (t & (kInteger | kNumber))) {
    f.kind = kNumberFrame;
    f.schema = node.numberAs;
    f.phase = kStart;
    f.node = 0;
    return Feed::Again;
  }
  if ((b == 't' || b == 'f') && (t & kBoolean))
    return literal(schema.booleanRoot);
  if (b == 'n' && (t & kNull))
    return literal(schema.nullRoot);
  return Feed::Done;
}

void Matcher::feedAnyOf(Stack &s, uint8_t b, MatchState *out,
                        int64_t &work) const {
  const Schema &schema = *schema_;
  const SchemaNode &node = schema.nodes[size_t(s.back().schema)];
  // Only the alternatives a value may begin with this byte, and none once
  // the branches dedupe keeps are all in. The branches' stacks are reused,
  // one per nesting of anyOf (an alternative's first item may be an anyOf
  // again).
  thread_local std::deque<Stack> branches; // stable references
  thread_local size_t nesting = 0;
  if (branches.size() <= nesting)
    branches.resize(nesting + 1);
  ++nesting;
  const uint8_t reading = readingOf(b);
  for (size_t a = 0; a < node.alternatives.size(); ++a) {
    const int32_t alt = node.alternatives[a];
    if (!schema.nodes[size_t(alt)].starts[b] || (node.repeats[a] & reading))
      continue;
    if (holdsMostBranches(out))
      break;
    Stack &branch = branches[nesting - 1];
    branch.assign(s.begin(), s.end());
    branch.back().schema = alt;
    feedStack(branch, b, out, work);
  }
  --nesting;
}

Matcher::Feed Matcher::feedLiteral(Stack &s, uint8_t b,
                                   MatchState *out) const {
  const LiteralTrie &trie = schema_->trie;
  Frame &f = s.back();
  const int32_t next = trie.child(f.node, b);
  if (next >= 0) {
    f.node = next;
    emitStack(s, out);
    return Feed::Done;
  }
  if (trie.nodes[size_t(f.node)].terminal < 0)
    return Feed::Done;
  s.pop_back(); // the literal is complete: the byte is the parent's
  return Feed::Again;
}

Matcher::Feed Matcher::feedNumber(Stack &s, uint8_t b,
                                  MatchState *out) const {
  Frame &f = s.back();
  const bool integer =
      !(schema_->nodes[size_t(f.schema)].types & kNumber);
  Frame probe = f;
  if (numberByte(probe, b, integer)) {
    f = probe;
    emitStack(s, out);
    return Feed::Done;
  }
  if (!numberComplete(f))
    return Feed::Done;
  s.pop_back();
  return Feed::Again;
}

Matcher::Feed Matcher::feedString(Stack &s, uint8_t b,
                                  MatchState *out) const {
  Frame &f = s.back();
  const SchemaNode &node = schema_->nodes[size_t(f.schema)];
  switch (stringByte(f, b, node.maxLength, false)) {
  case StringStep::Refuse:
    break;
  case StringStep::Char:
    emitStack(s, out);
    break;
  case StringStep::Close:
    if (int64_t(f.chars) < node.minLength)
      break;
    s.pop_back();
    emitStack(s, out);
    break;
  }
  return Feed::Done;
}

Matcher::Feed Matcher::feedArray(Stack &s, uint8_t b, MatchState *out) const {
  Frame &f = s.back();
  const SchemaNode &node = schema_->nodes[size_t(f.schema)];
  if (isSpace(b)) {
    if (takeSpace(f, b))
      emitStack(s, out);
    return Feed::Done;
  }
  if (b == ']') {
    if (f.next < node.minItems)
      return Feed::Done;
    s.pop_back();
    emitStack(s, out);
    return Feed::Done;
  }
  const bool room = node.maxItems < 0 || f.next < node.maxItems;
  if (f.phase == kArrayItem) {
    if (b != ',' || !room)
      return Feed::Done;
    ++f.next;
    f.ws = 0;
    s.push_back(valueFrame(node.items));
    emitStack(s, out);
    return Feed::Done;
  }
  // The first item starts with this byte.
  if (!room)
    return Feed::Done;
  f.phase = kArrayItem;
  f.next = 1;
  f.ws = 0;
  s.push_back(valueFrame(node.items));
  return Feed::Again;
}

Matcher::KeyWindow Matcher::keyWindow(const Frame &f) const {
  const SchemaNode &node = schema_->nodes[size_t(f.schema)];
  const int32_t count = int32_t(node.properties.size());
  // Declared keys the next member may have: from the next property up to
  // the first required one (properties come in their order).
  const int32_t firstRequired =
      count ? node.nextRequired[size_t(std::min(f.next, count))] : 0;
  return {std::min(firstRequired, count - 1), f.next < count,
          firstRequired < count};
}

Matcher::Feed Matcher::feedObject(Stack &s, uint8_t b, MatchState *out) const {
  const LiteralTrie &trie = schema_->trie;
  Frame &f = s.back();
  const SchemaNode &node = schema_->nodes[size_t(f.schema)];
  const KeyWindow keys = keyWindow(f);
  if (isSpace(b)) {
    if (takeSpace(f, b))
      emitStack(s, out);
    return Feed::Done;
  }
  auto close = [&] {
    if (!keys.requiredLeft) {
      s.pop_back();
      emitStack(s, out);
    }
    return Feed::Done;
  };
  switch (f.phase) {
  case kOpen:
  case kComma:
    if (b == '}' && f.phase == kOpen)
      return close();
    if (b != '"')
      return Feed::Done;
    // The key's spelling is followed in the trie of every declared key (an
    // additional key must not be one of them), and may become a declared
    // key only from the next one up to the first required.
    f.node = node.keyRoot >= 0 ? trie.child(node.keyRoot, '"') : -1;
    f.freeKey = node.additional >= 0;
    if (!f.freeKey && !(f.node >= 0 && keys.declaredLeft &&
                        trie.reaches(f.node, f.next, keys.hi)))
      return Feed::Done;
    f.phase = kKey;
    f.ws = 0;
    f.escape = f.need = 0;
    f.lo = 0x80;
    f.hi = 0xBF;
    f.chars = 0;
    emitStack(s, out);
    return Feed::Done;
  case kColon:
    if (b != ':')
      return Feed::Done;
    f.phase = kMember;
    f.ws = 0;
    s.push_back(valueFrame(f.value));
    emitStack(s, out);
    return Feed::Done;
  case kMember:
    if (b == '}')
      return close();
    if (b != ',' || !(keys.declaredLeft || node.additional >= 0))
      return Feed::Done;
    f.phase = kComma;
    f.ws = 0;
    emitStack(s, out);
    return Feed::Done;
  }
  return Feed::Done;
}

Matcher::Feed Matcher::feedKey(Stack &s, uint8_t b, MatchState *out) const {
  const LiteralTrie &trie = schema_->trie;
  Frame &f = s.back();
  const SchemaNode &node = schema_->nodes[size_t(f.schema)];
  const KeyWindow keys = keyWindow(f);
  const int32_t nextNode = f.node >= 0 ? trie.child(f.node, b) : -1;
  StringStep free = StringStep::Refuse;
  if (f.freeKey)
    free = stringByte(f, b, -1, true);
  if (nextNode >= 0 && trie.nodes[size_t(nextNode)].terminal >= 0) {
    // A declared key is complete (its closing quote): taken when it may
    // come here, never as an additional key.
    const int32_t index = trie.nodes[size_t(nextNode)].terminal;
    if (index < f.next || index > keys.hi)
      return Feed::Done;
    f.value = node.properties[size_t(index)].schema;
    f.next = index + 1;
    f.phase = kColon;
    f.ws = 0;
    emitStack(s, out);
    return Feed::Done;
  }
  if (free == StringStep::Close) {
    f.value = node.additional;
    f.phase = kColon;
    f.ws = 0;
    emitStack(s, out);
    return Feed::Done;
  }
  const bool declared = nextNode >= 0 && keys.declaredLeft &&
                        trie.reaches(nextNode, f.next, keys.hi);
  if (!declared && free != StringStep::Char)
    return Feed::Done;
  f.node = nextNode;
  f.freeKey = free == StringStep::Char;
  emitStack(s, out);
  return Feed::Done;
}

bool Matcher::step(const MatchState &in, uint8_t byte, MatchState *out,
                   int64_t *work) const {
  out->frames.clear();
  out->ends.clear();
  out->ended = false;
  if (in.ended)
    return false;
  // One scratch stack per thread: a mask makes thousands of steps.
  thread_local Stack scratch;
  int64_t fed = 0;
  uint32_t begin = 0;
  for (uint32_t end : in.ends) {
    if (holdsMostBranches(out))
      break;
    scratch.assign(in.frames.begin() + begin, in.frames.begin() + end);
    feedStack(scratch, byte, out, fed);
    begin = end;
  }
  if (work)
    *work += fed;
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

int64_t PlainRun::roomLeft() const {
  if (text.escape)
    return -1;
  return room == INT64_MAX ? room : room - text.chars - (text.need > 0);
}

PlainRun::Step PlainRun::take(uint8_t b) {
  // The text's own count against the room: the bound of the branch that
  // has the most.
  switch (stringByte(text, b, room == INT64_MAX ? -1 : room, keys)) {
  case StringStep::Char:
    return Step::Taken;
  case StringStep::Close:
    return Step::Close;
  case StringStep::Refuse:
    break;
  }
  return Step::Refused;
}

int64_t Matcher::maxChars(const Frame &f) const {
  return f.kind == kStringFrame ? schema_->nodes[size_t(f.schema)].maxLength
                                : -1;
}

PlainRun Matcher::plainRun(const MatchState &state) const {
  PlainRun run;
  if (state.ended || state.ends.empty())
    return run;
  int64_t room = -1;
  const Frame *first = nullptr;
  uint32_t begin = 0;
  for (uint32_t end : state.ends) {
    if (end == begin)
      return run;
    const Frame &f = state.frames[end - 1];
    const bool key =
        f.kind == kObjectFrame && f.phase == kKey && f.freeKey && f.node < 0;
    if ((f.kind != kStringFrame && !key) ||
        (first &&
         (f.kind != first->kind || f.escape != first->escape ||
          f.need != first->need || f.lo != first->lo || f.hi != first->hi)))
      return run;
    first = &f;
    const int64_t maxLength = maxChars(f);
    room = std::max(room,
                    maxLength < 0 ? INT64_MAX : maxLength - int64_t(f.chars));
    begin = end;
  }
  run.room = room;
  run.keys = first->kind == kObjectFrame;
  run.text = *first;
  run.text.chars = 0;
  return run;
}

void Matcher::materialize(const MatchState &state, const PlainRun &run,
                          MatchState *out, int64_t *work) const {
  out->frames.clear();
  out->ends.clear();
  out->ended = false;
  // Characters each branch must have room for: those read and the one
  // begun (a character or an escape).
  const Frame &text = run.text;
  const int64_t taken =
      int64_t(text.chars) + (text.need > 0 || text.escape > 0);
  uint32_t begin = 0;
  for (uint32_t end : state.ends) {
    const Frame &top = state.frames[end - 1];
    const int64_t maxLength = maxChars(top);
    if (maxLength < 0 || int64_t(top.chars) + taken <= maxLength) {
      out->frames.insert(out->frames.end(), state.frames.begin() + begin,
                         state.frames.begin() + end);
      Frame &f = out->frames.back();
      f.chars += text.chars;
      f.escape = text.escape;
      f.need = text.need;
      f.lo = text.lo;
      f.hi = text.hi;
      out->ends.push_back(uint32_t(out->frames.size()));
    }
    begin = end;
  }
  if (work)
    *work += int64_t(state.frames.size());
}

} // namespace pccx::grammar
