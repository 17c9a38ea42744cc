//===- PccxOps.cpp - pccx v002 dialect -------------------------*- C++ -*-===//
//
// Verification and encoding are driven by the field table of
// hw/isa/PccxIsa.def: an op attribute is found by the field's name, and
// widths, reserved bits and defined values are checked by the ISA layer.
//===----------------------------------------------------------------------===//

#include "dialects/Pccx/PccxOps.h"
#include "hw/abi/HostAbi.h"
#include "hw/abi/PatchSources.h"

#include "hw/machine/MachineModel.h"
#include "hw/support/CheckedMath.h"

#include <cmath>

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pccx;
using namespace pccx::dialect;

#include "dialects/Pccx/PccxOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Pccx/PccxAttrs.cpp.inc"

void PccxDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Pccx/PccxAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Pccx/PccxOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/Pccx/PccxOps.cpp.inc"

namespace {

std::string enumChoices(isa::Field field) {
  std::string out;
  for (uint32_t v = 0; v < 32; ++v)
    if (const char *name = isa::enumName(field, v)) {
      if (!out.empty())
        out += ", ";
      out += name;
    }
  return out;
}

ProgramOp enclosingProgram(Operation *op) {
  return op->getParentOfType<ProgramOp>();
}

BufferOp lookupBuffer(Operation *user, FlatSymbolRefAttr sym) {
  ProgramOp program = enclosingProgram(user);
  if (!program)
    return {};
  return dyn_cast_or_null<BufferOp>(
      SymbolTable::lookupSymbolIn(program, sym.getAttr()));
}

HostBufferOp lookupHostBuffer(Operation *user, FlatSymbolRefAttr sym) {
  ProgramOp program = enclosingProgram(user);
  if (!program)
    return {};
  return dyn_cast_or_null<HostBufferOp>(
      SymbolTable::lookupSymbolIn(program, sym.getAttr()));
}

// Checks one field attribute of an instruction op. `value` receives the
// encoded value for non-symbolic fields.
LogicalResult verifyField(Operation *op, isa::Field field) {
  const isa::FieldInfo &info = isa::fieldInfo(field);
  Attribute attr = op->getAttr(info.name);
  auto fieldError = [&](const std::string &msg) {
    return op->emitOpError() << "field '" << info.name << "': " << msg;
  };
  switch (info.kind) {
  case isa::FieldKind::Flags:
  case isa::FieldKind::Bool:
    // Unit attributes named after the flag; ODS guarantees their type.
    return success();
  case isa::FieldKind::Enum: {
    auto str = dyn_cast_or_null<StringAttr>(attr);
    uint32_t v;
    if (!str || !isa::lookupEnum(field, str.getValue(), v))
      return fieldError("must be one of " + enumChoices(field));
    return success();
  }
  default:
    break;
  }
  if (auto sym = dyn_cast_or_null<FlatSymbolRefAttr>(attr)) {
    if (info.kind == isa::FieldKind::HostAddr) {
      if (!lookupHostBuffer(op, sym))
        return fieldError("'" + sym.getValue().str() +
                          "' does not name a pccx.host.buffer of the program");
      return success();
    }
    if (info.kind != isa::FieldKind::L2Addr)
      return fieldError("only L2 and host-window addresses may be symbolic");
    if (!lookupBuffer(op, sym))
      return fieldError("'" + sym.getValue().str() +
                        "' does not name a pccx.buffer of the program");
    return success();
  }
  auto intAttr = dyn_cast_or_null<IntegerAttr>(attr);
  if (!intAttr)
    return fieldError("missing");
  int64_t v = intAttr.getInt();
  if (v < 0)
    return fieldError("value " + std::to_string(v) + " is negative");
  std::string err = isa::checkField(field, uint64_t(v));
  if (!err.empty())
    return op->emitOpError() << err;
  if (info.kind == isa::FieldKind::L2Addr) {
    const uint64_t l2Words = machine::targetProfile(targetOf(op)).l2Words;
    if (uint64_t(v) >= l2Words)
      return fieldError("L2 word " + std::to_string(v) +
                        " does not exist (the L2 has " +
                        std::to_string(l2Words) + " words)");
  }
  return success();
}

LogicalResult verifyPatches(Operation *op, isa::Format format) {
  auto patches = op->getAttrOfType<ArrayAttr>("patches");
  if (!patches)
    return success();
  for (Attribute a : patches) {
    auto patch = cast<PatchAttr>(a);
    isa::Field f;
    if (!isa::lookupField(format, patch.getField(), f))
      return op->emitOpError() << "patch names no field '" << patch.getField()
                               << "' of this instruction";
    isa::FieldKind kind = isa::fieldInfo(f).kind;
    if (kind == isa::FieldKind::Flags || kind == isa::FieldKind::Enum ||
        kind == isa::FieldKind::Bool)
      return op->emitOpError() << "patch of field '" << patch.getField()
                               << "': only numeric fields can be patched";
    if (!patch.getBank().empty())
      return op->emitOpError() << "patch of field '" << patch.getField()
                               << "' names a shape bank; only "
                                  "shape_patches do";
  }
  return success();
}

/// `shape_patches` name the a/b/c value of a shape the op states.
LogicalResult verifyShapePatches(Operation *op) {
  auto patches = op->getAttrOfType<ArrayAttr>("shape_patches");
  if (!patches)
    return success();
  for (Attribute a : patches) {
    auto patch = cast<PatchAttr>(a);
    if (patch.getBank() != "weight_shape" && patch.getBank() != "fmap_shape")
      return op->emitOpError() << "shape patch of '" << patch.getField()
                               << "' must name bank \"weight_shape\" or "
                                  "\"fmap_shape\"";
    if (!op->getAttr(patch.getBank()))
      return op->emitOpError() << "shape patch names bank '" << patch.getBank()
                               << "', but the op states no such shape";
    if (patch.getField() != "a_value" && patch.getField() != "b_value" &&
        patch.getField() != "c_value")
      return op->emitOpError() << "shape patch field '" << patch.getField()
                               << "' must be a_value, b_value or c_value";
  }
  return success();
}

LogicalResult verifyInstruction(Operation *op) {
  isa::Opcode opcode = *opcodeOf(op);
  isa::Format format = isa::opcodeInfo(opcode).format;
  for (isa::Field f : isa::fieldsOf(format))
    if (failed(verifyField(op, f)))
      return failure();
  return failure(failed(verifyPatches(op, format)) ||
                 failed(verifyShapePatches(op)));
}

} // namespace

