//===- ImportTests.cpp - safetensors reader/writer, Gemma 3n config -------===//
//
// Malformed inputs are generated into a temporary directory, one per error
// path, and each is checked against the substring its message must carry.
// Expected config values are transformers' Gemma3nTextConfig defaults.
//===----------------------------------------------------------------------===//

#include "runtime/import/CheckpointGenerator.h"
#include "runtime/import/Gemma3nConfig.h"
#include "runtime/import/Safetensors.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

using namespace pccx::import;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

::testing::AssertionResult contains(const std::string &text,
                                    const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\" does not contain \"" << part << "\"";
}

/// Whether a writer's temp file for `path` (PATH.tmp.PID.N) exists.
bool tempFileExists(const std::string &path) {
  const fs::path p(path);
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(p.parent_path(), ec))
    if (e.path().filename().string().rfind(p.filename().string() + ".tmp.",
                                           0) == 0)
      return true;
  return false;
}

class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/pccx-import-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!::mkdtemp(buffer.data()))
      std::abort();
    path_ = buffer.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  std::string sub(const std::string &name) const {
    fs::create_directories(file(name));
    return file(name);
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

std::string le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// A safetensors image: length prefix, header text, `dataBytes` bytes.
std::string image(const std::string &header, size_t dataBytes) {
  return le64(header.size()) + header + std::string(dataBytes, '\0');
}

std::string openError(const std::string &path) {
  std::string error;
  auto file = SafetensorsFile::open(path, &error);
  EXPECT_EQ(file, nullptr) << path;
  return error;
}

std::string checkpointError(const std::string &dir) {
  std::string error;
  auto ckpt = Checkpoint::open(dir, &error);
  EXPECT_EQ(ckpt, nullptr) << dir;
  return error;
}

// Writes one safetensors file holding F32 tensors named `names`, each [2].
void writeF32File(const std::string &path,
                  const std::vector<std::string> &names, float base = 0) {
  SafetensorsWriter writer;
  std::string error;
  for (const auto &name : names)
    ASSERT_TRUE(writer.declare(name, DType::F32, {2}, &error)) << error;
  ASSERT_TRUE(writer.begin(path, &error)) << error;
  float v = base;
  for (const auto &name : writer.order()) {
    float values[2] = {v, v + 1};
    v += 2;
    ASSERT_TRUE(writer.writeFloats(name, values, 2, &error)) << error;
  }
  ASSERT_TRUE(writer.finish(&error)) << error;
}

//===----------------------------------------------------------------------===//
// Scalar conversions
//===----------------------------------------------------------------------===//

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(Conversions, KnownValues) {
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(f16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(f16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(0x8000), -0.0f);
  EXPECT_TRUE(std::signbit(f16ToFloat(0x8000)));
  EXPECT_TRUE(std::isinf(f16ToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7e00)));

  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 lies halfway between bf16 neighbours: ties to even (down).
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 ties between 0x3f81 and 0x3f82: to even (up).
  EXPECT_EQ(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  uint16_t nan = floatToBf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
  // A signalling NaN whose payload lives in the low bits stays a NaN.
  float snan;
  uint32_t snanBits = 0x7f800001u;
  std::memcpy(&snan, &snanBits, 4);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(snan))));

  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65519.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00);
  EXPECT_EQ(floatToF16(-1e9f), 0xfc00);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000); // tie to even zero
  EXPECT_EQ(floatToF16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -25)), 0x0002); // 1.5 ulp ties up
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  // Largest subnormal plus half an ulp rounds (to even) into the normals.
  EXPECT_EQ(floatToF16(std::ldexp(2047.0f, -25)), 0x0400);
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(
      f16ToFloat(floatToF16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Conversions, HalfTypesRoundTripEveryValue) {
  for (uint32_t i = 0; i < 0x10000; ++i) {
    uint16_t h = static_cast<uint16_t>(i);
    float f = f16ToFloat(h);
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(f))));
    else
      EXPECT_EQ(floatToF16(f), h) << std::hex << i;
    float b = bf16ToFloat(h);
    if (std::isnan(b))
      EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(b))));
    else
      EXPECT_EQ(floatToBf16(b), h) << std::hex << i;
  }
}

TEST(Conversions, DTypeNames) {
  DType d;
  EXPECT_TRUE(parseDType("BF16", &d));
  EXPECT_EQ(d, DType::BF16);
  EXPECT_STREQ(dtypeName(DType::F16), "F16");
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_FALSE(parseDType("I64", &d));
  EXPECT_EQ(formatShape({3, 4}), "[3, 4]");
  EXPECT_EQ(formatShape({}), "[]");
}

//===----------------------------------------------------------------------===//
// Reading single files
//===----------------------------------------------------------------------===//

TEST(SafetensorsRead, ValidFile) {
  TempDir tmp;
  // Data: a F32 [2] = {1.5, -2}, b BF16 [2,1] = {1, -2}, c F16 [] = 0.5,
  // e F32 [0, 3] (empty).
  std::string data;
  auto put32 = [&](float f) {
    uint32_t b = bitsOf(f);
    for (int i = 0; i < 4; ++i)
      data.push_back(static_cast<char>(b >> (8 * i)));
  };
  auto put16 = [&](uint16_t b) {
    data.push_back(static_cast<char>(b & 0xff));
    data.push_back(static_cast<char>(b >> 8));
  };
  put32(1.5f);
  put32(-2.0f);
  put16(0x3f80);
  put16(0xc000);
  put16(0x3800);
  std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"BF16","shape":[2,1],"data_offsets":[8,12]},)"
      R"("c":{"dtype":"F16","shape":[],"data_offsets":[12,14]},)"
      R"("e":{"dtype":"F32","shape":[0,3],"data_offsets":[14,14]}})";
  std::string path = tmp.file("ok.safetensors");
  writeFile(path, le64(header.size()) + header + data);

  std::string error;
  auto file = SafetensorsFile::open(path, &error);
  ASSERT_NE(file, nullptr) << error;
  EXPECT_EQ(file->path(), path);
  EXPECT_EQ(file->tensors().size(), 4u);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->find("zzz"), nullptr);

  const TensorView *a = file->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "a");
  EXPECT_EQ(a->file, path);
  EXPECT_EQ(a->dtype, DType::F32);
  EXPECT_EQ(a->shape, std::vector<int64_t>({2}));
  EXPECT_EQ(a->bytes, 8u);
  float out[2] = {0, 0};
  ASSERT_TRUE(convertToFloat(*a, 0, 2, out, &error)) << error;
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);

  const TensorView *b = file->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->numElements(), 2u);
  ASSERT_TRUE(convertToFloat(*b, 1, 1, out, &error)) << error;
  EXPECT_EQ(out[0], -2.0f);

  const TensorView *c = file->find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->numElements(), 1u);
  ASSERT_TRUE(convertToFloat(*c, 0, 1, out, &error)) << error;
  EXPECT_EQ(out[0], 0.5f);

  const TensorView *e = file->find("e");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->numElements(), 0u);
  EXPECT_EQ(e->bytes, 0u);
  EXPECT_TRUE(convertToFloat(*e, 0, 0, out, &error));

  // A range past the end is refused and names tensor and file.
  EXPECT_FALSE(convertToFloat(*b, 1, 2, out, &error));
  EXPECT_TRUE(contains(error, "'b'"));
  EXPECT_TRUE(contains(error, path));
  EXPECT_TRUE(contains(error, "outside its 2 elements"));
}

struct BadFile {
  const char *name;
  std::function<std::string()> bytes;
  const char *message;
  const char *tensor; // must also appear in the message, or null
};

std::string headerOnly(const std::string &header, size_t dataBytes = 8) {
  return image(header, dataBytes);
}

std::string entry(const std::string &name, const std::string &body) {
  return "{\"" + name + "\":" + body + "}";
}

