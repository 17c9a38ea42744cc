//===- ModelManifest.cpp - the typed manifest of a model bundle ----------===//

#include "runtime/bundle/ModelManifest.h"

#include "hw/abi/CompileOptions.h"

#include "hw/numerics/Quantize.h"
#include "hw/support/CheckedMath.h"
#include "hw/support/InputFile.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/ChatTemplate.h"

#include <cmath>
#include <limits>

namespace pccx::bundle {

using nlohmann::json;

namespace {

/// Largest count or size any table may state: far beyond a real model, and
/// small enough that sums and products of two such values fit in 64 bits.
constexpr int64_t kMaxCount = int64_t(1) << 40;

json recipeJson(const WeightRecipe &r) { return r.json; }

/// Accessors that record the first error with the path of the entry.
class Reader {
public:
  Reader(const std::string &file, std::string *error)
      : file_(file), error_(error) {}

  bool fail(const std::string &where, const std::string &what) {
    *error_ = file_ + ": manifest " + where + ": " + what;
    return false;
  }

  const json *member(const json &j, const char *key) {
    if (!j.is_object())
      return nullptr;
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
  }

  /// An integer in [lo, hi].
  bool integer(const json &j, const char *key, const std::string &where,
               int64_t *out, int64_t lo = 0, int64_t hi = kMaxCount) {
    const json *v = member(j, key);
    if (!v || !v->is_number_integer())
      return fail(where, std::string("'") + key + "' must be an integer");
    // Unsigned values above INT64_MAX read as negative and are refused.
    int64_t x =
        v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)
            ? -1
            : v->get<int64_t>();
    if (x < lo || x > hi)
      return fail(where, std::string("'") + key + "' is " + v->dump() +
                             ", outside [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
    *out = x;
    return true;
  }

  bool optionalInteger(const json &j, const char *key, const std::string &where,
                       int64_t *out, int64_t dflt) {
    if (!member(j, key)) {
      *out = dflt;
      return true;
    }
    return integer(j, key, where, out);
  }

  bool string(const json &j, const char *key, const std::string &where,
              std::string *out) {
    const json *v = member(j, key);
    if (!v || !v->is_string())
      return fail(where, std::string("'") + key + "' must be a string");
    *out = v->get<std::string>();
    return true;
  }

  bool boolean(const json &j, const char *key, const std::string &where,
               bool *out) {
    const json *v = member(j, key);
    if (!v) {
      *out = false;
      return true;
    }
    if (!v->is_boolean())
      return fail(where, std::string("'") + key + "' must be true or false");
    *out = v->get<bool>();
    return true;
  }

  bool recipe(const json &j, const std::string &where, WeightRecipe *out) {
    const json *v = member(j, "recipe");
    if (!v || !parseWeightRecipe(*v, out))
      return fail(where, "'recipe' is not a weight recipe");
    return true;
  }

  /// [offset, offset + bytes) inside a section of `size` bytes.
  bool inside(uint64_t offset, uint64_t bytes, uint64_t size,
              const std::string &where, const std::string &section) {
    if (!rangeInside(offset, bytes, size))
      return fail(where, "bytes [" + std::to_string(offset) + ", +" +
                             std::to_string(bytes) + ") lie outside the " +
                             section + " section of " + std::to_string(size) +
                             " bytes");
    return true;
  }

