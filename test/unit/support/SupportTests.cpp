//===- SupportTests.cpp - checked arithmetic and output files -------------===//

#include "hw/abi/HostAbi.h"
#include "hw/support/CheckedMath.h"
#include "hw/support/OutputFile.h"
#include "tools/common/OutputCleanup.h"

#include <gtest/gtest.h>

#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace pccx;

TEST(CheckedMath, RefusesWhatWouldWrap) {
  uint64_t u;
  EXPECT_TRUE(checkedMul<uint64_t>(uint64_t(1) << 31, uint64_t(1) << 32, &u));
  EXPECT_EQ(u, uint64_t(1) << 63);
  EXPECT_FALSE(checkedMul<uint64_t>(uint64_t(1) << 40, uint64_t(1) << 24, &u));
  int64_t s;
  EXPECT_FALSE(
      checkedMulAdd<int64_t>(int64_t(1) << 31, int64_t(1) << 62, 0, &s));
  EXPECT_FALSE(checkedMulAdd<int64_t>(1, INT64_MAX, 1, &s));
  EXPECT_TRUE(checkedMulAdd<int64_t>(3, -4, 5, &s));
  EXPECT_EQ(s, -7);
  EXPECT_TRUE(rangeInside(8, 8, 16));
  EXPECT_FALSE(rangeInside(8, 9, 16));
  EXPECT_FALSE(rangeInside(UINT64_MAX, 2, 16));
  EXPECT_FALSE(arrayInside(0, uint64_t(1) << 40, uint64_t(1) << 24, 64));
  EXPECT_TRUE(arrayInside(16, 12, 4, 64));
}

TEST(CheckedMath, HostRegionSpanCannotWrap) {
  // (rows - 1) * stride = (2^40 - 1) * 2^40 does not fit 64 bits.
  const int64_t big = int64_t(1) << 40;
  pccx::abi::HostRegion r{0, 8, big, big};
  EXPECT_NE(r.check(big).find("reaches past the host window"),
            std::string::npos);
  EXPECT_EQ((pccx::abi::HostRegion{0, 8, 4, 2}).check(big), "");
}

namespace {

class OutputFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pccx-output-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    (void)std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string read(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// Entries of the directory: no temp file may be left behind.
  int entries() {
    int n = 0;
    DIR *d = opendir(dir_.c_str());
    while (dirent *e = readdir(d))
      n += e->d_name[0] != '.';
    closedir(d);
    return n;
  }
  std::string dir_;
};

} // namespace

TEST_F(OutputFileTest, ReplacesARegularFileWhole) {
  std::string path = dir_ + "/out.bin", error;
  ASSERT_TRUE(writeOutputFile(path, "first", 5, &error)) << error;
  ASSERT_TRUE(writeOutputFile(path, "second", 6, &error)) << error;
  EXPECT_EQ(read(path), "second");
  EXPECT_EQ(entries(), 1);
}

TEST_F(OutputFileTest, ASymlinkStaysALinkAndItsTargetIsReplaced) {
  std::string target = dir_ + "/target", link = dir_ + "/link", error;
  ASSERT_TRUE(writeOutputFile(target, "old", 3, &error)) << error;
  ASSERT_EQ(symlink("target", link.c_str()), 0);
  ASSERT_TRUE(writeOutputFile(link, "new", 3, &error)) << error;
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(read(target), "new");
  EXPECT_EQ(entries(), 2);
}

