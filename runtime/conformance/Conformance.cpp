//===- Conformance.cpp - writing and checking conformance vectors ---------===//
//
// The directory format of docs/conformance.md: an index, then one directory
// per vector with a key/value manifest (vector.txt), $readmemh hex files for
// program, memories and the weight stream, and plain text for the constant
// cache. A testbench's results use the same manifest keys.
//
//===----------------------------------------------------------------------===//

#include "runtime/conformance/Conformance.h"

#include "hw/support/InputFile.h"

#include "hw/isa/Isa.h"
#include "hw/numerics/HalfFloat.h"
#include "hw/support/Format.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace pccx::conformance {

namespace {

constexpr unsigned kLanes = 8;
/// Mismatch lines printed per vector before the rest are only counted.
constexpr unsigned kMaxReported = 16;

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

std::string wordHex(const Word &w) {
  std::string s;
  for (unsigned l = kLanes; l-- > 0;)
    s += formatString("%04x", w[l]);
  return s;
}

/// $readmemh text: "@ADDR" where a run of words starts, one word a line.
std::string memoryHex(const SparseMemory &m, const char *what) {
  std::string s = std::string("// ") + what +
                  ": 128-bit words, lane 7 first; words not listed are zero\n";
  bool first = true;
  uint32_t next = 0;
  for (const auto &[addr, w] : m) {
    if (first || addr != next)
      s += formatString("@%05x\n", addr);
    s += wordHex(w) + "\n";
    next = addr + 1;
    first = false;
  }
  return s;
}

std::string programHex(const std::vector<uint64_t> &program) {
  std::string s = "// instruction words in program order, one 64-bit word a "
                  "line\n";
  for (uint64_t w : program) {
    isa::Instruction inst;
    std::string text = isa::decode(w, inst, nullptr) ? isa::disassemble(inst)
                                                     : "(undecodable)";
    s += formatString("%016llx", (unsigned long long)w) + "  // " + text + "\n";
  }
  return s;
}

std::string weightsHex(const std::vector<uint8_t> &bytes) {
  std::string s = "// weight stream: one 16-byte beat a line as a 128-bit "
                  "value, stream byte 0 in bits [7:0]\n";
  for (size_t i = 0; i < bytes.size(); i += 16) {
    for (size_t b = 16; b-- > 0;)
      s += formatString("%02x", i + b < bytes.size() ? bytes[i + b] : 0);
    s += "\n";
  }
  return s;
}

const char *bankName(unsigned bank) {
  const char *n = isa::enumName(isa::Field::Memset_dest_cache, bank);
  return n ? n : "?";
}

std::string constsText(const std::vector<ConstEntry> &consts) {
  std::string s = "// bank entry a b c (decimal); entries not listed were "
                  "never written\n";
  for (const ConstEntry &c : consts)
    s += formatString("%s %u %u %u %u\n", bankName(c.bank), c.entry, c.a, c.b,
                      c.c);
  return s;
}

mode_t currentUmask() {
  mode_t m = ::umask(0);
  ::umask(m);
  return m;
}

/// The files of one vector directory (docs/conformance.md).
const char *const kVectorFiles[] = {
    "vector.txt",    "program.hex",     "weights.hex",
    "init_l2.hex",   "init_host.hex",   "init_consts.txt",
    "expect_l2.hex", "expect_host.hex", "expect_consts.txt"};

bool makeDir(const std::string &path, std::string *error) {
  if (::mkdir(path.c_str(), 0777) == 0)
    return true;
  *error = "cannot create directory '" + path + "': " + std::strerror(errno);
  return false;
}

/// Files go into a fresh temporary directory that is renamed into place
/// whole, so they are written directly (no per-file temp and sync).
bool writeText(const std::string &path, const std::string &text,
               std::string *error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    *error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// The lines of `text`, without their ends (\n or \r\n).
std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    out.push_back(line);
  }
  return out;
}

