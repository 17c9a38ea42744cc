//===- BatchTests.cpp - sequences decoded together -------------------------===//
//
// The session's slots and the continuous-batching scheduler over the tiny
// model compiled with --decode-batch 4: a sequence stepped with others gets
// the logits it gets alone; rewinding forgets positions within the rings'
// reach and refuses beyond it; the scheduler admits in arrival order,
// reuses a slot's longest common prefix, and a cancelled request frees its
// slot.
//
//===----------------------------------------------------------------------===//

#include "runtime/app/Batch.h"
#include "runtime/devices/SimDevice.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <unistd.h>

using namespace pccx;

namespace {

std::string scratch() {
  return testing::TempDir() + "pccx-batch-" + std::to_string(::getpid());
}

struct Cleanup : testing::Environment {
  void TearDown() override {
    (void)std::system(("rm -rf " + scratch()).c_str());
  }
};
testing::Environment *const cleanup =
    testing::AddGlobalTestEnvironment(new Cleanup);

const exec::Model &batchModel() {
  static const std::unique_ptr<exec::Model> model = [] {
    std::string dir = PCCX_BIN_DIR, tmp = scratch();
    std::string cmd = "mkdir -p " + tmp + " && " + dir +
                      "/pccx-make-checkpoint --preset tiny -o " + tmp +
                      "/ckpt >/dev/null && " + dir + "/pccx-compile " + tmp +
                      "/ckpt --max-seq-len 64 --decode-batch 4 -o " + tmp +
                      "/b4.pccx";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    std::string error;
    auto m = exec::Model::load(tmp + "/b4.pccx", &error);
    EXPECT_NE(m, nullptr) << error;
    return m;
  }();
  return *model;
}

std::unique_ptr<exec::Session> newSession() {
  const exec::Model &m = batchModel();
  return std::make_unique<exec::Session>(
      m, std::make_unique<device::SimDevice>(sim::Numerics::Hardware,
                                             m.target()));
}

using Rows = std::vector<exec::Session::StepRow>;

TEST(Slots, SteppedTogetherEqualsAlone) {
  auto s = newSession();
  std::string error;
  ASSERT_EQ(s->batchRows(), 4);
  ASSERT_EQ(batchModel().batches().size(), 2u); // 2 and 4 rows
  ASSERT_TRUE(s->reserveSlots(3, &error)) << error;
  const std::vector<std::vector<int32_t>> prompts = {
      {2, 5, 6}, {2, 100, 101, 102, 103}, {2}};
  for (int slot = 0; slot < 3; ++slot)
    ASSERT_TRUE(s->consume(slot, prompts[size_t(slot)], false, nullptr,
                           &error))
        << error;
  // Slot 1 takes two rows in this step (at consecutive positions).
  std::vector<float> together;
  ASSERT_TRUE(s->step({{0, 7}, {1, 104}, {1, 105}, {2, 9}}, &together, &error))
      << error;
  EXPECT_EQ(s->position(0), 4);
  EXPECT_EQ(s->position(1), 7);
  EXPECT_EQ(s->position(2), 2);
  EXPECT_EQ(s->stats().batchRows, 4u);
  EXPECT_EQ(s->stats().paddingRows, 0u);

  const size_t vocab = size_t(batchModel().vocabSize());
  const std::vector<std::vector<int32_t>> fed = {{7}, {104, 105}, {9}};
  size_t row = 0;
  for (int slot = 0; slot < 3; ++slot) {
    auto alone = newSession();
    std::vector<float> logits;
    ASSERT_TRUE(alone->consume(prompts[size_t(slot)], false, nullptr, &error));
    ASSERT_TRUE(alone->consume(fed[size_t(slot)], true, &logits, &error));
    for (size_t r = 0; r < fed[size_t(slot)].size(); ++r, ++row)
      EXPECT_TRUE(std::equal(logits.begin() + long(r * vocab),
                             logits.begin() + long((r + 1) * vocab),
                             together.begin() + long(row * vocab)))
          << "slot " << slot << " row " << r;
  }
  // Three rows run the 4-row program with one padding row.
  ASSERT_TRUE(s->step({{0, 8}, {1, 106}, {2, 10}}, nullptr, &error)) << error;
  EXPECT_EQ(s->stats().paddingRows, 1u);
}

TEST(Slots, RewindKeepsTheRingsOrPrefillsAgain) {
  auto s = newSession();
  std::string error;
  std::vector<int32_t> tokens;
  for (int i = 0; i < 40; ++i)
    tokens.push_back(int32_t(10 + i));
  ASSERT_TRUE(s->consume(tokens, false, nullptr, &error)) << error;
  // The tiny model's sliding rings hold the window of 8 plus 16 - 1 (23
  // slots): positions 17..39, so the window before 24 (17..23) is there
  // and the one before 20 (13..19) is not.
  EXPECT_TRUE(s->rewindKeepsCache(0, 24));
  EXPECT_FALSE(s->rewindKeepsCache(0, 20));
  EXPECT_TRUE(s->rewind(0, 24, &error)) << error;
  EXPECT_EQ(s->position(), 24);
  EXPECT_EQ(s->stats().rewindReplays, 0u);
  // From 24, going back 2 more is short, but the rings were written up to
  // 39: the window before 22 (15..21) was written over. The slot starts
  // over and prefills the 22 tokens it keeps.
  EXPECT_FALSE(s->rewindKeepsCache(0, 22));
  EXPECT_TRUE(s->rewind(0, 22, &error)) << error;
  EXPECT_EQ(s->position(), 22);
  EXPECT_EQ(s->stats().rewindReplays, 1u);
  EXPECT_EQ(s->stats().replayedTokens, 22u);
  EXPECT_EQ(s->tokens(0),
            std::vector<int32_t>(tokens.begin(), tokens.begin() + 22));
  EXPECT_TRUE(s->rewindKeepsCache(0, 20)); // written only up to 21 now
  EXPECT_FALSE(s->rewind(0, 30, &error));
  EXPECT_NE(error.find("it holds positions 0..21"), std::string::npos)
      << error;
  EXPECT_FALSE(s->rewindKeepsCache(0, 30));
  EXPECT_FALSE(s->step({{3, 5}}, nullptr, &error));
  EXPECT_NE(error.find("slot 3 is not one of the session's 1"),
            std::string::npos)
      << error;
}

// The sequence that gave other logits (by up to 2.8) than a fresh run:
// each rewind is short, but the first one left positions 10..25 in the
// rings, and the second must not read 9's window from them.
TEST(Slots, RewindAfterRewindGivesAFreshRunsLogits) {
  auto s = newSession();
  std::string error;
  std::vector<int32_t> tokens;
  for (int i = 0; i < 26; ++i)
    tokens.push_back(int32_t(2 + (i * 37) % 500));
  ASSERT_TRUE(s->consume(tokens, false, nullptr, &error)) << error;
  ASSERT_TRUE(s->rewind(0, 10, &error)) << error;
  ASSERT_TRUE(s->consume({7}, false, nullptr, &error)) << error;
  ASSERT_TRUE(s->rewind(0, 9, &error)) << error;
  std::vector<float> reused, fresh;
  ASSERT_TRUE(s->consume({tokens[9]}, false, &reused, &error)) << error;
  auto alone = newSession();
  ASSERT_TRUE(alone->consume(std::vector<int32_t>(tokens.begin(),
                                                  tokens.begin() + 10),
                             false, &fresh, &error))
      << error;
  ASSERT_EQ(reused.size() * 10, fresh.size());
  EXPECT_TRUE(std::equal(reused.begin(), reused.end(),
                         fresh.end() - long(reused.size())));
  EXPECT_EQ(s->stats().rewindReplays, 1u);
}

TEST(Scheduler, ArrivalOrderPrefixReuseAndCancel) {
  auto s = newSession();
  app::BatchScheduler scheduler(*s, 2);
  std::string error;
  ASSERT_TRUE(scheduler.init(&error)) << error;
  std::vector<std::string> log;
  std::vector<app::GenerateResult> results(4);
  auto request = [&](std::vector<int32_t> prompt, int64_t tokens, int id) {
    app::BatchRequest r;
    r.prompt = std::move(prompt);
    r.options.maxNewTokens = tokens;
    r.onAdmit = [&log, id](int64_t reused) {
      log.push_back("admit " + std::to_string(id) + " reused " +
                    std::to_string(reused));
    };
    r.onDone = [&, id](const app::GenerateResult &result,
                       const std::string &why) {
      EXPECT_EQ(why, "");
      results[size_t(id)] = result;
      log.push_back("done " + std::to_string(id));
    };
    return scheduler.submit(std::move(r));
  };
  request({2, 5, 6, 7}, 3, 0);
  const int64_t second = request({2, 40, 41}, 50, 1);
  request({2, 5, 6, 9}, 2, 2); // waits for a slot; shares 3 tokens with 0's
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(scheduler.iterate(&error)) << error;
  scheduler.cancel(second); // frees its slot without onDone
  ASSERT_TRUE(scheduler.runAll(&error)) << error;
  EXPECT_EQ(log, (std::vector<std::string>{"admit 0 reused 0",
                                           "admit 1 reused 0", "done 0",
                                           "admit 2 reused 3", "done 2"}));
  EXPECT_EQ(results[0].generated.size(), 3u);
  EXPECT_EQ(results[2].generated.size(), 2u);
  EXPECT_EQ(results[2].reusedTokens, 3);
  EXPECT_TRUE(scheduler.idle());

  // Request 2's tokens are those it gets alone.
  auto alone = newSession();
  app::GenerateOptions o;
  o.maxNewTokens = 2;
  app::GenerateResult single;
  ASSERT_TRUE(app::generate(*alone, {2, 5, 6, 9}, o, &single, &error));
  EXPECT_EQ(single.generated, results[2].generated);
}

} // namespace
