//===- UDmaBufTests.cpp - mapping u-dma-buf and its cache commands --------===//
//
// A scratch directory stands in for /sys/class/u-dma-buf and /dev: the
// buffer is a plain file (mmap works on it as on the device), and the
// sync_for_cpu / sync_for_device attributes are plain files that keep the
// last command written, which is what these tests read back.
//
//===----------------------------------------------------------------------===//

#include "runtime/devices/UDmaBuf.h"

#include "test/unit/devices/FakeSysfs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace pccx::device;
using pccx::testsupport::FakeSysfs;

namespace {

constexpr size_t kBufferBytes = 8 << 20; // 8 MiB
constexpr size_t kWindowBytes = 2 << 20; // the host window: 2 MiB

/// u-dma-buf "udmabuf0": phys_addr, size, and a backing file as /dev node.
struct FakeUdmabuf {
  FakeSysfs sys;
  UdmabufPaths paths;
  explicit FakeUdmabuf(bool syncFiles = true, int coherent = 0) {
    sys.file("class/udmabuf0/phys_addr", "0x0000000060000000");
    sys.file("class/udmabuf0/size", std::to_string(kBufferBytes));
    sys.file("class/udmabuf0/dma_coherent", std::to_string(coherent));
    if (syncFiles) {
      sys.file("class/udmabuf0/sync_for_cpu", "0");
      sys.file("class/udmabuf0/sync_for_device", "0");
    }
    sys.file("dev/udmabuf0", "");
    truncate((sys.root + "/dev/udmabuf0").c_str(), kBufferBytes);
    paths.sysfsRoot = sys.root + "/class";
    paths.devRoot = sys.root + "/dev";
  }
  /// The last command written to sync_for_cpu / sync_for_device.
  uint64_t command(const char *file) const {
    return std::stoull(sys.read(std::string("class/udmabuf0/") + file),
                       nullptr, 0);
  }
  std::vector<uint8_t> fileBytes(size_t offset, size_t bytes) const {
    std::ifstream in(sys.root + "/dev/udmabuf0", std::ios::binary);
    in.seekg(std::streamoff(offset));
    std::vector<uint8_t> out(bytes);
    in.read(reinterpret_cast<char *>(out.data()), std::streamsize(bytes));
    return out;
  }
};

uint64_t syncCommand(uint64_t offset, uint64_t size, unsigned direction) {
  return (offset << 32) | size | (uint64_t(direction) << 2) | 1;
}

} // namespace

TEST(UDmaBuf, ParsesTheCachingModes) {
  WindowCaching mode;
  for (const char *name : {"auto", "cached", "uncached"}) {
    ASSERT_TRUE(parseWindowCaching(name, &mode)) << name;
    EXPECT_STREQ(windowCachingName(mode), name);
  }
  EXPECT_FALSE(parseWindowCaching("write-combine", &mode));
}

TEST(UDmaBuf, AutoCachesTheWindowAndSendsCacheCommandsForIt) {
  FakeUdmabuf fake;
  std::string error;
  auto buffer =
      openUdmabuf("udmabuf0", kWindowBytes, WindowCaching::Auto, &error,
                  fake.paths);
  ASSERT_TRUE(buffer) << error;
  EXPECT_EQ(buffer->physical(), 0x60000000ull);
  EXPECT_EQ(buffer->size(), kBufferBytes);
  EXPECT_TRUE(buffer->mapping().windowCached);
  EXPECT_FALSE(buffer->mapping().coherent);
  EXPECT_EQ(buffer->mapping().cachedBytes, kWindowBytes);

  // One contiguous range: the cached window and the uncached rest both
  // reach the buffer at their own offsets.
  buffer->data()[100] = 0xAB;
  buffer->data()[kWindowBytes + 5] = 0xCD;
  EXPECT_EQ(fake.fileBytes(100, 1)[0], 0xAB);
  EXPECT_EQ(fake.fileBytes(kWindowBytes + 5, 1)[0], 0xCD);

  // Ranges widen to whole 64-byte lines; offset in the high word, size in
  // the low word with the direction (1: to device, 2: from device).
  ASSERT_TRUE(buffer->flush(100, 10, &error)) << error;
  EXPECT_EQ(fake.command("sync_for_device"), syncCommand(64, 64, 1));
  ASSERT_TRUE(buffer->invalidate(4096 + 60, 8, &error)) << error;
  EXPECT_EQ(fake.command("sync_for_cpu"), syncCommand(4096, 128, 2));
  // A range past the window's end is cut at it.
  ASSERT_TRUE(buffer->flush(kWindowBytes - 64, 4096, &error)) << error;
  EXPECT_EQ(fake.command("sync_for_device"),
            syncCommand(kWindowBytes - 64, 64, 1));
}

