//===- Device.h - what runs a bundle's instruction words --------*- C++ -*-===//
//
// The per-token driver (Session) talks to hardware through this interface:
// a host window of float lanes it shares with the NPU's MEMCPY, the weight
// stream, instruction issue, completion and segment ends. Backends: the
// functional simulator (SimDevice) and the KV260 overlay (Kv260Device).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_DEVICE_H
#define PCCX_RUNTIME_DEVICES_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pccx::device {

class Device {
public:
  virtual ~Device() = default;
  virtual const char *name() const = 0;
  /// The host window as 8 float lanes per 128-bit word; the driver reads and
  /// writes it only after sync().
  virtual float *window() = 0;
  virtual size_t windowWords() const = 0;
  /// Called once, before the first step, with the bundle's weights section
  /// (the static weight records). A device whose NPU reads DDR keeps the
  /// section where the NPU can stream it, so pushWeights() of a record inside
  /// it copies nothing. False (with the reason) when it cannot.
  virtual bool keepWeightsResident(const uint8_t *section, size_t bytes,
                                   std::string *error) {
    return true;
  }
  /// Memory the host writes and the NPU streams weight records from (the KV
  /// records of NPU attention), zeroed, valid for the device's lifetime; a
  /// pushWeights() of bytes inside it copies nothing. Null (with the
  /// reason) when the device has no room. The default is host memory, for
  /// devices that read the host's memory directly (the simulator).
  virtual uint8_t *allocateStreamable(size_t bytes, std::string *error) {
    streamable_.emplace_back(new uint8_t[bytes]());
    return streamable_.back().get();
  }
  /// Queues weight bytes for the next GEMV/GEMM; they stay valid until the
  /// segment ends.
  virtual void pushWeights(const uint8_t *data, size_t bytes) = 0;
  /// pushWeights() of a record whose exact values (N x K, scales applied)
  /// are `exact`: a device computing in reference numerics may multiply by
  /// them instead of the codes (the simulator); others ignore them.
  virtual void pushExactWeights(const uint8_t *data, size_t bytes,
                                const float *exact) {
    pushWeights(data, bytes);
  }
  /// Issues one validated instruction word (`index` numbers it in messages).
  virtual bool issue(uint64_t word, uint64_t index, std::string *error) = 0;
  /// Waits until everything issued has completed.
  virtual bool sync(std::string *error) = 0;
  /// Ends a segment (checks the weight stream is drained).
  virtual bool finishSegment(std::string *error) = 0;

private:
  std::vector<std::unique_ptr<uint8_t[]>> streamable_;
};

} // namespace pccx::device

#endif
