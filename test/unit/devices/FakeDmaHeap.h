//===- FakeDmaHeap.h - a kernel that hands out dma-heap buffers -*- C++ -*-===//
//
// Stands in for /dev/dma_heap/<heap>, the dma-buf it allocates and
// /proc/self/pagemap: the buffer is anonymous memory, its pages sit at
// consecutive frames from `firstFrame` (unless a test scatters one or hides
// them), and every DMA_BUF_IOCTL_SYNC and cache maintenance is recorded.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TEST_UNIT_DEVICES_FAKEDMAHEAP_H
#define PCCX_TEST_UNIT_DEVICES_FAKEDMAHEAP_H

#include "runtime/devices/DmaHeap.h"

#include <cerrno>
#include <cstdint>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace pccx::testsupport {

class FakeDmaHeap : public device::DmaHeapSystem {
public:
  static constexpr int kHeapFd = 10, kPagemapFd = 11, kBufferFd = 12;
  device::DmaHeapPaths paths{"/fake/dma_heap", "/fake/pagemap"};
  std::string heap = "reserved"; ///< the one heap there is
  uint64_t firstFrame = 0x40000; ///< physical 0x40000000 with 4 KiB pages
  bool refuseAllocation = false;
  bool hideFrames = false;         ///< pagemap read without CAP_SYS_ADMIN
  size_t scatteredPage = SIZE_MAX; ///< a page off the run of frames

  size_t allocated = 0;
  uint8_t *mapping = nullptr;
  std::vector<uint64_t> syncs;                    ///< flags, in order
  std::vector<std::pair<size_t, size_t>> cleaned; ///< (offset, bytes)
  std::vector<int> closed;
  bool unmapped = false;

  int open(const std::string &path, int) override {
    if (path == paths.heapRoot + "/" + heap)
      return kHeapFd;
    if (path == paths.pagemap)
      return kPagemapFd;
    errno = ENOENT;
    return -1;
  }
  int close(int fd) override {
    closed.push_back(fd);
    return 0;
  }
  int ioctl(int fd, unsigned long request, void *arg) override {
    if (fd == kHeapFd && request == DMA_HEAP_IOCTL_ALLOC) {
      if (refuseAllocation) {
        errno = ENOMEM;
        return -1;
      }
      auto *a = static_cast<dma_heap_allocation_data *>(arg);
      allocated = size_t(a->len);
      a->fd = kBufferFd;
      return 0;
    }
    if (fd == kBufferFd && request == DMA_BUF_IOCTL_SYNC) {
      syncs.push_back(static_cast<dma_buf_sync *>(arg)->flags);
      return 0;
    }
    errno = ENOTTY;
    return -1;
  }
  void *mmap(size_t bytes, int fd) override {
    if (fd != kBufferFd || bytes != allocated)
      return MAP_FAILED;
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mapping = static_cast<uint8_t *>(p);
    return p;
  }
  int munmap(void *address, size_t bytes) override {
    unmapped = true;
    return ::munmap(address, bytes);
  }
  ssize_t pread(int fd, void *out, size_t bytes, off_t offset) override {
    if (fd != kPagemapFd)
      return -1;
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const uint64_t first = uint64_t(uintptr_t(mapping)) / page;
    auto *entries = static_cast<uint64_t *>(out);
    for (size_t i = 0; i < bytes / 8; ++i) {
      const uint64_t index = uint64_t(offset) / 8 + i - first;
      uint64_t frame = hideFrames ? 0 : firstFrame + index;
      if (index == scatteredPage)
        frame += 7;
      entries[i] = uint64_t(1) << 63 | frame;
    }
    return ssize_t(bytes);
  }
  void cleanInvalidate(void *address, size_t bytes) override {
    cleaned.push_back(
        {size_t(static_cast<uint8_t *>(address) - mapping), bytes});
  }
};

} // namespace pccx::testsupport

#endif
