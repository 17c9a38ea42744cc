//===- CommandLineTests.cpp - the tools' option layer ---------------------===//

#include "tools/common/CommandLine.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

using pccx::tools::closestOption;
using pccx::tools::CommandLine;
using pccx::tools::optionDistance;

namespace {

/// Runs `cl` over the arguments; returns the status and collects stderr.
struct Parsed {
  bool goOn = false;
  int status = -1;
  std::string err, out;
};

Parsed parse(CommandLine &cl, std::initializer_list<const char *> args) {
  std::vector<std::string> words = {"tool"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &w : words)
    argv.push_back(w.data());
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  Parsed run;
  run.goOn = cl.parse(int(argv.size()), argv.data(), &run.status);
  run.out = testing::internal::GetCapturedStdout();
  run.err = testing::internal::GetCapturedStderr();
  return run;
}

} // namespace

TEST(CommandLine, DistanceCountsOneEditEach) {
  EXPECT_EQ(optionDistance("--port", "--port"), 0u);
  EXPECT_EQ(optionDistance("--prot", "--port"), 1u); // swapped neighbours
  EXPECT_EQ(optionDistance("--por", "--port"), 1u);
  EXPECT_EQ(optionDistance("--temprature", "--temperature"), 1u);
  EXPECT_EQ(optionDistance("", "--x"), 3u);
}

TEST(CommandLine, SuggestsOnlyCloseOptions) {
  std::vector<std::string> declared = {"-o", "--port", "--host",
                                       "--max-new-tokens", "--json"};
  EXPECT_EQ(closestOption("--prot", declared), "--port");
  EXPECT_EQ(closestOption("--max-new-token=3", declared), "--max-new-tokens");
  EXPECT_EQ(closestOption("--max-new", declared), "--max-new-tokens"); // prefix
  EXPECT_EQ(closestOption("--bogus", declared), "");
  EXPECT_EQ(closestOption("--xyz", declared), "");
}

TEST(CommandLine, ReadsEverySpellingOfAValue) {
  std::string out, file;
  int64_t n = 0;
  double x = 0;
  bool flag = false, given = false;
  std::vector<std::string> rest;
  CommandLine cl("tool");
  cl.text("-o, --output", &out);
  cl.count("--count", &n, &given);
  cl.number("--x", &x);
  cl.flag("--flag", &flag);
  cl.positionals("file", &rest);
  Parsed r = parse(cl, {"-oA", "--count=7", "--x", "-0.5", "in", "--flag", "--",
                     "--not-an-option"});
  EXPECT_TRUE(r.goOn) << r.err;
  EXPECT_EQ(out, "A");
  EXPECT_EQ(n, 7);
  EXPECT_TRUE(given);
  EXPECT_EQ(x, -0.5);
  EXPECT_TRUE(flag);
  EXPECT_EQ(rest, (std::vector<std::string>{"in", "--not-an-option"}));
  Parsed again = parse(cl, {"--output", "B"});
  EXPECT_TRUE(again.goOn);
  EXPECT_EQ(out, "B");
}

