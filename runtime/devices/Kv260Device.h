//===- Kv260Device.h - the KV260 overlay as a Device ------------*- C++ -*-===//
//
// Drives the pccx v002 overlay on a Kria KV260 through its host protocol
// (Kv260Protocol.h, docs/kv260.md §5): instruction words go to the NPU's
// AXI-Lite command FIFO, its status FIFO tells busy and done, and every DDR
// transfer (weight records to the HP ports, host-window words to and from
// the ACP ports) is a command the driver pushes to an AXI DataMover's
// command page, whose status it checks. The overlay follows the v002 RTL's
// conventions, so the driver runs bundles made for target v002-rtl.
//
// The DMA buffer (u-dma-buf, or one from a CMA heap: DmaHeap.h) holds the
// host window (BF16 lanes; the driver works on a float copy and converts
// around each MEMCPY), the zeros a GEMM's second weight lane streams
// (Kv260TransferPlan.h), a staging area for weight records made at run
// time, and, at its end, the bundle's weights section, copied once when the
// model is opened: a GEMM streams its record from where it lies
// (docs/kv260.md, "Memory budget"). Every word is decoded and checked, and
// every transfer bounds-checked, before anything reaches the hardware.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_KV260DEVICE_H
#define PCCX_RUNTIME_DEVICES_KV260DEVICE_H

#include "hw/machine/MachineModel.h"
#include "hw/support/DeviceMemory.h"
#include "runtime/devices/Device.h"
#include "runtime/devices/Kv260Protocol.h"
#include "runtime/devices/Kv260TransferPlan.h"

#include <array>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace pccx::device {

/// Register access to the UIO map (the NPU page and the DataMover pages).
class RegisterWindow {
public:
  virtual ~RegisterWindow() = default;
  virtual uint32_t read32(uint32_t offset) = 0;
  virtual void write32(uint32_t offset, uint32_t value) = 0;
  /// One 64-bit access (the instruction register takes nothing else).
  virtual void write64(uint32_t offset, uint64_t value) = 0;
  virtual size_t size() const = 0;
};

/// Physically contiguous memory the NPU reaches by DMA.
class DmaBuffer {
public:
  virtual ~DmaBuffer() = default;
  virtual uint8_t *data() = 0;
  virtual uint64_t physical() const = 0;
  virtual size_t size() const = 0;
  /// Makes CPU writes to [offset, offset + bytes) visible to the device /
  /// device writes there visible to the CPU (no-ops for uncached or
  /// coherent mappings).
  virtual bool flush(size_t offset, size_t bytes, std::string *error) {
    (void)offset, (void)bytes, (void)error;
    return true;
  }
  virtual bool invalidate(size_t offset, size_t bytes, std::string *error) {
    (void)offset, (void)bytes, (void)error;
    return true;
  }
  /// The driver's bulk writes into the buffer (resident weights, staging,
  /// zeroed records). Most of the buffer is uncached, Device memory on
  /// arm64, where memcpy and memset fault: aligned word stores only
  /// (hw/support/DeviceMemory.h).
  virtual void write(size_t offset, const uint8_t *src, size_t bytes) {
    hw::copyToDeviceMemory(data() + offset, src, bytes);
  }
  virtual void fill(size_t offset, uint8_t value, size_t bytes) {
    hw::fillDeviceMemory(data() + offset, value, bytes);
  }
};

/// The UIO device whose sysfs name is `name` under `sysfsRoot`
/// (/sys/class/uio): its /dev node, physical address and size.
struct UioInfo {
  std::string device;
  uint64_t address = 0, size = 0;
};
bool findUio(const std::string &sysfsRoot, const std::string &name,
             UioInfo *info, std::string *error);
/// Maps map0 of a UIO device.
std::unique_ptr<RegisterWindow> openUio(const UioInfo &info,
                                        std::string *error);

struct Kv260Options {
  size_t windowWords =
      size_t(machine::host_window_words); ///< MEMCPY host window
  /// Register reads one wait may take (NPU status, DataMover flags) before
  /// it reports a timeout.
  uint64_t pollLimit = 10000000;
  /// DMA bytes kept for records made at run time (attention scores) when
  /// the weights section is resident.
  size_t minStagingBytes = size_t(1) << 20;
  /// The longest DataMover command (a multiple of the 16-byte beat).
  uint64_t maxCommandBytes = kv260::kChunkBytes;
  /// Zeros a GEMM's second lane streams beside the record
  /// (Kv260TransferPlan.h, GemmLanes::Summed), right after the host window:
  /// a multiple of 16 bytes; commands longer than it are cut.
  uint64_t zeroBytes = kv260::kChunkBytes;
};

class Kv260Device : public Device {
public:
  /// The DMA buffer holds the host window (16 bytes per word), the zeros
  /// of a GEMM's second lane, then the weight staging area.
  static std::unique_ptr<Kv260Device>
  create(std::unique_ptr<RegisterWindow> regs, std::unique_ptr<DmaBuffer> dma,
         const Kv260Options &options, std::string *error);

