//===- CompileOptions.cpp - the options of one compile --------------------===//

#include "hw/abi/CompileOptions.h"

#include "hw/support/Names.h"

#include <cstdlib>

using nlohmann::json;

namespace pccx {

const char *choiceName(Attention value) {
  return value == Attention::Host ? "host" : "npu";
}

const char *choiceName(KvDtype value) {
  switch (value) {
  case KvDtype::F16:
    return "f16";
  case KvDtype::F32:
    return "f32";
  case KvDtype::Int8:
    return "int8";
  }
  return "?";
}

const char *choiceName(machine::Target value) {
  return machine::targetProfile(value).name;
}
const char *choiceName(hw::ScaleRule value) {
  return hw::scaleRuleName(value);
}
const char *choiceName(hw::Rounding value) { return hw::roundingName(value); }

/// The first choice of T named `text`.
template <typename T> static bool findChoice(std::string_view text, T *out) {
  const T *found = support::findByName(
      Choices<T>::values, text, [](T value) { return choiceName(value); });
  if (found)
    *out = *found;
  return found != nullptr;
}

bool parseChoice(std::string_view text, Attention *out) {
  return findChoice(text, out);
}
bool parseChoice(std::string_view text, KvDtype *out) {
  return findChoice(text, out);
}
bool parseChoice(std::string_view text, machine::Target *out) {
  return machine::lookupTarget(text, *out);
}
bool parseChoice(std::string_view text, hw::ScaleRule *out) {
  return findChoice(text, out);
}
bool parseChoice(std::string_view text, hw::Rounding *out) {
  return findChoice(text, out);
}

std::string choiceList(Attention) { return "npu or host"; }
std::string choiceList(KvDtype) { return "f16, f32 or int8"; }
std::string choiceList(machine::Target) {
  return "one of " + machine::targetNames();
}
std::string choiceList(hw::ScaleRule) { return "absmax or search"; }
std::string choiceList(hw::Rounding) { return "nearest or gptq"; }

bool CompileOptions::validate(std::string *error) const {
  if (decodeBatch < 1 || decodeBatch > 256) {
    *error = "--decode-batch must be from 1 to 256, got " +
             std::to_string(decodeBatch);
    return false;
  }
  if (!int8Budget.empty() && calibration.empty()) {
    *error = "--int8-budget and --calibration go together";
    return false;
  }
  if (!calibration.empty() && int8Budget.empty() && !gptq()) {
    *error = "--calibration is used by --int8-budget and --int4-rounding "
             "gptq; give one of them";
    return false;
  }
  if (std::string why = hw::checkGroup(int4Group); !why.empty()) {
    *error = "--int4-group: " + why;
    return false;
  }
  if (gptq() && int4Group) {
    // GPTQ spreads a column's error over the later columns of the whole
    // row, whose scales a grouped record would choose group by group.
    *error = "--int4-rounding gptq does not combine with --int4-group yet; "
             "use nearest rounding with group scales";
    return false;
  }
  if (gptq() && quantReport) {
    *error = "--quant-report measures nearest rounding; it cannot be "
             "combined with --int4-rounding gptq";
    return false;
  }
  double fraction;
  return int8Budget.empty() || int8BudgetFraction(&fraction, error);
}

bool CompileOptions::int8BudgetFraction(double *fraction,
                                        std::string *error) const {
  std::string text = int8Budget;
  if (!text.empty() && text.back() == '%')
    text.pop_back();
  char *end = nullptr;
  double percent = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(percent >= 0 && percent <= 100)) {
    *error = "--int8-budget must be a percentage from 0 to 100, got '" +
             int8Budget + "'";
    return false;
  }
  *fraction = percent / 100;
  return true;
}

const std::vector<CompilePreset> &compilePresets() {
  // Measured with bench/quality-peer.sh (docs/quantization.md, Presets).
  static const std::vector<CompilePreset> presets = {
      {"compact", 0, ""},
      {"balanced", 128, "embed_tokens\\.weight"},
      {"quality", 32, "embed_tokens\\.weight|embed_tokens_per_layer\\.weight"},
  };
  return presets;
}

bool applyPreset(const std::string &name, CompileOptions &options,
                 const std::function<bool(const char *)> &given,
                 std::string *error) {
  std::string names;
  for (const CompilePreset &p : compilePresets()) {
    if (name == p.name) {
      if (!given("int4-group"))
        options.int4Group = p.int4Group;
      if (!given("int8-weights"))
        options.int8Weights = p.int8Weights;
      return true;
    }
    names += std::string(names.empty() ? "" : ", ") + p.name;
  }
  *error = "--preset must be one of " + names + ", got '" + name + "'";
  return false;
}

std::string tokenizerModel(const CompileOptions &options,
                           const std::string &checkpointDir) {
  return options.tokenizer.empty() ? checkpointDir + "/tokenizer.model"
                                   : options.tokenizer;
}

namespace {

enum class Record { Always, IfChanged, FileName, Never };

json recordValue(int64_t v) { return v; }
json recordValue(bool v) { return v; }
json recordValue(const std::string &v) { return v; }
template <typename T> json recordValue(T choice) { return choiceName(choice); }

template <typename T>
void recordOption(json &record, const char *key, Record rule, const T &value,
                  const T &defaultValue) {
  switch (rule) {
  case Record::Always:
    record[key] = recordValue(value);
    break;
  case Record::IfChanged:
    if (!(value == defaultValue))
      record[key] = recordValue(value);
    break;
  case Record::FileName:
    // The name only: the directory is the compiling machine's.
    if (!(value == defaultValue)) {
      std::string path = recordValue(value).template get<std::string>();
      record[key] = path.substr(path.rfind('/') + 1);
    }
    break;
  case Record::Never:
    break;
  }
}

} // namespace

json compileOptionsRecord(const CompileOptions &options) {
  json record = json::object();
#define PCCX_COMPILE_OPTION(Member, Type, Default, Flag, Form, Key, Rule, ...) \
  recordOption<Type>(record, compile_option_key::Member, Record::Rule,         \
                     options.Member, compile_defaults::Member);
#include "hw/abi/CompileOptions.def"
  record[compile_option_key::quantization] =
      hw::schemeName(options.int4Scheme());
  record[compile_option_key::compilerVersion] = PCCX_VERSION;
  return record;
}

} // namespace pccx
