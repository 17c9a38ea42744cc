//===- Device.h - what runs a bundle's instruction words --------*- C++ -*-===//
//
// The per-token driver (Session) talks to hardware through this interface:
// a host window of float lanes it shares with the NPU's MEMCPY, the weight
// stream, instruction issue, completion and segment ends. Backends: the
// functional simulator (SimDevice) and the KV260 overlay (Kv260Device);
// front ends open them by name through the registry (Devices.h).
//
// Weight records reach the device as handles: the session registers the
// memory records live in (the bundle's weights section, memory for KV
// records) and names a record by buffer, offset and length, so a device
// whose NPU reads its own copy of a buffer streams from that copy without
// working out where a pointer came from.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_DEVICE_H
#define PCCX_RUNTIME_DEVICES_DEVICE_H

#include "runtime/sim/Simulator.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pccx::device {

/// A buffer registered with a device (registerWeights, allocateStreamable).
using BufferId = uint32_t;

/// A weight record inside a registered buffer.
struct WeightHandle {
  BufferId buffer = 0;
  uint64_t offset = 0, bytes = 0;
};

/// Memory the host writes and the NPU streams records from.
struct StreamableBuffer {
  BufferId id = 0;
  uint8_t *data = nullptr;
};

class Device {
public:
  virtual ~Device() = default;
  virtual const char *name() const = 0;
  /// How the device computes. Reference numerics (a simulator mode) are
  /// fp32 throughout, so the session keeps exact keys and values too.
  virtual sim::Numerics numerics() const { return sim::Numerics::Hardware; }
  /// The host window as 8 float lanes per 128-bit word; the driver reads and
  /// writes it only after sync().
  virtual float *window() = 0;
  virtual size_t windowWords() const = 0;
  /// Registers the bundle's weights section (the static weight records),
  /// once, before the first step. A device whose NPU reads DDR keeps a copy
  /// where the NPU can stream it. False (with the reason) when it cannot.
  /// The default reads the section where it lies (the simulator).
  virtual bool registerWeights(const uint8_t *section, size_t bytes,
                               BufferId *id, std::string *error);
  /// Registers `bytes` of zeroed memory the host writes and the NPU streams
  /// weight records from (the KV records of NPU attention), valid for the
  /// device's lifetime. Null data (with the reason) when the device has no
  /// room. The default is host memory, for devices that read the host's
  /// memory directly (the simulator).
  virtual StreamableBuffer allocateStreamable(size_t bytes, std::string *error);
  /// Queues a record of a registered buffer for the next GEMV/GEMM. With
  /// `exact` (the record's N x K values, scales applied) a device computing
  /// in reference numerics may multiply by them instead of the codes (the
  /// simulator); others ignore them. False when the handle names no
  /// registered bytes.
  virtual bool pushWeights(const WeightHandle &record, const float *exact,
                           std::string *error) = 0;
  /// Queues a record in host memory no buffer holds (one a host kernel made
  /// during the step); the bytes stay valid until the segment ends.
  virtual void pushHostWeights(const uint8_t *data, size_t bytes) = 0;
  /// Issues one validated instruction word (`index` numbers it in messages).
  virtual bool issue(uint64_t word, uint64_t index, std::string *error) = 0;
  /// Waits until everything issued has completed.
  virtual bool sync(std::string *error) = 0;
  /// Ends a segment (checks the weight stream is drained).
  virtual bool finishSegment(std::string *error) = 0;

protected:
  /// The host bytes of a handle into a buffer the default registerWeights
  /// or allocateStreamable registered; null (with the reason) when it lies
  /// outside every one.
  const uint8_t *hostBytes(const WeightHandle &record,
                           std::string *error) const;

private:
  struct HostBuffer {
    const uint8_t *data;
    size_t bytes;
  };
  std::vector<HostBuffer> hostBuffers_;
  std::vector<std::unique_ptr<uint8_t[]>> streamable_;
};

/// Whether `record` lies within a buffer of `bufferBytes` bytes.
inline bool fitsBuffer(const WeightHandle &record, uint64_t bufferBytes) {
  return record.bytes <= bufferBytes &&
         record.offset <= bufferBytes - record.bytes;
}

/// The reason a device refuses `record`, for messages: `registered` buffers
/// exist and the named one, if among them, holds `bufferBytes`.
std::string describeBadHandle(const WeightHandle &record, size_t registered,
                              uint64_t bufferBytes);

} // namespace pccx::device

#endif