std::optional<isa::Opcode> pccx::dialect::opcodeOf(Operation *op) {
  if (llvm::isa<GemvOp>(op))
    return isa::Opcode::Gemv;
  if (llvm::isa<GemmOp>(op))
    return isa::Opcode::Gemm;
  if (llvm::isa<MemcpyOp>(op))
    return isa::Opcode::Memcpy;
  if (llvm::isa<MemsetOp>(op))
    return isa::Opcode::Memset;
  if (llvm::isa<CvoOp>(op))
    return isa::Opcode::Cvo;
  return std::nullopt;
}

FailureOr<isa::Instruction>
pccx::dialect::toInstruction(Operation *op, AddressResolver resolve) {
  std::optional<isa::Opcode> opcode = opcodeOf(op);
  if (!opcode)
    return op->emitOpError("is not a pccx instruction");
  isa::Instruction inst(*opcode);
  for (isa::Field f : isa::fieldsOf(inst.format())) {
    const isa::FieldInfo &info = isa::fieldInfo(f);
    uint64_t value = 0;
    switch (info.kind) {
    case isa::FieldKind::Flags:
      for (unsigned bit = 0; bit < info.width(); ++bit)
        if (const char *flag = isa::flagName(f, 1u << bit))
          if (op->getAttr(flag))
            value |= 1u << bit;
      break;
    case isa::FieldKind::Bool:
      value = op->getAttr(info.name) ? 1 : 0;
      break;
    case isa::FieldKind::Enum: {
      auto str = op->getAttrOfType<StringAttr>(info.name);
      uint32_t v = 0;
      if (!str || !isa::lookupEnum(f, str.getValue(), v))
        return op->emitOpError() << "field '" << info.name
                                 << "' must be one of " << enumChoices(f);
      value = v;
      break;
    }
    default: {
      Attribute attr = op->getAttr(info.name);
      if (auto sym = dyn_cast_or_null<FlatSymbolRefAttr>(attr)) {
        std::optional<int64_t> address =
            resolve ? resolve(sym) : std::optional<int64_t>();
        if (!address)
          return op->emitOpError()
                 << "field '" << info.name << "' is the unallocated buffer "
                 << sym << "; run "
                 << (info.kind == isa::FieldKind::HostAddr
                         ? "host-buffer placement"
                         : "L2 allocation")
                 << " before encoding";
        value = uint64_t(*address);
      } else if (auto intAttr = dyn_cast_or_null<IntegerAttr>(attr)) {
        if (intAttr.getInt() < 0)
          return op->emitOpError() << "field '" << info.name << "' is negative";
        value = uint64_t(intAttr.getInt());
      } else {
        return op->emitOpError() << "field '" << info.name << "' is missing";
      }
      break;
    }
    }
    std::string err = isa::checkField(f, value);
    if (!err.empty())
      return op->emitOpError() << err;
    inst.set(f, uint32_t(value));
  }
  return inst;
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

LogicalResult ProgramOp::verify() {
  for (Operation &op : getBody().front())
    if (!llvm::isa<BufferOp, HostBufferOp, SegmentOp>(op))
      return op.emitOpError("is not allowed directly in a pccx.program; "
                            "instructions belong in a pccx.segment");
  return success();
}

LogicalResult BufferOp::verify() {
  if (std::optional<uint64_t> address = getAddress()) {
    uint64_t end;
    const uint64_t l2Words =
        machine::targetProfile(targetOf(getOperation())).l2Words;
    if (!checkedAdd(*address, uint64_t(getWords()), &end) || end > l2Words)
      return emitOpError() << "occupies words [" << *address << ", " << end
                           << ") but the L2 has " << l2Words << " words";
  }
  return success();
}

LogicalResult SegmentOp::verify() {
  if (std::optional<uint64_t> bytes = getWeightBytes())
    if (int64_t(*bytes) < 0)
      return emitOpError("weight_bytes must not be negative");
  return success();
}

LogicalResult GemvOp::verify() {
  if (failed(verifyInstruction(*this)))
    return failure();
  if (uint64_t(getParallelLane()) > machine::gemv_cores)
    return emitOpError() << "parallel_lane " << getParallelLane()
                         << " exceeds the " << machine::gemv_cores
                         << " GEMV cores (0 selects all)";
  return success();
}

LogicalResult GemmOp::verify() { return verifyInstruction(*this); }

LogicalResult MemcpyOp::verify() {
  if (failed(verifyInstruction(*this)))
    return failure();
  if (getFromDevice() && getToDevice())
    return emitOpError("host-to-host transfers are not supported "
                       "(from_device and to_device both name the host)");
  return success();
}

LogicalResult MemsetOp::verify() { return verifyInstruction(*this); }

LogicalResult CvoOp::verify() {
  if (failed(verifyInstruction(*this)))
    return failure();
  if (getRecipScale() && getCvoFunc() != "scale")
    return emitOpError("recip_scale applies only to cvo_func \"scale\"");
  return success();
}

namespace {

/// Whether `value` has the kind the ABI gives the parameter; regions are
/// appended to `regions`.
bool matchesKind(const abi::ParamInfo &p, Attribute value,
                 SmallVectorImpl<HostRegionAttr> &regions) {
  auto names = [](Attribute a) {
    auto list = dyn_cast<ArrayAttr>(a);
    return list && llvm::all_of(list, [](Attribute n) {
             return llvm::isa<StringAttr>(n);
           });
  };
  switch (p.kind) {
  case abi::ParamKind::Region:
    if (auto r = dyn_cast<HostRegionAttr>(value)) {
      regions.push_back(r);
      return true;
    }
    return false;
  case abi::ParamKind::RegionList: {
    auto list = dyn_cast<ArrayAttr>(value);
    if (!list)
      return false;
    for (Attribute a : list) {
      auto r = dyn_cast<HostRegionAttr>(a);
      if (!r)
        return false;
      regions.push_back(r);
    }
    return true;
  }
  case abi::ParamKind::Int:
    return llvm::isa<IntegerAttr>(value);
  case abi::ParamKind::Float:
    return llvm::isa<FloatAttr>(value);
  case abi::ParamKind::Tensor:
  case abi::ParamKind::Cache:
  case abi::ParamKind::Gather:
    return llvm::isa<StringAttr>(value);
  case abi::ParamKind::TensorList:
    return names(value);
  }
  return false;
}

} // namespace

LogicalResult ShapeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t a, int64_t b, int64_t c) {
  for (int64_t v : {a, b, c})
    if (v < 0 || v > 0xffff)
      return emitError() << "shape value " << v
                         << " does not fit a 16-bit shape field";
  return success();
}

