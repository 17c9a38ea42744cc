//===- SafetensorsFuzzer.cpp - a .safetensors file from arbitrary bytes ---===//
//
// The header parser and the tensor table: whatever the bytes, open() either
// fails with a message or yields tensors whose data lies inside the file
// (read back here, so ASan sees any out-of-bounds view).
//
//===----------------------------------------------------------------------===//

#include "runtime/import/Safetensors.h"
#include "test/fuzz/FuzzSupport.h"

#include <vector>

using namespace pccx::import;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path =
      pccx::fuzz::writeScratch("model.safetensors", data, size);
  std::string error;
  auto file = SafetensorsFile::open(path, &error);
  if (!file) {
    if (error.empty())
      __builtin_trap(); // a failure must say why
    return 0;
  }
  std::vector<float> values;
  for (const auto &[name, tensor] : file->tensors()) {
    uint64_t n = tensor.numElements();
    uint64_t take = n < 64 ? n : 64;
    values.resize(size_t(take));
    if (take && !convertToFloat(tensor, n - take, take, values.data(), &error))
      __builtin_trap(); // in range by construction
  }
  return 0;
}
