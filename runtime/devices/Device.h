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
#include <string>

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
  /// Queues weight bytes for the next GEMV/GEMM; they stay valid until the
  /// segment ends.
  virtual void pushWeights(const uint8_t *data, size_t bytes) = 0;
  /// Issues one validated instruction word (`index` numbers it in messages).
  virtual bool issue(uint64_t word, uint64_t index, std::string *error) = 0;
  /// Waits until everything issued has completed.
  virtual bool sync(std::string *error) = 0;
  /// Ends a segment (checks the weight stream is drained).
  virtual bool finishSegment(std::string *error) = 0;
};

} // namespace pccx::device

#endif
