//===- Devices.cpp - the device registry ----------------------------------===//

#include "runtime/devices/Devices.h"

#include "hw/support/Names.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace pccx::device {

// The registered devices' spec functions: DeviceTable.inc holds one
// PCCX_DEVICE(FUNCTION) per pccx_add_device line of CMakeLists.txt.
#define PCCX_DEVICE(spec) const DeviceSpec &spec();
#include "DeviceTable.inc"
#undef PCCX_DEVICE

const std::vector<const DeviceSpec *> &registeredDevices() {
  static const std::vector<const DeviceSpec *> devices = {
#define PCCX_DEVICE(spec) &spec(),
#include "DeviceTable.inc"
#undef PCCX_DEVICE
  };
  return devices;
}

const DeviceSpec *findDevice(const std::string &name) {
  for (const DeviceSpec *d : registeredDevices())
    if (d->name == name)
      return d;
  return nullptr;
}

std::vector<std::string> deviceNames() {
  std::vector<std::string> names;
  for (const DeviceSpec *d : registeredDevices())
    names.push_back(d->name);
  return names;
}

std::string listAlternatives(const std::vector<std::string> &names) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return list;
}

OptionSpec OptionSpec::text(std::string name, std::string defaultValue,
                            std::string valueName, std::string help,
                            std::string (*check)(const std::string &)) {
  OptionSpec o;
  o.name = std::move(name);
  o.kind = OptionKind::Text;
  o.defaultValue = std::move(defaultValue);
  o.valueName = std::move(valueName);
  o.help = std::move(help);
  o.check = check;
  return o;
}

OptionSpec OptionSpec::choice(std::string name, std::string defaultValue,
                              std::string valueName, std::string help,
                              std::vector<std::string> choices) {
  OptionSpec o = text(std::move(name), std::move(defaultValue),
                      std::move(valueName), std::move(help));
  o.kind = OptionKind::Choice;
  o.choices = std::move(choices);
  return o;
}

OptionSpec OptionSpec::count(std::string name, std::string defaultValue,
                             std::string valueName, std::string help,
                             uint64_t maxCount) {
  OptionSpec o = text(std::move(name), std::move(defaultValue),
                      std::move(valueName), std::move(help));
  o.kind = OptionKind::Count;
  o.maxCount = maxCount;
  return o;
}

const std::string &OptionValues::text(const std::string &name) const {
  // Devices read only the options they declare, which resolveOptions
  // always fills in.
  return values_.at(name);
}

uint64_t OptionValues::count(const std::string &name) const {
  return std::strtoull(text(name).c_str(), nullptr, 10);
}

namespace {

/// The reason `value` is refused for `option`, or "".
std::string checkValue(const OptionSpec &option, const std::string &value) {
  switch (option.kind) {
  case OptionKind::Text:
    if (value.empty())
      return "option '" + option.name + "' needs a value";
    break;
  case OptionKind::Choice:
    if (std::find(option.choices.begin(), option.choices.end(), value) ==
        option.choices.end())
      return "option '" + option.name + "' must be " +
             listAlternatives(option.choices) + ", not '" + value + "'";
    break;
  case OptionKind::Count: {
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || value[0] == '-' || *end || errno ||
        n > option.maxCount)
      return "option '" + option.name + "' must be a count from 0 to " +
             std::to_string(option.maxCount) + ", not '" + value + "'";
    break;
  }
  }
  return option.check ? option.check(value) : "";
}

std::string optionNames(const DeviceSpec &device) {
  std::vector<std::string> names;
  for (const OptionSpec &o : device.options)
    names.push_back(o.name);
  return names.empty() ? "none" : listAlternatives(names);
}

std::string unknownDevice(const std::string &name) {
  return "unknown device '" + name +
         "' (known: " + listAlternatives(deviceNames()) + ")";
}

} // namespace

bool resolveOptions(const DeviceSpec &device, const OptionList &options,
                    OptionValues *values, std::string *error) {
  values->values_.clear();
  for (const OptionSpec &o : device.options)
    values->values_[o.name] = o.defaultValue;
  for (const auto &[name, value] : options) {
    auto spec = std::find_if(
        device.options.begin(), device.options.end(),
        [&, &name = name](const OptionSpec &o) { return o.name == name; });
    if (spec == device.options.end()) {
      *error = device.name + ": unknown option '" + name +
               "' (its options: " + optionNames(device) + ")";
      return false;
    }
    const std::string why = checkValue(*spec, value);
    if (!why.empty()) {
      *error = device.name + ": " + why;
      return false;
    }
    values->values_[name] = value;
  }
  return true;
}

