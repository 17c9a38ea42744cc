//===- Assembler.cpp - hand-written programs to bundles ---------*- C++ -*-===//

#include "runtime/bundle/Assembler.h"

#include "hw/support/InputFile.h"

#include <unordered_map>

#include "hw/isa/Isa.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/Manifest.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace pccx::bundle {

using nlohmann::json;

namespace {

constexpr size_t kMaxErrors = 50;

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos)
    return {};
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> splitWords(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    size_t b = s.find_first_not_of(" \t");
    if (b == std::string_view::npos)
      break;
    s.remove_prefix(b);
    size_t e = s.find_first_of(" \t");
    out.push_back(s.substr(0, e));
    if (e == std::string_view::npos)
      break;
    s.remove_prefix(e);
  }
  return out;
}

bool parseWordValue(std::string_view text, uint64_t &value) {
  std::string s(text);
  if (s.empty() || !(s[0] >= '0' && s[0] <= '9'))
    return false;
  errno = 0;
  char *end = nullptr;
  value = std::strtoull(s.c_str(), &end, 0);
  return *end == 0 && errno == 0;
}

} // namespace

std::string programSectionName(std::string_view name) {
  if (name.substr(0, 8) == "program.")
    return std::string(name);
  return "program." + std::string(name);
}

bool assembleText(std::string_view text, const std::string &defaultProgram,
                  std::vector<AssembledProgram> &programs,
                  std::vector<AsmDiagnostic> &errors) {
  programs.clear();
  errors.clear();
  auto error = [&](unsigned line, std::string message) {
    if (errors.size() < kMaxErrors)
      errors.push_back({line, std::move(message)});
  };

  AssembledProgram first;
  first.name = programSectionName(defaultProgram);
  std::string why = checkSectionName(first.name);
  if (!why.empty())
    error(0, "default program: " + why);
  // Names seen, for duplicates in one lookup each (a file may hold many
  // thousands of programs).
  std::unordered_map<std::string, unsigned> defined{{first.name, 0}};
  programs.push_back(std::move(first));

  unsigned lineNo = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++lineNo;

    size_t c = line.find_first_of(";#");
    std::string_view code = trim(line.substr(0, c));
    std::string comment;
    if (c != std::string_view::npos && line[c] == ';')
      comment = std::string(trim(line.substr(c + 1)));
    if (code.empty())
      continue;
    AssembledProgram &cur = programs.back();

    if (code[0] == '.') {
      std::vector<std::string_view> words = splitWords(code);
      if (words[0] == ".program") {
        if (words.size() != 2) {
          error(lineNo, "'.program' takes exactly one name");
          continue;
        }
        AssembledProgram next;
        next.name = programSectionName(words[1]);
        next.line = lineNo;
        std::string bad = checkSectionName(next.name);
        if (!bad.empty()) {
          error(lineNo, bad);
          continue;
        }
        auto [it, added] = defined.emplace(next.name, lineNo);
        if (!added)
          error(lineNo, "program '" + next.name + "' is already defined" +
                            (it->second
                                 ? " at line " + std::to_string(it->second)
                                 : std::string(" (the default program)")));
        else
          programs.push_back(std::move(next));
      } else if (words[0] == ".word") {
        uint64_t value;
        if (words.size() != 2 || !parseWordValue(words[1], value)) {
          error(lineNo, "'.word' takes one 64-bit number");
          continue;
        }
        cur.words.push_back(value);
        cur.annotations.push_back(comment);
      } else {
        error(lineNo, "unknown directive '" + std::string(words[0]) + "'");
      }
      continue;
    }

    // isa::assemble lets a later field=value override an earlier one; in
    // hand-written source a repeated field is a mistake.
    std::set<std::string_view> seen;
    bool repeated = false;
    std::vector<std::string_view> tokens = splitWords(code);
    for (size_t i = 1; i < tokens.size() && !repeated; ++i) {
      std::string_view name = tokens[i].substr(0, tokens[i].find('='));
      if (!seen.insert(name).second) {
        error(lineNo, "field '" + std::string(name) + "' is given twice");
        repeated = true;
      }
    }
    if (repeated)
      continue;

    isa::Instruction inst;
    std::string message;
    uint64_t word = 0;
    if (!isa::assemble(code, inst, &message) ||
        !isa::encode(inst, word, &message)) {
      error(lineNo, message);
      continue;
    }
    cur.words.push_back(word);
    cur.annotations.push_back(comment);
  }

  if (programs.size() > 1 && programs.front().words.empty())
    programs.erase(programs.begin());
  return errors.empty();
}

