//===- KvRecords.h - KV caches stored as weight records ----------*- C++ -*-===//
//
// With attention on the NPU (docs/lowering.md, "Attention on the NPU") each
// KV cache of a kv head is a weight record the GEMV/GEMM streams from device
// memory, written one position at a time by the host:
//
//  - keys: N = slots rows of K = head_dim INT8 codes, one fp32 scale per
//    row (hw::quantizeRowInt8 of the key after its norm and RoPE); the
//    scores of a query are one GEMV over the record;
//  - values: transposed, N = head_dim rows of K = slots INT8 codes with one
//    fixed scale sqrt(head_dim) / 127: a value row is RMS-normed without a
//    gain, so no element exceeds sqrt(head_dim) in magnitude and the fixed
//    scale never clips; P.V is one GEMV over the record;
//  - masks: N = slots rows of K = 1 with code 1, whose scales are 0 for a
//    slot the query row may see and kMaskedScore otherwise; accumulated onto
//    the scores (over the L2 constant 1.0) it removes the other slots from
//    the softmax.
//
// Slot s holds position p with p mod slots = s, as for host caches. The
// compiler, the runtime and the float reference all use these functions,
// so the bytes and the dequantized values agree exactly.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_KVRECORDS_H
#define PCCX_HW_NUMERICS_KVRECORDS_H

#include <cstddef>
#include <cstdint>

namespace pccx::hw {

/// The score a masked slot gets added: exp(score - e_max) is exactly 0 for
/// it in float and in BF16, and it stays finite.
constexpr float kMaskedScore = -1.0e30f;

int64_t keyRecordBytes(int64_t slots, int64_t headDim);
int64_t valueRecordBytes(int64_t slots, int64_t headDim);
int64_t maskRecordBytes(int64_t slots);
/// keyRecordBytes or valueRecordBytes.
inline int64_t cacheRecordBytes(bool keys, int64_t slots, int64_t headDim) {
  return keys ? keyRecordBytes(slots, headDim)
              : valueRecordBytes(slots, headDim);
}

/// The fixed scale of every value code: sqrt(headDim) / 127.
float valueRecordScale(int64_t headDim);

/// Prepares empty records: keys all zero, values with their fixed scales
/// and zero codes, masks with code 1 in every row and every slot masked.
void initKeyRecord(uint8_t *record, int64_t slots, int64_t headDim);
void initValueRecord(uint8_t *record, int64_t slots, int64_t headDim);
void initMaskRecord(uint8_t *record, int64_t slots);

/// Writes one key (headDim values) into `slot`: quantizeRowInt8 codes and
/// scale; returns the scale.
float writeKeySlot(uint8_t *record, int64_t slots, int64_t headDim,
                   int64_t slot, const float *key);
/// Writes one value (headDim values) into column `slot`.
void writeValueSlot(uint8_t *record, int64_t slots, int64_t headDim,
                    int64_t slot, const float *value);
/// The value code of one element (round half away from zero of
/// v / valueRecordScale, clamped to [-127, 127]).
int8_t valueCode(float v, float scale);

/// A key or value replaced by what its record holds (code times scale):
/// what the float reference attends over when it models the records.
void roundKeyLikeRecord(float *key, int64_t headDim);
void roundValueLikeRecord(float *value, int64_t headDim);

/// Which slots a query at position `query` sees when positions up to
/// `last` (>= query) have been written to a ring of `slots` slots:
/// positions in [query - window + 1, query] (window 0: from 0) that still
/// occupy their slot. Sets the mask record's scales accordingly.
void setMaskScales(uint8_t *record, int64_t slots, int64_t window,
                   int64_t query, int64_t last);

} // namespace pccx::hw

#endif
