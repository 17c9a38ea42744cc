//===- CommandLine.h - the option layer of the plain-C++ tools --*- C++ -*-===//
//
// The tools that do not link LLVM (they run on the board) declare their
// options with this and parse them in one call. Every tool therefore reads
// and reports options the same way:
//   --flag VALUE, --flag=VALUE, -o VALUE and -oVALUE; `--` ends options;
//   a bad or missing value prints "TOOL: error: ..." and exits with 1;
//   an unknown option names the closest declared one ("did you mean");
//   -h/--help prints the tool's help, --version the project's version line;
//   an option's old spelling still works, with a warning naming the new one.
// --help checks itself against the declarations: a declared option it does
// not list, or an option line naming an undeclared one, is reported as an
// internal error (status 70), so a tool's --help test fails when the help
// and the parser drift apart.
//
// The tools that link LLVM (pccx-compile, pccx-opt, pccx-translate) keep
// llvm::cl, as MLIR's tools do; they share versionLine() with these.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TOOLS_COMMON_COMMANDLINE_H
#define PCCX_TOOLS_COMMON_COMMANDLINE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pccx::tools {

/// What `TOOL --version` prints.
std::string versionLine(const char *tool);

/// Edit distance between two option spellings (insertions, deletions,
/// substitutions and transpositions of neighbours each count one).
size_t optionDistance(const std::string &a, const std::string &b);

/// The declared spelling closest to `unknown` when it is close enough to be
/// a typo (or `unknown` is the start of exactly one), else "".
std::string closestOption(const std::string &unknown,
                          const std::vector<std::string> &declared);

class CommandLine {
public:
  /// Checks a value; returns "" when it is accepted, else the error
  /// message (without the tool's prefix).
  using ValueAction = std::function<std::string(const std::string &value)>;

  explicit CommandLine(const char *tool) : tool_(tool) {}

  /// Declarations. `names` holds the spellings, ", " between them
  /// ("-o, --output"); `meta` names the value in messages ("N", "FILE").
  /// `given`, when not null, is set when the option appears.
  void flag(const char *names, bool *out, bool *given = nullptr);
  void flag(const char *names, std::function<void()> action);
  void text(const char *names, std::string *out, bool *given = nullptr);
  /// A non-negative integer, at most `max`.
  void count(const char *names, int64_t *out, bool *given = nullptr,
             int64_t max = INT64_MAX);
  void number(const char *names, double *out, bool *given = nullptr);
  /// An integer from `low` to `high` ("--port must be at most 65535",
  /// "... between 1 and 3600 seconds" with `unit` "seconds").
  void range(const char *names, int64_t low, int64_t high,
             std::function<void(int64_t)> set, const char *unit = "");
  void value(const char *names, ValueAction action);
  /// An option that takes `arity` values (e.g. `--check SUITE RESULTS`).
  void values(const char *names, unsigned arity,
              std::function<std::string(const std::vector<std::string> &)>
                  action);
  /// Accepts `oldName` as `newName` (which must be declared), warning once.
  void renamed(const char *oldName, const char *newName);
  /// Options whose names are known only at run time (a device's options):
  /// `known` says whether `--NAME` is one, `take` gets its value, `names`
  /// lists them for suggestions.
  void dynamic(std::function<bool(const std::string &name)> known,
               std::function<std::string(const std::string &name,
                                         const std::string &value)>
                   take,
               std::function<std::vector<std::string>()> names);
  /// Positional arguments: at most one unless `many`. `what` names them in
  /// errors ("bundle", "input file").
  void positional(const char *what, std::string *out);
  void positionals(const char *what, std::vector<std::string> *out);
  /// The help text, produced only when asked for.
  void help(std::function<std::string()> text) { help_ = std::move(text); }

  /// Parses argv. Returns true when the tool goes on; otherwise the tool
  /// returns `*status`: 0 after --help or --version, 1 after an error
  /// (already printed).
  bool parse(int argc, char **argv, int *status);

  /// Prints "TOOL: error: message"; returns the exit status 1.
  int fail(const std::string &message) const;
  void warn(const std::string &message) const;
  const char *tool() const { return tool_; }

  /// The declared spellings (for tests and suggestions).
  std::vector<std::string> spellings() const;
  /// What --help lacks or has too many, one message per line ("" if none).
  std::string checkHelp(const std::string &text) const;

private:
  struct Option {
    std::vector<std::string> names;
    unsigned arity = 0; // values it takes
    std::function<std::string(const std::vector<std::string> &)> action;
    std::string renamedTo; // an old spelling: the new one
  };
  Option *find(const std::string &name);
  void declare(const char *names, unsigned arity,
               std::function<std::string(const std::vector<std::string> &)>
                   action);
  std::string unknownOption(const std::string &arg) const;

  const char *tool_;
  std::vector<Option> options_;
  std::function<std::string()> help_;
  std::function<bool(const std::string &)> dynamicKnown_;
  std::function<std::string(const std::string &, const std::string &)>
      dynamicTake_;
  std::function<std::vector<std::string>()> dynamicNames_;
  const char *positionalWhat_ = nullptr;
  std::string *positional_ = nullptr;
  std::vector<std::string> *positionals_ = nullptr;
};

/// Comma-separated token ids ("" is none); `what` names the option in the
/// error.
bool parseTokenIds(const std::string &text, const char *what,
                   std::vector<int32_t> *out, std::string *error);

} // namespace pccx::tools

#endif
