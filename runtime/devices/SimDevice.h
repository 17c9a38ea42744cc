//===- SimDevice.h - the functional simulator as a Device -------*- C++ -*-===//

#ifndef PCCX_RUNTIME_DEVICES_SIMDEVICE_H
#define PCCX_RUNTIME_DEVICES_SIMDEVICE_H

#include "runtime/devices/Device.h"
#include "runtime/sim/Simulator.h"

#include <algorithm>
#include <vector>

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
  /// The bundle's weights section: its records are the ones Integer
  /// numerics multiply with INT8 activations.
  bool registerWeights(const uint8_t *section, size_t bytes, BufferId *id,
                       std::string *error) override {
    if (!Device::registerWeights(section, bytes, id, error))
      return false;
    weightBuffers_.push_back(*id);
    return true;
  }
  /// The simulator reads registered buffers where they lie: no copy.
  bool pushWeights(const WeightHandle &record, const float *exact,
                   std::string *error) override {
    const uint8_t *data = hostBytes(record, error);
    if (!data)
      return false;
    const bool staticWeights =
        std::find(weightBuffers_.begin(), weightBuffers_.end(),
                  record.buffer) != weightBuffers_.end();
    sim_.pushWeightStream(data, size_t(record.bytes), exact, staticWeights);
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
  std::vector<BufferId> weightBuffers_;
};

} // namespace pccx::device

#endif
