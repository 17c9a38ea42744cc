//===- EmitBundle.cpp - lowered module to a .pccx bundle ------------------===//

#include "compiler/emit/EmitBundle.h"

#include "compiler/model/ModelInfo.h"
#include "compiler/model/WeightEvaluator.h"
#include "dialects/Pccx/PccxOps.h"
#include "hw/isa/Isa.h"
#include "hw/numerics/Quantize.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/Manifest.h"
#include "runtime/host/HostKernels.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cstring>
#include <fstream>
#include <map>

using namespace mlir;
using nlohmann::json;

namespace pccx {

namespace {

namespace pd = dialect;

json attrToJson(Attribute attr) {
  if (auto d = dyn_cast<DictionaryAttr>(attr)) {
    json out = json::object();
    for (NamedAttribute entry : d)
      out[entry.getName().str()] = attrToJson(entry.getValue());
    return out;
  }
  if (auto a = dyn_cast<ArrayAttr>(attr)) {
    json out = json::array();
    for (Attribute item : a)
      out.push_back(attrToJson(item));
    return out;
  }
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.str();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getInt();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue();
  if (llvm::isa<UnitAttr>(attr))
    return true;
  if (auto s = dyn_cast<FlatSymbolRefAttr>(attr))
    return s.getValue().str();
  return nullptr;
}

std::string printed(Attribute attr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << attr;
  return s;
}

/// A weight record of the weights section.
struct Record {
  DictionaryAttr recipe; ///< {quantize = ..., scheme}
  hw::WeightFormat format = hw::WeightFormat::Int4;
  int64_t firstRow = 0, rows = 0, cols = 0;
  uint64_t offset = 0, bytes = 0;
};

/// Short description of a recipe for annotations ("layers.3.mlp.up_proj").
std::string recipeName(DictionaryAttr recipe) {
  while (recipe) {
    if (auto t = recipe.getAs<StringAttr>("tensor"))
      return t.str();
    DictionaryAttr inner = recipe.getAs<DictionaryAttr>("quantize");
    recipe = inner ? inner : recipe.getAs<DictionaryAttr>("scale");
  }
  return "?";
}

bool failAt(Operation *op, const std::string &message, std::string *error) {
  std::string loc;
  llvm::raw_string_ostream os(loc);
  os << op->getLoc();
  *error = loc + ": '" + op->getName().getStringRef().str() + "': " + message;
  return false;
}

/// Reads the rows of a GEMV weight record and quantizes them.
bool quantizedRows(const WeightEvaluator &evaluator, const Record &r,
                   std::vector<float> &scales, std::vector<int8_t> &codes,
                   std::string *error) {
  DictionaryAttr inner = r.recipe.getAs<DictionaryAttr>("quantize");
  if (!inner) {
    *error = "weight record of " + recipeName(r.recipe) +
             " is not quantized";
    return false;
  }
  hw::QuantScheme scheme;
  recipeScheme(r.recipe, &scheme); // checked when the record was planned
  scales.resize(size_t(r.rows));
  codes.resize(size_t(r.rows * r.cols));
  const int64_t block = std::max<int64_t>(1, (int64_t(1) << 20) / r.cols);
  std::vector<float> buf(size_t(std::min(block, r.rows) * r.cols));
  for (int64_t row = 0; row < r.rows; row += block) {
    int64_t n = std::min(block, r.rows - row);
    if (!evaluator.readRows(inner, r.firstRow + row, n, buf.data(), error))
      return false;
    for (int64_t i = 0; i < n; ++i)
      scales[size_t(row + i)] =
          hw::quantizeRow(scheme, buf.data() + i * r.cols, size_t(r.cols),
                          codes.data() + (row + i) * r.cols);
  }
  return true;
}

} // namespace

bool emitBundle(ModuleOp module, const std::string &path,
                const EmitOptions &options, std::string *error) {
  LoadedCheckpoint checkpoint;
  if (!loadModuleCheckpoint(module, &checkpoint, error))
    return false;
  WeightEvaluator evaluator(*checkpoint.checkpoint);

  json manifest = json::object();
  manifest[bundle::manifest_keys::kProducer] = "pccx-compile";
  manifest["config"] = json::parse(checkpoint.config.toJson(-1));
  manifest["compile_options"] = options.compileOptions;
  json segments = json::array(), patches = json::array(),
       memoryMap = json::array(), programs = json::object(),
       caches = json::object();

  std::vector<Record> records;
  std::map<std::string, size_t> recordIndex;
  uint64_t weightBytes = 0;
  bundle::BundleWriter writer;
  std::vector<std::pair<std::string, std::vector<uint64_t>>> sections;

  for (auto program : module.getOps<pd::ProgramOp>()) {
    const std::string section = "program." + program.getSymName().str();
    std::vector<uint64_t> words;
    std::vector<std::string> annotations;
    json plan = json::array();
    for (auto buffer : program.getBody().getOps<pd::BufferOp>()) {
      if (!buffer.getAddress())
        return failAt(buffer, "has no address; run pccx-allocate-l2", error);
      memoryMap.push_back({{"name", buffer.getSymName().str()},
                           {"space", "l2"},
                           {"program", section},
                           {"offset", int64_t(*buffer.getAddress())},
                           {"size", int64_t(buffer.getWords())}});
    }
    for (auto segment : program.getBody().getOps<pd::SegmentOp>()) {
      json hostOps = json::array();
      const size_t begin = words.size();
      for (Operation &op : segment.getBody().front()) {
        if (auto kernel = dyn_cast<pd::HostKernelOp>(op)) {
          hostOps.push_back(
              {{"at", words.size()},
               {"kernel", kernel.getKernel().str()},
               {"params", kernel.getParams() ? attrToJson(*kernel.getParams())
                                             : json::object()}});
          continue;
        }
        if (!pd::opcodeOf(&op))
          continue;
        FailureOr<isa::Instruction> inst = pd::toInstruction(&op);
        if (failed(inst))
          return failAt(&op, "cannot be encoded", error);
        uint64_t word = 0;
        std::string encodeError;
        if (!isa::encode(*inst, word, &encodeError))
          return failAt(&op, encodeError, error);
        const size_t index = words.size();
        words.push_back(word);
        std::string note = segment.getSymName().str();
        if (auto patchList = op.getAttrOfType<ArrayAttr>("patches"))
          for (Attribute p : patchList) {
            auto d = cast<DictionaryAttr>(p);
            bundle::PatchPoint point;
            point.program = section;
            point.index = index;
            point.field = d.getAs<StringAttr>("field").str();
            point.value = d.getAs<StringAttr>("source").str();
            if (auto v = d.getAs<IntegerAttr>("scale"))
              point.scale = v.getInt();
            if (auto v = d.getAs<IntegerAttr>("offset"))
              point.offset = v.getInt();
            if (auto v = d.getAs<IntegerAttr>("delta"))
              point.delta = v.getInt();
            if (auto v = d.getAs<IntegerAttr>("window"))
              point.window = v.getInt();
            patches.push_back(bundle::toJson(point));
          }
        if (auto weights = op.getAttrOfType<DictionaryAttr>("weights")) {
          if (weights.get("dynamic")) {
            plan.push_back({{"index", index}, {"dynamic", true}});
            note += ": attention scores";
          } else {
            auto recipe = weights.getAs<DictionaryAttr>("recipe");
            auto first = weights.getAs<IntegerAttr>("first_row");
            auto count = weights.getAs<IntegerAttr>("num_rows");
            if (!recipe || !first || !count)
              return failAt(&op, "has a malformed 'weights' attribute", error);
            std::string key = printed(recipe) + "|" +
                              std::to_string(first.getInt()) + "|" +
                              std::to_string(count.getInt());
            auto it = recordIndex.find(key);
            if (it == recordIndex.end()) {
              Record r;
              r.recipe = recipe;
              if (!recipeFormat(recipe, &r.format))
                return failAt(&op, "weights are not quantized with a known "
                                   "scheme", error);
              r.firstRow = first.getInt();
              r.rows = count.getInt();
              int64_t totalRows = 0;
              if (!evaluator.shape(recipe, &totalRows, &r.cols, error))
                return failAt(&op, *error, error);
              if (r.firstRow + r.rows > totalRows)
                return failAt(&op, "weight rows past the end of the tensor",
                              error);
              r.offset = weightBytes;
              r.bytes = uint64_t(hw::recordBytes(r.format, r.rows, r.cols));
              weightBytes += r.bytes;
              it = recordIndex.emplace(key, records.size()).first;
              records.push_back(r);
            }
            const Record &r = records[it->second];
            plan.push_back(
                {{"index", index}, {"offset", r.offset}, {"bytes", r.bytes}});
            note += ": " + recipeName(recipe);
            if (r.firstRow || count.getInt() != 0)
              note += " rows " + std::to_string(r.firstRow) + ".." +
                      std::to_string(r.firstRow + r.rows - 1);
          }
        }
        annotations.push_back(note);
      }
      segments.push_back({{"name", segment.getSymName().str()},
                          {"program", section},
                          {"begin", begin},
                          {"end", words.size()},
                          {"host_ops", hostOps}});
    }
    json info = json::object();
    info["rows"] = program->getAttrOfType<IntegerAttr>("rows")
                       ? program->getAttrOfType<IntegerAttr>("rows").getInt()
                       : 1;
    if (auto w = program->getAttrOfType<IntegerAttr>("window_words"))
      info["window_words"] = w.getInt();
    info["weight_records"] = plan;
    programs[section] = info;
    if (auto c = program->getAttrOfType<DictionaryAttr>("caches"))
      for (NamedAttribute entry : c) {
        auto dims = cast<ArrayAttr>(entry.getValue());
        caches[entry.getName().str()] = {
            {"slots", cast<IntegerAttr>(dims[0]).getInt()},
            {"width", cast<IntegerAttr>(dims[1]).getInt()},
            {"dtype", options.kvDtype}};
      }
    if (!bundle::setAnnotations(manifest, section, annotations, error))
      return false;
    sections.emplace_back(section, std::move(words));
  }
  if (programs.empty()) {
    *error = "the module has no pccx.program; lower it first";
    return false;
  }

  // Host tensors: float32, one after another (16-byte aligned).
  json hostTensors = json::object();
  std::vector<std::pair<DictionaryAttr, std::pair<int64_t, int64_t>>>
      hostList;
  uint64_t hostBytes = 0;
  if (auto t = module->getAttrOfType<DictionaryAttr>("pccx.host_tensors"))
    for (NamedAttribute entry : t) {
      auto recipe = cast<DictionaryAttr>(entry.getValue());
      int64_t rows = 0, cols = 0;
      if (!evaluator.shape(recipe, &rows, &cols, error))
        return false;
      hostTensors[entry.getName().str()] = {{"offset", hostBytes},
                                            {"rows", rows},
                                            {"cols", cols},
                                            {"recipe", attrToJson(recipe)}};
      hostList.push_back({recipe, {rows, cols}});
      hostBytes += hw::pad16(uint64_t(rows * cols) * 4);
    }

  // Gather tables: INT4/INT8 codes then scales, or float32 rows.
  json gathers = json::object();
  struct Gather {
    DictionaryAttr recipe;
    int64_t rows, cols;
    bool quantized;
    hw::WeightFormat format;
  };
  std::vector<Gather> gatherList;
  uint64_t gatherBytes = 0;
  if (auto t = module->getAttrOfType<DictionaryAttr>("pccx.gather_tables"))
    for (NamedAttribute entry : t) {
      auto recipe = cast<DictionaryAttr>(entry.getValue());
      Gather g{recipe, 0, 0, false, hw::WeightFormat::Int4};
      g.quantized = recipeFormat(recipe, &g.format);
      if (!g.quantized && recipe.getAs<DictionaryAttr>("quantize")) {
        *error = "gather table " + entry.getName().str() +
                 " is quantized with an unknown scheme";
        return false;
      }
      if (!evaluator.shape(recipe, &g.rows, &g.cols, error))
        return false;
      json info = {{"rows", g.rows},
                   {"cols", g.cols},
                   {"format", g.quantized ? hw::formatName(g.format) : "f32"},
                   {"offset", gatherBytes},
                   {"recipe", attrToJson(recipe)}};
      uint64_t bytes;
      if (g.quantized) {
        uint64_t codes = uint64_t(g.rows) *
                         uint64_t(hw::packedRowBytes(g.format, size_t(g.cols)));
        codes = hw::pad16(codes);
        info["scales_offset"] = gatherBytes + codes;
        bytes = codes + hw::pad16(uint64_t(g.rows) * 4);
      } else {
        bytes = hw::pad16(uint64_t(g.rows * g.cols) * 4);
      }
      gatherBytes += bytes;
      gathers[entry.getName().str()] = info;
      gatherList.push_back(g);
    }

  manifest["programs"] = programs;
  manifest["caches"] = caches;
  manifest["host_tensors"] = hostTensors;
  manifest["gather_tables"] = gathers;
  manifest[bundle::manifest_keys::kSegments] = segments;
  manifest[bundle::manifest_keys::kPatchPoints] = patches;
  manifest[bundle::manifest_keys::kMemoryMap] = memoryMap;
  manifest["weights_bytes"] = weightBytes;
  // What each record holds, so tools can map the bundle's weights back to
  // checkpoint tensors (effective weights, the reference's weights).
  json recordTable = json::array();
  for (const Record &r : records)
    recordTable.push_back({{"offset", r.offset},
                           {"bytes", r.bytes},
                           {"first_row", r.firstRow},
                           {"rows", r.rows},
                           {"cols", r.cols},
                           {"recipe", attrToJson(r.recipe)}});
  manifest["weight_table"] = recordTable;
  if (!options.tokenizerPath.empty())
    manifest["tokenizer"] = {{"section", "tokenizer"},
                             {"format", "sentencepiece"}};

  if (!writer.addManifest(manifest, error))
    return false;
  for (auto &[name, words] : sections)
    if (!writer.addProgram(name, words, error))
      return false;

  const uint64_t totalBytes = weightBytes + hostBytes + gatherBytes;
  auto progress = [&](uint64_t done) {
    if (options.progress)
      options.progress(done, totalBytes);
  };

  if (!writer.addStreamedSection(
          "weights", bundle::SectionKind::Weights,
          [&](bundle::SectionSink &sink, std::string *err) {
            std::vector<float> scales;
            std::vector<int8_t> codes;
            std::vector<uint8_t> bytes;
            uint64_t done = 0;
            for (const Record &r : records) {
              if (!quantizedRows(evaluator, r, scales, codes, err))
                return false;
              const int64_t scaleBytes = hw::recordScaleBytes(r.rows);
              const int64_t stride = hw::recordRowStride(r.format, r.cols);
              bytes.assign(size_t(r.bytes), 0);
              std::memcpy(bytes.data(), scales.data(), size_t(4 * r.rows));
              for (int64_t row = 0; row < r.rows; ++row)
                hw::packRow(r.format, codes.data() + row * r.cols,
                            size_t(r.cols),
                            bytes.data() + scaleBytes + row * stride);
              if (!sink.write(bytes))
                return false;
              done += bytes.size();
              progress(done);
            }
            return true;
          },
          error))
    return false;

  if (!writer.addStreamedSection(
          "host_tensors", bundle::SectionKind::Constants,
          [&](bundle::SectionSink &sink, std::string *err) {
            std::vector<float> data;
            for (auto &[recipe, shape] : hostList) {
              data.assign(size_t(shape.first * shape.second), 0.0f);
              if (!evaluator.readRows(recipe, 0, shape.first, data.data(),
                                      err))
                return false;
              size_t bytes = data.size() * 4;
              size_t padded = hw::pad16(bytes);
              std::vector<uint8_t> out(padded, 0);
              std::memcpy(out.data(), data.data(), bytes);
              if (!sink.write(out))
                return false;
            }
            progress(weightBytes + hostBytes);
            return true;
          },
          error))
    return false;

  if (!writer.addStreamedSection(
          "gather", bundle::SectionKind::Weights,
          [&](bundle::SectionSink &sink, std::string *err) {
            uint64_t done = weightBytes + hostBytes;
            for (const Gather &g : gatherList) {
              const int64_t block =
                  std::max<int64_t>(1, (int64_t(1) << 20) / g.cols);
              std::vector<float> buf(size_t(std::min(block, g.rows) * g.cols));
              if (!g.quantized) {
                uint64_t written = 0;
                for (int64_t row = 0; row < g.rows; row += block) {
                  int64_t n = std::min(block, g.rows - row);
                  if (!evaluator.readRows(g.recipe, row, n, buf.data(), err) ||
                      !sink.write(buf.data(), size_t(n * g.cols) * 4))
                    return false;
                  written += uint64_t(n * g.cols) * 4;
                }
                std::vector<uint8_t> pad(hw::pad16(written) - written, 0);
                if (!sink.write(pad))
                  return false;
                done += written + pad.size();
                progress(done);
                continue;
              }
              DictionaryAttr inner = g.recipe.getAs<DictionaryAttr>("quantize");
              const int64_t rowBytes =
                  int64_t(hw::packedRowBytes(g.format, size_t(g.cols)));
              hw::QuantScheme scheme;
              recipeScheme(g.recipe, &scheme); // checked when planned
              std::vector<float> scales(size_t(g.rows));
              std::vector<int8_t> q(size_t(g.cols));
              std::vector<uint8_t> packed(static_cast<size_t>(rowBytes));
              uint64_t written = 0;
              for (int64_t row = 0; row < g.rows; row += block) {
                int64_t n = std::min(block, g.rows - row);
                if (!evaluator.readRows(inner, row, n, buf.data(), err))
                  return false;
                for (int64_t i = 0; i < n; ++i) {
                  scales[size_t(row + i)] =
                      hw::quantizeRow(scheme, buf.data() + i * g.cols,
                                      size_t(g.cols), q.data());
                  hw::packRow(g.format, q.data(), size_t(g.cols),
                              packed.data());
                  if (!sink.write(packed))
                    return false;
                  written += packed.size();
                }
                done += uint64_t(n * rowBytes);
                progress(done);
              }
              std::vector<uint8_t> pad(hw::pad16(written) - written, 0);
              size_t scaleBytes = scales.size() * 4;
              std::vector<uint8_t> scalePad(hw::pad16(scaleBytes) -
                                                scaleBytes,
                                            0);
              if (!sink.write(pad) ||
                  !sink.write(scales.data(), scaleBytes) ||
                  !sink.write(scalePad))
                return false;
            }
            return true;
          },
          error))
    return false;

  if (!options.tokenizerPath.empty()) {
    std::ifstream in(options.tokenizerPath, std::ios::binary);
    if (!in) {
      *error = options.tokenizerPath + ": cannot read the tokenizer model";
      return false;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    if (!writer.addSection("tokenizer", bundle::SectionKind::Tokenizer,
                           std::move(bytes), error))
      return false;
  }
  return writer.write(path, error);
}

} // namespace pccx
