//===- BundleTests.cpp - .pccx reader, writer and tools
//---------------------===//
//
// Bundles are written with BundleWriter, then damaged byte by byte at the
// offsets docs/bundle-format.md gives, and every rejection is checked to
// name the file and the section at fault.
//===----------------------------------------------------------------------===//

#include "runtime/bundle/Assembler.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/Manifest.h"
#include "runtime/bundle/Objdump.h"

#include "hw/isa/Isa.h"
#include "hw/machine/MachineModel.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

using namespace pccx;
using namespace pccx::bundle;
using nlohmann::json;

namespace {

// Byte offsets of docs/bundle-format.md, restated here on purpose: the test
// checks the document against the code.
constexpr size_t kHdrFormatVersion = 8;
constexpr size_t kHdrIsaVersion = 12;
constexpr size_t kHdrDigest = 16;
constexpr size_t kHdrCount = 24;
constexpr size_t kHdrFlags = 28;
constexpr size_t kHdrFileSize = 32;
constexpr size_t kTable = 40;
constexpr size_t kEntry = 56;
constexpr size_t kEntKind = 24;
constexpr size_t kEntFlags = 28;
constexpr size_t kEntOffset = 32;
constexpr size_t kEntSize = 40;
constexpr size_t kEntChecksum = 48;

using Bytes = std::vector<uint8_t>;

uint32_t getU32(const Bytes &b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = v << 8 | b[at + i];
  return v;
}
uint64_t getU64(const Bytes &b, size_t at) {
  return uint64_t(getU32(b, at)) | uint64_t(getU32(b, at + 4)) << 32;
}
void putU32(Bytes &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = uint8_t(v >> (8 * i));
}
void putU64(Bytes &b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    b[at + i] = uint8_t(v >> (8 * i));
}
size_t entryAt(unsigned index) { return kTable + kEntry * index; }

// Recomputes the header checksum after a deliberate edit, so that the check
// under test is the one that fires.
void reseal(Bytes &b) {
  uint32_t count = getU32(b, kHdrCount);
  putU64(b, kTable + kEntry * count, headerChecksum(b.data(), count));
}

uint64_t encode(const char *text) {
  isa::Instruction inst;
  std::string err;
  EXPECT_TRUE(isa::assemble(text, inst, &err)) << err;
  uint64_t word = 0;
  EXPECT_TRUE(isa::encode(inst, word, &err)) << err;
  return word;
}

Bytes pattern(size_t n, uint32_t seed) {
  Bytes out(n);
  std::mt19937 rng(seed);
  for (uint8_t &c : out)
    c = uint8_t(rng());
  return out;
}

class BundleTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "pccx-bundle-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back(0);
    ASSERT_NE(::mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
  }
  void TearDown() override {
    for (const std::string &f : listDir())
      ::unlink((dir_ + "/" + f).c_str());
    ::rmdir(dir_.c_str());
  }

  std::string path(const std::string &name) const { return dir_ + "/" + name; }

  std::vector<std::string> listDir() const {
    std::vector<std::string> out;
    if (DIR *d = ::opendir(dir_.c_str())) {
      while (dirent *e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
          out.push_back(e->d_name);
      ::closedir(d);
    }
    return out;
  }

  static Bytes readAll(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }
  static void writeAll(const std::string &p, const Bytes &b) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(b.data()),
              std::streamsize(b.size()));
  }

  // One section of every kind; the weights are streamed in odd-sized chunks.
  static json sampleManifest() {
    return json{{"model", {{"name", "toy"}, {"layers", 2}}},
                {"memory_map", json::array({{{"space", "l2"},
                                             {"offset", 256},
                                             {"size", 64},
                                             {"name", "x"}}})},
                {"patch_points",
                 json::array({toJson(PatchPoint{"program.decode", 1, "aux_addr",
                                                "token_id", 16, 64})})}};
  }
  static std::vector<uint64_t> decodeWords() {
    return {encode("memset dest_cache=fmap_shape dest_addr=1 a_value=1 "
                   "b_value=64 c_value=64"),
            encode("memcpy from_device=1 dest_addr=0x00100 aux_addr=0x40 "
                   "shape_ptr_addr=1"),
            encode("gemv dest_reg=0x00200 src_addr=0x00100 flags=w_scale "
                   "shape_ptr_addr=1")};
  }
  static void fillSample(BundleWriter &w) {
    std::string err;
    ASSERT_TRUE(w.addManifest(sampleManifest(), &err)) << err;
    ASSERT_TRUE(w.addProgram("program.decode", decodeWords(), &err)) << err;
    ASSERT_TRUE(w.addProgram(
        "program.prefill", {encode("gemm dest_reg=0x01000 flags=accm")}, &err))
        << err;
    ASSERT_TRUE(w.addStreamedSection(
        "weights", SectionKind::Weights,
        [](SectionSink &sink, std::string *) {
          Bytes all = pattern(10000, 1);
          for (size_t at = 0; at < all.size(); at += 999)
            if (!sink.write(all.data() + at,
                            std::min<size_t>(999, all.size() - at)))
              return false;
          return true;
        },
        &err))
        << err;
    Bytes constants = pattern(100, 2);
    ASSERT_TRUE(w.addSection("constants", SectionKind::Constants,
                             constants.data(), constants.size(), &err))
        << err;
    ASSERT_TRUE(w.addSection("tokenizer", SectionKind::Tokenizer,
                             pattern(5000, 3), &err))
        << err;
  }

  std::string writeSample(const std::string &name = "sample.pccx") {
    BundleWriter w;
    fillSample(w);
    std::string err;
    EXPECT_TRUE(w.write(path(name), &err)) << err;
    return path(name);
  }

  // Writes `bytes` as a new file and returns the error opening it gives.
  std::string openError(const Bytes &bytes, const OpenOptions &o = {}) {
    std::string p = path("damaged.pccx");
    writeAll(p, bytes);
    std::string err;
    std::unique_ptr<Bundle> b = Bundle::open(p, &err, o);
    EXPECT_EQ(b, nullptr) << "a damaged bundle was accepted";
    EXPECT_EQ(err.rfind(p + ": ", 0), 0u)
        << "error does not name the file: " << err;
    return err;
  }

  std::string dir_;
};

