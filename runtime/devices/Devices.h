//===- Devices.h - one way to open a device ---------------------*- C++ -*-===//
//
// Every front end (pccx-run, libpccxrt, the server) opens its device here
// by name, so the names, options and error messages are the same
// everywhere. To add a device: implement Device in its own files in this
// folder and add an entry to the table in Devices.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_DEVICES_DEVICES_H
#define PCCX_RUNTIME_DEVICES_DEVICES_H

#include "runtime/devices/Device.h"

#include "hw/machine/Target.h"

#include <memory>
#include <string>
#include <vector>

namespace pccx::device {

struct DeviceOptions {
  /// Simulator numerics: "hardware" (BF16 in L2) or "reference" (fp32).
  /// Devices that compute in hardware numerics refuse "reference".
  std::string numerics = "hardware";
  /// sim: threads a GEMV/GEMM splits its output features over (0: one per
  /// hardware thread). No result depends on it.
  unsigned threads = 0;
  /// The target profile the bundle was compiled for (exec::Model::target).
  machine::Target target = machine::kDefaultTarget;
  std::string uioName = "pccx";     ///< kv260: UIO device of the overlay
  std::string udmabuf = "udmabuf0"; ///< kv260: u-dma-buf buffer
  /// kv260: how the host window is mapped: "auto", "cached", "uncached".
  std::string dmaWindow = "auto";
};

/// The device names openDevice accepts, in the order --help lists them.
std::vector<std::string> deviceNames();

/// Opens device `name` ("sim", "kv260"); null with a message naming the
/// device and the problem otherwise.
std::unique_ptr<Device> openDevice(const std::string &name,
                                   const DeviceOptions &options,
                                   std::string *error);

} // namespace pccx::device

#endif
