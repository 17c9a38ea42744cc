//===- Device.cpp - buffers of devices that read host memory --------------===//

#include "runtime/devices/Device.h"

namespace pccx::device {

std::string describeBadHandle(const WeightHandle &record, size_t registered,
                              uint64_t bufferBytes) {
  const std::string what = "a weight record of " +
                           std::to_string(record.bytes) + " bytes at offset " +
                           std::to_string(record.offset) + " of buffer " +
                           std::to_string(record.buffer);
  if (record.buffer >= registered)
    return what + ": no such buffer (" + std::to_string(registered) +
           " registered)";
  return what + " lies outside the buffer's " + std::to_string(bufferBytes) +
         " bytes";
}

bool Device::registerWeights(const uint8_t *section, size_t bytes, BufferId *id,
                             std::string *) {
  *id = BufferId(hostBuffers_.size());
  hostBuffers_.push_back({section, section ? bytes : 0});
  return true;
}

StreamableBuffer Device::allocateStreamable(size_t bytes, std::string *) {
  streamable_.emplace_back(new uint8_t[bytes]());
  StreamableBuffer buffer;
  buffer.id = BufferId(hostBuffers_.size());
  buffer.data = streamable_.back().get();
  hostBuffers_.push_back({buffer.data, bytes});
  return buffer;
}

const uint8_t *Device::hostBytes(const WeightHandle &record,
                                 std::string *error) const {
  if (record.buffer >= hostBuffers_.size() ||
      !fitsBuffer(record, hostBuffers_[record.buffer].bytes)) {
    *error = describeBadHandle(record, hostBuffers_.size(),
                               record.buffer < hostBuffers_.size()
                                   ? hostBuffers_[record.buffer].bytes
                                   : 0);
    return nullptr;
  }
  return hostBuffers_[record.buffer].data + record.offset;
}

} // namespace pccx::device
