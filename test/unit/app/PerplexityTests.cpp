//===- PerplexityTests.cpp - windows, likelihoods, KL, estimates ----------===//

#include "runtime/app/Perplexity.h"

#include "hw/numerics/Elementary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace pccx;
using namespace pccx::app;

namespace {

PerplexityOptions windowOptions(int64_t ctx, int64_t stride, int32_t bos) {
  PerplexityOptions o;
  o.ctx = ctx;
  o.stride = stride;
  o.bos = bos;
  return o;
}

TEST(Perplexity, NllOfUniformLogitsIsLogVocab) {
  std::vector<float> logits(100, 3.5f);
  EXPECT_NEAR(pccx::hw::negativeLogLikelihood(logits.data(), 100, 17), std::log(100.0),
              1e-12);
  // A dominant target costs almost nothing; the others cost its margin.
  logits[17] = 50;
  EXPECT_NEAR(pccx::hw::negativeLogLikelihood(logits.data(), 100, 17), 0, 1e-12);
  EXPECT_NEAR(pccx::hw::negativeLogLikelihood(logits.data(), 100, 3), 46.5, 1e-9);
}

TEST(Perplexity, KlDivergence) {
  std::vector<float> p = {0, 0}, q = {0, float(std::log(3.0))};
  // p = (1/2, 1/2), q = (1/4, 3/4).
  double want = 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0);
  EXPECT_NEAR(pccx::hw::klDivergence(p.data(), q.data(), 2), want, 1e-7);
  EXPECT_EQ(pccx::hw::klDivergence(p.data(), p.data(), 2), 0.0);
  // Invariant to a shift of either set of logits.
  std::vector<float> shifted = {7, 7 + float(std::log(3.0))};
  EXPECT_NEAR(pccx::hw::klDivergence(p.data(), shifted.data(), 2), want, 1e-6);
}

TEST(Perplexity, MeanAndStandardError) {
  MeanEstimate e = estimateMean({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(e.mean, 2.5);
  // Sample variance 5/3; standard error sqrt(5/3 / 4).
  EXPECT_NEAR(e.stdErr, std::sqrt(5.0 / 12.0), 1e-12);
  EXPECT_EQ(estimateMean({2}).stdErr, 0.0);
  EXPECT_EQ(estimateMean({}).mean, 0.0);
}

/// Every text token from the first scoreable one on is scored exactly once.
void expectEachTokenOnce(int64_t n, int64_t ctx, int64_t stride, int32_t bos) {
  std::vector<Window> windows;
  std::string error;
  ASSERT_TRUE(planWindows(n, windowOptions(ctx, stride, bos), &windows, &error))
      << error;
  std::vector<int> scored(size_t(n), 0);
  for (const Window &w : windows) {
    EXPECT_LE(w.end - w.begin + (bos >= 0 ? 1 : 0), ctx);
    EXPECT_LE(w.begin + (bos >= 0 ? 0 : 1), w.firstScored);
    for (int64_t j = w.firstScored; j < w.end; ++j)
      ++scored[size_t(j)];
  }
  for (int64_t j = 0; j < n; ++j)
    EXPECT_EQ(scored[size_t(j)], (bos < 0 && j == 0) ? 0 : 1)
        << "token " << j << " n " << n << " ctx " << ctx << " stride "
        << stride;
}

TEST(Perplexity, WindowsScoreEveryTokenOnce) {
  for (int32_t bos : {2, -1})
    for (int64_t n : {2, 3, 10, 37, 100})
      for (int64_t ctx : {2, 5, 16})
        for (int64_t stride = 1; stride < ctx; ++stride)
          expectEachTokenOnce(n, ctx, stride, bos);
}

TEST(Perplexity, WindowLayout) {
  std::vector<Window> w;
  std::string error;
  // BOS + 4 text tokens per window, stride 2.
  ASSERT_TRUE(planWindows(10, windowOptions(5, 2, 2), &w, &error));
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].begin, 0);
  EXPECT_EQ(w[0].firstScored, 0);
  EXPECT_EQ(w[0].end, 4);
  EXPECT_EQ(w[1].begin, 2);
  EXPECT_EQ(w[1].firstScored, 4);
  EXPECT_EQ(w[1].end, 6);
  EXPECT_EQ(w[3].end, 10);
  PerplexityOptions capped = windowOptions(5, 2, 2);
  capped.maxWindows = 2;
  ASSERT_TRUE(planWindows(10, capped, &w, &error));
  EXPECT_EQ(w.size(), 2u);
}

TEST(Perplexity, WindowErrors) {
  std::vector<Window> w;
  std::string error;
  EXPECT_FALSE(planWindows(10, windowOptions(1, 1, 2), &w, &error));
  EXPECT_EQ(error, "--ctx must be at least 2 (got 1)");
  EXPECT_FALSE(planWindows(10, windowOptions(8, 8, 2), &w, &error));
  EXPECT_EQ(error, "--stride must be between 1 and ctx - 1 = 7 (got 8)");
  EXPECT_FALSE(planWindows(10, windowOptions(8, 0, 2), &w, &error));
  EXPECT_FALSE(planWindows(1, windowOptions(8, 4, -1), &w, &error));
  EXPECT_EQ(error, "the text has 1 token(s); scoring needs at least 2");
  EXPECT_FALSE(planWindows(0, windowOptions(8, 4, 2), &w, &error));
}