TEST(SafetensorsRead, MalformedFiles) {
  const std::vector<BadFile> cases = {
      {"empty", [] { return std::string(); }, "file too small", nullptr},
      {"short", [] { return std::string(5, '\0'); }, "file too small", nullptr},
      {"huge_header", [] { return le64(100000001) + "{}"; },
       "header length 100000001 exceeds the limit of 100000000", nullptr},
      {"header_past_end", [] { return le64(64) + "{}"; },
       "header length 64 runs past the end of the file (10 bytes)", nullptr},
      {"not_json", [] { return headerOnly("{\"a\":"); },
       "header is not valid JSON", nullptr},
      {"not_object", [] { return headerOnly("[1,2]"); },
       "header is not a JSON object", nullptr},
      {"duplicate",
       [] {
         return headerOnly(
             R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
             R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})");
       },
       "header names 'w' more than once", "'w'"},
      {"empty_name",
       [] {
         return headerOnly(
             entry("", R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"));
       },
       "tensor with an empty name", nullptr},
      {"entry_not_object", [] { return headerOnly(entry("w", "[1]")); },
       "header entry is not a JSON object", "'w'"},
      {"missing_dtype",
       [] {
         return headerOnly(entry("w", R"({"shape":[1],"data_offsets":[0,4]})"));
       },
       "missing or non-string \"dtype\"", "'w'"},
      {"int_dtype",
       [] {
         return headerOnly(
             entry("w", R"({"dtype":"I64","shape":[1],"data_offsets":[0,8]})"));
       },
       "unsupported dtype I64", "'w'"},
      {"u8_dtype",
       [] {
         return headerOnly(
             entry("w", R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})"));
       },
       "unsupported dtype U8", "'w'"},
      {"unknown_dtype",
       [] {
         return headerOnly(
             entry("w", R"({"dtype":"Q4","shape":[1],"data_offsets":[0,4]})"));
       },
       "unknown dtype 'Q4'", "'w'"},
      {"shape_not_array",
       [] {
         return headerOnly(
             entry("w", R"({"dtype":"F32","shape":4,"data_offsets":[0,4]})"));
       },
       "missing or non-array \"shape\"", "'w'"},
      {"negative_dim",
       [] {
         return headerOnly(entry(
             "w", R"({"dtype":"F32","shape":[1,-1],"data_offsets":[0,4]})"));
       },
       "shape entry 1 is not a non-negative integer", "'w'"},
      {"fractional_dim",
       [] {
         return headerOnly(entry(
             "w", R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,4]})"));
       },
       "shape entry 0 is not a non-negative integer", "'w'"},
      {"overflowing_shape",
       [] {
         return headerOnly(entry("w", R"({"dtype":"F32",)"
                                      R"("shape":[4611686018427387904,4],)"
                                      R"("data_offsets":[0,4]})"));
       },
       "shape [4611686018427387904, 4] is too large to address", "'w'"},
      {"offsets_missing",
       [] { return headerOnly(entry("w", R"({"dtype":"F32","shape":[1]})")); },
       "\"data_offsets\" is not a pair of non-negative integers", "'w'"},
      {"offsets_three",
       [] {
         return headerOnly(entry(
             "w", R"({"dtype":"F32","shape":[1],"data_offsets":[0,4,8]})"));
       },
       "\"data_offsets\" is not a pair of non-negative integers", "'w'"},
      {"offsets_negative",
       [] {
         return headerOnly(entry(
             "w", R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})"));
       },
       "\"data_offsets\" is not a pair of non-negative integers", "'w'"},
      {"offsets_reversed",
       [] {
         return headerOnly(
             entry("w", R"({"dtype":"F32","shape":[1],"data_offsets":[8,4]})"));
       },
       "data_offsets [8, 4] are reversed", "'w'"},
      {"offsets_past_data",
       [] {
         return headerOnly(entry("w", R"({"dtype":"F32","shape":[2],)"
                                      R"("data_offsets":[4,12]})"));
       },
       "data_offsets [4, 12] lie outside the data section of 8 bytes", "'w'"},
      {"size_mismatch",
       [] {
         return headerOnly(
             entry("w", R"({"dtype":"F32","shape":[2],"data_offsets":[0,6]})"));
       },
       "span 6 bytes but shape [2] of F32 needs 8", "'w'"},
      {"overlap",
       [] {
         return headerOnly(
             R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
             R"("y":{"dtype":"BF16","shape":[2],"data_offsets":[2,6]}})");
       },
       "tensors 'x' and 'y' overlap in the data section", "'y'"},
      {"metadata_not_object",
       [] { return headerOnly(R"({"__metadata__":[1]})"); },
       "__metadata__ is not a JSON object", nullptr},
      {"metadata_value",
       [] { return headerOnly(R"({"__metadata__":{"k":1}})"); },
       "__metadata__ value for 'k' is not a string", nullptr},
  };
  TempDir tmp;
  for (const BadFile &c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = tmp.file(std::string(c.name) + ".safetensors");
    writeFile(path, c.bytes());
    std::string error = openError(path);
    EXPECT_TRUE(contains(error, c.message));
    EXPECT_TRUE(contains(error, path + ": "));
    if (c.tensor) {
      EXPECT_TRUE(contains(error, c.tensor));
    }
  }
}

TEST(SafetensorsRead, MissingFileAndDirectory) {
  TempDir tmp;
  std::string missing = tmp.file("nope.safetensors");
  EXPECT_TRUE(contains(openError(missing), missing + ": cannot read"));
  EXPECT_TRUE(contains(openError(tmp.path()), "not a regular file"));
}

TEST(SafetensorsRead, HeaderPaddingAndHolesAreAccepted) {
  TempDir tmp;
  // Trailing spaces in the header (the writer's padding) and unused bytes
  // between tensors are both legal.
  std::string header =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}    )";
  std::string path = tmp.file("pad.safetensors");
  writeFile(path, image(header, 8));
  std::string error;
  auto file = SafetensorsFile::open(path, &error);
  ASSERT_NE(file, nullptr) << error;
  EXPECT_EQ(file->find("a")->bytes, 4u);
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

TEST(SafetensorsWrite, RoundTrip) {
  TempDir tmp;
  std::string path = tmp.file("out.safetensors");
  std::vector<float> big(10000);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<float>(i) * 0.25f - 7.0f;

  auto writeOnce = [&](const std::string &target) {
    SafetensorsWriter writer;
    std::string error;
    ASSERT_TRUE(writer.setMetadata("format", "pt", &error));
    // Declared out of order on purpose: data follows sorted names.
    ASSERT_TRUE(writer.declare("z.big", DType::BF16, {100, 100}, &error));
    ASSERT_TRUE(writer.declare("a.f32", DType::F32, {3}, &error));
    ASSERT_TRUE(writer.declare("m.empty", DType::F32, {0}, &error));
    ASSERT_TRUE(writer.declare("n.f16", DType::F16, {2}, &error));
    ASSERT_TRUE(writer.declare("s.scalar", DType::BF16, {}, &error));
    EXPECT_EQ(writer.order(),
              std::vector<std::string>(
                  {"a.f32", "m.empty", "n.f16", "s.scalar", "z.big"}));
    ASSERT_TRUE(writer.begin(target, &error)) << error;
    EXPECT_TRUE(tempFileExists(target));
    float a[3] = {1, 2, 3};
    ASSERT_TRUE(writer.writeFloats("a.f32", a, 1, &error)) << error;
    ASSERT_TRUE(writer.writeFloats("a.f32", a + 1, 2, &error)) << error;
    // m.empty has no bytes and may be skipped.
    uint16_t f16[2] = {0x3c00, 0xc000}; // raw little-endian host words
    ASSERT_TRUE(writer.writeBytes("n.f16", f16, 4, &error)) << error;
    float s = 3.0f;
    ASSERT_TRUE(writer.writeFloats("s.scalar", &s, 1, &error)) << error;
    // Streamed in uneven chunks.
    ASSERT_TRUE(writer.writeFloats("z.big", big.data(), 4097, &error));
    ASSERT_TRUE(
        writer.writeFloats("z.big", big.data() + 4097, 10000 - 4097, &error))
        << error;
    ASSERT_TRUE(writer.finish(&error)) << error;
    EXPECT_FALSE(tempFileExists(target));
  };
  writeOnce(path);

  std::string bytes = readFile(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ((8 + headerBytes) % 8, 0u);
  std::string header = bytes.substr(8, headerBytes);
  EXPECT_EQ(header.find("{\"__metadata__\":{\"format\":\"pt\"},\"a.f32\":"), 0u)
      << header;
  EXPECT_EQ(bytes.size(), 8 + headerBytes + 12 + 0 + 4 + 2 + 20000);

  std::string error;
  auto file = SafetensorsFile::open(path, &error);
  ASSERT_NE(file, nullptr) << error;
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->tensors().size(), 5u);
  std::vector<float> out(10000);
  ASSERT_TRUE(convertToFloat(*file->find("a.f32"), 0, 3, out.data(), &error));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[2], 3.0f);
  ASSERT_TRUE(convertToFloat(*file->find("n.f16"), 0, 2, out.data(), &error));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  ASSERT_TRUE(
      convertToFloat(*file->find("s.scalar"), 0, 1, out.data(), &error));
  EXPECT_EQ(out[0], 3.0f);
  const TensorView *zb = file->find("z.big");
  EXPECT_EQ(zb->shape, std::vector<int64_t>({100, 100}));
  EXPECT_EQ(zb->dtype, DType::BF16);
  // Streamed read in pieces matches the rounded input.
  for (uint64_t first = 0; first < 10000; first += 3000) {
    uint64_t n = std::min<uint64_t>(3000, 10000 - first);
    ASSERT_TRUE(convertToFloat(*zb, first, n, out.data() + first, &error));
  }
  for (size_t i = 0; i < big.size(); ++i)
    ASSERT_EQ(out[i], bf16ToFloat(floatToBf16(big[i]))) << i;

  // The same input gives the same bytes.
  std::string again = tmp.file("again.safetensors");
  writeOnce(again);
  EXPECT_EQ(readFile(again), bytes);
}

