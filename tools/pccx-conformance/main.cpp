//===- main.cpp - pccx-conformance ------------------------------*- C++ -*-===//
//
// Writes the per-instruction conformance suite for a hardware testbench, or
// checks a testbench's results against it. The work is done by
// runtime/conformance; this file reads the command line.
//
//===----------------------------------------------------------------------===//

#include "runtime/conformance/Conformance.h"
#include "tools/common/CommandLine.h"
#include "tools/common/GuardedMain.h"

#include <iostream>

namespace {

const char kHelp[] =
    R"(USAGE: pccx-conformance [--target T] [--seed N] -o DIR
       pccx-conformance --check DIR RESULTS [--max-ulp N]

Writes the conformance suite: one directory per vector, each a short
program with its initial L2, host memory, constant cache and weight stream,
and the final state the functional simulator computes for it in hardware
numerics (BF16 in L2). The vectors cover every opcode, every flag, every
CVO function, boundary lengths and addresses, and the traps (with the
expected message). The format is plain text and $readmemh hex
(docs/conformance.md), readable by a Verilator or cocotb testbench without
this project's code.

With --check, reads a testbench's results (RESULTS/NAME/vector.txt per
vector, with the same keys and file formats as the suite) and reports every
mismatch: the word and lane (element), expected and got, and the distance
in BF16 units in the last place.

OPTIONS:
  --target T      the target whose conventions the vectors follow (default
                  v002; known: %TARGETS%)
  --seed N        seed of the data values (default 1); the programs, shapes
                  and addresses do not depend on it, and the same seed
                  always writes the same files
  -o, --output DIR
                  the suite's directory (created if needed; files in it
                  are replaced)
  --check DIR RESULTS
                  compare RESULTS with the suite in DIR
  --max-ulp N     with --check: accept BF16 lanes up to N units in the last
                  place apart (default 0: bit-exact; NaNs match any NaN)
  -h, --help      show this help
  --version       print the version and exit

Exit status: 0 on success (--check: every vector passed), 1 on a mismatch,
a missing result or a usage error, 2 when the suite or the results
directory cannot be read.
)";

} // namespace

static int run(int argc, char **argv) {
  pccx::tools::CommandLine cl("pccx-conformance");
  pccx::conformance::GenerateOptions gen;
  pccx::conformance::CheckOptions chk;
  bool checking = false, haveMaxUlp = false;
  int64_t seed = int64_t(gen.seed);
  cl.help([] {
    std::string help = kHelp;
    help.replace(help.find("%TARGETS%"), 9, pccx::conformance::knownTargets());
    return help;
  });
  cl.text("--target", &gen.target);
  cl.count("--seed", &seed);
  cl.text("-o, --output", &gen.outDir);
  cl.values("--check", 2, [&](const std::vector<std::string> &dirs) {
    checking = true;
    chk.suiteDir = dirs[0];
    chk.resultsDir = dirs[1];
    return std::string();
  });
  int64_t maxUlp = 0;
  cl.count("--max-ulp", &maxUlp, &haveMaxUlp);
  int status = 0;
  if (!cl.parse(argc, argv, &status))
    return status;
  gen.seed = uint64_t(seed);
  if (maxUlp > 65535)
    return cl.fail("--max-ulp: " + std::to_string(maxUlp) +
                   " is more than a BF16 range (65535)");
  if (haveMaxUlp)
    chk.maxUlp = unsigned(maxUlp);
  std::string error;
  if (checking) {
    if (!gen.outDir.empty())
      return cl.fail("--check and -o cannot be combined");
    int status = pccx::conformance::check(chk, std::cout, &error);
    if (status == 2)
      cl.fail(error);
    return status;
  }
  if (haveMaxUlp)
    return cl.fail("--max-ulp applies only to --check");
  if (gen.outDir.empty())
    return cl.fail("no output directory (-o DIR) and no --check (see --help)");
  if (!pccx::conformance::generate(gen, &error))
    return cl.fail(error);
  return 0;
}

int main(int argc, char **argv) {
  return pccx::tools::guardedMain("pccx-conformance",
                                  [&] { return run(argc, argv); });
}
