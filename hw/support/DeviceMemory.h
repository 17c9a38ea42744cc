//===- DeviceMemory.h - stores that are safe on Device memory ---*- C++ -*-===//
//
// The KV260 driver keeps most of its DMA buffer mapped uncached (O_SYNC),
// which arm64 maps as Device memory. There an unaligned access faults, and
// so does DC ZVA, with which glibc's memset zeroes whole cache lines; a
// memcpy's unaligned head and tail copies fault too. Everything that writes
// such memory (the driver's copies into the buffer, the KV and mask records
// that host kernels write in place) uses these functions instead: naturally
// aligned stores only (bytes up to an 8-byte boundary, 64-bit words, then
// bytes), each volatile, so the compiler cannot merge, widen or replace them
// with a library call.
//
// The store primitives are a template parameter so that a test can build
// the same code over a checking store (test/unit/support).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_SUPPORT_DEVICEMEMORY_H
#define PCCX_HW_SUPPORT_DEVICEMEMORY_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pccx::hw {

/// Plain volatile stores of 1, 4 and 8 bytes at naturally aligned addresses.
struct VolatileStores {
  static void store8(uint8_t *at, uint8_t v) {
    *reinterpret_cast<volatile uint8_t *>(at) = v;
  }
  static void store32(uint8_t *at, uint32_t v) {
    *reinterpret_cast<volatile uint32_t *>(at) = v;
  }
  static void store64(uint8_t *at, uint64_t v) {
    *reinterpret_cast<volatile uint64_t *>(at) = v;
  }
};

/// Copies `bytes` from ordinary memory `src` to `dst`, which may be Device
/// memory.
template <class Stores = VolatileStores>
void copyToDeviceMemory(uint8_t *dst, const uint8_t *src, size_t bytes) {
  for (; bytes && (reinterpret_cast<uintptr_t>(dst) & 7); --bytes)
    Stores::store8(dst++, *src++);
  for (; bytes >= 8; bytes -= 8, dst += 8, src += 8) {
    uint64_t word;
    std::memcpy(&word, src, 8); // a load from ordinary memory
    Stores::store64(dst, word);
  }
  for (; bytes; --bytes)
    Stores::store8(dst++, *src++);
}

/// Sets `bytes` of `dst`, which may be Device memory, to `value`.
template <class Stores = VolatileStores>
void fillDeviceMemory(uint8_t *dst, uint8_t value, size_t bytes) {
  const uint64_t word = 0x0101010101010101ull * value;
  for (; bytes && (reinterpret_cast<uintptr_t>(dst) & 7); --bytes)
    Stores::store8(dst++, value);
  for (; bytes >= 8; bytes -= 8, dst += 8)
    Stores::store64(dst, word);
  for (; bytes; --bytes)
    Stores::store8(dst++, value);
}

/// Stores the bits of `value` at `dst`, which may be Device memory: one
/// word store where `dst` is 4-byte aligned, four byte stores otherwise.
template <class Stores = VolatileStores>
void storeDeviceF32(uint8_t *dst, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((reinterpret_cast<uintptr_t>(dst) & 3) == 0) {
    Stores::store32(dst, bits);
    return;
  }
  uint8_t b[4];
  std::memcpy(b, &bits, 4);
  for (int i = 0; i < 4; ++i)
    Stores::store8(dst + i, b[i]);
}

} // namespace pccx::hw

#endif // PCCX_HW_SUPPORT_DEVICEMEMORY_H