TEST(SafetensorsWrite, Misuse) {
  TempDir tmp;
  std::string path = tmp.file("bad.safetensors");
  std::string error;
  {
    SafetensorsWriter writer;
    ASSERT_TRUE(writer.declare("a", DType::F32, {2}, &error));
    EXPECT_FALSE(writer.declare("a", DType::F32, {2}, &error));
    EXPECT_TRUE(contains(error, "'a': declared twice"));
    EXPECT_FALSE(writer.declare("", DType::F32, {2}, &error));
    EXPECT_TRUE(contains(error, "invalid tensor name"));
    EXPECT_FALSE(writer.declare("__metadata__", DType::F32, {2}, &error));
    EXPECT_FALSE(writer.declare("neg", DType::F32, {2, -1}, &error));
    EXPECT_TRUE(contains(error, "negative dimension"));
    EXPECT_FALSE(writer.declare("huge", DType::F32,
                                {int64_t(1) << 62, int64_t(1) << 62}, &error));
    EXPECT_TRUE(contains(error, "too large"));
    ASSERT_TRUE(writer.declare("b", DType::BF16, {2}, &error));

    float v[4] = {1, 2, 3, 4};
    EXPECT_FALSE(writer.writeFloats("a", v, 2, &error));
    EXPECT_TRUE(contains(error, "not writing"));
    ASSERT_TRUE(writer.begin(path, &error)) << error;
    EXPECT_FALSE(writer.declare("c", DType::F32, {2}, &error));
    EXPECT_TRUE(contains(error, "declared after begin()"));
    EXPECT_FALSE(writer.setMetadata("k", "v", &error));
    EXPECT_FALSE(writer.begin(path, &error));

    EXPECT_FALSE(writer.writeFloats("nope", v, 1, &error));
    EXPECT_TRUE(contains(error, "'nope': was never declared"));
    EXPECT_FALSE(writer.writeFloats("b", v, 1, &error));
    EXPECT_TRUE(contains(error, "'b': written out of order: 'a' has 0 of 8"));
    EXPECT_FALSE(writer.writeFloats("a", v, 3, &error));
    EXPECT_TRUE(contains(error, "writing 12 bytes exceeds its 8 bytes"));
    ASSERT_TRUE(writer.writeFloats("a", v, 2, &error)) << error;
    ASSERT_TRUE(writer.writeFloats("b", v, 1, &error)) << error;
    EXPECT_FALSE(writer.writeFloats("a", v, 1, &error));
    EXPECT_TRUE(contains(error, "already complete"));

    EXPECT_FALSE(writer.finish(&error));
    EXPECT_TRUE(contains(error, "'b' is incomplete: 2 of 4 bytes written"));
    EXPECT_FALSE(fs::exists(path));
    EXPECT_FALSE(tempFileExists(path));
    EXPECT_FALSE(writer.finish(&error));
  }
  {
    // Dropping a writer mid-stream leaves nothing behind.
    SafetensorsWriter writer;
    ASSERT_TRUE(writer.declare("a", DType::F32, {2}, &error));
    ASSERT_TRUE(writer.begin(path, &error));
    EXPECT_TRUE(tempFileExists(path));
  }
  EXPECT_FALSE(tempFileExists(path));
  EXPECT_FALSE(fs::exists(path));
  {
    SafetensorsWriter writer;
    ASSERT_TRUE(writer.declare("a", DType::F32, {2}, &error));
    EXPECT_FALSE(writer.begin(tmp.file("no/such/dir/x.safetensors"), &error));
    EXPECT_TRUE(contains(error, "cannot create"));
  }
  {
    SafetensorsWriter writer;
    ASSERT_TRUE(writer.declare("bad\xff", DType::F32, {1}, &error));
    EXPECT_FALSE(writer.begin(path, &error));
    EXPECT_TRUE(contains(error, "must be valid UTF-8"));
    EXPECT_FALSE(tempFileExists(path));
  }
}

//===----------------------------------------------------------------------===//
// Checkpoints (single and sharded)
//===----------------------------------------------------------------------===//

TEST(Checkpoint, SingleFile) {
  TempDir tmp;
  std::string dir = tmp.sub("single");
  writeF32File(dir + "/model.safetensors", {"b", "a", "c"});
  std::string error;
  auto ckpt = Checkpoint::open(dir, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  EXPECT_EQ(ckpt->source(), dir);
  EXPECT_EQ(ckpt->names(), std::vector<std::string>({"a", "b", "c"}));
  EXPECT_EQ(ckpt->size(), 3u);
  EXPECT_EQ(ckpt->files().size(), 1u);
  EXPECT_TRUE(ckpt->indexMetadata().empty());
  const TensorView *b = ckpt->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->file, dir + "/model.safetensors");
  float out[2];
  ASSERT_TRUE(convertToFloat(*b, 0, 2, out, &error));
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(ckpt->find("d"), nullptr);

  // A path to the file itself works as well.
  auto direct = Checkpoint::open(dir + "/model.safetensors", &error);
  ASSERT_NE(direct, nullptr) << error;
  EXPECT_EQ(direct->size(), 3u);
}

TEST(Checkpoint, OpenErrors) {
  TempDir tmp;
  std::string empty = tmp.sub("empty");
  EXPECT_TRUE(contains(checkpointError(empty),
                       "no model.safetensors or model.safetensors.index.json"));
  EXPECT_TRUE(
      contains(checkpointError(tmp.file("absent")), "cannot open checkpoint"));
  std::string broken = tmp.sub("broken");
  writeFile(broken + "/model.safetensors", "xx");
  EXPECT_TRUE(contains(checkpointError(broken),
                       broken + "/model.safetensors: file too small"));
}

std::string index(const json &weightMap) {
  return json({{"metadata", {{"total_size", 32}, {"format", "pt"}}},
               {"weight_map", weightMap}})
      .dump(2);
}