LogicalResult PatchAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef field, StringRef source,
                                int64_t scale, int64_t offset, int64_t delta,
                                int64_t window, StringRef bank) {
  bundle::PatchSource s;
  if (!bundle::parsePatchSource(source.str().c_str(), &s))
    return emitError() << "patch source '" << source
                       << "' must be one of token_id, position, attn_len, "
                          "window_len, window_start";
  if (bundle::patchSourceNeedsWindow(s) && window <= 0)
    return emitError() << "patch source '" << source
                       << "' needs a positive 'window'";
  if (delta < 0 || delta > 0xffff)
    return emitError() << "patch delta " << delta
                       << " must be a row of the step in [0, 65535]";
  if (field.empty())
    return emitError() << "patch names no field";
  return success();
}

//===----------------------------------------------------------------------===//
// RecipeAttr
//===----------------------------------------------------------------------===//

LogicalResult RecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringAttr tensor, RecipeAttr scale,
                                 RecipeAttr by, FloatAttr factor,
                                 RecipeAttr quantize, StringAttr scheme) {
  if (int(bool(tensor)) + int(bool(scale)) + int(bool(quantize)) != 1)
    return emitError() << "a recipe is exactly one of tensor, scale or "
                          "quantize";
  if (!scale && (by || factor))
    return emitError() << "by and factor belong to a scale recipe";
  if (scale && !factor)
    return emitError() << "a scale recipe needs a factor";
  if (factor && (!factor.getType().isF32() ||
                 !std::isfinite(factor.getValueAsDouble())))
    return emitError() << "a recipe's factor must be a finite f32";
  if (bool(quantize) != bool(scheme))
    return emitError() << "a quantize recipe has a scheme, and only it";
  hw::QuantScheme parsed;
  if (scheme && !hw::parseScheme(scheme.str(), &parsed))
    return emitError() << "unknown quantization scheme '" << scheme.str()
                       << "'";
  return success();
}