#define EXPECT_HAS(haystack, needle)                                           \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' lacks '" << (needle) << "'"

//===----------------------------------------------------------------------===//
// Round trips and layout
//===----------------------------------------------------------------------===//

TEST_F(BundleTest, RoundTripsEverySectionKind) {
  std::string p = writeSample();
  std::string err;
  std::unique_ptr<Bundle> b = Bundle::open(p, &err);
  ASSERT_NE(b, nullptr) << err;
  EXPECT_EQ(b->formatVersion(), 2u);
  EXPECT_EQ(b->isaVersion(), 2u);
  EXPECT_EQ(b->machineDigest(), machine::digest());
  EXPECT_TRUE(b->machineDigestMatches());
  EXPECT_TRUE(b->checksumsVerified());
  EXPECT_TRUE(b->warnings().empty());
  ASSERT_EQ(b->sections().size(), 6u);

  const char *names[] = {"manifest", "program.decode", "program.prefill",
                         "weights",  "constants",      "tokenizer"};
  SectionKind kinds[] = {SectionKind::Manifest,  SectionKind::Program,
                         SectionKind::Program,   SectionKind::Weights,
                         SectionKind::Constants, SectionKind::Tokenizer};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(b->sections()[i].name, names[i]);
    EXPECT_EQ(b->sections()[i].kind, kinds[i]);
    EXPECT_EQ(b->sections()[i].offset % 4096, 0u);
  }

  ASSERT_TRUE(b->hasManifest());
  EXPECT_EQ(b->manifest(), sampleManifest());

  const SectionInfo *decode = b->find("program.decode");
  ASSERT_NE(decode, nullptr);
  std::vector<uint64_t> words = decodeWords();
  ASSERT_EQ(Bundle::wordCount(*decode), words.size());
  for (size_t i = 0; i < words.size(); ++i)
    EXPECT_EQ(b->word(*decode, i), words[i]);

  const SectionInfo *weights = b->find("weights");
  ASSERT_NE(weights, nullptr);
  Bytes expected = pattern(10000, 1);
  ASSERT_EQ(weights->size, expected.size());
  EXPECT_EQ(0,
            std::memcmp(b->data(*weights), expected.data(), expected.size()));
  EXPECT_EQ(weights->checksum, checksum(expected.data(), expected.size()));

  const SectionInfo *constants = b->find("constants");
  ASSERT_NE(constants, nullptr);
  EXPECT_EQ(Bytes(b->data(*constants), b->data(*constants) + constants->size),
            pattern(100, 2));
  const SectionInfo *tok = b->find("tokenizer");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(Bytes(b->data(*tok), b->data(*tok) + tok->size), pattern(5000, 3));

  EXPECT_EQ(b->find("missing"), nullptr);
  EXPECT_EQ(b->sectionsOfKind(SectionKind::Program).size(), 2u);
  EXPECT_TRUE(checkPatchPoints(*b, &err)) << err;
}

TEST_F(BundleTest, LayoutMatchesTheDocument) {
  Bytes f = readAll(writeSample());
  ASSERT_GE(f.size(), 4096u);
  EXPECT_EQ(0, std::memcmp(f.data(), "PCCXBNDL", 8));
  EXPECT_EQ(getU32(f, kHdrFormatVersion), 2u);
  EXPECT_EQ(getU32(f, kHdrIsaVersion), 2u);
  EXPECT_EQ(getU64(f, kHdrDigest), machine::digest());
  EXPECT_EQ(getU32(f, kHdrCount), 6u);
  EXPECT_EQ(getU32(f, kHdrFlags), 0u);
  EXPECT_EQ(getU64(f, kHdrFileSize), f.size());
  size_t headerEnd = kTable + kEntry * 6 + 8;
  EXPECT_EQ(getU64(f, headerEnd - 8), checksum(f.data(), headerEnd - 8));

  // The first entry: "manifest", kind 1, at 4096, its text sorted and
  // newline-terminated.
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(f.data() + kTable)),
            "manifest");
  EXPECT_EQ(getU32(f, entryAt(0) + kEntKind), 1u);
  EXPECT_EQ(getU32(f, entryAt(0) + kEntFlags), 0u);
  EXPECT_EQ(getU64(f, entryAt(0) + kEntOffset), 4096u);
  uint64_t msize = getU64(f, entryAt(0) + kEntSize);
  std::string text(f.begin() + 4096, f.begin() + 4096 + msize);
  EXPECT_EQ(text, sampleManifest().dump(2) + "\n");
  EXPECT_LT(text.find("\"memory_map\""), text.find("\"model\""));

  // Program words are little-endian.
  uint64_t poff = getU64(f, entryAt(1) + kEntOffset);
  EXPECT_EQ(getU64(f, poff), decodeWords()[0]);
  EXPECT_EQ(f[poff], uint8_t(decodeWords()[0]));

  // Sections follow in table order, each at the next 4096 boundary; every
  // other byte after the header is zero.
  Bytes covered(f.size(), 0);
  std::fill(covered.begin(), covered.begin() + headerEnd, 1);
  uint64_t prevEnd = headerEnd;
  for (unsigned i = 0; i < 6; ++i) {
    uint64_t off = getU64(f, entryAt(i) + kEntOffset);
    uint64_t size = getU64(f, entryAt(i) + kEntSize);
    EXPECT_EQ(off, (prevEnd + 4095) / 4096 * 4096) << "section " << i;
    EXPECT_EQ(getU64(f, entryAt(i) + kEntChecksum),
              checksum(f.data() + off, size));
    std::fill(covered.begin() + off, covered.begin() + off + size, 1);
    prevEnd = off + size;
  }
  EXPECT_EQ(prevEnd, f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    if (!covered[i]) {
      ASSERT_EQ(f[i], 0) << "padding byte " << i;
    }
  }
}

