//===- IrFuzzer.cpp - gemma3n and pccx IR text ----------------------------===//
//
// The MLIR parser with the project's dialects (custom assembly formats,
// attribute parsers), the op verifiers run after parsing, and on verified
// IR the back end's legality check, then a print and re-parse of what was
// accepted. Each must report through diagnostics, never crash; IR that
// verified must print as IR that parses again.
//
//===----------------------------------------------------------------------===//

#include "dialects/Gemma3n/Gemma3nOps.h"
#include "dialects/Pccx/PccxOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

// libMLIR is built without ASan and without RTTI (as in make test-sanitize):
// LLVM's allocators, whose inline copies here are instrumented, poison slabs
// that libMLIR then fills, and the vptr check cannot identify MLIR's objects
// (test/ubsan.supp).
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}
extern "C" const char *__ubsan_default_options() {
  return "print_stacktrace=1:suppressions=" PCCX_UBSAN_SUPPRESSIONS;
}

namespace {

/// The dialects pccx-opt reads, shared by every input's context.
const mlir::DialectRegistry &registry() {
  static const mlir::DialectRegistry *r = [] {
    auto *reg = new mlir::DialectRegistry;
    reg->insert<pccx::dialect::PccxDialect, pccx::gemma3n::Gemma3nDialect,
                mlir::func::FuncDialect>();
    return reg;
  }();
  return *r;
}

/// MLIR's parser recurses once per nested bracket, region or type without
/// a bound (a stack overflow inside libMLIR, not in the project's code), so
/// inputs nested deeper than any IR the compiler writes are skipped.
bool nestsTooDeep(const std::string &text) {
  constexpr int kMaxDepth = 64;
  int depth = 0;
  for (char c : text) {
    if (c == '(' || c == '[' || c == '{' || c == '<')
      ++depth;
    else if (c == ')' || c == ']' || c == '}' || c == '>')
      depth = depth > 0 ? depth - 1 : 0;
    if (depth > kMaxDepth)
      return true;
  }
  return false;
}

/// Parses `text` as a module in `context`, diagnostics swallowed.
mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &text,
                                        mlir::MLIRContext &context) {
  mlir::ParserConfig config(&context, /*verifyAfterParse=*/true);
  return mlir::parseSourceString<mlir::ModuleOp>(text, config);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A copy: MLIR's lexer reads the terminating NUL of its buffer.
  std::string text(reinterpret_cast<const char *>(data), size);
  if (nestsTooDeep(text))
    return 0;
  mlir::MLIRContext context(registry(), mlir::MLIRContext::Threading::DISABLED);
  // Rejections are the expected outcome of most inputs.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module = parse(text, context);
  if (!module)
    return 0;

  mlir::PassManager pm(&context);
  pm.addPass(pccx::createVerifyLegality());
  (void)pm.run(*module);

  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  os.flush();
  mlir::MLIRContext again(registry(), mlir::MLIRContext::Threading::DISABLED);
  std::string why;
  again.getDiagEngine().registerHandler([&](mlir::Diagnostic &d) {
    why += d.str() + "\n";
    return mlir::success();
  });
  if (!parse(printed, again)) {
    llvm::errs() << "verified IR does not parse after printing:\n"
                 << printed << "\n"
                 << why;
    __builtin_trap();
  }
  return 0;
}