RecipeAttr RecipeAttr::getTensor(MLIRContext *context, StringAttr name) {
  return get(context, name, {}, {}, {}, {}, {});
}

RecipeAttr RecipeAttr::getScaled(RecipeAttr inner, RecipeAttr by,
                                 FloatAttr factor) {
  return get(inner.getContext(), {}, inner, by, factor, {}, {});
}

RecipeAttr RecipeAttr::getQuantized(RecipeAttr inner, StringAttr scheme) {
  return get(inner.getContext(), {}, {}, {}, {}, inner, scheme);
}

bool RecipeAttr::quantScheme(hw::QuantScheme *scheme) const {
  return getQuantize() && hw::parseScheme(getScheme().str(), scheme);
}

bool RecipeAttr::weightFormat(hw::WeightFormat *format) const {
  hw::QuantScheme scheme;
  if (!quantScheme(&scheme))
    return false;
  *format = scheme.format;
  return true;
}

StringAttr RecipeAttr::rootTensor() const {
  RecipeAttr r = *this;
  while (!r.getTensor())
    r = r.getScale() ? r.getScale() : r.getQuantize();
  return r.getTensor();
}

nlohmann::json RecipeAttr::toJson() const {
  nlohmann::json out = nlohmann::json::object();
  if (getTensor())
    out["tensor"] = getTensor().str();
  if (getScale())
    out["scale"] = getScale().toJson();
  if (getBy())
    out["by"] = getBy().toJson();
  if (getFactor())
    out["factor"] = getFactor().getValueAsDouble();
  if (getQuantize())
    out["quantize"] = getQuantize().toJson();
  if (getScheme())
    out["scheme"] = getScheme().str();
  return out;
}

