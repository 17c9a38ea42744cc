//===- JsonSchema.h - a JSON schema as a byte automaton ---------*- C++ -*-===//
//
// The language of constrained decoding: the subset of JSON Schema that
// `response_format` and `pccx-run --json-schema` take (docs/serving.md,
// "Structured output"), compiled into nodes, and a matcher that reads a
// reply byte by byte. After any prefix it accepts, some continuation is a
// complete document that parses and validates, and it refuses every byte
// after which none is: a decoder that only emits accepted bytes ends with a
// valid document, unless a token limit cuts it.
//
// The matcher's state is a set of stacks (one per live anyOf branch), each
// a stack of frames: the value being read and the objects and arrays
// around it.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_GRAMMAR_JSONSCHEMA_H
#define PCCX_RUNTIME_GRAMMAR_JSONSCHEMA_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pccx::grammar {

/// Limits of the language (docs/serving.md lists them).
constexpr int kMaxSchemaDepth = 32;  ///< nesting of a schema's subschemas
constexpr int kMaxValueDepth = 32;   ///< nesting of arrays and objects read
constexpr int kMaxIndent = 20;       ///< spaces or tabs after a line break
constexpr int kMaxIntegerDigits = 16, kMaxFractionDigits = 16,
              kMaxExponentDigits = 2; // beyond, a double overflows
constexpr size_t kMaxBranches = 64;  ///< live anyOf branches kept
constexpr size_t kMaxSchemaNodes = 4096;
constexpr size_t kMaxLiteralBytes = 1 << 20; ///< enum, const and key texts
/// Work bounds, in steps. A compile's: a subschema, a property, a
/// required name, an enum value and each part of a value checked against
/// the keywords beside an enum cost one. A token mask's, beyond one per
/// node of the vocabulary's trie (a walk visits each at most once): a
/// branch's stack fed a byte costs one per frame. Past a bound the compile
/// is refused, or the mask stops, with an error naming it; either takes
/// well under 100 ms at its bound.
constexpr int64_t kMaxCompileWork = int64_t(1) << 21;
constexpr int64_t kMaxMaskWork = int64_t(1) << 20;

struct Schema;
/// Schemas are read keeping their members' order: properties are written
/// in the order the schema declares them.
using Json = nlohmann::ordered_json;

/// Compiles a JSON Schema document. Null, with `*error` naming the keyword
/// and where it is (a JSON pointer into the schema), when it is outside the
/// subset or inconsistent, or its compile passes kMaxCompileWork. `*work`
/// (when given): the steps it took.
std::shared_ptr<const Schema>
compileSchema(const Json &schema, std::string *error, int64_t *work = nullptr);
/// Any JSON object (response_format {"type": "json_object"}).
std::shared_ptr<const Schema> anyObjectSchema();

/// Bytes a reply may need to spell, whatever the model chooses (structural
/// characters, digits, the letters of true/false/null, the texts of keys
/// and enum values): a vocabulary needs a one-byte token for each, or
/// decoding could reach a byte it cannot write.
std::vector<bool> requiredBytes(const Schema &schema);

/// A UTF-8 character's first byte (RFC 3629: no overlong forms, no
/// surrogates, nothing past U+10FFFF): false when none starts with `byte`;
/// else the continuation bytes due and the range of the first of them.
bool utf8Lead(uint8_t byte, uint8_t *need, uint8_t *lo, uint8_t *hi);

/// One frame of a stack. Plain data: copied freely while masks are made.
struct Frame {
  uint8_t kind = 0, phase = 0, ws = 0;
  uint8_t escape = 0;   ///< strings: 0, 1 after '\', 2..5 in \u (+8: D)
  uint8_t need = 0;     ///< strings: UTF-8 continuation bytes still due
  uint8_t lo = 0x80, hi = 0xBF; ///< the next continuation byte's range
  bool freeKey = false; ///< objects: the key may be an additional one
  int32_t schema = 0;   ///< the node read
  int32_t node = -1;    ///< literal trie node; a key's trie node; digits
  int32_t next = 0;     ///< objects: next property; arrays: items
  int32_t value = -1;   ///< objects: the member value's node
  uint32_t chars = 0;   ///< strings: characters so far
  bool operator==(const Frame &o) const;
};

