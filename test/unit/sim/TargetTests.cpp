//===- TargetTests.cpp - the simulator under each target profile ----------===//
//
// Every convention of the v002-rtl profile (hw/machine/Targets.def), with
// values worked out by hand, and the same words under the default v002
// profile where the meaning differs.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/Simulator.h"
#include "test/unit/sim/SimFixture.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace pccx;
using machine::Target;
using sim::Numerics;
using sim::Simulator;

namespace {

class TargetTest : public testsupport::SimFixture {
protected:
  explicit TargetTest(Target target = Target::V002Rtl)
      : SimFixture(Numerics::Hardware, 4096, target) {}

  void trap(const std::string &text, const std::string &needle) {
    EXPECT_FALSE(exec(text)) << text;
    EXPECT_NE(err.find(needle), std::string::npos) << err;
  }
  float *host(uint64_t word) { return sim.hostLanes() + word * 8; }

  // INT8 weights [[1, 2, 3], [-1, 0, 2]], rows padded to 16 bytes.
  std::vector<uint8_t> record = [] {
    std::vector<uint8_t> r(32, 0);
    r[0] = 1, r[1] = 2, r[2] = 3;
    r[16] = uint8_t(-1), r[17] = 0, r[18] = 2;
    return r;
  }();
};

class V002TargetTest : public TargetTest {
protected:
  V002TargetTest() : TargetTest(Target::V002) {}
};

TEST(TargetTable, NamesAndDefault) {
  Target t;
  ASSERT_TRUE(machine::lookupTarget("v002-rtl", t));
  EXPECT_EQ(t, Target::V002Rtl);
  ASSERT_TRUE(machine::lookupTarget("v002", t));
  EXPECT_EQ(t, Target::V002);
  EXPECT_FALSE(machine::lookupTarget("v003", t));
  EXPECT_EQ(machine::targetNames(), "v002, v002-rtl");
  EXPECT_EQ(Simulator(Numerics::Reference, 8).target(), Target::V002);
}

// shape_ptr_addr names the fmap_shape entry (M, strides), size_ptr_addr the
// weight_shape entry (N, K, format): y = W x = [1+4+9, -1+0+6] = [14, 5].
TEST_F(TargetTest, GemmPointersAreSwapped) {
  ok("memset dest_cache=fmap_shape dest_addr=2 a_value=1 b_value=0 c_value=0");
  ok("memset dest_cache=weight_shape dest_addr=7 a_value=2 b_value=3 "
     "c_value=1");
  put(0x10, {1, 2, 3});
  sim.pushWeightStream(record.data(), record.size());
  ok("gemm dest_reg=0x00020 src_addr=0x00010 size_ptr_addr=7 "
     "shape_ptr_addr=2");
  EXPECT_EQ(get(0x20, 2), (std::vector<float>{14, 5}));
}

TEST_F(V002TargetTest, GemmPointersAreNotSwapped) {
  ok("memset dest_cache=fmap_shape dest_addr=2 a_value=1 b_value=0 c_value=0");
  ok("memset dest_cache=weight_shape dest_addr=7 a_value=2 b_value=3 "
     "c_value=1");
  sim.pushWeightStream(record.data(), record.size());
  // The same word reads weight_shape entry 2, which was never written.
  trap("gemm dest_reg=0x00020 src_addr=0x00010 size_ptr_addr=7 "
       "shape_ptr_addr=2",
       "constant-cache weight_shape entry 2 was never written");
}

TEST_F(TargetTest, GemvHasNoWriteBack) {
  ok("memset dest_cache=fmap_shape dest_addr=2 a_value=1 b_value=0 c_value=0");
  ok("memset dest_cache=weight_shape dest_addr=7 a_value=2 b_value=3 "
     "c_value=1");
  sim.pushWeightStream(record.data(), record.size());
  trap("gemv dest_reg=0x00020 src_addr=0x00010 size_ptr_addr=7 "
       "shape_ptr_addr=2",
       "target v002-rtl has no GEMV result write-back path");
  // Nothing consumed, nothing written.
  EXPECT_EQ(sim.weightStreamPending(), 32u);
  EXPECT_EQ(get(0x20, 1)[0], 0.0f);
}

// (3, 2, 2) is 12 elements: two words, contiguous, from the window base;
// aux_addr is ignored.
TEST_F(TargetTest, MemcpyMovesCeilAbcOver8Words) {
  ok("memset dest_cache=fmap_shape dest_addr=4 a_value=3 b_value=2 c_value=2");
  for (unsigned i = 0; i < 24; ++i)
    host(100)[i] = float(i + 1);
  ASSERT_TRUE(sim.setHostWindow(100, &err)) << err;
  ok("memcpy from_device=1 to_device=0 dest_addr=0x00040 aux_addr=0x00040 "
     "shape_ptr_addr=4");
  std::vector<float> got = get(0x40, 24);
  for (unsigned i = 0; i < 16; ++i)
    EXPECT_EQ(got[i], float(i + 1)) << i;
  for (unsigned i = 16; i < 24; ++i) // the third word is not copied
    EXPECT_EQ(got[i], 0.0f) << i;
}

TEST_F(V002TargetTest, MemcpyMovesRowsOfAWords) {
  // The same entry is 2 rows of 3 words, host rows 2 words apart.
  ok("memset dest_cache=fmap_shape dest_addr=4 a_value=3 b_value=2 c_value=3");
  for (unsigned i = 0; i < 48; ++i)
    host(0x40)[i] = float(i + 1);
  ok("memcpy from_device=1 to_device=0 dest_addr=0x00040 aux_addr=0x00040 "
     "shape_ptr_addr=4");
  EXPECT_EQ(get(0x40 + 5, 1)[0], 41.0f); // row 1 word 2 = host word 5
}

TEST_F(TargetTest, MemcpyNonHostPairsGoToHost) {
  ok("memset dest_cache=fmap_shape dest_addr=4 a_value=8 b_value=1 c_value=1");
  put(0x30, {1, 2, 3, 4, 5, 6, 7, 8});
  ok("memcpy from_device=0 to_device=0 dest_addr=0x00050 src_addr=0x00030 "
     "shape_ptr_addr=4");
  EXPECT_EQ(host(0)[7], 8.0f);
  EXPECT_EQ(get(0x50, 1)[0], 0.0f); // no L2->L2 copy
  put(0x30, {9});
  ok("memcpy from_device=1 to_device=1 src_addr=0x00030 shape_ptr_addr=4");
  EXPECT_EQ(host(0)[0], 9.0f);
}

TEST_F(V002TargetTest, MemcpyL2ToL2AndHostToHostTrap) {
  ok("memset dest_cache=fmap_shape dest_addr=4 a_value=1 b_value=1 c_value=1");
  put(0x30, {5});
  ok("memcpy from_device=0 to_device=0 dest_addr=0x00050 src_addr=0x00030 "
     "shape_ptr_addr=4");
  EXPECT_EQ(get(0x50, 1)[0], 5.0f);
  trap("memcpy from_device=1 to_device=1 shape_ptr_addr=4",
       "host-to-host MEMCPY is not supported");
}

TEST_F(TargetTest, MemcpyWordCountIs17Bits) {
  // 65532 * 2 * 1 = 131064 elements = 16383 words: fits.
  ok("memset dest_cache=fmap_shape dest_addr=4 a_value=65532 b_value=2 "
     "c_value=1");
  Simulator big(Numerics::Hardware, 20000, Target::V002Rtl);
  isa::Instruction set, copy;
  ASSERT_TRUE(isa::assemble("memset dest_cache=fmap_shape dest_addr=4 "
                            "a_value=65532 b_value=2 c_value=1",
                            set, &err));
  ASSERT_TRUE(isa::assemble("memcpy from_device=1 to_device=0 "
                            "dest_addr=0x00000 shape_ptr_addr=4",
                            copy, &err));
  ASSERT_TRUE(big.execute(set, &err)) << err;
  ASSERT_TRUE(big.execute(copy, &err)) << err;
  EXPECT_EQ(big.stats().memcpyWords, 16383u);
  // 26213 * 5 * 1 = 131065 is one element too many: 131065 + 7 = 2^17.
  ok("memset dest_cache=fmap_shape dest_addr=7 a_value=26213 b_value=5 "
     "c_value=1");
  trap("memcpy from_device=1 to_device=0 shape_ptr_addr=7",
       "a*b*c = 131065 elements; the 17-bit word count of target v002-rtl "
       "holds at most 131064 elements");
  // 65535 * 2 * 1 + 7 needs an 18th bit.
  ok("memset dest_cache=fmap_shape dest_addr=5 a_value=65535 b_value=2 "
     "c_value=1");
  trap("memcpy from_device=1 to_device=0 shape_ptr_addr=5",
       "a*b*c = 131070 elements; the 17-bit word count of target v002-rtl");
  ok("memset dest_cache=fmap_shape dest_addr=6 a_value=4 b_value=0 c_value=1");
  trap("memcpy from_device=1 to_device=0 shape_ptr_addr=6",
       "fmap_shape entry 6 has a*b*c = 0 elements");
}

// Element address 0x80 is word 0x10, 0x100 is word 0x20: exp(0) = 1.
TEST_F(TargetTest, CvoAddressesAreElements) {
  put(0x10, {0, 0, 0});
  put(0x20, {-7, -7, -7, -7});
  ok("cvo cvo_func=exp src_addr=0x00080 dst_addr=0x00100 length=3");
  EXPECT_EQ(get(0x20, 4), (std::vector<float>{1, 1, 1, -7}));
  // The highest element address reaches word 0x3fff only.
  put(0x3fff, {4});
  ok("cvo cvo_func=sqrt src_addr=0x1fff8 dst_addr=0x1fff8 length=1");
  EXPECT_EQ(get(0x3fff, 1)[0], 2.0f);
  trap("cvo cvo_func=exp src_addr=0x00081 dst_addr=0x00100 length=3",
       "they are BF16 element addresses and must start a word");
}

TEST_F(V002TargetTest, CvoAddressesAreWords) {
  put(0x80, {0});
  ok("cvo cvo_func=exp src_addr=0x00080 dst_addr=0x00100 length=1");
  EXPECT_EQ(get(0x100, 1)[0], 1.0f);
  ok("cvo cvo_func=exp src_addr=0x00081 dst_addr=0x00100 length=3000");
}

TEST_F(TargetTest, CvoLengthStopsAt2048) {
  ok("cvo cvo_func=exp src_addr=0x00000 dst_addr=0x08000 length=2048");
  trap("cvo cvo_func=exp src_addr=0x00000 dst_addr=0x08000 length=2049",
       "length 2049 exceeds the 2048 elements of a CVO on target v002-rtl");
}

TEST(TargetNote, DescribesWhatDiffers) {
  isa::Instruction inst;
  std::string err;
  ASSERT_TRUE(isa::assemble("cvo cvo_func=exp src_addr=0x00081 "
                            "dst_addr=0x00100 length=3",
                            inst, &err));
  EXPECT_EQ(machine::targetNote(inst, Target::V002), "");
  EXPECT_EQ(machine::targetNote(inst, Target::V002Rtl),
            "v002-rtl: elements: src word 0x00010 lane 1, dst word 0x00020");
  ASSERT_TRUE(isa::assemble("memcpy from_device=0 to_device=0 "
                            "shape_ptr_addr=3",
                            inst, &err));
  EXPECT_EQ(machine::targetNote(inst, Target::V002Rtl),
            "v002-rtl: l2_to_host, ceil(a*b*c/8) words of fmap_shape[3], "
            "host at the DMA page, aux_addr ignored");
  ASSERT_TRUE(
      isa::assemble("gemv size_ptr_addr=7 shape_ptr_addr=2", inst, &err));
  EXPECT_EQ(machine::targetNote(inst, Target::V002Rtl),
            "v002-rtl: fmap_shape[2] weight_shape[7], no result write-back");
  EXPECT_EQ(machine::missingCapability(inst, Target::V002), "");
}

// What the RTL runs today (docs/isa-semantics.md §13): MEMSET and MEMCPY.
// The compiler refuses GEMM and CVO for v002-rtl, naming why; v002 runs
// everything.
TEST(Targets, TheCompilerRefusesWhatTheRtlComputesWrongly) {
  std::string err;
  for (const char *text :
       {"gemm size_ptr_addr=7 shape_ptr_addr=2", "cvo cvo_func=exp length=8",
        "memset dest_cache=fmap_shape dest_addr=1 a_value=1",
        "memcpy from_device=1 to_device=0 shape_ptr_addr=1"}) {
    isa::Instruction inst;
    ASSERT_TRUE(isa::assemble(text, inst, &err)) << err;
    EXPECT_EQ(machine::wrongResult(inst, Target::V002), "") << text;
    const std::string why = machine::wrongResult(inst, Target::V002Rtl);
    if (inst.opcode == isa::Opcode::Gemm)
      EXPECT_NE(why.find("the v002-rtl GEMM stores four words of zeros"),
                std::string::npos)
          << why;
    else if (inst.opcode == isa::Opcode::Cvo)
      EXPECT_NE(why.find("the v002-rtl CVO runs with the previous CVO's "
                         "parameters"),
                std::string::npos)
          << why;
    else
      EXPECT_EQ(why, "") << text;
  }
}

} // namespace
