//===- CompileOptions.cpp - the options of one compile --------------------===//

#include "compiler/CompileOptions.h"

#include "runtime/import/ChatTemplateFile.h"
#include "dialects/Gemma3n/model/ModelInfo.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cassert>
#include <cstdlib>
#include <cstring>

using namespace llvm;

namespace pccx {

bool recordCompileOptions(mlir::ModuleOp module, const CompileOptions &options,
                          StringRef checkpointDir, std::string *error) {
  nlohmann::json record = compileOptionsRecord(options);
  // The target is the module's pccx.target; the emitter puts it back.
  record.erase(compile_option_key::target);
  // Inputs of the bundle besides the options (emitOptionsFromModule takes
  // them out again): the tokenizer to embed and the chat template.
  std::string tokenizer = tokenizerModel(options, checkpointDir.str());
  if (!options.tokenizer.empty() || sys::fs::exists(tokenizer))
    record[kModuleTokenizerKey] = tokenizer;
  std::string chatTemplate, templateSource;
  if (!import::readChatTemplate(checkpointDir.str(), &chatTemplate,
                                &templateSource, error))
    return false;
  if (!chatTemplate.empty())
    record[kModuleChatTemplateKey] = chatTemplate;
  mlir::Builder b(module.getContext());
  module->setAttr(kCompileOptionsAttr, jsonToAttr(b, record));
  return true;
}

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

namespace {

using namespace option_form;

/// The rows of CompileOptions.def as pccx-compile's command line spells them.
struct CompileCLOptions {
  explicit CompileCLOptions(cl::OptionCategory &category)
      : category(category) {}
  cl::OptionCategory &category;
#define PCCX_COMPILE_OPTION(Member, Type, Default, Flag, Form, Key, Record,     \
                            Stage, ValueDesc, Help)                             \
  cl::opt<Codec<Type, Form>::Cl> Member{                                       \
      Flag, cl::desc(Help), ValueName{ValueDesc},                                  \
      cl::init(Codec<Type, Form>::initial(compile_defaults::Member)),          \
      cl::cat(category)};
#include "hw/abi/CompileOptions.def"
};

CompileCLOptions *clOptions = nullptr;

} // namespace

void registerCompileCLOptions(cl::OptionCategory &category) {
  static CompileCLOptions options(category);
  clOptions = &options;
}

bool compileOptionsFromCL(CompileOptions *options, std::string *error) {
  assert(clOptions && "registerCompileCLOptions was not called");
  const CompileCLOptions &cl = *clOptions;
  CompileOptions o;
#define PCCX_COMPILE_OPTION(Member, Type, Default, Flag, Form, ...)            \
  if (!Codec<Type, Form>::read(Flag, cl.Member, &o.Member, error))             \
    return false;
#include "hw/abi/CompileOptions.def"
  // A preset fills the options it names unless they were given.
  auto given = [&](const char *flag) {
#define PCCX_COMPILE_OPTION(Member, Type, Default, Flag, ...)                  \
  if (std::strcmp(flag, Flag) == 0)                                            \
    return cl.Member.getNumOccurrences() != 0;
#include "hw/abi/CompileOptions.def"
    return false;
  };
  if (!o.preset.empty() && !applyPreset(o.preset, o, given, error))
    return false;
  if (o.attention == Attention::Npu && cl.kvDtype.getNumOccurrences()) {
    *error = "--kv-dtype sets the host KV caches of --attention host; with "
             "attention on the NPU the caches are INT8 weight records "
             "(docs/lowering.md)";
    return false;
  }
  if (!o.validate(error))
    return false;
  *options = std::move(o);
  return true;
}

} // namespace pccx
