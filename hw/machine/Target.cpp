//===- Target.cpp - target profiles of the v002 words ---------------------===//

#include "hw/machine/Target.h"

#include "hw/machine/MachineModel.h"

#include "hw/support/Format.h"
#include "hw/support/Names.h"

namespace pccx::machine {

namespace {
const TargetProfile kProfiles[] = {
#define PCCX_TARGET(Id, Name, Swapped, ShapeProduct, L2ToL2, Aux, Elements,    \
                    MaxLength, GemvWb, Gemm, Cvo, L2Words, ConstEntries,       \
                    WindowWords, Summary)                                      \
  {Target::Id, Name,    Swapped,      ShapeProduct, L2ToL2,                    \
   Aux,        Elements, MaxLength,   GemvWb,       Gemm,                      \
   Cvo,        L2Words, ConstEntries, WindowWords,  Summary},
#include "Targets.def"
};

const char *profileName(const TargetProfile &p) { return p.name; }
} // namespace

const TargetProfile &targetProfile(Target target) {
  return kProfiles[unsigned(target)];
}

bool lookupTarget(std::string_view name, Target &target) {
  const TargetProfile *p = support::findByName(kProfiles, name, profileName);
  if (p)
    target = p->id;
  return p;
}

std::string targetNames() { return support::joinNames(kProfiles, profileName); }

std::string missingCapability(const isa::Instruction &inst, Target target) {
  const TargetProfile &p = targetProfile(target);
  if (inst.opcode == isa::Opcode::Gemv && !p.gemvWriteback)
    return formatString("target %s has no GEMV result write-back path (a GEMV "
                        "result cannot reach L2)",
                        p.name);
  if (inst.opcode == isa::Opcode::Cvo &&
      inst.get(isa::Field::Cvo_length) > p.cvoMaxLength)
    return formatString("length %u exceeds the %u elements of a CVO on "
                        "target %s",
                        inst.get(isa::Field::Cvo_length), p.cvoMaxLength,
                        p.name);
  return "";
}

std::string wrongResult(const isa::Instruction &inst, Target target) {
  const TargetProfile &p = targetProfile(target);
  if (inst.opcode == isa::Opcode::Gemm && !p.gemmComputes)
    return formatString(
        "the %s GEMM stores four words of zeros (it reads shape_ptr as an "
        "element count and never reads size_ptr; docs/isa-semantics.md §13)",
        p.name);
  if (inst.opcode == isa::Opcode::Cvo && !p.cvoComputes)
    return formatString(
        "the %s CVO runs with the previous CVO's parameters and none of its "
        "SFU functions gives the documented result (docs/isa-semantics.md "
        "§13)",
        p.name);
  if (inst.opcode == isa::Opcode::Memcpy && !p.memcpyL2ToL2 &&
      !inst.get(isa::Field::Memcpy_from_device) &&
      !inst.get(isa::Field::Memcpy_to_device))
    return formatString("target %s has no L2-to-L2 MEMCPY (from_device = "
                        "to_device = 0 copies L2 to the host window)",
                        p.name);
  return "";
}

std::string refusedByCompiler(const isa::Instruction &inst, Target target) {
  std::string why = missingCapability(inst, target);
  return why.empty() ? wrongResult(inst, target) : why;
}

std::string targetNote(const isa::Instruction &inst, Target target) {
  using isa::Field;
  const TargetProfile &p = targetProfile(target);
  std::string note;
  switch (inst.opcode) {
  case isa::Opcode::Gemv:
  case isa::Opcode::Gemm:
    if (p.matmulPointersSwapped)
      note = formatString("fmap_shape[%u] weight_shape[%u]",
                          inst.get(Field::Matmul_shape_ptr_addr),
                          inst.get(Field::Matmul_size_ptr_addr));
    if (!missingCapability(inst, target).empty())
      note += std::string(note.empty() ? "" : ", ") + "no result write-back";
    break;
  case isa::Opcode::Memcpy: {
    bool from = inst.get(Field::Memcpy_from_device);
    bool to = inst.get(Field::Memcpy_to_device);
    if (!p.memcpyL2ToL2 && !(from && !to))
      note = "l2_to_host";
    else if (!p.memcpyL2ToL2)
      note = "host_to_l2";
    if (p.memcpyShapeProduct)
      note += formatString("%sceil(a*b*c/8) words of fmap_shape[%u]",
                           note.empty() ? "" : ", ",
                           inst.get(Field::Memcpy_shape_ptr_addr));
    if (!p.memcpyAuxAddr)
      note += std::string(note.empty() ? "" : ", ") +
              "host at the DMA page, aux_addr ignored";
    break;
  }
  case isa::Opcode::Cvo:
    if (p.cvoElementAddresses) {
      uint32_t src = inst.get(Field::Cvo_src_addr);
      uint32_t dst = inst.get(Field::Cvo_dst_addr);
      note = formatString("elements: src word 0x%05x", src >> 3);
      if (src & 7)
        note += formatString(" lane %u", src & 7);
      note += formatString(", dst word 0x%05x", dst >> 3);
      if (dst & 7)
        note += formatString(" lane %u", dst & 7);
    }
    break;
  case isa::Opcode::Memset:
    break;
  }
  return note.empty() ? note : std::string(p.name) + ": " + note;
}

} // namespace pccx::machine
