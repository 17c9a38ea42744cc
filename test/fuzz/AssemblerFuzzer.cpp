//===- AssemblerFuzzer.cpp - pccx-as source text --------------------------===//
//
// assembleText either reports errors or yields programs; accepted programs
// are added to a bundle writer (patch points checked) without crashing.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/Assembler.h"
#include "runtime/bundle/Bundle.h"

#include <string>
#include <vector>

using namespace pccx::bundle;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::vector<AssembledProgram> programs;
  std::vector<AsmDiagnostic> errors;
  if (!assembleText(text, "program.main", programs, errors)) {
    if (errors.empty())
      __builtin_trap();
    return 0;
  }
  BundleWriter writer;
  std::string error;
  (void)addAssembledSections(programs, nlohmann::json::object(), writer,
                             &error);
  return 0;
}
