//===- BundleTranslation.cpp - pccx IR -> bundle as an MLIR translation ---===//
//
// `pccx-translate --pccx-to-bundle model.mlir -o model.pccx` writes the same
// bundle pccx-compile writes from a saved lowered module (pccx-compile
// --emit=pccx): the module records its checkpoint and compile options.
//
//===----------------------------------------------------------------------===//

#include "compiler/emit/EmitBundle.h"

#include "dialects/Gemma3n/JsonAttr.h"
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
  nlohmann::json recorded;
  if (!attrToJson(dict, recorded, error))
    return false;
  // Inputs of the bundle, not options: the tokenizer file to embed and the
  // checkpoint's chat template (stored under their own keys).
  if (auto tok = dict.getAs<StringAttr>(kModuleTokenizerKey)) {
    options->tokenizerPath = tok.str();
    recorded.erase(kModuleTokenizerKey);
  }
  if (auto chat = dict.getAs<StringAttr>(kModuleChatTemplateKey)) {
    options->chatTemplate = chat.str();
    recorded.erase(kModuleChatTemplateKey);
  }
  auto kv = dict.getAs<StringAttr>(compile_option_key::kvDtype);
  if (!kv || !parseChoice(kv.getValue().str(), &options->kvDtype)) {
    *error = std::string(kCompileOptionsAttr) + ": '" +
             compile_option_key::kvDtype + "' must be " +
             choiceList(KvDtype()) + "";
    return false;
  }
  // The target is the module's pccx.target; modules saved before it was
  // held there alone may still record it here, and the emitter rewrites it.
  recorded.erase(compile_option_key::target);
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