TEST(CommandLine, ReportsBadValuesNamingTheOption) {
  int64_t n = 0;
  double x = 0;
  bool flag = false;
  std::string one;
  CommandLine cl("tool");
  cl.count("--count", &n);
  cl.number("--x", &x);
  cl.flag("--flag", &flag);
  cl.range("--port", 0, 65535, [](int64_t) {});
  cl.range("--wait", 1, 60, [](int64_t) {}, "seconds");
  cl.values("--pair", 2, [](const std::vector<std::string> &) {
    return std::string();
  });
  cl.positional("bundle", &one);
  auto error = [&](std::initializer_list<const char *> args) {
    Parsed r = parse(cl, args);
    EXPECT_FALSE(r.goOn);
    EXPECT_EQ(r.status, 1);
    return r.err;
  };
  EXPECT_EQ(error({"--count", "-1"}), "tool: error: --count: not a count: '-1'\n");
  EXPECT_EQ(error({"--x", "abc"}), "tool: error: --x: not a number: 'abc'\n");
  EXPECT_EQ(error({"--count"}), "tool: error: --count needs a value\n");
  EXPECT_EQ(error({"--pair", "a"}), "tool: error: --pair needs 2 values\n");
  EXPECT_EQ(error({"--flag=1"}), "tool: error: --flag takes no value\n");
  EXPECT_EQ(error({"--port", "70000"}),
            "tool: error: --port must be at most 65535\n");
  EXPECT_EQ(error({"--wait", "0"}),
            "tool: error: --wait must be between 1 and 60 seconds\n");
  EXPECT_EQ(error({"--cont", "1"}),
            "tool: error: unknown option '--cont'; did you mean '--count'? "
            "(see --help)\n");
  one.clear();
  EXPECT_EQ(error({"a", "b"}),
            "tool: error: more than one bundle given ('a' and 'b')\n");
}

TEST(CommandLine, OldNamesWarnAndActAsTheNewOne) {
  int64_t n = 0;
  CommandLine cl("tool");
  cl.count("--max-new-tokens", &n);
  cl.renamed("--generate", "--max-new-tokens");
  Parsed r = parse(cl, {"--generate", "4"});
  EXPECT_TRUE(r.goOn);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(r.err, "tool: warning: --generate is now --max-new-tokens\n");
  Parsed typo = parse(cl, {"--generat", "4"});
  EXPECT_NE(typo.err.find("did you mean '--max-new-tokens'"),
            std::string::npos);
}

TEST(CommandLine, RuntimeNamedOptionsAreTakenAndSuggested) {
  std::vector<std::pair<std::string, std::string>> taken;
  CommandLine cl("tool");
  cl.dynamic([](const std::string &name) { return name == "threads"; },
             [&](const std::string &name, const std::string &value) {
               taken.emplace_back(name, value);
               return std::string();
             },
             [] { return std::vector<std::string>{"threads"}; });
  EXPECT_TRUE(parse(cl, {"--threads", "2", "--threads=3"}).goOn);
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[1].second, "3");
  EXPECT_NE(parse(cl, {"--thread", "2"}).err.find("did you mean '--threads'"),
            std::string::npos);
}

TEST(CommandLine, HelpMustListExactlyTheOptions) {
  bool flag = false;
  std::string out;
  CommandLine cl("tool");
  cl.flag("--flag", &flag);
  cl.text("-o, --output", &out);
  const std::string complete = "OPTIONS:\n  --flag        a flag\n"
                               "  -o, --output FILE\n"
                               "                see --flag\n"
                               "  -h, --help    help\n  --version     version\n";
  EXPECT_EQ(cl.checkHelp(complete), "");
  cl.help([&] { return complete; });
  Parsed shown = parse(cl, {"--help"});
  EXPECT_FALSE(shown.goOn);
  EXPECT_EQ(shown.status, 0);
  EXPECT_EQ(shown.out, complete);

  // A declared option missing from the text, and a listed one that is not
  // declared (descriptions may name other tools' options freely).
  std::string stale = complete;
  stale.replace(stale.find("  -o, --output FILE"), 19, "  --outpt FILE");
  EXPECT_EQ(cl.checkHelp(stale), "--help does not list -o\n"
                                 "--help does not list --output\n"
                                 "--help lists --outpt, which is not an option\n");
  cl.help([&] { return stale; });
  Parsed broken = parse(cl, {"-h"});
  EXPECT_EQ(broken.status, 70);
  EXPECT_TRUE(broken.out.empty());
}

TEST(CommandLine, VersionPrintsTheProjectLine) {
  CommandLine cl("tool");
  Parsed r = parse(cl, {"--version"});
  EXPECT_FALSE(r.goOn);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, pccx::tools::versionLine("tool"));
}
