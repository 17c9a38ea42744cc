//===- UDmaBuf.h - a u-dma-buf buffer mapped for the KV260 driver -*- C++ -*-===//
//
// The driver's DMA buffer is one u-dma-buf buffer. Its first part is the
// host window, which the CPU both writes (float -> BF16 before a MEMCPY to
// the NPU) and reads (BF16 -> float after one back): through an uncached
// mapping every such load waits for DDR, so that part is mapped cached and
// kept consistent by hand through u-dma-buf's sync_for_device /
// sync_for_cpu. The rest (resident weights, KV records, masks, staging) is
// written by the CPU in place and never read back, so it stays uncached
// (O_SYNC) and needs no maintenance.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_UDMABUF_H
#define PCCX_RUNTIME_DEVICES_UDMABUF_H

#include "runtime/devices/Kv260Device.h"

#include <memory>
#include <string>

namespace pccx::device {

/// How the host window part of the buffer is mapped.
enum class WindowCaching {
  /// Cached when u-dma-buf offers coherence or manual cache maintenance,
  /// uncached otherwise.
  Auto,
  Uncached, ///< O_SYNC, like the rest of the buffer
  Cached,   ///< cached; an error when u-dma-buf cannot keep it consistent
};
bool parseWindowCaching(const std::string &text, WindowCaching *out);
const char *windowCachingName(WindowCaching mode);

struct UdmabufPaths {
  std::string sysfsRoot = "/sys/class/u-dma-buf"; ///< <root>/<name>/phys_addr ...
  std::string devRoot = "/dev";                   ///< <root>/<name>
};

/// What openUdmabuf chose.
struct UdmabufMapping {
  bool windowCached = false;
  bool coherent = false; ///< dma_coherent: no maintenance needed
  size_t cachedBytes = 0; ///< the cached prefix (0 when uncached)
};

/// A mapped u-dma-buf buffer. flush()/invalidate() of a range in the
/// cached part write sync_for_device / sync_for_cpu; elsewhere (and when
/// the buffer is coherent) they do nothing.
class UdmabufBuffer : public DmaBuffer {
public:
  ~UdmabufBuffer() override;
  uint8_t *data() override { return data_; }
  uint64_t physical() const override { return phys_; }
  size_t size() const override { return size_; }
  bool flush(size_t offset, size_t bytes, std::string *error) override;
  bool invalidate(size_t offset, size_t bytes, std::string *error) override;
  const UdmabufMapping &mapping() const { return mapping_; }

private:
  friend std::unique_ptr<UdmabufBuffer>
  openUdmabuf(const std::string &, size_t, WindowCaching, std::string *,
              const UdmabufPaths &);
  UdmabufBuffer() = default;
  bool sync(int fd, const char *file, size_t offset, size_t bytes,
            unsigned direction, std::string *error);

  uint8_t *data_ = nullptr;
  uint64_t phys_ = 0;
  size_t size_ = 0;
  int cachedFd_ = -1, uncachedFd_ = -1;
  int syncForCpu_ = -1, syncForDevice_ = -1;
  std::string sysDir_;
  UdmabufMapping mapping_;
};

/// Opens u-dma-buf buffer `name`: its first `windowBytes` (rounded up to a
/// page) mapped as `caching` says, the rest uncached, as one contiguous
/// range of addresses.
std::unique_ptr<UdmabufBuffer> openUdmabuf(const std::string &name,
                                           size_t windowBytes,
                                           WindowCaching caching,
                                           std::string *error,
                                           const UdmabufPaths &paths = {});

} // namespace pccx::device

#endif
