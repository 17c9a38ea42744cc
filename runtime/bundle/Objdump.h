//===- Objdump.h - printing bundles and raw words ---------------*- C++ -*-===//
//
// The library behind pccx-objdump: the file header, the section table, the
// manifest's memory map, patch points and segments, and each program section
// as annotated assembly in the syntax of isa::disassemble().
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_BUNDLE_OBJDUMP_H
#define PCCX_RUNTIME_BUNDLE_OBJDUMP_H

#include "hw/machine/Target.h"
#include "runtime/bundle/Bundle.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace pccx::bundle {

struct ObjdumpOptions {
  bool headers = false;
  bool sections = false;
  /// Memory map, patch points and segments.
  bool manifest = false;
  /// The complete manifest JSON.
  bool manifestJson = false;
  bool disassemble = false;
  /// The model card (printModelCard).
  bool info = false;
  /// Verify section checksums while opening.
  bool verify = true;
  /// Decode `words` instead of reading bundles.
  bool raw = false;
  /// With `raw`: the target whose field meanings are noted (a bundle's own
  /// target is read from its manifest).
  machine::Target target = machine::kDefaultTarget;
  std::vector<std::string> files;
  std::vector<std::string> words;
};

/// Runs pccx-objdump: prints to `out`, reports problems to `err` as
/// "<tool>: error: <file>: <message>" (and warnings likewise), and returns the
/// exit status (0, or 1 after any error).
int runObjdump(const ObjdumpOptions &options, std::ostream &out,
               std::ostream &err, const char *tool = "pccx-objdump");

void printHeader(const Bundle &bundle, std::ostream &out);
void printSections(const Bundle &bundle, std::ostream &out);
/// Memory map, patch points and segments, each only when present.
void printManifestTables(const Bundle &bundle, std::ostream &out);
void printManifestJson(const Bundle &bundle, std::ostream &out);
/// The model card: model and configuration, compile options, compiler,
/// target, sizes and the weight bytes each token streams.
void printModelCard(const Bundle &bundle, std::ostream &out);
/// Every program section. Words that do not decode are shown as such and
/// described in `problems`; returns false when there was any.
bool printDisassembly(const Bundle &bundle, std::ostream &out,
                      std::vector<std::string> *problems);

/// Parses a 64-bit word written in hex: an optional 0x prefix, 1 to 16 hex
/// digits, '_' allowed between digits.
bool parseHexWord(std::string_view text, uint64_t &word);

/// One line of `--raw` output ("0xWORD  <disassembly>") for a command-line
/// token. On failure returns false and sets `*error` (naming the token or
/// the offending field).
bool formatRawWord(std::string_view token, std::string &line,
                   std::string *error,
                   machine::Target target = machine::kDefaultTarget);

} // namespace pccx::bundle

#endif // PCCX_RUNTIME_BUNDLE_OBJDUMP_H
