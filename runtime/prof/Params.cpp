//===- Params.cpp - the timing model's parameters -------------------------===//

#include "runtime/prof/Params.h"

#include "hw/support/InputFile.h"

#include <sstream>

#include <cmath>
#include <cstdlib>
#include <fstream>

namespace pccx::prof {

const std::vector<Params::Info> &Params::all() {
  static const std::vector<Info> list = {
#define PCCX_MACHINE_PARAM(Name, Value, Unit, Source)                          \
  {#Name, Unit, Source, &Params::Name},
#include "hw/machine/V002Machine.def"
#define PCCX_COST_PARAM(Name, Value, Unit, Source)                             \
  {#Name, Unit, Source, &Params::Name},
#include "hw/machine/HostCosts.def"
  };
  return list;
}

bool Params::set(const std::string &assignment, std::string *error) {
  if (assign(assignment, error))
    return true;
  *error = (error->compare(0, 3, "no ") == 0 ? "--set: " : "--set ") + *error;
  return false;
}

namespace {
constexpr double kMaxValue = 1e12, kMinDivisor = 1e-3;
} // namespace

bool Params::assign(const std::string &assignment, std::string *error) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos) {
    *error = "'" + assignment + "': expected NAME=VALUE";
    return false;
  }
  std::string name = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  for (const Info &p : all()) {
    if (name != p.name)
      continue;
    char *end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !std::isfinite(v) || v < 0) {
      *error = name + ": '" + text + "' is not a non-negative number";
      return false;
    }
    // Rates, clocks and counts divide; latencies and per-unit costs may be
    // zero in a what-if.
    bool divides = false;
    for (const char *part : {"mhz", "mb_per_s", "per_clock", "per_cycle",
                             "cores", "ports", "divisor", "threads"})
      divides |= name.find(part) != std::string::npos;
    bool mayBeZero = !divides;
    if (v == 0 && !mayBeZero) {
      *error = name + ": must be positive";
      return false;
    }
    // Bounds far beyond any machine keep the model's products and
    // quotients finite and its conversions to integers defined.
    if (v > kMaxValue || (divides && v < kMinDivisor)) {
      *error = name + ": '" + text + "' is outside [" +
               (divides ? "0.001" : "0") + ", 1e12]";
      return false;
    }
    // Counts (words, bits, banks, cores, ...) are whole; a flag is 0 or 1.
    std::string unit = p.unit;
    bool whole = unit != "MHz" && unit != "MB/s" && unit != "ns" &&
                 unit.find('/') == std::string::npos && unit != "x" &&
                 unit != "cycle";
    if (whole && v != std::floor(v)) {
      *error = name + ": '" + text + "' is not a whole number of " + unit;
      return false;
    }
    if ((unit == "bool" && v > 1) || (unit == "bit" && v > 63)) {
      *error = name + ": '" + text + "' is outside [0, " +
               (unit == "bool" ? "1" : "63") + "]";
      return false;
    }
    this->*(p.field) = v;
    return true;
  }
  *error = "no parameter named '" + name +
           "' (pccx-prof --list-parameters prints them)";
  return false;
}

bool Params::load(const std::string &path, std::string *error) {
  std::string text;
  if (!support::readInputFile(path, support::kMaxJsonFileBytes, &text,
                              error)) {
    *error = "--params: " + *error;
    return false;
  }
  std::istringstream in(text);
  auto trim = [](const std::string &text) {
    const size_t first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos)
      return std::string();
    return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
  };
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty())
      continue;
    const size_t eq = line.find('=');
    if (eq != std::string::npos)
      line = trim(line.substr(0, eq)) + "=" + trim(line.substr(eq + 1));
    std::string why;
    if (!assign(line, &why)) {
      *error = path + ":" + std::to_string(number) + ": " + why;
      return false;
    }
  }
  return true;
}

} // namespace pccx::prof
