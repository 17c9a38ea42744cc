//===- DeviceMemoryTests.cpp - stores that are safe on Device memory ------===//
//
// hw/support/DeviceMemory.h built over a checking store: every store must be
// of 1, 4 or 8 bytes at an address aligned to its size (what arm64 Device
// memory, the KV260 driver's uncached mapping, accepts), each byte of the
// destination written exactly once, nothing outside it; the result equals
// memcpy / memset.
//
//===----------------------------------------------------------------------===//

#include "hw/support/DeviceMemory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace pccx;

namespace {

/// Records every store; a misaligned one or one outside [begin, end) is an
/// error.
struct Checker {
  uint8_t *begin = nullptr, *end = nullptr;
  std::vector<int> writes; ///< per byte of [begin, end)
  std::vector<std::string> errors;
  size_t wordStores = 0;

  void reset(uint8_t *b, uint8_t *e) {
    begin = b;
    end = e;
    writes.assign(size_t(e - b), 0);
    errors.clear();
    wordStores = 0;
  }
  void note(uint8_t *at, size_t size) {
    if (reinterpret_cast<uintptr_t>(at) % size)
      errors.push_back(std::to_string(size) + "-byte store at offset " +
                       std::to_string(at - begin) + " is misaligned");
    if (at < begin || at + size > end) {
      errors.push_back("store outside the destination");
      return;
    }
    for (size_t i = 0; i < size; ++i)
      ++writes[size_t(at - begin) + i];
  }
};
Checker checker;

struct CheckingStores {
  static void store8(uint8_t *at, uint8_t v) {
    checker.note(at, 1);
    *at = v;
  }
  static void store32(uint8_t *at, uint32_t v) {
    checker.note(at, 4);
    std::memcpy(at, &v, 4);
  }
  static void store64(uint8_t *at, uint64_t v) {
    checker.note(at, 8);
    ++checker.wordStores;
    std::memcpy(at, &v, 8);
  }
};

void expectEveryByteOnce(const std::string &what) {
  EXPECT_TRUE(checker.errors.empty()) << what << ": " << checker.errors[0];
  for (size_t i = 0; i < checker.writes.size(); ++i)
    ASSERT_EQ(checker.writes[i], 1) << what << ": byte " << i;
}

TEST(DeviceMemory, CopyUsesAlignedStoresOnly) {
  std::vector<uint8_t> src(200), buffer(256 + 16);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = uint8_t(i * 37 + 11);
  for (size_t dstOffset = 0; dstOffset < 16; ++dstOffset)
    for (size_t srcOffset : {0, 1, 3})
      for (size_t bytes : {0, 1, 7, 8, 9, 15, 16, 63, 64, 65, 190}) {
        std::fill(buffer.begin(), buffer.end(), 0xee);
        // An 8-byte-aligned base, so offsets give every alignment.
        uint8_t *base = buffer.data() +
                        (8 - reinterpret_cast<uintptr_t>(buffer.data()) % 8) % 8;
        uint8_t *dst = base + dstOffset;
        checker.reset(dst, dst + bytes);
        hw::copyToDeviceMemory<CheckingStores>(dst, src.data() + srcOffset,
                                               bytes);
        const std::string what = "copy of " + std::to_string(bytes) +
                                 " bytes at +" + std::to_string(dstOffset);
        expectEveryByteOnce(what);
        EXPECT_EQ(std::memcmp(dst, src.data() + srcOffset, bytes), 0) << what;
        EXPECT_EQ(dst[bytes], 0xee) << what;
        if (bytes >= 16)
          EXPECT_GE(checker.wordStores, (bytes - 14) / 8) << what;
      }
}

TEST(DeviceMemory, FillUsesAlignedStoresOnly) {
  std::vector<uint8_t> buffer(300);
  uint8_t *base = buffer.data() +
                  (8 - reinterpret_cast<uintptr_t>(buffer.data()) % 8) % 8;
  for (size_t offset = 0; offset < 16; ++offset)
    for (size_t bytes : {0, 1, 5, 8, 17, 64, 255}) {
      std::fill(buffer.begin(), buffer.end(), 0xee);
      uint8_t *dst = base + offset;
      checker.reset(dst, dst + bytes);
      hw::fillDeviceMemory<CheckingStores>(dst, 0x5a, bytes);
      const std::string what = "fill of " + std::to_string(bytes) +
                               " bytes at +" + std::to_string(offset);
      expectEveryByteOnce(what);
      for (size_t i = 0; i < bytes; ++i)
        ASSERT_EQ(dst[i], 0x5a) << what;
      EXPECT_EQ(dst[bytes], 0xee) << what;
    }
}

TEST(DeviceMemory, FloatStoreIsOneWordWhenAligned) {
  alignas(8) uint8_t buffer[16] = {};
  for (size_t offset = 0; offset < 8; ++offset) {
    checker.reset(buffer + offset, buffer + offset + 4);
    hw::storeDeviceF32<CheckingStores>(buffer + offset, -1.5f);
    expectEveryByteOnce("float at +" + std::to_string(offset));
    float back;
    std::memcpy(&back, buffer + offset, 4);
    EXPECT_EQ(back, -1.5f);
  }
}

} // namespace