TEST_F(BundleTest, StreamsLargeSectionsWithoutHoldingThem) {
  // 6 MiB produced in 64 KiB + 3 chunks from a generator: the writer never
  // sees the section as a whole.
  const size_t total = 6u << 20, chunk = (64u << 10) + 3;
  auto generate = [](size_t at, size_t n, Bytes &out) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i)
      out[i] = uint8_t((at + i) * 2654435761u >> 13);
  };
  BundleWriter w;
  std::string err;
  ASSERT_TRUE(w.addStreamedSection(
      "weights", SectionKind::Weights,
      [&](SectionSink &sink, std::string *) {
        Bytes buf;
        for (size_t at = 0; at < total; at += chunk) {
          generate(at, std::min(chunk, total - at), buf);
          if (!sink.write(buf))
            return false;
        }
        return true;
      },
      &err));
  ASSERT_TRUE(w.write(path("big.pccx"), &err)) << err;
  std::unique_ptr<Bundle> b = Bundle::open(path("big.pccx"), &err);
  ASSERT_NE(b, nullptr) << err;
  const SectionInfo *s = b->find("weights");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->size, total);
  Bytes all;
  generate(0, total, all);
  EXPECT_EQ(0, std::memcmp(b->data(*s), all.data(), total));
  EXPECT_EQ(s->checksum, checksum(all.data(), total));
  EXPECT_FALSE(b->hasManifest());
}

TEST_F(BundleTest, StreamedWordsAreLittleEndian) {
  BundleWriter w;
  std::string err;
  std::vector<uint64_t> words = decodeWords();
  ASSERT_TRUE(w.addStreamedSection(
      "program.x", SectionKind::Program,
      [&](SectionSink &sink, std::string *) {
        return sink.writeWords(words.data(), words.size());
      },
      &err));
  ASSERT_TRUE(w.write(path("w.pccx"), &err)) << err;
  std::unique_ptr<Bundle> b = Bundle::open(path("w.pccx"), &err);
  ASSERT_NE(b, nullptr) << err;
  for (size_t i = 0; i < words.size(); ++i)
    EXPECT_EQ(b->word(*b->find("program.x"), i), words[i]);
}

TEST_F(BundleTest, EmptySectionsAndEmptyBundle) {
  BundleWriter w;
  std::string err;
  ASSERT_TRUE(w.addProgram("program.empty", {}, &err));
  ASSERT_TRUE(
      w.addSection("constants", SectionKind::Constants, Bytes{1, 2, 3}, &err));
  ASSERT_TRUE(w.addSection("tokenizer", SectionKind::Tokenizer, Bytes{}, &err));
  ASSERT_TRUE(w.write(path("e.pccx"), &err)) << err;
  std::unique_ptr<Bundle> b = Bundle::open(path("e.pccx"), &err);
  ASSERT_NE(b, nullptr) << err;
  ASSERT_EQ(b->sections().size(), 3u);
  EXPECT_EQ(b->sections()[0].size, 0u);
  EXPECT_EQ(b->sections()[2].size, 0u);
  EXPECT_EQ(b->sections()[2].offset % 4096, 0u);

  BundleWriter none;
  ASSERT_TRUE(none.write(path("none.pccx"), &err)) << err;
  b = Bundle::open(path("none.pccx"), &err);
  ASSERT_NE(b, nullptr) << err;
  EXPECT_TRUE(b->sections().empty());
  EXPECT_EQ(b->fileSize(), kTable + 8);
}

TEST_F(BundleTest, WritesAreDeterministic) {
  std::string a = writeSample("a.pccx"), b = writeSample("b.pccx");
  EXPECT_EQ(readAll(a), readAll(b));

  // The same writer twice, too (producers are run again).
  BundleWriter w;
  fillSample(w);
  std::string err;
  ASSERT_TRUE(w.write(path("c.pccx"), &err)) << err;
  ASSERT_TRUE(w.write(path("d.pccx"), &err)) << err;
  EXPECT_EQ(readAll(path("c.pccx")), readAll(a));
  EXPECT_EQ(readAll(path("d.pccx")), readAll(a));

  // A manifest built in another key order serialises identically.
  json m1 = {{"b", 1}, {"a", {{"z", 1}, {"y", 2}}}};
  json m2;
  m2["a"]["y"] = 2;
  m2["a"]["z"] = 1;
  m2["b"] = 1;
  BundleWriter w1, w2;
  ASSERT_TRUE(w1.addManifest(m1, &err));
  ASSERT_TRUE(w2.addManifest(m2, &err));
  ASSERT_TRUE(w1.write(path("m1.pccx"), &err));
  ASSERT_TRUE(w2.write(path("m2.pccx"), &err));
  EXPECT_EQ(readAll(path("m1.pccx")), readAll(path("m2.pccx")));
}

