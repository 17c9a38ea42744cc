//===- Reference.h - fp32 float reference of Gemma 3n -----------*- C++ -*-===//
//
// Computes the Gemma 3n text decoder straight from checkpoint tensors, in
// float32, the way Hugging Face transformers does with the model loaded in
// float32 and a KV cache in use (docs/gemma3n-semantics.md). It depends on
// neither the dialects nor the passes nor the runtime, so any of them can be
// checked against it.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_REFERENCE_REFERENCE_H
#define PCCX_RUNTIME_REFERENCE_REFERENCE_H

#include "runtime/import/Gemma3nConfig.h"
#include "runtime/import/Safetensors.h"
#include "hw/numerics/Quantize.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pccx::reference {

/// Read access to the text decoder's tensors by their name relative to the
/// language-model prefix ("layers.0.self_attn.q_proj.weight",
/// "embed_tokens.weight", ...).
class Weights {
public:
  virtual ~Weights();
  /// Reads `count` rows starting at `row` of a 2-D tensor (a 1-D tensor is
  /// one row), converted to float, into out[count * columns]. `columns` is
  /// the row length the caller expects; a missing tensor or a shape that
  /// does not match is an error naming the tensor.
  virtual bool readRows(const std::string &name, int64_t row, int64_t count,
                        int64_t columns, float *out,
                        std::string *error) const = 0;
};

/// The tensors of an imported checkpoint. "lm_head.weight" is looked up
/// without the prefix, as Hugging Face stores it.
class CheckpointWeights : public Weights {
public:
  CheckpointWeights(const import::Checkpoint &checkpoint, std::string prefix);
  bool readRows(const std::string &name, int64_t row, int64_t count,
                int64_t columns, float *out,
                std::string *error) const override;

private:
  const import::Checkpoint &checkpoint_;
  std::string prefix_;
};

/// Another source with INT4 quantization applied to the tensors `quantized`
/// selects, row by row (hw::fakeQuantizeRow with `scheme`: its scale rule
/// and group scales).
class Int4Weights : public Weights {
public:
  Int4Weights(const Weights &base,
              std::function<bool(const std::string &)> quantized,
              hw::QuantScheme scheme = {hw::WeightFormat::Int4,
                                        hw::ScaleRule::Search});
  bool readRows(const std::string &name, int64_t row, int64_t count,
                int64_t columns, float *out,
                std::string *error) const override;

private:
  const Weights &base_;
  std::function<bool(const std::string &)> quantized_;
  hw::QuantScheme scheme_;
};

/// The text decoder with its KV cache. Positions are consecutive from 0.
class Model {
public:
  /// Reads the small tensors (norm gains, AltUp coefficients) up front;
  /// projection matrices are streamed row block by row block on every use,
  /// so a full-size checkpoint never sits in memory.
  Model(const import::Gemma3nTextConfig &config, const Weights &weights,
        int64_t maxPositions);
  /// False (with a message naming the tensor) if a small tensor could not
  /// be read; the model must not be used then.
  bool ok(std::string *error) const;
  ~Model();

  /// Keeps cached keys and values as the NPU's KV records hold them (INT8,
  /// hw/numerics/KvRecords.h), so the reference computes what a bundle with
  /// attention on the NPU computes. Off by default.
  void setKvRecords(bool on);
  /// Called with every projection's input, [T][columns], before it is
  /// multiplied by the tensor `name` (calibration statistics).
  using ProjectionObserver = std::function<void(
      const std::string &name, const float *x, int64_t T, int64_t columns)>;
  void observeProjections(ProjectionObserver observer);

  /// Forgets every cached position.
  void reset();
  /// Number of positions consumed so far.
  int64_t position() const;
  /// Consumes `tokens` at the next positions as one block (prefill when
  /// more than one) and returns their logits, row-major [tokens, vocab].
  /// Fails (returning false) if the positions would exceed maxPositions or
  /// a token id is outside the vocabulary.
  bool forward(const std::vector<int32_t> &tokens, std::vector<float> &logits,
               std::string *error);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace pccx::reference

#endif
