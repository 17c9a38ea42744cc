//===- Objdump.cpp - printing bundles and raw words -------------*- C++ -*-===//

#include "runtime/bundle/Objdump.h"

#include "hw/isa/Isa.h"
#include "hw/machine/MachineModel.h"
#include "hw/support/Format.h"
#include "runtime/bundle/Manifest.h"

#include <cstdarg>
#include <cstdio>
#include <map>

namespace pccx::bundle {

using nlohmann::json;

namespace {

std::string hex(uint64_t v, int digits) {
  return formatString("0x%0*llx", digits, (unsigned long long)v);
}

// A JSON value in one line: strings without quotes, the rest compact.
std::string text(const json &v) {
  if (v.is_string())
    return v.get<std::string>();
  return v.dump();
}

// "key=value" for every member not in `shown`, in key order.
std::string extras(const json &entry,
                   std::initializer_list<const char *> shown) {
  std::string out;
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    bool skip = false;
    for (const char *k : shown)
      skip = skip || it.key() == k;
    if (skip)
      continue;
    out += "  " + it.key() + "=" + text(it.value());
  }
  return out;
}

std::string member(const json &entry, const char *key, bool asHex = false) {
  auto it = entry.find(key);
  if (it == entry.end())
    return "-";
  if (asHex && it->is_number_unsigned())
    return hex(it->get<uint64_t>(), 8);
  return text(*it);
}

std::string signedTerm(int64_t v) {
  if (v < 0)
    return " - " + std::to_string(-(v + 1) + uint64_t(1));
  return " + " + std::to_string(v);
}

std::string describePatch(const PatchPoint &p) {
  std::string out = p.field + " = " + p.value;
  if (p.scale != 1)
    out += " * " + std::to_string(p.scale);
  if (p.offset != 0)
    out += signedTerm(p.offset);
  return out;
}

void printMemoryMap(const json &list, std::ostream &out) {
  out << "Memory map:\n";
  if (!list.is_array()) {
    out << "  (malformed: not an array) " << list.dump() << "\n";
    return;
  }
  out << formatString("  %-6s %-10s %-10s %s\n", "space", "offset", "size", "name");
  for (const json &e : list) {
    if (!e.is_object()) {
      out << "  (malformed entry) " << e.dump() << "\n";
      continue;
    }
    out << formatString("  %-6s %-10s %-10s %s", member(e, "space").c_str(),
                  member(e, "offset", true).c_str(),
                  member(e, "size", true).c_str(), member(e, "name").c_str())
        << extras(e, {"space", "offset", "size", "name"}) << "\n";
  }
}

void printPatchPoints(const json &manifest, std::ostream &out) {
  out << "Patch points:\n";
  std::vector<PatchPoint> patches;
  std::string err;
  if (!parsePatchPoints(manifest, patches, &err)) {
    out << "  (malformed: " << err << ")\n";
    return;
  }
  for (const PatchPoint &p : patches)
    out << "  " << p.program << "[" << p.index << "]  " << describePatch(p)
        << "\n";
}

void printSegments(const json &list, std::ostream &out) {
  out << "Segments:\n";
  if (!list.is_array()) {
    out << "  (malformed: not an array) " << list.dump() << "\n";
    return;
  }
  size_t i = 0;
  for (const json &e : list) {
    if (!e.is_object()) {
      out << "  (malformed entry) " << e.dump() << "\n";
      continue;
    }
    out << formatString("  %2zu  %-20s %s [%s, %s)", i++, member(e, "name").c_str(),
                  member(e, "program").c_str(), member(e, "begin").c_str(),
                  member(e, "end").c_str())
        << extras(e, {"name", "program", "begin", "end"}) << "\n";
  }
}

} // namespace

