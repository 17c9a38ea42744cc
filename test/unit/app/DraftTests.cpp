//===- DraftTests.cpp - prompt-lookup drafting ----------------------------===//

#include "runtime/app/Generate.h"

#include <gtest/gtest.h>

using namespace pccx;
using namespace pccx::app;

TEST(PromptLookupDraft, ContinuesTheLatestEarlierOccurrence) {
  // "5 6" occurs twice before the end; the latest (at 4) is continued.
  EXPECT_EQ(promptLookupDraft({5, 6, 1, 2, 5, 6, 3, 4, 9, 5, 6}, 3),
            (std::vector<int32_t>{3, 4, 9}));
  // The longest n-gram wins: "7 5 6" matches at 0 though "5 6" is later.
  EXPECT_EQ(promptLookupDraft({7, 5, 6, 8, 1, 5, 6, 2, 7, 5, 6}, 2),
            (std::vector<int32_t>{8, 1}));
  // A continuation shorter than asked stops at the end of the context.
  EXPECT_EQ(promptLookupDraft({4, 4, 4}, 5), (std::vector<int32_t>{4}));
}

TEST(PromptLookupDraft, NothingWithoutAnEarlierOccurrence) {
  EXPECT_TRUE(promptLookupDraft({1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(promptLookupDraft({1}, 4).empty());
  EXPECT_TRUE(promptLookupDraft({}, 4).empty());
  EXPECT_TRUE(promptLookupDraft({3, 3, 3}, 0).empty());
}
