//===- UDmaBuf.cpp - a u-dma-buf buffer mapped for the KV260 driver -------===//

#include "runtime/devices/UDmaBuf.h"

#include "hw/support/Format.h"
#include "runtime/devices/Sysfs.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace pccx::device {

namespace {

// u-dma-buf's sync_for_cpu / sync_for_device accept one 64-bit command:
// offset in bits 63..32, size in bits 31..4 (a multiple of 16), the DMA
// direction in bits 3..2 and 1 in bit 0.
constexpr unsigned kToDevice = 1, kFromDevice = 2;
constexpr size_t kCacheLine = 64;
constexpr uint64_t kMaxSyncSize = 0xFFFFFFF0ull;

size_t pageRoundUp(size_t bytes) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

} // namespace

bool parseWindowCaching(const std::string &text, WindowCaching *out) {
  if (text == "auto")
    *out = WindowCaching::Auto;
  else if (text == "uncached")
    *out = WindowCaching::Uncached;
  else if (text == "cached")
    *out = WindowCaching::Cached;
  else
    return false;
  return true;
}

const char *windowCachingName(WindowCaching mode) {
  switch (mode) {
  case WindowCaching::Auto:
    return "auto";
  case WindowCaching::Uncached:
    return "uncached";
  case WindowCaching::Cached:
    return "cached";
  }
  return "?";
}

UdmabufBuffer::~UdmabufBuffer() {
  if (data_)
    munmap(data_, size_);
  for (int fd : {cachedFd_, uncachedFd_, syncForCpu_, syncForDevice_})
    if (fd >= 0)
      close(fd);
}

bool UdmabufBuffer::sync(int fd, const char *file, size_t offset,
                         size_t bytes, unsigned direction,
                         std::string *error) {
  if (fd < 0 || bytes == 0 || offset >= mapping_.cachedBytes)
    return true; // coherent, uncached, or outside the cached part
  size_t begin = offset / kCacheLine * kCacheLine;
  size_t end = std::min(offset + bytes, mapping_.cachedBytes);
  end = (end + kCacheLine - 1) / kCacheLine * kCacheLine;
  const uint64_t size = end - begin;
  if (begin > UINT32_MAX || size > kMaxSyncSize) {
    *error = sysDir_ + file + ": range out of the sync command's reach";
    return false;
  }
  const uint64_t command =
      (uint64_t(begin) << 32) | size | (uint64_t(direction) << 2) | 1;
  const std::string text = formatString("0x%016llx", (unsigned long long)command);
  if (pwrite(fd, text.data(), text.size(), 0) != ssize_t(text.size())) {
    *error = sysDir_ + file + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool UdmabufBuffer::flush(size_t offset, size_t bytes, std::string *error) {
  return sync(syncForDevice_, "sync_for_device", offset, bytes, kToDevice,
              error);
}

bool UdmabufBuffer::invalidate(size_t offset, size_t bytes,
                               std::string *error) {
  return sync(syncForCpu_, "sync_for_cpu", offset, bytes, kFromDevice, error);
}

std::unique_ptr<UdmabufBuffer> openUdmabuf(const std::string &name,
                                           size_t windowBytes,
                                           WindowCaching caching,
                                           std::string *error,
                                           const UdmabufPaths &paths) {
  std::unique_ptr<UdmabufBuffer> b(new UdmabufBuffer());
  const std::string sys = paths.sysfsRoot + "/" + name + "/";
  b->sysDir_ = sys;
  uint64_t phys = 0, size = 0;
  if (!readSysfsNumber(sys + "phys_addr", &phys) ||
      !readSysfsNumber(sys + "size", &size) || size == 0) {
    *error = sys + ": cannot read phys_addr/size (is u-dma-buf loaded? see "
                   "docs/kv260.md)";
    return nullptr;
  }
  const std::string dev = paths.devRoot + "/" + name;

  // Whether the window can be cached: the hardware keeps it coherent, or
  // u-dma-buf takes cache-maintenance commands.
  uint64_t coherent = 0;
  (void)readSysfsNumber(sys + "dma_coherent", &coherent);
  bool cached = false;
  if (caching != WindowCaching::Uncached) {
    if (coherent) {
      cached = true;
    } else {
      b->syncForCpu_ = open((sys + "sync_for_cpu").c_str(), O_WRONLY);
      b->syncForDevice_ = open((sys + "sync_for_device").c_str(), O_WRONLY);
      cached = b->syncForCpu_ >= 0 && b->syncForDevice_ >= 0;
      if (!cached && caching == WindowCaching::Cached) {
        *error = sys + ": no writable sync_for_cpu/sync_for_device and "
                       "dma_coherent is 0, so a cached host window cannot be "
                       "kept consistent (u-dma-buf too old? use "
                       "--dma-window uncached)";
        return nullptr;
      }
    }
  }
  b->mapping_.coherent = coherent != 0;
  const size_t cachedBytes =
      cached ? std::min(size_t(size), pageRoundUp(windowBytes)) : 0;
  b->mapping_.windowCached = cached;
  b->mapping_.cachedBytes = cachedBytes;

  b->uncachedFd_ = open(dev.c_str(), O_RDWR | O_SYNC);
  if (b->uncachedFd_ < 0) {
    *error = dev + ": " + std::strerror(errno) +
             " (permissions: see docs/kv260.md)";
    return nullptr;
  }
  // One range of addresses: the uncached mapping of the whole buffer, with
  // the cached prefix mapped over its start.
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED,
                 b->uncachedFd_, 0);
  if (p == MAP_FAILED) {
    *error = dev + ": mmap: " + std::strerror(errno);
    return nullptr;
  }
  b->data_ = static_cast<uint8_t *>(p);
  b->size_ = size_t(size);
  b->phys_ = phys;
  if (cachedBytes) {
    b->cachedFd_ = open(dev.c_str(), O_RDWR);
    if (b->cachedFd_ < 0) {
      *error = dev + ": " + std::strerror(errno);
      return nullptr;
    }
    if (mmap(p, cachedBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
             b->cachedFd_, 0) == MAP_FAILED) {
      *error = dev + ": mmap of the cached host window: " +
               std::strerror(errno);
      return nullptr;
    }
  }
  return b;
}

} // namespace pccx::device
