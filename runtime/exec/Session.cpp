//===- Session.cpp - the per-token driver ---------------------------------===//

#include "runtime/exec/Session.h"

#include "hw/abi/PatchSources.h"
#include "hw/numerics/KvRecords.h"
#include "hw/isa/Isa.h"
#include "hw/support/CheckedMath.h"

#include <cmath>
#include <limits>

namespace pccx::exec {

Session::Session(const Model &model, std::unique_ptr<Device> device)
    : model_(model), device_(std::move(device)),
      fp32Caches_(device_->numerics() == sim::Numerics::Reference) {
  if (model_.decode())
    decodeWords_ = model_.decode()->words;
  if (model_.prefill())
    prefillWords_ = model_.prefill()->words;
  context_.window = device_->window();
  context_.windowWords = int64_t(device_->windowWords());
  context_.caches = &caches_;
  context_.dynamicRecords = &dynamic_;
  context_.vocab = model_.vocabSize();
  reset();
}

void Session::reset() {
  if (caches_.size() != model_.caches().size()) {
    caches_.clear();
    for (const CacheSpec &spec : model_.caches())
      // Record caches get their device memory before the first step.
      caches_.push_back(spec.records()
                            ? host::KvCache()
                            : host::KvCache(spec.slots, spec.width,
                                            fp32Caches_ ? host::KvDtype::F32
                                                        : spec.dtype));
  } else {
    for (host::KvCache &c : caches_)
      c.clear();
  }
  position_ = 0;
}

bool Session::prepareRecords(std::string *error) {
  if (recordsReady_)
    return true;
  int64_t maxRows = 1;
  for (const Program *p : {model_.decode(), model_.prefill()})
    if (p)
      maxRows = std::max(maxRows, p->rows);
  maskOf_.assign(model_.caches().size(), -1);
  cacheBuffer_.assign(model_.caches().size(), 0);
  for (size_t i = 0; i < model_.caches().size(); ++i) {
    const CacheSpec &spec = model_.caches()[i];
    if (!spec.records())
      continue;
    const int64_t bytes =
        hw::cacheRecordBytes(spec.dtype == host::KvDtype::KeyRecords,
                             spec.slots, spec.width / spec.heads);
    const device::StreamableBuffer memory =
        device_->allocateStreamable(size_t(bytes * spec.heads), error);
    if (!memory.data) {
      *error = "KV cache '" + spec.name + "': " + *error;
      return false;
    }
    cacheBuffer_[i] = memory.id;
    caches_[i] = host::KvCache(spec.slots, spec.width, spec.heads, spec.dtype,
                               memory.data);
    // The golden model attends over the exact keys and values, as it keeps
    // host caches in fp32.
    if (fp32Caches_)
      caches_[i].keepExact();
    if (spec.dtype != host::KvDtype::KeyRecords)
      continue;
    for (size_t m = 0; m < masks_.size(); ++m)
      if (masks_[m].slots == spec.slots && masks_[m].window == spec.window)
        maskOf_[i] = int(m);
    if (maskOf_[i] >= 0)
      continue;
    MaskSet set;
    set.slots = spec.slots;
    set.window = spec.window;
    set.recordBytes = hw::maskRecordBytes(spec.slots);
    set.memory =
        device_->allocateStreamable(size_t(set.recordBytes * maxRows), error);
    if (!set.memory.data) {
      *error = "the attention masks of KV cache '" + spec.name + "': " + *error;
      return false;
    }
    for (int64_t r = 0; r < maxRows; ++r)
      hw::initMaskRecord(set.memory.data + r * set.recordBytes, spec.slots);
    maskOf_[i] = int(masks_.size());
    masks_.push_back(set);
  }
  recordsReady_ = true;
  return true;
}

void Session::setMasks(int64_t rows) {
  for (MaskSet &set : masks_)
    for (int64_t r = 0; r < rows; ++r)
      hw::setMaskScales(set.memory.data + r * set.recordBytes, set.slots,
                        set.window, position_ + r, position_ + rows - 1);
}

bool Session::consume(const std::vector<int32_t> &tokens, bool decodeOnly,
                      std::vector<float> *logits, std::string *error) {
  for (int32_t t : tokens)
    if (t < 0 || t >= model_.vocabSize()) {
      *error = "token id " + std::to_string(t) +
               " is outside the vocabulary [0, " +
               std::to_string(model_.vocabSize()) + ")";
      return false;
    }
  if (int64_t(tokens.size()) > model_.maxSeqLen() - position_) {
    *error = "positions " + std::to_string(position_) + ".." +
             std::to_string(position_ + int64_t(tokens.size()) - 1) +
             " exceed the KV cache of " +
             std::to_string(model_.maxSeqLen()) +
             " positions (compile with a larger --max-seq-len)";
    return false;
  }
  size_t next = 0;
  const Program *prefill = decodeOnly ? nullptr : model_.prefill();
  while (next < tokens.size()) {
    const Program *p = model_.decode();
    std::vector<uint64_t> *words = &decodeWords_;
    if (prefill && tokens.size() - next >= size_t(prefill->rows)) {
      p = prefill;
      words = &prefillWords_;
    }
    if (!run(*p, *words, tokens.data() + next, p->rows, logits, error))
      return false;
    next += size_t(p->rows);
  }
  return true;
}

bool Session::run(const Program &program, std::vector<uint64_t> &words,
                  const int32_t *tokens, int64_t count,
                  std::vector<float> *logits, std::string *error) {
  auto where = [&](const std::string &what) {
    return program.section + " at position " + std::to_string(position_) +
           ": " + what;
  };
  if (!weightsRegistered_) {
    size_t bytes = 0;
    const uint8_t *section = model_.weightsSection(&bytes);
    if (!device_->registerWeights(section, bytes, &weightsBuffer_, error))
      return false;
    weightsRegistered_ = true;
  }
  // Patch fields in place: each site's field is located already.
  for (const PatchSite &p : program.patches) {
    // Scale and offset come from the manifest: the value is computed with
    // overflow checks, then range-checked against the field.
    const int64_t source = bundle::patchSourceValue(
        p.source, position_ + p.delta, tokens[p.delta], p.window);
    int64_t value;
    if (!checkedMulAdd(source, p.scale, p.offset, &value)) {
      *error = where("patching " + std::string(isa::fieldInfo(p.field).name) +
                     " of word " + std::to_string(p.word) + ": " +
                     std::to_string(source) + " * " + std::to_string(p.scale) +
                     " + " + std::to_string(p.offset) + " overflows 64 bits");
      return false;
    }
    if (value < 0 || uint64_t(value) > p.maxValue) {
      const std::string why =
          value < 0 ? "negative" : isa::checkField(p.field, uint64_t(value));
      *error = where("patching " + std::string(isa::fieldInfo(p.field).name) +
                     " of word " + std::to_string(p.word) + " to " +
                     std::to_string(value) + ": " + why);
      return false;
    }
    const uint64_t mask = uint64_t(p.maxValue) << p.lo;
    uint64_t &w = words[p.word];
    w = (w & ~mask) | (uint64_t(value) << p.lo);
  }

  host::HostContext &ctx = context_;
  ctx.position = position_;
  ctx.tokens.assign(tokens, tokens + count);
  ctx.emittedRows = 0;
  dynamic_.clear();
  inFlight_.clear();
  if (!prepareRecords(error))
    return false;
  setMasks(count);
  stepLogits_.assign(size_t(count * model_.vocabSize()), 0.0f);
  ctx.logits = &stepLogits_;

  auto runEvent = [&](const Event &e) {
    if (e.kind == Event::Kind::Sync) {
      ++stats_.syncs;
      return device_->sync(error);
    }
    std::string why;
    if (!host::runKernel(program.calls[e.call], ctx, &why)) {
      *error = where(why);
      return false;
    }
    ++stats_.hostOps;
    return true;
  };
  for (const Segment &seg : program.segments) {
    size_t next = 0;
    for (uint32_t i = seg.begin; i < seg.end; ++i) {
      while (next < seg.events.size() && seg.events[next].at == i)
        if (!runEvent(seg.events[next++]))
          return false;
      const WeightRef &rec = program.weights[i];
      if (rec.kind == WeightRef::Kind::Dynamic) {
        if (dynamic_.empty()) {
          *error = where("word " + std::to_string(i) +
                         " needs a weight record no host kernel produced");
          return false;
        }
        inFlight_.push_back(std::move(dynamic_.front()));
        dynamic_.pop_front();
        device_->pushHostWeights(inFlight_.back().data(),
                                 inFlight_.back().size());
        stats_.weightBytes += inFlight_.back().size();
      } else if (rec.kind != WeightRef::Kind::None) {
        // Records of registered buffers go by handle: the static ones in
        // the weights section, KV records and masks in the cache buffers.
        device::WeightHandle handle;
        const float *exact = nullptr;
        if (rec.kind == WeightRef::Kind::Static) {
          handle = {weightsBuffer_, rec.offset, rec.bytes};
        } else if (rec.kind == WeightRef::Kind::Cache) {
          const host::KvCache &cache = caches_[size_t(rec.cache)];
          const uint64_t bytes = uint64_t(cache.recordBytes());
          handle = {cacheBuffer_[size_t(rec.cache)], rec.part * bytes, bytes};
          exact = cache.exactRecord(rec.part);
        } else {
          const MaskSet &set = masks_[size_t(maskOf_[size_t(rec.cache)])];
          const uint64_t bytes = uint64_t(set.recordBytes);
          handle = {set.memory.id, rec.part * bytes, bytes};
        }
        std::string why;
        if (!device_->pushWeights(handle, exact, &why)) {
          *error = where("word " + std::to_string(i) + ": " + why);
          return false;
        }
        stats_.weightBytes += handle.bytes;
        if (rec.kind != WeightRef::Kind::Static)
          stats_.kvRecordBytes += handle.bytes;
      }
      std::string why;
      if (!device_->issue(words[i], i, &why)) {
        *error = where("segment " + seg.name + ": " + why);
        return false;
      }
      ++stats_.instructions;
    }
    while (next < seg.events.size())
      if (!runEvent(seg.events[next++]))
        return false;
    std::string why;
    if (!device_->sync(&why) || !device_->finishSegment(&why)) {
      *error = where("segment " + seg.name + ": " + why);
      return false;
    }
    inFlight_.clear();
  }
  if (!dynamic_.empty()) {
    *error = where(std::to_string(dynamic_.size()) +
                   " weight records produced by host kernels were not used");
    return false;
  }

  if (ctx.emittedRows != count) {
    *error = where("the program emitted " + std::to_string(ctx.emittedRows) +
                   " logits rows for " + std::to_string(count) + " tokens");
    return false;
  }
  // NaN or Inf logits (non-finite weights, an overflowing kernel) would
  // still sample a token; the step is refused and named instead.
  for (size_t i = 0; i < stepLogits_.size(); ++i)
    if (!std::isfinite(stepLogits_[i])) {
      const size_t row = i / size_t(model_.vocabSize());
      *error = where("logit " + std::to_string(i % size_t(model_.vocabSize())) +
                     " of row " + std::to_string(row) + " (token " +
                     std::to_string(tokens[row]) + ") is " +
                     (std::isnan(stepLogits_[i]) ? "NaN" : "infinite"));
      return false;
    }
  if (logits)
    logits->insert(logits->end(), stepLogits_.begin(), stepLogits_.end());
  position_ += count;
  ++stats_.steps;
  return true;
}

} // namespace pccx::exec
