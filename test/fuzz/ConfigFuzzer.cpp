//===- ConfigFuzzer.cpp - config.json from arbitrary text -----------------===//
//
// parseGemma3nConfig either refuses the text with a message or returns a
// validated config whose derived tensor shapes are computed without
// overflow and whose written JSON form is accepted again.
//
//===----------------------------------------------------------------------===//

#include "runtime/import/Gemma3nConfig.h"

#include <string>

using namespace pccx::import;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  Gemma3nTextConfig config;
  std::string error;
  if (!parseGemma3nConfig(text, &config, &error)) {
    if (error.empty())
      __builtin_trap();
    return 0;
  }
  size_t tensors = expectedTensors(config, "model.").size();
  (void)tensors;
  Gemma3nTextConfig again;
  if (!parseGemma3nConfig(config.toJson(), &again, &error))
    __builtin_trap(); // what was accepted must be written readably
  return 0;
}