/// A model that gives the id after each input token a logit of `margin`
/// (the text below counts up, so the right row always predicts well and a
/// row off by one never does).
LogitsFunction countingModel(int64_t vocab, float margin) {
  return [=](const std::vector<int32_t> &tokens, std::vector<float> *logits,
             std::string *) {
    logits->assign(tokens.size() * size_t(vocab), 0.0f);
    for (size_t r = 0; r < tokens.size(); ++r)
      (*logits)[r * size_t(vocab) + size_t((tokens[r] + 1) % vocab)] = margin;
    return true;
  };
}

TEST(Perplexity, ScoresTheRowBeforeEachToken) {
  const int64_t vocab = 16;
  std::vector<int32_t> text;
  for (int i = 0; i < 40; ++i)
    text.push_back(4 + i % 12); // 4..15, never the BOS id 3
  PerplexityOptions o = windowOptions(8, 3, -1);
  PerplexityFigures f;
  std::string error;
  ASSERT_TRUE(
      perplexity(text, o, vocab, countingModel(vocab, 5), {}, &f, &error))
      << error;
  // 4..15 counts up except the wrap 15 -> 4: every scored token but the
  // wraps is predicted with margin 5.
  double good = std::log(15 + std::exp(5.0)) - 5,
         bad = std::log(15 + std::exp(5.0));
  int64_t wraps = 0;
  for (size_t j = 1; j < text.size(); ++j)
    wraps += text[j] == 4;
  double want = (double(39 - wraps) * good + double(wraps) * bad) / 39;
  EXPECT_EQ(f.tokens, 39);
  EXPECT_NEAR(f.nll.mean, want, 1e-9);
  EXPECT_NEAR(f.ppl, std::exp(want), 1e-9);
  EXPECT_FALSE(f.hasReference);
}

TEST(Perplexity, AgainstAReference) {
  const int64_t vocab = 16;
  std::vector<int32_t> text(30, 7);
  PerplexityOptions o = windowOptions(6, 4, 3);
  PerplexityFigures same, other;
  std::string error;
  ASSERT_TRUE(perplexity(text, o, vocab, countingModel(vocab, 2),
                         countingModel(vocab, 2), &same, &error));
  EXPECT_TRUE(same.hasReference);
  EXPECT_EQ(same.kl.mean, 0.0);
  EXPECT_EQ(same.top1Agree, 1.0);
  EXPECT_EQ(same.lnPplRatio.mean, 0.0);
  EXPECT_DOUBLE_EQ(same.ppl, same.referencePpl);
  // Uniform logits against the counting model: never the same argmax
  // (uniform picks id 0; the counting model picks 8 after 7 and 4 after
  // BOS 3), the KL of each row is that of (e^2, 1, ...) vs uniform.
  LogitsFunction uniform = [&](const std::vector<int32_t> &tokens,
                               std::vector<float> *logits, std::string *) {
    logits->assign(tokens.size() * size_t(vocab), 1.0f);
    return true;
  };
  ASSERT_TRUE(perplexity(text, o, vocab, uniform, countingModel(vocab, 2),
                         &other, &error));
  double z = 15 + std::exp(2.0), p = std::exp(2.0) / z;
  double kl = p * std::log(p * 16) + (1 - p) * std::log(16 / z);
  EXPECT_NEAR(other.kl.mean, kl, 1e-6);
  EXPECT_EQ(other.top1Agree, 0.0);
  EXPECT_NEAR(other.ppl, 16.0, 1e-9);
  EXPECT_NEAR(other.lnPplRatio.mean, std::log(16.0) - other.referenceNll.mean,
              1e-12);
}

TEST(Perplexity, ModelErrorsPassThrough) {
  LogitsFunction broken = [](const std::vector<int32_t> &, std::vector<float> *,
                             std::string *error) {
    *error = "device lost";
    return false;
  };
  PerplexityFigures f;
  std::string error;
  EXPECT_FALSE(
      perplexity({5, 6, 7}, windowOptions(4, 2, 1), 8, broken, {}, &f, &error));
  EXPECT_EQ(error, "device lost");
  LogitsFunction shortRows = [](const std::vector<int32_t> &,
                                std::vector<float> *logits, std::string *) {
    logits->assign(3, 0.0f);
    return true;
  };
  EXPECT_FALSE(perplexity({5, 6, 7}, windowOptions(4, 2, 1), 8, shortRows, {},
                          &f, &error));
  EXPECT_EQ(error, "a window of 4 tokens gave the wrong number of logits");
}

} // namespace
