//===- Calibration.h - options measured on calibration text ---*- C++ -*-===//
//
// The compile options whose effect depends on the float reference run over
// the --calibration text (runtime/reference): the INT8 budget chooses the
// tensors to keep in INT8 before the pipeline runs, GPTQ rounding needs the
// Gram matrices of the quantized tensors' inputs when the weights are
// written.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_COMPILER_CALIBRATION_H
#define PCCX_COMPILER_CALIBRATION_H

#include "compiler/CompileOptions.h"
#include "hw/numerics/Gptq.h"

#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

namespace pccx {

/// With options.int8Budget: the tensors whose INT4 quantization moves the
/// reference's predictions most per extra byte, within the budget, added to
/// options.int8Weights as exact names. One line per measured tensor on
/// `log`. Without a budget, nothing to do.
bool resolveInt8Budget(llvm::StringRef checkpointDir, CompileOptions &options,
                       llvm::raw_ostream &log, std::string *error);

/// For GPTQ rounding: the Gram matrix of every quantized tensor's inputs on
/// the calibration text, keyed by full checkpoint name (what
/// EmitOptions::inputGrams takes); without calibration text, the LM head's
/// data-free stand-in only. A summary on `log`.
bool collectGptqStatistics(llvm::StringRef checkpointDir,
                           const CompileOptions &options,
                           std::map<std::string, hw::InputGram> *grams,
                           llvm::raw_ostream &log, std::string *error);

} // namespace pccx

#endif
