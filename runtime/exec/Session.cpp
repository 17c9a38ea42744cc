//===- Session.cpp - the per-token driver ---------------------------------===//

#include "runtime/exec/Session.h"

#include "hw/isa/Isa.h"
#include "runtime/bundle/PatchSources.h"

#include <cmath>
#include <limits>

namespace pccx::exec {

Session::Session(const Model &model, std::unique_ptr<Device> device,
                 bool fp32Caches)
    : model_(model), device_(std::move(device)), fp32Caches_(fp32Caches) {
  reset();
}

void Session::reset() {
  caches_.clear();
  for (auto &[name, spec] : model_.caches())
    caches_.emplace(name, host::KvCache(spec.slots, spec.width,
                                        fp32Caches_ ? host::KvDtype::F32
                                                    : spec.dtype));
  position_ = 0;
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
  if (position_ + int64_t(tokens.size()) > model_.maxPositions()) {
    *error = "positions " + std::to_string(position_) + ".." +
             std::to_string(position_ + int64_t(tokens.size()) - 1) +
             " exceed the KV cache of " +
             std::to_string(model_.maxPositions()) +
             " positions (compile with a larger --max-seq-len)";
    return false;
  }
  size_t next = 0;
  const Program *prefill = decodeOnly ? nullptr : model_.prefill();
  while (next < tokens.size()) {
    const Program *p = model_.decode();
    if (prefill && tokens.size() - next >= size_t(prefill->rows))
      p = prefill;
    if (!run(*p, tokens.data() + next, p->rows, logits, error))
      return false;
    next += size_t(p->rows);
  }
  return true;
}

bool Session::run(const Program &program, const int32_t *tokens,
                  int64_t count, std::vector<float> *logits,
                  std::string *error) {
  auto where = [&](const std::string &what) {
    return program.section + " at position " + std::to_string(position_) +
           ": " + what;
  };
  // Patch a copy of the words.
  std::vector<uint64_t> words = program.words;
  for (const bundle::PatchPoint &p : program.patches) {
    bundle::PatchSource source;
    if (!bundle::parsePatchSource(p.value.c_str(), &source) ||
        p.delta < 0 || p.delta >= count) {
      *error = where("patch point of word " + std::to_string(p.index) +
                     " is invalid");
      return false;
    }
    int64_t value =
        bundle::patchSourceValue(source, position_ + p.delta,
                                 tokens[p.delta], p.window) *
            p.scale +
        p.offset;
    isa::Instruction inst;
    isa::Field field;
    std::string why;
    if (!isa::decode(words[p.index], inst, &why) ||
        !isa::lookupField(inst.format(), p.field, field)) {
      *error = where("patch point of word " + std::to_string(p.index) +
                     " names no field '" + p.field + "'");
      return false;
    }
    why = value < 0 ? "negative" : isa::checkField(field, uint64_t(value));
    if (!why.empty()) {
      *error = where("patching " + p.field + " of word " +
                     std::to_string(p.index) + " to " +
                     std::to_string(value) + ": " + why);
      return false;
    }
    inst.set(field, uint32_t(value));
    if (!isa::encode(inst, words[p.index], &why)) {
      *error = where(why);
      return false;
    }
  }

  host::HostContext ctx;
  ctx.window = device_->window();
  ctx.windowWords = int64_t(device_->windowWords());
  ctx.tensors = model_.tensors();
  ctx.gathers = model_.gathers();
  ctx.caches = &caches_;
  ctx.position = position_;
  ctx.tokens.assign(tokens, tokens + count);
  dynamic_.clear();
  ctx.dynamicRecords = &dynamic_;
  std::vector<float> stepLogits(size_t(count * model_.vocabSize()), 0.0f);
  ctx.logits = &stepLogits;
  ctx.vocab = model_.vocabSize();
  std::deque<std::vector<uint8_t>> inFlight; // dynamic records being streamed

  auto runHostOp = [&](const HostOp &op) {
    if (!device_->sync(error))
      return false;
    std::string why;
    if (!host::runKernel(op.kernel, op.params, ctx, &why)) {
      *error = where(why);
      return false;
    }
    ++stats_.hostOps;
    return true;
  };
  for (const Segment &seg : program.segments) {
    size_t nextOp = 0;
    for (uint64_t i = seg.begin; i < seg.end; ++i) {
      while (nextOp < seg.hostOps.size() && seg.hostOps[nextOp].at == i)
        if (!runHostOp(seg.hostOps[nextOp++]))
          return false;
      auto rec = program.records.find(i);
      if (rec != program.records.end()) {
        if (rec->second.dynamic) {
          if (dynamic_.empty()) {
            *error = where("word " + std::to_string(i) +
                           " needs a weight record no host kernel produced");
            return false;
          }
          inFlight.push_back(std::move(dynamic_.front()));
          dynamic_.pop_front();
          device_->pushWeights(inFlight.back().data(), inFlight.back().size());
          stats_.weightBytes += inFlight.back().size();
        } else {
          device_->pushWeights(rec->second.data, size_t(rec->second.bytes));
          stats_.weightBytes += rec->second.bytes;
        }
      }
      std::string why;
      if (!device_->issue(words[i], i, &why)) {
        *error = where("segment " + seg.name + ": " + why);
        return false;
      }
      ++stats_.instructions;
    }
    while (nextOp < seg.hostOps.size())
      if (!runHostOp(seg.hostOps[nextOp++]))
        return false;
    std::string why;
    if (!device_->sync(&why) || !device_->finishSegment(&why)) {
      *error = where("segment " + seg.name + ": " + why);
      return false;
    }
    inFlight.clear();
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
  if (logits)
    logits->insert(logits->end(), stepLogits.begin(), stepLogits.end());
  position_ += count;
  ++stats_.steps;
  return true;
}

} // namespace pccx::exec
