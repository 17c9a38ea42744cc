//===- pccxrt.cpp - C API of the pccx runtime -----------------------------===//

#include "runtime/capi/pccxrt.h"

#include "runtime/devices/Devices.h"
#include "runtime/app/Sampler.h"
#include "runtime/app/Tokenizer.h"
#include "runtime/exec/Session.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

struct pccxrt_model {
  std::unique_ptr<pccx::exec::Model> model;
  std::unique_ptr<pccx::exec::Session> session;
  std::unique_ptr<pccx::app::Sampler> sampler;
  pccx::app::SamplingOptions samplerOptions;
  std::unique_ptr<pccx::app::Tokenizer> tokenizer; // loaded on first use
  std::string error;
};

namespace {
thread_local std::string openError;

int failWith(pccxrt_model *m, const std::string &message) {
  m->error = message;
  return -1;
}

/// The bundle's tokenizer; null (with the error set) when it has none.
const pccx::app::Tokenizer *tokenizerOf(pccxrt_model *m) {
  if (!m->tokenizer) {
    size_t bytes = 0;
    const uint8_t *data = m->model->tokenizer(&bytes);
    if (!data) {
      m->error = m->model->bundle().path() + " carries no tokenizer";
      return nullptr;
    }
    m->tokenizer = pccx::app::Tokenizer::load(data, bytes, &m->error);
  }
  return m->tokenizer.get();
}
/// Runs an entry point's body: an exception (an allocation that fails, a
/// library bug) becomes the function's error result instead of unwinding
/// into the host application's C frames.
template <typename Fn>
auto guarded(const pccxrt_model *m, decltype(std::declval<Fn>()()) failure,
             Fn body) -> decltype(body()) {
  std::string message;
  try {
    return body();
  } catch (const std::bad_alloc &) {
    message = "out of memory";
  } catch (const std::exception &e) {
    message = std::string("internal error: ") + e.what();
  } catch (...) {
    message = "internal error";
  }
  try {
    // The handle is always a heap object of ours, const only in the API.
    (m ? const_cast<pccxrt_model *>(m)->error : openError) = message;
  } catch (...) {
  }
  return failure;
}
} // namespace

extern "C" {

pccxrt_model *pccxrt_open(const char *path, pccxrt_device device,
                          pccxrt_numerics numerics) {
  return guarded(nullptr, (pccxrt_model *)nullptr, [&]() -> pccxrt_model * {
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
    options.target = m->model->target();
    auto dev = pccx::device::openDevice(
        device == PCCXRT_DEVICE_SIM ? "sim" : "kv260", options, &openError);
    if (!dev)
      return nullptr;
    m->session = std::make_unique<pccx::exec::Session>(
        *m->model, std::move(dev), reference);
    return m.release();
  });
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
  return guarded(m, -1, [&] {
    if (!m)
      return -1;
    m->session->reset();
    m->sampler.reset();
    return 0;
  });
}

int pccxrt_consume(pccxrt_model *m, const int32_t *tokens, size_t count,
                   int decode_only, float *logits) {
  return guarded(m, -1, [&] {
    if (!m)
      return -1;
    if (!tokens || count == 0)
      return failWith(m, "no tokens");
    std::vector<float> rows;
    std::string error;
    if (!m->session->consume(std::vector<int32_t>(tokens, tokens + count),
                             decode_only != 0, logits ? &rows : nullptr,
                             &error))
      return failWith(m, error);
    if (logits)
      std::memcpy(logits, rows.data(), rows.size() * sizeof(float));
    return 0;
  });
}

int pccxrt_sample(pccxrt_model *m, const pccxrt_sampling *options,
                  float *logits, const int32_t *seen, size_t seen_count,
                  int32_t *token) {
  return guarded(m, -1, [&] {
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
    *token =
        m->sampler->next(row, std::vector<int32_t>(seen, seen + seen_count));
    std::memcpy(logits, row.data(), row.size() * sizeof(float));
    return 0;
  });
}

int32_t pccxrt_bos_token(const pccxrt_model *m) {
  return m ? m->model->bosToken() : -1;
}

int pccxrt_eos_tokens(const pccxrt_model *m, int32_t *ids, size_t capacity,
                      size_t *count) {
  return guarded(m, -1, [&] {
    if (!m || !count)
      return -1;
    std::vector<int32_t> eos = m->model->eosTokens();
    *count = eos.size();
    if (capacity && !ids)
      return -1;
    for (size_t i = 0; i < eos.size() && i < capacity; ++i)
      ids[i] = eos[i];
    return 0;
  });
}

int pccxrt_tokenize(pccxrt_model *m, const char *text, int add_bos,
                    int32_t *ids, size_t capacity, size_t *count) {
  return guarded(m, -1, [&] {
    if (!m)
      return -1;
    if (!text || !count || (capacity && !ids))
      return failWith(m, "null argument");
    const pccx::app::Tokenizer *tokenizer = tokenizerOf(m);
    if (!tokenizer)
      return -1;
    std::vector<int32_t> out;
    if (add_bos && m->model->bosToken() >= 0)
      out.push_back(m->model->bosToken());
    std::vector<int32_t> encoded;
    if (!tokenizer->encode(text, &encoded, &m->error))
      return -1;
    out.insert(out.end(), encoded.begin(), encoded.end());
    *count = out.size();
    if (!ids && capacity == 0)
      return 0;
    if (out.size() > capacity)
      return failWith(m, "the text has " + std::to_string(out.size()) +
                             " tokens; the buffer holds " +
                             std::to_string(capacity));
    std::copy(out.begin(), out.end(), ids);
    return 0;
  });
}

int pccxrt_detokenize(pccxrt_model *m, const int32_t *ids, size_t count,
                      char *text, size_t capacity, size_t *length) {
  return guarded(m, -1, [&] {
    if (!m)
      return -1;
    if (!length || (count && !ids) || (capacity && !text))
      return failWith(m, "null argument");
    const pccx::app::Tokenizer *tokenizer = tokenizerOf(m);
    if (!tokenizer)
      return -1;
    std::string out = tokenizer->decode(std::vector<int32_t>(ids, ids + count));
    *length = out.size();
    if (!text && capacity == 0)
      return 0;
    if (out.size() + 1 > capacity)
      return failWith(m, "the text has " + std::to_string(out.size()) +
                             " bytes; the buffer holds " +
                             std::to_string(capacity) + " with its NUL");
    std::memcpy(text, out.c_str(), out.size() + 1);
    return 0;
  });
}

} // extern "C"