TEST(Checkpoint, ShardedRoundTrip) {
  TempDir tmp;
  std::string dir = tmp.sub("sharded");
  writeF32File(dir + "/model-00001-of-00002.safetensors", {"x", "a"}, 0);
  writeF32File(dir + "/model-00002-of-00002.safetensors", {"b", "y"}, 10);
  writeFile(dir + "/model.safetensors.index.json",
            index({{"a", "model-00001-of-00002.safetensors"},
                   {"x", "model-00001-of-00002.safetensors"},
                   {"b", "model-00002-of-00002.safetensors"},
                   {"y", "model-00002-of-00002.safetensors"}}));
  // An index takes precedence over a stray single file.
  writeF32File(dir + "/model.safetensors", {"stray"});
  std::string error;
  auto ckpt = Checkpoint::open(dir, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  EXPECT_EQ(ckpt->names(), std::vector<std::string>({"a", "b", "x", "y"}));
  EXPECT_EQ(ckpt->files().size(), 2u);
  EXPECT_EQ(ckpt->indexMetadata().at("total_size"), "32");
  EXPECT_EQ(ckpt->indexMetadata().at("format"), "pt");
  const TensorView *y = ckpt->find("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->file, dir + "/model-00002-of-00002.safetensors");
  float out[2];
  ASSERT_TRUE(convertToFloat(*y, 0, 2, out, &error));
  EXPECT_EQ(out[0], 12.0f); // b holds 10, 11; y 12, 13
  EXPECT_EQ(ckpt->find("stray"), nullptr);
}

TEST(Checkpoint, ShardedErrors) {
  struct Case {
    const char *name;
    std::string index;
    const char *message;
  };
  const std::string one = "one.safetensors", two = "two.safetensors";
  const std::vector<Case> cases = {
      {"not_json", "{\"weight_map\":", "not valid JSON"},
      {"not_object", "[]", "not a JSON object"},
      {"no_weight_map", R"({"metadata":{}})", "missing \"weight_map\" object"},
      {"weight_map_array", R"({"weight_map":[]})",
       "missing \"weight_map\" object"},
      {"empty_weight_map", R"({"weight_map":{}})", "\"weight_map\" is empty"},
      {"metadata_array",
       R"({"metadata":[],"weight_map":{"a":"one.safetensors"}})",
       "\"metadata\" is not a JSON object"},
      {"entry_not_string", R"({"weight_map":{"a":1}})",
       "weight_map entry for 'a' is not a string"},
      {"escaping_path", R"({"weight_map":{"a":"../one.safetensors"}})",
       "names file '../one.safetensors' outside the checkpoint directory"},
      {"absolute_path", R"({"weight_map":{"a":"/etc/one.safetensors"}})",
       "outside the checkpoint directory"},
      {"duplicate_key",
       R"({"weight_map":{"a":"one.safetensors","a":"two.safetensors"}})",
       "weight_map lists tensor 'a' more than once"},
      {"missing_file",
       index({{"a", one}, {"b", one}, {"q", "three.safetensors"}}),
       "weight_map maps 'q' to 'three.safetensors', which does not exist"},
      {"tensor_not_in_file", index({{"a", one}, {"b", one}, {"zz", one}}),
       "weight_map maps 'zz' to 'one.safetensors', which does not contain it"},
      {"tensor_in_other_file", index({{"a", two}, {"b", one}, {"c", two}}),
       "weight_map maps 'a' to 'two.safetensors', but it is stored in "
       "'one.safetensors'"},
      {"unlisted_tensor", index({{"a", one}}),
       "tensor 'b' in 'one.safetensors' is not listed in weight_map"},
  };
  TempDir tmp;
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    std::string dir = tmp.sub(c.name);
    writeF32File(dir + "/" + one, {"a", "b"});
    writeF32File(dir + "/" + two, {"c"});
    std::string indexPath = dir + "/model.safetensors.index.json";
    writeFile(indexPath, c.index);
    std::string error = checkpointError(dir);
    EXPECT_TRUE(contains(error, indexPath + ": "));
    EXPECT_TRUE(contains(error, c.message));
  }

  // A tensor stored in two shards.
  std::string dir = tmp.sub("twice");
  writeF32File(dir + "/" + one, {"a", "b"});
  writeF32File(dir + "/" + two, {"b", "c"});
  writeFile(dir + "/model.safetensors.index.json",
            index({{"a", one}, {"b", one}, {"c", two}}));
  EXPECT_TRUE(contains(checkpointError(dir),
                       "tensor 'b' appears in both 'one.safetensors' and "
                       "'two.safetensors'"));

  // A malformed shard reports the shard's own path.
  std::string bad = tmp.sub("bad_shard");
  writeF32File(bad + "/" + one, {"a"});
  writeFile(bad + "/" + two, le64(3) + "{x}");
  writeFile(bad + "/model.safetensors.index.json",
            index({{"a", one}, {"c", two}}));
  EXPECT_TRUE(contains(checkpointError(bad),
                       bad + "/" + two + ": header is not valid JSON"));
}

//===----------------------------------------------------------------------===//
// Checkpoint writer: whole directories, never over another unasked
//===----------------------------------------------------------------------===//

std::vector<std::string> entriesOf(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CheckpointWriter, AnOldCheckpointIsRefusedOrReplacedWhole) {
  TempDir tmp;
  Gemma3nTextConfig config;
  std::string error;
  ASSERT_TRUE(presetConfig("tiny", &config, &error)) << error;
  const std::string dir = tmp.file("ckpt");
  GeneratorOptions sharded;
  sharded.maxShardBytes = 64 << 10;
  ASSERT_TRUE(generateCheckpoint(config, dir, sharded, &error)) << error;
  const std::vector<std::string> old = entriesOf(dir);
  ASSERT_TRUE(fs::exists(dir + "/model.safetensors.index.json"));

  // One file over shards: the importer would follow the old index.
  GeneratorOptions single;
  single.seed = 5;
  EXPECT_FALSE(generateCheckpoint(config, dir, single, &error));
  EXPECT_TRUE(contains(error, dir +
                                  ": already holds a checkpoint (config.json, "
                                  "model.safetensors.index.json, "));
  EXPECT_EQ(entriesOf(dir), old);
  EXPECT_FALSE(tempFileExists(dir));

  single.overwrite = true;
  ASSERT_TRUE(generateCheckpoint(config, dir, single, &error)) << error;
  EXPECT_EQ(entriesOf(dir),
            std::vector<std::string>({"config.json", "model.safetensors"}));
  EXPECT_FALSE(tempFileExists(dir));
  auto ckpt = Checkpoint::open(dir, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  EXPECT_EQ(ckpt->files().size(), 1u);
}

TEST(CheckpointWriter, OutputDirectoryChecks) {
  TempDir tmp;
  std::string error;
  EXPECT_TRUE(checkCheckpointOutput(tmp.file("missing"), false, &error));
  EXPECT_TRUE(checkCheckpointOutput(tmp.sub("empty"), false, &error));
  const std::string notes = tmp.sub("notes");
  writeFile(notes + "/todo.txt", "x");
  EXPECT_FALSE(checkCheckpointOutput(notes, false, &error));
  EXPECT_TRUE(contains(error, notes + ": is not empty (todo.txt)"));
  EXPECT_TRUE(checkCheckpointOutput(notes, true, &error)) << error;
  fs::create_directories(notes + "/.git");
  EXPECT_FALSE(checkCheckpointOutput(notes, true, &error));
  EXPECT_TRUE(contains(error, notes + ": holds the directory '.git'"));
  EXPECT_FALSE(checkCheckpointOutput(notes + "/todo.txt", true, &error));
  EXPECT_TRUE(contains(error, "exists and is not a directory"));
}

//===----------------------------------------------------------------------===//
// Gemma 3n config
//===----------------------------------------------------------------------===//

Gemma3nTextConfig parseOk(const std::string &text) {
  Gemma3nTextConfig config;
  std::string error;
  EXPECT_TRUE(parseGemma3nConfig(text, &config, &error)) << error;
  return config;
}

std::string parseError(const std::string &text) {
  Gemma3nTextConfig config;
  std::string error;
  EXPECT_FALSE(parseGemma3nConfig(text, &config, &error)) << text;
  return error;
}

void expectE4BDefaults(const Gemma3nTextConfig &c) {
  EXPECT_EQ(c.vocab_size, 262400);
  EXPECT_EQ(c.vocab_size_per_layer_input, 262144);
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.hidden_size_per_layer_input, 256);
  EXPECT_EQ(c.num_hidden_layers, 35);
  EXPECT_EQ(c.intermediate_size, std::vector<int64_t>(35, 16384));
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 256);
  ASSERT_EQ(c.layer_types.size(), 35u);
  for (int i = 0; i < 35; ++i)
    EXPECT_EQ(c.layer_types[i],
              (i + 1) % 5 == 0 ? LayerType::Full : LayerType::Sliding)
        << i;
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_EQ(c.rope_theta_full, 1000000.0);
  EXPECT_EQ(c.rope_theta_sliding, 10000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  ASSERT_TRUE(c.final_logit_softcapping.has_value());
  EXPECT_EQ(*c.final_logit_softcapping, 30.0);
  std::vector<double> sparsity(35, 0.0);
  std::fill(sparsity.begin(), sparsity.begin() + 10, 0.95);
  EXPECT_EQ(c.activation_sparsity, sparsity);
  EXPECT_EQ(c.num_kv_shared_layers, 15);
  EXPECT_EQ(c.altup_num_inputs, 4);
  EXPECT_EQ(c.altup_active_idx, 0);
  ASSERT_TRUE(c.altup_coef_clip.has_value());
  EXPECT_EQ(*c.altup_coef_clip, 120.0);
  EXPECT_TRUE(c.altup_correct_scale);
  EXPECT_EQ(c.laurel_rank, 64);
  EXPECT_EQ(c.hidden_activation, "gelu_pytorch_tanh");
  EXPECT_FALSE(c.query_pre_attn_scalar.has_value());
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, std::optional<int64_t>(2));
  EXPECT_EQ(c.pad_token_id, std::optional<int64_t>(0));
  EXPECT_EQ(c.eos_token_id, std::vector<int64_t>({1}));
}

void expectSameConfig(const Gemma3nTextConfig &a, const Gemma3nTextConfig &b) {
  EXPECT_EQ(a.toJson(), b.toJson());
}

TEST(Gemma3nConfig, E4BDefaults) {
  expectE4BDefaults(Gemma3nTextConfig::defaults());
  expectE4BDefaults(parseOk(R"({"model_type":"gemma3n","text_config":{}})"));
  expectE4BDefaults(parseOk(R"({"model_type":"gemma3n"})"));
  expectE4BDefaults(parseOk(R"({"model_type":"gemma3n","text_config":null})"));
  expectE4BDefaults(parseOk(R"({"model_type":"gemma3n_text"})"));
  expectE4BDefaults(parseOk("{}"));
}

