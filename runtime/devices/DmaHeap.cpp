//===- DmaHeap.cpp - a CMA dma-heap buffer for the KV260 driver -----------===//

#include "runtime/devices/DmaHeap.h"

#include "hw/support/Format.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace pccx::device {

int DmaHeapSystem::open(const std::string &path, int flags) {
  return ::open(path.c_str(), flags);
}

int DmaHeapSystem::close(int fd) { return ::close(fd); }

int DmaHeapSystem::ioctl(int fd, unsigned long request, void *arg) {
  int result;
  do
    result = ::ioctl(fd, request, arg);
  while (result < 0 && (errno == EINTR || errno == EAGAIN));
  return result;
}

void *DmaHeapSystem::mmap(size_t bytes, int fd) {
  return ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}

int DmaHeapSystem::munmap(void *address, size_t bytes) {
  return ::munmap(address, bytes);
}

ssize_t DmaHeapSystem::pread(int fd, void *out, size_t bytes, off_t offset) {
  return ::pread(fd, out, bytes, offset);
}

void DmaHeapSystem::cleanInvalidate(void *address, size_t bytes) {
#if defined(__aarch64__)
  // The smallest data cache line is 4 << CTR_EL0.DminLine bytes.
  uint64_t ctr;
  asm volatile("mrs %0, ctr_el0" : "=r"(ctr));
  const uintptr_t line = uintptr_t(4) << ((ctr >> 16) & 0xf);
  const uintptr_t end = uintptr_t(address) + bytes;
  for (uintptr_t p = uintptr_t(address) & ~(line - 1); p < end; p += line)
    asm volatile("dc civac, %0" : : "r"(p) : "memory");
  asm volatile("dsb sy" : : : "memory");
#else
  (void)address, (void)bytes;
#endif
}

DmaHeapSystem &systemDmaHeap() {
  static DmaHeapSystem system;
  return system;
}

DmaHeapBuffer::~DmaHeapBuffer() {
  if (data_)
    system_.munmap(data_, size_);
  if (fd_ >= 0)
    system_.close(fd_);
}

bool DmaHeapBuffer::syncAccess(uint64_t flags, const char *what,
                               std::string *error) {
  dma_buf_sync sync{};
  sync.flags = flags;
  if (system_.ioctl(fd_, DMA_BUF_IOCTL_SYNC, &sync) < 0) {
    *error =
        name_ + ": DMA_BUF_IOCTL_SYNC (" + what + "): " + std::strerror(errno);
    return false;
  }
  return true;
}

bool DmaHeapBuffer::flush(size_t offset, size_t bytes, std::string *error) {
  if (bytes == 0 || offset >= size_)
    return true;
  system_.cleanInvalidate(data_ + offset, std::min(bytes, size_ - offset));
  return syncAccess(DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE,
                    "end of the CPU's writes", error);
}

bool DmaHeapBuffer::invalidate(size_t offset, size_t bytes,
                               std::string *error) {
  if (bytes == 0 || offset >= size_)
    return true;
  if (!syncAccess(DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ,
                  "start of the CPU's reads", error))
    return false;
  system_.cleanInvalidate(data_ + offset, std::min(bytes, size_ - offset));
  return true;
}

std::unique_ptr<DmaHeapBuffer> openDmaHeap(const std::string &heap,
                                           size_t bytes, std::string *error,
                                           DmaHeapSystem &system,
                                           const DmaHeapPaths &paths) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t size = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
  const std::string path = paths.heapRoot + "/" + heap;
  const int heapFd = system.open(path, O_RDWR | O_CLOEXEC);
  if (heapFd < 0) {
    *error = path + ": " + std::strerror(errno) +
             " (a CMA heap: ls /dev/dma_heap; see docs/kv260.md §3)";
    return nullptr;
  }
  dma_heap_allocation_data allocation{};
  allocation.len = size;
  allocation.fd_flags = O_RDWR | O_CLOEXEC;
  const int allocated = system.ioctl(heapFd, DMA_HEAP_IOCTL_ALLOC, &allocation);
  const int allocError = errno;
  system.close(heapFd);
  if (allocated < 0) {
    *error = formatString("%s: cannot allocate %zu MiB: %s (is the CMA area "
                          "that large? cma= on the kernel command line, "
                          "docs/kv260.md §3)",
                          path.c_str(), (size + (1 << 20) - 1) >> 20,
                          std::strerror(allocError));
    return nullptr;
  }
  std::unique_ptr<DmaHeapBuffer> b(new DmaHeapBuffer(system));
  b->fd_ = int(allocation.fd);
  b->name_ = path;
  void *p = system.mmap(size, b->fd_);
  if (p == MAP_FAILED) {
    *error = path + ": mmap of the allocated buffer: " + std::strerror(errno);
    return nullptr;
  }
  b->data_ = static_cast<uint8_t *>(p);
  b->size_ = size;

  // A page is in pagemap once it is mapped: read one byte of each (the
  // heap hands out zeroed pages, so nothing needs writing).
  for (size_t at = 0; at < size; at += page)
    (void)*static_cast<volatile uint8_t *>(b->data_ + at);

  const int pagemap = system.open(paths.pagemap, O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) {
    *error = paths.pagemap + ": " + std::strerror(errno);
    return nullptr;
  }
  // Entry bits: 63 present, 54..0 the page frame number (0 unless the
  // reader has CAP_SYS_ADMIN).
  constexpr uint64_t kPresent = uint64_t(1) << 63;
  constexpr uint64_t kFrameMask = (uint64_t(1) << 55) - 1;
  const size_t pages = size / page;
  const uint64_t firstIndex = uint64_t(uintptr_t(b->data_)) / page;
  std::vector<uint64_t> entries(std::min<size_t>(pages, 8192));
  uint64_t firstFrame = 0;
  for (size_t done = 0; done < pages;) {
    const size_t n = std::min(entries.size(), pages - done);
    const ssize_t got = system.pread(pagemap, entries.data(), n * 8,
                                     off_t((firstIndex + done) * 8));
    if (got != ssize_t(n * 8)) {
      *error = paths.pagemap + ": cannot read the buffer's page entries";
      system.close(pagemap);
      return nullptr;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint64_t frame = entries[i] & kFrameMask;
      if (!(entries[i] & kPresent) || frame == 0) {
        *error = paths.pagemap +
                 ": the buffer's page frames are hidden; pagemap shows them "
                 "to a process with CAP_SYS_ADMIN only (run as root, "
                 "docs/kv260.md §3)";
        system.close(pagemap);
        return nullptr;
      }
      if (done + i == 0)
        firstFrame = frame;
      else if (frame != firstFrame + done + i) {
        *error = formatString(
            "%s: the buffer is not physically contiguous (page %zu is at "
            "frame 0x%llx, not 0x%llx): allocate from a CMA heap "
            "(docs/kv260.md §3)",
            path.c_str(), done + i, (unsigned long long)frame,
            (unsigned long long)(firstFrame + done + i));
        system.close(pagemap);
        return nullptr;
      }
    }
    done += n;
  }
  system.close(pagemap);
  b->phys_ = firstFrame * page;
  return b;
}

} // namespace pccx::device
