//===- Conformance.h - per-instruction conformance vectors ------*- C++ -*-===//
//
// Generates the conformance suite a hardware testbench runs (short programs
// with their initial and expected final machine state, computed by the
// functional simulator in hardware numerics) and checks a testbench's
// results against it. The on-disk format is docs/conformance.md; it is plain
// text and $readmemh hex so that a Verilator or cocotb bench needs none of
// this project's code.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_CONFORMANCE_CONFORMANCE_H
#define PCCX_RUNTIME_CONFORMANCE_CONFORMANCE_H

#include <array>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace pccx::conformance {

/// Version of the directory format (docs/conformance.md).
constexpr unsigned kFormatVersion = 1;

/// One 128-bit word as eight 16-bit lanes, lane 0 = bits [15:0].
using Word = std::array<uint16_t, 8>;
/// Sparse memory: word address -> contents; absent words are zero.
using SparseMemory = std::map<uint32_t, Word>;

/// A constant-cache entry (bank 0 fmap_shape, 1 weight_shape).
struct ConstEntry {
  unsigned bank = 0, entry = 0;
  uint16_t a = 0, b = 0, c = 0;
  bool operator==(const ConstEntry &o) const {
    return bank == o.bank && entry == o.entry && a == o.a && b == o.b &&
           c == o.c;
  }
};

/// The machine state a vector starts from or ends in.
struct MachineState {
  SparseMemory l2;
  SparseMemory host;
  std::vector<ConstEntry> consts; ///< written entries, by bank then entry
  bool emaxArmed = false;
  uint32_t emaxBits = 0; ///< fp32 bits, meaningful when armed
  bool scalarValid = false;
  uint32_t scalarBits = 0; ///< fp32 bits, meaningful when valid
  uint64_t weightPending = 0;
};

/// One conformance vector: a program, its initial state, and what the
/// simulator computed from them.
struct Vector {
  std::string name;
  std::string covers; ///< one line: what the vector exercises
  std::vector<uint64_t> program;
  uint64_t hostWords = 0;
  uint64_t hostWindowBase = 0;
  std::vector<uint8_t> weights; ///< weight stream bytes, a multiple of 16
  MachineState initial;
  // Expected outcome.
  bool traps = false;
  uint64_t trapIndex = 0; ///< instruction that traps (when traps)
  std::string trapMessage;
  MachineState expected;
};

struct GenerateOptions {
  std::string target = "v002";
  uint64_t seed = 1;
  std::string outDir;
};

/// Names of the targets the generator knows, comma separated.
std::string knownTargets();

/// Builds every vector of the suite and runs it on the simulator.
bool buildSuite(const GenerateOptions &options, std::vector<Vector> &vectors,
                std::string *error);

/// Builds the suite and writes it under options.outDir (created if needed).
bool generate(const GenerateOptions &options, std::string *error);

struct CheckOptions {
  std::string suiteDir;
  std::string resultsDir;
  /// BF16 lanes may differ by this many units in the last place.
  unsigned maxUlp = 0;
};

/// Compares every vector's expected final state with the testbench's
/// results; prints one line per vector and one per mismatch to `out`.
/// Returns the process exit status: 0 all passed, 1 any mismatch or
/// missing result, 2 the suite or a result could not be read (message in
/// *error).
int check(const CheckOptions &options, std::ostream &out, std::string *error);

/// Distance in BF16 units in the last place between two encodings (NaNs
/// are equal to each other and infinitely far from numbers).
uint32_t bf16UlpDistance(uint16_t a, uint16_t b);

} // namespace pccx::conformance

#endif
