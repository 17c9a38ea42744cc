//===- Model.cpp - a loaded bundle, ready to run --------------------------===//

#include "runtime/exec/Model.h"

#include "hw/isa/Isa.h"

#include <algorithm>

using nlohmann::json;

namespace pccx::exec {

namespace {

bool fail(std::string *error, const std::string &path,
          const std::string &message) {
  *error = path + ": " + message;
  return false;
}

bool integer(const json &j, const char *key, int64_t *out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer())
    return false;
  *out = it->get<int64_t>();
  return true;
}

} // namespace

std::unique_ptr<Model> Model::load(const std::string &path,
                                   std::string *error) {
  std::unique_ptr<Model> m(new Model());
  m->bundle_ = bundle::Bundle::open(path, error);
  if (!m->bundle_)
    return nullptr;
  const bundle::Bundle &b = *m->bundle_;
  const json &manifest = b.manifest();
  auto need = [&](const char *key, json::value_t type) -> const json * {
    auto it = manifest.find(key);
    if (it == manifest.end() || it->type() != type) {
      fail(error, path, std::string("manifest has no valid '") + key +
                            "' (is this a model bundle from pccx-compile?)");
      return nullptr;
    }
    return &*it;
  };
  const json *config = need("config", json::value_t::object);
  const json *programs = need("programs", json::value_t::object);
  const json *caches = need("caches", json::value_t::object);
  const json *tensors = need("host_tensors", json::value_t::object);
  const json *gathers = need("gather_tables", json::value_t::object);
  const json *segments = need("segments", json::value_t::array);
  if (!config || !programs || !caches || !tensors || !gathers || !segments)
    return nullptr;
  m->config_ = *config;
  if (!integer(*config, "vocab_size", &m->vocab_) || m->vocab_ <= 0) {
    fail(error, path, "manifest config has no vocab_size");
    return nullptr;
  }
  int64_t maxSeq = 0;
  auto options = manifest.find("compile_options");
  if (options == manifest.end() ||
      !integer(*options, "max_seq_len", &maxSeq) || maxSeq <= 0) {
    fail(error, path, "manifest compile_options has no max_seq_len");
    return nullptr;
  }
  m->maxPositions_ = maxSeq;

  // Sections the tables point into.
  auto sectionBytes = [&](const char *name, uint64_t *size) -> const uint8_t * {
    const bundle::SectionInfo *s = b.find(name);
    if (!s) {
      *size = 0;
      return nullptr;
    }
    *size = s->size;
    return b.data(*s);
  };
  uint64_t weightsSize, hostSize, gatherSize;
  const uint8_t *weights = sectionBytes("weights", &weightsSize);
  const uint8_t *hostData = sectionBytes("host_tensors", &hostSize);
  const uint8_t *gatherData = sectionBytes("gather", &gatherSize);

  for (auto &[name, spec] : caches->items()) {
    CacheSpec c;
    c.name = name;
    if (!integer(spec, "slots", &c.slots) || !integer(spec, "width", &c.width) ||
        c.slots <= 0 || c.width <= 0) {
      fail(error, path, "cache '" + name + "' has no valid slots and width");
      return nullptr;
    }
    auto dtype = spec.find("dtype");
    if (dtype != spec.end() &&
        (!dtype->is_string() ||
         !host::parseKvDtype(dtype->get<std::string>(), &c.dtype))) {
      fail(error, path, "cache '" + name + "' has dtype " + dtype->dump() +
                            " (expected \"f32\", \"f16\" or \"int8\")");
      return nullptr;
    }
    m->cacheIndex_[name] = int(m->caches_.size());
    m->caches_.push_back(c);
  }
  for (auto &[name, spec] : tensors->items()) {
    int64_t offset, rows, cols;
    if (!integer(spec, "offset", &offset) || !integer(spec, "rows", &rows) ||
        !integer(spec, "cols", &cols) || offset < 0 || rows <= 0 ||
        cols <= 0 || offset % 4 ||
        uint64_t(offset) + uint64_t(rows * cols) * 4 > hostSize) {
      fail(error, path, "host tensor '" + name +
                            "' lies outside the host_tensors section");
      return nullptr;
    }
    host::HostTensor t;
    t.rows = rows;
    t.cols = cols;
    t.data = reinterpret_cast<const float *>(hostData + offset);
    m->tensors_[name] = t;
  }
  for (auto &[name, spec] : gathers->items()) {
    int64_t offset, rows, cols;
    host::GatherTable g;
    auto format = spec.find("format");
    if (!integer(spec, "offset", &offset) || !integer(spec, "rows", &rows) ||
        !integer(spec, "cols", &cols) || offset < 0 || rows <= 0 ||
        cols <= 0 || format == spec.end() || !format->is_string()) {
      fail(error, path, "gather table '" + name + "' is malformed");
      return nullptr;
    }
    g.rows = rows;
    g.cols = cols;
    const std::string formatText = format->get<std::string>();
    g.quantized = hw::parseFormatName(formatText, &g.format);
    if (!g.quantized && formatText != "f32") {
      fail(error, path, "gather table '" + name + "' has format '" +
                            formatText + "' (expected int4, int8 or f32)");
      return nullptr;
    }
    if (g.quantized) {
      int64_t scales;
      const uint64_t rowBytes = hw::packedRowBytes(g.format, size_t(cols));
      if (!integer(spec, "scales_offset", &scales) || scales % 4 ||
          uint64_t(offset) + uint64_t(rows) * rowBytes > gatherSize ||
          uint64_t(scales) + uint64_t(rows) * 4 > gatherSize) {
        fail(error, path, "gather table '" + name +
                              "' lies outside the gather section");
        return nullptr;
      }
      g.codes = gatherData + offset;
      g.scales = reinterpret_cast<const float *>(gatherData + scales);
    } else {
      if (offset % 4 ||
          uint64_t(offset) + uint64_t(rows * cols) * 4 > gatherSize) {
        fail(error, path, "gather table '" + name +
                              "' lies outside the gather section");
        return nullptr;
      }
      g.values = reinterpret_cast<const float *>(gatherData + offset);
    }
    m->gathers_[name] = g;
  }

  std::vector<bundle::PatchPoint> allPatches;
  if (!bundle::parsePatchPoints(manifest, allPatches, error) ||
      !bundle::checkPatchPoints(b, error))
    return nullptr;
  const host::BindTables tables{&m->tensors_, &m->gathers_, &m->cacheIndex_};

  for (auto &[section, info] : programs->items()) {
    const bundle::SectionInfo *s = b.find(section);
    if (!s || s->kind != bundle::SectionKind::Program) {
      fail(error, path, "manifest names program '" + section +
                            "', which has no program section");
      return nullptr;
    }
    auto p = std::make_unique<Program>();
    p->section = section;
    if (!integer(info, "rows", &p->rows) || p->rows <= 0) {
      fail(error, path, section + ": no valid 'rows'");
      return nullptr;
    }
    const size_t wordCount = bundle::Bundle::wordCount(*s);
    if (wordCount > UINT32_MAX) {
      fail(error, path, section + ": more words than a program may hold");
      return nullptr;
    }
    for (size_t i = 0; i < wordCount; ++i) {
      uint64_t word = b.word(*s, i);
      isa::Instruction inst;
      std::string why;
      if (!isa::decode(word, inst, &why)) {
        fail(error, path, section + " word " + std::to_string(i) + ": " + why);
        return nullptr;
      }
      p->words.push_back(word);
    }
    p->weights.resize(p->words.size());
    auto plan = info.find("weight_records");
    if (plan == info.end() || !plan->is_array()) {
      fail(error, path, section + ": no weight plan");
      return nullptr;
    }
    for (const json &r : *plan) {
      int64_t index;
      if (!integer(r, "index", &index) || index < 0 ||
          uint64_t(index) >= p->words.size()) {
        fail(error, path, section + ": weight record for a word that does "
                                    "not exist");
        return nullptr;
      }
      WeightRef &ref = p->weights[size_t(index)];
      if (r.contains("dynamic")) {
        ref.kind = WeightRef::Kind::Dynamic;
      } else {
        int64_t offset, bytes;
        if (!integer(r, "offset", &offset) || !integer(r, "bytes", &bytes) ||
            offset < 0 || bytes <= 0 || uint64_t(offset) > weightsSize ||
            uint64_t(bytes) > weightsSize - uint64_t(offset)) {
          fail(error, path, section + ": weight record of word " +
                                std::to_string(index) +
                                " lies outside the weights section");
          return nullptr;
        }
        ref.kind = WeightRef::Kind::Static;
        ref.data = weights + offset;
        ref.bytes = uint64_t(bytes);
      }
    }
    for (const json &seg : *segments) {
      if (seg.value("program", "") != section)
        continue;
      Segment sg;
      int64_t begin, end;
      if (!integer(seg, "begin", &begin) || !integer(seg, "end", &end) ||
          begin < 0 || end < begin || uint64_t(end) > p->words.size()) {
        fail(error, path, section + ": a segment's word range is invalid");
        return nullptr;
      }
      sg.name = seg.value("name", "");
      sg.begin = uint32_t(begin);
      sg.end = uint32_t(end);
      auto where = [&](const std::string &what) {
        return section + " segment " + sg.name + ": " + what;
      };
      // Host ops (each after the sync scheduled right before it) and the
      // other syncs, which follow the host ops of their word.
      std::vector<std::pair<int64_t, Event>> events;
      auto ops = seg.find("host_ops");
      if (ops != seg.end() && !ops->is_array()) {
        fail(error, path, where("'host_ops' is not a list"));
        return nullptr;
      }
      if (ops != seg.end())
        for (const json &op : *ops) {
          int64_t at;
          if (!integer(op, "at", &at) || at < begin || at > end ||
              !op.contains("kernel") || !op["kernel"].is_string()) {
            fail(error, path, where("a host op is malformed"));
            return nullptr;
          }
          if (!events.empty() && at < events.back().first) {
            fail(error, path, where("host ops are not in word order"));
            return nullptr;
          }
          auto sync = op.find("sync");
          if (sync != op.end() && !sync->is_boolean()) {
            fail(error, path, where("a host op's 'sync' is not a boolean"));
            return nullptr;
          }
          if (sync != op.end() && sync->get<bool>())
            events.push_back({at, {Event::Kind::Sync, uint32_t(at), 0}});
          host::BoundCall call;
          std::string why;
          const std::string kernel = op["kernel"].get<std::string>();
          if (!host::bindCall(kernel, op.value("params", json::object()),
                              tables, &call, &why)) {
            fail(error, path, where(why));
            return nullptr;
          }
          events.push_back({at,
                            {Event::Kind::Host, uint32_t(at),
                             uint32_t(p->calls.size())}});
          p->calls.push_back(std::move(call));
          p->callKernels.push_back(kernel);
        }
      auto syncs = seg.find("syncs");
      if (syncs != seg.end() && !syncs->is_array()) {
        fail(error, path, where("'syncs' is not a list"));
        return nullptr;
      }
      if (syncs != seg.end())
        for (const json &at : *syncs) {
          if (!at.is_number_integer() || at.get<int64_t>() < begin ||
              at.get<int64_t>() > end) {
            fail(error, path, where("a sync lies outside the segment"));
            return nullptr;
          }
          const int64_t a = at.get<int64_t>();
          // After the host ops of its word: stable insertion after every
          // event at or before `a`.
          auto pos = std::upper_bound(
              events.begin(), events.end(), a,
              [](int64_t v, const std::pair<int64_t, Event> &e) {
                return v < e.first;
              });
          events.insert(pos, {a, {Event::Kind::Sync, uint32_t(a), 0}});
        }
      for (auto &e : events)
        sg.events.push_back(e.second);
      p->segments.push_back(std::move(sg));
    }
    for (const bundle::PatchPoint &pp : allPatches) {
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
        fail(error, path, section + ": patch point of word " +
                              std::to_string(pp.index) + " is invalid");
        return nullptr;
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
    if (p->rows == 1 && section == "program.decode")
      m->decode_ = std::move(p);
    else if (section == "program.prefill")
      m->prefill_ = std::move(p);
  }
  if (!m->decode_) {
    fail(error, path, "the bundle has no decode program");
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
