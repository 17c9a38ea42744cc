//===- MatFormerTests.cpp - sliced tensor views and slice rules -----------===//

#include "runtime/import/MatFormer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>
#include <vector>

using namespace pccx::import;

namespace {

/// A stored 6 x 5 f32 matrix whose element (r, c) is 10 r + c.
struct Stored {
  std::vector<float> values;
  TensorView view;
  Stored() {
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 5; ++c)
        values.push_back(float(10 * r + c));
    view.name = "m";
    view.file = "memory";
    view.dtype = DType::F32;
    view.shape = {6, 5};
    view.data = reinterpret_cast<const uint8_t *>(values.data());
    view.bytes = values.size() * 4;
  }
};

TEST(MatFormerViews, RowAndColumnRangesReadTheKeptElementsInOrder) {
  Stored s;
  TensorView v = s.view;
  v.storedColumns = 5;
  v.rowRanges = {{0, 2}, {4, 5}};   // rows 0, 1, 4
  v.columnRanges = {{1, 2}, {3, 5}}; // columns 1, 3, 4
  v.shape = {3, 3};
  v.bytes = 9 * 4;
  std::vector<float> all(9);
  std::string error;
  ASSERT_TRUE(convertToFloat(v, 0, 9, all.data(), &error)) << error;
  EXPECT_EQ(all, (std::vector<float>{1, 3, 4, 11, 13, 14, 41, 43, 44}));
  // Any sub-range, starting and ending inside runs.
  std::vector<float> part(5);
  ASSERT_TRUE(convertToFloat(v, 2, 5, part.data(), &error)) << error;
  EXPECT_EQ(part, (std::vector<float>{4, 11, 13, 14, 41}));
  EXPECT_FALSE(convertToFloat(v, 5, 5, part.data(), &error));
}

TEST(MatFormerViews, ColumnPrefixOnly) {
  Stored s;
  TensorView v = s.view;
  v.storedColumns = 5;
  v.columnRanges = {{0, 2}};
  v.shape = {6, 2};
  v.bytes = 12 * 4;
  std::vector<float> all(12);
  std::string error;
  ASSERT_TRUE(convertToFloat(v, 0, 12, all.data(), &error)) << error;
  EXPECT_EQ(all, (std::vector<float>{0, 1, 10, 11, 20, 21, 30, 31, 40, 41, 50,
                                     51}));
}

Gemma3nTextConfig e4bShaped() {
  Gemma3nTextConfig c = Gemma3nTextConfig::defaults();
  c.intermediate_size.assign(35, 128);
  return c;
}

TEST(MatFormerSlices, PublishedSlicesScaleToTheCheckpointsWidth) {
  ASSERT_EQ(publishedSlices().size(), 16u);
  MatFormerSlice s;
  std::string error;
  ASSERT_TRUE(resolveMatFormerSlice("e2.54b-LAYER", e4bShaped(), &s, &error))
      << error;
  EXPECT_EQ(s.name, "Config for E2.54B (layer-level)");
  EXPECT_TRUE(s.layersToSkip.empty());
  ASSERT_EQ(s.ffnHiddenDims.size(), 35u);
  EXPECT_EQ(s.ffnHiddenDims[0], 64);
  EXPECT_EQ(s.ffnHiddenDims[4], 128);
  // The real E4B's widths are the published ones.
  ASSERT_TRUE(resolveMatFormerSlice("E2B", Gemma3nTextConfig::defaults(), &s,
                                    &error))
      << error;
  EXPECT_EQ(s.ffnHiddenDims, std::vector<int64_t>(30, 8192));
  EXPECT_EQ(s.layersToSkip, (std::vector<int64_t>{20, 21, 22, 23, 24}));
}

TEST(MatFormerSlices, E2BOfE4BIsTheOfficialE2BShape) {
  MatFormerSlice s;
  Gemma3nTextConfig sliced;
  std::string error;
  ASSERT_TRUE(resolveMatFormerSlice("E2B", Gemma3nTextConfig::defaults(), &s,
                                    &error));
  ASSERT_TRUE(sliceConfig(Gemma3nTextConfig::defaults(), s, &sliced, &error))
      << error;
  EXPECT_EQ(sliced.num_hidden_layers, 30);
  EXPECT_EQ(sliced.num_kv_shared_layers, 10);
  EXPECT_EQ(sliced.firstKvSharedLayer(), 20);
  // Sparse layers stay the first ten; the layer types keep their pattern.
  EXPECT_EQ(sliced.activation_sparsity[9], 0.95);
  EXPECT_EQ(sliced.activation_sparsity[10], 0.0);
  EXPECT_EQ(sliced.layer_types[19], LayerType::Full);
  EXPECT_EQ(sliced.kvSourceLayer(20), 18);
  EXPECT_EQ(sliced.kvSourceLayer(24), 19);
  ASSERT_TRUE(sliced.matformer_slice.has_value());
  EXPECT_EQ(sliced.matformer_slice->layersToSkip,
            (std::vector<int64_t>{20, 21, 22, 23, 24}));
}

