//===- pccxrt.cpp - C API of the pccx runtime -----------------------------===//

#include "runtime/capi/pccxrt.h"

#include "runtime/app/Structured.h"
#include "runtime/app/Sampler.h"
#include "runtime/devices/Devices.h"
#include "runtime/exec/Session.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>

struct pccxrt_model {
  std::unique_ptr<pccx::exec::Model> model;
  std::unique_ptr<pccx::exec::Session> session;
  std::unique_ptr<pccx::app::Sampler> sampler;
  pccx::app::SamplingOptions samplerOptions;
  std::unique_ptr<pccx::Tokenizer> tokenizer; // loaded on first use
  std::unique_ptr<pccx::app::StructuredVocabulary> vocabulary; // the same
  /// Calls on one handle from several threads take turns: the session,
  /// the sampler and the lazily loaded tokenizer are not thread safe.
  std::mutex mutex;
};

namespace {
/// The calling thread's last error: another thread's failure on the same
/// handle cannot change a message this thread is reading.
thread_local std::string lastError;

int failWith(pccxrt_model *, const std::string &message) {
  lastError = message;
  return -1;
}

/// The bundle's tokenizer; null (with the error set) when it has none.
const pccx::Tokenizer *tokenizerOf(pccxrt_model *m) {
  if (!m->tokenizer) {
    size_t bytes = 0;
    const uint8_t *data = m->model->tokenizer(&bytes);
    if (!data) {
      lastError = m->model->bundle().path() + " carries no tokenizer";
      return nullptr;
    }
    m->tokenizer = pccx::Tokenizer::load(data, bytes, &lastError);
  }
  return m->tokenizer.get();
}
/// Runs an entry point's body: an exception (an allocation that fails, a
/// library bug) becomes the function's error result instead of unwinding
/// into the host application's C frames.
/// With a handle, the body runs holding the handle's lock.
template <typename Fn>
auto guarded(const pccxrt_model *m, decltype(std::declval<Fn>()()) failure,
             Fn body) -> decltype(body()) {
  std::string message;
  try {
    if (!m)
      return body();
    // The handle is always a heap object of ours, const only in the API.
    std::lock_guard<std::mutex> lock(const_cast<pccxrt_model *>(m)->mutex);
    return body();
  } catch (const std::bad_alloc &) {
    message = "out of memory";
  } catch (const std::exception &e) {
    message = std::string("internal error: ") + e.what();
  } catch (...) {
    message = "internal error";
  }
  try {
    lastError = message;
  } catch (...) {
  }
  return failure;
}
} // namespace