//===----------------------------------------------------------------------===//
// Atomic writing
//===----------------------------------------------------------------------===//

TEST_F(BundleTest, FailedProducerLeavesNoFile) {
  BundleWriter w;
  fillSample(w);
  std::string err;
  ASSERT_TRUE(w.addStreamedSection(
      "weights.late", SectionKind::Weights,
      [](SectionSink &sink, std::string *error) {
        Bytes some(100000, 7);
        sink.write(some);
        *error = "checkpoint shard 3 is unreadable";
        return false;
      },
      &err));
  std::string out = path("out.pccx");
  EXPECT_FALSE(w.write(out, &err));
  EXPECT_HAS(
      err, out + ": section 'weights.late': checkpoint shard 3 is unreadable");
  EXPECT_TRUE(listDir().empty()) << "left behind: " << listDir().front();
}

TEST_F(BundleTest, ThrowingProducerLeavesNoFile) {
  BundleWriter w;
  std::string err;
  ASSERT_TRUE(w.addStreamedSection(
      "weights", SectionKind::Weights,
      [](SectionSink &, std::string *) -> bool {
        throw std::runtime_error("out of patience");
      },
      &err));
  EXPECT_FALSE(w.write(path("t.pccx"), &err));
  EXPECT_HAS(err, "section 'weights': out of patience");
  EXPECT_TRUE(listDir().empty());
}

TEST_F(BundleTest, FailedWriteKeepsThePreviousBundle) {
  std::string out = writeSample("keep.pccx");
  Bytes before = readAll(out);
  BundleWriter w;
  std::string err;
  ASSERT_TRUE(w.addStreamedSection(
      "program.bad", SectionKind::Program,
      [](SectionSink &sink, std::string *) {
        uint8_t odd[12] = {};
        return sink.write(odd, sizeof(odd));
      },
      &err));
  EXPECT_FALSE(w.write(out, &err));
  EXPECT_HAS(err,
             "program section 'program.bad' has 12 bytes, not a multiple of 8");
  EXPECT_EQ(readAll(out), before);
  EXPECT_EQ(listDir(), std::vector<std::string>{"keep.pccx"});
}

TEST_F(BundleTest, WriteIntoMissingDirectoryFails) {
  BundleWriter w;
  std::string err, out = path("no/such/dir.pccx");
  EXPECT_FALSE(w.write(out, &err));
  EXPECT_HAS(err, out + ": cannot create");
}

TEST_F(BundleTest, WriterRejectsBadSections) {
  BundleWriter w;
  std::string err;
  EXPECT_FALSE(w.addSection("", SectionKind::Weights, Bytes{}, &err));
  EXPECT_HAS(err, "empty");
  EXPECT_FALSE(w.addSection("a23456789012345678901234", SectionKind::Weights,
                            Bytes{}, &err));
  EXPECT_HAS(err, "longer than 23");
  EXPECT_TRUE(w.addSection("a2345678901234567890123", SectionKind::Weights,
                           Bytes{}, &err));
  EXPECT_FALSE(w.addSection("we ights", SectionKind::Weights, Bytes{}, &err));
  EXPECT_HAS(err, "outside [A-Za-z0-9._-]");
  EXPECT_FALSE(w.addSection("x", SectionKind(9), Bytes{}, &err));
  EXPECT_HAS(err, "unknown kind 9");
  EXPECT_FALSE(w.addSection("program.p", SectionKind::Program, Bytes(7), &err));
  EXPECT_HAS(err, "not a multiple of 8");
  EXPECT_TRUE(w.addManifest(json::object(), &err));
  EXPECT_FALSE(
      w.addSection("manifest2", SectionKind::Manifest, Bytes{'{', '}'}, &err));
  EXPECT_HAS(err, "already has a manifest");
  EXPECT_FALSE(w.addProgram("manifest", {}, &err));
  EXPECT_HAS(err, "duplicate section name 'manifest'");
  EXPECT_FALSE(w.addManifest(json::array(), &err));
  EXPECT_FALSE(w.addStreamedSection("s", SectionKind::Weights, nullptr, &err));
  // Invalid UTF-8 in a manifest string is an error value, not an exception.
  BundleWriter w2;
  EXPECT_FALSE(w2.addManifest(json{{"k", std::string("\xff\xfe")}}, &err));
}

//===----------------------------------------------------------------------===//
// Rejections
//===----------------------------------------------------------------------===//

TEST_F(BundleTest, FlippedByteInEachSectionNamesIt) {
  Bytes good = readAll(writeSample());
  for (unsigned i = 0; i < 6; ++i) {
    uint64_t off = getU64(good, entryAt(i) + kEntOffset);
    uint64_t size = getU64(good, entryAt(i) + kEntSize);
    std::string name(reinterpret_cast<const char *>(good.data() + entryAt(i)));
    Bytes bad = good;
    bad[off + size / 2] ^= 0x40;
    std::string err = openError(bad);
    EXPECT_HAS(err, "section '" + name + "' checksum mismatch (stored 0x");
    EXPECT_HAS(err, "): the bundle is corrupt");

    // Without verification it opens (the manifest is parsed even then, so
    // it is left out); verifySection still finds the damage.
    if (i == 0)
      continue;
    OpenOptions lax;
    lax.verifyChecksums = false;
    std::unique_ptr<Bundle> b = Bundle::open(path("damaged.pccx"), &err, lax);
    ASSERT_NE(b, nullptr) << err;
    EXPECT_FALSE(b->checksumsVerified());
    EXPECT_FALSE(b->verifySection(b->sections()[i], &err));
    EXPECT_HAS(err, "section '" + name + "' checksum mismatch");
  }
}