LogicalResult
WeightRecordAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         RecipeAttr recipe, int64_t firstRow,
                         int64_t numRows, bool dynamic, StringAttr cache,
                         int64_t part, bool mask, int64_t row,
                         int64_t firstCol, int64_t numCols) {
  if ((firstCol || numCols) && (cache || dynamic))
    return emitError() << "only a record of a recipe has columns";
  if (firstCol < 0 || numCols < 0 || numCols > 0xffff ||
      (firstCol && !numCols))
    return emitError() << "columns [" << firstCol << ", +" << numCols
                       << ") are not a valid record";
  if (row < -1 || row > 0xffff)
    return emitError() << "row " << row << " is out of range";
  if (row >= 0 && (!cache || mask))
    return emitError() << "only a key or value record of a cache has a row";
  if (cache || mask) {
    if (!cache || recipe || dynamic || firstRow || numRows)
      return emitError() << "a cache record names its cache and nothing else "
                            "(no recipe, rows or dynamic)";
    if (part < 0 || part > 0xffff)
      return emitError() << "part " << part << " is out of range";
    return success();
  }
  if (part)
    return emitError() << "only a cache record has a part";
  if (dynamic)
    return recipe ? emitError() << "a dynamic record has no recipe" : success();
  if (!recipe || !recipe.getQuantize())
    return emitError() << "a weight record needs a quantized recipe "
                          "(#pccx.recipe<quantize = ..., scheme = ...>)";
  if (firstRow < 0 || numRows <= 0 || numRows > 0xffff)
    return emitError() << "rows [" << firstRow << ", +" << numRows
                       << ") are not a valid record";
  return success();
}

LogicalResult
HostRegionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       FlatSymbolRefAttr buffer, int64_t offset, int64_t elems,
                       int64_t rows, int64_t stride) {
  abi::HostRegion r{offset, elems, rows, stride};
  // A symbolic region is checked against its buffer by its user.
  std::string why =
      r.check(buffer ? int64_t(1) << 40 : int64_t(machine::host_window_words));
  if (!why.empty())
    return emitError() << "region " << why;
  return success();
}

LogicalResult HostBufferOp::verify() {
  // I64Attr's getters are unsigned: the signed values, so that a negative
  // ordinal is refused rather than read as a huge one.
  int64_t allocAt = getAllocAttr().getInt();
  int64_t freeAt = getFreeAttr().getInt();
  if (allocAt < 0 || freeAt <= allocAt)
    return emitOpError() << "lifetime [" << allocAt << ", " << freeAt
                         << ") must have 0 <= alloc < free";
  const uint64_t windowWords =
      machine::targetProfile(targetOf(getOperation())).hostWindowWords;
  if (std::optional<uint64_t> address = getAddress())
    if (uint64_t end; !checkedAdd(*address, uint64_t(getWords()), &end) ||
                      end > windowWords)
      return emitOpError() << "occupies words [" << *address << ", "
                           << *address + uint64_t(getWords())
                           << ") but the host window has " << windowWords
                           << " words";
  return success();
}