void printHeader(const Bundle &b, std::ostream &out) {
  uint64_t ours = machine::digest();
  out << "Bundle header:\n";
  out << "  format version   " << b.formatVersion() << "\n";
  out << "  ISA              " << isaVersionName(b.isaVersion()) << "\n";
  out << "  machine digest   " << hex(b.machineDigest(), 16);
  if (b.machineDigestMatches())
    out << " (matches this build)\n";
  else
    out << " (MISMATCH: this build is " << hex(ours, 16) << ")\n";
  out << "  file size        " << b.fileSize() << " bytes\n";
  out << "  sections         " << b.sections().size() << "\n";
  out << "  header checksum  " << hex(b.storedHeaderChecksum(), 16) << "\n";
  machine::Target target;
  std::string why;
  if (!targetOf(b.manifest(), target, &why))
    out << "  target           unknown: " << why << "\n";
  else
    out << "  target           " << machine::targetProfile(target).name
        << (b.manifest().is_object() &&
                    b.manifest().contains(manifest_keys::kTarget)
                ? ""
                : " (not recorded: the default)")
        << "\n";
}

void printSections(const Bundle &b, std::ostream &out) {
  out << "Sections:\n";
  out << formatString("  %3s  %-23s %-9s  %-10s  %12s  %-18s  %s\n", "idx", "name",
                "kind", "offset", "size", "checksum", "status");
  size_t i = 0;
  for (const SectionInfo &s : b.sections())
    out << formatString("  %3zu  %-23s %-9s  %-10s  %12llu  %-18s  %s\n", i++,
                  s.name.c_str(), kindName(s.kind), hex(s.offset, 8).c_str(),
                  (unsigned long long)s.size, hex(s.checksum, 16).c_str(),
                  b.checksumsVerified() ? "ok" : "unchecked");
}

void printManifestTables(const Bundle &b, std::ostream &out) {
  const json &m = b.manifest();
  if (!m.is_object())
    return;
  bool first = true;
  auto gap = [&] {
    if (!first)
      out << "\n";
    first = false;
  };
  if (m.contains(manifest_keys::kMemoryMap)) {
    gap();
    printMemoryMap(m[manifest_keys::kMemoryMap], out);
  }
  if (m.contains(manifest_keys::kPatchPoints)) {
    gap();
    printPatchPoints(m, out);
  }
  if (m.contains(manifest_keys::kSegments)) {
    gap();
    printSegments(m[manifest_keys::kSegments], out);
  }
}

void printManifestJson(const Bundle &b, std::ostream &out) {
  out << "Manifest:\n";
  if (!b.hasManifest()) {
    out << "  (no manifest section)\n";
    return;
  }
  out << b.manifest().dump(2) << "\n";
}

bool printDisassembly(const Bundle &b, std::ostream &out,
                      std::vector<std::string> *problems) {
  std::vector<PatchPoint> patches;
  std::string ignored;
  parsePatchPoints(b.manifest(), patches, &ignored); // shown elsewhere if bad
  bool ok = true;
  // Fields are shown with the meaning of the bundle's target.
  machine::Target target;
  std::string why;
  if (!targetOf(b.manifest(), target, &why)) {
    ok = false;
    if (problems)
      problems->push_back(b.path() + ": manifest 'target': " + why);
  }
  bool first = true;
  for (const SectionInfo *s : b.sectionsOfKind(SectionKind::Program)) {
    if (!first)
      out << "\n";
    first = false;
    size_t n = Bundle::wordCount(*s);
    out << "Disassembly of section '" << s->name << "' (" << n
        << (n == 1 ? " word" : " words") << "):\n";
    std::vector<std::string> notes = annotationsOf(b.manifest(), s->name);
    std::multimap<uint64_t, const PatchPoint *> patched;
    for (const PatchPoint &p : patches)
      if (p.program == s->name)
        patched.emplace(p.index, &p);
    int width = int(std::to_string(n ? n - 1 : 0).size());
    if (width < 4)
      width = 4;
    for (size_t i = 0; i < n; ++i) {
      uint64_t word = b.word(*s, i);
      std::string line =
          formatString("  %*zu: %s  ", width, i, hex(word, 16).c_str());
      isa::Instruction inst;
      std::string err;
      if (isa::decode(word, inst, &err)) {
        line += isa::disassemble(inst);
      } else {
        line += "<invalid: " + err + ">";
        ok = false;
        if (problems)
          problems->push_back(b.path() + ": section '" + s->name + "' word " +
                              std::to_string(i) + ": " + err);
      }
      std::string comment = i < notes.size() ? notes[i] : std::string();
      std::string meaning =
          err.empty() ? machine::targetNote(inst, target) : std::string();
      if (!meaning.empty())
        comment = comment.empty() ? meaning : meaning + "; " + comment;
      auto range = patched.equal_range(i);
      for (auto it = range.first; it != range.second; ++it) {
        if (!comment.empty())
          comment += " ";
        comment += "[patch " + describePatch(*it->second) + "]";
      }
      if (!comment.empty())
        line += "   ; " + comment;
      out << line << "\n";
    }
  }
  return ok;
}