TEST(UDmaBuf, TheUncachedRestNeedsNoCommands) {
  FakeUdmabuf fake;
  std::string error;
  auto buffer = openUdmabuf("udmabuf0", kWindowBytes, WindowCaching::Auto,
                            &error, fake.paths);
  ASSERT_TRUE(buffer) << error;
  ASSERT_TRUE(buffer->flush(kWindowBytes, 1 << 20, &error)) << error;
  ASSERT_TRUE(buffer->invalidate(kWindowBytes + 4096, 64, &error)) << error;
  EXPECT_EQ(fake.command("sync_for_device"), 0u);
  EXPECT_EQ(fake.command("sync_for_cpu"), 0u);
}

TEST(UDmaBuf, UncachedOnRequestOrWithoutCacheCommands) {
  for (bool syncFiles : {true, false}) {
    FakeUdmabuf fake(syncFiles);
    std::string error;
    auto buffer = openUdmabuf("udmabuf0", kWindowBytes,
                              syncFiles ? WindowCaching::Uncached
                                        : WindowCaching::Auto,
                              &error, fake.paths);
    ASSERT_TRUE(buffer) << error;
    EXPECT_FALSE(buffer->mapping().windowCached);
    EXPECT_EQ(buffer->mapping().cachedBytes, 0u);
    ASSERT_TRUE(buffer->flush(0, 64, &error)) << error;
    if (syncFiles) {
      EXPECT_EQ(fake.command("sync_for_device"), 0u);
    }
  }
}

TEST(UDmaBuf, CoherentBuffersAreCachedWithoutCommands) {
  FakeUdmabuf fake(/*syncFiles=*/true, /*coherent=*/1);
  std::string error;
  auto buffer = openUdmabuf("udmabuf0", kWindowBytes, WindowCaching::Cached,
                            &error, fake.paths);
  ASSERT_TRUE(buffer) << error;
  EXPECT_TRUE(buffer->mapping().windowCached);
  EXPECT_TRUE(buffer->mapping().coherent);
  ASSERT_TRUE(buffer->flush(0, 64, &error)) << error;
  ASSERT_TRUE(buffer->invalidate(0, 64, &error)) << error;
  EXPECT_EQ(fake.command("sync_for_device"), 0u);
  EXPECT_EQ(fake.command("sync_for_cpu"), 0u);
}

TEST(UDmaBuf, CachedWithoutMeansToKeepItConsistentIsAnError) {
  FakeUdmabuf fake(/*syncFiles=*/false);
  std::string error;
  EXPECT_FALSE(openUdmabuf("udmabuf0", kWindowBytes, WindowCaching::Cached,
                           &error, fake.paths));
  EXPECT_NE(error.find("udmabuf0/: no writable sync_for_cpu/sync_for_device"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("--dma-window uncached"), std::string::npos) << error;
}

TEST(UDmaBuf, MissingBufferIsReported) {
  FakeSysfs sys;
  UdmabufPaths paths{sys.root + "/class", sys.root + "/dev"};
  std::string error;
  EXPECT_FALSE(openUdmabuf("udmabuf0", kWindowBytes, WindowCaching::Auto,
                           &error, paths));
  EXPECT_NE(error.find("cannot read phys_addr/size (is u-dma-buf loaded?"),
            std::string::npos)
      << error;
}

TEST(UDmaBuf, AFailedCacheCommandIsAnError) {
  FakeUdmabuf fake;
  // An attribute that refuses every write (ENOSPC).
  const std::string attr = fake.sys.root + "/class/udmabuf0/sync_for_cpu";
  ASSERT_EQ(unlink(attr.c_str()), 0);
  ASSERT_EQ(symlink("/dev/full", attr.c_str()), 0);
  std::string error;
  auto buffer = openUdmabuf("udmabuf0", kWindowBytes, WindowCaching::Auto,
                            &error, fake.paths);
  ASSERT_TRUE(buffer) << error;
  EXPECT_FALSE(buffer->invalidate(0, 64, &error));
  EXPECT_NE(error.find("udmabuf0/sync_for_cpu: No space left on device"),
            std::string::npos)
      << error;
}
