//===- CompileOptions.h - the options of one compile ------------*- C++ -*-===//
//
// The compile options as the compiler and the runtime both know them, built
// from the rows of CompileOptions.def: the typed struct with its defaults,
// the choice types, and the manifest's "compile_options" record with its
// keys. No MLIR: the runtime reads bundles with the same keys and types.
// compiler/CompileOptions.h adds the command line and the module attribute.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_ABI_COMPILEOPTIONS_H
#define PCCX_HW_ABI_COMPILEOPTIONS_H

#include "hw/machine/Target.h"
#include "hw/numerics/Quantize.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pccx {

/// Where attention runs.
enum class Attention : uint8_t {
  Npu,  ///< Q.K and P.V on the NPU over KV caches kept as INT8 weight records
  Host, ///< dot products on the CPU over host KV caches (KvDtype)
};

/// Element type of the host KV caches of Attention::Host (manifest caches'
/// "dtype"; with Attention::Npu the caches are weight records instead).
enum class KvDtype : uint8_t {
  F16,  ///< IEEE binary16, rounded to nearest even
  F32,
  Int8, ///< one fp32 scale per row (hw::quantizeRowInt8)
};

/// Names and parsers of the choice types of CompileOptions.def ("npu",
/// "f16", "v002", "search", "gptq", ...), and what each accepts, as an error
/// says it ("npu or host", "one of v002, v002-rtl").
const char *choiceName(Attention value);
const char *choiceName(KvDtype value);
const char *choiceName(machine::Target value);
const char *choiceName(hw::ScaleRule value);
const char *choiceName(hw::Rounding value);
bool parseChoice(std::string_view text, Attention *out);
bool parseChoice(std::string_view text, KvDtype *out);
bool parseChoice(std::string_view text, machine::Target *out);
bool parseChoice(std::string_view text, hw::ScaleRule *out);
bool parseChoice(std::string_view text, hw::Rounding *out);
std::string choiceList(Attention);
std::string choiceList(KvDtype);
std::string choiceList(machine::Target);
std::string choiceList(hw::ScaleRule);
std::string choiceList(hw::Rounding);

/// Every choice of type T, in declaration order (for --help and the
/// typed pass options).
template <typename T> struct Choices;
template <> struct Choices<Attention> {
  static constexpr Attention values[] = {Attention::Npu, Attention::Host};
};
template <> struct Choices<KvDtype> {
  static constexpr KvDtype values[] = {KvDtype::F16, KvDtype::F32,
                                       KvDtype::Int8};
};
template <> struct Choices<hw::ScaleRule> {
  static constexpr hw::ScaleRule values[] = {hw::ScaleRule::Search,
                                             hw::ScaleRule::AbsMax};
};
template <> struct Choices<hw::Rounding> {
  static constexpr hw::Rounding values[] = {hw::Rounding::Nearest,
                                            hw::Rounding::Gptq};
};
template <> struct Choices<machine::Target> {
  static constexpr machine::Target values[] = {
#define PCCX_TARGET(Id, ...) machine::Target::Id,
#include "hw/machine/Targets.def"
  };
};

/// The text of `text` as option `flag`'s value; the error names the option
/// and what it accepts: "--attention must be npu or host, got 'gpu'".
template <typename T>
bool parseOption(std::string_view flag, std::string_view text, T *out,
                 std::string *error) {
  if (parseChoice(text, out))
    return true;
  *error = "--" + std::string(flag) + " must be " + choiceList(T()) +
           ", got '" + std::string(text) + "'";
  return false;
}

/// Each option's default (CompileOptions.def).
namespace compile_defaults {
#define PCCX_COMPILE_OPTION(Member, Type, Default, ...)                        \
  inline const Type Member = Default;
#include "hw/abi/CompileOptions.def"
} // namespace compile_defaults

/// Each option's key in the manifest's compile_options (CompileOptions.def),
/// and the two keys the record adds.
namespace compile_option_key {
#define PCCX_COMPILE_OPTION(Member, Type, Default, Flag, Form, Key, ...)       \
  constexpr const char Member[] = Key;
#include "hw/abi/CompileOptions.def"
/// The weights' quantization scheme (hw::schemeName of INT4 with the
/// options' scale rule and rounding).
constexpr const char quantization[] = "quantization";
constexpr const char compilerVersion[] = "compiler_version";
} // namespace compile_option_key

struct CompileOptions {
#define PCCX_COMPILE_OPTION(Member, Type, Default, ...)                        \
  Type Member = compile_defaults::Member;
#include "hw/abi/CompileOptions.def"

  bool gptq() const { return int4Rounding == hw::Rounding::Gptq; }
  /// The INT4 scheme of the quantized weights: scale rule, rounding, group.
  hw::QuantScheme int4Scheme() const {
    return {hw::WeightFormat::Int4, int4Scales, int4Rounding, int4Group};
  }
  /// The checks between options: calibration text given exactly when
  /// something uses it, no quantization report of GPTQ codes, a budget that
  /// is a percentage, a batch size in range. Errors name the command-line
  /// options. (The other sizes are checked where they are used: maxSeqLen
  /// by the importer, prefillRows by the conversion pass.)
  bool validate(std::string *error) const;
  /// int8Budget as a fraction of the INT4 weight bytes; the error names
  /// --int8-budget and the text given.
  bool int8BudgetFraction(double *fraction, std::string *error) const;
};

/// A named preset of the weight options: the values it gives the options
/// it names (CompileOptions.def's preset row; docs/quantization.md).
struct CompilePreset {
  const char *name;
  int64_t int4Group;
  const char *int8Weights;
};
/// Every preset, in --help order.
const std::vector<CompilePreset> &compilePresets();
/// `options` with preset `name`'s values for the options `given(flag)`
/// does not name (flag without "--"); the error lists the presets.
bool applyPreset(const std::string &name, CompileOptions &options,
                 const std::function<bool(const char *)> &given,
                 std::string *error);

/// The tokenizer model of a compile of `checkpointDir`: options.tokenizer,
/// else CKPT_DIR/tokenizer.model (which may not exist).
std::string tokenizerModel(const CompileOptions &options,
                           const std::string &checkpointDir);

/// The manifest's "compile_options" record of `options`
/// (docs/bundle-format.md): every option with a key, as its Record column
/// says, the quantization scheme and the compiler version.
nlohmann::json compileOptionsRecord(const CompileOptions &options);

} // namespace pccx

#endif
