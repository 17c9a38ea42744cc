//===- pccxrt.cpp - C API of the pccx runtime -----------------------------===//

#include "runtime/capi/pccxrt.h"

#include "runtime/devices/Devices.h"
#include "runtime/app/Sampler.h"
#include "runtime/exec/Session.h"

#include <cstring>
#include <memory>
#include <string>

struct pccxrt_model {
  std::unique_ptr<pccx::exec::Model> model;
  std::unique_ptr<pccx::exec::Session> session;
  std::unique_ptr<pccx::app::Sampler> sampler;
  pccx::app::SamplingOptions samplerOptions;
  std::string error;
};

namespace {
thread_local std::string openError;

int failWith(pccxrt_model *m, const std::string &message) {
  m->error = message;
  return -1;
}
} // namespace

extern "C" {

pccxrt_model *pccxrt_open(const char *path, pccxrt_device device,
                          pccxrt_numerics numerics) {
  if (!path) {
    openError = "no bundle path";
    return nullptr;
  }
  auto m = std::make_unique<pccxrt_model>();
  m->model = pccx::exec::Model::load(path, &openError);
  if (!m->model)
    return nullptr;
  bool reference = numerics == PCCXRT_NUMERICS_REFERENCE;
  if (device != PCCXRT_DEVICE_SIM && device != PCCXRT_DEVICE_KV260) {
    openError = "unknown device " + std::to_string(int(device));
    return nullptr;
  }
  pccx::device::DeviceOptions options;
  options.numerics = reference ? "reference" : "hardware";
  auto dev = pccx::device::openDevice(
      device == PCCXRT_DEVICE_SIM ? "sim" : "kv260", options, &openError);
  if (!dev)
    return nullptr;
  m->session = std::make_unique<pccx::exec::Session>(*m->model,
                                                       std::move(dev), reference);
  return m.release();
}

void pccxrt_close(pccxrt_model *model) { delete model; }

const char *pccxrt_last_error(const pccxrt_model *model) {
  return model ? model->error.c_str() : openError.c_str();
}

int64_t pccxrt_vocab_size(const pccxrt_model *m) {
  return m ? m->model->vocabSize() : -1;
}

int64_t pccxrt_position(const pccxrt_model *m) {
  return m ? m->session->position() : -1;
}

int64_t pccxrt_capacity(const pccxrt_model *m) {
  return m ? m->session->capacity() : -1;
}

int pccxrt_reset(pccxrt_model *m) {
  if (!m)
    return -1;
  m->session->reset();
  return 0;
}

int pccxrt_consume(pccxrt_model *m, const int32_t *tokens, size_t count,
                   int decode_only, float *logits) {
  if (!m)
    return -1;
  if (!tokens || count == 0)
    return failWith(m, "no tokens");
  std::vector<float> rows;
  std::string error;
  if (!m->session->consume(std::vector<int32_t>(tokens, tokens + count),
                           decode_only != 0, logits ? &rows : nullptr, &error))
    return failWith(m, error);
  if (logits)
    std::memcpy(logits, rows.data(), rows.size() * sizeof(float));
  return 0;
}

int pccxrt_sample(pccxrt_model *m, const pccxrt_sampling *options,
                  float *logits, const int32_t *seen, size_t seen_count,
                  int32_t *token) {
  if (!m)
    return -1;
  if (!options || !logits || !token || (seen_count && !seen))
    return failWith(m, "null argument");
  pccx::app::SamplingOptions o;
  o.temperature = options->temperature;
  o.topK = options->top_k;
  o.topP = options->top_p;
  o.repetitionPenalty = options->repetition_penalty;
  o.seed = options->seed;
  std::string why = pccx::app::checkSamplingOptions(o);
  if (!why.empty())
    return failWith(m, why);
  // A new generator when the options change (the seed restarts it).
  if (!m->sampler || std::memcmp(&o, &m->samplerOptions, sizeof o) != 0) {
    m->sampler = std::make_unique<pccx::app::Sampler>(o);
    m->samplerOptions = o;
  }
  std::vector<float> row(logits, logits + m->model->vocabSize());
  *token = m->sampler->next(row, std::vector<int32_t>(seen, seen + seen_count));
  std::memcpy(logits, row.data(), row.size() * sizeof(float));
  return 0;
}

} // extern "C"
