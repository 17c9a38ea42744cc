//===- Isa.cpp - pccx v002 instruction words --------------------*- C++ -*-===//

#include "Isa.h"

#include "hw/support/Format.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pccx::isa {
namespace {

// Flags: the OR of defined bits. Enums: a bitmap of the defined values.
constexpr uint32_t definedBitsOf(Field field) {
  uint32_t bits = 0;
#define PCCX_FLAG(F, Fld, Name, Bit)                                           \
  if (field == Field::F##_##Fld)                                               \
    bits |= 1u << (Bit);
#define PCCX_ENUM(F, Fld, Name, Value)                                         \
  if (field == Field::F##_##Fld)                                               \
    bits |= 1u << (Value);
#include "PccxIsa.def"
  return bits;
}

const FieldInfo kFields[] = {
#define PCCX_FIELD(F, Name, Hi, Lo, Kind)                                      \
  {Field::F##_##Name, Format::F,          #Name,                               \
   Hi,                Lo,                 FieldKind::Kind,                     \
   definedBitsOf(Field::F##_##Name)},
#include "PccxIsa.def"
};

const OpcodeInfo kOpcodes[] = {
#define PCCX_OPCODE(Name, Mnemonic, Code, F)                                   \
  {Opcode::Name, Mnemonic, Code, Format::F},
#include "PccxIsa.def"
};

const char *const kFormatNames[] = {
#define PCCX_FORMAT(F) #F,
#include "PccxIsa.def"
};

constexpr unsigned kNumFormats = sizeof(kFormatNames) / sizeof(kFormatNames[0]);

// Fields grouped by format, in table order (most significant first).
struct FormatFields {
  Field fields[kNumFields];
  unsigned begin[kNumFormats + 1];
};

FormatFields buildFormatFields() {
  FormatFields ff{};
  unsigned n = 0;
  for (unsigned f = 0; f < kNumFormats; ++f) {
    ff.begin[f] = n;
    for (const FieldInfo &info : kFields)
      if (unsigned(info.format) == f)
        ff.fields[n++] = info.id;
  }
  ff.begin[kNumFormats] = n;
  return ff;
}

const FormatFields &formatFields() {
  static const FormatFields ff = buildFormatFields();
  return ff;
}

struct FlagEntry {
  Field field;
  const char *name;
  uint32_t mask;
};
const FlagEntry kFlags[] = {
#define PCCX_FLAG(F, Fld, Name, Bit) {Field::F##_##Fld, #Name, 1u << (Bit)},
#include "PccxIsa.def"
};

struct EnumEntry {
  Field field;
  const char *name;
  uint32_t value;
};
const EnumEntry kEnums[] = {
#define PCCX_ENUM(F, Fld, Name, Value) {Field::F##_##Fld, #Name, Value},
#include "PccxIsa.def"
};

struct RouteEntry {
  Route route;
  const char *name;
  int from, to;
};
const RouteEntry kRoutes[] = {
#define PCCX_ROUTE(Name, Code, From, To) {Route::Name, #Name, From, To},
#include "PccxIsa.def"
};

constexpr uint64_t kBodyMask = (uint64_t(1) << kOpcodeLo) - 1;

std::string bitRange(const FieldInfo &info) {
  if (info.hi == info.lo)
    return formatString("[%u]", info.hi);
  return formatString("[%u:%u]", info.hi, info.lo);
}

} // namespace

const FieldInfo &fieldInfo(Field field) { return kFields[unsigned(field)]; }

const OpcodeInfo &opcodeInfo(Opcode opcode) {
  for (const OpcodeInfo &op : kOpcodes)
    if (op.opcode == opcode)
      return op;
  std::abort(); // Opcode values come only from the table.
}

const OpcodeInfo *lookupOpcode(unsigned code) {
  for (const OpcodeInfo &op : kOpcodes)
    if (op.code == code)
      return &op;
  return nullptr;
}

const OpcodeInfo *lookupMnemonic(std::string_view mnemonic) {
  for (const OpcodeInfo &op : kOpcodes)
    if (mnemonic == op.mnemonic)
      return &op;
  return nullptr;
}

const char *formatName(Format format) { return kFormatNames[unsigned(format)]; }

FieldList fieldsOf(Format format) {
  const FormatFields &ff = formatFields();
  unsigned f = unsigned(format);
  return {ff.fields + ff.begin[f], ff.fields + ff.begin[f + 1]};
}

bool lookupField(Format format, std::string_view name, Field &field) {
  for (Field f : fieldsOf(format))
    if (name == fieldInfo(f).name) {
      field = f;
      return true;
    }
  return false;
}

uint64_t reservedMask(Format format) {
  uint64_t used = 0;
  for (Field f : fieldsOf(format))
    used |= fieldInfo(f).mask();
  return kBodyMask & ~used;
}

const char *enumName(Field field, uint32_t value) {
  for (const EnumEntry &e : kEnums)
    if (e.field == field && e.value == value)
      return e.name;
  return nullptr;
}

bool lookupEnum(Field field, std::string_view name, uint32_t &value) {
  for (const EnumEntry &e : kEnums)
    if (e.field == field && name == e.name) {
      value = e.value;
      return true;
    }
  return false;
}

const char *flagName(Field field, uint32_t mask) {
  for (const FlagEntry &e : kFlags)
    if (e.field == field && e.mask == mask)
      return e.name;
  return nullptr;
}

bool lookupFlag(Field field, std::string_view name, uint32_t &mask) {
  for (const FlagEntry &e : kFlags)
    if (e.field == field && name == e.name) {
      mask = e.mask;
      return true;
    }
  return false;
}

bool routeFor(bool fromHost, bool toHost, Route &route) {
  for (const RouteEntry &r : kRoutes)
    if (r.from == int(fromHost) && r.to == int(toHost)) {
      route = r.route;
      return true;
    }
  // from=0,to=0 is an intra-L2 move: no control-unit route is named for it,
  // but it is a documented transfer (dataflow.rst §3).
  return false;
}

const char *routeName(Route route) {
  for (const RouteEntry &r : kRoutes)
    if (r.route == route)
      return r.name;
  return "?";
}

bool Instruction::operator==(const Instruction &o) const {
  if (opcode != o.opcode)
    return false;
  for (Field f : fieldsOf(format()))
    if (get(f) != o.get(f))
      return false;
  return true;
}

std::string checkField(Field field, uint64_t value) {
  const FieldInfo &info = fieldInfo(field);
  if (value > info.maxValue())
    return formatString("field '%s' value %llu does not fit in %u bits %s",
                         info.name, (unsigned long long)value,
                         info.width(), bitRange(info).c_str());
  if (info.kind == FieldKind::Flags && (value & ~uint64_t(info.defined)))
    return formatString("field '%s' has reserved bit(s) 0x%llx set "
                         "(defined bits are 0x%x)",
                         info.name,
                         (unsigned long long)(value & ~uint64_t(info.defined)),
                         info.defined);
  if (info.kind == FieldKind::Enum && !enumName(field, uint32_t(value)))
    return formatString("field '%s' value %llu is undefined", info.name,
                         (unsigned long long)value);
  return {};
}

std::string checkInstruction(const Instruction &inst) {
  for (Field f : fieldsOf(inst.format())) {
    std::string err = checkField(f, inst.get(f));
    if (!err.empty())
      return std::string(opcodeInfo(inst.opcode).mnemonic) + ": " + err;
  }
  return {};
}

bool encode(const Instruction &inst, uint64_t &word, std::string *error) {
  std::string err = checkInstruction(inst);
  if (!err.empty()) {
    if (error)
      *error = std::move(err);
    return false;
  }
  uint64_t w = uint64_t(opcodeInfo(inst.opcode).code) << kOpcodeLo;
  for (Field f : fieldsOf(inst.format()))
    w |= uint64_t(inst.get(f)) << fieldInfo(f).lo;
  word = w;
  return true;
}

bool decode(uint64_t word, Instruction &inst, std::string *error) {
  unsigned code = unsigned(word >> kOpcodeLo);
  const OpcodeInfo *op = lookupOpcode(code);
  if (!op) {
    if (error)
      *error = formatString("word 0x%016llx: opcode 0x%X is reserved",
                             (unsigned long long)word, code);
    return false;
  }
  uint64_t reserved = word & reservedMask(op->format);
  if (reserved) {
    if (error) {
      unsigned hi = 63 - __builtin_clzll(reserved), lo = __builtin_ctzll(reserved);
      *error = formatString("word 0x%016llx: %s: reserved bit(s) %u..%u must "
                             "be zero (mask 0x%llx)",
                             (unsigned long long)word, op->mnemonic, hi, lo,
                             (unsigned long long)reserved);
    }
    return false;
  }
  Instruction out(op->opcode);
  for (Field f : fieldsOf(op->format)) {
    const FieldInfo &info = fieldInfo(f);
    uint32_t v = uint32_t((word >> info.lo) & info.maxValue());
    std::string err = checkField(f, v);
    if (!err.empty()) {
      if (error)
        *error = formatString("word 0x%016llx: %s: ", (unsigned long long)word,
                               op->mnemonic) +
                 err;
      return false;
    }
    out.set(f, v);
  }
  inst = out;
  return true;
}

std::string disassemble(const Instruction &inst) {
  std::string out = opcodeInfo(inst.opcode).mnemonic;
  for (Field f : fieldsOf(inst.format())) {
    const FieldInfo &info = fieldInfo(f);
    uint32_t v = inst.get(f);
    out += ' ';
    out += info.name;
    out += '=';
    switch (info.kind) {
    case FieldKind::L2Addr:
    case FieldKind::HostAddr:
      out += formatString("0x%05x", v);
      break;
    case FieldKind::Enum:
      if (const char *name = enumName(f, v))
        out += name;
      else
        out += formatString("%u", v);
      break;
    case FieldKind::Flags: {
      if (v == 0) {
        out += '0';
        break;
      }
      bool first = true;
      for (unsigned bit = 32; bit-- > 0;) {
        uint32_t m = 1u << bit;
        if (!(v & m))
          continue;
        if (!first)
          out += '|';
        first = false;
        if (const char *name = flagName(f, m))
          out += name;
        else
          out += formatString("bit%u", bit);
      }
      break;
    }
    default:
      out += formatString("%u", v);
      break;
    }
  }
  return out;
}

bool assemble(std::string_view text, Instruction &inst, std::string *error) {
  auto fail = [&](std::string msg) {
    if (error)
      *error = std::move(msg);
    return false;
  };
  auto nextToken = [&](std::string_view &rest) {
    size_t b = rest.find_first_not_of(" \t");
    if (b == std::string_view::npos) {
      rest = {};
      return std::string_view();
    }
    rest.remove_prefix(b);
    size_t e = rest.find_first_of(" \t");
    std::string_view tok = rest.substr(0, e);
    rest.remove_prefix(e == std::string_view::npos ? rest.size() : e);
    return tok;
  };
  std::string_view rest = text;
  std::string_view mnemonic = nextToken(rest);
  const OpcodeInfo *op = lookupMnemonic(mnemonic);
  if (!op)
    return fail("unknown mnemonic '" + std::string(mnemonic) + "'");
  Instruction out(op->opcode);
  for (std::string_view tok = nextToken(rest); !tok.empty();
       tok = nextToken(rest)) {
    size_t eq = tok.find('=');
    if (eq == std::string_view::npos)
      return fail("expected field=value, got '" + std::string(tok) + "'");
    std::string_view name = tok.substr(0, eq), value = tok.substr(eq + 1);
    Field f;
    if (!lookupField(op->format, name, f))
      return fail(std::string(op->mnemonic) + ": no field named '" +
                  std::string(name) + "'");
    const FieldInfo &info = fieldInfo(f);
    uint64_t v = 0;
    std::string valueStr(value);
    char *end = nullptr;
    bool numeric = !valueStr.empty() &&
                   (valueStr[0] >= '0' && valueStr[0] <= '9');
    if (numeric) {
      errno = 0;
      v = std::strtoull(valueStr.c_str(), &end, 0);
      if (*end || errno)
        return fail(std::string(op->mnemonic) + ": field '" + info.name +
                    "': bad number '" + valueStr + "'");
    } else if (info.kind == FieldKind::Enum) {
      uint32_t e;
      if (!lookupEnum(f, value, e))
        return fail(std::string(op->mnemonic) + ": field '" + info.name +
                    "': unknown value '" + valueStr + "'");
      v = e;
    } else if (info.kind == FieldKind::Flags) {
      std::string_view flags = value;
      while (!flags.empty()) {
        size_t bar = flags.find('|');
        std::string_view one = flags.substr(0, bar);
        uint32_t m;
        if (!lookupFlag(f, one, m))
          return fail(std::string(op->mnemonic) + ": field '" + info.name +
                      "': unknown flag '" + std::string(one) + "'");
        v |= m;
        flags.remove_prefix(bar == std::string_view::npos ? flags.size()
                                                          : bar + 1);
      }
    } else {
      return fail(std::string(op->mnemonic) + ": field '" + info.name +
                  "': bad value '" + valueStr + "'");
    }
    std::string err = checkField(f, v);
    if (!err.empty())
      return fail(std::string(op->mnemonic) + ": " + err);
    out.set(f, uint32_t(v));
  }
  inst = out;
  return true;
}

} // namespace pccx::isa
