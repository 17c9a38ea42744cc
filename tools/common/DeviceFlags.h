//===- DeviceFlags.h - the device flags of the runtime tools ----*- C++ -*-===//
//
// pccx-run and pccx-serve take their device the same way: --device NAME,
// then the device's options as --NAME VALUE or --device-option KEY=VALUE.
// Names, options and their help come from the device registry
// (runtime/devices/Devices.h), so a registered device and its options are
// accepted and listed without a change here. A tool reads its own flags
// first: a device option must not be named like one of them.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TOOLS_COMMON_DEVICEFLAGS_H
#define PCCX_TOOLS_COMMON_DEVICEFLAGS_H

#include "runtime/devices/Devices.h"
#include "tools/common/CommandLine.h"

namespace pccx::tools {

struct DeviceChoice {
  std::string name = device::registeredDevices().front()->name;
  device::OptionList options;
};

/// Takes the current argument when it is a device flag; a bad device name
/// or KEY=VALUE ends the tool with the error.
inline bool takeDeviceFlag(CommandLine &cl, DeviceChoice *choice) {
  const std::string &a = cl.arg();
  if (cl.is("--device")) {
    choice->name = cl.value();
    if (!device::findDevice(choice->name))
      cl.exitWith("--device must be " +
                  device::listAlternatives(device::deviceNames()));
    return true;
  }
  if (cl.is("--device-option")) {
    std::string error;
    if (!device::parseOptionList(cl.value(), &choice->options, &error))
      cl.exitWith("--device-option: " + error);
    return true;
  }
  if (a.compare(0, 2, "--") != 0)
    return false;
  const std::string name = a.substr(2, a.find('=') - 2);
  if (!device::isDeviceOption(name))
    return false;
  choice->options.emplace_back(name, cl.value());
  return true;
}

} // namespace pccx::tools

#endif