/// Removes a suite directory this tool wrote: the index and the known files
/// of the vectors it lists (or of `names`). Anything else stays.
void removeSuite(const std::string &dir, std::vector<std::string> names) {
  std::string index, ignored;
  if (support::readInputFile(dir + "/index.txt", support::kMaxDataFileBytes,
                             &index, &ignored))
    for (const std::string &line : lines(index))
      if (line.compare(0, 7, "vector ") == 0)
        names.push_back(line.substr(7));
  for (const std::string &name : names) {
    if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos)
      continue;
    std::string vdir = dir + "/" + name;
    for (const char *f : kVectorFiles)
      ::unlink((vdir + "/" + f).c_str());
    ::rmdir(vdir.c_str());
  }
  ::unlink((dir + "/index.txt").c_str());
  ::rmdir(dir.c_str());
}

/// Whether `dir` holds a suite this tool wrote, or nothing.
bool replaceable(const std::string &dir, bool &empty) {
  empty = false;
  std::string index, ignored;
  if (support::readInputFile(dir + "/index.txt", support::kMaxDataFileBytes,
                             &index, &ignored) &&
      !index.empty())
    return index.compare(0, 24, "# pccx conformance suite") == 0;
  if (::rmdir(dir.c_str()) == 0) { // empty: gone, recreated by the rename
    empty = true;
    return true;
  }
  return false;
}

std::string bitsHex(uint32_t bits) { return formatString("0x%08x", bits); }

