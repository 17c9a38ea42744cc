//===- DmaHeapTests.cpp - a CMA dma-heap buffer, on a fake kernel ---------===//

#include "runtime/devices/DmaHeap.h"

#include "test/unit/devices/FakeDmaHeap.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using namespace pccx::device;
using pccx::testsupport::FakeDmaHeap;

namespace {

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

const size_t kPage = size_t(sysconf(_SC_PAGESIZE));

TEST(DmaHeap, AllocatesFromTheHeapAndFindsThePhysicalAddress) {
  FakeDmaHeap kernel;
  std::string error;
  {
    auto buffer =
        openDmaHeap("reserved", 3 * kPage - 100, &error, kernel, kernel.paths);
    ASSERT_NE(buffer, nullptr) << error;
    EXPECT_EQ(kernel.allocated, 3 * kPage); // whole pages
    EXPECT_EQ(buffer->size(), 3 * kPage);
    EXPECT_EQ(buffer->physical(), kernel.firstFrame * kPage);
    EXPECT_EQ(buffer->data(), kernel.mapping);
    // The heap and pagemap are closed once read; the dma-buf stays open.
    EXPECT_EQ(kernel.closed, (std::vector<int>{FakeDmaHeap::kHeapFd,
                                               FakeDmaHeap::kPagemapFd}));
    EXPECT_TRUE(kernel.syncs.empty());
  }
  EXPECT_TRUE(kernel.unmapped);
  EXPECT_EQ(kernel.closed.back(), FakeDmaHeap::kBufferFd);
}

// The heap maps the buffer cached and the HP ports do not snoop: what the
// CPU wrote is cleaned and its write access ended before the NPU reads it;
// a read access starts and the range is invalidated before the CPU reads
// what the NPU wrote.
TEST(DmaHeap, HandOversAreSyncedAndTheirRangesMaintained) {
  FakeDmaHeap kernel;
  std::string error;
  auto buffer =
      openDmaHeap("reserved", 4 * kPage, &error, kernel, kernel.paths);
  ASSERT_NE(buffer, nullptr) << error;
  ASSERT_TRUE(buffer->flush(100, 50, &error)) << error;
  ASSERT_TRUE(buffer->invalidate(kPage, 32, &error)) << error;
  // Nothing to hand over; a range past the end is cut at it.
  ASSERT_TRUE(buffer->flush(0, 0, &error));
  ASSERT_TRUE(buffer->flush(4 * kPage - 16, 64, &error));
  EXPECT_EQ(kernel.syncs,
            (std::vector<uint64_t>{DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE,
                                   DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ,
                                   DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE}));
  EXPECT_EQ(kernel.cleaned, (std::vector<std::pair<size_t, size_t>>{
                                {100, 50}, {kPage, 32}, {4 * kPage - 16, 16}}));
}

TEST(DmaHeap, WhatStandsInTheWayIsNamed) {
  std::string error;
  {
    FakeDmaHeap kernel;
    EXPECT_EQ(openDmaHeap("linux,cma", kPage, &error, kernel, kernel.paths),
              nullptr);
    EXPECT_TRUE(contains(error, "/fake/dma_heap/linux,cma: No such file or "
                                "directory (a CMA heap: ls /dev/dma_heap"))
        << error;
  }
  {
    FakeDmaHeap kernel;
    kernel.refuseAllocation = true;
    EXPECT_EQ(openDmaHeap("reserved", 3 << 20, &error, kernel, kernel.paths),
              nullptr);
    EXPECT_TRUE(contains(error, "/fake/dma_heap/reserved: cannot allocate 3 "
                                "MiB: Cannot allocate memory (is the CMA area "
                                "that large? cma="))
        << error;
    EXPECT_EQ(kernel.closed, std::vector<int>{FakeDmaHeap::kHeapFd});
  }
  {
    FakeDmaHeap kernel;
    kernel.hideFrames = true;
    EXPECT_EQ(openDmaHeap("reserved", kPage, &error, kernel, kernel.paths),
              nullptr);
    EXPECT_TRUE(contains(error, "/fake/pagemap: the buffer's page frames are "
                                "hidden; pagemap shows them to a process with "
                                "CAP_SYS_ADMIN only"))
        << error;
  }
  {
    FakeDmaHeap kernel;
    kernel.scatteredPage = 2;
    EXPECT_EQ(openDmaHeap("reserved", 4 * kPage, &error, kernel, kernel.paths),
              nullptr);
    EXPECT_TRUE(contains(error, "the buffer is not physically contiguous "
                                "(page 2 is at frame 0x40009, not 0x40002): "
                                "allocate from a CMA heap"))
        << error;
  }
}

} // namespace