/// String text read without stepping the matcher. While every branch is
/// inside a string, or every one inside an additional key that no
/// declared key begins, at the same point of an escape or a UTF-8
/// character (as the same bytes since every opening quote leave them), a
/// byte other than the closing quote changes only the characters counted,
/// by the same for all; which branches survive depends on one number, the
/// most characters any of them still takes. Matcher::plainRun starts a
/// run, Matcher::materialize ends it.
struct PlainRun {
  enum class Step : uint8_t { Taken, Refused, Close };
  /// Characters the branch with the most room still took when the run
  /// began (INT64_MAX: no bound); -1: no run is possible there.
  int64_t room = -1;
  /// The text read since: `chars` its characters, `escape`, `need`, `lo`
  /// and `hi` where it is in an escape or a character.
  Frame text;
  bool keys = false; ///< in keys, which refuse the escapes \/ and \u
  bool active() const { return room >= 0; }
  /// Characters still free after those read and the one begun; -1 inside
  /// an escape, where plain text may not follow.
  int64_t roomLeft() const;
  /// Reads `byte`. Close: the closing quote, which the matcher must step
  /// (after materialize).
  Step take(uint8_t byte);
};

/// Where a matcher is: stacks of frames, `ends` their ends in `frames`.
struct MatchState {
  std::vector<Frame> frames;
  std::vector<uint32_t> ends;
  /// The document was ended (an end token was taken).
  bool ended = false;
  bool empty() const { return ends.empty(); }
};

/// Reads bytes against a compiled schema. Cheap to copy states with: the
/// token masks step states through a vocabulary trie.
class Matcher {
public:
  explicit Matcher(std::shared_ptr<const Schema> schema);
  const Schema &schema() const { return *schema_; }
  /// The state before any byte.
  MatchState start() const;
  /// `*out` = `in` after `byte`; false (and `*out` empty) when no valid
  /// document continues with it. `*work` (when given) grows by the frames
  /// of the stacks fed.
  bool step(const MatchState &in, uint8_t byte, MatchState *out,
            int64_t *work = nullptr) const;
  /// Steps `*state` through `bytes`; false (state unchanged) when a byte is
  /// refused.
  bool feed(MatchState *state, std::string_view bytes) const;
  /// A complete document has been read: the reply may end here.
  bool canEnd(const MatchState &state) const;
  /// How many more characters of free string text (no quote, backslash,
  /// control character; whole UTF-8 characters) some branch takes
  /// without any other change that matters: -1 when none is inside such
  /// a string.
  int64_t plainRoom(const MatchState &state) const;
  /// The run that may start at `state`: inactive unless every branch is
  /// in string text of one kind (PlainRun) at the same point.
  PlainRun plainRun(const MatchState &state) const;
  /// `*out` = `state` after the bytes `run` read from it: each branch's
  /// count grows by the run's, those without room for it dropped.
  void materialize(const MatchState &state, const PlainRun &run,
                   MatchState *out, int64_t *work = nullptr) const;

private:
  using Stack = std::vector<Frame>;
  /// The most characters the string text `f` reads may have: its
  /// maxLength, or -1 for none (and for keys).
  int64_t maxChars(const Frame &f) const;
  /// Feeds `byte` to the stack (changed in place); the stacks that take it
  /// go to `out`. Counts its frames in `work`.
  void feedStack(Stack &stack, uint8_t byte, MatchState *out,
                 int64_t &work) const;
  /// One frame kind's reading of a byte (the top frame's): Done when the
  /// byte was taken (the stack in `out`) or refused; Again when the frame's
  /// value is complete and the byte belongs to the frame now on top.
  enum class Feed { Done, Again };
  Feed feedValue(Stack &s, uint8_t b, MatchState *out, int64_t &work) const;
  /// A value under anyOf: one branch per alternative the byte may start.
  void feedAnyOf(Stack &s, uint8_t b, MatchState *out, int64_t &work) const;
  Feed feedLiteral(Stack &s, uint8_t b, MatchState *out) const;
  Feed feedNumber(Stack &s, uint8_t b, MatchState *out) const;
  Feed feedString(Stack &s, uint8_t b, MatchState *out) const;
  Feed feedArray(Stack &s, uint8_t b, MatchState *out) const;
  /// An object between members (open, after a comma, colon or member).
  Feed feedObject(Stack &s, uint8_t b, MatchState *out) const;
  /// An object's key being spelled.
  Feed feedKey(Stack &s, uint8_t b, MatchState *out) const;
  /// The declared keys an object's next member may have: up to `hi`;
  /// whether any is left, and whether a required one is.
  struct KeyWindow {
    int32_t hi;
    bool declaredLeft, requiredLeft;
  };
  KeyWindow keyWindow(const Frame &f) const;
  std::shared_ptr<const Schema> schema_;
};

} // namespace pccx::grammar

#endif