bool writeVector(const std::string &dir, const std::string &target,
                 const Vector &v, std::string *error) {
  if (!makeDir(dir, error))
    return false;
  const std::string p = dir + "/";
  if (!writeText(p + "program.hex", programHex(v.program), error) ||
      !writeText(p + "weights.hex", weightsHex(v.weights), error) ||
      !writeText(p + "init_l2.hex", memoryHex(v.initial.l2, "initial L2"),
                 error) ||
      !writeText(p + "init_host.hex",
                 memoryHex(v.initial.host, "initial host memory"), error) ||
      !writeText(p + "init_consts.txt", constsText(v.initial.consts), error) ||
      !writeText(p + "expect_l2.hex", memoryHex(v.expected.l2, "final L2"),
                 error) ||
      !writeText(p + "expect_host.hex",
                 memoryHex(v.expected.host, "final host memory"), error) ||
      !writeText(p + "expect_consts.txt", constsText(v.expected.consts), error))
    return false;
  const MachineState &e = v.expected;
  std::string m = "# pccx conformance vector (docs/conformance.md)\n";
  m += formatString("format %u\n", kFormatVersion);
  m += "name " + v.name + "\n";
  m += "target " + target + "\n";
  m += "covers " + v.covers + "\n";
  m += "numerics hardware\n";
  m += formatString("program program.hex %zu\n", v.program.size());
  m += formatString("host_words %llu\n", (unsigned long long)v.hostWords);
  m += formatString("host_window_base 0x%llx\n",
                    (unsigned long long)v.hostWindowBase);
  m += formatString("weights weights.hex %zu\n", v.weights.size());
  m += "init_l2 init_l2.hex\n";
  m += "init_host init_host.hex\n";
  m += "init_consts init_consts.txt\n";
  if (v.traps)
    m += formatString("expect_status trap %llu\n",
                      (unsigned long long)v.trapIndex) +
         "expect_trap_message " + v.trapMessage + "\n";
  else
    m += "expect_status ok\n";
  m += "expect_l2 expect_l2.hex\n";
  m += "expect_host expect_host.hex\n";
  m += "expect_consts expect_consts.txt\n";
  m += e.emaxArmed ? "expect_emax armed " + bitsHex(e.emaxBits) + "\n"
                   : std::string("expect_emax unarmed\n");
  m += e.scalarValid ? "expect_scalar valid " + bitsHex(e.scalarBits) + "\n"
                     : std::string("expect_scalar invalid\n");
  m += formatString("expect_weight_pending %llu\n",
                    (unsigned long long)e.weightPending);
  return writeText(p + "vector.txt", m, error);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// A manifest: key -> rest of the line.
using Manifest = std::map<std::string, std::string>;

bool readManifest(const std::string &path, Manifest &m, std::string *error) {
  std::string text;
  if (!support::readInputFile(path, support::kMaxDataFileBytes, &text, error))
    return false;
  unsigned n = 0;
  for (const std::string &line : lines(text)) {
    ++n;
    if (line.empty() || line[0] == '#')
      continue;
    size_t sp = line.find(' ');
    std::string key = line.substr(0, sp);
    std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (!m.emplace(key, value).second) {
      *error = formatString("%s:%u: key '%s' given twice", path.c_str(), n,
                            key.c_str());
      return false;
    }
  }
  return true;
}

/// The first word of a manifest value (a file name, a status).
std::string firstToken(const std::string &value) {
  return value.substr(0, value.find(' '));
}

bool parseHexWord(const std::string &tok, Word &w) {
  if (tok.empty() || tok.size() > 32)
    return false;
  w.fill(0);
  unsigned pos = 0; // hex digits from the right
  for (size_t i = tok.size(); i-- > 0; ++pos) {
    unsigned d;
    if (!hexDigitValue(tok[i], &d))
      return false;
    w[pos / 4] |= uint16_t(d << (4 * (pos % 4)));
  }
  return true;
}

/// Reads $readmemh text into a sparse memory ("//" comments, "@addr").
bool readMemoryHex(const std::string &path, SparseMemory &m,
                   std::string *error) {
  std::string text;
  if (!support::readInputFile(path, support::kMaxDataFileBytes, &text, error))
    return false;
  uint64_t addr = 0;
  unsigned n = 0;
  for (std::string line : lines(text)) {
    ++n;
    size_t c = line.find("//");
    if (c != std::string::npos)
      line.resize(c);
    std::istringstream in(line);
    for (std::string tok; in >> tok;) {
      if (tok[0] == '@') {
        char *end = nullptr;
        errno = 0;
        unsigned long long a = std::strtoull(tok.c_str() + 1, &end, 16);
        if (tok.size() < 2 || *end || errno || a > 0xFFFFFFFFull) {
          *error = formatString("%s:%u: bad address '%s'", path.c_str(), n,
                                tok.c_str());
          return false;
        }
        addr = a;
        continue;
      }
      Word w;
      if (!parseHexWord(tok, w)) {
        *error = formatString("%s:%u: '%s' is not a 128-bit hex word",
                              path.c_str(), n, tok.c_str());
        return false;
      }
      if (addr > 0xFFFFFFFFull) {
        *error = formatString("%s:%u: address past 2^32", path.c_str(), n);
        return false;
      }
      bool zero =
          std::all_of(w.begin(), w.end(), [](uint16_t x) { return !x; });
      if (zero)
        m.erase(uint32_t(addr));
      else
        m[uint32_t(addr)] = w;
      ++addr;
    }
  }
  return true;
}

bool readConsts(const std::string &path, std::vector<ConstEntry> &out,
                std::string *error) {
  std::string text;
  if (!support::readInputFile(path, support::kMaxDataFileBytes, &text, error))
    return false;
  unsigned n = 0;
  for (std::string line : lines(text)) {
    ++n;
    size_t c = line.find("//");
    if (c != std::string::npos)
      line.resize(c);
    std::istringstream in(line);
    std::string bank;
    if (!(in >> bank))
      continue;
    ConstEntry e;
    unsigned long entry, a, b, cc;
    std::string extra;
    uint32_t bankValue;
    if (!isa::lookupEnum(isa::Field::Memset_dest_cache, bank, bankValue) ||
        !(in >> entry >> a >> b >> cc) || (in >> extra) || entry >= 64 ||
        a > 0xFFFF || b > 0xFFFF || cc > 0xFFFF) {
      *error = formatString("%s:%u: expected 'fmap_shape|weight_shape ENTRY A "
                            "B C' with ENTRY < 64 and 16-bit values",
                            path.c_str(), n);
      return false;
    }
    e.bank = bankValue;
    e.entry = unsigned(entry);
    e.a = uint16_t(a);
    e.b = uint16_t(b);
    e.c = uint16_t(cc);
    out.push_back(e);
  }
  std::sort(out.begin(), out.end(),
            [](const ConstEntry &x, const ConstEntry &y) {
              return x.bank != y.bank ? x.bank < y.bank : x.entry < y.entry;
            });
  return true;
}

//===----------------------------------------------------------------------===//
// Checking
//===----------------------------------------------------------------------===//

int32_t ordered(uint16_t b) {
  return (b & 0x8000) ? -int32_t(b & 0x7FFF) : int32_t(b);
}
bool isNaN(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F); }