TEST_F(BundleTest, AnyAlteredByteIsRejected) {
  BundleWriter w;
  std::string err;
  ASSERT_TRUE(w.addManifest(json{{"k", 1}}, &err));
  ASSERT_TRUE(w.addProgram("program.p", decodeWords(), &err));
  ASSERT_TRUE(
      w.addSection("weights", SectionKind::Weights, pattern(300, 4), &err));
  ASSERT_TRUE(w.write(path("small.pccx"), &err));
  Bytes good = readAll(path("small.pccx"));
  for (size_t i = 0; i < good.size(); i += (i < 512 ? 1 : 61)) {
    Bytes bad = good;
    bad[i] ^= 0x01;
    writeAll(path("x.pccx"), bad);
    EXPECT_EQ(Bundle::open(path("x.pccx"), &err), nullptr) << "byte " << i;
  }
}

TEST_F(BundleTest, RejectsTruncation) {
  Bytes good = readAll(writeSample());
  uint64_t off = getU64(good, entryAt(5) + kEntOffset);
  uint64_t size = getU64(good, entryAt(5) + kEntSize);
  Bytes cut(good.begin(), good.begin() + off + size / 2);
  EXPECT_HAS(openError(cut),
             "section 'tokenizer' ends at byte " + std::to_string(off + size) +
                 " but the file has " + std::to_string(cut.size()) + " bytes");
  Bytes header(good.begin(), good.begin() + 100);
  EXPECT_HAS(openError(header),
             "section table (6 entries) ends at byte 384 but "
             "the file has 100 bytes");
  Bytes tiny(good.begin(), good.begin() + 20);
  EXPECT_HAS(openError(tiny), "truncated header");
}

TEST_F(BundleTest, RejectsExtraBytes) {
  Bytes f = readAll(writeSample());
  f.push_back(0);
  EXPECT_HAS(openError(f), "records a file size of " +
                               std::to_string(f.size() - 1) +
                               " bytes but the file has " +
                               std::to_string(f.size()) + " bytes");
}

TEST_F(BundleTest, RejectsOtherFiles) {
  Bytes f = readAll(writeSample());
  f[3] = 'Y';
  EXPECT_HAS(openError(f), "not a pccx bundle (bad magic)");
  EXPECT_HAS(openError(Bytes{}), "not a pccx bundle (the file is empty)");
  EXPECT_HAS(openError(Bytes{'P', 'C'}), "bad magic");
  std::string err;
  EXPECT_EQ(Bundle::open(path("absent.pccx"), &err), nullptr);
  EXPECT_HAS(err, path("absent.pccx") + ": cannot open: ");
  EXPECT_EQ(Bundle::open(dir_, &err), nullptr);
  EXPECT_HAS(err, "not a regular file");
}

TEST_F(BundleTest, RejectsNewerFormat) {
  Bytes f = readAll(writeSample());
  putU32(f, kHdrFormatVersion, 7);
  // No reseal: the version is checked before anything it might change.
  EXPECT_HAS(openError(f),
             "bundle format version 7 is newer than this reader (2)");
  putU32(f, kHdrFormatVersion, 1);
  EXPECT_HAS(openError(f), "bundle format version 1 is older than this reader "
                           "(2); recompile the model with pccx-compile");
  putU32(f, kHdrFormatVersion, 0);
  EXPECT_HAS(openError(f), "format version 0 is invalid");
}

TEST_F(BundleTest, RejectsOtherIsa) {
  Bytes f = readAll(writeSample());
  putU32(f, kHdrIsaVersion, 3);
  reseal(f);
  EXPECT_HAS(openError(f),
             "bundle targets ISA v003; this runtime supports v002");
}

TEST_F(BundleTest, MachineMismatchIsAnErrorOrAWarning) {
  BundleWriter w;
  fillSample(w);
  w.setMachineDigest(machine::digest() ^ 0x10);
  std::string err;
  ASSERT_TRUE(w.write(path("other.pccx"), &err));
  Bytes f = readAll(path("other.pccx"));
  EXPECT_HAS(openError(f), "compiled for machine model");

  OpenOptions warn;
  warn.allowMachineMismatch = true;
  std::unique_ptr<Bundle> b = Bundle::open(path("other.pccx"), &err, warn);
  ASSERT_NE(b, nullptr) << err;
  EXPECT_FALSE(b->machineDigestMatches());
  EXPECT_EQ(b->machineDigest(), machine::digest() ^ 0x10);
  ASSERT_EQ(b->warnings().size(), 1u);
  EXPECT_HAS(b->warnings()[0], "machine model");

  // Editing the header field instead: same result once resealed.
  Bytes g = readAll(writeSample());
  putU64(g, kHdrDigest, 42);
  reseal(g);
  EXPECT_HAS(openError(g), "compiled for machine model 0x000000000000002a");
}

TEST_F(BundleTest, RejectsHeaderDamage) {
  Bytes good = readAll(writeSample());
  Bytes f = good;
  f[entryAt(3) + 2] ^= 1; // a letter of "weights"
  EXPECT_HAS(openError(f), "header checksum mismatch (stored 0x");

  f = good;
  putU32(f, kHdrFlags, 4);
  reseal(f);
  EXPECT_HAS(openError(f), "unknown header flags 0x4");

  f = good;
  putU32(f, kHdrCount, 1000);
  EXPECT_HAS(openError(f), "section table (1000 entries) ends at byte");
  putU32(f, kHdrCount, 70000);
  EXPECT_HAS(openError(f), "section count 70000 exceeds the limit");
}