TEST(MatFormerSlices, RefusalsNameTheRule) {
  Gemma3nTextConfig full = e4bShaped();
  Gemma3nTextConfig out;
  std::string error;
  MatFormerSlice dup{"d", {3, 3}, std::vector<int64_t>(34, 128)};
  EXPECT_FALSE(sliceConfig(full, dup, &out, &error));
  EXPECT_NE(error.find("layer 3 is listed twice"), std::string::npos) << error;
  MatFormerSlice source{"s", {18}, std::vector<int64_t>(34, 128)};
  EXPECT_FALSE(sliceConfig(full, source, &out, &error));
  EXPECT_NE(error.find("layer 18 is the KV-sharing source"), std::string::npos)
      << error;
  MatFormerSlice zero{"z", {}, std::vector<int64_t>(35, 128)};
  zero.ffnHiddenDims[7] = 0;
  EXPECT_FALSE(sliceConfig(full, zero, &out, &error));
  EXPECT_NE(error.find("ffn_hidden_dims[7] (layer 7) is 0, not a width"),
            std::string::npos)
      << error;
  MatFormerSlice all{"a", {}, {}};
  for (int64_t l = 0; l < 35; ++l)
    all.layersToSkip.push_back(l);
  EXPECT_FALSE(sliceConfig(full, all, &out, &error));
  EXPECT_NE(error.find("keeps at least one layer"), std::string::npos) << error;
}

/// A tiny checkpoint in a fresh directory, with a slice file halving every
/// FFN; removed afterwards.
struct SliceSource {
  std::string root, src, slice;
  SliceSource() {
    char tmpl[] = "/tmp/pccx-slice-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    root = tmpl;
    src = root + "/src";
    slice = root + "/half.json";
    Gemma3nTextConfig config;
    std::string error;
    EXPECT_TRUE(presetConfig("tiny", &config, &error)) << error;
    EXPECT_TRUE(generateCheckpoint(config, src, {}, &error)) << error;
    std::ofstream(slice)
        << "{\"ffn_hidden_dims\": [64, 64, 48, 64, 48, 64, 48]}";
  }
  ~SliceSource() { std::filesystem::remove_all(root); }
};

TEST(MatFormerWriter, ASliceIsNeverWrittenOverItsSource) {
  SliceSource s;
  std::string error;
  EXPECT_FALSE(writeSlicedCheckpoint(s.src, s.slice, s.src + "/", {}, &error));
  EXPECT_NE(error.find("the output directory " + s.src +
                       "/ is the checkpoint it is cut from, " + s.src + ";"),
            std::string::npos)
      << error;
  EXPECT_FALSE(
      writeSlicedCheckpoint(s.src, s.slice, s.src + "/half", {}, &error));
  EXPECT_NE(error.find("is inside the checkpoint it is cut from"),
            std::string::npos)
      << error;
  CheckpointWriteOptions overwrite;
  overwrite.overwrite = true;
  EXPECT_FALSE(
      writeSlicedCheckpoint(s.src, s.slice, s.root, overwrite, &error));
  EXPECT_NE(error.find("holds the checkpoint it is cut from"),
            std::string::npos)
      << error;
  EXPECT_TRUE(std::filesystem::exists(s.src + "/model.safetensors"));
}

TEST(MatFormerWriter, OnlyKnownCompanionsFromInsideTheCheckpointAreCopied) {
  SliceSource s;
  std::ofstream(s.src + "/tokenizer.model") << "pieces";
  std::ofstream(s.src + "/notes.md") << "not a companion";
  std::ofstream(s.root + "/secret") << "outside";
  ASSERT_EQ(symlink("../secret", (s.src + "/special_tokens_map.json").c_str()),
            0);
  std::string error;
  EXPECT_FALSE(
      writeSlicedCheckpoint(s.src, s.slice, s.root + "/leak", {}, &error));
  EXPECT_NE(error.find(s.src + "/special_tokens_map.json: a symlink to "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("/secret, outside the checkpoint "), std::string::npos)
      << error;
  EXPECT_FALSE(std::filesystem::exists(s.root + "/leak"));

  std::filesystem::remove(s.src + "/special_tokens_map.json");
  ASSERT_TRUE(
      writeSlicedCheckpoint(s.src, s.slice, s.root + "/out", {}, &error))
      << error;
  std::vector<std::string> names;
  for (const auto &e : std::filesystem::directory_iterator(s.root + "/out"))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"config.json", "model.safetensors",
                                             "tokenizer.model"}));
  std::ifstream copied(s.root + "/out/tokenizer.model");
  std::string text((std::istreambuf_iterator<char>(copied)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "pieces");
}

} // namespace