std::string bf16Text(uint16_t b) {
  return formatString("0x%04x (%.9g)", b, double(hw::bf16ToFloat(b)));
}

/// Collects the mismatches of one vector.
struct Report {
  unsigned count = 0;
  std::vector<std::string> lines;
  void add(const std::string &line) {
    if (count++ < kMaxReported)
      lines.push_back(line);
  }
};

void compareMemory(const char *space, const SparseMemory &expected,
                   const SparseMemory &got, unsigned maxUlp, Report &r) {
  std::set<uint32_t> addrs;
  for (const auto &kv : expected)
    addrs.insert(kv.first);
  for (const auto &kv : got)
    addrs.insert(kv.first);
  const Word zero{};
  for (uint32_t a : addrs) {
    auto e = expected.find(a), g = got.find(a);
    const Word &ew = e == expected.end() ? zero : e->second;
    const Word &gw = g == got.end() ? zero : g->second;
    for (unsigned l = 0; l < kLanes; ++l) {
      uint32_t d = bf16UlpDistance(ew[l], gw[l]);
      if (d <= maxUlp)
        continue;
      std::string dist = d == UINT32_MAX ? std::string("NaN against a number")
                                         : formatString("%u ulp", d);
      r.add(formatString("  %s word 0x%05x lane %u (element %llu): expected ",
                         space, a, l, (unsigned long long)a * kLanes + l) +
            bf16Text(ew[l]) + ", got " + bf16Text(gw[l]) + ", " + dist);
    }
  }
}

std::string constText(const ConstEntry &c) {
  return formatString("(%u, %u, %u)", c.a, c.b, c.c);
}

void compareConsts(const std::vector<ConstEntry> &expected,
                   const std::vector<ConstEntry> &got, Report &r) {
  std::map<std::pair<unsigned, unsigned>, ConstEntry> e, g;
  for (const ConstEntry &c : expected)
    e[{c.bank, c.entry}] = c;
  for (const ConstEntry &c : got)
    g[{c.bank, c.entry}] = c;
  std::set<std::pair<unsigned, unsigned>> keys;
  for (const auto &kv : e)
    keys.insert(kv.first);
  for (const auto &kv : g)
    keys.insert(kv.first);
  for (const auto &k : keys) {
    auto ei = e.find(k), gi = g.find(k);
    std::string where =
        formatString("  constant %s entry %u: ", bankName(k.first), k.second);
    if (ei == e.end())
      r.add(where + "expected never written, got " + constText(gi->second));
    else if (gi == g.end())
      r.add(where + "expected " + constText(ei->second) + ", got none");
    else if (!(ei->second == gi->second))
      r.add(where + "expected " + constText(ei->second) + ", got " +
            constText(gi->second));
  }
}

/// Compares one optional scalar key ("expect_emax armed 0x...").
void compareKey(const Manifest &e, const Manifest &g, const char *key,
                Report &r, std::vector<std::string> &unreported) {
  auto gi = g.find(key);
  if (gi == g.end()) {
    unreported.push_back(key);
    return;
  }
  auto ei = e.find(key);
  std::string ev = ei == e.end() ? "" : ei->second;
  if (ev != gi->second)
    r.add(std::string("  ") + key + ": expected '" + ev + "', got '" +
          gi->second + "'");
}

bool loadMemory(const std::string &dir, const Manifest &m, const char *key,
                SparseMemory &out, std::string *error) {
  auto it = m.find(key);
  return it == m.end() ||
         readMemoryHex(dir + "/" + firstToken(it->second), out, error);
}

