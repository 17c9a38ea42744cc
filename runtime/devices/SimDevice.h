//===- SimDevice.h - the functional simulator as a Device -------*- C++ -*-===//

#ifndef PCCX_RUNTIME_DEVICES_SIMDEVICE_H
#define PCCX_RUNTIME_DEVICES_SIMDEVICE_H

#include "runtime/devices/Device.h"
#include "runtime/sim/Simulator.h"

namespace pccx::device {

class SimDevice : public Device {
public:
  explicit SimDevice(sim::Numerics numerics,
                     machine::Target target = machine::kDefaultTarget)
      : sim_(numerics, machine::host_window_words, target) {}
  const char *name() const override { return "sim"; }
  float *window() override { return sim_.hostLanes(); }
  size_t windowWords() const override { return sim_.hostWords(); }
  void pushWeights(const uint8_t *data, size_t bytes) override {
    sim_.pushWeightStream(data, bytes);
  }
  void pushExactWeights(const uint8_t *data, size_t bytes,
                        const float *exact) override {
    sim_.pushWeightStream(data, bytes, exact);
  }
  bool issue(uint64_t word, uint64_t index, std::string *error) override;
  bool sync(std::string *) override {
    sim_.sync();
    return true;
  }
  bool finishSegment(std::string *error) override {
    return sim_.finishSegment(error);
  }
  sim::Simulator &simulator() { return sim_; }

private:
  sim::Simulator sim_;
};

} // namespace pccx::device

#endif