TEST(Gemma3nConfig, KvSharingE4B) {
  Gemma3nTextConfig c = Gemma3nTextConfig::defaults();
  EXPECT_EQ(c.firstKvSharedLayer(), 20);
  for (int64_t i = 0; i < 20; ++i) {
    EXPECT_FALSE(c.isKvShared(i)) << i;
    EXPECT_EQ(c.kvSourceLayer(i), -1) << i;
    EXPECT_EQ(c.kvCacheLayer(i), i) << i;
  }
  for (int64_t i = 20; i < 35; ++i) {
    EXPECT_TRUE(c.isKvShared(i)) << i;
    int64_t expected = c.layer_types[i] == LayerType::Full ? 19 : 18;
    EXPECT_EQ(c.kvSourceLayer(i), expected) << i;
    EXPECT_EQ(c.kvCacheLayer(i), expected) << i;
  }
  EXPECT_EQ(c.kvSourceLayer(24), 19);
  EXPECT_EQ(c.kvSourceLayer(20), 18);
  EXPECT_EQ(c.kvSourceLayer(34), 19);
  EXPECT_FALSE(c.isKvShared(35));
  EXPECT_EQ(c.kvSourceLayer(-1), -1);
}

// Shaped like the released E2B text_config (values as published; vision and
// audio sections abbreviated).
const char *kE2B = R"({
  "architectures": ["Gemma3nForConditionalGeneration"],
  "model_type": "gemma3n",
  "audio_config": {"model_type": "gemma3n_audio", "hidden_size": 1536},
  "vision_config": {"model_type": "gemma3n_vision", "architecture": "mobilenetv5_300m_enc"},
  "eos_token_id": [1, 106],
  "text_config": {
    "model_type": "gemma3n_text",
    "activation_sparsity_pattern": [0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95,
      0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
      0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    "altup_active_idx": 0, "altup_coef_clip": 120.0, "altup_correct_scale": true,
    "altup_lr_multiplier": 1.0, "altup_num_inputs": 4,
    "attention_bias": false, "attention_dropout": 0.0,
    "final_logit_softcapping": 30.0, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2048,
    "hidden_size_per_layer_input": 256, "initializer_range": 0.02,
    "intermediate_size": [8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192,
      8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192,
      8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192],
    "laurel_rank": 64,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "max_position_embeddings": 32768, "num_attention_heads": 8,
    "num_hidden_layers": 30, "num_key_value_heads": 2, "num_kv_shared_layers": 10,
    "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
    "rope_local_base_freq": 10000.0, "rope_scaling": null, "rope_theta": 1000000.0,
    "sliding_window": 512, "torch_dtype": "bfloat16", "use_cache": true,
    "vocab_size": 262400, "vocab_size_per_layer_input": 262144
  },
  "torch_dtype": "bfloat16",
  "transformers_version": "4.53.0.dev0"
})";

TEST(Gemma3nConfig, E2BMultimodalWrapper) {
  Gemma3nTextConfig c = parseOk(kE2B);
  EXPECT_EQ(c.num_hidden_layers, 30);
  EXPECT_EQ(c.intermediate_size, std::vector<int64_t>(30, 8192));
  EXPECT_EQ(c.num_kv_shared_layers, 10);
  EXPECT_EQ(c.query_pre_attn_scalar, std::optional<double>(256));
  EXPECT_EQ(c.activation_sparsity[9], 0.95);
  EXPECT_EQ(c.activation_sparsity[10], 0.0);
  // eos comes from the wrapper because text_config has none.
  EXPECT_EQ(c.eos_token_id, std::vector<int64_t>({1, 106}));

  EXPECT_EQ(c.firstKvSharedLayer(), 20);
  for (int64_t i = 20; i < 30; ++i)
    EXPECT_EQ(c.kvSourceLayer(i), c.layer_types[i] == LayerType::Full ? 19 : 18)
        << i;
  EXPECT_EQ(c.kvSourceLayer(19), -1);

  // The scalar spelling of intermediate_size is normalised to the same list.
  json j = json::parse(kE2B);
  j["text_config"]["intermediate_size"] = 8192;
  j["text_config"].erase("layer_types");
  j["text_config"].erase("activation_sparsity_pattern");
  Gemma3nTextConfig scalar = parseOk(j.dump());
  expectSameConfig(c, scalar);
}

TEST(Gemma3nConfig, BareTextConfig) {
  Gemma3nTextConfig c = parseOk(R"({
    "model_type": "gemma3n_text", "architectures": ["Gemma3nForCausalLM"],
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 1,
    "head_dim": 16, "num_hidden_layers": 5, "intermediate_size": [96, 128, 96, 128, 96],
    "num_kv_shared_layers": 0, "vocab_size": 300, "vocab_size_per_layer_input": 200,
    "hidden_size_per_layer_input": 8, "final_logit_softcapping": null,
    "altup_coef_clip": null, "tie_word_embeddings": false,
    "eos_token_id": 7, "bos_token_id": null, "pad_token_id": 3
  })");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, std::vector<int64_t>({96, 128, 96, 128, 96}));
  EXPECT_EQ(c.layer_types.back(), LayerType::Full);
  EXPECT_FALSE(c.final_logit_softcapping.has_value());
  EXPECT_FALSE(c.altup_coef_clip.has_value());
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.eos_token_id, std::vector<int64_t>({7}));
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_EQ(c.pad_token_id, std::optional<int64_t>(3));
  // 5 layers: not more than 10, so every layer is dense.
  EXPECT_EQ(c.activation_sparsity, std::vector<double>(5, 0.0));
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_FALSE(c.isKvShared(i));
}

TEST(Gemma3nConfig, TextConfigValuesWinOverWrapper) {
  Gemma3nTextConfig c = parseOk(R"({"model_type":"gemma3n",
    "eos_token_id":[1,106], "tie_word_embeddings": false, "bos_token_id": 5,
    "text_config":{"eos_token_id":9, "tie_word_embeddings": true}})");
  EXPECT_EQ(c.eos_token_id, std::vector<int64_t>({9}));
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, std::optional<int64_t>(5));
}

TEST(Gemma3nConfig, SparsityDefaults) {
  // More than 10 layers: the first 10 are sparse.
  Gemma3nTextConfig c11 =
      parseOk(R"({"num_hidden_layers":11,"num_kv_shared_layers":0})");
  std::vector<double> expected(11, 0.95);
  expected[10] = 0.0;
  EXPECT_EQ(c11.activation_sparsity, expected);
  // Exactly 10 layers: none are.
  Gemma3nTextConfig c10 =
      parseOk(R"({"num_hidden_layers":10,"num_kv_shared_layers":0})");
  EXPECT_EQ(c10.activation_sparsity, std::vector<double>(10, 0.0));
  // null means the default as well.
  Gemma3nTextConfig cNull = parseOk(
      R"({"num_hidden_layers":12,"num_kv_shared_layers":0,
          "activation_sparsity_pattern":null})");
  EXPECT_EQ(cNull.activation_sparsity[9], 0.95);
  EXPECT_EQ(cNull.activation_sparsity[10], 0.0);
  // An explicit list is kept.
  Gemma3nTextConfig explicitList = parseOk(
      R"({"num_hidden_layers":3,"num_kv_shared_layers":0,
          "activation_sparsity_pattern":[0.5,0,0.25]})");
  EXPECT_EQ(explicitList.activation_sparsity,
            std::vector<double>({0.5, 0.0, 0.25}));
}

TEST(Gemma3nConfig, ExplicitLayerTypesAndTinyKvSharing) {
  Gemma3nTextConfig c = parseOk(R"({"model_type":"gemma3n_text",
    "num_hidden_layers":6, "num_kv_shared_layers":2,
    "layer_types":["sliding_attention","full_attention","sliding_attention",
                   "full_attention","sliding_attention","full_attention"]})");
  EXPECT_EQ(c.layer_types[1], LayerType::Full);
  EXPECT_EQ(c.layer_types[4], LayerType::Sliding);
  EXPECT_EQ(c.firstKvSharedLayer(), 4);
  EXPECT_EQ(c.kvSourceLayer(4), 2);
  EXPECT_EQ(c.kvSourceLayer(5), 3);
  EXPECT_EQ(c.kvCacheLayer(5), 3);
  EXPECT_EQ(c.kvCacheLayer(3), 3);
  EXPECT_TRUE(c.isKvShared(4));
  EXPECT_FALSE(c.isKvShared(3));

  // With the default pattern (s s s s f s) layer 4 is the only full layer
  // and has nothing to share with.
  std::string error =
      parseError(R"({"num_hidden_layers":6,"num_kv_shared_layers":2})");
  EXPECT_TRUE(contains(error, "config.json: num_kv_shared_layers (2) makes "
                              "layer 4 (full_attention) KV-shared, but no "
                              "layer before 4 has that type"));

  // Sharing only the last (sliding) layer works with the default pattern.
  Gemma3nTextConfig one =
      parseOk(R"({"num_hidden_layers":6,"num_kv_shared_layers":1})");
  EXPECT_EQ(one.kvSourceLayer(5), 3);
  EXPECT_EQ(one.kvSourceLayer(4), -1);
}

