//===- IsaFuzzer.cpp - the ISA decoder and pccx-objdump --raw -------------===//
//
// Every 8 bytes are a word: decode() either refuses it or yields an
// instruction that disassembles, assembles back and re-encodes to the same
// word. The bytes as text go through --raw's token parser.
//
//===----------------------------------------------------------------------===//

#include "hw/isa/Isa.h"
#include "runtime/bundle/Objdump.h"

#include <cstring>
#include <string>

using namespace pccx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t at = 0; at + 8 <= size; at += 8) {
    uint64_t word;
    std::memcpy(&word, data + at, 8);
    isa::Instruction inst;
    std::string error;
    if (!isa::decode(word, inst, &error)) {
      if (error.empty())
        __builtin_trap();
      continue;
    }
    std::string text = isa::disassemble(inst);
    isa::Instruction back;
    uint64_t again = 0;
    if (!isa::assemble(text, back, &error) ||
        !isa::encode(back, again, &error) || again != word)
      __builtin_trap(); // disassembly must be exact
  }
  std::string line, error;
  std::string_view token(reinterpret_cast<const char *>(data), size);
  if (!bundle::formatRawWord(token, line, &error) && error.empty())
    __builtin_trap();
  return 0;
}
