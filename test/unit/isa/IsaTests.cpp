//===- IsaTests.cpp - pccx v002 encoder/decoder ---------------------------===//
//
// Golden words are written by hand from the tables of pccx
// docs/v002/ISA/instructions.rst, not produced by the encoder under test.
//===----------------------------------------------------------------------===//

#include "hw/isa/Isa.h"
#include "hw/machine/MachineModel.h"

#include <gtest/gtest.h>

#include <random>

using namespace pccx::isa;

namespace {

struct Golden {
  const char *text; // disassembly of the instruction
  uint64_t word;
};

// Each word: opcode [63:60] then the body fields of the doc table.
const Golden kGolden[] = {
    // GEMV: dest_reg 0x123 [59:43], src 0x456 [42:26], flags findemax(5) |
    // w_scale(3) = 0x28 [25:20], size_ptr 5 [19:14], shape_ptr 9 [13:8],
    // lanes 3 [7:3], reserved [2:0] = 0.
    {"gemv dest_reg=0x00123 src_addr=0x00456 flags=findemax|w_scale "
     "size_ptr_addr=5 shape_ptr_addr=9 parallel_lane=3",
     0x000918115a814918ull},
    // GEMM: dest_reg 0x1FFFF (all ones), src 1, flags accm(4) = 0x10,
    // size_ptr 63, shape_ptr 0, lanes 0.
    {"gemm dest_reg=0x1ffff src_addr=0x00001 flags=accm size_ptr_addr=63 "
     "shape_ptr_addr=0 parallel_lane=0",
     0x1ffff800050fc000ull},
    // MEMCPY host->L2: from [59]=1, to [58]=0, dest 0x200 [57:41], src 0
    // [40:24], aux 0x1ABCD [23:7], shape_ptr 7 [6:1], async [0]=1.
    {"memcpy from_device=1 to_device=0 dest_addr=0x00200 src_addr=0x00000 "
     "aux_addr=0x1abcd shape_ptr_addr=7 async=1",
     0x2804000000d5e68full},
    // MEMCPY L2->host: from 0, to 1, dest 0, src 0x300, aux 0x10, shape 2.
    {"memcpy from_device=0 to_device=1 dest_addr=0x00000 src_addr=0x00300 "
     "aux_addr=0x00010 shape_ptr_addr=2 async=0",
     0x2400000300000804ull},
    // MEMSET: dest_cache weight_shape=1 [59:58], entry 17 [57:52],
    // a 0x0800 [51:36], b 0x4000 [35:20], c 0x0001 [19:4], reserved [3:0].
    {"memset dest_cache=weight_shape dest_addr=17 a_value=2048 b_value=16384 "
     "c_value=1",
     0x3510800400000010ull},
    // CVO SCALE (6) [59:56], src 0x100 [55:39], dst 0x200 [38:22], length
    // 2048 [21:6], flags sub_emax(4)|recip_scale(3) [5:1], async [0]=1.
    {"cvo cvo_func=scale src_addr=0x00100 dst_addr=0x00200 length=2048 "
     "flags=sub_emax|recip_scale async=1",
     0x4600800080020031ull},
    // CVO REDUCE_SUM (5), src 1, dst 2, length 7, flags accm(2).
    {"cvo cvo_func=reduce_sum src_addr=0x00001 dst_addr=0x00002 length=7 "
     "flags=accm async=0",
     0x45000080008001c8ull},
};

TEST(IsaGolden, EncodeMatchesHandWrittenWords) {
  for (const Golden &g : kGolden) {
    Instruction inst;
    std::string err;
    ASSERT_TRUE(assemble(g.text, inst, &err)) << g.text << ": " << err;
    uint64_t word = 0;
    ASSERT_TRUE(encode(inst, word, &err)) << err;
    EXPECT_EQ(word, g.word) << g.text;
  }
}

TEST(IsaGolden, DecodeMatchesHandWrittenWords) {
  for (const Golden &g : kGolden) {
    Instruction inst;
    std::string err;
    ASSERT_TRUE(decode(g.word, inst, &err)) << err;
    EXPECT_EQ(disassemble(inst), g.text);
  }
}

TEST(IsaGolden, FieldAccessorsAfterDecode) {
  Instruction inst;
  ASSERT_TRUE(decode(0x000918115a814918ull, inst, nullptr));
  EXPECT_EQ(inst.opcode, Opcode::Gemv);
  EXPECT_EQ(inst.get(Field::Matmul_dest_reg), 0x123u);
  EXPECT_EQ(inst.get(Field::Matmul_src_addr), 0x456u);
  EXPECT_TRUE(inst.has(Field::Matmul_flags, Matmul_flags_findemax));
  EXPECT_TRUE(inst.has(Field::Matmul_flags, Matmul_flags_w_scale));
  EXPECT_FALSE(inst.has(Field::Matmul_flags, Matmul_flags_accm));
  EXPECT_EQ(inst.get(Field::Matmul_size_ptr_addr), 5u);
  EXPECT_EQ(inst.get(Field::Matmul_shape_ptr_addr), 9u);
  EXPECT_EQ(inst.get(Field::Matmul_parallel_lane), 3u);
}

TEST(IsaTable, ReservedBodyBits) {
  // From the doc tables: GEMV/GEMM [2:0], MEMSET [3:0]; MEMCPY and CVO use
  // every body bit.
  EXPECT_EQ(reservedMask(Format::Matmul), 0x7ull);
  EXPECT_EQ(reservedMask(Format::Memset), 0xFull);
  EXPECT_EQ(reservedMask(Format::Memcpy), 0x0ull);
  EXPECT_EQ(reservedMask(Format::Cvo), 0x0ull);
}

TEST(IsaTable, FieldsTileTheBodyWithoutOverlap) {
  for (Format fmt :
       {Format::Matmul, Format::Memcpy, Format::Memset, Format::Cvo}) {
    uint64_t seen = 0;
    for (Field f : fieldsOf(fmt)) {
      uint64_t m = fieldInfo(f).mask();
      EXPECT_EQ(seen & m, 0u) << fieldInfo(f).name;
      seen |= m;
    }
    EXPECT_EQ(seen | reservedMask(fmt), (uint64_t(1) << 60) - 1);
  }
}

TEST(IsaTable, Routes) {
  Route r;
  ASSERT_TRUE(routeFor(true, false, r));
  EXPECT_EQ(uint8_t(r), 0x01);
  ASSERT_TRUE(routeFor(false, true, r));
  EXPECT_EQ(uint8_t(r), 0x10);
  EXPECT_FALSE(routeFor(true, true, r));
  EXPECT_STREQ(routeName(Route::gemv_res_to_l2), "gemv_res_to_l2");
}

// encode -> decode -> encode over random field values of every opcode.
TEST(IsaRoundTrip, RandomFields) {
  std::mt19937_64 rng(20261122);
  for (Opcode op : {Opcode::Gemv, Opcode::Gemm, Opcode::Memcpy, Opcode::Memset,
                    Opcode::Cvo}) {
    for (int i = 0; i < 2000; ++i) {
      Instruction inst(op);
      for (Field f : fieldsOf(inst.format())) {
        const FieldInfo &info = fieldInfo(f);
        uint32_t v = uint32_t(rng()) & info.maxValue();
        if (info.kind == FieldKind::Flags)
          v &= info.defined;
        if (info.kind == FieldKind::Enum)
          while (!enumName(f, v))
            v = uint32_t(rng()) & info.maxValue();
        inst.set(f, v);
      }
      uint64_t w1, w2;
      std::string err;
      ASSERT_TRUE(encode(inst, w1, &err)) << err;
      Instruction back;
      ASSERT_TRUE(decode(w1, back, &err)) << err;
      EXPECT_EQ(back, inst);
      ASSERT_TRUE(encode(back, w2, &err));
      EXPECT_EQ(w1, w2);
      Instruction reparsed;
      ASSERT_TRUE(assemble(disassemble(inst), reparsed, &err)) << err;
      EXPECT_EQ(reparsed, inst);
    }
  }
}

TEST(IsaReject, ReservedOpcodes) {
  for (uint64_t code = 5; code <= 15; ++code) {
    Instruction inst;
    std::string err;
    EXPECT_FALSE(decode(code << 60, inst, &err));
    EXPECT_NE(err.find("is reserved"), std::string::npos) << err;
  }
}

TEST(IsaReject, EveryReservedBodyBit) {
  for (uint64_t base : {0x0ull, 0x1ull << 60, 0x3ull << 60}) {
    Instruction probe;
    ASSERT_TRUE(decode(base, probe, nullptr));
    uint64_t reserved = reservedMask(probe.format());
    for (unsigned bit = 0; bit < 60; ++bit) {
      if (!(reserved >> bit & 1))
        continue;
      std::string err;
      Instruction inst;
      EXPECT_FALSE(decode(base | (1ull << bit), inst, &err)) << bit;
      EXPECT_NE(err.find("reserved bit"), std::string::npos) << err;
    }
  }
}

TEST(IsaReject, ReservedFlagBits) {
  // GEMV flags [25:20]: bits 2:0 of the field are reserved -> word bits 22:20.
  for (unsigned bit = 20; bit <= 22; ++bit) {
    std::string err;
    Instruction inst;
    EXPECT_FALSE(decode(1ull << bit, inst, &err));
    EXPECT_NE(err.find("field 'flags' has reserved bit"), std::string::npos)
        << err;
  }
  // CVO flags [5:1]: bits 1:0 of the field -> word bits 2:1.
  for (unsigned bit = 1; bit <= 2; ++bit) {
    std::string err;
    Instruction inst;
    EXPECT_FALSE(decode((4ull << 60) | (1ull << bit), inst, &err));
    EXPECT_NE(err.find("cvo: field 'flags' has reserved bit"),
              std::string::npos)
        << err;
  }
}

TEST(IsaReject, UndefinedEnumValues) {
  for (uint64_t cache : {2ull, 3ull}) {
    std::string err;
    Instruction inst;
    EXPECT_FALSE(decode((3ull << 60) | (cache << 58), inst, &err));
    EXPECT_NE(err.find("memset: field 'dest_cache' value"), std::string::npos)
        << err;
  }
  for (uint64_t func = 8; func <= 15; ++func) {
    std::string err;
    Instruction inst;
    EXPECT_FALSE(decode((4ull << 60) | (func << 56), inst, &err));
    EXPECT_NE(err.find("field 'cvo_func' value"), std::string::npos) << err;
  }
}

TEST(IsaReject, EncodeRejectsOversizedFields) {
  for (Opcode op : {Opcode::Gemv, Opcode::Gemm, Opcode::Memcpy, Opcode::Memset,
                    Opcode::Cvo}) {
    for (Field f : fieldsOf(opcodeInfo(op).format)) {
      const FieldInfo &info = fieldInfo(f);
      Instruction inst(op);
      if (op == Opcode::Memset)
        inst.set(Field::Memset_dest_cache, Memset_dest_cache_fmap_shape);
      inst.set(f, info.maxValue() + 1);
      uint64_t w;
      std::string err;
      EXPECT_FALSE(encode(inst, w, &err)) << info.name;
      EXPECT_NE(err.find(std::string("field '") + info.name + "' value"),
                std::string::npos)
          << err;
    }
  }
}

TEST(IsaAssembler, Errors) {
  Instruction inst;
  std::string err;
  EXPECT_FALSE(assemble("vmul dest=1", inst, &err));
  EXPECT_NE(err.find("unknown mnemonic 'vmul'"), std::string::npos);
  EXPECT_FALSE(assemble("gemv bogus=1", inst, &err));
  EXPECT_NE(err.find("no field named 'bogus'"), std::string::npos);
  EXPECT_FALSE(assemble("cvo cvo_func=tanh", inst, &err));
  EXPECT_NE(err.find("unknown value 'tanh'"), std::string::npos);
  EXPECT_FALSE(assemble("gemv flags=accm|fast", inst, &err));
  EXPECT_NE(err.find("unknown flag 'fast'"), std::string::npos);
  EXPECT_FALSE(assemble("gemv parallel_lane=32", inst, &err));
  EXPECT_NE(err.find("does not fit in 5 bits"), std::string::npos);
  EXPECT_FALSE(assemble("gemv src_addr=12x", inst, &err));
  EXPECT_NE(err.find("bad number"), std::string::npos);
}

TEST(MachineModel, ParametersAndDigest) {
  using namespace pccx::machine;
  EXPECT_EQ(l2_words * l2_word_bits / 8, 1835008u); // 1.75 MiB
  EXPECT_LE(l2_words, 1ull << l2_address_bits);
  EXPECT_EQ(kLanesPerWord, 8u);
  size_t n = 0;
  const Param *p = params(n);
  ASSERT_GT(n, 10u);
  for (size_t i = 0; i < n; ++i)
    EXPECT_NE(std::string(p[i].source), "") << p[i].name;
  EXPECT_EQ(digest(), digest());
  EXPECT_NE(digest(), 0u);
}

} // namespace
