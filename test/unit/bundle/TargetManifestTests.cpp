//===- TargetManifestTests.cpp - the target a bundle records --------------===//
//
// The manifest key "target": absent means v002, a known name selects its
// profile, anything else is an error that pccx-objdump reports while still
// showing the words.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/Manifest.h"
#include "runtime/bundle/Objdump.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <unistd.h>

using namespace pccx;
using namespace pccx::bundle;
using nlohmann::json;

namespace {

TEST(TargetOf, AbsentKnownAndUnknown) {
  machine::Target t = machine::Target::V002Rtl;
  std::string err;
  ASSERT_TRUE(targetOf(json::object(), t, &err));
  EXPECT_EQ(t, machine::Target::V002);
  ASSERT_TRUE(targetOf(json{{"target", "v002-rtl"}}, t, &err));
  EXPECT_EQ(t, machine::Target::V002Rtl);
  EXPECT_FALSE(targetOf(json{{"target", "v003"}}, t, &err));
  EXPECT_EQ(err, "\"v003\" is not a known target (v002, v002-rtl)");
  EXPECT_FALSE(targetOf(json{{"target", 2}}, t, &err));
  EXPECT_EQ(err, "2 is not a known target (v002, v002-rtl)");
}

/// A bundle with one CVO word and the given manifest, opened.
std::unique_ptr<Bundle> bundleWith(const json &manifest, std::string &path) {
  std::string tmpl = ::testing::TempDir() + "pccx-target-XXXXXX";
  int fd = ::mkstemp(&tmpl[0]);
  EXPECT_GE(fd, 0);
  ::close(fd);
  path = tmpl;
  BundleWriter w;
  std::string err;
  isa::Instruction inst;
  uint64_t word = 0;
  EXPECT_TRUE(isa::assemble("cvo cvo_func=exp src_addr=0x00083 "
                            "dst_addr=0x00100 length=16",
                            inst, &err));
  EXPECT_TRUE(isa::encode(inst, word, &err));
  EXPECT_TRUE(w.addManifest(manifest, &err)) << err;
  EXPECT_TRUE(w.addProgram("program.main", {word}, &err)) << err;
  EXPECT_TRUE(w.write(path, &err)) << err;
  std::unique_ptr<Bundle> b = Bundle::open(path, &err);
  EXPECT_NE(b, nullptr) << err;
  return b;
}

TEST(TargetOf, ObjdumpNotesTheTargetsMeaning) {
  std::string path;
  std::unique_ptr<Bundle> b = bundleWith(json{{"target", "v002-rtl"}}, path);
  ASSERT_NE(b, nullptr);
  std::ostringstream header, disasm;
  printHeader(*b, header);
  EXPECT_NE(header.str().find("  target           v002-rtl\n"),
            std::string::npos)
      << header.str();
  std::vector<std::string> problems;
  EXPECT_TRUE(printDisassembly(*b, disasm, &problems));
  EXPECT_NE(disasm.str().find("; v002-rtl: elements: src word 0x00010 lane 3, "
                              "dst word 0x00020"),
            std::string::npos)
      << disasm.str();
  ::unlink(path.c_str());
}

TEST(TargetOf, ObjdumpReportsAnUnknownTarget) {
  std::string path;
  std::unique_ptr<Bundle> b = bundleWith(json{{"target", "v003"}}, path);
  ASSERT_NE(b, nullptr);
  std::ostringstream header, disasm;
  printHeader(*b, header);
  EXPECT_NE(header.str().find("target           unknown: \"v003\" is not a "
                              "known target (v002, v002-rtl)"),
            std::string::npos)
      << header.str();
  std::vector<std::string> problems;
  EXPECT_FALSE(printDisassembly(*b, disasm, &problems));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("manifest 'target': \"v003\" is not a known "
                             "target"),
            std::string::npos)
      << problems[0];
  // The words are still shown, with no note.
  EXPECT_NE(disasm.str().find("cvo cvo_func=exp src_addr=0x00083"),
            std::string::npos);
  EXPECT_EQ(disasm.str().find("v002-rtl:"), std::string::npos);
  ::unlink(path.c_str());
}

} // namespace
