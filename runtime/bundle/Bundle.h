//===- Bundle.h - .pccx bundle reader and writer ----------------*- C++ -*-===//
//
// The deployable artifact: one little-endian file with a fixed header, a
// section table and 4096-byte aligned sections (manifest JSON, program
// words, weights, constant preloads, tokenizer), each with an XXH3-64
// checksum. The byte layout is specified in docs/bundle-format.md.
//
// Bundle maps a file read-only and validates every header field, table entry
// and (by default) every checksum before handing out any section. A
// BundleWriter assembles sections from memory buffers or streaming
// producers and writes the file atomically and deterministically.
//
// Plain C++17 without LLVM. Errors are returned as values (a null result or
// `false` plus a message naming the file and the section); nothing throws
// across this interface.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_BUNDLE_BUNDLE_H
#define PCCX_RUNTIME_BUNDLE_BUNDLE_H

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace pccx::bundle {

/// The first eight bytes of every bundle.
constexpr char kMagic[8] = {'P', 'C', 'C', 'X', 'B', 'N', 'D', 'L'};
/// The layout version this code reads and writes. Version 2: the manifest
/// records scheduled syncs and host calls follow hw/abi/HostKernels.def;
/// version 1 bundles are refused with a request to recompile.
constexpr uint32_t kFormatVersion = 2;
/// The ISA generation this build targets (v002).
constexpr uint32_t kIsaVersion = 2;
/// Every section starts at a multiple of this (mmap and DMA friendly).
constexpr uint64_t kSectionAlignment = 4096;
/// Bytes before the section table.
constexpr size_t kFixedHeaderSize = 40;
/// Bytes per section table entry.
constexpr size_t kSectionEntrySize = 56;
/// Bytes of the name field of a table entry; names are at most one less so
/// that they are always NUL-terminated.
constexpr size_t kNameFieldSize = 24;
constexpr size_t kMaxNameLength = kNameFieldSize - 1;
/// Upper bound on section_count, so a damaged header cannot request a huge
/// table.
constexpr uint32_t kMaxSections = 65536;

enum class SectionKind : uint32_t {
  Manifest = 1,  ///< UTF-8 JSON object.
  Program = 2,   ///< Little-endian 64-bit instruction words.
  Weights = 3,   ///< Packed weights and scales in consumption order.
  Constants = 4, ///< Constant preloads.
  Tokenizer = 5, ///< Opaque tokenizer model.
};

/// "manifest", "program", "weights", "constants", "tokenizer"; null for a
/// value outside the enumeration.
const char *kindName(SectionKind kind);

/// Checks a section name: 1..kMaxNameLength characters from [A-Za-z0-9._-].
/// Returns an empty string when valid, else the reason.
std::string checkSectionName(std::string_view name);

/// XXH3-64 (seed 0) of a byte range, the checksum used throughout the format.
uint64_t checksum(const void *data, size_t size);

/// Header checksum of a complete header image (fixed header plus table):
/// XXH3-64 of its first `40 + 56 * section_count` bytes. Exposed so tests and
/// tools can re-seal a deliberately edited header.
uint64_t headerChecksum(const uint8_t *header, uint32_t sectionCount);

/// "v002" for 2.
std::string isaVersionName(uint32_t version);

/// One entry of the section table.
struct SectionInfo {
  std::string name;
  SectionKind kind = SectionKind::Manifest;
  uint32_t flags = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct OpenOptions {
  /// Verify every section checksum while opening (reads the whole file).
  bool verifyChecksums = true;
  /// Accept a bundle compiled for another machine model; the mismatch is
  /// then reported through warnings() instead of failing the open.
  bool allowMachineMismatch = false;
};

/// A validated, memory-mapped bundle. Section data pointers stay valid for
/// the lifetime of the object.
class Bundle {
public:
  /// Maps and validates `path`. On failure returns null and sets `*error`
  /// to a message that starts with the path.
  static std::unique_ptr<Bundle> open(const std::string &path,
                                      std::string *error,
                                      const OpenOptions &options = {});
  ~Bundle();
  Bundle(const Bundle &) = delete;
  Bundle &operator=(const Bundle &) = delete;

  const std::string &path() const { return path_; }
  uint32_t formatVersion() const { return formatVersion_; }
  uint32_t isaVersion() const { return isaVersion_; }
  uint64_t machineDigest() const { return machineDigest_; }
  /// Whether machineDigest() equals this build's machine::digest().
  bool machineDigestMatches() const { return machineMatches_; }
  uint64_t fileSize() const { return fileSize_; }
  uint64_t storedHeaderChecksum() const { return headerChecksum_; }
  /// True when every section checksum was verified by open().
  bool checksumsVerified() const { return verified_; }
  /// Non-fatal findings of open() (e.g. an accepted machine mismatch).
  const std::vector<std::string> &warnings() const { return warnings_; }

  /// Sections in table order (which is also file order for bundles written
  /// by BundleWriter).
  const std::vector<SectionInfo> &sections() const { return sections_; }
  /// Null when no section has that name.
  const SectionInfo *find(std::string_view name) const;
  /// Sections of one kind, in table order.
  std::vector<const SectionInfo *> sectionsOfKind(SectionKind kind) const;

  /// The bytes of a section of this bundle, inside the read-only mapping.
  const uint8_t *data(const SectionInfo &section) const;

  /// Computes the checksum of a section now (for callers that opened with
  /// verifyChecksums off). Returns false and sets `*error` on mismatch.
  bool verifySection(const SectionInfo &section, std::string *error) const;

  /// Number of instruction words in a program section.
  static size_t wordCount(const SectionInfo &program) {
    return size_t(program.size / 8);
  }
  /// Word `index` of a program section (little-endian in the file).
  uint64_t word(const SectionInfo &program, size_t index) const;

  /// The parsed manifest (an object), or null when there is no manifest
  /// section.
  bool hasManifest() const { return hasManifest_; }
  const nlohmann::json &manifest() const { return manifest_; }

private:
  Bundle() = default;
  std::string path_;
  const uint8_t *map_ = nullptr;
  size_t mappedBytes_ = 0;
  uint64_t fileSize_ = 0;
  uint32_t formatVersion_ = 0;
  uint32_t isaVersion_ = 0;
  uint64_t machineDigest_ = 0;
  bool machineMatches_ = false;
  uint64_t headerChecksum_ = 0;
  bool verified_ = false;
  bool hasManifest_ = false;
  std::vector<SectionInfo> sections_;
  std::vector<std::string> warnings_;
  nlohmann::json manifest_;
  friend struct BundleValidator;
};

/// Where a streaming producer writes a section's bytes. write() returns false
/// once the output has failed; the producer should then stop and return
/// false.
class SectionSink {
public:
  virtual ~SectionSink() = default;
  virtual bool write(const void *data, size_t size) = 0;
  bool write(const std::vector<uint8_t> &bytes) {
    return write(bytes.data(), bytes.size());
  }
  /// Appends little-endian 64-bit words.
  bool writeWords(const uint64_t *words, size_t count);
};

/// Produces a section's bytes in as many chunks as it likes. Returns false
/// (optionally setting `*error`) to abandon the whole bundle. A producer may
/// be invoked once per BundleWriter::write() call.
using SectionProducer =
    std::function<bool(SectionSink &sink, std::string *error)>;

/// Builds a bundle. Sections are laid out in the order they are added, so
/// the same calls with the same data give a byte-identical file.
class BundleWriter {
public:
  BundleWriter();
  ~BundleWriter();
  BundleWriter(const BundleWriter &) = delete;
  BundleWriter &operator=(const BundleWriter &) = delete;

  /// Defaults to this build's machine::digest().
  void setMachineDigest(uint64_t digest) { machineDigest_ = digest; }

  /// Adds a section held in memory (the bytes are kept until write()).
  bool addSection(const std::string &name, SectionKind kind,
                  std::vector<uint8_t> bytes, std::string *error);
  bool addSection(const std::string &name, SectionKind kind, const void *data,
                  size_t size, std::string *error);
  /// Adds a section whose bytes `producer` streams during write(); its size
  /// need not be known in advance.
  bool addStreamedSection(const std::string &name, SectionKind kind,
                          SectionProducer producer, std::string *error);
  /// Adds a program section from instruction words.
  bool addProgram(const std::string &name, const std::vector<uint64_t> &words,
                  std::string *error);
  /// Adds the manifest (section "manifest"): `manifest` must be an object.
  /// Serialised with sorted keys and two-space indentation.
  bool addManifest(const nlohmann::json &manifest, std::string *error);

  /// Checks a complete bundle file before it replaces the output: false
  /// with a message refuses it (the output is left as it was).
  using Verifier =
      std::function<bool(const std::string &path, std::string *error)>;
  void setVerifier(Verifier verifier) { verifier_ = std::move(verifier); }

  /// Writes `<path>.tmp.<pid>`, fsyncs it and renames it over `path`. On any
  /// failure the temporary file is removed, `path` is left as it was, and
  /// `*error` names the path (and the section, when one is at fault). A
  /// pipe or FIFO (which cannot seek back to the header) gets the complete
  /// file, in order, from an unlinked scratch file.
  bool write(const std::string &path, std::string *error);

  size_t sectionCount() const { return pending_.size(); }

private:
  struct Pending {
    std::string name;
    SectionKind kind;
    std::vector<uint8_t> bytes; ///< Used when producer is empty.
    SectionProducer producer;
  };
  Verifier verifier_;
  bool checkNew(const std::string &name, SectionKind kind,
                std::string *error) const;
  void noteAdded(const std::string &name, SectionKind kind) {
    names_.insert(name);
    if (kind == SectionKind::Manifest)
      manifestName_ = name;
  }
  std::unordered_set<std::string> names_;
  std::string manifestName_;
  uint64_t machineDigest_;
  std::vector<Pending> pending_;
};

} // namespace pccx::bundle

#endif // PCCX_RUNTIME_BUNDLE_BUNDLE_H