TEST_F(BundleTest, RejectsBadTableEntries) {
  Bytes good = readAll(writeSample());
  uint64_t off1 = getU64(good, entryAt(1) + kEntOffset);
  auto edit = [&](auto change) {
    Bytes f = good;
    change(f);
    reseal(f);
    return openError(f);
  };

  std::string overlap =
      edit([&](Bytes &f) { putU64(f, entryAt(2) + kEntOffset, off1); });
  EXPECT_HAS(overlap, "'program.decode' (bytes [" + std::to_string(off1) +
                          ", " + std::to_string(off1 + 24) + "))");
  EXPECT_HAS(overlap, "'program.prefill' (bytes [" + std::to_string(off1) +
                          ", " + std::to_string(off1 + 8) + "))");
  EXPECT_HAS(overlap, ") overlap");
  EXPECT_HAS(
      edit([&](Bytes &f) { putU64(f, entryAt(3) + kEntOffset, off1 + 8); }),
      "section 'weights' offset " + std::to_string(off1 + 8) +
          " is not a multiple of 4096");
  EXPECT_HAS(edit([&](Bytes &f) { putU64(f, entryAt(3) + kEntOffset, 0); }),
             "section 'weights' at offset 0 overlaps the header");
  EXPECT_HAS(edit([&](Bytes &f) {
               std::memcpy(f.data() + entryAt(2), f.data() + entryAt(1), 24);
             }),
             "duplicate section name 'program.decode' (table entries 1 and 2)");
  EXPECT_HAS(
      edit([&](Bytes &f) { putU64(f, entryAt(4) + kEntOffset, 1ull << 40); }),
      "section 'constants' ends at byte " + std::to_string((1ull << 40) + 100) +
          " but the file has");
  EXPECT_HAS(edit([&](Bytes &f) {
               putU64(f, entryAt(4) + kEntOffset, 0xFFFFFFFFFFFFF000ull);
               putU64(f, entryAt(4) + kEntSize, 0x2000);
             }),
             "section 'constants' (offset");
  EXPECT_HAS(
      edit([&](Bytes &f) {
        putU64(f, entryAt(1) + kEntSize, getU64(f, entryAt(1) + kEntSize) - 1);
      }),
      "program section 'program.decode' has 23 bytes, not a multiple of 8");
  EXPECT_HAS(edit([&](Bytes &f) { putU32(f, entryAt(5) + kEntKind, 9); }),
             "section 'tokenizer' has unknown kind 9");
  EXPECT_HAS(edit([&](Bytes &f) { putU32(f, entryAt(5) + kEntFlags, 1); }),
             "section 'tokenizer' has unknown flags 0x1");
  EXPECT_HAS(edit([&](Bytes &f) { putU32(f, entryAt(4) + kEntKind, 1); }),
             "more than one manifest section");
  EXPECT_HAS(edit([&](Bytes &f) { f[entryAt(3) + 23] = 'x'; }),
             "section table entry 3: name is not NUL-padded");
  EXPECT_HAS(edit([&](Bytes &f) { f[entryAt(3) + 10] = 'x'; }),
             "section table entry 3: name is not NUL-padded");
  EXPECT_HAS(edit([&](Bytes &f) { std::memset(f.data() + entryAt(3), 0, 24); }),
             "section table entry 3: section name is empty");
  EXPECT_HAS(edit([&](Bytes &f) { f[entryAt(3)] = '/'; }),
             "section table entry 3: section name '/eights' has a character");
  EXPECT_HAS(
      edit([&](Bytes &f) { putU64(f, entryAt(4) + kEntChecksum, 5); }),
      "section 'constants' checksum mismatch (stored 0x0000000000000005");
}

TEST_F(BundleTest, RejectsBadManifests) {
  auto withManifest = [&](const std::string &text) {
    BundleWriter w;
    std::string err;
    EXPECT_TRUE(w.addSection("manifest", SectionKind::Manifest, text.data(),
                             text.size(), &err));
    EXPECT_TRUE(w.write(path("m.pccx"), &err)) << err;
    return openError(readAll(path("m.pccx")));
  };
  EXPECT_HAS(withManifest("{\"a\": "), "section 'manifest': invalid JSON: ");
  EXPECT_HAS(withManifest("[1, 2]"),
             "section 'manifest': the manifest is not a JSON object");
}

//===----------------------------------------------------------------------===//
// Manifest conventions
//===----------------------------------------------------------------------===//

TEST(ManifestTest, Annotations) {
  json m = json::object();
  std::string err;
  EXPECT_TRUE(setAnnotations(m, "program.decode", {"a", "", "c"}, &err));
  EXPECT_FALSE(setAnnotations(m, "program.decode", {"x"}, &err));
  EXPECT_HAS(err, "already has annotations for 'program.decode'");
  EXPECT_EQ(annotationsOf(m, "program.decode"),
            (std::vector<std::string>{"a", "", "c"}));
  EXPECT_TRUE(annotationsOf(m, "program.other").empty());
  m["annotations"]["program.mixed"] = json::array({"s", nullptr, 5});
  EXPECT_EQ(annotationsOf(m, "program.mixed"),
            (std::vector<std::string>{"s", "", "5"}));
  json bad = {{"annotations", 3}};
  EXPECT_TRUE(annotationsOf(bad, "x").empty());
  EXPECT_FALSE(setAnnotations(bad, "x", {}, &err));
}

