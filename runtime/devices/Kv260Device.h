//===- Kv260Device.h - the KV260 overlay as a Device ------------*- C++ -*-===//
//
// Drives the pccx v002 overlay on a Kria KV260 through its AXI-Lite
// command/status window (found through UIO) and a physically contiguous DMA
// buffer (u-dma-buf). docs/kv260.md describes the setup; the register
// protocol follows the board repository's driver (sw/baremetal/npu_driver):
//
//   0x000  instruction word (64 bit, low half first)
//   0x008  kick (write 0x8000000000000000 to issue the word)
//   0x010  status: bit 0 busy, bit 1 done, bit 2 error
//   0x018  host window base, physical address (project convention)
//   0x020  weight stream: source physical address (project convention)
//   0x028  weight stream: byte count; writing it starts the transfer
//
// The DMA buffer holds the host window (BF16 lanes; the driver works on a
// float copy and converts around each MEMCPY), a staging area for weight
// records made at run time, and, at its end, the bundle's weights section,
// copied once when the model is opened: a GEMV streams its record from
// where it lies (docs/kv260.md, "Memory budget"). Every word is decoded and
// checked, and every host-window range a MEMCPY touches is bounds-checked,
// before anything reaches the hardware.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_KV260DEVICE_H
#define PCCX_RUNTIME_DEVICES_KV260DEVICE_H

#include "hw/machine/MachineModel.h"
#include "runtime/devices/Device.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace pccx::device {

namespace kv260 {
constexpr uint32_t kRegInstruction = 0x000;
constexpr uint32_t kRegKick = 0x008;
constexpr uint32_t kRegStatus = 0x010;
constexpr uint32_t kRegWindowBase = 0x018;
constexpr uint32_t kRegWeightAddr = 0x020;
constexpr uint32_t kRegWeightBytes = 0x028;
constexpr uint64_t kKickWord = 0x8000000000000000ull;
constexpr uint64_t kStatusBusy = 1u << 0;
constexpr uint64_t kStatusDone = 1u << 1;
constexpr uint64_t kStatusError = 1u << 2;
} // namespace kv260

/// 32-bit register access to the AXI-Lite window.
class RegisterWindow {
public:
  virtual ~RegisterWindow() = default;
  virtual uint32_t read32(uint32_t offset) = 0;
  virtual void write32(uint32_t offset, uint32_t value) = 0;
  virtual size_t size() const = 0;
  void write64(uint32_t offset, uint64_t value) {
    write32(offset, uint32_t(value));
    write32(offset + 4, uint32_t(value >> 32));
  }
  uint64_t read64(uint32_t offset) {
    uint64_t lo = read32(offset);
    return lo | (uint64_t(read32(offset + 4)) << 32);
  }
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
  size_t windowWords = size_t(machine::host_window_words); ///< MEMCPY host window
  uint64_t pollLimit = 10000000; ///< status reads before a timeout
  /// DMA bytes kept for records made at run time (attention scores) when
  /// the weights section is resident.
  size_t minStagingBytes = size_t(1) << 20;
};

class Kv260Device : public Device {
public:
  /// The DMA buffer holds the host window (16 bytes per word) followed by
  /// the weight staging area.
  static std::unique_ptr<Kv260Device>
  create(std::unique_ptr<RegisterWindow> regs, std::unique_ptr<DmaBuffer> dma,
         const Kv260Options &options, std::string *error);

  const char *name() const override { return "kv260"; }
  float *window() override { return shadow_.data(); }
  size_t windowWords() const override { return options_.windowWords; }
  /// Carved from the DMA buffer below the resident weights (the staging
  /// area shrinks, down to minStagingBytes).
  uint8_t *allocateStreamable(size_t bytes, std::string *error) override;
  bool keepWeightsResident(const uint8_t *section, size_t bytes,
                           std::string *error) override;
  void pushWeights(const uint8_t *data, size_t bytes) override;
  bool issue(uint64_t word, uint64_t index, std::string *error) override;
  bool sync(std::string *error) override;
  bool finishSegment(std::string *error) override;

private:
  Kv260Device() = default;
  bool waitIdle(std::string *error);
  bool flushPendingWeights(std::string *error);

  std::unique_ptr<RegisterWindow> regs_;
  std::unique_ptr<DmaBuffer> dma_;
  Kv260Options options_;
  std::vector<float> shadow_;
  size_t stagingOffset_ = 0, stagingUsed_ = 0;
  /// Where the DMA buffer's staging area ends (the resident weights start).
  size_t stagingEnd_ = 0;
  /// The resident weights section: its bytes in the bundle mapping and its
  /// copy at residentOffset_ of the DMA buffer.
  const uint8_t *residentSource_ = nullptr;
  size_t residentBytes_ = 0, residentOffset_ = 0;
  std::vector<std::pair<const uint8_t *, size_t>> pendingWeights_;
  /// The fmap_shape entries this device has set (MEMCPY extents).
  std::array<std::pair<bool, std::array<uint16_t, 3>>, 64> fmap_{};
  /// Host-window word ranges the NPU wrote since the last sync.
  std::vector<std::pair<uint64_t, uint64_t>> toShadow_;
};

/// Opens the overlay the usual way: the UIO device named `uioName` under
/// /sys/class/uio and the u-dma-buf buffer `udmabufName`, its host window
/// mapped as `windowCaching` says ("auto", "cached", "uncached";
/// runtime/devices/UDmaBuf.h).
std::unique_ptr<Kv260Device> openKv260(const std::string &uioName,
                                       const std::string &udmabufName,
                                       const std::string &windowCaching,
                                       std::string *error);

} // namespace pccx::device

#endif
