//===- CheckedMath.h - sizes and offsets that cannot wrap -------*- C++ -*-===//
//
// Every reader of untrusted tables (bundle manifests, checkpoint headers,
// configs) computes byte counts and offsets with these: a product or sum
// that does not fit its type is reported instead of wrapping, so a check
// such as `offset + bytes <= size` cannot be defeated by a huge value.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_SUPPORT_CHECKEDMATH_H
#define PCCX_HW_SUPPORT_CHECKEDMATH_H

#include <cstdint>

namespace pccx {

/// *out = a * b; false (and *out unspecified) when the product overflows T.
template <typename T> inline bool checkedMul(T a, T b, T *out) {
  return !__builtin_mul_overflow(a, b, out);
}

/// *out = a + b; false when the sum overflows T.
template <typename T> inline bool checkedAdd(T a, T b, T *out) {
  return !__builtin_add_overflow(a, b, out);
}

/// *out = a * b + c; false when any step overflows T.
template <typename T> inline bool checkedMulAdd(T a, T b, T c, T *out) {
  T product;
  return checkedMul(a, b, &product) && checkedAdd(product, c, out);
}

/// Whether the byte range [offset, offset + bytes) lies inside [0, size).
inline bool rangeInside(uint64_t offset, uint64_t bytes, uint64_t size) {
  return offset <= size && bytes <= size - offset;
}

/// Whether `count` elements of `elementBytes` each lie inside
/// [offset, size): the product is checked before it is compared.
inline bool arrayInside(uint64_t offset, uint64_t count, uint64_t elementBytes,
                        uint64_t size) {
  uint64_t bytes;
  return checkedMul(count, elementBytes, &bytes) &&
         rangeInside(offset, bytes, size);
}

} // namespace pccx

#endif
