//===- Devices.h - the device registry --------------------------*- C++ -*-===//
//
// Every front end (pccx-run, pccx-serve, libpccxrt and its Python module)
// opens its device here by name, and takes the device names, their options
// and the help text from here, so all of them accept and describe the same
// things. Each device declares itself with a DeviceSpec: its name, a
// one-line description, its options (name, kind of value, default, help,
// checks) and the function that opens it. openDevice checks the options
// against that declaration before the device sees them.
//
// To add a device: implement Device in its own files in this folder with a
// function returning its DeviceSpec, and register it with one line,
// pccx_add_device(FUNCTION FILES...), in this folder's CMakeLists.txt.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_DEVICES_H
#define PCCX_RUNTIME_DEVICES_DEVICES_H

#include "runtime/devices/Device.h"

#include "hw/machine/Target.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pccx::device {

/// What an option's value is.
enum class OptionKind {
  Text,   ///< any non-empty text
  Choice, ///< one of OptionSpec::choices
  Count,  ///< a decimal integer from 0 to OptionSpec::maxCount
};

struct OptionSpec {
  std::string name; ///< NAME=VALUE, and a tool's --NAME
  OptionKind kind = OptionKind::Text;
  std::string defaultValue;
  std::string valueName;            ///< the value in --help: MODE, N, NAME
  std::string help;                 ///< what it does, without the default
  std::vector<std::string> choices; ///< Choice: the accepted values
  uint64_t maxCount = 0;            ///< Count: the largest accepted value
  /// A further check of a well-formed value: the reason it is refused
  /// (the message follows "DEVICE: "), or "" when it is accepted.
  std::string (*check)(const std::string &value) = nullptr;

  /// Declarations of each kind.
  static OptionSpec text(std::string name, std::string defaultValue,
                         std::string valueName, std::string help,
                         std::string (*check)(const std::string &) = nullptr);
  static OptionSpec choice(std::string name, std::string defaultValue,
                           std::string valueName, std::string help,
                           std::vector<std::string> choices);
  static OptionSpec count(std::string name, std::string defaultValue,
                          std::string valueName, std::string help,
                          uint64_t maxCount);
};

/// Option assignments in the order given; a later one of a name wins.
using OptionList = std::vector<std::pair<std::string, std::string>>;

struct DeviceSpec;
class OptionValues;
/// Checks `options` against `device`'s declarations and fills in the
/// defaults. The error names the device, the option and the value, with
/// what is accepted (the device's options, the choices).
bool resolveOptions(const DeviceSpec &device, const OptionList &options,
                    OptionValues *values, std::string *error);

/// One open's option values: every option the device declares, given or
/// defaulted, already checked against its declaration.
class OptionValues {
public:
  const std::string &text(const std::string &name) const;
  uint64_t count(const std::string &name) const;

private:
  friend bool resolveOptions(const DeviceSpec &, const OptionList &,
                             OptionValues *, std::string *);
  std::map<std::string, std::string> values_;
};

struct DeviceSpec {
  std::string name;
  std::string description; ///< one line, for --help and device listings
  std::vector<OptionSpec> options;
  /// Opens the device with checked options for bundles compiled for
  /// `target`; null with the reason (the registry prefixes "NAME: ").
  std::unique_ptr<Device> (*open)(const OptionValues &options,
                                  machine::Target target, std::string *error);
};

/// The registered devices, in registration order (the first is the
/// default of every front end).
const std::vector<const DeviceSpec *> &registeredDevices();
/// Null when no device is called `name`.
const DeviceSpec *findDevice(const std::string &name);
std::vector<std::string> deviceNames();

/// "a, b or c".
std::string listAlternatives(const std::vector<std::string> &names);

/// resolveOptions for device `name`, which may be unknown (the error then
/// lists the known ones): a front end checks its options before it loads
/// a bundle.
bool checkDeviceOptions(const std::string &name, const OptionList &options,
                        std::string *error);

/// Opens device `name` for bundles compiled for `target`; null with a
/// message naming the device and the problem otherwise.
std::unique_ptr<Device> openDevice(const std::string &name,
                                   const OptionList &options,
                                   machine::Target target, std::string *error);

/// Reads "KEY=VALUE,KEY=VALUE" (empty: none).
bool parseOptionList(const std::string &text, OptionList *options,
                     std::string *error);

/// Whether some registered device declares option `name`: a tool takes
/// `--NAME VALUE` as that option.
bool isDeviceOption(const std::string &name);

/// The device part of a tool's --help: `--device` with every device and
/// then each option as `--NAME VALUE`, in the tools' two-column layout.
std::string deviceHelp();

} // namespace pccx::device

#endif
