//===- pccxrt.cpp - C API of the pccx runtime -----------------------------===//

#include "runtime/capi/pccxrt.h"

#include "runtime/driver/Kv260Device.h"
#include "runtime/driver/Sampler.h"
#include "runtime/driver/Session.h"
#include "runtime/driver/SimDevice.h"

#include <cstring>
#include <memory>
#include <string>

struct pccxrt_model {
  std::unique_ptr<pccx::driver::Model> model;
  std::unique_ptr<pccx::driver::Session> session;
  std::unique_ptr<pccx::driver::Sampler> sampler;
  pccx::driver::SamplingOptions samplerOptions;
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
  m->model = pccx::driver::Model::load(path, &openError);
  if (!m->model)
    return nullptr;
  bool reference = numerics == PCCXRT_NUMERICS_REFERENCE;
  std::unique_ptr<pccx::driver::Device> dev;
  if (device == PCCXRT_DEVICE_SIM) {
    dev = std::make_unique<pccx::driver::SimDevice>(
        reference ? pccx::sim::Numerics::Reference
                  : pccx::sim::Numerics::Hardware);
  } else if (device == PCCXRT_DEVICE_KV260) {
    if (reference) {
      openError = "reference numerics are a simulator mode";
      return nullptr;
    }
    auto kv = pccx::driver::openKv260("pccx", "udmabuf0", &openError);
    if (!kv)
      return nullptr;
    dev = std::move(kv);
  } else {
    openError = "unknown device";
    return nullptr;
  }
  m->session = std::make_unique<pccx::driver::Session>(*m->model,
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
  pccx::driver::SamplingOptions o;
  o.temperature = options->temperature;
  o.topK = options->top_k;
  o.topP = options->top_p;
  o.repetitionPenalty = options->repetition_penalty;
  o.seed = options->seed;
  std::string why = pccx::driver::checkSamplingOptions(o);
  if (!why.empty())
    return failWith(m, why);
  // A new generator when the options change (the seed restarts it).
  if (!m->sampler || std::memcmp(&o, &m->samplerOptions, sizeof o) != 0) {
    m->sampler = std::make_unique<pccx::driver::Sampler>(o);
    m->samplerOptions = o;
  }
  std::vector<float> row(logits, logits + m->model->vocabSize());
  *token = m->sampler->next(row, std::vector<int32_t>(seen, seen + seen_count));
  std::memcpy(logits, row.data(), row.size() * sizeof(float));
  return 0;
}

} // extern "C"
