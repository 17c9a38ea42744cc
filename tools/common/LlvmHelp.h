//===- LlvmHelp.h - --help of the tools that link LLVM ----------*- C++ -*-===//
//
// libLLVM registers hundreds of options of its own (back ends for other
// targets, Polly, ...) in every program that links it. The tools that parse
// their command line with llvm::cl keep `--help` to their own options with
// this; the others stay usable and are listed by `--help-hidden` (LLVM's
// HideUnrelatedOptions would make them ReallyHidden, unlisted everywhere).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TOOLS_COMMON_LLVMHELP_H
#define PCCX_TOOLS_COMMON_LLVMHELP_H

#include "tools/common/CommandLine.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace pccx::tools {

/// Hides from `--help` every registered option outside `categories`, except
/// LLVM's generic ones (--help, --version, ...) and the options named in
/// `visible`, which are shown even when registered elsewhere.
inline void showOnlyOwnOptions(
    std::initializer_list<const llvm::cl::OptionCategory *> categories,
    std::initializer_list<llvm::StringRef> visible = {}) {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *option = entry.second;
    if (llvm::is_contained(visible, entry.first())) {
      option->setHiddenFlag(llvm::cl::NotHidden);
      continue;
    }
    bool own = false;
    for (llvm::cl::OptionCategory *category : option->Categories)
      own |= llvm::is_contained(categories, category);
    // LLVM's own --help/--version live in a category of their own that is
    // neither the general one nor any tool's.
    bool genericHelp =
        entry.first().starts_with("help") || entry.first() == "version";
    if (!own && !genericHelp &&
        option->getOptionHiddenFlag() == llvm::cl::NotHidden)
      option->setHiddenFlag(llvm::cl::Hidden);
  }
}

/// `TOOL --version` prints the project's version line, as every tool does,
/// and the LLVM it was built with after it.
inline void setVersionPrinter(const char *tool) {
  static const char *name = tool;
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << versionLine(name) << "  built with LLVM " << LLVM_VERSION_STRING
       << "\n";
  });
}

/// llvm::cl::ParseCommandLineOptions, whose complaints become one line, as
/// the runtime tools' (tools/common/CommandLine.h): an unknown option names
/// the closest registered option or pass ("did you mean"), anything else is
/// LLVM's first complaint without its follow-ups (the binary's path, "Try:
/// --help"). Exits with status 2 then.
inline void parseCommandLine(int argc, char **argv, const char *tool,
                             llvm::StringRef overview) {
  // Unknown options first, before LLVM reads one as a group of one-letter
  // flags and complains about those.
  const auto &options = llvm::cl::getRegisteredOptions();
  std::vector<std::string> names;
  for (auto &entry : options)
    if (entry.first().size() > 1)
      names.push_back("--" + entry.first().str());
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--")
      break;
    if (!arg.starts_with("-") || arg == "-")
      continue;
    llvm::StringRef name = arg.ltrim('-').split('=').first;
    if (options.count(name))
      continue;
    const std::string closest = closestOption("--" + name.str(), names);
    llvm::errs() << tool << ": error: unknown option '" << arg.split('=').first
                 << "'"
                 << (closest.empty() ? "" : "; did you mean '" + closest + "'?")
                 << " (see --help)\n";
    std::exit(2);
  }
  std::string complaints;
  llvm::raw_string_ostream errs(complaints);
  if (llvm::cl::ParseCommandLineOptions(argc, argv, overview, &errs))
    return;
  errs.flush();
  // Some complaints (an option's value) LLVM prints itself, as one line.
  if (complaints.empty())
    std::exit(2);
  llvm::StringRef first = llvm::StringRef(complaints).split('\n').first;
  first.consume_front(std::string(tool) + ": ");
  first.consume_front(std::string(argv[0]) + ": ");
  llvm::errs() << tool << ": error: " << first.trim() << " (see --help)\n";
  std::exit(2);
}

} // namespace pccx::tools

#endif
