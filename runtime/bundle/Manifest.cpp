//===- Manifest.cpp - conventions of the bundle manifest --------*- C++ -*-===//

#include "runtime/bundle/Manifest.h"
#include "hw/abi/PatchSources.h"

#include "hw/isa/Isa.h"
#include "runtime/bundle/Bundle.h"

namespace pccx::bundle {

using nlohmann::json;

namespace {
bool setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}
} // namespace

bool targetOf(const nlohmann::json &manifest, machine::Target &target,
              std::string *error) {
  target = machine::kDefaultTarget;
  if (!manifest.is_object() || !manifest.contains(manifest_keys::kTarget))
    return true;
  const nlohmann::json &v = manifest[manifest_keys::kTarget];
  if (v.is_string() && machine::lookupTarget(v.get<std::string>(), target))
    return true;
  if (error)
    *error = v.dump() + " is not a known target (" + machine::targetNames() +
             ")";
  return false;
}

std::vector<std::string> annotationsOf(const json &manifest,
                                       const std::string &program) {
  std::vector<std::string> out;
  if (!manifest.is_object())
    return out;
  auto all = manifest.find(manifest_keys::kAnnotations);
  if (all == manifest.end() || !all->is_object())
    return out;
  auto list = all->find(program);
  if (list == all->end() || !list->is_array())
    return out;
  for (const json &entry : *list) {
    if (entry.is_string())
      out.push_back(entry.get<std::string>());
    else if (entry.is_null())
      out.emplace_back();
    else
      out.push_back(entry.dump());
  }
  return out;
}

bool setAnnotations(json &manifest, const std::string &program,
                    const std::vector<std::string> &annotations,
                    std::string *error) {
  if (!manifest.is_object())
    return setError(error, "the manifest is not a JSON object");
  json &all = manifest[manifest_keys::kAnnotations];
  if (all.is_null())
    all = json::object();
  if (!all.is_object())
    return setError(error, "manifest key 'annotations' is not an object");
  if (all.contains(program))
    return setError(error, "the manifest already has annotations for '" +
                               program + "'");
  all[program] = annotations;
  return true;
}

json toJson(const PatchPoint &patch) {
  json j{{"program", patch.program}, {"index", patch.index},
         {"field", patch.field},     {"value", patch.value},
         {"scale", patch.scale},     {"offset", patch.offset}};
  if (patch.delta)
    j["delta"] = patch.delta;
  if (patch.window)
    j["window"] = patch.window;
  return j;
}

bool parsePatchPoints(const json &manifest, std::vector<PatchPoint> &patches,
                      std::string *error) {
  patches.clear();
  if (!manifest.is_object())
    return true;
  auto list = manifest.find(manifest_keys::kPatchPoints);
  if (list == manifest.end())
    return true;
  if (!list->is_array())
    return setError(error, "manifest key 'patch_points' is not an array");
  size_t i = 0;
  for (const json &e : *list) {
    std::string where = "patch_points[" + std::to_string(i++) + "]";
    if (!e.is_object())
      return setError(error, where + " is not an object");
    PatchPoint p;
    auto str = [&](const char *key, std::string &out) {
      auto it = e.find(key);
      if (it == e.end() || !it->is_string())
        return setError(error, where + ": '" + key + "' must be a string");
      out = it->get<std::string>();
      return true;
    };
    auto integer = [&](const char *key, int64_t &out, bool required) {
      auto it = e.find(key);
      if (it == e.end()) {
        if (required)
          return setError(error, where + ": '" + key + "' is missing");
        return true;
      }
      if (it->is_number_unsigned()) {
        uint64_t v = it->get<uint64_t>();
        if (v > uint64_t(INT64_MAX))
          return setError(error, where + ": '" + key + "' is out of range");
        out = int64_t(v);
        return true;
      }
      if (!it->is_number_integer())
        return setError(error, where + ": '" + key + "' must be an integer");
      out = it->get<int64_t>();
      return true;
    };
    int64_t index = 0;
    if (!str("program", p.program) || !str("field", p.field) ||
        !str("value", p.value) || !integer("index", index, true) ||
        !integer("scale", p.scale, false) ||
        !integer("offset", p.offset, false) ||
        !integer("delta", p.delta, false) ||
        !integer("window", p.window, false))
      return false;
    if (index < 0)
      return setError(error, where + ": 'index' is negative");
    PatchSource source;
    if (!parsePatchSource(p.value.c_str(), &source))
      return setError(error, where + ": 'value' \"" + p.value +
                                 "\" is not a run-time quantity (token_id, "
                                 "position, attn_len, window_len, "
                                 "window_start)");
    if (patchSourceNeedsWindow(source) && p.window <= 0)
      return setError(error, where + ": '" + p.value +
                                 "' needs a positive 'window'");
    p.index = uint64_t(index);
    patches.push_back(std::move(p));
  }
  return true;
}

std::string checkPatchPoint(const PatchPoint &patch, uint64_t word) {
  isa::Instruction inst;
  std::string err;
  if (!isa::decode(word, inst, &err))
    return "the patched word does not decode: " + err;
  isa::Field field;
  if (!isa::lookupField(inst.format(), patch.field, field))
    return "'" + std::string(isa::opcodeInfo(inst.opcode).mnemonic) +
           "' has no field named '" + patch.field + "'";
  return {};
}

bool checkPatchPoints(const Bundle &bundle, std::string *error) {
  std::vector<PatchPoint> patches;
  std::string err;
  if (!parsePatchPoints(bundle.manifest(), patches, &err))
    return setError(error, bundle.path() + ": manifest: " + err);
  for (size_t i = 0; i < patches.size(); ++i) {
    const PatchPoint &p = patches[i];
    std::string where =
        bundle.path() + ": patch_points[" + std::to_string(i) + "]: ";
    const SectionInfo *s = bundle.find(p.program);
    if (!s || s->kind != SectionKind::Program)
      return setError(error, where + "no program section '" + p.program + "'");
    if (p.index >= Bundle::wordCount(*s))
      return setError(error, where + "word " + std::to_string(p.index) +
                                 " is past the end of '" + p.program + "' (" +
                                 std::to_string(Bundle::wordCount(*s)) +
                                 " words)");
    std::string why = checkPatchPoint(p, bundle.word(*s, size_t(p.index)));
    if (!why.empty())
      return setError(error, where + why);
  }
  return true;
}

} // namespace pccx::bundle
