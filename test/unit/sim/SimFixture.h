//===- SimFixture.h - a simulator and the steps its tests repeat -*- C++ -*-===//

#ifndef PCCX_TEST_UNIT_SIM_SIMFIXTURE_H
#define PCCX_TEST_UNIT_SIM_SIMFIXTURE_H

#include "hw/isa/Isa.h"
#include "runtime/sim/Simulator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pccx::testsupport {

/// One simulator; words are given as assembly text, L2 as float lanes.
class SimFixture : public ::testing::Test {
protected:
  SimFixture(sim::Numerics numerics, size_t hostWords,
             machine::Target target = machine::kDefaultTarget)
      : sim(numerics, hostWords, target) {}

  /// Assembles `text` (a failure to assemble fails the test) and runs it.
  bool exec(const std::string &text) {
    isa::Instruction inst;
    EXPECT_TRUE(isa::assemble(text, inst, &err)) << text << ": " << err;
    return sim.execute(inst, &err);
  }
  void ok(const std::string &text) { ASSERT_TRUE(exec(text)) << err; }
  void put(uint32_t word, const std::vector<float> &v) {
    ASSERT_TRUE(sim.writeL2(word, v.data(), v.size(), &err)) << err;
  }
  std::vector<float> get(uint32_t word, size_t n) {
    std::vector<float> v(n);
    EXPECT_TRUE(sim.readL2(word, v.data(), n, &err)) << err;
    return v;
  }

  sim::Simulator sim;
  std::string err;
};

} // namespace pccx::testsupport

#endif
