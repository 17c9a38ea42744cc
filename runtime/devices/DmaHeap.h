//===- DmaHeap.h - a CMA dma-heap buffer for the KV260 driver ---*- C++ -*-===//
//
// The second source of the driver's DMA buffer, beside u-dma-buf: one
// buffer allocated from a contiguous (CMA) heap of /dev/dma_heap, as the
// board software allocated its buffers. No kernel module of our own is
// needed, but two things u-dma-buf hands over have to be found by hand
// (docs/kv260.md §3):
//
//  - the physical address: the heap does not tell it, so the buffer's pages
//    are looked up in /proc/self/pagemap, which shows page frame numbers to
//    a process with CAP_SYS_ADMIN only, and are checked to be contiguous;
//  - coherence: the heap maps the buffer cached and the HP ports do not
//    snoop, so every range the CPU writes for the NPU is cleaned and every
//    range the NPU wrote is invalidated before the CPU reads it, inside the
//    dma-buf's DMA_BUF_IOCTL_SYNC brackets.
//
// Everything the buffer asks of the kernel goes through DmaHeapSystem, so
// the tests run it against a fake.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_DMAHEAP_H
#define PCCX_RUNTIME_DEVICES_DMAHEAP_H

#include "runtime/devices/Kv260Device.h"

#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>

namespace pccx::device {

/// The system calls a dma-heap buffer makes (the real ones by default).
class DmaHeapSystem {
public:
  virtual ~DmaHeapSystem() = default;
  virtual int open(const std::string &path, int flags);
  virtual int close(int fd);
  virtual int ioctl(int fd, unsigned long request, void *arg);
  /// A shared read-write mapping of `bytes` of `fd`; MAP_FAILED on error.
  virtual void *mmap(size_t bytes, int fd);
  virtual int munmap(void *address, size_t bytes);
  virtual ssize_t pread(int fd, void *out, size_t bytes, off_t offset);
  /// Cleans and invalidates [address, address + bytes) in the data cache
  /// to the point of coherency. arm64 Linux lets user space do it by
  /// address (DC CIVAC; SCTLR_EL1.UCI is set); elsewhere DMA is coherent
  /// and this does nothing.
  virtual void cleanInvalidate(void *address, size_t bytes);
};

struct DmaHeapPaths {
  std::string heapRoot = "/dev/dma_heap"; ///< <root>/<heap>
  std::string pagemap = "/proc/self/pagemap";
};

/// A buffer of a dma-heap, mapped cached, at one physical address.
/// flush() cleans a range and ends the CPU's write access
/// (DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE); invalidate() starts a read
/// access (DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ) and invalidates the
/// range.
class DmaHeapBuffer : public DmaBuffer {
public:
  ~DmaHeapBuffer() override;
  uint8_t *data() override { return data_; }
  uint64_t physical() const override { return phys_; }
  size_t size() const override { return size_; }
  bool flush(size_t offset, size_t bytes, std::string *error) override;
  bool invalidate(size_t offset, size_t bytes, std::string *error) override;

private:
  friend std::unique_ptr<DmaHeapBuffer> openDmaHeap(const std::string &, size_t,
                                                    std::string *,
                                                    DmaHeapSystem &,
                                                    const DmaHeapPaths &);
  DmaHeapBuffer(DmaHeapSystem &system) : system_(system) {}
  bool syncAccess(uint64_t flags, const char *what, std::string *error);

  DmaHeapSystem &system_;
  uint8_t *data_ = nullptr;
  uint64_t phys_ = 0;
  size_t size_ = 0;
  int fd_ = -1; ///< the dma-buf
  std::string name_;
};

/// The real system calls.
DmaHeapSystem &systemDmaHeap();

/// Allocates `bytes` (rounded up to a page) from heap `heap` (e.g.
/// "reserved", the CMA area of the kernel's cma= option, or "linux,cma")
/// and maps it. Fails, saying why, when the heap is missing, the
/// allocation is refused, the page frames are hidden (no CAP_SYS_ADMIN) or
/// the pages are not physically contiguous (not a CMA heap).
std::unique_ptr<DmaHeapBuffer>
openDmaHeap(const std::string &heap, size_t bytes, std::string *error,
            DmaHeapSystem &system = systemDmaHeap(),
            const DmaHeapPaths &paths = {});

} // namespace pccx::device

#endif