TEST(Gemma3nConfig, RopeFields) {
  // Legacy spelling.
  Gemma3nTextConfig legacy = parseOk(
      R"({"rope_theta": 500000.0, "rope_local_base_freq": 20000, "rope_scaling": null})");
  EXPECT_EQ(legacy.rope_theta_full, 500000.0);
  EXPECT_EQ(legacy.rope_theta_sliding, 20000.0);
  EXPECT_EQ(legacy.ropeTheta(LayerType::Full), 500000.0);
  EXPECT_EQ(legacy.ropeTheta(LayerType::Sliding), 20000.0);
  // Per-type rope_parameters win over the legacy fields.
  Gemma3nTextConfig both =
      parseOk(R"({"rope_theta": 1.0, "rope_local_base_freq": 2.0,
    "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 3e6},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 5e4}}})");
  EXPECT_EQ(both.rope_theta_full, 3e6);
  EXPECT_EQ(both.rope_theta_sliding, 5e4);
  // A type without a theta falls back to its legacy field, then the default.
  Gemma3nTextConfig partial = parseOk(R"({"rope_local_base_freq": 7.0,
    "rope_parameters": {"full_attention": {"rope_type": "default"},
                        "sliding_attention": {"rope_type": "default"}}})");
  EXPECT_EQ(partial.rope_theta_full, 1000000.0);
  EXPECT_EQ(partial.rope_theta_sliding, 7.0);
  Gemma3nTextConfig wrapped = parseOk(R"({"text_config": {
    "rope_parameters": {"sliding_attention": {"rope_theta": 123.0}}}})");
  EXPECT_EQ(wrapped.rope_theta_sliding, 123.0);
  EXPECT_EQ(wrapped.rope_theta_full, 1000000.0);
}

TEST(Gemma3nConfig, ToJsonRoundTrip) {
  Gemma3nTextConfig e4b = Gemma3nTextConfig::defaults();
  std::string text = e4b.toJson();
  json j = json::parse(text);
  EXPECT_EQ(j["model_type"], "gemma3n_text");
  EXPECT_EQ(j["intermediate_size"].size(), 35u);
  EXPECT_EQ(j["layer_types"][4], "full_attention");
  EXPECT_EQ(j["rope_parameters"]["sliding_attention"]["rope_theta"], 10000.0);
  EXPECT_EQ(j["rope_local_base_freq"], 10000.0);
  EXPECT_EQ(j["eos_token_id"], 1);
  Gemma3nTextConfig back = parseOk(text);
  expectE4BDefaults(back);
  EXPECT_EQ(back.toJson(), text);

  Gemma3nTextConfig e2b = parseOk(kE2B);
  Gemma3nTextConfig e2bBack = parseOk(e2b.toJson());
  expectSameConfig(e2b, e2bBack);
  EXPECT_EQ(e2bBack.eos_token_id, std::vector<int64_t>({1, 106}));
  EXPECT_EQ(e2bBack.query_pre_attn_scalar, std::optional<double>(256));

  Gemma3nTextConfig odd = e4b;
  odd.final_logit_softcapping.reset();
  odd.altup_coef_clip.reset();
  odd.bos_token_id.reset();
  odd.eos_token_id.clear();
  odd.rms_norm_eps = 1e-5;
  odd.rope_theta_sliding = 12345.5;
  odd.activation_sparsity[3] = 0.5;
  Gemma3nTextConfig oddBack = parseOk(odd.toJson());
  EXPECT_FALSE(oddBack.final_logit_softcapping.has_value());
  EXPECT_FALSE(oddBack.altup_coef_clip.has_value());
  EXPECT_FALSE(oddBack.bos_token_id.has_value());
  EXPECT_TRUE(oddBack.eos_token_id.empty());
  EXPECT_EQ(oddBack.rms_norm_eps, 1e-5);
  EXPECT_EQ(oddBack.rope_theta_sliding, 12345.5);
  EXPECT_EQ(oddBack.activation_sparsity[3], 0.5);
}

TEST(Gemma3nConfig, ValidateProgrammaticConfig) {
  Gemma3nTextConfig c;
  c.num_hidden_layers = 7;
  c.num_kv_shared_layers = 0;
  std::string error;
  EXPECT_FALSE(c.validate(&error));
  EXPECT_TRUE(contains(error, "intermediate_size has 0 entries but "
                              "num_hidden_layers is 7"));
  c.normalize();
  EXPECT_TRUE(c.validate(&error)) << error;
  EXPECT_EQ(c.intermediate_size.size(), 7u);
  c.layer_types.pop_back();
  EXPECT_FALSE(c.validate(&error, "text_config."));
  EXPECT_TRUE(contains(error, "text_config.layer_types has 6 entries"));
}

TEST(Gemma3nConfig, LoadFromFile) {
  TempDir tmp;
  std::string path = tmp.file("config.json");
  writeFile(path, kE2B);
  Gemma3nTextConfig c;
  std::string error;
  ASSERT_TRUE(loadGemma3nConfig(path, &c, &error)) << error;
  EXPECT_EQ(c.num_hidden_layers, 30);

  json j = json::parse(kE2B);
  j["text_config"]["num_hidden_layers"] = 35;
  writeFile(path, j.dump());
  EXPECT_FALSE(loadGemma3nConfig(path, &c, &error));
  EXPECT_TRUE(contains(error, path + ": text_config.intermediate_size has 30 "
                                     "entries but num_hidden_layers is 35"));

  EXPECT_FALSE(loadGemma3nConfig(tmp.file("missing.json"), &c, &error));
  EXPECT_TRUE(contains(error, "missing.json: cannot read"));
}

