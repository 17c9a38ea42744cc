//===- Isa.h - pccx v002 instruction words ----------------------*- C++ -*-===//
//
// Typed access to the instruction formats of PccxIsa.def: field metadata,
// checked encoding and decoding of 64-bit words, and a textual form used by
// the disassembler and the tests. Plain C++ with no LLVM dependency, so the
// runtime on the board shares it with the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_ISA_ISA_H
#define PCCX_HW_ISA_ISA_H

#include <cstdint>
#include <string>
#include <string_view>

namespace pccx::isa {

#define PCCX_WORD(Bits, OpcodeHi, OpcodeLo)                                    \
  constexpr unsigned kWordBits = Bits;                                         \
  constexpr unsigned kOpcodeHi = OpcodeHi;                                     \
  constexpr unsigned kOpcodeLo = OpcodeLo;
#include "PccxIsa.def"

enum class Format : uint8_t {
#define PCCX_FORMAT(F) F,
#include "PccxIsa.def"
};

enum class Opcode : uint8_t {
#define PCCX_OPCODE(Name, Mnemonic, Code, F) Name = Code,
#include "PccxIsa.def"
};

enum class FieldKind : uint8_t {
  L2Addr,     ///< 17-bit L2 word address.
  HostAddr,   ///< 17-bit word offset into the host window.
  ConstEntry, ///< 6-bit constant-cache index.
  Flags,      ///< Bit set; undefined bits are reserved.
  Enum,       ///< Only the listed values are defined.
  Count,      ///< Unsigned count.
  Value,      ///< Opaque 16-bit value.
  Bool,       ///< One bit.
};

/// Every field of every format, named Format_field.
enum class Field : uint8_t {
#define PCCX_FIELD(F, Name, Hi, Lo, Kind) F##_##Name,
#include "PccxIsa.def"
};
constexpr unsigned kNumFields = 0
#define PCCX_FIELD(F, Name, Hi, Lo, Kind) +1
#include "PccxIsa.def"
    ;

/// Flag masks, named Format_field_flag.
enum FlagMask : uint32_t {
#define PCCX_FLAG(F, Fld, Name, Bit) F##_##Fld##_##Name = 1u << (Bit),
#include "PccxIsa.def"
};

/// Enumerated field values, named Format_field_value.
enum EnumValue : uint32_t {
#define PCCX_ENUM(F, Fld, Name, Value) F##_##Fld##_##Name = Value,
#include "PccxIsa.def"
};

/// MEMCPY routes inside the control unit.
enum class Route : uint8_t {
#define PCCX_ROUTE(Name, Code, From, To) Name = Code,
#include "PccxIsa.def"
};

struct FieldInfo {
  Field id;
  Format format;
  const char *name;
  uint8_t hi, lo;
  FieldKind kind;
  /// Flags: mask of defined bits. Enum: bitmap of defined values.
  uint32_t defined;

  unsigned width() const { return hi - lo + 1; }
  uint32_t maxValue() const {
    return width() >= 32 ? 0xFFFFFFFFu : ((1u << width()) - 1);
  }
  uint64_t mask() const { return uint64_t(maxValue()) << lo; }
};

struct OpcodeInfo {
  Opcode opcode;
  const char *mnemonic;
  uint8_t code;
  Format format;
};

const FieldInfo &fieldInfo(Field field);
const OpcodeInfo &opcodeInfo(Opcode opcode);
/// The opcode with this 4-bit code, or nullptr for a reserved code.
const OpcodeInfo *lookupOpcode(unsigned code);
const OpcodeInfo *lookupMnemonic(std::string_view mnemonic);
const char *formatName(Format format);

/// The fields of a format in bit order (most significant first).
struct FieldList {
  const Field *first, *last;
  const Field *begin() const { return first; }
  const Field *end() const { return last; }
};
FieldList fieldsOf(Format format);
/// The field of `format` called `name`, or false.
bool lookupField(Format format, std::string_view name, Field &field);

/// Body bits that no field covers; they must be zero.
uint64_t reservedMask(Format format);

/// Name of an enumerated value, or nullptr if it is undefined.
const char *enumName(Field field, uint32_t value);
bool lookupEnum(Field field, std::string_view name, uint32_t &value);
/// Name of the single flag `mask` in a flags field, or nullptr.
const char *flagName(Field field, uint32_t mask);
bool lookupFlag(Field field, std::string_view name, uint32_t &mask);

/// The route a MEMCPY's device bits select (from=1,to=1 has none).
bool routeFor(bool fromHost, bool toHost, Route &route);
const char *routeName(Route route);

/// A decoded instruction: opcode plus every field value, indexed by Field.
/// Fields of other formats are ignored and stay zero.
struct Instruction {
  Opcode opcode = Opcode::Gemv;
  uint32_t values[kNumFields] = {};

  Instruction() = default;
  explicit Instruction(Opcode op) : opcode(op) {}
  Format format() const { return opcodeInfo(opcode).format; }
  uint32_t get(Field f) const { return values[unsigned(f)]; }
  Instruction &set(Field f, uint32_t v) {
    values[unsigned(f)] = v;
    return *this;
  }
  bool has(Field flagsField, uint32_t mask) const {
    return (get(flagsField) & mask) != 0;
  }
  bool operator==(const Instruction &o) const;
  bool operator!=(const Instruction &o) const { return !(*this == o); }
};

/// Checks one field value against its width, reserved flag bits and defined
/// enum values. Returns an empty string when valid, else a message naming
/// the field.
std::string checkField(Field field, uint64_t value);

/// Checks every field of the instruction's format (see checkField).
std::string checkInstruction(const Instruction &inst);

/// Encodes to a word. On failure returns false and sets `error`.
bool encode(const Instruction &inst, uint64_t &word, std::string *error);

/// Decodes a word, rejecting reserved opcodes, non-zero reserved bits,
/// reserved flag bits and undefined enum values with a message naming the
/// field. On failure returns false and sets `error`.
bool decode(uint64_t word, Instruction &inst, std::string *error);

/// Textual form: mnemonic then `field=value` for every field of the format,
/// enum values and flags by name, addresses in hex. assemble() reads it back;
/// omitted fields are zero.
std::string disassemble(const Instruction &inst);
bool assemble(std::string_view text, Instruction &inst, std::string *error);

} // namespace pccx::isa

#endif // PCCX_HW_ISA_ISA_H
