//===- Model.cpp - a loaded bundle, ready to run --------------------------===//

#include "runtime/exec/Model.h"

#include "hw/isa/Isa.h"
#include "hw/numerics/KvRecords.h"
#include "hw/support/CheckedMath.h"
#include "runtime/bundle/ModelManifest.h"

#include <algorithm>
#include <cstdio>

#include <unistd.h>

using nlohmann::json;

namespace pccx::exec {

namespace {

bool fail(std::string *error, const std::string &path,
          const std::string &message) {
  *error = path + ": " + message;
  return false;
}

/// Prepares one program of the manifest: words decoded, weight records
/// resolved, host calls bound, sync points placed, patch fields located.
bool prepareProgram(const bundle::Bundle &b, const std::string &path,
                    const bundle::ModelManifest &manifest,
                    const bundle::ProgramEntry &entry,
                    const host::BindTables &tables,
                    std::unique_ptr<Program> &out, std::string *error) {
  const std::string &section = entry.section;
  const bundle::SectionInfo *s = b.find(section);
  auto p = std::make_unique<Program>();
  p->section = section;
  p->rows = entry.rows;
  p->independentRows = entry.independentRows;
  p->noLogits = entry.noLogits;
  const size_t wordCount = bundle::Bundle::wordCount(*s);
  if (wordCount > UINT32_MAX) {
    return fail(error, path, section + ": more words than a program may hold");
  }
  for (size_t i = 0; i < wordCount; ++i) {
    uint64_t word = b.word(*s, i);
    isa::Instruction inst;
    std::string why;
    if (!isa::decode(word, inst, &why)) {
      return fail(error, path,
                  section + " word " + std::to_string(i) + ": " + why);
    }
    p->words.push_back(word);
  }
  p->weights.resize(p->words.size());
  for (const bundle::WeightUse &u : entry.weights) {
    WeightRef &ref = p->weights[size_t(u.index)];
    if (!u.cache.empty()) {
      // The manifest reader checked that the cache exists with a record
      // layout and the head or row is inside it.
      ref.kind = u.mask ? WeightRef::Kind::Mask : WeightRef::Kind::Cache;
      ref.cache = int32_t(tables.caches->at(u.cache));
      ref.part = int32_t(u.part);
      ref.row = int32_t(u.row);
    } else if (u.dynamic) {
      ref.kind = WeightRef::Kind::Dynamic;
    } else {
      ref.kind = WeightRef::Kind::Static;
      ref.offset = u.offset;
      ref.bytes = u.bytes;
    }
  }
  for (const bundle::SegmentEntry &seg : manifest.segments) {
    if (seg.program != section)
      continue;
    Segment sg;
    sg.name = seg.name;
    sg.begin = uint32_t(seg.begin);
    sg.end = uint32_t(seg.end);
    // Host ops (each after the sync scheduled right before it), then the
    // other syncs, which follow the host ops of their word.
    for (const bundle::HostOpEntry &op : seg.hostOps) {
      if (op.sync)
        sg.events.push_back({Event::Kind::Sync, uint32_t(op.at), 0});
      host::BoundCall call;
      std::string why;
      if (!host::bindCall(op.kernel, op.params, tables, &call, &why)) {
        return fail(error, path, section + " segment " + seg.name + ": " + why);
      }
      sg.events.push_back(
          {Event::Kind::Host, uint32_t(op.at), uint32_t(p->calls.size())});
      p->calls.push_back(std::move(call));
      p->callKernels.push_back(op.kernel);
    }
    for (uint64_t at : seg.syncs) {
      auto pos =
          std::upper_bound(sg.events.begin(), sg.events.end(), uint32_t(at),
                           [](uint32_t v, const Event &e) { return v < e.at; });
      sg.events.insert(pos, {Event::Kind::Sync, uint32_t(at), 0});
    }
    p->segments.push_back(std::move(sg));
  }
  for (const bundle::PatchPoint &pp : manifest.patchPoints) {
    if (pp.program != section)
      continue;
    PatchSite site;
    isa::Instruction inst;
    isa::Field field;
    std::string why;
    if (pp.index >= p->words.size() ||
        !isa::decode(p->words[size_t(pp.index)], inst, &why) ||
        !isa::lookupField(inst.format(), pp.field, field) ||
        !bundle::parsePatchSource(pp.value.c_str(), &site.source) ||
        pp.delta < 0 || pp.delta >= p->rows) {
      fail(error, path,
           section + ": patch point of word " + std::to_string(pp.index) +
               " is invalid");
      return false;
    }
    const isa::FieldInfo &f = isa::fieldInfo(field);
    site.word = uint32_t(pp.index);
    site.lo = f.lo;
    site.maxValue = f.maxValue();
    site.scale = pp.scale;
    site.offset = pp.offset;
    site.delta = pp.delta;
    site.window = pp.window;
    site.field = field;
    p->patches.push_back(site);
  }
  out = std::move(p);
  return true;
}

/// `object[key]` when it is an integer.
bool jsonInteger(const json &object, const char *key, int64_t *out) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer())
    return false;
  *out = it->get<int64_t>();
  return true;
}