bool loadConsts(const std::string &dir, const Manifest &m, const char *key,
                std::vector<ConstEntry> &out, std::string *error) {
  auto it = m.find(key);
  return it == m.end() ||
         readConsts(dir + "/" + firstToken(it->second), out, error);
}

/// Checks one vector; false with *error when the suite's own files are bad.
bool checkVector(const std::string &name, const std::string &suiteDir,
                 const std::string &resultDir, unsigned maxUlp,
                 std::ostream &out, bool &passed, std::string *error) {
  Manifest e;
  if (!readManifest(suiteDir + "/vector.txt", e, error))
    return false;
  SparseMemory el2, ehost;
  std::vector<ConstEntry> econsts;
  if (!loadMemory(suiteDir, e, "expect_l2", el2, error) ||
      !loadMemory(suiteDir, e, "expect_host", ehost, error) ||
      !loadConsts(suiteDir, e, "expect_consts", econsts, error))
    return false;

  Report r;
  std::vector<std::string> unreported;
  Manifest g;
  std::string why;
  if (!readManifest(resultDir + "/vector.txt", g, &why)) {
    r.add("  no usable results: " + why);
  } else {
    if (!g.count("expect_status"))
      r.add("  results report no expect_status");
    else if (g.at("expect_status") != e["expect_status"])
      r.add("  status: expected '" + e["expect_status"] + "', got '" +
            g.at("expect_status") + "'" +
            (e.count("expect_trap_message")
                 ? " (expected trap: " + e["expect_trap_message"] + ")"
                 : std::string()));
    SparseMemory gl2, ghost;
    std::vector<ConstEntry> gconsts;
    if (!g.count("expect_l2"))
      r.add("  results report no expect_l2 (the final L2 is required)");
    else if (!loadMemory(resultDir, g, "expect_l2", gl2, &why))
      r.add("  unreadable results: " + why);
    else
      compareMemory("l2", el2, gl2, maxUlp, r);
    if (!g.count("expect_host"))
      unreported.push_back("expect_host");
    else if (!loadMemory(resultDir, g, "expect_host", ghost, &why))
      r.add("  unreadable results: " + why);
    else
      compareMemory("host", ehost, ghost, maxUlp, r);
    if (!g.count("expect_consts"))
      unreported.push_back("expect_consts");
    else if (!loadConsts(resultDir, g, "expect_consts", gconsts, &why))
      r.add("  unreadable results: " + why);
    else
      compareConsts(econsts, gconsts, r);
    for (const char *key :
         {"expect_emax", "expect_scalar", "expect_weight_pending"})
      compareKey(e, g, key, r, unreported);
  }

  passed = r.count == 0;
  out << (passed ? "PASS " : "FAIL ") << name;
  if (!passed)
    out << formatString(" (%u mismatch%s)", r.count, r.count == 1 ? "" : "es");
  if (!unreported.empty()) {
    out << "  [not reported:";
    for (const std::string &k : unreported)
      out << " " << k;
    out << "]";
  }
  out << "\n";
  for (const std::string &line : r.lines)
    out << line << "\n";
  if (r.count > kMaxReported)
    out << formatString("  ... and %u more\n", r.count - kMaxReported);
  return true;
}

} // namespace

uint32_t bf16UlpDistance(uint16_t a, uint16_t b) {
  bool na = isNaN(a), nb = isNaN(b);
  if (na || nb)
    return na && nb ? 0 : UINT32_MAX;
  int32_t d = ordered(a) - ordered(b);
  return uint32_t(d < 0 ? -d : d);
}