extern "C" {

pccxrt_model *pccxrt_open_device(const char *path, const char *device,
                                 const char *options) {
  return guarded(nullptr, (pccxrt_model *)nullptr, [&]() -> pccxrt_model * {
    if (!path) {
      lastError = "no bundle path";
      return nullptr;
    }
    if (!device) {
      lastError = "no device name";
      return nullptr;
    }
    pccx::device::OptionList optionList;
    // Options are checked before the bundle is read, as the tools do.
    if (!pccx::device::parseOptionList(options ? options : "", &optionList,
                                       &lastError) ||
        !pccx::device::checkDeviceOptions(device, optionList, &lastError))
      return nullptr;
    auto m = std::make_unique<pccxrt_model>();
    m->model = pccx::exec::Model::load(path, &lastError);
    if (!m->model)
      return nullptr;
    auto dev = pccx::device::openDevice(device, optionList,
                                        m->model->target(), &lastError);
    if (!dev)
      return nullptr;
    m->session =
        std::make_unique<pccx::exec::Session>(*m->model, std::move(dev));
    return m.release();
  });
}

pccxrt_model *pccxrt_open(const char *path, pccxrt_device device,
                          pccxrt_numerics numerics) {
  // The enum predates the registry; it names the first two devices. A C
  // caller may pass any int, which C++ may not load as the enum: the
  // values are read as their bytes.
  std::underlying_type_t<pccxrt_device> rawDevice;
  std::underlying_type_t<pccxrt_numerics> rawNumerics;
  std::memcpy(&rawDevice, &device, sizeof rawDevice);
  std::memcpy(&rawNumerics, &numerics, sizeof rawNumerics);
  const char *name = rawDevice == PCCXRT_DEVICE_SIM     ? "sim"
                     : rawDevice == PCCXRT_DEVICE_KV260 ? "kv260"
                                                        : nullptr;
  if (!name)
    return guarded(nullptr, (pccxrt_model *)nullptr, [&]() -> pccxrt_model * {
      lastError = "unknown device " + std::to_string(rawDevice);
      return nullptr;
    });
  if (rawNumerics != PCCXRT_NUMERICS_HARDWARE &&
      rawNumerics != PCCXRT_NUMERICS_REFERENCE &&
      rawNumerics != PCCXRT_NUMERICS_INTEGER)
    return guarded(nullptr, (pccxrt_model *)nullptr, [&]() -> pccxrt_model * {
      lastError = "unknown numerics " + std::to_string(rawNumerics) +
                  " (PCCXRT_NUMERICS_HARDWARE, _REFERENCE or _INTEGER)";
      return nullptr;
    });
  return pccxrt_open_device(path, name,
                            rawNumerics == PCCXRT_NUMERICS_REFERENCE
                                ? "numerics=reference"
                            : rawNumerics == PCCXRT_NUMERICS_INTEGER
                                ? "numerics=integer"
                                : "numerics=hardware");
}

size_t pccxrt_device_count(void) {
  return guarded(nullptr, size_t(0),
                 [] { return pccx::device::registeredDevices().size(); });
}

const char *pccxrt_device_name(size_t index) {
  return guarded(nullptr, (const char *)nullptr, [&]() -> const char * {
    const auto &devices = pccx::device::registeredDevices();
    return index < devices.size() ? devices[index]->name.c_str() : nullptr;
  });
}

const char *pccxrt_device_description(size_t index) {
  return guarded(nullptr, (const char *)nullptr, [&]() -> const char * {
    const auto &devices = pccx::device::registeredDevices();
    return index < devices.size() ? devices[index]->description.c_str()
                                  : nullptr;
  });
}

void pccxrt_close(pccxrt_model *model) {
  if (!model)
    return;
  // A call still running on another thread finishes before the handle
  // goes; one that starts after close is the caller's use after free, as
  // with free().
  { std::lock_guard<std::mutex> lock(model->mutex); }
  delete model;
}

const char *pccxrt_last_error(const pccxrt_model *) {
  return lastError.c_str();
}

int64_t pccxrt_vocab_size(const pccxrt_model *m) {
  return guarded(m, int64_t(-1),
                 [&] { return m ? m->model->vocabSize() : int64_t(-1); });
}

int64_t pccxrt_position(const pccxrt_model *m) {
  return guarded(m, int64_t(-1),
                 [&] { return m ? m->session->position() : int64_t(-1); });
}

int64_t pccxrt_capacity(const pccxrt_model *m) {
  return guarded(m, int64_t(-1),
                 [&] { return m ? m->session->capacity() : int64_t(-1); });
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
  return pccxrt_consume_slot(m, 0, tokens, count, decode_only, logits);
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
    // NaN or +inf leaves nothing meaningful to draw from; -inf masks a
    // token, but one finite value at least must remain.
    bool finite = false;
    for (size_t i = 0; i < row.size(); ++i) {
      if (std::isnan(row[i]) || row[i] == INFINITY)
        return failWith(m, "logits[" + std::to_string(i) + "] is " +
                               (std::isnan(row[i]) ? "NaN" : "+inf") +
                               "; sampling needs finite logits");
      finite |= std::isfinite(row[i]);
    }
    if (!finite)
      return failWith(m, "every logit is -inf; there is no token to sample");
    for (size_t i = 0; i < seen_count; ++i)
      if (seen[i] < 0)
        return failWith(m, "seen[" + std::to_string(i) + "] is " +
                               std::to_string(seen[i]) +
                               ", not a token id");
    *token =
        m->sampler->next(row, std::vector<int32_t>(seen, seen + seen_count));
    std::memcpy(logits, row.data(), row.size() * sizeof(float));
    return 0;
  });
}

