//===- Assembler.h - hand-written programs to bundles -----------*- C++ -*-===//
//
// The library behind pccx-as. Source text holds one instruction per line in
// the syntax of isa::disassemble() (fields omitted are zero), with
//   ; comment    a trailing one becomes the word's annotation
//   # comment    never kept
//   .program NAME  starts another program section ("program." is prefixed
//                  unless NAME already starts with it)
//   .word VALUE    emits a raw 64-bit word unchecked (for decode-error tests)
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_BUNDLE_ASSEMBLER_H
#define PCCX_RUNTIME_BUNDLE_ASSEMBLER_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace pccx::bundle {

class BundleWriter;

struct AssembledProgram {
  std::string name;  ///< Section name, "program.<...>".
  unsigned line = 0; ///< Line of its .program directive (0: implicit).
  std::vector<uint64_t> words;
  std::vector<std::string> annotations; ///< One per word, "" for none.
};

struct AsmDiagnostic {
  unsigned line;
  std::string message;
};

/// "program.decode" for "decode" and for "program.decode".
std::string programSectionName(std::string_view name);

/// Assembles `text`. Words before the first .program directive go to
/// `defaultProgram` (dropped when empty and other programs follow). Every
/// error is collected; `programs` is meaningful only when none is.
bool assembleText(std::string_view text, const std::string &defaultProgram,
                  std::vector<AssembledProgram> &programs,
                  std::vector<AsmDiagnostic> &errors);

/// Adds the manifest (`base` plus "producer" and the annotations) and one
/// program section per program to `writer`. Patch points in `base` are
/// checked against the assembled words.
bool addAssembledSections(const std::vector<AssembledProgram> &programs,
                          const nlohmann::json &base, BundleWriter &writer,
                          std::string *error);

struct AsOptions {
  std::string input;
  std::string output;
  std::string program = "program.main";
  std::string manifestJson; ///< Optional file with the base manifest.
  std::string weights;      ///< Optional file stored as the "weights" section.
  /// Optional target profile recorded in the manifest; words the target
  /// cannot run are refused.
  std::string target;
};

/// Runs pccx-as: reports errors to `err` as "<tool>: error: <file>[:<line>]:
/// <message>" and returns the exit status. No output file is left behind
/// on failure.
int runAssembler(const AsOptions &options, std::ostream &err,
                 const char *tool = "pccx-as");

} // namespace pccx::bundle

#endif // PCCX_RUNTIME_BUNDLE_ASSEMBLER_H