  const char *name() const override { return "kv260"; }
  float *window() override { return shadow_.data(); }
  size_t windowWords() const override { return options_.windowWords; }
  /// Registered buffers are carved from the end of the DMA buffer (the
  /// staging area shrinks, down to minStagingBytes): the weights section is
  /// copied there once, streamable memory is handed out there.
  bool registerWeights(const uint8_t *section, size_t bytes, BufferId *id,
                       std::string *error) override;
  StreamableBuffer allocateStreamable(size_t bytes,
                                      std::string *error) override;
  /// A record of a registered buffer streams from where it lies in the DMA
  /// buffer; host records are staged.
  bool pushWeights(const WeightHandle &record, const float *exact,
                   std::string *error) override;
  void pushHostWeights(const uint8_t *data, size_t bytes) override;
  bool issue(uint64_t word, uint64_t index, std::string *error) override;
  bool sync(std::string *error) override;
  bool finishSegment(std::string *error) override;

private:
  Kv260Device() = default;
  /// Drains stale DataMover statuses and sticky errors left by an earlier
  /// run and checks that the NPU answers.
  bool resetChannels(std::string *error);
  /// Pushes one command to a DataMover page, first waiting for the oldest
  /// status when the channel holds kv260::queueDepth commands.
  bool pushCommand(kv260::Channel channel, uint64_t offset, uint64_t bytes,
                   bool eof, std::string *error);
  /// Pops and checks the status of the oldest command of a channel.
  bool popStatus(kv260::Channel channel, std::string *error);
  bool drainChannel(kv260::Channel channel, std::string *error);
  bool drainAll(std::string *error);
  /// Waits until the NPU has finished the instructions issued so far.
  bool waitNpu(std::string *error);
  /// Pushes the commands of the queued weight records that go before the
  /// GEMM's word (Kv260TransferPlan.h) and keeps the rest in afterWord_.
  bool flushPendingWeights(uint64_t index, std::string *error);

  std::unique_ptr<RegisterWindow> regs_;
  std::unique_ptr<DmaBuffer> dma_;
  Kv260Options options_;
  std::vector<float> shadow_;
  size_t zeroOffset_ = 0;
  size_t stagingOffset_ = 0;
  /// Where the DMA buffer's staging area ends (the registered buffers
  /// start).
  size_t stagingEnd_ = 0;
  /// A registered buffer: where it lies in the DMA buffer, and whether the
  /// host writes it (its records are flushed before each stream).
  struct Buffer {
    size_t offset = 0, bytes = 0;
    bool hostWritten = false;
  };
  std::vector<Buffer> buffers_;
  /// A queued record: host bytes to stage (`host` set), or bytes at
  /// `offset` of the DMA buffer.
  struct PendingRecord {
    const uint8_t *host = nullptr;
    size_t offset = 0, bytes = 0;
    bool flush = false;
  };
  std::vector<PendingRecord> pendingWeights_;
  /// Commands of the current GEMM to push once its word is stored, at
  /// DMA-buffer offsets.
  std::vector<kv260::PlannedCommand> afterWord_;
  /// The fmap_shape entries this device has set (MEMCPY extents).
  std::array<std::pair<bool, std::array<uint16_t, 3>>, 64> fmap_{};
  /// Host-window words the NPU wrote since the last sync: [0, toShadow_).
  uint64_t toShadow_ = 0;
  struct Outstanding {
    uint8_t tag;
    uint32_t address, bytes;
  };
  /// Commands pushed per channel whose status is not yet popped.
  std::array<std::deque<Outstanding>, kv260::kChannelCount> outstanding_;
  std::array<uint8_t, kv260::kChannelCount> nextTag_{};
  /// An instruction was issued since the NPU was last seen idle, and
  /// whether the last one ends with a done pulse (MEMSET, CVO, GEMM) or not
  /// (MEMCPY).
  bool npuActive_ = false, lastSignalsDone_ = false;
};

/// Where the driver's DMA buffer comes from (docs/kv260.md §3).
struct Kv260DmaSource {
  /// "udmabuf": the u-dma-buf buffer `udmabuf`, its host window mapped as
  /// `windowCaching` says ("auto", "cached", "uncached";
  /// runtime/devices/UDmaBuf.h). "dma-heap": `heapBytes` allocated from
  /// the CMA heap /dev/dma_heap/`heap` (runtime/devices/DmaHeap.h).
  std::string kind = "udmabuf";
  std::string udmabuf = "udmabuf0";
  std::string windowCaching = "auto";
  std::string heap = "reserved";
  size_t heapBytes = size_t(1280) << 20;
};

/// Opens the overlay the usual way: the UIO device named `uioName` under
/// /sys/class/uio and the DMA buffer `dma` names.
std::unique_ptr<Kv260Device> openKv260(const std::string &uioName,
                                       const Kv260DmaSource &dma,
                                       std::string *error);

} // namespace pccx::device

#endif