/// Every KV cache must have the slots the manifest's max_seq_len implies
/// (docs/lowering.md, section 3): a global layer's cache holds every
/// position, a sliding layer's is a ring of the window plus the rows a
/// prefill step writes before its first row reads. Positions wrap around a
/// cache, so any other count would mix positions without an error.
bool checkCacheSlots(const bundle::ModelManifest &manifest, std::string *why) {
  const json *layerTypes = nullptr;
  if (auto it = manifest.config.find("layer_types");
      it != manifest.config.end() && it->is_array())
    layerTypes = &*it;
  for (const bundle::CacheEntry &c : manifest.caches) {
    // Caches are named kv.<layer>.<k|v> (one per layer that owns one).
    unsigned layer = 0;
    char kind = 0, end = 0;
    const bool sliding =
        layerTypes &&
        std::sscanf(c.name.c_str(), "kv.%u.%c%c", &layer, &kind, &end) == 2 &&
        layer < layerTypes->size() &&
        (*layerTypes)[layer] == "sliding_attention";
    int64_t expected = manifest.maxSeqLen;
    const std::string maxSeqLenKey =
        std::string("compile_options.") + compile_option_key::maxSeqLen;
    const std::string prefillRowsKey =
        std::string("compile_options.") + compile_option_key::prefillRows;
    std::string rule = maxSeqLenKey + " (" +
                       std::to_string(manifest.maxSeqLen) + ")";
    if (sliding) {
      int64_t window = 0;
      const int64_t rows = manifest.prefillRows;
      if (!jsonInteger(manifest.config, "sliding_window", &window) ||
          window < 1 || rows < 1) {
        *why = "KV cache '" + c.name + "' belongs to a sliding layer, but "
               "config.sliding_window or " + prefillRowsKey +
               " is missing or not a positive integer";
        return false;
      }
      // Compared only when both are below max_seq_len (at most 2^31, the
      // reader's bound): the sum cannot overflow.
      if (window < expected && rows < expected &&
          window + rows - 1 < expected) {
        expected = window + rows - 1;
        rule = "config.sliding_window + " + prefillRowsKey + " - 1 (" +
               std::to_string(expected) + "), less than " + rule;
      }
    }
    if (c.slots != expected) {
      *why = "KV cache '" + c.name + "' has " + std::to_string(c.slots) +
             " slots, but " + rule + " gives " + std::to_string(expected);
      return false;
    }
  }
  return true;
}

} // namespace

uint64_t Model::defaultHostMemoryLimit() {
  const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  uint64_t physical = 0;
  if (pages <= 0 || pageSize <= 0 ||
      !checkedMul(uint64_t(pages), uint64_t(pageSize), &physical))
    return kMaxSessionBytes;
  return std::min(kMaxSessionBytes, physical);
}