bool generate(const GenerateOptions &options, std::string *error) {
  std::vector<Vector> vectors;
  if (!buildSuite(options, vectors, error))
    return false;
  const std::string &dir = options.outDir;
  bool exists = isDirectory(dir), empty = false;
  if (!exists && ::access(dir.c_str(), F_OK) == 0) {
    *error = "'" + dir + "' exists and is not a directory";
    return false;
  }
  if (exists && !replaceable(dir, empty)) {
    *error = "'" + dir +
             "' is neither empty nor a conformance suite; give a new or "
             "empty directory, or a suite to replace";
    return false;
  }
  std::string tmpl = dir;
  while (tmpl.size() > 1 && tmpl.back() == '/')
    tmpl.pop_back();
  tmpl += ".tmp.XXXXXX";
  if (!::mkdtemp(&tmpl[0])) {
    *error = "cannot create a directory beside '" + dir +
             "': " + std::strerror(errno);
    return false;
  }
  const std::string tmp = tmpl;
  std::string index = "# pccx conformance suite (docs/conformance.md)\n";
  index += formatString("format %u\n", kFormatVersion);
  index += "target " + options.target + "\n";
  index += formatString("seed %llu\n", (unsigned long long)options.seed);
  index += "numerics hardware\n";
  index += formatString("vectors %zu\n", vectors.size());
  for (const Vector &v : vectors)
    index += "vector " + v.name + "\n";
  bool ok = true;
  for (const Vector &v : vectors)
    if (!(ok = writeVector(tmp + "/" + v.name, options.target, v, error)))
      break;
  ok = ok && writeText(tmp + "/index.txt", index, error);
  ::chmod(tmp.c_str(), 0777 & ~currentUmask());
  // An old suite moves aside first, so DIR always holds a complete suite.
  std::string old;
  if (ok && exists && !empty) {
    old = tmp + ".old";
    if (::rename(dir.c_str(), old.c_str()) != 0) {
      *error = "cannot move the old suite '" + dir +
               "' aside: " + std::strerror(errno);
      ok = false;
    }
  }
  if (ok && ::rename(tmp.c_str(), dir.c_str()) != 0) {
    *error =
        "cannot rename '" + tmp + "' to '" + dir + "': " + std::strerror(errno);
    if (!old.empty())
      ::rename(old.c_str(), dir.c_str());
    ok = false;
  }
  if (!ok) {
    std::vector<std::string> names;
    for (const Vector &v : vectors)
      names.push_back(v.name);
    removeSuite(tmp, names);
  } else if (!old.empty()) {
    removeSuite(old, {});
  }
  return ok;
}

int check(const CheckOptions &options, std::ostream &out, std::string *error) {
  Manifest index;
  std::string indexPath = options.suiteDir + "/index.txt";
  std::string text;
  if (!support::readInputFile(indexPath, support::kMaxDataFileBytes, &text, error))
    return 2;
  std::vector<std::string> names;
  unsigned n = 0;
  bool sawFormat = false;
  for (const std::string &line : lines(text)) {
    ++n;
    if (line.compare(0, 7, "vector ") == 0) {
      std::string name = line.substr(7);
      if (name.empty() || name.find('/') != std::string::npos ||
          name[0] == '.') {
        *error = formatString("%s:%u: bad vector name '%s'", indexPath.c_str(),
                              n, name.c_str());
        return 2;
      }
      names.push_back(name);
    } else if (line.compare(0, 7, "format ") == 0) {
      sawFormat = true;
      if (line != formatString("format %u", kFormatVersion)) {
        *error =
            formatString("%s:%u: '%s' is not this checker's format %u",
                         indexPath.c_str(), n, line.c_str(), kFormatVersion);
        return 2;
      }
    }
  }
  if (!sawFormat) {
    *error = indexPath + ": no 'format' line (not a conformance suite)";
    return 2;
  }
  struct stat st;
  if (::stat(options.resultsDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = "results directory '" + options.resultsDir + "' does not exist";
    return 2;
  }
  unsigned passed = 0;
  for (const std::string &name : names) {
    bool ok = false;
    if (!checkVector(name, options.suiteDir + "/" + name,
                     options.resultsDir + "/" + name, options.maxUlp, out, ok,
                     error))
      return 2;
    passed += ok;
  }
  out << formatString("conformance: %u passed, %zu failed of %zu vectors\n",
                      passed, names.size() - passed, names.size());
  return passed == names.size() ? 0 : 1;
}

} // namespace pccx::conformance
