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
  sim::Numerics numerics() const override { return sim_.numerics(); }
  float *window() override { return sim_.hostLanes(); }
  size_t windowWords() const override { return sim_.hostWords(); }
  /// The simulator reads registered buffers where they lie: no copy.
  bool pushWeights(const WeightHandle &record, const float *exact,
                   std::string *error) override {
    const uint8_t *data = hostBytes(record, error);
    if (!data)
      return false;
    sim_.pushWeightStream(data, size_t(record.bytes), exact);
    return true;
  }
  void pushHostWeights(const uint8_t *data, size_t bytes) override {
    sim_.pushWeightStream(data, bytes);
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