TEST_F(OutputFileTest, ADeviceIsWrittenInPlace) {
  std::string error;
  ASSERT_TRUE(writeOutputFile("/dev/null", "x", 1, &error)) << error;
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(OutputFileTest, AFifoIsWrittenInPlace) {
  std::string fifo = dir_ + "/fifo", error, got;
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread reader([&] { got = read(fifo); });
  EXPECT_TRUE(writeOutputFile(fifo, "piped", 5, &error)) << error;
  reader.join();
  EXPECT_EQ(got, "piped");
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(OutputFileTest, AnAbandonedOutputLeavesNothing) {
  std::string path = dir_ + "/out.bin", error;
  {
    OutputFile out;
    ASSERT_TRUE(out.open(path, &error)) << error;
    EXPECT_TRUE(out.replaces());
    std::fputs("partial", out.stream());
  }
  EXPECT_EQ(entries(), 0);
  // Two outputs of one path at once get distinct temp files.
  OutputFile a, b;
  ASSERT_TRUE(a.open(path, &error) && b.open(path, &error)) << error;
  std::fputs("a", a.stream());
  std::fputs("b", b.stream());
  ASSERT_TRUE(a.commit(&error) && b.commit(&error)) << error;
  EXPECT_EQ(read(path), "b");
  EXPECT_EQ(entries(), 1);
}

TEST_F(OutputFileTest, ADirectoryIsRefusedByName) {
  std::string error;
  EXPECT_FALSE(writeOutputFile(dir_, "x", 1, &error));
  EXPECT_EQ(error, dir_ + ": is a directory");
}

TEST_F(OutputFileTest, CopyRegularFileCopiesEveryByteAndRefusesAFifo) {
  std::string from = dir_ + "/from", to = dir_ + "/to", error;
  std::string bytes(3 * (size_t(1) << 20) + 7, '\0'); // over three chunks
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = char(i * 7 + i / 4096);
  ASSERT_TRUE(writeOutputFile(from, bytes.data(), bytes.size(), &error));
  ASSERT_TRUE(copyRegularFile(from, to, &error)) << error;
  EXPECT_EQ(read(to), bytes);
  std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(copyRegularFile(fifo, dir_ + "/copy", &error));
  EXPECT_NE(error.find("a FIFO"), std::string::npos) << error;
  EXPECT_EQ(entries(), 3); // from, to, fifo: no temp file left
}

TEST_F(OutputFileTest, ResolvedPathFollowsLinksAndNamesWhatIsNotThereYet) {
  char real[PATH_MAX];
  ASSERT_NE(realpath(dir_.c_str(), real), nullptr);
  const std::string base = real;
  ASSERT_EQ(mkdir((dir_ + "/target").c_str(), 0755), 0);
  ASSERT_EQ(symlink("target", (dir_ + "/link").c_str()), 0);
  EXPECT_EQ(resolvedPath(dir_ + "/link"), base + "/target");
  EXPECT_EQ(resolvedPath(dir_ + "/link/"), base + "/target");
  EXPECT_EQ(resolvedPath(dir_ + "/link/new/../x"), base + "/target/x");
  EXPECT_EQ(resolvedPath(dir_ + "/missing/../link/./y"), base + "/target/y");
  EXPECT_EQ(resolvedPath("/"), "/");
}

TEST_F(OutputFileTest, ADirectoryAppearsWholeOnCommit) {
  std::string path = dir_ + "/ckpt", error;
  OutputDirectory out;
  ASSERT_TRUE(out.open(path, &error)) << error;
  ASSERT_TRUE(writeOutputFile(out.tempPath() + "/a", "a", 1, &error));
  struct stat st;
  EXPECT_NE(stat(path.c_str(), &st), 0); // nothing at the path yet
  ASSERT_TRUE(out.commit(/*replace=*/false, &error)) << error;
  EXPECT_EQ(read(path + "/a"), "a");
  EXPECT_EQ(entries(), 1);
}

TEST_F(OutputFileTest, ADirectoryReplacesAnotherWholeOnlyWhenAsked) {
  std::string path = dir_ + "/ckpt", error;
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  ASSERT_TRUE(writeOutputFile(path + "/old-shard", "1", 1, &error));
  ASSERT_TRUE(writeOutputFile(path + "/old-index", "2", 1, &error));
  {
    OutputDirectory out;
    ASSERT_TRUE(out.open(path, &error)) << error;
    ASSERT_TRUE(writeOutputFile(out.tempPath() + "/new", "n", 1, &error));
    EXPECT_FALSE(out.commit(/*replace=*/false, &error));
    EXPECT_NE(error.find("is not empty"), std::string::npos) << error;
  }
  EXPECT_EQ(read(path + "/old-shard"), "1");
  EXPECT_EQ(entries(), 1); // the temp directory went
  OutputDirectory out;
  ASSERT_TRUE(out.open(path, &error)) << error;
  ASSERT_TRUE(writeOutputFile(out.tempPath() + "/new", "n", 1, &error));
  ASSERT_TRUE(out.commit(/*replace=*/true, &error)) << error;
  EXPECT_EQ(read(path + "/new"), "n");
  struct stat st;
  EXPECT_NE(stat((path + "/old-shard").c_str(), &st), 0);
  EXPECT_NE(stat((path + "/old-index").c_str(), &st), 0);
  EXPECT_EQ(entries(), 1);
}

TEST_F(OutputFileTest, RemovePartialOutputsRemovesATempDirectoryWithItsFiles) {
  std::string error;
  OutputDirectory out;
  ASSERT_TRUE(out.open(dir_ + "/ckpt", &error)) << error;
  ASSERT_TRUE(writeOutputFile(out.tempPath() + "/done", "d", 1, &error));
  OutputFile partial;
  ASSERT_TRUE(partial.open(out.tempPath() + "/partial", &error)) << error;
  EXPECT_EQ(entries(), 1);
  removePartialOutputs();
  EXPECT_EQ(entries(), 0);
}

TEST_F(OutputFileTest, ADirectoryOutputNeverHoldsTheWorkingDirectory) {
  char saved[PATH_MAX];
  ASSERT_NE(getcwd(saved, sizeof saved), nullptr);
  std::string inner = dir_ + "/inner", error;
  ASSERT_EQ(mkdir(inner.c_str(), 0755), 0);
  ASSERT_EQ(chdir(inner.c_str()), 0);
  OutputDirectory out;
  EXPECT_FALSE(out.open(".", &error));
  EXPECT_NE(error.find("is the working directory or holds it"),
            std::string::npos)
      << error;
  EXPECT_FALSE(out.open(dir_, &error));
  ASSERT_EQ(chdir(saved), 0);
  EXPECT_EQ(entries(), 1);
}

// Run in a fresh process (below) whose SIGINT its parent ignores: with the
// tools' handlers installed, the signal must neither stop the write nor
// remove its temp file.
TEST(OutputFileIgnoredSignal, Helper) {
  const char *path = std::getenv("PCCX_OUTPUT_IGNORED_SIGINT");
  if (!path)
    return; // only meaningful in the process the next test starts
  pccx::tools::installOutputCleanup();
  OutputFile out;
  std::string error;
  if (!out.open(path, &error))
    _exit(3);
  std::fputs("whole", out.stream());
  raise(SIGINT);
  _exit(out.commit(&error) ? 0 : 4);
}

TEST_F(OutputFileTest, AnIgnoredSigintLeavesTheOutputAlone) {
  std::string path = dir_ + "/out.bin";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGINT, SIG_IGN); // inherited by the program it runs
    setenv("PCCX_OUTPUT_IGNORED_SIGINT", path.c_str(), 1);
    execl("/proc/self/exe", "PccxSupportTests",
          "--gtest_filter=OutputFileIgnoredSignal.Helper", (char *)nullptr);
    _exit(5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  // Under a user-mode emulator /proc/self/exe is the emulator, and the
  // test binary cannot be executed again from inside it.
  if (WEXITSTATUS(status) == 5)
    GTEST_SKIP() << "the test binary cannot re-execute itself here";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read(path), "whole");
  EXPECT_EQ(entries(), 1);
}

TEST_F(OutputFileTest, RemovePartialOutputsRemovesOnlyUncommittedTemps) {
  std::string error;
  OutputFile done, partial;
  ASSERT_TRUE(done.open(dir_ + "/done.bin", &error)) << error;
  std::fputs("whole", done.stream());
  ASSERT_TRUE(done.commit(&error)) << error;
  ASSERT_TRUE(partial.open(dir_ + "/partial.bin", &error)) << error;
  EXPECT_EQ(entries(), 2); // done.bin and partial's temp file
  removePartialOutputs();
  EXPECT_EQ(entries(), 1);
  EXPECT_EQ(read(dir_ + "/done.bin"), "whole");
}

// The tools' handler (tools/common/OutputCleanup.h): the temp file goes, then
// the signal ends the process as it would have.
TEST_F(OutputFileTest, SigtermRemovesTheTempFile) {
  std::string path = dir_ + "/out.bin";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGTERM, SIG_DFL);
    pccx::tools::installOutputCleanup();
    OutputFile out;
    std::string error;
    if (!out.open(path, &error))
      _exit(3);
    std::fputs("partial", out.stream());
    std::fflush(out.stream());
    raise(SIGTERM);
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_EQ(entries(), 0);
}