int pccxrt_reserve_slots(pccxrt_model *m, int count) {
  return guarded(m, -1, [&] {
    if (!m)
      return -1;
    if (count < 1 || count > 4096)
      return failWith(m, "slot count " + std::to_string(count) +
                             " is not in [1, 4096]");
    std::string error;
    return m->session->reserveSlots(count, &error) ? 0 : failWith(m, error);
  });
}

int pccxrt_slot_count(const pccxrt_model *m) {
  return guarded(m, -1, [&] { return m ? m->session->slots() : -1; });
}

int64_t pccxrt_batch_rows(const pccxrt_model *m) {
  return guarded(m, int64_t(-1),
                 [&] { return m ? m->session->batchRows() : int64_t(-1); });
}

/// Whether `slot` is one of the handle's; fails naming it otherwise.
static bool validSlot(pccxrt_model *m, int slot) {
  if (slot >= 0 && slot < m->session->slots())
    return true;
  failWith(m, "slot " + std::to_string(slot) + " is not one of the " +
                  std::to_string(m->session->slots()) +
                  " slots (pccxrt_reserve_slots)");
  return false;
}

int64_t pccxrt_slot_position(const pccxrt_model *m, int slot) {
  return guarded(m, int64_t(-1), [&] {
    if (!m || !validSlot(const_cast<pccxrt_model *>(m), slot))
      return int64_t(-1);
    return m->session->position(slot);
  });
}

int pccxrt_reset_slot(pccxrt_model *m, int slot) {
  return guarded(m, -1, [&] {
    if (!m || !validSlot(m, slot))
      return -1;
    m->session->reset(slot);
    return 0;
  });
}

namespace {
int consumeRows(pccxrt_model *m, int slot, const int32_t *tokens,
                size_t count, int decode_only, float *logits,
                pccx::exec::LogitsRows which) {
  return guarded(m, -1, [&] {
    if (!m || !validSlot(m, slot))
      return -1;
    if (!tokens || count == 0)
      return failWith(m, "no tokens");
    std::vector<float> rows;
    std::string error;
    if (!m->session->consume(slot, std::vector<int32_t>(tokens, tokens + count),
                             decode_only != 0, logits ? &rows : nullptr,
                             &error, which))
      return failWith(m, error);
    if (logits)
      std::memcpy(logits, rows.data(), rows.size() * sizeof(float));
    return 0;
  });
}
} // namespace

int pccxrt_consume_slot(pccxrt_model *m, int slot, const int32_t *tokens,
                        size_t count, int decode_only, float *logits) {
  return consumeRows(m, slot, tokens, count, decode_only, logits,
                     pccx::exec::LogitsRows::Every);
}

int pccxrt_consume_last(pccxrt_model *m, int slot, const int32_t *tokens,
                        size_t count, int decode_only, float *logits) {
  return consumeRows(m, slot, tokens, count, decode_only, logits,
                     pccx::exec::LogitsRows::Last);
}

int pccxrt_step(pccxrt_model *m, const int *slots, const int32_t *tokens,
                size_t count, float *logits) {
  return guarded(m, -1, [&] {
    if (!m)
      return -1;
    if (!slots || !tokens || count == 0)
      return failWith(m, "no rows");
    std::vector<pccx::exec::Session::StepRow> rows(count);
    for (size_t i = 0; i < count; ++i) {
      if (!validSlot(m, slots[i]))
        return -1;
      rows[i] = {slots[i], tokens[i]};
    }
    std::vector<float> out;
    std::string error;
    if (!m->session->step(rows, logits ? &out : nullptr, &error))
      return failWith(m, error);
    if (logits)
      std::memcpy(logits, out.data(), out.size() * sizeof(float));
    return 0;
  });
}

int pccxrt_rewind(pccxrt_model *m, int slot, int64_t position) {
  return guarded(m, -1, [&] {
    if (!m || !validSlot(m, slot))
      return -1;
    std::string error;
    return m->session->rewind(slot, position, &error) ? 0 : failWith(m, error);
  });
}