bool checkDeviceOptions(const std::string &name, const OptionList &options,
                        std::string *error) {
  const DeviceSpec *device = findDevice(name);
  if (!device) {
    *error = unknownDevice(name);
    return false;
  }
  OptionValues values;
  return resolveOptions(*device, options, &values, error);
}

std::unique_ptr<Device> openDevice(const std::string &name,
                                   const OptionList &options,
                                   machine::Target target, std::string *error) {
  const DeviceSpec *device = findDevice(name);
  if (!device) {
    *error = unknownDevice(name);
    return nullptr;
  }
  OptionValues values;
  if (!resolveOptions(*device, options, &values, error))
    return nullptr;
  std::string why;
  auto opened = device->open(values, target, &why);
  if (!opened)
    *error = device->name + ": " + why;
  return opened;
}

bool parseOptionList(const std::string &text, OptionList *options,
                     std::string *error) {
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find(',', start);
    if (end == std::string::npos)
      end = text.size();
    const std::string item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      *error = "device option '" + item + "' is not KEY=VALUE";
      return false;
    }
    options->emplace_back(item.substr(0, eq), item.substr(eq + 1));
    start = end + 1;
  }
  if (!text.empty() && text.back() == ',') {
    *error = "device option '' is not KEY=VALUE";
    return false;
  }
  return true;
}

bool isDeviceOption(const std::string &name) {
  for (const DeviceSpec *d : registeredDevices())
    for (const OptionSpec &o : d->options)
      if (o.name == name)
        return true;
  return false;
}

namespace {

constexpr size_t kHelpColumn = 27, kHelpWidth = 77;

/// `flag` in the first column and `lines` (each its own paragraph) wrapped
/// in the second, as the tools' --help lays out their options.
std::string helpEntry(const std::string &flag,
                      const std::vector<std::string> &lines) {
  std::string out = "  " + flag;
  size_t column = out.size();
  auto newLine = [&] {
    out += "\n" + std::string(kHelpColumn, ' ');
    column = kHelpColumn;
  };
  if (column + 1 > kHelpColumn)
    newLine();
  else
    out.append(kHelpColumn - column, ' '), column = kHelpColumn;
  for (size_t l = 0; l < lines.size(); ++l) {
    if (l > 0)
      newLine();
    bool first = true;
    for (size_t at = 0; at < lines[l].size();) {
      size_t end = lines[l].find(' ', at);
      if (end == std::string::npos)
        end = lines[l].size();
      const std::string word = lines[l].substr(at, end - at);
      if (!first && column + 1 + word.size() > kHelpWidth)
        newLine();
      else if (!first)
        out += ' ', ++column;
      out += word;
      column += word.size();
      first = false;
      at = end + 1;
    }
  }
  return out + "\n";
}

} // namespace

std::string deviceHelp() {
  const auto &devices = registeredDevices();
  const std::string names = support::joinNames(
      devices, [](const DeviceSpec *d) { return d->name; }, "|");
  std::vector<std::string> lines = {"the device that runs the bundle "
                                    "(default " +
                                    devices.front()->name + "):"};
  for (const DeviceSpec *d : devices)
    lines.push_back(d->name + ": " + d->description);
  std::string out = helpEntry("--device " + names, lines);
  // Each option once, with what it means on every device declaring it.
  std::vector<std::string> seen;
  for (const DeviceSpec *d : devices)
    for (const OptionSpec &o : d->options) {
      if (std::find(seen.begin(), seen.end(), o.name) != seen.end())
        continue;
      seen.push_back(o.name);
      lines.clear();
      for (const DeviceSpec *e : devices)
        for (const OptionSpec &p : e->options)
          if (p.name == o.name)
            lines.push_back(e->name + ": " + p.help +
                            (p.defaultValue.empty()
                                 ? ""
                                 : " (default " + p.defaultValue + ")"));
      out += helpEntry("--" + o.name + " " + o.valueName, lines);
    }
  out += helpEntry("--device-option KEY=VALUE",
                   {"the device's option KEY (the same as --KEY VALUE)"});
  return out;
}

} // namespace pccx::device
