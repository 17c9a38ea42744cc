//===- Sampler.h - next-token selection -------------------------*- C++ -*-===//
//
// Token selection on the host, in the order Hugging Face's generate()
// applies it (docs/gemma3n-semantics.md section 6): repetition penalty over
// the distinct ids seen so far (and OpenAI's presence and frequency
// penalties over their counts), then greedy argmax when the temperature is
// 0, else temperature, top-k, top-p, min-p and a draw from a seeded
// generator (the same seed gives the same tokens on every machine).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_SAMPLER_H
#define PCCX_RUNTIME_APP_SAMPLER_H

#include <cstdint>
#include <string>
#include <vector>

namespace pccx::grammar {
class JsonConstraint;
}

namespace pccx::app {

struct SamplingOptions {
  double temperature = 0.0;       ///< 0: greedy
  int64_t topK = 0;               ///< 0: off
  double topP = 1.0;              ///< 1: off
  double minP = 0.0;              ///< 0: off
  double repetitionPenalty = 1.0; ///< 1: off
  double presencePenalty = 0.0;   ///< 0: off; subtracted once per seen id
  double frequencyPenalty = 0.0;  ///< 0: off; subtracted per occurrence
  uint64_t seed = 0;
};

/// Checks ranges; an empty string when valid.
std::string checkSamplingOptions(const SamplingOptions &options);

class Sampler {
public:
  explicit Sampler(const SamplingOptions &options);
  /// Picks the next token from `logits` (vocab floats, modified in place by
  /// the penalty and warpers) given every id consumed or generated so far.
  int32_t next(std::vector<float> &logits, const std::vector<int32_t> &seen);
  /// Speculative decoding's rule for a drafted token: returns `draft` when
  /// it is accepted, otherwise the token to use instead. Greedy: accepted
  /// when it is the argmax. Sampled: accepted with the probability the
  /// warped distribution gives it, else drawn from the rest, so the tokens
  /// are distributed exactly as next()'s.
  int32_t verify(std::vector<float> &logits, const std::vector<int32_t> &seen,
                 int32_t draft);
  /// Constrained decoding (not owned; null: none). The tokens the
  /// constraint refuses are masked before the penalties and warpers, and
  /// each token chosen advances it. When it allows no token at all (a
  /// vocabulary the schema's check let through that cannot go on), the
  /// choice is its end token and stuck() says so.
  void setConstraint(grammar::JsonConstraint *constraint) {
    constraint_ = constraint;
  }
  bool stuck() const { return stuck_; }
  /// Why the constraint failed (JsonConstraint::error(): a mask past its
  /// work budget, or interrupted); empty while it has not. The choice was
  /// then its end token, which the model did not choose: the reply ends
  /// before it, with this error.
  std::string constraintError() const;

private:
  /// The warped distribution: `weights` of `ids` (or, `all`, of every id in
  /// id order); `best` the most likely id.
  struct Candidates {
    int32_t best = 0;
    bool all = true;
    std::vector<int32_t> ids;
    std::vector<double> weights;
  };
  /// Applies the penalties and warpers; true when the choice is greedy
  /// (`best` only).
  bool candidates(std::vector<float> &logits, const std::vector<int32_t> &seen,
                  Candidates *out);
  /// A draw from `c`, leaving out `excluded` (-1: none).
  int32_t draw(const Candidates &c, int32_t excluded);
  double uniform();
  void applyPenalties(std::vector<float> &logits,
                      const std::vector<int32_t> &seen) const;
  /// Masks `logits` for the constraint; false when nothing may follow.
  bool applyConstraint(std::vector<float> &logits);
  int32_t chosen(int32_t token);
  SamplingOptions options_;
  uint64_t state_;
  grammar::JsonConstraint *constraint_ = nullptr;
  bool stuck_ = false;
};

} // namespace pccx::app

#endif
