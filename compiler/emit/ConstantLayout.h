//===- ConstantLayout.h - host tensors and gather tables --------*- C++ -*-===//
//
// What the host kernels read besides the host window: float32 host tensors
// (norm gains, AltUp and PLE matrices) and the embedding gather tables
// (INT4/INT8 codes then per-row scales, or float32 rows), each 16-byte
// aligned in its section in the order the conversion named them.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_COMPILER_EMIT_CONSTANTLAYOUT_H
#define PCCX_COMPILER_EMIT_CONSTANTLAYOUT_H

#include "dialects/Gemma3n/model/WeightEvaluator.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/ModelManifest.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <vector>

namespace pccx {

class ConstantLayout {
public:
  explicit ConstantLayout(const WeightEvaluator &evaluator)
      : evaluator_(evaluator) {}

  /// Threads that quantize gather-table rows (0 = one per hardware thread).
  /// The bytes written do not depend on it.
  void setThreads(unsigned threads) { threads_ = threads; }

  /// Lays out the module's `pccx.host_tensors` and `pccx.gather_tables`.
  bool plan(mlir::ModuleOp module, std::string *error);

  const std::vector<bundle::HostTensorEntry> &hostTensors() const {
    return hostTensors_;
  }
  const std::vector<bundle::GatherEntry> &gathers() const { return gathers_; }
  uint64_t hostBytes() const { return hostBytes_; }
  uint64_t gatherBytes() const { return gatherBytes_; }

  bool streamHostTensors(bundle::SectionSink &sink, std::string *error) const;
  /// `progress` receives the bytes written so far in this section and the
  /// number of tables done.
  bool streamGathers(bundle::SectionSink &sink,
                     const std::function<void(uint64_t, size_t)> &progress,
                     std::string *error) const;

private:
  struct Gather {
    dialect::RecipeAttr recipe;
    bool quantized = false;
    hw::WeightFormat format = hw::WeightFormat::Int4;
  };
  const WeightEvaluator &evaluator_;
  std::vector<bundle::HostTensorEntry> hostTensors_;
  std::vector<dialect::RecipeAttr> hostRecipes_;
  std::vector<bundle::GatherEntry> gathers_;
  std::vector<Gather> gatherRecipes_;
  uint64_t hostBytes_ = 0, gatherBytes_ = 0;
  unsigned threads_ = 0;
};

} // namespace pccx

#endif