TEST(ManifestTest, PatchPoints) {
  std::vector<PatchPoint> pp;
  std::string err;
  json m = {{"patch_points", json::array({{{"program", "program.decode"},
                                           {"index", 3},
                                           {"field", "src_addr"},
                                           {"value", "position"}}})}};
  ASSERT_TRUE(parsePatchPoints(m, pp, &err)) << err;
  ASSERT_EQ(pp.size(), 1u);
  EXPECT_EQ(pp[0].index, 3u);
  EXPECT_EQ(pp[0].scale, 1);
  EXPECT_EQ(pp[0].offset, 0);
  EXPECT_EQ(toJson(pp[0])["field"], "src_addr");

  m["patch_points"][0]["index"] = "three";
  EXPECT_FALSE(parsePatchPoints(m, pp, &err));
  EXPECT_HAS(err, "patch_points[0]: 'index' must be an integer");
  m["patch_points"][0]["index"] = -1;
  EXPECT_FALSE(parsePatchPoints(m, pp, &err));
  m["patch_points"][0].erase("index");
  EXPECT_FALSE(parsePatchPoints(m, pp, &err));
  EXPECT_HAS(err, "'index' is missing");
  m["patch_points"] = 1;
  EXPECT_FALSE(parsePatchPoints(m, pp, &err));
  EXPECT_TRUE(parsePatchPoints(json::object(), pp, &err));
  EXPECT_TRUE(pp.empty());

  PatchPoint p{"program.decode", 0, "aux_addr", "token_id", 1, 0};
  EXPECT_EQ(checkPatchPoint(p, encode("memcpy from_device=1 aux_addr=5")), "");
  EXPECT_HAS(checkPatchPoint(p, encode("gemv dest_reg=1")),
             "'gemv' has no field named 'aux_addr'");
  EXPECT_HAS(checkPatchPoint(p, 0x5000000000000000ull), "does not decode");
}

//===----------------------------------------------------------------------===//
// Assembler and objdump libraries
//===----------------------------------------------------------------------===//

TEST(AssemblerTest, ProgramsWordsAndAnnotations) {
  std::vector<AssembledProgram> programs;
  std::vector<AsmDiagnostic> errors;
  const char *src = "# header comment\n"
                    "gemv dest_reg=0x10 ; first\n"
                    "\n"
                    ".program decode\n"
                    "  cvo cvo_func=exp length=4   # dropped\n"
                    ".word 0x5000000000000000 ; raw\n"
                    ".program program.prefill\n";
  ASSERT_TRUE(assembleText(src, "main", programs, errors))
      << errors.front().line << ": " << errors.front().message;
  ASSERT_EQ(programs.size(), 3u);
  EXPECT_EQ(programs[0].name, "program.main");
  EXPECT_EQ(programs[0].words,
            std::vector<uint64_t>{encode("gemv dest_reg=0x10")});
  EXPECT_EQ(programs[0].annotations, std::vector<std::string>{"first"});
  EXPECT_EQ(programs[1].name, "program.decode");
  EXPECT_EQ(programs[1].line, 4u);
  EXPECT_EQ(programs[1].words,
            (std::vector<uint64_t>{encode("cvo cvo_func=exp length=4"),
                                   0x5000000000000000ull}));
  EXPECT_EQ(programs[1].annotations, (std::vector<std::string>{"", "raw"}));
  EXPECT_EQ(programs[2].name, "program.prefill");
  EXPECT_TRUE(programs[2].words.empty());

  // An unused default program is dropped when others exist.
  ASSERT_TRUE(assembleText(".program a\ngemv\n", "main", programs, errors));
  ASSERT_EQ(programs.size(), 1u);
  EXPECT_EQ(programs[0].name, "program.a");
}

TEST(AssemblerTest, ErrorsCarryLineNumbers) {
  std::vector<AssembledProgram> programs;
  std::vector<AsmDiagnostic> errors;
  EXPECT_FALSE(
      assembleText("gemv\nfoo\r\n\ngemv dest_reg=0x20000\n.program main\n"
                   ".bogus\n",
                   "main", programs, errors));
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(errors[0].line, 2u);
  EXPECT_EQ(errors[0].message, "unknown mnemonic 'foo'");
  EXPECT_EQ(errors[1].line, 4u);
  EXPECT_HAS(errors[1].message, "does not fit in 17 bits");
  EXPECT_EQ(errors[2].line, 5u);
  EXPECT_HAS(errors[2].message, "already defined");
  EXPECT_EQ(errors[3].line, 6u);
  EXPECT_EQ(errors[3].message, "unknown directive '.bogus'");
}

TEST_F(BundleTest, AssembledBundleChecksPatchPoints) {
  std::vector<AssembledProgram> programs;
  std::vector<AsmDiagnostic> errors;
  ASSERT_TRUE(assembleText("gemv ; g\nmemcpy from_device=1\n", "decode",
                           programs, errors));
  std::string err;
  json base = {
      {"patch_points", json::array({toJson({"program.decode", 1, "aux_addr",
                                            "token_id", 1, 0})})}};
  {
    BundleWriter w;
    ASSERT_TRUE(addAssembledSections(programs, base, w, &err)) << err;
    ASSERT_TRUE(w.write(path("a.pccx"), &err)) << err;
  }
  std::unique_ptr<Bundle> b = Bundle::open(path("a.pccx"), &err);
  ASSERT_NE(b, nullptr) << err;
  EXPECT_EQ(b->manifest()["producer"], "pccx-as");
  EXPECT_EQ(annotationsOf(b->manifest(), "program.decode"),
            (std::vector<std::string>{"g", ""}));

  base["patch_points"][0]["index"] = 0; // a gemv has no aux_addr
  BundleWriter w2;
  EXPECT_FALSE(addAssembledSections(programs, base, w2, &err));
  EXPECT_HAS(err, "patch_points[0]: 'gemv' has no field named 'aux_addr'");
  base["patch_points"][0]["index"] = 2;
  EXPECT_FALSE(addAssembledSections(programs, base, w2, &err));
  EXPECT_HAS(err, "word 2 is past the end of 'program.decode' (2 words)");
}