std::unique_ptr<Model> Model::load(const std::string &path, std::string *error,
                                   uint64_t hostMemoryLimit) {
  std::unique_ptr<Model> m(new Model());
  m->bundle_ = bundle::Bundle::open(path, error);
  if (!m->bundle_)
    return nullptr;
  const bundle::Bundle &b = *m->bundle_;
  bundle::ModelManifest manifest;
  if (!bundle::readModelManifest(b, &manifest, error))
    return nullptr;
  m->config_ = manifest.config;
  m->vocab_ = manifest.vocabSize;
  m->maxSeqLen_ = manifest.maxSeqLen;

  // Sections the tables point into (readModelManifest checked every range).
  auto sectionData = [&](const char *name) -> const uint8_t * {
    const bundle::SectionInfo *s = b.find(name);
    return s ? b.data(*s) : nullptr;
  };
  const uint8_t *hostData = sectionData("host_tensors");
  const uint8_t *gatherData = sectionData("gather");

  m->target_ = manifest.target;
  for (const bundle::CacheEntry &c : manifest.caches) {
    CacheSpec spec;
    spec.name = c.name;
    spec.slots = c.slots;
    spec.width = c.width;
    KvDtype dtype = KvDtype::F32;
    parseChoice(c.dtype, &dtype);
    spec.dtype = host::hostStorage(dtype);
    if (!c.layout.empty()) {
      spec.dtype = c.layout == "keys" ? host::KvStorage::KeyRecords
                                      : host::KvStorage::ValueRecords;
      spec.heads = c.heads;
      spec.window = c.window;
    }
    m->cacheIndex_[c.name] = int(m->caches_.size());
    m->caches_.push_back(spec);
  }
  for (const bundle::HostTensorEntry &t : manifest.hostTensors)
    m->tensors_[t.name] = {
        t.rows, t.cols, reinterpret_cast<const float *>(hostData + t.offset)};
  for (const bundle::GatherEntry &e : manifest.gathers) {
    host::GatherTable g;
    g.rows = e.rows;
    g.cols = e.cols;
    g.quantized = hw::parseFormatName(e.format, &g.format);
    g.group = e.group;
    if (g.quantized) {
      g.codes = gatherData + e.offset;
      g.scales = reinterpret_cast<const float *>(gatherData + e.scalesOffset);
    } else {
      g.values = reinterpret_cast<const float *>(gatherData + e.offset);
    }
    m->gathers_[e.name] = g;
  }
  const host::BindTables tables{&m->tensors_, &m->gathers_, &m->cacheIndex_};

  // Memory a session allocates for this model: every cache as f32 (the
  // widest a session may choose, and the exact shadow reference numerics
  // keep of a record cache), the records and masks of record caches (host
  // memory on the simulator) and one step's logits. A manifest that asks
  // for more than the limit is refused here, before anything is allocated.
  const uint64_t limit =
      hostMemoryLimit ? hostMemoryLimit : defaultHostMemoryLimit();
  uint64_t maxRows = 1;
  for (const bundle::ProgramEntry &entry : manifest.programs)
    maxRows = std::max(maxRows, uint64_t(entry.rows));
  uint64_t sessionBytes = 0;
  for (const CacheSpec &c : m->caches_) {
    uint64_t bytes = 0;
    if (!checkedMulAdd(uint64_t(c.slots) * 4, uint64_t(c.width) + 1,
                       sessionBytes, &bytes) ||
        bytes > limit) {
      fail(error, path,
           "KV cache '" + c.name + "' (" + std::to_string(c.slots) + " x " +
               std::to_string(c.width) +
               ") does not fit in the host memory a session may use (" +
               std::to_string(limit) + " bytes)");
      return nullptr;
    }
    // slots * width is now bounded by the limit, so no record size wraps.
    if (c.records())
      bytes += uint64_t(c.heads) *
               uint64_t(hw::cacheRecordBytes(
                   c.dtype == host::KvStorage::KeyRecords, c.slots,
                   c.width / c.heads));
    if (c.dtype == host::KvStorage::KeyRecords &&
        !checkedMulAdd(maxRows, uint64_t(hw::maskRecordBytes(c.slots)), bytes,
                       &bytes))
      bytes = UINT64_MAX;
    sessionBytes = bytes;
  }
  // A mask record per row is shared; the rest is per sequence.
  m->sequenceBytes_ = sessionBytes;
  for (const CacheSpec &c : m->caches_)
    if (c.dtype == host::KvStorage::KeyRecords && sessionBytes != UINT64_MAX)
      m->sequenceBytes_ -= maxRows * uint64_t(hw::maskRecordBytes(c.slots));
  uint64_t logitBytes = 0;
  if (!checkedMul(maxRows * 4, uint64_t(m->vocab_), &logitBytes) ||
      !checkedAdd(sessionBytes, logitBytes, &sessionBytes))
    sessionBytes = UINT64_MAX;
  if (sessionBytes > limit) {
    fail(error, path,
         "the KV caches and logits need " +
             (sessionBytes == UINT64_MAX ? std::string("more than 2^64")
                                         : std::to_string(sessionBytes)) +
             " bytes of host memory, more than a session may use (" +
             std::to_string(limit) + " bytes)");
    return nullptr;
  }
  m->sessionBytes_ = sessionBytes;
  {
    std::string why;
    if (!checkCacheSlots(manifest, &why)) {
      fail(error, path, why);
      return nullptr;
    }
  }

  for (const bundle::ProgramEntry &entry : manifest.programs) {
    std::unique_ptr<Program> p;
    if (!prepareProgram(b, path, manifest, entry, tables, p, error))
      return nullptr;
    const std::string &section = entry.section;
    // Only the prefill steps that the caller does not read logits of may
    // run a program without them; anywhere else its rows would be zeros.
    if (entry.noLogits && section != "program.prefill_no_head") {
      fail(error, path,
           section + " is marked no_logits; only program.prefill_no_head "
                     "may leave out the logits");
      return nullptr;
    }
    if (section == "program.prefill_no_head") {
      if (entry.noLogits)
        m->prefillNoLogits_ = std::move(p);
    } else if (p->rows == 1 && section == "program.decode")
      m->decode_ = std::move(p);
    else if (section == "program.prefill")
      m->prefill_ = std::move(p);
    else if (section.rfind("program.decode_batch_", 0) == 0 &&
             entry.independentRows)
      m->batches_.push_back(std::move(p));
  }
  std::sort(m->batches_.begin(), m->batches_.end(),
            [](const auto &a, const auto &b) { return a->rows < b->rows; });
  m->prefillRows_ = manifest.prefillRows > 0
                       ? manifest.prefillRows
                       : (m->prefill_ ? m->prefill_->rows : 1);
  if (!m->decode_) {
    fail(error, path, "the bundle has no decode program");
    return nullptr;
  }
  if (m->prefillNoLogits_ &&
      (!m->prefill_ || m->prefillNoLogits_->rows != m->prefill_->rows)) {
    fail(error, path,
         "program.prefill_no_head has " +
             std::to_string(m->prefillNoLogits_->rows) +
             " rows; it must have the prefill program's " +
             (m->prefill_ ? std::to_string(m->prefill_->rows)
                          : std::string("(there is none)")));
    return nullptr;
  }
  return m;
}

std::vector<int32_t> Model::eosTokens() const {
  std::vector<int32_t> out;
  auto it = config_.find("eos_token_id");
  if (it == config_.end())
    return out;
  if (it->is_number_integer())
    out.push_back(it->get<int32_t>());
  else if (it->is_array())
    for (const json &v : *it)
      if (v.is_number_integer())
        out.push_back(v.get<int32_t>());
  return out;
}

int32_t Model::bosToken() const {
  auto it = config_.find("bos_token_id");
  return it != config_.end() && it->is_number_integer() ? it->get<int32_t>()
                                                        : -1;
}

const uint8_t *Model::weightsSection(size_t *bytes) const {
  const bundle::SectionInfo *s = bundle_->find("weights");
  *bytes = s ? size_t(s->size) : 0;
  return s ? bundle_->data(*s) : nullptr;
}

const uint8_t *Model::tokenizer(size_t *bytes) const {
  const bundle::SectionInfo *s = bundle_->find("tokenizer");
  if (!s) {
    *bytes = 0;
    return nullptr;
  }
  *bytes = size_t(s->size);
  return bundle_->data(*s);
}

} // namespace pccx::exec
