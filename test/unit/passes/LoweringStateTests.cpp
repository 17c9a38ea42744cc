//===- LoweringStateTests.cpp - the gemma3n -> pccx lowering state --------===//
//
// Properties of what the lowering state decides, checked on a whole model
// (the tiny checkpoint, decode and prefill programs): host-window buffers
// are released only after their last reader, so the buffers that placement
// lets share words are never in use at the same time; allocation events
// are numbered once each; every value the host reads was put in the window
// by an instruction or a kernel before.
//
//===----------------------------------------------------------------------===//

#include "dialects/Gemma3n/model/ModelImporter.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "runtime/import/CheckpointGenerator.h"
#include "dialects/Gemma3n/model/ModelInfo.h"
#include "dialects/Pccx/PccxOps.h"
#include "passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <unistd.h>

using namespace mlir;
namespace pd = pccx::dialect;

namespace {

/// The tiny checkpoint, lowered up to and including host-buffer placement.
class LoweringStateTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pccx-lowering-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::string error;
    pccx::import::Gemma3nTextConfig config;
    ASSERT_TRUE(pccx::import::presetConfig("tiny", &config, &error)) << error;
    ASSERT_TRUE(pccx::import::generateCheckpoint(config, dir_, {}, &error))
        << error;
    ASSERT_TRUE(pccx::loadCheckpoint(dir_, &checkpoint_, &error)) << error;
    DialectRegistry registry;
    pccx::registerAllDialects(registry);
    context_.appendDialectRegistry(registry);
    context_.loadAllAvailableDialects();
    pccx::CompileOptions options;
    options.maxSeqLen = 32;
    module_ = pccx::importModel(context_, checkpoint_, options.maxSeqLen,
                                &error);
    ASSERT_TRUE(module_) << error;
    PassManager pm(&context_);
    pccx::buildModelPipeline(pm, options);
    pm.addPass(pccx::createConvertGemma3nToPccx());
    pm.addPass(pccx::createPlaceHostBuffers());
    ASSERT_TRUE(succeeded(pm.run(*module_)));
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
  }

  std::string dir_;
  pccx::LoadedCheckpoint checkpoint_;
  MLIRContext context_;
  OwningOpRef<ModuleOp> module_;
};

TEST_F(LoweringStateTest, BuffersSharingWordsAreNeverLiveTogether) {
  int programs = 0;
  for (auto program : module_->getOps<pd::ProgramOp>()) {
    ++programs;
    struct Buffer {
      std::string name;
      int64_t begin, end, alloc, free;
    };
    std::vector<Buffer> buffers;
    std::set<int64_t> events;
    for (auto b : program.getBody().getOps<pd::HostBufferOp>()) {
      ASSERT_TRUE(b.getAddress().has_value());
      int64_t at = int64_t(*b.getAddress());
      // Signed: a buffer never released keeps `free = -1`.
      int64_t alloc = b.getAllocAttr().getInt();
      int64_t free = b.getFreeAttr().getInt();
      buffers.push_back(
          {b.getSymName().str(), at, at + int64_t(b.getWords()), alloc, free});
      EXPECT_LT(alloc, free);
      EXPECT_TRUE(events.insert(alloc).second) << b.getSymName().str();
      EXPECT_TRUE(events.insert(free).second) << b.getSymName().str();
    }
    ASSERT_FALSE(buffers.empty());
    // Ordinals are exactly 0 .. 2n-1.
    EXPECT_EQ(*events.begin(), 0);
    EXPECT_EQ(*events.rbegin(), int64_t(2 * buffers.size() - 1));

    // Which words each op touches, in program order.
    std::vector<std::vector<std::pair<int64_t, int64_t>>> touched;
    for (auto segment : program.getBody().getOps<pd::SegmentOp>())
      for (Operation &op : segment.getBody().front()) {
        std::vector<std::pair<int64_t, int64_t>> words;
        if (auto copy = dyn_cast<pd::MemcpyOp>(op)) {
          auto shape = copy.getFmapShapeAttr();
          ASSERT_TRUE(shape);
          int64_t aux = cast<IntegerAttr>(copy.getAuxAddr()).getInt();
          words.push_back(
              {aux, aux + (shape.getB() - 1) * shape.getC() + shape.getA()});
        }
        if (auto kernel = dyn_cast<pd::HostKernelOp>(op))
          for (bool outputs : {false, true})
            for (pd::HostRegionAttr r : kernel.getRegions(outputs)) {
              ASSERT_FALSE(r.getBuffer()) << "placement left a symbol";
              words.push_back(
                  {r.getOffset(), r.getOffset() + r.getSpanWords()});
            }
        touched.push_back(words);
      }

    // Two buffers whose words overlap must not be live at once.
    for (size_t i = 0; i < buffers.size(); ++i)
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        const Buffer &a = buffers[i], &b = buffers[j];
        bool wordsOverlap = a.begin < b.end && b.begin < a.end;
        bool livesOverlap = a.alloc < b.free && b.alloc < a.free;
        EXPECT_FALSE(wordsOverlap && livesOverlap)
            << a.name << " and " << b.name << " share words while both live";
      }

    // Every op's words lie inside some buffer.
    for (const auto &words : touched)
      for (auto [lo, hi] : words) {
        bool inside = false;
        for (const Buffer &b : buffers)
          inside |= lo >= b.begin && hi <= b.end;
        EXPECT_TRUE(inside)
            << "words [" << lo << ", " << hi << ") lie in no host buffer";
      }

    // The high-water mark is what placement used.
    int64_t high = 0;
    for (const Buffer &b : buffers)
      high = std::max(high, b.end);
    auto recorded = program->getAttrOfType<IntegerAttr>("window_words");
    ASSERT_TRUE(recorded);
    EXPECT_EQ(recorded.getInt(), high);
  }
  EXPECT_EQ(programs, 3); // decode, prefill and prefill without the LM head
}

TEST_F(LoweringStateTest, EveryLayerOpLandsInItsLayerSegment) {
  for (auto program : module_->getOps<pd::ProgramOp>()) {
    std::vector<std::string> names;
    for (auto segment : program.getBody().getOps<pd::SegmentOp>())
      names.push_back(segment.getSymName().str());
    // prologue, layer.0 .. layer.6, epilogue: one segment each, in order.
    ASSERT_EQ(names.size(), 9u) << program.getSymName().str();
    EXPECT_EQ(names.front(), "prologue");
    for (int l = 0; l < 7; ++l)
      EXPECT_EQ(names[size_t(l + 1)], "layer." + std::to_string(l));
    EXPECT_EQ(names.back(), "epilogue");
  }
}

} // namespace
