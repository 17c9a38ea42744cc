//===- CommandLine.cpp - the option layer of the plain-C++ tools ----------===//

#include "tools/common/CommandLine.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace pccx::tools {

std::string versionLine(const char *tool) {
  return std::string(tool) + " " + PCCX_VERSION + " (pccx v002 NPU)\n";
}

size_t optionDistance(const std::string &a, const std::string &b) {
  // Optimal string alignment: a swapped pair of neighbours is one typo.
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string closestOption(const std::string &unknown,
                          const std::vector<std::string> &declared) {
  const std::string name = unknown.substr(0, unknown.find('='));
  std::string best, onlyPrefixed;
  size_t bestDistance = SIZE_MAX, prefixed = 0;
  for (const std::string &candidate : declared) {
    if (candidate.size() < 3 || candidate.compare(0, 2, "--") != 0)
      continue;
    size_t distance = optionDistance(name, candidate);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
    if (name.size() >= 4 && candidate.compare(0, name.size(), name) == 0) {
      ++prefixed;
      onlyPrefixed = candidate;
    }
  }
  // About one typo per three letters, and never more than three.
  const size_t letters = name.size() > 2 ? name.size() - 2 : 0;
  const size_t allowed = std::min<size_t>(3, std::max<size_t>(1, letters / 3));
  if (!best.empty() && bestDistance <= allowed)
    return best;
  return prefixed == 1 ? onlyPrefixed : "";
}

namespace {
/// The spelling errors name: the last of `names` ("-o, --output": --output).
std::string messageName(const char *names) {
  const std::string all = names;
  return all.substr(all.rfind(' ') + 1);
}
} // namespace

void CommandLine::declare(
    const char *names, unsigned arity,
    std::function<std::string(const std::vector<std::string> &)> action) {
  Option option;
  std::string all = names;
  for (size_t from = 0; from < all.size();) {
    size_t end = all.find(", ", from);
    if (end == std::string::npos)
      end = all.size();
    option.names.push_back(all.substr(from, end - from));
    from = end + 2;
  }
  option.arity = arity;
  option.action = std::move(action);
  options_.push_back(std::move(option));
}

void CommandLine::flag(const char *names, bool *out, bool *given) {
  declare(names, 0, [out, given](const std::vector<std::string> &) {
    *out = true;
    if (given)
      *given = true;
    return std::string();
  });
}

void CommandLine::flag(const char *names, std::function<void()> action) {
  declare(names, 0, [action](const std::vector<std::string> &) {
    action();
    return std::string();
  });
}

void CommandLine::text(const char *names, std::string *out, bool *given) {
  declare(names, 1, [out, given](const std::vector<std::string> &v) {
    *out = v[0];
    if (given)
      *given = true;
    return std::string();
  });
}

void CommandLine::value(const char *names, ValueAction action) {
  declare(names, 1, [action](const std::vector<std::string> &v) {
    return action(v[0]);
  });
}

void CommandLine::values(
    const char *names, unsigned arity,
    std::function<std::string(const std::vector<std::string> &)> action) {
  declare(names, arity, std::move(action));
}

void CommandLine::count(const char *names, int64_t *out, bool *given,
                        int64_t max) {
  const std::string option = messageName(names);
  declare(names, 1, [=](const std::vector<std::string> &v) {
    char *end = nullptr;
    errno = 0;
    long long n = std::strtoll(v[0].c_str(), &end, 10);
    if (v[0].empty() || *end || errno || n < 0)
      return option + ": not a count: '" + v[0] + "'";
    if (n > max)
      return option + ": " + v[0] + " is more than " + std::to_string(max);
    *out = n;
    if (given)
      *given = true;
    return std::string();
  });
}

void CommandLine::range(const char *names, int64_t low, int64_t high,
                        std::function<void(int64_t)> set, const char *unit) {
  const std::string option = messageName(names);
  std::string suffix = *unit ? std::string(" ") + unit : std::string();
  declare(names, 1, [=](const std::vector<std::string> &v) {
    char *end = nullptr;
    errno = 0;
    long long n = std::strtoll(v[0].c_str(), &end, 10);
    if (v[0].empty() || *end || errno)
      return option + ": not an integer: '" + v[0] + "'";
    if (n < low || n > high) {
      if (high == INT64_MAX)
        return option + " must be at least " + std::to_string(low) + suffix;
      if (low == 0)
        return option + " must be at most " + std::to_string(high) + suffix;
      return option + " must be between " + std::to_string(low) + " and " +
             std::to_string(high) + suffix;
    }
    set(n);
    return std::string();
  });
}

void CommandLine::number(const char *names, double *out, bool *given) {
  const std::string option = messageName(names);
  declare(names, 1, [=](const std::vector<std::string> &v) {
    char *end = nullptr;
    double d = std::strtod(v[0].c_str(), &end);
    if (v[0].empty() || *end)
      return option + ": not a number: '" + v[0] + "'";
    *out = d;
    if (given)
      *given = true;
    return std::string();
  });
}

void CommandLine::renamed(const char *oldName, const char *newName) {
  Option option;
  option.names.push_back(oldName);
  option.renamedTo = newName;
  options_.push_back(std::move(option));
}

void CommandLine::dynamic(
    std::function<bool(const std::string &)> known,
    std::function<std::string(const std::string &, const std::string &)> take,
    std::function<std::vector<std::string>()> names) {
  dynamicKnown_ = std::move(known);
  dynamicTake_ = std::move(take);
  dynamicNames_ = std::move(names);
}

void CommandLine::positional(const char *what, std::string *out) {
  positionalWhat_ = what;
  positional_ = out;
}

void CommandLine::positionals(const char *what,
                              std::vector<std::string> *out) {
  positionalWhat_ = what;
  positionals_ = out;
}

CommandLine::Option *CommandLine::find(const std::string &name) {
  for (Option &option : options_)
    for (const std::string &spelling : option.names)
      if (spelling == name)
        return &option;
  return nullptr;
}

std::vector<std::string> CommandLine::spellings() const {
  std::vector<std::string> all = {"-h", "--help", "--version"};
  for (const Option &option : options_)
    if (option.renamedTo.empty())
      all.insert(all.end(), option.names.begin(), option.names.end());
  if (dynamicNames_)
    for (const std::string &name : dynamicNames_())
      all.push_back("--" + name);
  return all;
}

std::string CommandLine::unknownOption(const std::string &arg) const {
  std::string shown = arg.substr(0, arg.find('='));
  // An old spelling is suggested as its new one.
  std::vector<std::string> candidates = spellings();
  for (const Option &option : options_)
    if (!option.renamedTo.empty())
      candidates.push_back(option.names[0]);
  std::string closest = closestOption(arg, candidates);
  for (const Option &option : options_)
    if (!option.renamedTo.empty() && option.names[0] == closest)
      closest = option.renamedTo;
  if (!closest.empty())
    return "unknown option '" + shown + "'; did you mean '" + closest +
           "'? (see --help)";
  return "unknown option '" + shown + "' (see --help)";
}

int CommandLine::fail(const std::string &message) const {
  std::cerr << tool_ << ": error: " << message << "\n";
  return 1;
}

void CommandLine::warn(const std::string &message) const {
  std::cerr << tool_ << ": warning: " << message << "\n";
}

namespace {
bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/// `name` occurs in `text` as a whole option name.
bool mentions(const std::string &text, const std::string &name) {
  for (size_t at = text.find(name); at != std::string::npos;
       at = text.find(name, at + 1)) {
    bool startsWord = at == 0 || !isNameChar(text[at - 1]);
    size_t end = at + name.size();
    bool endsWord = end == text.size() || !isNameChar(text[end]);
    if (startsWord && endsWord)
      return true;
  }
  return false;
}
} // namespace

std::string CommandLine::checkHelp(const std::string &text) const {
  std::string problems;
  for (const std::string &name : spellings())
    if (!mentions(text, name))
      problems += "--help does not list " + name + "\n";
  // An option line: two to four spaces, then the option's spellings.
  for (size_t from = 0; from < text.size();) {
    size_t end = text.find('\n', from);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(from, end - from);
    from = end + 1;
    size_t indent = line.find_first_not_of(' ');
    if (indent < 2 || indent > 4 || line[indent] != '-' ||
        line.size() < indent + 2 || !isNameChar(line[indent + 1]))
      continue;
    for (size_t at = indent; at < line.size() && line[at] == '-';) {
      size_t stop = at;
      while (stop < line.size() && isNameChar(line[stop]))
        ++stop;
      std::string name = line.substr(at, stop - at);
      bool known = false;
      for (const std::string &spelling : spellings())
        known |= spelling == name;
      if (!known)
        problems += "--help lists " + name + ", which is not an option\n";
      if (line.compare(stop, 2, ", ") != 0)
        break;
      at = stop + 2;
    }
  }
  return problems;
}

bool CommandLine::parse(int argc, char **argv, int *status) {
  *status = 1;
  bool optionsDone = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (optionsDone || arg.size() < 2 || arg[0] != '-') {
      if (positionals_) {
        positionals_->push_back(arg);
      } else if (!positional_) {
        fail("unexpected argument '" + arg + "' (see --help)");
        return false;
      } else if (!positional_->empty()) {
        fail(std::string("more than one ") + positionalWhat_ + " given ('" +
             *positional_ + "' and '" + arg + "')");
        return false;
      } else {
        *positional_ = arg;
      }
      continue;
    }
    if (arg == "--") {
      optionsDone = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      std::string text = help_ ? help_() : std::string();
      std::string problems = checkHelp(text);
      if (!problems.empty()) {
        std::cerr << tool_ << ": internal error: " << problems;
        *status = 70;
        return false;
      }
      std::cout << text;
      *status = 0;
      return false;
    }
    if (arg == "--version") {
      std::cout << versionLine(tool_);
      *status = 0;
      return false;
    }
    std::string name = arg, inlineValue;
    bool hasInline = false;
    size_t eq = arg.find('=');
    if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      inlineValue = arg.substr(eq + 1);
      hasInline = true;
    }
    Option *option = find(name);
    // -oFILE: a one-letter option with its value attached.
    if (!option && arg[1] != '-' && arg.size() > 2) {
      Option *shortOption = find(arg.substr(0, 2));
      if (shortOption && shortOption->arity == 1) {
        option = shortOption;
        name = arg.substr(0, 2);
        inlineValue = arg.substr(2);
        hasInline = true;
      }
    }
    if (option && !option->renamedTo.empty()) {
      warn(name + " is now " + option->renamedTo);
      name = option->renamedTo;
      option = find(name);
    }
    if (!option) {
      if (dynamicKnown_ && name.compare(0, 2, "--") == 0 &&
          dynamicKnown_(name.substr(2))) {
        std::string value = inlineValue;
        if (!hasInline) {
          if (i + 1 >= argc) {
            fail(name + " needs a value");
            return false;
          }
          value = argv[++i];
        }
        std::string error = dynamicTake_(name.substr(2), value);
        if (!error.empty()) {
          fail(error);
          return false;
        }
        continue;
      }
      fail(unknownOption(arg));
      return false;
    }
    std::vector<std::string> values;
    if (option->arity == 0 && hasInline) {
      fail(name + " takes no value");
      return false;
    }
    if (hasInline)
      values.push_back(inlineValue);
    while (values.size() < option->arity) {
      if (i + 1 >= argc) {
        fail(option->arity == 1 ? name + " needs a value"
                                : name + " needs " +
                                      std::to_string(option->arity) +
                                      " values");
        return false;
      }
      values.push_back(argv[++i]);
    }
    std::string error = option->action(values);
    if (!error.empty()) {
      fail(error);
      return false;
    }
  }
  *status = 0;
  return true;
}

bool parseTokenIds(const std::string &text, const char *what,
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
