//===- ConformanceTests.cpp - the conformance suite
//------------------------===//
//
// What the suite promises: every opcode, flag and CVO function is covered,
// traps are among the vectors, the seed changes data only, and the BF16
// distance the checker reports is the textbook one.
//
//===----------------------------------------------------------------------===//

#include "runtime/conformance/Conformance.h"

#include "hw/isa/Isa.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace pccx;
using namespace pccx::conformance;

namespace {

std::vector<Vector> suite(uint64_t seed) {
  GenerateOptions o;
  o.seed = seed;
  std::vector<Vector> v;
  std::string err;
  EXPECT_TRUE(buildSuite(o, v, &err)) << err;
  return v;
}

TEST(Conformance, CoversEveryOpcodeFlagAndFunction) {
  std::set<isa::Opcode> opcodes;
  std::set<std::pair<isa::Field, uint32_t>> flags;
  std::set<uint32_t> funcs, banks;
  std::set<std::pair<uint32_t, uint32_t>> directions;
  unsigned undecodable = 0, traps = 0, asyncs = 0;
  for (const Vector &v : suite(1)) {
    traps += v.traps;
    if (v.traps) {
      EXPECT_FALSE(v.trapMessage.empty()) << v.name;
    }
    for (uint64_t word : v.program) {
      isa::Instruction inst;
      if (!isa::decode(word, inst, nullptr)) {
        ++undecodable;
        continue;
      }
      opcodes.insert(inst.opcode);
      for (isa::Field f : isa::fieldsOf(inst.format())) {
        const isa::FieldInfo &info = isa::fieldInfo(f);
        if (info.kind == isa::FieldKind::Flags)
          for (unsigned bit = 0; bit < 32; ++bit)
            if (inst.get(f) & (1u << bit))
              flags.insert({f, 1u << bit});
      }
      if (inst.opcode == isa::Opcode::Cvo) {
        funcs.insert(inst.get(isa::Field::Cvo_cvo_func));
        asyncs += inst.get(isa::Field::Cvo_async);
      }
      if (inst.opcode == isa::Opcode::Memset)
        banks.insert(inst.get(isa::Field::Memset_dest_cache));
      if (inst.opcode == isa::Opcode::Memcpy) {
        directions.insert({inst.get(isa::Field::Memcpy_from_device),
                           inst.get(isa::Field::Memcpy_to_device)});
        asyncs += inst.get(isa::Field::Memcpy_async);
      }
    }
  }
  EXPECT_EQ(opcodes.size(), 5u);
  // Three GEMV/GEMM flags and three CVO flags.
  EXPECT_EQ(flags.size(), 6u);
  EXPECT_EQ(funcs.size(), 8u);
  EXPECT_EQ(banks.size(), 2u);
  EXPECT_EQ(directions.size(), 4u);
  EXPECT_GE(asyncs, 2u);
  EXPECT_GE(undecodable, 4u);
  EXPECT_GE(traps, 20u);
}

TEST(Conformance, SeedChangesDataOnly) {
  std::vector<Vector> a = suite(1), b = suite(1), c = suite(2);
  ASSERT_EQ(a.size(), c.size());
  bool dataDiffers = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, c[i].name);
    EXPECT_EQ(a[i].program, c[i].program) << a[i].name;
    EXPECT_EQ(a[i].traps, c[i].traps) << a[i].name;
    EXPECT_EQ(a[i].expected.l2, b[i].expected.l2) << a[i].name;
    EXPECT_EQ(a[i].weights, b[i].weights) << a[i].name;
    dataDiffers |= a[i].initial.l2 != c[i].initial.l2;
  }
  EXPECT_TRUE(dataDiffers);
}

TEST(Conformance, NamesAreUniqueAndPathSafe) {
  std::set<std::string> names;
  for (const Vector &v : suite(1)) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name;
    EXPECT_EQ(v.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_"),
              std::string::npos)
        << v.name;
    EXPECT_EQ(v.weights.size() % 16, 0u) << v.name;
  }
}

TEST(Conformance, TrapLeavesStateOfEarlierInstructions) {
  for (const Vector &v : suite(1))
    if (v.name == "gemv_trap_after_first") {
      EXPECT_TRUE(v.traps);
      EXPECT_EQ(v.trapIndex, 1u);
      // The first GEMV wrote its 8 outputs at word 0x400.
      EXPECT_EQ(v.expected.l2.count(0x400), 1u);
      EXPECT_EQ(v.expected.l2.count(0x500), 0u);
      return;
    }
  FAIL() << "vector gemv_trap_after_first is missing";
}

TEST(Conformance, Bf16UlpDistance) {
  EXPECT_EQ(bf16UlpDistance(0x3f80, 0x3f80), 0u);
  EXPECT_EQ(bf16UlpDistance(0x3f80, 0x3f81), 1u); // 1.0 and 1.0078125
  EXPECT_EQ(bf16UlpDistance(0x3f81, 0x3f80), 1u);
  // +0 and -0 are the same number.
  EXPECT_EQ(bf16UlpDistance(0x0000, 0x8000), 0u);
  // The smallest subnormals either side of zero are two steps apart.
  EXPECT_EQ(bf16UlpDistance(0x0001, 0x8001), 2u);
  // Largest finite to infinity is one step.
  EXPECT_EQ(bf16UlpDistance(0x7f7f, 0x7f80), 1u);
  // NaNs (any payload or sign) match each other and nothing else.
  EXPECT_EQ(bf16UlpDistance(0x7fc0, 0xffc1), 0u);
  EXPECT_EQ(bf16UlpDistance(0x7fc0, 0x7f80), UINT32_MAX);
  EXPECT_EQ(bf16UlpDistance(0x3f80, 0x7fc0), UINT32_MAX);
}

TEST(Conformance, RtlTargetKeepsOnlyItsTraps) {
  GenerateOptions o;
  o.target = "v002-rtl";
  std::vector<Vector> v;
  std::string err;
  ASSERT_TRUE(buildSuite(o, v, &err)) << err;
  unsigned gemv = 0, gemm = 0;
  for (const Vector &x : v) {
    if (x.name.find("_trap_") != std::string::npos)
      EXPECT_TRUE(x.traps) << x.name;
    for (uint64_t word : x.program) {
      isa::Instruction inst;
      if (!isa::decode(word, inst, nullptr))
        continue;
      if (inst.opcode == isa::Opcode::Gemv) {
        ++gemv;
        EXPECT_TRUE(x.traps) << x.name;
      }
      if (inst.opcode == isa::Opcode::Gemm && !x.traps)
        ++gemm;
    }
  }
  EXPECT_GT(gemv, 0u);
  EXPECT_GT(gemm, 0u);
}

TEST(Conformance, UnknownTargetIsRefused) {
  GenerateOptions o;
  o.target = "v9";
  std::vector<Vector> v;
  std::string err;
  EXPECT_FALSE(buildSuite(o, v, &err));
  EXPECT_NE(err.find("unknown target 'v9'"), std::string::npos) << err;
}

} // namespace