  /// `count` elements of `elementBytes` from `offset` inside the section;
  /// a product that does not fit 64 bits is refused, not wrapped.
  bool insideArray(uint64_t offset, uint64_t count, uint64_t elementBytes,
                   uint64_t size, const std::string &where,
                   const std::string &section) {
    uint64_t bytes;
    if (!checkedMul(count, elementBytes, &bytes))
      return fail(where, std::to_string(count) + " x " +
                             std::to_string(elementBytes) +
                             " bytes do not fit the " + section + " section");
    return inside(offset, bytes, size, where, section);
  }

private:
  std::string file_;
  std::string *error_;
};

uint64_t sectionSize(const Bundle &b, const char *name) {
  const SectionInfo *s = b.find(name);
  return s ? s->size : 0;
}

} // namespace

bool parseWeightRecipe(const json &j, WeightRecipe *out) {
  WeightRecipe r;
  r.json = j;
  if (!j.is_object())
    return false;
  const json *body = &j;
  auto q = j.find("quantize");
  if (q != j.end()) {
    auto scheme = j.find("scheme");
    if (!q->is_object() || scheme == j.end() || !scheme->is_string())
      return false;
    r.scheme = scheme->get<std::string>();
    body = &*q;
  }
  auto leaf = [](const json &t, std::string *name) {
    auto it = t.find("tensor");
    if (!t.is_object() || it == t.end() || !it->is_string())
      return false;
    *name = it->get<std::string>();
    return true;
  };
  if (body->contains("tensor")) {
    if (!leaf(*body, &r.tensor))
      return false;
  } else {
    auto s = body->find("scale");
    if (s == body->end() || !leaf(*s, &r.tensor))
      return false;
    r.scaled = true;
    auto by = body->find("by");
    if (by != body->end() && !leaf(*by, &r.scaledBy))
      return false;
    auto f = body->find("factor");
    if (f != body->end()) {
      // A factor float cannot hold (or NaN) would be undefined to convert.
      if (!f->is_number() || !std::isfinite(f->get<double>()) ||
          std::fabs(f->get<double>()) > std::numeric_limits<float>::max())
        return false;
      r.factor = float(f->get<double>());
    }
  }
  *out = std::move(r);
  return true;
}

const ProgramEntry *ModelManifest::program(const std::string &section) const {
  for (const ProgramEntry &p : programs)
    if (p.section == section)
      return &p;
  return nullptr;
}

json toJson(const ModelManifest &m) {
  json out = json::object();
  out[manifest_keys::kProducer] = m.producer;
  out[manifest_keys::kTarget] = machine::targetProfile(m.target).name;
  out["config"] = m.config;
  out["compile_options"] = m.compileOptions;
  json programs = json::object();
  for (const ProgramEntry &p : m.programs) {
    json uses = json::array();
    for (const WeightUse &u : p.weights) {
      uses.push_back(
          !u.cache.empty()
              ? (u.mask ? json{{"index", u.index},
                               {"mask", u.cache},
                               {"row", u.part}}
                        : json{{"index", u.index},
                               {"cache", u.cache},
                               {"head", u.part}})
          : u.dynamic ? json{{"index", u.index}, {"dynamic", true}}
                      : json{{"index", u.index},
                             {"offset", u.offset},
                             {"bytes", u.bytes}});
      if (!u.cache.empty() && !u.mask && u.row >= 0)
        uses.back()["row"] = u.row;
    }
    json info = {{"rows", p.rows}, {"weight_records", uses}};
    if (p.windowWords)
      info["window_words"] = p.windowWords;
    if (p.independentRows)
      info["independent_rows"] = true;
    if (p.noLogits)
      info["no_logits"] = true;
    programs[p.section] = info;
  }
  out["programs"] = programs;
  json segments = json::array();
  for (const SegmentEntry &s : m.segments) {
    json ops = json::array();
    for (const HostOpEntry &h : s.hostOps) {
      json op = {{"at", h.at}, {"kernel", h.kernel}, {"params", h.params}};
      if (h.sync)
        op["sync"] = true;
      ops.push_back(std::move(op));
    }
    segments.push_back({{"name", s.name},
                        {"program", s.program},
                        {"begin", s.begin},
                        {"end", s.end},
                        {"host_ops", ops},
                        {"syncs", s.syncs}});
  }
  out[manifest_keys::kSegments] = segments;
  json patches = json::array();
  for (const PatchPoint &p : m.patchPoints)
    patches.push_back(toJson(p));
  out[manifest_keys::kPatchPoints] = patches;
  json map = json::array();
  for (const MemoryRegion &r : m.memoryMap)
    map.push_back({{"name", r.name},
                   {"space", r.space},
                   {"program", r.program},
                   {"offset", r.offset},
                   {"size", r.size}});
  out[manifest_keys::kMemoryMap] = map;
  if (!m.annotations.empty())
    out[manifest_keys::kAnnotations] = m.annotations;
  json caches = json::object();
  for (const CacheEntry &c : m.caches)
  {
    json entry = {{"slots", c.slots}, {"width", c.width}, {"dtype", c.dtype}};
    if (!c.layout.empty()) {
      entry["layout"] = c.layout;
      entry["heads"] = c.heads;
      entry["window"] = c.window;
    }
    caches[c.name] = entry;
  }
  out["caches"] = caches;
  json tensors = json::object();
  for (const HostTensorEntry &t : m.hostTensors)
    tensors[t.name] = {{"offset", t.offset},
                       {"rows", t.rows},
                       {"cols", t.cols},
                       {"recipe", recipeJson(t.recipe)}};
  out["host_tensors"] = tensors;
  json gathers = json::object();
  for (const GatherEntry &g : m.gathers) {
    json info = {{"rows", g.rows},
                 {"cols", g.cols},
                 {"format", g.format},
                 {"offset", g.offset},
                 {"recipe", recipeJson(g.recipe)}};
    if (g.format != "f32")
      info["scales_offset"] = g.scalesOffset;
    gathers[g.name] = info;
  }
  out["gather_tables"] = gathers;
  out["weights_bytes"] = m.weightsBytes;
  json table = json::array();
  for (const WeightRecordEntry &r : m.weightTable) {
    table.push_back({{"offset", r.offset},
                     {"bytes", r.bytes},
                     {"first_row", r.firstRow},
                     {"rows", r.rows},
                     {"cols", r.cols},
                     {"recipe", recipeJson(r.recipe)}});
    if (r.firstCol)
      table.back()["first_col"] = r.firstCol;
  }
  out["weight_table"] = table;
  if (m.tokenizer)
    out["tokenizer"] = {{"section", "tokenizer"}, {"format", "sentencepiece"}};
  if (!m.chatTemplate.empty())
    out[kChatTemplateKey] = m.chatTemplate;
  return out;
}

/// Section sizes the tables must fit.
namespace {
struct Sizes {
  uint64_t weights = 0, host = 0, gather = 0;
};
} // namespace

static bool readCaches(Reader &rd, const json &j, ModelManifest &m) {
  for (auto &[name, spec] : j["caches"].items()) {
    CacheEntry c;
    c.name = name;
    const std::string where = "cache '" + name + "'";
    if (!rd.integer(spec, "slots", where, &c.slots, 1, int64_t(1) << 24) ||
        !rd.integer(spec, "width", where, &c.width, 1, int64_t(1) << 20))
      return false;
    if (rd.member(spec, "dtype") && !rd.string(spec, "dtype", where, &c.dtype))
      return false;
    KvDtype dtype;
    if (!parseChoice(c.dtype, &dtype))
      return rd.fail(where, "dtype '" + c.dtype + "' is not " +
                                choiceList(KvDtype()));
    if (rd.member(spec, "layout")) {
      if (!rd.string(spec, "layout", where, &c.layout))
        return false;
      if (c.layout != "keys" && c.layout != "values")
        return rd.fail(where, "layout '" + c.layout +
                                  "' is not one of keys, values");
      // The records' shapes go into 16-bit instruction fields.
      if (!rd.integer(spec, "heads", where, &c.heads, 1, 4096) ||
          !rd.integer(spec, "window", where, &c.window, 0, c.slots) ||
          !rd.integer(spec, "slots", where, &c.slots, 1, 65535))
        return false;
      if (c.width % c.heads || c.headDim() > 65535)
        return rd.fail(where, "width " + std::to_string(c.width) +
                                  " is not a whole number of heads of at "
                                  "most 65535 values");
      if (c.dtype != "int8")
        return rd.fail(where, "a record layout stores int8, not " + c.dtype);
    }
    m.caches.push_back(c);
  }
  return true;
}

static bool readHostTensors(Reader &rd, const json &j, const Sizes &size,
                            ModelManifest &m) {
  for (auto &[name, spec] : j["host_tensors"].items()) {
    HostTensorEntry t;
    t.name = name;
    const std::string where = "host tensor '" + name + "'";
    int64_t offset;
    if (!rd.integer(spec, "offset", where, &offset) ||
        !rd.integer(spec, "rows", where, &t.rows, 1) ||
        !rd.integer(spec, "cols", where, &t.cols, 1) ||
        !rd.recipe(spec, where, &t.recipe))
      return false;
    t.offset = uint64_t(offset);
    if (t.offset % 4)
      return rd.fail(where, "offset is not a multiple of 4");
    if (t.rows > kMaxCount / t.cols ||
        !rd.insideArray(t.offset, uint64_t(t.rows * t.cols), 4, size.host,
                        where, "host_tensors"))
      return rd.fail(where, "does not fit in the host_tensors section");
    m.hostTensors.push_back(std::move(t));
  }
  return true;
}

static bool readGathers(Reader &rd, const json &j, const Sizes &size,
                        ModelManifest &m) {
  for (auto &[name, spec] : j["gather_tables"].items()) {
    GatherEntry g;
    g.name = name;
    const std::string where = "gather table '" + name + "'";
    int64_t offset;
    if (!rd.integer(spec, "offset", where, &offset) ||
        !rd.integer(spec, "rows", where, &g.rows, 1) ||
        !rd.integer(spec, "cols", where, &g.cols, 1) ||
        !rd.string(spec, "format", where, &g.format) ||
        !rd.recipe(spec, where, &g.recipe))
      return false;
    g.offset = uint64_t(offset);
    hw::WeightFormat format;
    if (hw::parseFormatName(g.format, &format)) {
      int64_t scales;
      if (!rd.integer(spec, "scales_offset", where, &scales))
        return false;
      g.scalesOffset = uint64_t(scales);
      const uint64_t rowBytes = hw::packedRowBytes(format, size_t(g.cols));
      if (g.scalesOffset % 4)
        return rd.fail(where, "scales_offset is not a multiple of 4");
      // The recipe's scheme says how many scales each row has.
      hw::QuantScheme scheme;
      if (!g.recipe.scheme.empty() && hw::parseScheme(g.recipe.scheme, &scheme)) {
        if (scheme.format != format)
          return rd.fail(where, "format '" + g.format +
                                    "' is not the format of its recipe's "
                                    "scheme '" + g.recipe.scheme + "'");
        g.group = scheme.group;
      }
      const uint64_t scalesPerRow =
          uint64_t(hw::groupCount(scheme, g.cols));
      if (!rd.insideArray(g.offset, uint64_t(g.rows), rowBytes, size.gather,
                          where, "gather") ||
          uint64_t(g.rows) > uint64_t(kMaxCount) / scalesPerRow ||
          !rd.insideArray(g.scalesOffset, uint64_t(g.rows) * scalesPerRow, 4,
                          size.gather, where, "gather"))
        return false;
    } else if (g.format == "f32") {
      if (g.offset % 4)
        return rd.fail(where, "offset is not a multiple of 4");
      if (g.rows > kMaxCount / g.cols)
        return rd.fail(where, "rows x cols is more than a table may hold");
      if (!rd.insideArray(g.offset, uint64_t(g.rows * g.cols), 4, size.gather,
                          where, "gather"))
        return false;
    } else {
      return rd.fail(where,
                     "format '" + g.format + "' is not one of int4, int8, f32");
    }
    m.gathers.push_back(std::move(g));
  }
  return true;
}

static bool readWeightTable(Reader &rd, const json &j, const Sizes &size,
                            ModelManifest &m) {
  size_t index = 0;
  for (const json &r :
       j.contains("weight_table") ? j["weight_table"] : json::array()) {
    WeightRecordEntry e;
    const std::string where = "weight_table[" + std::to_string(index++) + "]";
    int64_t offset, bytes;
    if (!rd.integer(r, "offset", where, &offset) ||
        !rd.integer(r, "bytes", where, &bytes, 1) ||
        !rd.integer(r, "first_row", where, &e.firstRow) ||
        !rd.integer(r, "rows", where, &e.rows, 1, 65535) ||
        !rd.integer(r, "cols", where, &e.cols, 1, 65535) ||
        (r.contains("first_col") &&
         !rd.integer(r, "first_col", where, &e.firstCol, 0, 65535)) ||
        !rd.recipe(r, where, &e.recipe))
      return false;
    e.offset = uint64_t(offset);
    e.bytes = uint64_t(bytes);
    hw::WeightFormat format;
    if (!hw::parseScheme(e.recipe.scheme, &format))
      return rd.fail(where, "the recipe is not quantized with a known scheme");
    if (uint64_t(hw::recordBytes(format, e.rows, e.cols)) != e.bytes)
      return rd.fail(where, "'bytes' does not match rows and cols");
    if (!rd.inside(e.offset, e.bytes, size.weights, where, "weights"))
      return false;
    m.weightTable.push_back(std::move(e));
  }

  return true;
}

static bool readPrograms(Reader &rd, const json &j, const Bundle &bundle,
                         const Sizes &size, ModelManifest &m) {
  for (auto &[section, info] : j["programs"].items()) {
    ProgramEntry p;
    p.section = section;
    const std::string where = "program '" + section + "'";
    const SectionInfo *s = bundle.find(section);
    if (!s || s->kind != SectionKind::Program)
      return rd.fail(where, "has no program section");
    const uint64_t words = Bundle::wordCount(*s);
    if (!rd.integer(info, "rows", where, &p.rows, 1, 65535) ||
        !rd.optionalInteger(info, "window_words", where, &p.windowWords, 0) ||
        !rd.boolean(info, "independent_rows", where, &p.independentRows) ||
        !rd.boolean(info, "no_logits", where, &p.noLogits))
      return false;
    const json *uses = rd.member(info, "weight_records");
    if (!uses || !uses->is_array())
      return rd.fail(where, "'weight_records' must be a list");
    for (const json &u : *uses) {
      WeightUse w;
      int64_t at;
      if (!rd.integer(u, "index", where + " weight record", &at) ||
          uint64_t(at) >= words)
        return rd.fail(where, "a weight record names a word the program "
                              "does not have");
      w.index = uint64_t(at);
      const std::string rw =
          where + " weight record of word " + std::to_string(at);
      const bool cacheRecord = rd.member(u, "cache") != nullptr,
                 maskRecord = rd.member(u, "mask") != nullptr;
      if (cacheRecord || maskRecord) {
        // Records in device memory: the cache must exist with the layout
        // the record needs, the head or row inside it.
        const char *key = maskRecord ? "mask" : "cache";
        if (cacheRecord && maskRecord)
          return rd.fail(rw, "names both a cache and a mask");
        if (!rd.string(u, key, rw, &w.cache))
          return false;
        const CacheEntry *cache = nullptr;
        for (const CacheEntry &c : m.caches)
          if (c.name == w.cache)
            cache = &c;
        if (!cache || cache->layout.empty() ||
            (maskRecord && cache->layout != "keys"))
          return rd.fail(rw, std::string("names '") + w.cache +
                                 "', which is not a " +
                                 (maskRecord ? "key" : "key or value") +
                                 " record cache");
        w.mask = maskRecord;
        if (!rd.integer(u, maskRecord ? "row" : "head", rw, &w.part, 0,
                        (maskRecord ? p.rows : cache->heads) - 1))
          return false;
        // A row's own cache exists only where rows are sequences.
        if (!maskRecord && rd.member(u, "row")) {
          if (!p.independentRows)
            return rd.fail(rw, "names the cache of a row, but the program's "
                               "rows share their caches");
          if (!rd.integer(u, "row", rw, &w.row, 0, p.rows - 1))
            return false;
        }
        p.weights.push_back(w);
        continue;
      }
      if (!rd.boolean(u, "dynamic", where + " weight record", &w.dynamic))
        return false;
      if (!w.dynamic) {
        int64_t offset, bytes;
        if (!rd.integer(u, "offset", rw, &offset) ||
            !rd.integer(u, "bytes", rw, &bytes, 1) ||
            !rd.inside(uint64_t(offset), uint64_t(bytes), size.weights, rw,
                       "weights"))
          return false;
        w.offset = uint64_t(offset);
        w.bytes = uint64_t(bytes);
      }
      p.weights.push_back(w);
    }
    m.programs.push_back(std::move(p));
  }

  return true;
}

static bool readSegments(Reader &rd, const json &j, const Bundle &bundle,
                         ModelManifest &m) {
  size_t index = 0;
  for (const json &seg : j[manifest_keys::kSegments]) {
    SegmentEntry s;
    std::string where = "segments[" + std::to_string(index++) + "]";
    int64_t begin, end;
    if (!rd.string(seg, "program", where, &s.program) ||
        !rd.integer(seg, "begin", where, &begin) ||
        !rd.integer(seg, "end", where, &end))
      return false;
    if (rd.member(seg, "name") && !rd.string(seg, "name", where, &s.name))
      return false;
    where = "segment '" + s.name + "' of " + s.program;
    const SectionInfo *sec = bundle.find(s.program);
    if (!m.program(s.program) || !sec)
      return rd.fail(where, "names a program the manifest does not list");
    if (end < begin || uint64_t(end) > Bundle::wordCount(*sec))
      return rd.fail(where, "word range [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ") is invalid");
    s.begin = uint64_t(begin);
    s.end = uint64_t(end);
    if (const json *ops = rd.member(seg, "host_ops")) {
      if (!ops->is_array())
        return rd.fail(where, "'host_ops' must be a list");
      for (const json &op : *ops) {
        HostOpEntry h;
        int64_t at;
        if (!rd.integer(op, "at", where + " host op", &at, begin, end) ||
            !rd.string(op, "kernel", where + " host op", &h.kernel) ||
            !rd.boolean(op, "sync", where + " host op", &h.sync))
          return false;
        if (!s.hostOps.empty() && uint64_t(at) < s.hostOps.back().at)
          return rd.fail(where, "host ops are not in word order");
        h.at = uint64_t(at);
        const json *params = rd.member(op, "params");
        h.params = params ? *params : json::object();
        if (!h.params.is_object())
          return rd.fail(where, "host op '" + h.kernel +
                                    "' has parameters that are not an object");
        s.hostOps.push_back(std::move(h));
      }
    }
    if (const json *syncs = rd.member(seg, "syncs")) {
      if (!syncs->is_array())
        return rd.fail(where, "'syncs' must be a list");
      for (const json &at : *syncs) {
        if (!at.is_number_integer() || at.get<int64_t>() < begin ||
            at.get<int64_t>() > end)
          return rd.fail(where, "a sync lies outside the segment");
        s.syncs.push_back(at.get<uint64_t>());
      }
    }
    m.segments.push_back(std::move(s));
  }

  return true;
}

static bool readModelManifestUnguarded(const Bundle &bundle, ModelManifest *out,
                                       std::string *error);

bool readModelManifest(const Bundle &bundle, ModelManifest *out,
                       std::string *error) {
  // Every field is checked before use; this only keeps a JSON accessor
  // missed by those checks (or an allocation failure) from escaping.
  try {
    return readModelManifestUnguarded(bundle, out, error);
  } catch (const std::exception &e) {
    *error = bundle.path() + ": manifest: " + e.what();
    return false;
  }
}

static bool readModelManifestUnguarded(const Bundle &bundle, ModelManifest *out,
                                       std::string *error) {
  Reader rd(bundle.path(), error);
  const json &j = bundle.manifest();
  ModelManifest m;
  for (const char *key :
       {"config", "programs", "caches", "host_tensors", "gather_tables"})
    if (!rd.member(j, key) || !rd.member(j, key)->is_object())
      return rd.fail(std::string("'") + key + "'",
                     "missing or not an object (is this a model bundle from "
                     "pccx-compile?)");
  if (!rd.member(j, "segments") || !rd.member(j, "segments")->is_array())
    return rd.fail("'segments'", "missing or not a list (is this a model "
                                 "bundle from pccx-compile?)");
  // The weight table describes the records for tools that map them back to
  // checkpoint tensors; a hand-assembled bundle may have none.
  if (const json *t = rd.member(j, "weight_table"))
    if (!t->is_array())
      return rd.fail("'weight_table'", "is not a list");
  if (const json *p = rd.member(j, manifest_keys::kProducer))
    m.producer = p->is_string() ? p->get<std::string>() : "";
  {
    std::string why;
    if (!targetOf(j, m.target, &why))
      return rd.fail("'target'", why);
  }
  m.config = j["config"];
  if (!rd.integer(m.config, "vocab_size", "config", &m.vocabSize, 1,
                  int64_t(1) << 31))
    return false;
  const json *options = rd.member(j, "compile_options");
  if (!options || !options->is_object())
    return rd.fail("'compile_options'", "missing or not an object");
  m.compileOptions = *options;
  if (!rd.integer(*options, compile_option_key::maxSeqLen, "compile_options",
                  &m.maxSeqLen,
                  1, int64_t(1) << 31))
    return false;
  // Rows of one sequence a step may write (the sliding rings' spare slots);
  // the batch scheduler's prompt chunks are a multiple of it. The compiler's
  // range (--prefill-rows), which may exceed the context.
  if (rd.member(*options, compile_option_key::prefillRows) &&
      !rd.integer(*options, compile_option_key::prefillRows, "compile_options",
                  &m.prefillRows, 1, kMaxPrefillRows))
    return false;

  const Sizes size{sectionSize(bundle, "weights"),
                   sectionSize(bundle, "host_tensors"),
                   sectionSize(bundle, "gather")};
  if (!readCaches(rd, j, m) || !readHostTensors(rd, j, size, m) ||
      !readGathers(rd, j, size, m) || !readWeightTable(rd, j, size, m) ||
      !readPrograms(rd, j, bundle, size, m) || !readSegments(rd, j, bundle, m))
    return false;

  std::string why;
  if (!parsePatchPoints(j, m.patchPoints, &why) ||
      !checkPatchPoints(bundle, &why)) {
    *error = bundle.path() + ": " + why;
    return false;
  }
  if (const json *mm = rd.member(j, manifest_keys::kMemoryMap))
    if (mm->is_array())
      for (const json &r : *mm) {
        // Informational only (objdump prints it): a malformed region is
        // read as empty fields rather than refused.
        auto text = [&](const char *key) {
          const json *v = rd.member(r, key);
          return v && v->is_string() ? v->get<std::string>() : std::string();
        };
        auto number = [&](const char *key) {
          const json *v = rd.member(r, key);
          return v && v->is_number_integer() ? v->get<int64_t>() : 0;
        };
        MemoryRegion region;
        region.name = text("name");
        region.space = text("space");
        region.program = text("program");
        region.offset = number("offset");
        region.size = number("size");
        m.memoryMap.push_back(region);
      }
  if (const json *a = rd.member(j, manifest_keys::kAnnotations))
    if (a->is_object())
      for (auto &[program, list] : a->items())
        m.annotations[program] = annotationsOf(j, program);
  uint64_t wb = 0;
  if (const json *v = rd.member(j, "weights_bytes"))
    if (v->is_number_unsigned())
      wb = v->get<uint64_t>();
  m.weightsBytes = wb;
  m.tokenizer = rd.member(j, "tokenizer") && bundle.find("tokenizer");
  if (const json *chat = rd.member(j, kChatTemplateKey)) {
    if (!chat->is_string())
      return rd.fail("'chat_template'", "must be a string");
    // The compiler embeds at most what it reads from a checkpoint; a larger
    // one is a crafted bundle, refused rather than kept and scanned at
    // every open.
    if (chat->get_ref<const std::string &>().size() >
        support::kMaxTemplateFileBytes)
      return rd.fail("'chat_template'",
                     "is larger than " +
                         std::to_string(support::kMaxTemplateFileBytes) +
                         " bytes, the most pccx-compile embeds");
    m.chatTemplate = chat->get<std::string>();
  }
  *out = std::move(m);
  return true;
}

} // namespace pccx::bundle
