//===- CommandLine.h - argument reading for the plain-C++ tools -*- C++ -*-===//
//
// The tools that do not link LLVM (they run on the board) read their
// arguments with this: `--flag VALUE` or `--flag=VALUE`, values checked as
// they are read. A bad or missing value prints "TOOL: error: ..." and exits
// with status 1, so every tool words these errors the same way. `--version`
// prints the tool's name and the project's version and exits, in every
// tool.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TOOLS_COMMON_COMMANDLINE_H
#define PCCX_TOOLS_COMMON_COMMANDLINE_H

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace pccx::tools {

/// What `TOOL --version` prints.
inline std::string versionLine(const char *tool) {
  return std::string(tool) + " " + PCCX_VERSION + " (pccx v002 NPU)\n";
}

class CommandLine {
public:
  CommandLine(const char *tool, int argc, char **argv)
      : tool_(tool), argc_(argc), argv_(argv) {}

  /// Moves to the next argument; false when there is none.
  bool next() {
    if (++index_ >= argc_)
      return false;
    arg_ = argv_[index_];
    if (arg_ == "--version") {
      std::cout << versionLine(tool_);
      std::exit(0);
    }
    return true;
  }
  const std::string &arg() const { return arg_; }
  /// The argument is `flag` or `flag=...`.
  bool is(const char *flag) const {
    size_t n = std::strlen(flag);
    return arg_.compare(0, n, flag) == 0 &&
           (arg_.size() == n || arg_[n] == '=');
  }
  /// The current option's value: after '=' or the next argument.
  std::string value() {
    size_t eq = arg_.find('=');
    if (arg_.compare(0, 2, "--") == 0 && eq != std::string::npos)
      return arg_.substr(eq + 1);
    if (index_ + 1 >= argc_)
      exitWith(arg_ + " needs a value");
    return argv_[++index_];
  }
  /// A value that is a non-negative integer.
  int64_t count() {
    std::string option = arg_.substr(0, arg_.find('=')), v = value();
    char *end = nullptr;
    errno = 0;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || errno || n < 0)
      exitWith(option + ": not a count: '" + v + "'");
    return n;
  }
  /// A value that is a number.
  double number() {
    std::string option = arg_.substr(0, arg_.find('=')), v = value();
    char *end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end)
      exitWith(option + ": not a number: '" + v + "'");
    return d;
  }
  /// Takes the current argument as the tool's one positional argument
  /// (`what`: "bundle", "checkpoint directory"). An unknown option or a
  /// second positional argument is reported; then it returns false and the
  /// tool exits with status 1.
  bool positional(std::string *slot, const char *what) const {
    if (arg_.size() > 1 && arg_[0] == '-')
      return fail("unknown option '" + arg_ + "' (see --help)") == 0;
    if (!slot->empty())
      return fail(std::string("more than one ") + what + " given ('" + *slot +
                  "' and '" + arg_ + "')") == 0;
    *slot = arg_;
    return true;
  }
  /// Prints "TOOL: error: message"; returns the exit status 1.
  int fail(const std::string &message) const {
    std::cerr << tool_ << ": error: " << message << "\n";
    return 1;
  }
  [[noreturn]] void exitWith(const std::string &message) const {
    std::exit(fail(message));
  }

private:
  const char *tool_;
  int argc_;
  char **argv_;
  int index_ = 0;
  std::string arg_;
};

/// Comma-separated token ids ("" is none); `what` names the option in the
/// error.
inline bool parseTokenIds(const std::string &text, const char *what,
                          std::vector<int32_t> *out, std::string *error) {
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find(',', start);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(start, end - start);
    char *stop = nullptr;
    errno = 0;
    long v = std::strtol(item.c_str(), &stop, 10);
    if (item.empty() || *stop || errno || v < 0 || v > INT32_MAX) {
      *error = std::string(what) + ": '" + item + "' is not a token id";
      return false;
    }
    out->push_back(int32_t(v));
    start = end + 1;
  }
  if (!text.empty() && text.back() == ',') {
    *error = std::string(what) + ": '' is not a token id";
    return false;
  }
  return true;
}

} // namespace pccx::tools

#endif
