//===- DeviceFlags.h - the device flags of the runtime tools ----*- C++ -*-===//
//
// pccx-run and pccx-serve take their device the same way: --device NAME,
// then the device's options as --NAME VALUE or --device-option KEY=VALUE,
// and the session's host threads as --host-threads N.
// Names, options and their help come from the device registry
// (runtime/devices/Devices.h), so a registered device and its options are
// accepted and listed without a change here. A tool declares its own
// options first: a device option must not be named like one of them.
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
  /// exec::Session::setHostThreads: 0 is one per hardware thread.
  int64_t hostThreads = 0;
};

/// --host-threads in the tools' --help (each places it in its own section).
constexpr const char *kHostThreadsHelp =
    "  --host-threads N         threads the host kernels split a step's rows\n"
    "                           over (AltUp, norms, residuals; the prefill's 16\n"
    "                           rows), 0 for one per hardware thread (default 0);\n"
    "                           results are the same bit for bit at every count\n"
    "  -t N                     the simulator's GEMV/GEMM threads, as --threads N\n"
    "                           (llama.cpp's spelling)\n";

/// Runs the simulator in `numerics` unless the command line names them:
/// comparisons with the float reference verify the NPU's datapath
/// (hardware numerics), whatever the simulator's default.
inline void defaultSimNumerics(DeviceChoice *choice, const char *numerics) {
  if (choice->name != "sim")
    return;
  for (const auto &option : choice->options)
    if (option.first == "numerics")
      return;
  choice->options.insert(choice->options.begin(), {"numerics", numerics});
}

/// Declares --device, --device-option and every registered device's
/// options on `cl`, filling `choice`.
inline void declareDeviceOptions(CommandLine &cl, DeviceChoice *choice) {
  cl.value("--device", [choice](const std::string &name) {
    choice->name = name;
    if (!device::findDevice(name))
      return "--device must be " +
             device::listAlternatives(device::deviceNames());
    return std::string();
  });
  // llama.cpp's -t: the simulator's --threads (other devices refuse it
  // by name when they are opened).
  cl.value("-t", [choice](const std::string &value) {
    choice->options.emplace_back("threads", value);
    return std::string();
  });
  cl.range("--host-threads", 0, 256,
           [choice](int64_t n) { choice->hostThreads = n; });
  cl.value("--device-option", [choice](const std::string &text) {
    std::string error;
    if (!device::parseOptionList(text, &choice->options, &error))
      return "--device-option: " + error;
    return std::string();
  });
  cl.dynamic(
      [](const std::string &name) { return device::isDeviceOption(name); },
      [choice](const std::string &name, const std::string &value) {
        choice->options.emplace_back(name, value);
        return std::string();
      },
      [] {
        std::vector<std::string> names;
        for (const device::DeviceSpec *spec : device::registeredDevices())
          for (const device::OptionSpec &option : spec->options)
            names.push_back(option.name);
        return names;
      });
}

} // namespace pccx::tools

#endif
