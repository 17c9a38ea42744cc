//===- BundleTranslation.cpp - pccx IR -> bundle as an MLIR translation ---===//
//
// `pccx-translate --pccx-to-bundle model.mlir -o model.pccx` writes the same
// bundle pccx-compile writes from a saved lowered module (pccx-compile
// --emit=pccx): the module records its checkpoint and compile options.
//
//===----------------------------------------------------------------------===//

#include "compiler/emit/EmitBundle.h"

#include "compiler/emit/AttrJson.h"
#include "dialects/Gemma3n/model/WeightEvaluator.h"
#include "dialects/Gemma3n/Gemma3nOps.h"
#include "dialects/Pccx/PccxOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;

namespace pccx {

bool emitOptionsFromModule(ModuleOp module, EmitOptions *options,
                           std::string *error) {
  auto dict = module->getAttrOfType<DictionaryAttr>(kCompileOptionsAttr);
  if (!dict) {
    *error = std::string("the module has no '") + kCompileOptionsAttr +
             "' dictionary (lower it with pccx-compile --emit=pccx)";
    return false;
  }
  nlohmann::json recorded = attrToJson(dict);
  // Inputs of the bundle, not options: the tokenizer file to embed and the
  // checkpoint's chat template (stored under their own keys).
  if (auto tok = dict.getAs<StringAttr>("tokenizer")) {
    options->tokenizerPath = tok.str();
    recorded.erase("tokenizer");
  }
  if (auto chat = dict.getAs<StringAttr>("chat_template")) {
    options->chatTemplate = chat.str();
    recorded.erase("chat_template");
  }
  auto kv = dict.getAs<StringAttr>("kv_dtype");
  std::string why;
  if (!kv || !parseKvDtype(kv.getValue(), &options->kvDtype, &why)) {
    *error = std::string(kCompileOptionsAttr) +
             ": 'kv_dtype' must be \"f16\", \"f32\" or \"int8\"";
    return false;
  }
  // Modules saved before target profiles record none: v002.
  if (auto target = dict.getAs<StringAttr>("target")) {
    if (!parseTarget(target.getValue(), &options->target, &why)) {
      *error = std::string(kCompileOptionsAttr) + ": 'target' \"" +
               target.str() + "\" is not a known target (" +
               machine::targetNames() + ")";
      return false;
    }
  }
  options->compileOptions = recorded;
  return true;
}

void registerBundleTranslation() {
  TranslateFromMLIRRegistration registration(
      "pccx-to-bundle",
      "write a lowered pccx module (pccx-compile --emit=pccx) as a .pccx "
      "bundle",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        EmitOptions options;
        std::string error;
        if (!module || !emitOptionsFromModule(module, &options, &error))
          return op->emitError(module ? error : "expected a builtin.module");
        // The bundle writer writes atomically to a path; the translation's
        // output is a stream: write aside, then copy.
        llvm::SmallString<128> path;
        if (llvm::sys::fs::createTemporaryFile("pccx-translate", "pccx", path))
          return op->emitError("cannot create a temporary file");
        bool ok = emitBundle(module, path.str().str(), options, &error);
        if (ok) {
          auto buffer = llvm::MemoryBuffer::getFile(path);
          ok = bool(buffer);
          if (ok)
            os << (*buffer)->getBuffer();
          else
            error = "cannot read back " + path.str().str();
        }
        llvm::sys::fs::remove(path);
        if (!ok)
          return op->emitError(error);
        return success();
      },
      [](DialectRegistry &registry) {
        registry.insert<gemma3n::Gemma3nDialect, dialect::PccxDialect,
                        func::FuncDialect>();
      });
}

} // namespace pccx