SmallVector<HostRegionAttr> HostKernelOp::getRegions(bool outputs) {
  SmallVector<HostRegionAttr> out;
  abi::HostKernel kernel;
  if (!getParams() || !abi::lookupKernel(getKernel(), kernel))
    return out;
  const abi::ParamRole role =
      outputs ? abi::ParamRole::Out : abi::ParamRole::In;
  for (const abi::ParamInfo &p : abi::kernelInfo(kernel).params)
    if (p.role == role)
      if (Attribute value = getParams()->get(p.key))
        matchesKind(p, value, out);
  return out;
}

LogicalResult HostKernelOp::verify() {
  abi::HostKernel kernel;
  if (!abi::lookupKernel(getKernel(), kernel))
    return emitOpError() << "names no host kernel '" << getKernel()
                         << "' (known: " << abi::kernelNames() << ")";
  DictionaryAttr params =
      getParams() ? *getParams() : DictionaryAttr::get(getContext());
  for (NamedAttribute entry : params)
    if (!abi::lookupParam(kernel, entry.getName().getValue()))
      return emitOpError() << "host kernel '" << getKernel()
                           << "' has no parameter '"
                           << entry.getName().getValue() << "'";
  for (const abi::ParamInfo &p : abi::kernelInfo(kernel).params) {
    Attribute value = params.get(p.key);
    if (!value) {
      if (p.required)
        return emitOpError() << "host kernel '" << getKernel()
                             << "' needs parameter '" << p.key << "'";
      continue;
    }
    auto paramError = [&] {
      return emitOpError() << "host kernel '" << getKernel()
                           << "': parameter '" << p.key << "' ";
    };
    SmallVector<HostRegionAttr> regions;
    if (!matchesKind(p, value, regions))
      return paramError() << "must be "
                          << (p.kind == abi::ParamKind::Region
                                  ? "a #pccx.region"
                              : p.kind == abi::ParamKind::RegionList
                                  ? "a list of #pccx.region"
                                  : abi::paramKindName(p.kind));
    // A symbolic region must lie inside the host buffer it names.
    for (HostRegionAttr r : regions) {
      if (!r.getBuffer())
        continue;
      HostBufferOp buffer = lookupHostBuffer(*this, r.getBuffer());
      if (!buffer)
        return paramError() << "names " << r.getBuffer()
                            << ", which is not a pccx.host.buffer of the "
                               "program";
      // The region's own verifier bounded offset and span by 2^40 each.
      if (uint64_t(r.getOffset() + r.getSpanWords()) > buffer.getWords())
        return paramError()
               << "reaches word " << r.getOffset() + r.getSpanWords() << " of "
               << r.getBuffer() << ", which has " << buffer.getWords()
               << " words";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The target on the IR
//===----------------------------------------------------------------------===//

Attribute TargetAttr::parse(AsmParser &parser, Type) {
  std::string name;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseString(&name) || parser.parseGreater())
    return {};
  machine::Target target;
  if (!machine::lookupTarget(name, target)) {
    parser.emitError(loc) << "unknown target \"" << name
                          << "\" (known: " << machine::targetNames() << ")";
    return {};
  }
  return TargetAttr::get(parser.getContext(), target);
}

void TargetAttr::print(AsmPrinter &printer) const {
  printer << "<\"" << getProfile().name << "\">";
}

LogicalResult PccxDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() != kTargetAttrName)
    return success();
  if (!llvm::isa<ModuleOp>(op))
    return op->emitError() << "'" << kTargetAttrName
                           << "' belongs on the module";
  if (!llvm::isa<TargetAttr>(attr.getValue()))
    return op->emitError() << "'" << kTargetAttrName
                           << "' must be a #pccx.target, e.g. "
                              "#pccx.target<\"v002\">";
  return success();
}

machine::Target pccx::dialect::targetOf(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto module = dyn_cast<ModuleOp>(op))
      if (auto target = module->getAttrOfType<TargetAttr>(kTargetAttrName))
        return target.getTarget();
  return machine::kDefaultTarget;
}

void pccx::dialect::setTarget(ModuleOp module, machine::Target target) {
  module->setAttr(kTargetAttrName,
                  TargetAttr::get(module.getContext(), target));
}
