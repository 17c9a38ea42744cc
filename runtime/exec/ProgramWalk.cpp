//===- ProgramWalk.cpp - patch a program and walk its segments ------------===//

#include "runtime/exec/ProgramWalk.h"

#include "hw/support/CheckedMath.h"

namespace pccx::exec {

bool patchProgram(const Program &program, std::vector<uint64_t> &words,
                  const std::function<int64_t(int64_t)> &rowPosition,
                  const std::function<int32_t(int64_t)> &rowToken,
                  std::string *why) {
  for (const PatchSite &p : program.patches) {
    const std::string field = isa::fieldInfo(p.field).name;
    const int64_t source = bundle::patchSourceValue(
        p.source, rowPosition(p.delta), rowToken(p.delta), p.window);
    int64_t value;
    if (!checkedMulAdd(source, p.scale, p.offset, &value)) {
      *why = "patching " + field + " of word " + std::to_string(p.word) +
             ": " + std::to_string(source) + " * " + std::to_string(p.scale) +
             " + " + std::to_string(p.offset) + " overflows 64 bits";
      return false;
    }
    if (value < 0 || uint64_t(value) > p.maxValue) {
      *why = "patching " + field + " of word " + std::to_string(p.word) +
             " to " + std::to_string(value) + ": " +
             (value < 0 ? std::string("negative")
                        : isa::checkField(p.field, uint64_t(value)));
      return false;
    }
    const uint64_t mask = uint64_t(p.maxValue) << p.lo;
    uint64_t &w = words[p.word];
    w = (w & ~mask) | (uint64_t(value) << p.lo);
  }
  return true;
}

} // namespace pccx::exec
