//===- KvRecords.cpp - KV caches stored as weight records -----------------===//

#include "hw/numerics/KvRecords.h"

#include "hw/numerics/Quantize.h"
#include "hw/support/DeviceMemory.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace pccx::hw {

// Records may live in the KV260's uncached DMA buffer (Device memory on
// arm64): every store into one goes through hw/support/DeviceMemory.h.
namespace {
void storeF32(uint8_t *at, float v) { storeDeviceF32(at, v); }
} // namespace

int64_t keyRecordBytes(int64_t slots, int64_t headDim) {
  return recordBytes(WeightFormat::Int8, slots, headDim);
}
int64_t valueRecordBytes(int64_t slots, int64_t headDim) {
  return recordBytes(WeightFormat::Int8, headDim, slots);
}
int64_t maskRecordBytes(int64_t slots) {
  return recordBytes(WeightFormat::Int8, slots, 1);
}

float valueRecordScale(int64_t headDim) {
  return float(std::sqrt(double(headDim)) / 127.0);
}

void initKeyRecord(uint8_t *record, int64_t slots, int64_t headDim) {
  fillDeviceMemory(record, 0, size_t(keyRecordBytes(slots, headDim)));
}

void initValueRecord(uint8_t *record, int64_t slots, int64_t headDim) {
  fillDeviceMemory(record, 0, size_t(valueRecordBytes(slots, headDim)));
  const float scale = valueRecordScale(headDim);
  for (int64_t d = 0; d < headDim; ++d)
    storeF32(record + 4 * d, scale);
}

void initMaskRecord(uint8_t *record, int64_t slots) {
  fillDeviceMemory(record, 0, size_t(maskRecordBytes(slots)));
  const int64_t scaleBytes = recordScaleBytes(slots),
                stride = recordRowStride(WeightFormat::Int8, 1);
  for (int64_t s = 0; s < slots; ++s) {
    storeF32(record + 4 * s, kMaskedScore);
    VolatileStores::store8(record + scaleBytes + s * stride, 1);
  }
}

float writeKeySlot(uint8_t *record, int64_t slots, int64_t headDim,
                   int64_t slot, const float *key) {
  const int64_t stride = recordRowStride(WeightFormat::Int8, headDim);
  // Quantized beside the record, then stored with aligned stores.
  std::vector<int8_t> codes(static_cast<size_t>(headDim));
  const float scale = quantizeRowInt8(key, size_t(headDim), codes.data());
  copyToDeviceMemory(record + recordScaleBytes(slots) + slot * stride,
                     reinterpret_cast<const uint8_t *>(codes.data()),
                     size_t(headDim));
  storeF32(record + 4 * slot, scale);
  return scale;
}

int8_t valueCode(float v, float scale) {
  return int8_t(std::min(127.0f, std::max(-127.0f, std::round(v / scale))));
}

void writeValueSlot(uint8_t *record, int64_t slots, int64_t headDim,
                    int64_t slot, const float *value) {
  const float scale = valueRecordScale(headDim);
  const int64_t stride = recordRowStride(WeightFormat::Int8, slots);
  uint8_t *column = record + recordScaleBytes(headDim) + slot;
  for (int64_t d = 0; d < headDim; ++d)
    VolatileStores::store8(column + d * stride,
                           uint8_t(valueCode(value[d], scale)));
}

void roundKeyLikeRecord(float *key, int64_t headDim) {
  std::vector<int8_t> codes(static_cast<size_t>(headDim));
  const float scale = quantizeRowInt8(key, size_t(headDim), codes.data());
  for (int64_t d = 0; d < headDim; ++d)
    key[d] = float(codes[size_t(d)]) * scale;
}

void roundValueLikeRecord(float *value, int64_t headDim) {
  const float scale = valueRecordScale(headDim);
  for (int64_t d = 0; d < headDim; ++d)
    value[d] = float(valueCode(value[d], scale)) * scale;
}

void setMaskScales(uint8_t *record, int64_t slots, int64_t window,
                   int64_t query, int64_t last) {
  const int64_t first = window > 0 ? std::max<int64_t>(0, query - window + 1)
                                   : 0;
  for (int64_t s = 0; s < slots; ++s) {
    // The newest position written to slot s, if any.
    bool visible = false;
    if (last >= s) {
      const int64_t p = s + (last - s) / slots * slots;
      visible = p >= first && p <= query;
    }
    storeF32(record + 4 * s, visible ? 0.0f : kMaskedScore);
  }
}

} // namespace pccx::hw