TEST_F(BundleTest, ObjdumpShowsAMismatchedBundle) {
  BundleWriter w;
  fillSample(w);
  w.setMachineDigest(1);
  std::string err;
  ASSERT_TRUE(w.write(path("o.pccx"), &err));
  ObjdumpOptions o;
  o.files = {path("o.pccx")};
  std::ostringstream out, diag;
  EXPECT_EQ(runObjdump(o, out, diag), 0) << diag.str();
  EXPECT_HAS(out.str(),
             "machine digest   0x0000000000000001 (MISMATCH: this build is");
  EXPECT_HAS(out.str(), "Disassembly of section 'program.decode' (3 words):");
  EXPECT_HAS(out.str(), "[patch aux_addr = token_id * 16 + 64]");
  EXPECT_HAS(out.str(), "weights");
  EXPECT_HAS(diag.str(), "pccx-objdump: warning: " + path("o.pccx"));
}

TEST_F(BundleTest, ObjdumpReportsInvalidWordsAndDamage) {
  BundleWriter w;
  std::string err;
  ASSERT_TRUE(
      w.addProgram("program.p", {encode("gemv"), 0x5000000000000000ull}, &err));
  ASSERT_TRUE(w.write(path("p.pccx"), &err));
  ObjdumpOptions o;
  o.disassemble = true;
  o.files = {path("p.pccx")};
  std::ostringstream out, diag;
  EXPECT_EQ(runObjdump(o, out, diag), 1);
  EXPECT_HAS(out.str(),
             "1: 0x5000000000000000  <invalid: word 0x5000000000000000: "
             "opcode 0x5 is reserved>");
  EXPECT_HAS(diag.str(), "pccx-objdump: error: " + path("p.pccx") +
                             ": section 'program.p' word 1: ");

  Bytes f = readAll(path("p.pccx"));
  f[4096] ^= 1;
  writeAll(path("p.pccx"), f);
  std::ostringstream out2, diag2;
  EXPECT_EQ(runObjdump(o, out2, diag2), 1);
  EXPECT_HAS(diag2.str(), "pccx-objdump: error: " + path("p.pccx") +
                              ": section 'program.p' checksum mismatch");
  o.verify = false;
  o.sections = true;
  std::ostringstream out3, diag3;
  runObjdump(o, out3, diag3);
  EXPECT_HAS(out3.str(), "unchecked");
}

TEST(ObjdumpTest, RawWords) {
  std::string line, err;
  ASSERT_TRUE(formatRawWord("0x3010_0010_8000_1000", line, &err)) << err;
  EXPECT_EQ(line,
            "0x3010001080001000  memset dest_cache=fmap_shape dest_addr=1 "
            "a_value=1 b_value=2048 c_value=256");
  EXPECT_TRUE(formatRawWord("0", line, &err));
  EXPECT_FALSE(formatRawWord("0x", line, &err));
  EXPECT_FALSE(formatRawWord("0x_1", line, &err));
  EXPECT_FALSE(formatRawWord("1_", line, &err));
  EXPECT_FALSE(formatRawWord("12345678901234567", line, &err));
  EXPECT_HAS(err, "is not a 64-bit hexadecimal word");
  EXPECT_FALSE(formatRawWord("0x3800000000000000", line, &err));
  EXPECT_HAS(err, "field 'dest_cache' value 2 is undefined");
}

} // namespace

// The chat template kinds pccx-objdump --info and pccx-run --chat report.
#include "runtime/bundle/ChatTemplate.h"

TEST(ChatTemplate, Classification) {
  using pccx::bundle::ChatTemplate;
  using pccx::bundle::classifyChatTemplate;
  EXPECT_EQ(classifyChatTemplate("").source, ChatTemplate::Source::BuiltIn);
  EXPECT_EQ(classifyChatTemplate("{{ '<start_of_turn>' + role + '\\n' }}"
                                 "{% set role = \"model\" %}<end_of_turn>")
                .source,
            ChatTemplate::Source::Bundle);
  EXPECT_EQ(classifyChatTemplate("<start_of_turn>model\n<end_of_turn>").source,
            ChatTemplate::Source::Bundle);
  // Markers without the model role, and other layouts, are not Gemma's.
  EXPECT_EQ(classifyChatTemplate("<start_of_turn><end_of_turn>").source,
            ChatTemplate::Source::NotGemmaStyle);
  EXPECT_EQ(classifyChatTemplate("<|im_start|>{{ m.role }}<|im_end|>").source,
            ChatTemplate::Source::NotGemmaStyle);
  EXPECT_EQ(pccx::bundle::chatTemplateOf(nlohmann::json::object()).source,
            ChatTemplate::Source::BuiltIn);
  nlohmann::json manifest = {{"chat_template", "<start_of_turn>model"}};
  EXPECT_EQ(pccx::bundle::chatTemplateOf(manifest).source,
            ChatTemplate::Source::NotGemmaStyle);
  EXPECT_NE(pccx::bundle::describe(pccx::bundle::chatTemplateOf(manifest))
                .find("not interpreted"),
            std::string::npos);
}
