//===- main.cpp - pccx-objdump ----------------------------------*- C++ -*-===//
//
// Shows a .pccx bundle, or decodes raw instruction words. The work is done
// by runtime/bundle/Objdump.h; this file only reads the command line.
//
//===----------------------------------------------------------------------===//

#include "runtime/reference/ExportEffective.h"
#include "runtime/bundle/Objdump.h"
#include "tools/common/CommandLine.h"
#include "tools/common/GuardedMain.h"

#include <cstring>
#include <iostream>

namespace {

const char kHelp[] =
    R"(USAGE: pccx-objdump [options] FILE.pccx...
       pccx-objdump --raw [--target T] WORD...

Shows a .pccx bundle. Every header field, table entry and (unless
--no-verify) section checksum is validated first; a bundle compiled for
another machine model is still shown, with a warning.

OPTIONS:
  --headers          the file header: format and ISA versions, machine
                     digest and whether it matches this build
  --sections         the section table: name, kind, offset, size, checksum
                     and verification status
  --manifest         the manifest's memory map, patch points and segments
  --manifest-json    the complete manifest JSON (not included in --all)
  --info             the model card: model and configuration, compile
                     options, compiler, target, sizes, weight bytes per
                     decode token, tokenizer and chat template (not
                     included in --all)
  -d, --disassemble  every program section as assembly, one line per word:
                     index, hex word, disassembly, then "; annotation"
                     from the manifest and any patch point on that word
  --all              --headers --sections --manifest --disassemble
                     (the default when none of these is given)
  --no-verify        skip checksum verification (status shows "unchecked")
  --export-effective-weights DIR
                     write DIR as a Hugging Face checkpoint (config.json,
                     float32 safetensors, the original tensor names) holding
                     exactly the weights the bundle computes with, then
                     exit (one bundle only)
  --raw              decode the 64-bit hex words given as arguments (0x
                     prefix optional, '_' allowed between digits) and print
                     one line each
  --target T         with --raw: note what the fields mean on target T
                     (v002, the default, or v002-rtl); a bundle's target
                     is read from its manifest, shown in --headers, and
                     noted on every word whose fields mean something else
                     there (e.g. "; v002-rtl: elements: src word 0x00010")
  -h, --help         show this help
  --version          print the version and exit

Exit status is 1 if a bundle cannot be read or is invalid, or if any word
(raw or in a program section) does not decode; 0 otherwise.
)";

} // namespace

static int run(int argc, char **argv) {
  pccx::bundle::ObjdumpOptions o;
  std::string exportDir;
  std::vector<std::string> positional;
  pccx::tools::CommandLine cl("pccx-objdump");
  cl.help([] { return std::string(kHelp); });
  cl.positionals("input file", &positional);
  cl.flag("--headers", &o.headers);
  cl.flag("--sections", &o.sections);
  cl.flag("--manifest", &o.manifest);
  cl.flag("--info", &o.info);
  cl.flag("--manifest-json", &o.manifestJson);
  cl.flag("-d, --disassemble", &o.disassemble);
  cl.flag("--all",
          [&] { o.headers = o.sections = o.manifest = o.disassemble = true; });
  cl.flag("--no-verify", [&] { o.verify = false; });
  cl.flag("--raw", &o.raw);
  cl.value("--target", [&](const std::string &name) {
    if (!pccx::machine::lookupTarget(name, o.target))
      return "--target needs one of: " + pccx::machine::targetNames();
    return std::string();
  });
  cl.text("--export-effective-weights", &exportDir);
  int status = 0;
  if (!cl.parse(argc, argv, &status))
    return status;
  if (!exportDir.empty()) {
    if (positional.size() != 1) {
      std::cerr << "pccx-objdump: error: --export-effective-weights takes "
                   "exactly one bundle\n";
      return 1;
    }
    std::string error;
    auto bundle = pccx::bundle::Bundle::open(positional[0], &error);
    if (!bundle ||
        !pccx::reference::exportEffectiveWeights(*bundle, exportDir, &error,
                                                 /*overwrite=*/false,
                                                 /*overwriteFlag=*/nullptr)) {
      std::cerr << "pccx-objdump: error: " << error << "\n";
      return 1;
    }
    return 0;
  }
  (o.raw ? o.words : o.files) = std::move(positional);
  return pccx::bundle::runObjdump(o, std::cout, std::cerr);
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-objdump",
                                  [&] { return run(argc, argv); });
}
