//===- ProgramEncoder.cpp - pccx.program to words and tables --------------===//

#include "compiler/emit/ProgramEncoder.h"

#include "compiler/emit/HostParamsJson.h"
#include "hw/isa/Isa.h"

using namespace mlir;

namespace pccx {

namespace {

namespace pd = dialect;

bool failAt(Operation *op, const std::string &message, std::string *error) {
  std::string loc;
  llvm::raw_string_ostream os(loc);
  os << op->getLoc();
  *error = loc + ": '" + op->getName().getStringRef().str() + "': " + message;
  return false;
}

/// Short description of a recipe for annotations ("layers.3.mlp.up_proj").
std::string recipeName(pd::RecipeAttr recipe) {
  return recipe ? recipe.rootTensor().str() : "?";
}

bundle::PatchPoint patchPoint(pd::PatchAttr p, const std::string &section,
                              uint64_t index) {
  bundle::PatchPoint point;
  point.program = section;
  point.index = index;
  point.field = p.getField().str();
  point.value = p.getSource().str();
  point.scale = p.getScale();
  point.offset = p.getOffset();
  point.delta = p.getDelta();
  point.window = p.getWindow();
  return point;
}

} // namespace

bool encodeProgram(pd::ProgramOp program, WeightPlan &weights, KvDtype kvDtype,
                   machine::Target target, bundle::ModelManifest &manifest,
                   std::vector<uint64_t> &words, std::string *error) {
  const std::string section = "program." + program.getSymName().str();
  bundle::ProgramEntry entry;
  entry.section = section;
  if (auto rows = program->getAttrOfType<IntegerAttr>("rows"))
    entry.rows = rows.getInt();
  if (auto w = program->getAttrOfType<IntegerAttr>("window_words"))
    entry.windowWords = w.getInt();
  entry.independentRows = program->hasAttr("independent_rows");
  entry.noLogits = program->hasAttr("no_logits");
  std::vector<std::string> annotations;
  words.clear();

  for (auto buffer : program.getBody().getOps<pd::BufferOp>()) {
    if (!buffer.getAddress())
      return failAt(buffer, "has no address; run pccx-allocate-l2", error);
    manifest.memoryMap.push_back({buffer.getSymName().str(), "l2", section,
                                  int64_t(*buffer.getAddress()),
                                  int64_t(buffer.getWords())});
  }

  for (auto buffer : program.getBody().getOps<pd::HostBufferOp>()) {
    if (!buffer.getAddress())
      return failAt(buffer, "has no address; run pccx-place-host-buffers",
                    error);
    manifest.memoryMap.push_back({buffer.getSymName().str(), "host", section,
                                  int64_t(*buffer.getAddress()),
                                  int64_t(buffer.getWords())});
  }

  for (auto segment : program.getBody().getOps<pd::SegmentOp>()) {
    bundle::SegmentEntry seg;
    seg.name = segment.getSymName().str();
    seg.program = section;
    seg.begin = words.size();
    // A pccx.host.sync directly before a host kernel travels with it; any
    // other sync is listed by the word it precedes.
    bool pendingSync = false;
    for (Operation &op : segment.getBody().front()) {
      if (llvm::isa<pd::HostSyncOp>(op)) {
        if (pendingSync)
          seg.syncs.push_back(words.size());
        pendingSync = true;
        continue;
      }
      if (auto kernel = dyn_cast<pd::HostKernelOp>(op)) {
        bundle::HostOpEntry h;
        h.at = words.size();
        h.kernel = kernel.getKernel().str();
        for (bool outputs : {false, true})
          for (pd::HostRegionAttr r : kernel.getRegions(outputs))
            if (r.getBuffer())
              return failAt(kernel,
                            "reads or writes the unplaced host buffer " +
                                r.getBuffer().getValue().str() +
                                "; run pccx-place-host-buffers",
                            error);
        h.params = kernel.getParams() ? hostParamsToJson(*kernel.getParams())
                                      : nlohmann::json::object();
        h.sync = pendingSync;
        pendingSync = false;
        seg.hostOps.push_back(std::move(h));
        continue;
      }
      if (pendingSync)
        seg.syncs.push_back(words.size());
      pendingSync = false;
      if (!pd::opcodeOf(&op))
        continue;
      FailureOr<isa::Instruction> inst = pd::toInstruction(&op);
      if (failed(inst))
        return failAt(&op, "cannot be encoded", error);
      std::string missing = machine::refusedByCompiler(*inst, target);
      if (!missing.empty())
        return failAt(&op,
                      "cannot be compiled for target " +
                          std::string(machine::targetProfile(target).name) +
                          ": " + missing,
                      error);
      uint64_t word = 0;
      std::string encodeError;
      if (!isa::encode(*inst, word, &encodeError))
        return failAt(&op, encodeError, error);
      const uint64_t index = words.size();
      words.push_back(word);
      std::string note = seg.name;
      if (auto patchList = op.getAttrOfType<ArrayAttr>("patches"))
        for (Attribute p : patchList)
          manifest.patchPoints.push_back(
              patchPoint(cast<pd::PatchAttr>(p), section, index));
      if (auto w = op.getAttrOfType<pd::WeightRecordAttr>("weights")) {
        bundle::WeightUse use;
        use.index = index;
        if (w.getCache()) {
          use.cache = w.getCache().str();
          use.part = w.getPart();
          use.mask = w.getMask();
          use.row = w.getRow();
          if (use.row >= 0 && !entry.independentRows)
            return failAt(&op,
                          "reads the cache of step row " +
                              std::to_string(use.row) +
                              " in a program whose rows share their caches",
                          error);
          note += (w.getMask() ? ": mask of row " : ": " + use.cache + " head ") +
                  std::to_string(use.part) +
                  (w.getMask() ? " over " + use.cache : std::string()) +
                  (use.row >= 0 ? " of row " + std::to_string(use.row)
                                : std::string());
        } else if (w.getDynamic()) {
          use.dynamic = true;
          note += ": attention scores";
        } else {
          std::string why;
          const WeightPlan::Record *r =
              weights.use(w.getRecipe(), w.getFirstRow(), w.getNumRows(),
                          w.getFirstCol(), w.getNumCols(), &why);
          if (!r)
            return failAt(&op, why, error);
          use.offset = r->offset;
          use.bytes = r->bytes;
          note += ": " + recipeName(w.getRecipe());
          if (r->firstRow || w.getNumRows() != 0)
            note += " rows " + std::to_string(r->firstRow) + ".." +
                    std::to_string(r->firstRow + r->rows - 1);
          if (w.getNumCols())
            note += " cols " + std::to_string(r->firstCol) + ".." +
                    std::to_string(r->firstCol + r->cols - 1);
        }
        entry.weights.push_back(use);
      }
      annotations.push_back(note);
    }
    if (pendingSync)
      seg.syncs.push_back(words.size());
    seg.end = words.size();
    manifest.segments.push_back(std::move(seg));
  }

  if (auto c = program->getAttrOfType<DictionaryAttr>("caches"))
    for (NamedAttribute e : c) {
      auto dims = cast<ArrayAttr>(e.getValue());
      bundle::CacheEntry cache;
      cache.name = e.getName().str();
      cache.slots = cast<IntegerAttr>(dims[0]).getInt();
      cache.width = cast<IntegerAttr>(dims[1]).getInt();
      cache.dtype = choiceName(kvDtype);
      // [slots, width, layout, kv heads, window]: records in device memory.
      if (dims.size() == 5) {
        cache.dtype = "int8";
        cache.layout = cast<StringAttr>(dims[2]).str();
        cache.heads = cast<IntegerAttr>(dims[3]).getInt();
        cache.window = cast<IntegerAttr>(dims[4]).getInt();
      }
      bool known = false;
      for (const bundle::CacheEntry &other : manifest.caches)
        known |= other.name == cache.name;
      if (!known)
        manifest.caches.push_back(cache);
    }
  if (manifest.annotations.count(section)) {
    *error = "the module has two programs named " + section;
    return false;
  }
  manifest.annotations[section] = annotations;
  manifest.programs.push_back(std::move(entry));
  return true;
}

} // namespace pccx