int32_t pccxrt_bos_token(const pccxrt_model *m) {
  return guarded(m, int32_t(-1),
                 [&] { return m ? m->model->bosToken() : int32_t(-1); });
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
    const pccx::Tokenizer *tokenizer = tokenizerOf(m);
    if (!tokenizer)
      return -1;
    std::vector<int32_t> out;
    if (add_bos && m->model->bosToken() >= 0)
      out.push_back(m->model->bosToken());
    std::vector<int32_t> encoded;
    if (!tokenizer->encode(text, &encoded, &lastError))
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
    for (size_t i = 0; i < count; ++i)
      if (ids[i] < 0 || ids[i] >= m->model->vocabSize())
        return failWith(m, "ids[" + std::to_string(i) + "] is " +
                               std::to_string(ids[i]) +
                               ", outside the vocabulary of " +
                               std::to_string(m->model->vocabSize()));
    const pccx::Tokenizer *tokenizer = tokenizerOf(m);
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

struct pccxrt_json {
  std::shared_ptr<pccx::grammar::JsonConstraint> constraint;
};

pccxrt_json *pccxrt_json_new(pccxrt_model *m, const char *schemaText,
                             const int32_t *endTokens, size_t endCount) {
  return guarded(m, (pccxrt_json *)nullptr, [&]() -> pccxrt_json * {
    if (!m)
      return nullptr;
    if (endCount && !endTokens) {
      failWith(m, "null argument");
      return nullptr;
    }
    std::shared_ptr<const pccx::grammar::Schema> schema;
    if (!schemaText) {
      schema = pccx::grammar::anyObjectSchema();
    } else {
      auto json = pccx::grammar::Json::parse(schemaText, nullptr, false);
      if (json.is_discarded()) {
        failWith(m, "the schema is not valid JSON");
        return nullptr;
      }
      std::string error;
      if (!(schema = pccx::grammar::compileSchema(json, &error))) {
        failWith(m, error);
        return nullptr;
      }
    }
    const pccx::Tokenizer *tokenizer = tokenizerOf(m);
    if (!tokenizer)
      return nullptr;
    std::set<int32_t> ends(endTokens, endTokens + endCount);
    if (!endTokens) {
      for (int32_t id : m->model->eosTokens())
        ends.insert(id);
      if (int32_t eot = tokenizer->pieceId("<end_of_turn>"); eot >= 0)
        ends.insert(eot);
    }
    for (int32_t id : ends)
      if (id < 0 || id >= m->model->vocabSize()) {
        failWith(m, "end token " + std::to_string(id) +
                        " is outside the vocabulary");
        return nullptr;
      }
    if (!m->vocabulary)
      m->vocabulary = std::make_unique<pccx::app::StructuredVocabulary>(*tokenizer);
    std::string error;
    auto constraint = pccx::app::makeJsonConstraint(
        schema, m->vocabulary->get(), ends, &error);
    if (!constraint) {
      failWith(m, error);
      return nullptr;
    }
    return new pccxrt_json{std::move(constraint)};
  });
}

int pccxrt_json_mask(pccxrt_json *json, float *logits, size_t count) {
  return guarded(nullptr, -1, [&] {
    if (!json || !logits)
      return failWith(nullptr, "null argument");
    if (!json->constraint->mask(logits, count))
      return failWith(nullptr, json->constraint->error().empty()
                                   ? "no token can continue the JSON document"
                                   : json->constraint->error());
    return 0;
  });
}

int pccxrt_json_accept(pccxrt_json *json, int32_t token) {
  return guarded(nullptr, -1, [&] {
    if (!json)
      return failWith(nullptr, "null argument");
    if (!json->constraint->accept(token))
      return failWith(nullptr, "token " + std::to_string(token) +
                                   " cannot come next in the JSON document");
    return 0;
  });
}

int pccxrt_json_complete(const pccxrt_json *json) {
  return json && json->constraint->complete() ? 1 : 0;
}

void pccxrt_json_free(pccxrt_json *json) { delete json; }

} // extern "C"