bool addAssembledSections(const std::vector<AssembledProgram> &programs,
                          const json &base, BundleWriter &writer,
                          std::string *error) {
  json manifest = base.is_null() ? json::object() : base;
  if (!manifest.is_object()) {
    *error = "the manifest must be a JSON object";
    return false;
  }
  if (!manifest.contains(manifest_keys::kProducer))
    manifest[manifest_keys::kProducer] = "pccx-as";
  for (const AssembledProgram &p : programs) {
    bool any = false;
    for (const std::string &a : p.annotations)
      any = any || !a.empty();
    if (any && !setAnnotations(manifest, p.name, p.annotations, error))
      return false;
  }

  std::vector<PatchPoint> patches;
  if (!parsePatchPoints(manifest, patches, error))
    return false;
  std::unordered_map<std::string, const AssembledProgram *> byName;
  for (const AssembledProgram &p : programs)
    byName[p.name] = &p;
  for (size_t i = 0; i < patches.size(); ++i) {
    const PatchPoint &pp = patches[i];
    std::string where = "patch_points[" + std::to_string(i) + "]: ";
    auto found = byName.find(pp.program);
    const AssembledProgram *prog =
        found == byName.end() ? nullptr : found->second;
    if (!prog) {
      *error = where + "no program '" + pp.program + "'";
      return false;
    }
    if (pp.index >= prog->words.size()) {
      *error = where + "word " + std::to_string(pp.index) +
               " is past the end of '" + pp.program + "' (" +
               std::to_string(prog->words.size()) + " words)";
      return false;
    }
    std::string why = checkPatchPoint(pp, prog->words[size_t(pp.index)]);
    if (!why.empty()) {
      *error = where + why;
      return false;
    }
  }

  if (!writer.addManifest(manifest, error))
    return false;
  for (const AssembledProgram &p : programs)
    if (!writer.addProgram(p.name, p.words, error))
      return false;
  return true;
}

int runAssembler(const AsOptions &o, std::ostream &err, const char *tool) {
  auto fail = [&](const std::string &message) {
    err << tool << ": error: " << message << "\n";
    return 1;
  };
  if (o.input.empty())
    return fail("no input file (see --help)");
  if (o.output.empty())
    return fail("no output file (use -o OUT.pccx)");

  std::string source, message;
  if (!support::readInputFile(o.input, support::kMaxDataFileBytes, &source, &message))
    return fail(message);

  json base = json::object();
  if (!o.manifestJson.empty()) {
    std::string text;
    if (!support::readInputFile(o.manifestJson, support::kMaxDataFileBytes, &text, &message))
      return fail(message);
    try {
      base = json::parse(text);
    } catch (const std::exception &ex) {
      return fail(o.manifestJson + ": invalid JSON: " + ex.what());
    }
    if (!base.is_object())
      return fail(o.manifestJson + ": the manifest must be a JSON object");
  }

  std::string defaultName = programSectionName(o.program);
  std::string why = checkSectionName(defaultName);
  if (!why.empty())
    return fail("--program: " + why);

  std::vector<AssembledProgram> programs;
  std::vector<AsmDiagnostic> errors;
  if (!assembleText(source, defaultName, programs, errors)) {
    for (const AsmDiagnostic &d : errors)
      err << tool << ": error: " << o.input
          << (d.line ? ":" + std::to_string(d.line) : std::string()) << ": "
          << d.message << "\n";
    return 1;
  }

  // The target: --target, or the manifest's own "target" (v002 if none).
  machine::Target target;
  if (!targetOf(base, target, &message))
    return fail(o.manifestJson + ": 'target': " + message);
  if (!o.target.empty()) {
    machine::Target given;
    if (!machine::lookupTarget(o.target, given))
      return fail("--target: '" + o.target + "' is not a known target (" +
                  machine::targetNames() + ")");
    if (base.contains(manifest_keys::kTarget) && given != target)
      return fail("--target " + o.target + " disagrees with the target " +
                  base[manifest_keys::kTarget].dump() + " of " +
                  o.manifestJson);
    target = given;
    base[manifest_keys::kTarget] = o.target;
  }
  for (const AssembledProgram &p : programs)
    for (size_t i = 0; i < p.words.size(); ++i) {
      isa::Instruction inst;
      std::string missing;
      if (isa::decode(p.words[i], inst, nullptr))
        missing = machine::missingCapability(inst, target);
      if (!missing.empty())
        return fail(o.input + ": " + p.name + " word " + std::to_string(i) +
                    " (" + isa::disassemble(inst) + "): " + missing);
    }

  BundleWriter writer;
  if (!addAssembledSections(programs, base, writer, &message))
    return fail((o.manifestJson.empty() ? o.input : o.manifestJson) + ": " +
                message);
  std::string weights;
  if (!o.weights.empty() &&
      (!support::readInputFile(o.weights, support::kMaxDataFileBytes, &weights, &message) ||
       !writer.addSection("weights", SectionKind::Weights, weights.data(),
                          weights.size(), &message)))
    return fail("--weights: " + message);
  if (!writer.write(o.output, &message))
    return fail(message);
  return 0;
}

} // namespace pccx::bundle