bool parseHexWord(std::string_view t, uint64_t &word) {
  if (t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
    t.remove_prefix(2);
  uint64_t v = 0;
  unsigned digits = 0;
  bool lastWasDigit = false;
  for (char c : t) {
    unsigned d;
    if (c == '_' && lastWasDigit) {
      lastWasDigit = false;
      continue;
    }
    if (!hexDigitValue(c, &d))
      return false;
    if (++digits > 16)
      return false;
    v = v << 4 | d;
    lastWasDigit = true;
  }
  if (!digits || !lastWasDigit)
    return false;
  word = v;
  return true;
}

bool formatRawWord(std::string_view token, std::string &line,
                   std::string *error, machine::Target target) {
  uint64_t word;
  if (!parseHexWord(token, word)) {
    if (error)
      *error = "'" + std::string(token) + "' is not a 64-bit hexadecimal word";
    return false;
  }
  isa::Instruction inst;
  std::string err;
  if (!isa::decode(word, inst, &err)) {
    if (error)
      *error = err;
    return false;
  }
  line = hex(word, 16) + "  " + isa::disassemble(inst);
  std::string meaning = machine::targetNote(inst, target);
  if (!meaning.empty())
    line += "   ; " + meaning;
  return true;
}

int runObjdump(const ObjdumpOptions &o, std::ostream &out, std::ostream &err,
               const char *tool) {
  int status = 0;
  auto error = [&](const std::string &message) {
    err << tool << ": error: " << message << "\n";
    status = 1;
  };

  if (o.raw) {
    if (o.words.empty())
      error("--raw needs at least one word");
    for (const std::string &w : o.words) {
      std::string line, message;
      if (formatRawWord(w, line, &message, o.target))
        out << line << "\n";
      else
        error(message);
    }
    return status;
  }

  if (o.files.empty()) {
    error("no input file (see --help)");
    return status;
  }
  bool any = o.headers || o.sections || o.manifest || o.manifestJson ||
             o.disassemble || o.info;
  bool headers = any ? o.headers : true, sections = any ? o.sections : true,
       tables = any ? o.manifest : true, showJson = o.manifestJson,
       disasm = any ? o.disassemble : true;

  bool firstFile = true;
  for (const std::string &path : o.files) {
    OpenOptions open;
    open.verifyChecksums = o.verify;
    open.allowMachineMismatch = true; // shown, not refused
    std::string message;
    std::unique_ptr<Bundle> b = Bundle::open(path, &message, open);
    if (!b) {
      error(message);
      continue;
    }
    for (const std::string &w : b->warnings())
      err << tool << ": warning: " << w << "\n";
    if (!firstFile)
      out << "\n";
    firstFile = false;
    out << path << ": pccx bundle, format " << b->formatVersion() << ", ISA "
        << isaVersionName(b->isaVersion()) << "\n";

    auto part = [&](bool enabled, auto print) {
      if (!enabled)
        return;
      out << "\n";
      print();
    };
    part(o.info, [&] { printModelCard(*b, out); });
    part(headers, [&] { printHeader(*b, out); });
    part(sections, [&] { printSections(*b, out); });
    const json &m = b->manifest();
    bool hasTables =
        m.is_object() && (m.contains(manifest_keys::kMemoryMap) ||
                          m.contains(manifest_keys::kPatchPoints) ||
                          m.contains(manifest_keys::kSegments));
    part(tables && hasTables, [&] { printManifestTables(*b, out); });
    part(showJson, [&] { printManifestJson(*b, out); });
    std::vector<std::string> problems;
    part(disasm && !b->sectionsOfKind(SectionKind::Program).empty(),
         [&] { printDisassembly(*b, out, &problems); });
    for (const std::string &p : problems)
      error(p);
    if (tables || disasm) {
      std::string why;
      if (!checkPatchPoints(*b, &why))
        err << tool << ": warning: " << why << "\n";
    }
  }
  return status;
}

} // namespace pccx::bundle
