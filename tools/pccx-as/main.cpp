//===- main.cpp - pccx-as ---------------------------------------*- C++ -*-===//
//
// Assembles a hand-written v002 program into a .pccx bundle. The work is
// done by runtime/bundle/Assembler.h; this file only reads the command line.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/Assembler.h"
#include "tools/common/CommandLine.h"
#include "tools/common/GuardedMain.h"

#include <cstring>
#include <iostream>

namespace {

const char kHelp[] =
    R"(USAGE: pccx-as INPUT.s -o OUT.pccx [--program NAME] [--manifest-json FILE]
               [--weights FILE] [--target T]

Assembles a v002 program written in the syntax pccx-objdump prints into a
.pccx bundle holding a manifest and one program section per program.

SOURCE:
  one instruction per line, as isa::disassemble prints it, e.g.
      gemv dest_reg=0x00100 src_addr=0x00000 flags=accm|w_scale shape_ptr_addr=1
  fields may come in any order; omitted fields are zero; numbers are
  decimal or 0x-hex; enum values and flags by name (flags joined by '|').
  ; text          comment; after an instruction it becomes that word's
                  annotation in the manifest (shown by pccx-objdump)
  # text          comment, never kept
  .program NAME   start another program section, "program.NAME" (a NAME
                  already starting with "program." is used as is)
  .word VALUE     emit a raw 64-bit word without checking it

OPTIONS:
  -o FILE               the bundle to write (atomically: on any error no
                        file is created and an existing one is kept)
  --program NAME        section for instructions before the first .program
                        directive (default: program.main)
  --manifest-json FILE  JSON object to start the manifest from (memory_map,
                        patch_points, segments, ...); patch points are
                        checked against the assembled words
  --weights FILE        store FILE's bytes as the "weights" section (the
                        records a manifest's weight_records point into)
  --target T            record target profile T (v002 or v002-rtl) in the
                        manifest; words T cannot run (a GEMV on v002-rtl)
                        are refused. Without it a manifest's own "target"
                        is checked the same way (none means v002)
  -h, --help            show this help
  --version             print the version and exit

Errors are reported as "INPUT.s:LINE: message"; the exit status is then 1.
)";

} // namespace

static int run(int argc, char **argv) {
  pccx::bundle::AsOptions o;
  pccx::tools::CommandLine cl("pccx-as");
  cl.help([] { return std::string(kHelp); });
  cl.positional("input file", &o.input);
  cl.text("-o", &o.output);
  cl.text("--program", &o.program);
  cl.text("--manifest-json", &o.manifestJson);
  cl.text("--weights", &o.weights);
  cl.text("--target", &o.target);
  int status = 0;
  if (!cl.parse(argc, argv, &status))
    return status;
  return pccx::bundle::runAssembler(o, std::cerr);
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-as", [&] { return run(argc, argv); });
}
