//===- CompileOptions.h - the options of one compile ------------*- C++ -*-===//
//
// The MLIR side of the compile options (hw/abi/CompileOptions.def):
// pccx-compile's command-line options, generated from the rows, and the
// module's `pccx.compile_options` dictionary, which the emitter copies into
// the bundle manifest ("compile_options", docs/bundle-format.md).
//
// Tool-only switches (output file, --emit, progress, quantization threads)
// are not compile options: the bundle's bytes do not depend on them.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_COMPILER_COMPILEOPTIONS_H
#define PCCX_COMPILER_COMPILEOPTIONS_H

#include "hw/abi/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <string>
#include <type_traits>

namespace pccx {

/// Module attribute holding what the bundle records besides the programs (a
/// dictionary: the manifest's "compile_options" plus the inputs `tokenizer`,
/// the path of a SentencePiece model to embed, and `chat_template`, the
/// checkpoint's template). Set before the pipeline so that a saved module
/// can still be emitted (pccx-translate).
constexpr const char kCompileOptionsAttr[] = "pccx.compile_options";
/// The two inputs' keys in kCompileOptionsAttr.
constexpr const char kModuleTokenizerKey[] = "tokenizer";
constexpr const char kModuleChatTemplateKey[] = "chat_template";

/// Sets kCompileOptionsAttr on `module`: compileOptionsRecord() without
/// the target, which the module holds once, as pccx.target (set by the
/// conversion from its `target` option), and the tokenizer and chat
/// template found for `checkpointDir`. Errors name the chat-template file.
bool recordCompileOptions(mlir::ModuleOp module, const CompileOptions &options,
                          llvm::StringRef checkpointDir, std::string *error);

/// pccx-compile's compile options as command-line options, in `category`
/// (the tool's own options share it, so --help lists them together).
/// Call once, before cl::ParseCommandLineOptions.
void registerCompileCLOptions(llvm::cl::OptionCategory &category);
/// The registered options after parsing, typed and validated.
bool compileOptionsFromCL(CompileOptions *options, std::string *error);

/// How a row of CompileOptions.def becomes a command-line or pass-pipeline
/// option and back: numbers, text and switches as themselves, choices as
/// text (so that both forms refuse a bad value with parseOption's message),
/// and a NoSwitch as a flag that clears its member.
namespace option_form {
enum Form { Value, Switch, NoSwitch };

template <typename T, Form F, typename = void> struct Codec {
  using Cl = T;
  static Cl initial(const T &d) { return d; }
  static bool read(llvm::StringRef, const Cl &v, T *out, std::string *) {
    *out = v;
    return true;
  }
};
template <Form F> struct Codec<bool, F, std::enable_if_t<F == NoSwitch>> {
  using Cl = bool;
  static Cl initial(bool) { return false; }
  static bool read(llvm::StringRef, bool v, bool *out, std::string *) {
    *out = !v;
    return true;
  }
};
template <typename T, Form F>
struct Codec<T, F, std::enable_if_t<std::is_enum_v<T>>> {
  using Cl = std::string;
  static Cl initial(T d) { return choiceName(d); }
  static bool read(llvm::StringRef flag, const Cl &v, T *out,
                   std::string *error) {
    return parseOption(std::string_view(flag.data(), flag.size()), v, out,
                       error);
  }
};

/// cl::value_desc when the row names one.
struct ValueName {
  const char *name;
  template <class Opt> void apply(Opt &o) const {
    if (*name)
      o.setValueStr(name);
  }
};
} // namespace option_form

} // namespace pccx

#endif
