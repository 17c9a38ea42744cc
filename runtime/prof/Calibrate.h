//===- Calibrate.h - host costs measured on this machine --------*- C++ -*-===//
//
// Measures the host-side per-unit costs of HostCosts.def on the machine it
// runs on (meant for the KV260's Cortex-A53): fp32 operations in the host
// kernels' dot-product form, libm transcendental calls, streaming memory
// reads, a bound host call's fixed cost, and the BF16 conversion the driver
// does per lane. The result is a parameter file for `pccx-prof --params`.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_PROF_CALIBRATE_H
#define PCCX_RUNTIME_PROF_CALIBRATE_H

#include "runtime/prof/Params.h"

#include <string>

namespace pccx::prof {

/// The parameter file text: a comment header, then NAME=VALUE lines for
/// the measured parameters. Cycles are counted at `params.host_cpu_mhz`
/// (the board's clock; set it first when calibrating another CPU).
std::string calibrateHost(const Params &params);

} // namespace pccx::prof

#endif
