//===- Session.cpp - the per-token driver ---------------------------------===//

#include "runtime/exec/Session.h"

#include "runtime/exec/ProgramWalk.h"
#include "runtime/sim/WorkerPool.h"

#include "hw/abi/PatchSources.h"
#include "hw/numerics/KvRecords.h"
#include "hw/isa/Isa.h"
#include "hw/support/CheckedMath.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

namespace pccx::exec {

/// One sequence: its position and KV caches (record caches with their
/// device buffers, made before its first step), the tokens at its positions
/// (which give its position), and per ring (Session::rings_) the position each ring slot was last
/// written with (-1: none since the last reset).
struct Session::Sequence {
  std::vector<host::KvCache> caches;
  std::vector<device::BufferId> cacheBuffer;
  bool recordsReady = false;
  /// The tokens at positions 0 .. position() - 1.
  std::vector<int32_t> tokens;
  int64_t position() const { return int64_t(tokens.size()); }
  std::vector<std::vector<int64_t>> held;
};

Session::Session(const Model &model, std::unique_ptr<Device> device)
    : model_(model), device_(std::move(device)),
      fp32Caches_(device_->numerics() == sim::Numerics::Reference),
      contextSize_(model.maxSeqLen()) {
  if (model_.decode())
    decodeWords_ = model_.decode()->words;
  if (model_.prefill())
    prefillWords_ = model_.prefill()->words;
  if (model_.prefillWithoutLogits())
    prefillNoLogitsWords_ = model_.prefillWithoutLogits()->words;
  for (const auto &batch : model_.batches())
    batchWords_.push_back(batch->words);
  context_.window = device_->window();
  context_.windowWords = int64_t(device_->windowWords());
  context_.dynamicRecords = &dynamic_;
  context_.vocab = model_.vocabSize();
  // A ring of window + prefill_rows - 1 slots: a step at p reads back to
  // p - window + 1. Record caches name their window; a host cache's is what
  // its slots leave after the prefill rows.
  for (const CacheSpec &spec : model_.caches()) {
    if (spec.slots >= model_.maxSeqLen())
      continue;
    const int64_t reach = std::min(
        spec.slots, std::max<int64_t>({1, spec.window,
                                       spec.slots - model_.prefillRows() + 1}));
    auto it = std::find_if(rings_.begin(), rings_.end(),
                           [&](const RingSpec &r) { return r.slots == spec.slots; });
    if (it == rings_.end())
      rings_.push_back({spec.slots, reach});
    else
      it->reach = std::max(it->reach, reach);
  }
  sequences_.push_back(newSequence());
}

Session::~Session() = default;

void Session::setHostThreads(unsigned threads) {
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  hostPool_.reset();
  context_.splitRows = nullptr;
  if (threads <= 1)
    return;
  hostPool_ = std::make_unique<sim::WorkerPool>(threads);
  sim::WorkerPool *pool = hostPool_.get();
  context_.splitRows =
      [pool](int64_t rows,
             const std::function<void(int64_t, int64_t)> &body) {
        const int64_t parts = std::min<int64_t>(pool->threads(), rows);
        pool->run(unsigned(parts), [&](unsigned part) {
          body(rows * part / parts, rows * (part + 1) / parts);
        });
      };
}

unsigned Session::hostThreads() const {
  return hostPool_ ? hostPool_->threads() : 1;
}

std::unique_ptr<Session::Sequence> Session::newSequence() {
  auto s = std::make_unique<Sequence>();
  for (const CacheSpec &spec : model_.caches())
    // Record caches get their device memory before the first step.
    // A host cache longer than the context never wraps: it is held at the
    // context's length (slot = position mod slots is the same).
    s->caches.push_back(
        spec.records() ? host::KvCache()
                       : host::KvCache(std::min(spec.slots, contextSize_),
                                       spec.width,
                                       fp32Caches_ ? host::KvStorage::F32
                                                   : spec.dtype));
  s->cacheBuffer.assign(model_.caches().size(), 0);
  for (const RingSpec &ring : rings_)
    s->held.emplace_back(size_t(ring.slots), int64_t(-1));
  return s;
}

void Session::reset() {
  for (int slot = 0; slot < slots(); ++slot)
    reset(slot);
}

void Session::reset(int slot) {
  Sequence &s = *sequences_.at(size_t(slot));
  for (host::KvCache &c : s.caches)
    c.clear();
  s.tokens.clear();
  for (std::vector<int64_t> &held : s.held)
    std::fill(held.begin(), held.end(), int64_t(-1));
}

const std::vector<int32_t> &Session::tokens(int slot) const {
  return sequences_.at(size_t(slot))->tokens;
}

bool Session::rewindKeepsCache(int slot, int64_t position) const {
  if (slot < 0 || slot >= slots())
    return false;
  const Sequence &s = *sequences_[size_t(slot)];
  if (position < 0 || position > s.position())
    return false;
  // Positions at and past `position` are never read before the steps after
  // the rewind write them again; the ones before it must still be where
  // the ring put them. (A full-context cache never drops a position.)
  for (size_t r = 0; r < rings_.size(); ++r) {
    const RingSpec &ring = rings_[r];
    const std::vector<int64_t> &held = s.held[r];
    for (int64_t p = std::max<int64_t>(0, position - ring.reach + 1);
         p < position; ++p)
      if (held[size_t(p % ring.slots)] != p)
        return false;
  }
  return true;
}

int64_t Session::reusablePrefix(int slot,
                                const std::vector<int32_t> &prompt) const {
  if (prompt.empty())
    return 0;
  const std::vector<int32_t> &held = tokens(slot);
  const size_t shared = size_t(
      std::mismatch(held.begin(), held.end(), prompt.begin(), prompt.end())
          .first -
      held.begin());
  const int64_t kept = int64_t(std::min(shared, prompt.size() - 1));
  return rewindKeepsCache(slot, kept) ? kept : 0;
}

void Session::markWritten(const std::vector<RowBinding> &rows) {
  for (const RowBinding &row : rows)
    for (size_t r = 0; r < rings_.size(); ++r)
      row.sequence->held[r][size_t(row.position % rings_[r].slots)] =
          row.position;
}

int64_t Session::position(int slot) const {
  return sequences_.at(size_t(slot))->position();
}

bool Session::reserveSlots(int count, std::string *error) {
  if (count <= slots())
    return true;
  // Every sequence's caches, one more for the padding rows of a batched
  // step, within the limit a bundle's single session is held to.
  const uint64_t limit = Model::defaultHostMemoryLimit();
  const uint64_t each = model_.sequenceHostBytes();
  if (count > 4096 || each == 0 ||
      uint64_t(count) + 1 > limit / std::max<uint64_t>(each, 1)) {
    *error = std::to_string(count) + " sequences need " +
             std::to_string(count + 1) + " x " + std::to_string(each) +
             " bytes of KV caches, more than the host memory limit of " +
             std::to_string(limit) + " bytes";
    return false;
  }
  while (slots() < count)
    sequences_.push_back(newSequence());
  return true;
}

bool Session::rewind(int slot, int64_t position, std::string *error) {
  if (!checkSlot(slot, error))
    return false;
  Sequence &s = *sequences_[size_t(slot)];
  if (position < 0 || position > s.position()) {
    *error = "cannot rewind slot " + std::to_string(slot) + " to position " +
             std::to_string(position) + ": it holds positions 0.." +
             std::to_string(s.position() - 1);
    return false;
  }
  if (rewindKeepsCache(slot, position)) {
    // Positions past `position` stay in the rings but are never read: a
    // step's masks and kernels see only positions up to the step's last,
    // and the next step writes them again first (docs/serving.md, Reuse).
    s.tokens.resize(size_t(position));
    return true;
  }
  // A ring lost part of the window before `position` (later positions
  // were written over it, possibly before an earlier rewind): the kept
  // tokens are prefilled again from an empty cache, as a fresh run would.
  std::vector<int32_t> kept(s.tokens.begin(), s.tokens.begin() + position);
  reset(slot);
  ++stats_.rewindReplays;
  stats_.replayedTokens += uint64_t(kept.size());
  if (!kept.empty() &&
      !consume(slot, kept, false, nullptr, error, LogitsRows::Last)) {
    reset(slot);
    *error = "rewinding slot " + std::to_string(slot) + " to position " +
             std::to_string(position) + ": " + *error;
    return false;
  }
  return true;
}

bool Session::prepareRecords(Sequence &seq, std::string *error) {
  if (seq.recordsReady)
    return true;
  if (!prepareMasks(error))
    return false;
  for (size_t i = 0; i < model_.caches().size(); ++i) {
    const CacheSpec &spec = model_.caches()[i];
    if (!spec.records())
      continue;
    const int64_t bytes =
        hw::cacheRecordBytes(spec.dtype == host::KvStorage::KeyRecords,
                             spec.slots, spec.width / spec.heads);
    const device::StreamableBuffer memory =
        device_->allocateStreamable(size_t(bytes * spec.heads), error);
    if (!memory.data) {
      *error = "KV cache '" + spec.name + "': " + *error;
      return false;
    }
    seq.cacheBuffer[i] = memory.id;
    seq.caches[i] = host::KvCache(spec.slots, spec.width, spec.heads,
                                  spec.dtype, memory.data);
    // The golden model attends over the exact keys and values, as it keeps
    // host caches in fp32.
    if (fp32Caches_)
      seq.caches[i].keepExact();
  }
  seq.recordsReady = true;
  return true;
}

bool Session::prepareMasks(std::string *error) {
  if (masksReady_)
    return true;
  int64_t maxRows = 1;
  for (const Program *p : {model_.decode(), model_.prefill(), model_.batch()})
    if (p)
      maxRows = std::max(maxRows, p->rows);
  maskOf_.assign(model_.caches().size(), -1);
  for (size_t i = 0; i < model_.caches().size(); ++i) {
    const CacheSpec &spec = model_.caches()[i];
    if (spec.dtype != host::KvStorage::KeyRecords)
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
  masksReady_ = true;
  return true;
}

void Session::setMasks(const std::vector<RowBinding> &rows) {
  for (MaskSet &set : masks_)
    for (size_t r = 0; r < rows.size(); ++r)
      hw::setMaskScales(set.memory.data + r * set.recordBytes, set.slots,
                        set.window, rows[r].position, rows[r].last);
}

bool Session::checkRoom(int slot, int64_t count, std::string *error) const {
  const int64_t at = position(slot);
  if (count > capacity() - at) {
    *error = "positions " + std::to_string(at) + ".." +
             std::to_string(at + count - 1) + " exceed the KV cache of " +
             std::to_string(capacity()) + " positions (" +
             (capacity() < model_.maxSeqLen()
                  ? "the context size asked for; the bundle holds " +
                        std::to_string(model_.maxSeqLen())
                  : std::string("compile with a larger --max-seq-len")) +
             ")";
    return false;
  }
  return true;
}

bool Session::setContextSize(int64_t n, std::string *error) {
  if (n < 1 || n > model_.maxSeqLen()) {
    *error = "the context size must be 1 to " +
             std::to_string(model_.maxSeqLen()) +
             " positions (the bundle was compiled with --max-seq-len " +
             std::to_string(model_.maxSeqLen()) + "), not " +
             std::to_string(n);
    return false;
  }
  for (const auto &s : sequences_)
    if (!s->tokens.empty() || s->recordsReady) {
      *error = "the context size is set before the first token";
      return false;
    }
  contextSize_ = n;
  for (auto &s : sequences_)
    s = newSequence();
  return true;
}

bool Session::checkSlot(int slot, std::string *error) const {
  if (slot >= 0 && slot < slots())
    return true;
  *error = "slot " + std::to_string(slot) + " is not one of the session's " +
           std::to_string(slots());
  return false;
}

bool Session::checkToken(int32_t token, std::string *error) const {
  if (token >= 0 && token < model_.vocabSize())
    return true;
  *error = "token id " + std::to_string(token) +
           " is outside the vocabulary [0, " +
           std::to_string(model_.vocabSize()) + ")";
  return false;
}

bool Session::consume(int slot, const std::vector<int32_t> &tokens,
                      bool decodeOnly, std::vector<float> *logits,
                      std::string *error, LogitsRows which) {
  if (!checkSlot(slot, error))
    return false;
  for (int32_t t : tokens)
    if (!checkToken(t, error))
      return false;
  if (!checkRoom(slot, int64_t(tokens.size()), error))
    return false;
  Sequence &seq = *sequences_[size_t(slot)];
  size_t next = 0;
  const Program *prefill = decodeOnly ? nullptr : model_.prefill();
  const Program *withoutLogits =
      decodeOnly ? nullptr : model_.prefillWithoutLogits();
  const size_t firstRow = logits ? logits->size() : 0;
  std::vector<RowBinding> rows;
  while (next < tokens.size()) {
    const Program *p = model_.decode();
    std::vector<uint64_t> *words = &decodeWords_;
    if (prefill && tokens.size() - next >= size_t(prefill->rows)) {
      p = prefill;
      words = &prefillWords_;
      // Nobody reads this step's logits unless the caller takes every row,
      // or the last one and the step ends the tokens.
      const bool read =
          logits && (which == LogitsRows::Every ||
                     next + size_t(prefill->rows) == tokens.size());
      if (!read && withoutLogits) {
        p = withoutLogits;
        words = &prefillNoLogitsWords_;
      }
    }
    rows.assign(size_t(p->rows), RowBinding());
    for (int64_t r = 0; r < p->rows; ++r)
      rows[size_t(r)] = {&seq, seq.position() + r,
                         seq.position() + p->rows - 1};
    if (!run(*p, *words, tokens.data() + next, rows,
             p->noLogits ? nullptr : logits, error))
      return false;
    next += size_t(p->rows);
  }
  const size_t vocab = size_t(model_.vocabSize());
  if (logits && which == LogitsRows::Last && logits->size() > firstRow + vocab)
    logits->erase(logits->begin() + long(firstRow),
                  logits->end() - long(vocab));
  return true;
}

bool Session::step(const std::vector<StepRow> &rows,
                   std::vector<float> *logits, std::string *error) {
  std::vector<int64_t> count(sequences_.size(), 0);
  for (const StepRow &row : rows) {
    if (!checkSlot(row.slot, error) || !checkToken(row.token, error))
      return false;
    ++count[size_t(row.slot)];
  }
  for (size_t slot = 0; slot < count.size(); ++slot)
    if (count[slot] && !checkRoom(int(slot), count[slot], error))
      return false;
  const Program *batch = model_.batch();
  if (!batch) {
    for (const StepRow &row : rows)
      if (!consume(row.slot, {row.token}, true, logits, error))
        return false;
    return true;
  }
  // Chunks of the batch program's rows; a sliding cache's ring holds the
  // window plus prefill_rows - 1, so one chunk takes at most that many rows
  // of one slot.
  const size_t chunkRows = size_t(batch->rows);
  const int64_t perSlot = model_.prefillRows();
  std::vector<StepRow> chunk;
  std::vector<int64_t> inChunk(sequences_.size(), 0);
  auto flush = [&]() {
    bool ok = chunk.empty() || runBatch(chunk, logits, error);
    chunk.clear();
    std::fill(inChunk.begin(), inChunk.end(), 0);
    return ok;
  };
  for (const StepRow &row : rows) {
    if (chunk.size() == chunkRows || inChunk[size_t(row.slot)] == perSlot)
      if (!flush())
        return false;
    chunk.push_back(row);
    ++inChunk[size_t(row.slot)];
  }
  return flush();
}

bool Session::runBatch(const std::vector<StepRow> &rows,
                       std::vector<float> *logits, std::string *error) {
  if (rows.size() == 1) {
    // One row: the decode program streams the same weights, without the
    // batch program's padding rows.
    return consume(rows[0].slot, {rows[0].token}, true, logits, error);
  }
  size_t which = 0;
  while (model_.batches()[which]->rows < int64_t(rows.size()))
    ++which;
  const Program &batch = *model_.batches()[which];
  if (!spare_ && int64_t(rows.size()) < batch.rows)
    spare_ = newSequence();
  std::vector<RowBinding> bound(size_t(batch.rows));
  std::vector<int32_t> tokens(size_t(batch.rows), 0);
  std::vector<int64_t> next(sequences_.size());
  for (size_t s = 0; s < sequences_.size(); ++s)
    next[s] = sequences_[s]->position();
  for (size_t r = 0; r < rows.size(); ++r) {
    bound[r] = {sequences_[size_t(rows[r].slot)].get(),
                next[size_t(rows[r].slot)]++, 0};
    tokens[r] = rows[r].token;
  }
  for (size_t r = 0; r < rows.size(); ++r)
    bound[r].last = next[size_t(rows[r].slot)] - 1;
  // Unused rows all run token 0 at position 0 of the spare sequence: each
  // writes the same key and value to its slot 0 and reads only that slot.
  for (size_t r = rows.size(); r < bound.size(); ++r)
    bound[r] = {spare_.get(), 0, 0};
  std::vector<float> all;
  if (!run(batch, batchWords_[which], tokens.data(), bound,
           logits ? &all : nullptr, error))
    return false;
  stats_.batchRows += uint64_t(batch.rows);
  stats_.paddingRows += uint64_t(batch.rows) - rows.size();
  if (logits)
    logits->insert(logits->end(), all.begin(),
                   all.begin() + int64_t(rows.size()) * model_.vocabSize());
  return true;
}

bool Session::pushRecord(const Program &program, uint32_t i,
                         const std::vector<RowBinding> &rows,
                         std::string *why) {
  const WeightRef &rec = program.weights[i];
  if (rec.kind == WeightRef::Kind::Dynamic) {
    if (dynamic_.empty()) {
      *why = "word " + std::to_string(i) +
             " needs a weight record no host kernel produced";
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
      const Sequence &seq =
          *rows[rec.row >= 0 ? size_t(rec.row) : 0].sequence;
      const host::KvCache &cache = seq.caches[size_t(rec.cache)];
      const uint64_t bytes = uint64_t(cache.recordBytes());
      handle = {seq.cacheBuffer[size_t(rec.cache)], rec.part * bytes,
                bytes};
      exact = cache.exactRecord(rec.part);
    } else {
      const MaskSet &set = masks_[size_t(maskOf_[size_t(rec.cache)])];
      const uint64_t bytes = uint64_t(set.recordBytes);
      handle = {set.memory.id, rec.part * bytes, bytes};
    }
    std::string reason;
    if (!device_->pushWeights(handle, exact, &reason)) {
      *why = "word " + std::to_string(i) + ": " + reason;
      return false;
    }
    stats_.weightBytes += handle.bytes;
    if (rec.kind != WeightRef::Kind::Static)
      stats_.kvRecordBytes += handle.bytes;
  }
  return true;
}

bool Session::run(const Program &program, std::vector<uint64_t> &words,
                  const int32_t *tokens, const std::vector<RowBinding> &rows,
                  std::vector<float> *logits, std::string *error) {
  const int64_t count = int64_t(rows.size());
  auto where = [&](const std::string &what) {
    return program.section + " at position " +
           std::to_string(rows[0].position) + ": " + what;
  };
  if (!weightsRegistered_) {
    size_t bytes = 0;
    const uint8_t *section = model_.weightsSection(&bytes);
    if (!device_->registerWeights(section, bytes, &weightsBuffer_, error))
      return false;
    weightsRegistered_ = true;
  }
  // Patch fields in place: each site's field is located already.
  std::string why;
  if (!patchProgram(
          program, words,
          [&](int64_t r) { return rows[size_t(r)].position; },
          [&](int64_t r) { return tokens[r]; }, &why)) {
    *error = where(why);
    return false;
  }

  for (const RowBinding &row : rows)
    if (!prepareRecords(*row.sequence, error))
      return false;
  markWritten(rows);
  host::HostContext &ctx = context_;
  ctx.caches = &rows[0].sequence->caches;
  ctx.position = rows[0].position;
  ctx.tokens.assign(tokens, tokens + count);
  ctx.rowPositions.resize(rows.size());
  ctx.rowLastPositions.resize(rows.size());
  ctx.rowCaches.resize(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    ctx.rowPositions[r] = rows[r].position;
    ctx.rowLastPositions[r] = rows[r].last;
    ctx.rowCaches[r] = &rows[r].sequence->caches;
  }
  ctx.emittedRows = 0;
  dynamic_.clear();
  inFlight_.clear();
  setMasks(rows);
  stepLogits_.assign(program.noLogits ? 0 : size_t(count * model_.vocabSize()),
                     0.0f);
  ctx.logits = &stepLogits_;

  auto runEvent = [&](const Segment &, const Event &e) {
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
  auto issueWord = [&](const Segment &seg, uint32_t i) {
    std::string why;
    if (!pushRecord(program, i, rows, &why)) {
      *error = where(why);
      return false;
    }
    if (!device_->issue(words[i], i, &why)) {
      *error = where("segment " + seg.name + ": " + why);
      return false;
    }
    ++stats_.instructions;
    return true;
  };
  auto endSegment = [&](const Segment &seg) {
    std::string why;
    if (!device_->sync(&why) || !device_->finishSegment(&why)) {
      *error = where("segment " + seg.name + ": " + why);
      return false;
    }
    inFlight_.clear();
    return true;
  };
  if (!walkProgram(
          program, [](const Segment &) { return true; }, runEvent, issueWord,
          endSegment))
    return false;
  if (!dynamic_.empty()) {
    *error = where(std::to_string(dynamic_.size()) +
                   " weight records produced by host kernels were not used");
    return false;
  }

  const int64_t expectedRows = program.noLogits ? 0 : count;
  if (ctx.emittedRows != expectedRows) {
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
  for (size_t r = 0; r < rows.size(); ++r) {
    Sequence &seq = *rows[r].sequence;
    if (&seq == spare_.get())
      continue;
    // Rows of one sequence come in position order from its position on.
    seq.tokens.resize(size_t(rows[r].position));
    seq.tokens.push_back(tokens[r]);
  }
  ++stats_.steps;
  return true;
}

} // namespace pccx::exec