TEST(Gemma3nConfig, MalformedConfigs) {
  struct Case {
    const char *name;
    std::string text;
    const char *message;
  };
  // Layer-type list of 30 entries against the default 35 layers.
  json thirty = json::array();
  for (int i = 0; i < 30; ++i)
    thirty.push_back((i + 1) % 5 == 0 ? "full_attention" : "sliding_attention");
  std::string thirtyTypes = json({{"model_type", "gemma3n"},
                                  {"text_config", {{"layer_types", thirty}}}})
                                .dump();

  const std::vector<Case> cases = {
      {"not_json", "{", "config.json: not valid JSON"},
      {"not_object", "[]", "config.json: not a JSON object"},
      {"wrong_model", R"({"model_type":"llama"})",
       "config.json: model_type is 'llama', not gemma3n or gemma3n_text"},
      {"model_type_number", R"({"model_type":3})",
       "config.json: model_type must be a string"},
      {"text_config_array", R"({"model_type":"gemma3n","text_config":[]})",
       "config.json: text_config must be a JSON object"},
      {"inner_model_type",
       R"({"model_type":"gemma3n","text_config":{"model_type":"gemma3_text"}})",
       "text_config.model_type is 'gemma3_text', not gemma3n_text"},
      {"layer_types_length", thirtyTypes,
       "config.json: text_config.layer_types has 30 entries but "
       "num_hidden_layers is 35"},
      {"layer_type_unknown",
       R"({"num_hidden_layers":2,"num_kv_shared_layers":0,
           "layer_types":["sliding_attention","chunked_attention"]})",
       "layer_types[1] is 'chunked_attention'; only sliding_attention and "
       "full_attention are supported"},
      {"layer_type_number", R"({"layer_types":[1]})",
       "layer_types[0] must be a string"},
      {"layer_types_string", R"({"layer_types":"full_attention"})",
       "layer_types must be a list of strings"},
      {"hidden_size_string", R"({"text_config":{"hidden_size":"2048"}})",
       "config.json: text_config.hidden_size must be an integer, got \"2048\""},
      {"hidden_size_float", R"({"hidden_size":2048.5})",
       "hidden_size must be an integer"},
      {"hidden_size_zero", R"({"hidden_size":0})",
       "hidden_size must be positive, got 0"},
      {"layers_zero", R"({"num_hidden_layers":0})",
       "num_hidden_layers must be positive"},
      {"vocab_negative", R"({"vocab_size":-1})", "vocab_size must be positive"},
      {"laurel_zero", R"({"laurel_rank":0})", "laurel_rank must be positive"},
      {"kv_heads_not_dividing",
       R"({"num_attention_heads":8,"num_key_value_heads":3})",
       "num_attention_heads (8) is not a multiple of num_key_value_heads (3)"},
      {"hidden_not_dividing", R"({"hidden_size":2050})",
       "hidden_size (2050) is not a multiple of num_attention_heads (8)"},
      {"head_dim_odd", R"({"head_dim":255})",
       "head_dim (255) must be even for rotary embeddings"},
      {"intermediate_length", R"({"intermediate_size":[1,2,3]})",
       "intermediate_size has 3 entries but num_hidden_layers is 35"},
      {"intermediate_type", R"({"intermediate_size":"big"})",
       "intermediate_size must be an integer or a list of integers"},
      {"intermediate_null", R"({"intermediate_size":null})",
       "intermediate_size must be an integer or a list of integers"},
      {"intermediate_item", R"({"intermediate_size":[1.5]})",
       "intermediate_size must be an integer or a list of integers"},
      {"intermediate_negative",
       R"({"num_hidden_layers":2,"num_kv_shared_layers":0,
           "intermediate_size":[4,-4]})",
       "intermediate_size[1] must be positive, got -4"},
      {"sparsity_scalar", R"({"activation_sparsity_pattern":0.95})",
       "activation_sparsity_pattern must be a list with one value per layer"},
      {"sparsity_length", R"({"activation_sparsity_pattern":[0.95]})",
       "activation_sparsity_pattern has 1 entries but num_hidden_layers is 35"},
      {"sparsity_range",
       R"({"num_hidden_layers":2,"num_kv_shared_layers":0,
           "activation_sparsity_pattern":[0,1.0]})",
       "activation_sparsity_pattern[1] is 1.0; it must be in [0, 1)"},
      {"sparsity_item", R"({"activation_sparsity_pattern":["x"]})",
       "activation_sparsity_pattern must be a list of numbers"},
      {"altup_idx", R"({"altup_active_idx":4})",
       "altup_active_idx (4) must be in [0, altup_num_inputs = 4)"},
      {"altup_idx_negative", R"({"altup_active_idx":-1})",
       "altup_active_idx (-1) must be in [0, altup_num_inputs = 4)"},
      {"altup_inputs_zero", R"({"altup_num_inputs":0})",
       "altup_num_inputs must be positive"},
      {"altup_clip", R"({"altup_coef_clip":-1})",
       "altup_coef_clip must be a positive number"},
      {"altup_scale_type", R"({"altup_correct_scale":1})",
       "altup_correct_scale must be true or false"},
      {"activation", R"({"text_config":{"hidden_activation":"silu"}})",
       "config.json: text_config.hidden_activation 'silu' is not supported"},
      {"activation_type", R"({"hidden_activation":1})",
       "hidden_activation must be a string"},
      {"kv_shared_all", R"({"num_kv_shared_layers":35})",
       "num_kv_shared_layers (35) must be in [0, num_hidden_layers = 35)"},
      {"kv_shared_negative", R"({"num_kv_shared_layers":-1})",
       "num_kv_shared_layers (-1) must be in [0, num_hidden_layers = 35)"},
      {"attention_bias", R"({"attention_bias":true})",
       "attention_bias is true"},
      {"softcap_negative", R"({"final_logit_softcapping":-30})",
       "final_logit_softcapping must be a positive number"},
      {"softcap_string", R"({"final_logit_softcapping":"30"})",
       "final_logit_softcapping must be a number"},
      {"eps_zero", R"({"rms_norm_eps":0})", "rms_norm_eps must be a positive"},
      {"sliding_zero", R"({"sliding_window":0})",
       "sliding_window must be positive"},
      {"query_scalar", R"({"query_pre_attn_scalar":0})",
       "query_pre_attn_scalar must be a positive number"},
      {"bos_vocab", R"({"bos_token_id":262400})",
       "bos_token_id (262400) is outside the vocabulary [0, 262400)"},
      {"eos_negative", R"({"eos_token_id":[1,-2]})",
       "eos_token_id (-2) is outside the vocabulary"},
      {"eos_type", R"({"eos_token_id":"1"})",
       "eos_token_id must be an integer or a list of integers"},
      {"eos_item", R"({"eos_token_id":[1,"2"]})",
       "eos_token_id must be an integer or a list of integers"},
      {"pad_type", R"({"pad_token_id":1.5})",
       "pad_token_id must be an integer"},
      {"tie_type", R"({"tie_word_embeddings":"yes"})",
       "tie_word_embeddings must be true or false"},
      {"wrapper_tie_type",
       R"({"model_type":"gemma3n","tie_word_embeddings":"yes"})",
       "config.json: tie_word_embeddings must be true or false"},
      {"rope_theta_string", R"({"rope_theta":"1e6"})",
       "rope_theta must be a number"},
      {"rope_theta_zero", R"({"rope_local_base_freq":0})",
       "rope_parameters.sliding_attention.rope_theta must be a positive"},
      {"rope_scaling_linear",
       R"({"rope_scaling":{"rope_type":"linear","factor":8.0}})",
       "rope_scaling has rope_type \"linear\"; only default RoPE is supported"},
      {"rope_scaling_type_key", R"({"rope_scaling":{"type":"dynamic"}})",
       "rope_scaling has rope_type \"dynamic\""},
      {"rope_scaling_array", R"({"rope_scaling":[]})",
       "rope_scaling must be an object or null"},
      {"rope_parameters_flat",
       R"({"rope_parameters":{"rope_type":"default","rope_theta":10000.0}})",
       "rope_parameters must be keyed by layer type"},
      {"rope_parameters_array", R"({"rope_parameters":[1]})",
       "rope_parameters must be an object or null"},
      {"rope_parameters_yarn",
       R"({"text_config":{"rope_parameters":{"full_attention":
           {"rope_type":"yarn","factor":4.0,"rope_theta":1e6}}}})",
       "config.json: text_config.rope_parameters.full_attention has rope_type "
       "\"yarn\""},
      {"rope_parameters_entry", R"({"rope_parameters":{"full_attention":3}})",
       "rope_parameters.full_attention must be an object"},
      {"rope_parameters_theta",
       R"({"rope_parameters":{"sliding_attention":{"rope_theta":"x"}}})",
       "rope_parameters.sliding_attention.rope_theta must be a number"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(contains(parseError(c.text), c.message));
  }
}

//===----------------------------------------------------------------------===//
// Expected tensors and checkpoint validation
//===----------------------------------------------------------------------===//

Gemma3nTextConfig tinyConfig() {
  Gemma3nTextConfig c = parseOk(R"({"model_type":"gemma3n_text",
    "vocab_size":16, "vocab_size_per_layer_input":12, "hidden_size":8,
    "hidden_size_per_layer_input":4, "num_hidden_layers":3,
    "intermediate_size":[6,10,6], "num_attention_heads":2,
    "num_key_value_heads":1, "head_dim":4, "num_kv_shared_layers":1,
    "altup_num_inputs":2, "laurel_rank":2, "eos_token_id":1,
    "layer_types":["sliding_attention","full_attention","sliding_attention"]})");
  return c;
}

const ExpectedTensor *findExpected(const std::vector<ExpectedTensor> &list,
                                   const std::string &name) {
  for (const auto &t : list)
    if (t.name == name)
      return &t;
  return nullptr;
}

TEST(ExpectedTensors, ShapesFollowConfig) {
  Gemma3nTextConfig c = tinyConfig();
  auto list = expectedTensors(c, "model.language_model.");
  // 5 global + 2 per extra AltUp stream + 24 per layer.
  EXPECT_EQ(list.size(), 5u + 2u * 1u + 24u * 3u);
  auto shape = [&](const std::string &name) {
    const ExpectedTensor *t =
        findExpected(list, "model.language_model." + name);
    EXPECT_NE(t, nullptr) << name;
    return t ? t->shape : std::vector<int64_t>{-1};
  };
  using S = std::vector<int64_t>;
  EXPECT_EQ(shape("embed_tokens.weight"), S({16, 8}));
  EXPECT_EQ(shape("embed_tokens_per_layer.weight"), S({12, 12}));
  EXPECT_EQ(shape("per_layer_model_projection.weight"), S({12, 8}));
  EXPECT_EQ(shape("per_layer_projection_norm.weight"), S({4}));
  EXPECT_EQ(shape("altup_projections.0.weight"), S({8, 8}));
  EXPECT_EQ(shape("altup_unembed_projections.0.weight"), S({8, 8}));
  EXPECT_EQ(
      findExpected(list, "model.language_model.altup_projections.1.weight"),
      nullptr);
  EXPECT_EQ(shape("norm.weight"), S({8}));
  EXPECT_EQ(shape("layers.1.self_attn.q_proj.weight"), S({8, 8}));
  EXPECT_EQ(shape("layers.1.self_attn.k_proj.weight"), S({4, 8}));
  EXPECT_EQ(shape("layers.2.self_attn.v_proj.weight"), S({4, 8}));
  EXPECT_EQ(shape("layers.1.self_attn.o_proj.weight"), S({8, 8}));
  EXPECT_EQ(shape("layers.0.self_attn.q_norm.weight"), S({4}));
  EXPECT_EQ(shape("layers.0.self_attn.k_norm.weight"), S({4}));
  EXPECT_EQ(shape("layers.1.mlp.gate_proj.weight"), S({10, 8}));
  EXPECT_EQ(shape("layers.1.mlp.up_proj.weight"), S({10, 8}));
  EXPECT_EQ(shape("layers.1.mlp.down_proj.weight"), S({8, 10}));
  EXPECT_EQ(shape("layers.2.mlp.down_proj.weight"), S({8, 6}));
  EXPECT_EQ(shape("layers.0.input_layernorm.weight"), S({8}));
  EXPECT_EQ(shape("layers.0.post_attention_layernorm.weight"), S({8}));
  EXPECT_EQ(shape("layers.0.pre_feedforward_layernorm.weight"), S({8}));
  EXPECT_EQ(shape("layers.0.post_feedforward_layernorm.weight"), S({8}));
  EXPECT_EQ(shape("layers.0.altup.correct_output_scale"), S({8}));
  EXPECT_EQ(shape("layers.0.altup.correction_coefs.weight"), S({2, 2}));
  EXPECT_EQ(shape("layers.0.altup.prediction_coefs.weight"), S({4, 2}));
  EXPECT_EQ(shape("layers.0.altup.modality_router.weight"), S({2, 8}));
  EXPECT_EQ(shape("layers.0.altup.router_norm.weight"), S({8}));
  EXPECT_EQ(shape("layers.0.laurel.linear_left.weight"), S({2, 8}));
  EXPECT_EQ(shape("layers.0.laurel.linear_right.weight"), S({8, 2}));
  EXPECT_EQ(shape("layers.0.laurel.post_laurel_norm.weight"), S({8}));
  EXPECT_EQ(shape("layers.0.per_layer_input_gate.weight"), S({4, 8}));
  EXPECT_EQ(shape("layers.0.per_layer_projection.weight"), S({8, 4}));
  EXPECT_EQ(shape("layers.0.post_per_layer_input_norm.weight"), S({8}));
  EXPECT_EQ(findExpected(list, "lm_head.weight"), nullptr);

  c.tie_word_embeddings = false;
  auto untied = expectedTensors(c, "model.");
  const ExpectedTensor *head = findExpected(untied, "lm_head.weight");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->shape, S({16, 8}));
  EXPECT_NE(findExpected(untied, "model.norm.weight"), nullptr);

  // E4B: 5 + 2 * 3 + 24 * 35 tensors; the PLE table is [262144, 35 * 256].
  auto e4b =
      expectedTensors(Gemma3nTextConfig::defaults(), "model.language_model.");
  EXPECT_EQ(e4b.size(), 851u);
  EXPECT_EQ(
      findExpected(e4b, "model.language_model.embed_tokens_per_layer.weight")
          ->shape,
      S({262144, 8960}));
}

// Writes every expected tensor of `c` under `prefix` (BF16, value = index),
// letting `edit` rename, reshape or drop entries, plus an unrelated tensor.
void writeModel(const std::string &path, const Gemma3nTextConfig &c,
                const std::string &prefix,
                const std::function<bool(ExpectedTensor &)> &edit = nullptr) {
  auto list = expectedTensors(c, prefix);
  SafetensorsWriter writer;
  std::string error;
  for (ExpectedTensor &t : list) {
    if (edit && !edit(t))
      continue;
    ASSERT_TRUE(writer.declare(t.name, DType::BF16, t.shape, &error)) << error;
  }
  ASSERT_TRUE(writer.declare("model.vision_tower.stem.weight", DType::F32, {3},
                             &error));
  ASSERT_TRUE(writer.begin(path, &error)) << error;
  std::vector<float> values(4096, 0.5f);
  for (const std::string &name : writer.order()) {
    // Each tensor here is far below 4096 elements.
    uint64_t elements = 1;
    for (const auto &t : list)
      if (t.name == name) {
        elements = 1;
        for (int64_t d : t.shape)
          elements *= uint64_t(d);
      }
    if (name == "model.vision_tower.stem.weight")
      elements = 3;
    ASSERT_TRUE(writer.writeFloats(name, values.data(), elements, &error))
        << error;
  }
  ASSERT_TRUE(writer.finish(&error)) << error;
}

TEST(ValidateCheckpoint, MultimodalAndTextPrefixes) {
  TempDir tmp;
  Gemma3nTextConfig c = tinyConfig();
  std::string error;

  std::string mm = tmp.sub("mm");
  writeModel(mm + "/model.safetensors", c, "model.language_model.");
  auto ckpt = Checkpoint::open(mm, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  std::string prefix;
  ASSERT_TRUE(detectTextPrefix(*ckpt, &prefix, &error));
  EXPECT_EQ(prefix, "model.language_model.");
  EXPECT_TRUE(validateCheckpoint(c, *ckpt, &error)) << error;

  std::string text = tmp.sub("text");
  writeModel(text + "/model.safetensors", c, "model.");
  ckpt = Checkpoint::open(text, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  ASSERT_TRUE(detectTextPrefix(*ckpt, &prefix, &error));
  EXPECT_EQ(prefix, "model.");
  EXPECT_TRUE(validateCheckpoint(c, *ckpt, &error)) << error;

  std::string bare = tmp.sub("bare");
  writeModel(bare + "/model.safetensors", c, "");
  ckpt = Checkpoint::open(bare, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  EXPECT_TRUE(validateCheckpoint(c, *ckpt, &error)) << error;
}

TEST(ValidateCheckpoint, ReportsFirstProblemByName) {
  TempDir tmp;
  Gemma3nTextConfig c = tinyConfig();
  std::string error;

  std::string missing = tmp.sub("missing");
  writeModel(missing + "/model.safetensors", c, "model.language_model.",
             [](ExpectedTensor &t) {
               return t.name != "model.language_model.layers.2.laurel."
                                "linear_right.weight";
             });
  auto ckpt = Checkpoint::open(missing, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  EXPECT_FALSE(validateCheckpoint(c, *ckpt, &error));
  EXPECT_TRUE(contains(error, missing + ": missing tensor "
                                        "'model.language_model.layers.2.laurel."
                                        "linear_right.weight' (expected shape "
                                        "[8, 2])"));

  std::string shape = tmp.sub("shape");
  writeModel(shape + "/model.safetensors", c, "model.language_model.",
             [](ExpectedTensor &t) {
               if (t.name == "model.language_model.layers.1.mlp.up_proj.weight")
                 t.shape = {6, 8};
               return true;
             });
  ckpt = Checkpoint::open(shape, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  EXPECT_FALSE(validateCheckpoint(c, *ckpt, &error));
  EXPECT_TRUE(contains(error, "model.safetensors: tensor "
                              "'model.language_model.layers.1.mlp.up_proj."
                              "weight' has shape [6, 8] but the config "
                              "expects [10, 8]"));

  // An untied config needs lm_head.weight.
  std::string tied = tmp.sub("tied");
  writeModel(tied + "/model.safetensors", c, "model.");
  ckpt = Checkpoint::open(tied, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  Gemma3nTextConfig untied = c;
  untied.tie_word_embeddings = false;
  EXPECT_FALSE(validateCheckpoint(untied, *ckpt, &error));
  EXPECT_TRUE(contains(error, "missing tensor 'lm_head.weight'"));

  std::string none = tmp.sub("none");
  writeF32File(none + "/model.safetensors", {"something.else"});
  ckpt = Checkpoint::open(none, &error);
  ASSERT_NE(ckpt, nullptr) << error;
  EXPECT_FALSE(validateCheckpoint(c, *ckpt, &error));
  EXPECT_TRUE(contains(error, "no text-decoder token embedding found (looked "
                              "for model.language_model.embed_tokens.weight, "
                              "model.embed_tokens.weight, "
                              "embed_tokens.weight)"));
}

} // namespace
