//===- Bundle.cpp - .pccx bundle reader and writer --------------*- C++ -*-===//
//
// Implements docs/bundle-format.md. Every integer is read and written byte by
// byte in little-endian order, so the code does not depend on the host's
// byte order or on the alignment of the mapping.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/Bundle.h"

#include "hw/machine/MachineModel.h"
#include "hw/support/Format.h"
#include "hw/support/OutputFile.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pccx::bundle {
namespace {

// Offsets inside the fixed header and inside a table entry (see the tables in
// docs/bundle-format.md).
constexpr size_t kOffMagic = 0;
constexpr size_t kOffFormatVersion = 8;
constexpr size_t kOffIsaVersion = 12;
constexpr size_t kOffMachineDigest = 16;
constexpr size_t kOffSectionCount = 24;
constexpr size_t kOffFlags = 28;
constexpr size_t kOffFileSize = 32;
static_assert(kOffFileSize + 8 == kFixedHeaderSize, "fixed header layout");

constexpr size_t kEntName = 0;
constexpr size_t kEntKind = 24;
constexpr size_t kEntFlags = 28;
constexpr size_t kEntOffset = 32;
constexpr size_t kEntSize = 40;
constexpr size_t kEntChecksum = 48;
static_assert(kEntChecksum + 8 == kSectionEntrySize, "table entry layout");
static_assert(kEntName + kNameFieldSize == kEntKind, "table entry layout");

uint32_t readU32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
uint64_t readU64(const uint8_t *p) {
  return uint64_t(readU32(p)) | uint64_t(readU32(p + 4)) << 32;
}
void writeU32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = uint8_t(v >> (8 * i));
}
void writeU64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = uint8_t(v >> (8 * i));
}

std::string hex64(uint64_t v) {
  return formatString("0x%016llx", (unsigned long long)v);
}

// Room before the first section: fixed header, table, header checksum.
uint64_t headerBytes(uint64_t sectionCount) {
  return kFixedHeaderSize + kSectionEntrySize * sectionCount + 8;
}

uint64_t alignUp(uint64_t v) {
  return (v + kSectionAlignment - 1) & ~(kSectionAlignment - 1);
}

bool setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

} // namespace

//===----------------------------------------------------------------------===//
// Names, checksums and sinks
//===----------------------------------------------------------------------===//

const char *kindName(SectionKind kind) {
  switch (kind) {
  case SectionKind::Manifest:
    return "manifest";
  case SectionKind::Program:
    return "program";
  case SectionKind::Weights:
    return "weights";
  case SectionKind::Constants:
    return "constants";
  case SectionKind::Tokenizer:
    return "tokenizer";
  }
  return nullptr;
}

std::string checkSectionName(std::string_view name) {
  if (name.empty())
    return "section name is empty";
  if (name.size() > kMaxNameLength)
    return formatString("section name '%.*s' is longer than %zu characters",
                  int(name.size()), name.data(), kMaxNameLength);
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      std::string shown;
      for (char d : name)
        shown += (d >= 0x20 && d < 0x7f) ? d : '?';
      return "section name '" + shown +
             "' has a character outside [A-Za-z0-9._-]";
    }
  }
  return {};
}

uint64_t checksum(const void *data, size_t size) {
  return XXH3_64bits(data, size);
}

uint64_t headerChecksum(const uint8_t *header, uint32_t sectionCount) {
  return checksum(header, size_t(headerBytes(sectionCount) - 8));
}

std::string isaVersionName(uint32_t version) {
  return formatString("v%03u", version);
}

bool SectionSink::writeWords(const uint64_t *words, size_t count) {
  uint8_t buf[4096];
  while (count) {
    size_t n = std::min(count, sizeof(buf) / 8);
    for (size_t i = 0; i < n; ++i)
      writeU64(buf + 8 * i, words[i]);
    if (!write(buf, n * 8))
      return false;
    words += n;
    count -= n;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

Bundle::~Bundle() {
  if (map_)
    ::munmap(const_cast<uint8_t *>(map_), mappedBytes_);
}

const SectionInfo *Bundle::find(std::string_view name) const {
  for (const SectionInfo &s : sections_)
    if (s.name == name)
      return &s;
  return nullptr;
}

std::vector<const SectionInfo *>
Bundle::sectionsOfKind(SectionKind kind) const {
  std::vector<const SectionInfo *> out;
  for (const SectionInfo &s : sections_)
    if (s.kind == kind)
      out.push_back(&s);
  return out;
}

const uint8_t *Bundle::data(const SectionInfo &section) const {
  return map_ + section.offset;
}

uint64_t Bundle::word(const SectionInfo &program, size_t index) const {
  return readU64(data(program) + 8 * index);
}

bool Bundle::verifySection(const SectionInfo &section,
                           std::string *error) const {
  uint64_t computed = checksum(data(section), size_t(section.size));
  if (computed == section.checksum)
    return true;
  return setError(error, path_ + ": section '" + section.name +
                             "' checksum mismatch (stored " +
                             hex64(section.checksum) + ", computed " +
                             hex64(computed) + "): the bundle is corrupt");
}

struct BundleValidator {
  Bundle &b;
  const OpenOptions &options;
  std::string *error;

  bool fail(const std::string &message) {
    return setError(error, b.path_ + ": " + message);
  }

  bool run() {
    const uint8_t *p = b.map_;
    uint64_t size = b.fileSize_;
    if (size < sizeof(kMagic) ||
        std::memcmp(p + kOffMagic, kMagic, sizeof(kMagic)) != 0)
      return fail("not a pccx bundle (bad magic)");
    if (size < kFixedHeaderSize)
      return fail(formatString("truncated header: the file has %llu bytes but the "
                         "fixed header needs %zu",
                         (unsigned long long)size, kFixedHeaderSize));

    // The version comes first: a newer format may lay out the rest of the
    // header differently.
    b.formatVersion_ = readU32(p + kOffFormatVersion);
    if (b.formatVersion_ > kFormatVersion)
      return fail(formatString("bundle format version %u is newer than this reader "
                         "(%u)",
                         b.formatVersion_, kFormatVersion));
    if (b.formatVersion_ == 0)
      return fail("bundle format version 0 is invalid");
    if (b.formatVersion_ < kFormatVersion)
      return fail(formatString("bundle format version %u is older than this "
                               "reader (%u); recompile the model with "
                               "pccx-compile",
                               b.formatVersion_, kFormatVersion));

    uint32_t count = readU32(p + kOffSectionCount);
    if (count > kMaxSections)
      return fail(formatString("section count %u exceeds the limit of %u", count,
                         kMaxSections));
    uint64_t tableEnd = headerBytes(count);
    if (tableEnd > size)
      return fail(formatString("section table (%u entries) ends at byte %llu but "
                         "the file has %llu bytes",
                         count, (unsigned long long)tableEnd,
                         (unsigned long long)size));
    b.headerChecksum_ = readU64(p + tableEnd - 8);
    uint64_t computed = headerChecksum(p, count);
    if (computed != b.headerChecksum_)
      return fail("header checksum mismatch (stored " +
                  hex64(b.headerChecksum_) + ", computed " + hex64(computed) +
                  "): the bundle is corrupt");

    b.isaVersion_ = readU32(p + kOffIsaVersion);
    if (b.isaVersion_ != kIsaVersion)
      return fail("bundle targets ISA " + isaVersionName(b.isaVersion_) +
                  "; this runtime supports " + isaVersionName(kIsaVersion));

    b.machineDigest_ = readU64(p + kOffMachineDigest);
    uint64_t ours = machine::digest();
    b.machineMatches_ = b.machineDigest_ == ours;
    if (!b.machineMatches_) {
      std::string msg = "bundle was compiled for machine model " +
                        hex64(b.machineDigest_) + " but this build's is " +
                        hex64(ours) +
                        " (hw/machine parameters differ; recompile the "
                        "bundle)";
      if (!options.allowMachineMismatch)
        return fail(msg);
      b.warnings_.push_back(b.path_ + ": " + msg);
    }

    uint32_t flags = readU32(p + kOffFlags);
    if (flags != 0)
      return fail(formatString("unknown header flags 0x%x", flags));

    if (!readTable(count, tableEnd))
      return false;

    uint64_t recorded = readU64(p + kOffFileSize);
    if (recorded != size)
      return fail(formatString("the header records a file size of %llu bytes but "
                         "the file has %llu bytes",
                         (unsigned long long)recorded,
                         (unsigned long long)size));

    if (options.verifyChecksums) {
      for (const SectionInfo &s : b.sections_)
        if (!b.verifySection(s, error))
          return false;
      if (!checkPadding(tableEnd))
        return false;
      b.verified_ = true;
    }
    return parseManifest();
  }

  bool readTable(uint32_t count, uint64_t tableEnd) {
    const uint8_t *p = b.map_;
    std::map<std::string, uint32_t> seen;
    for (uint32_t i = 0; i < count; ++i) {
      const uint8_t *e = p + kFixedHeaderSize + kSectionEntrySize * i;
      SectionInfo s;
      const char *rawName = reinterpret_cast<const char *>(e + kEntName);
      size_t len = 0;
      while (len < kNameFieldSize && rawName[len])
        ++len;
      bool padded = len < kNameFieldSize;
      for (size_t j = len; j < kNameFieldSize; ++j)
        padded = padded && rawName[j] == 0;
      s.name.assign(rawName, len);
      std::string why = checkSectionName(s.name);
      if (!padded)
        why = "name is not NUL-padded";
      if (!why.empty())
        return fail(formatString("section table entry %u: ", i) + why);

      uint32_t kind = readU32(e + kEntKind);
      s.kind = SectionKind(kind);
      if (!kindName(s.kind))
        return fail("section '" + s.name + "' has unknown kind " +
                    std::to_string(kind));
      s.flags = readU32(e + kEntFlags);
      if (s.flags)
        return fail("section '" + s.name + "' has unknown flags " +
                    formatString("0x%x", s.flags));
      s.offset = readU64(e + kEntOffset);
      s.size = readU64(e + kEntSize);
      s.checksum = readU64(e + kEntChecksum);

      auto dup = seen.emplace(s.name, i);
      if (!dup.second)
        return fail(formatString("duplicate section name '%s' (table entries %u "
                           "and %u)",
                           s.name.c_str(), dup.first->second, i));
      if (s.offset % kSectionAlignment)
        return fail(formatString("section '%s' offset %llu is not a multiple of "
                           "%llu",
                           s.name.c_str(), (unsigned long long)s.offset,
                           (unsigned long long)kSectionAlignment));
      if (s.offset < tableEnd)
        return fail(formatString("section '%s' at offset %llu overlaps the header, "
                           "which ends at byte %llu",
                           s.name.c_str(), (unsigned long long)s.offset,
                           (unsigned long long)tableEnd));
      if (s.size > UINT64_MAX - s.offset)
        return fail(formatString("section '%s' (offset %llu, size %llu) ends "
                           "beyond any possible file",
                           s.name.c_str(), (unsigned long long)s.offset,
                           (unsigned long long)s.size));
      uint64_t end = s.offset + s.size;
      if (end > b.fileSize_)
        return fail(formatString("section '%s' ends at byte %llu but the file has "
                           "%llu bytes",
                           s.name.c_str(), (unsigned long long)end,
                           (unsigned long long)b.fileSize_));
      if (s.kind == SectionKind::Program && s.size % 8)
        return fail(formatString("program section '%s' has %llu bytes, not a "
                           "multiple of 8",
                           s.name.c_str(), (unsigned long long)s.size));
      b.sections_.push_back(std::move(s));
    }

    // Overlap: sort by start (empty sections first), then neighbours.
    std::vector<const SectionInfo *> order;
    for (const SectionInfo &s : b.sections_)
      order.push_back(&s);
    std::sort(order.begin(), order.end(),
              [](const SectionInfo *x, const SectionInfo *y) {
                return x->offset != y->offset ? x->offset < y->offset
                                              : x->size < y->size;
              });
    for (size_t i = 1; i < order.size(); ++i) {
      const SectionInfo *a = order[i - 1], *c = order[i];
      if (a->offset + a->size > c->offset)
        return fail(formatString("sections '%s' (bytes [%llu, %llu)) and '%s' "
                           "(bytes [%llu, %llu)) overlap",
                           a->name.c_str(), (unsigned long long)a->offset,
                           (unsigned long long)(a->offset + a->size),
                           c->name.c_str(), (unsigned long long)c->offset,
                           (unsigned long long)(c->offset + c->size)));
    }

    if (b.sectionsOfKind(SectionKind::Manifest).size() > 1)
      return fail("more than one manifest section");
    return true;
  }

  // The padding between the header and the sections is zero, so together
  // with the checksums every byte of the file is covered.
  bool checkPadding(uint64_t tableEnd) {
    std::vector<const SectionInfo *> order;
    for (const SectionInfo &s : b.sections_)
      order.push_back(&s);
    std::sort(order.begin(), order.end(),
              [](const SectionInfo *x, const SectionInfo *y) {
                return x->offset < y->offset;
              });
    uint64_t pos = tableEnd;
    auto zeroUpTo = [&](uint64_t end, const std::string &where) {
      for (uint64_t i = pos; i < end; ++i)
        if (b.map_[i])
          return fail(formatString("non-zero byte at %llu in the padding ",
                             (unsigned long long)i) +
                      where + ": the bundle is corrupt");
      return true;
    };
    for (const SectionInfo *s : order) {
      if (!zeroUpTo(s->offset, "before section '" + s->name + "'"))
        return false;
      pos = std::max(pos, s->offset + s->size);
    }
    return zeroUpTo(b.fileSize_, "at the end of the file");
  }

  bool parseManifest() {
    std::vector<const SectionInfo *> m =
        b.sectionsOfKind(SectionKind::Manifest);
    if (m.empty())
      return true;
    const SectionInfo &s = *m.front();
    const char *text = reinterpret_cast<const char *>(b.data(s));
    try {
      b.manifest_ = nlohmann::json::parse(text, text + s.size);
    } catch (const std::exception &ex) {
      return fail("section '" + s.name + "': invalid JSON: " + ex.what());
    }
    if (!b.manifest_.is_object()) {
      b.manifest_ = nullptr;
      return fail("section '" + s.name +
                  "': the manifest is not a JSON "
                  "object");
    }
    b.hasManifest_ = true;
    return true;
  }
};

std::unique_ptr<Bundle> Bundle::open(const std::string &path,
                                     std::string *error,
                                     const OpenOptions &options) {
  std::unique_ptr<Bundle> b(new Bundle());
  b->path_ = path;
  // O_NONBLOCK: a FIFO without a writer must not hang the open (it is
  // refused below as not a regular file); mapping ignores the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    setError(error, path + ": cannot open: " + std::strerror(errno));
    return nullptr;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    setError(error, path + ": cannot stat: " + std::strerror(errno));
    ::close(fd);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    setError(error, path + ": not a regular file");
    ::close(fd);
    return nullptr;
  }
  if (st.st_size == 0) {
    setError(error, path + ": not a pccx bundle (the file is empty)");
    ::close(fd);
    return nullptr;
  }
  if (uint64_t(st.st_size) > uint64_t(SIZE_MAX)) {
    setError(error, path + ": file is too large to map on this system");
    ::close(fd);
    return nullptr;
  }
  b->fileSize_ = uint64_t(st.st_size);
  b->mappedBytes_ = size_t(st.st_size);
  void *m = ::mmap(nullptr, b->mappedBytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  int mapErrno = errno;
  ::close(fd);
  if (m == MAP_FAILED) {
    setError(error, path + ": cannot map: " + std::strerror(mapErrno));
    return nullptr;
  }
  b->map_ = static_cast<const uint8_t *>(m);

  BundleValidator validator{*b, options, error};
  bool ok = false;
  try {
    ok = validator.run();
  } catch (const std::exception &ex) {
    ok = setError(error, path + ": " + ex.what());
  }
  if (!ok)
    return nullptr;
  return b;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

namespace {

// Buffered output to a file descriptor that remembers its first failure.
class FileOutput {
public:
  explicit FileOutput(int fd) : fd_(fd), buf_(1 << 20) {}

  uint64_t position() const { return pos_; }
  bool failed() const { return failed_; }
  const std::string &failure() const { return failure_; }

  bool write(const void *data, size_t size) {
    if (failed_)
      return false;
    const uint8_t *p = static_cast<const uint8_t *>(data);
    if (used_ + size > buf_.size()) {
      if (!flush())
        return false;
      if (size >= buf_.size()) {
        if (!writeAll(p, size))
          return false;
        pos_ += size;
        return true;
      }
    }
    std::memcpy(buf_.data() + used_, p, size);
    used_ += size;
    pos_ += size;
    return true;
  }

  bool padTo(uint64_t target) {
    static const uint8_t zeros[4096] = {};
    while (pos_ < target) {
      size_t n = size_t(std::min<uint64_t>(target - pos_, sizeof(zeros)));
      if (!write(zeros, n))
        return false;
    }
    return !failed_;
  }

  bool flush() {
    if (failed_)
      return false;
    bool ok = writeAll(buf_.data(), used_);
    used_ = 0;
    return ok;
  }

  bool writeAt(uint64_t offset, const uint8_t *data, size_t size) {
    while (size) {
      ssize_t n = ::pwrite(fd_, data, size, off_t(offset));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return fail();
      data += n;
      offset += uint64_t(n);
      size -= size_t(n);
    }
    return true;
  }

private:
  bool writeAll(const uint8_t *p, size_t size) {
    while (size) {
      ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return fail();
      p += n;
      size -= size_t(n);
    }
    return true;
  }
  bool fail() {
    failed_ = true;
    failure_ = errno ? std::strerror(errno) : "short write";
    return false;
  }

  int fd_;
  std::vector<uint8_t> buf_;
  size_t used_ = 0;
  uint64_t pos_ = 0;
  bool failed_ = false;
  std::string failure_;
};

// Counts and hashes what a producer writes on its way to the file.
class HashingSink final : public SectionSink {
public:
  explicit HashingSink(FileOutput &out) : out_(out) {
    XXH3_64bits_reset(&state_);
  }
  bool write(const void *data, size_t size) override {
    if (size == 0)
      return !out_.failed();
    if (!out_.write(data, size))
      return false;
    XXH3_64bits_update(&state_, data, size);
    size_ += size;
    return true;
  }
  using SectionSink::write;
  uint64_t size() const { return size_; }
  uint64_t digest() { return XXH3_64bits_digest(&state_); }

private:
  FileOutput &out_;
  XXH3_state_t state_;
  uint64_t size_ = 0;
};

} // namespace

BundleWriter::BundleWriter() : machineDigest_(machine::digest()) {}
BundleWriter::~BundleWriter() = default;

bool BundleWriter::checkNew(const std::string &name, SectionKind kind,
                            std::string *error) const {
  std::string why = checkSectionName(name);
  if (!why.empty())
    return setError(error, why);
  if (!kindName(kind))
    return setError(error, "section '" + name + "': unknown kind " +
                               std::to_string(uint32_t(kind)));
  // Sets, not a scan of the sections: a bundle may have many thousands.
  if (names_.count(name))
    return setError(error, "duplicate section name '" + name + "'");
  if (kind == SectionKind::Manifest && !manifestName_.empty())
    return setError(error, "section '" + name +
                               "': the bundle already has a manifest ('" +
                               manifestName_ + "')");
  if (pending_.size() >= kMaxSections)
    return setError(error, formatString("more than %u sections", kMaxSections));
  return true;
}

bool BundleWriter::addSection(const std::string &name, SectionKind kind,
                              std::vector<uint8_t> bytes, std::string *error) {
  if (!checkNew(name, kind, error))
    return false;
  if (kind == SectionKind::Program && bytes.size() % 8)
    return setError(error, formatString("program section '%s' has %zu bytes, not "
                                  "a multiple of 8",
                                  name.c_str(), bytes.size()));
  pending_.push_back({name, kind, std::move(bytes), nullptr});
  noteAdded(name, kind);
  return true;
}

bool BundleWriter::addSection(const std::string &name, SectionKind kind,
                              const void *data, size_t size,
                              std::string *error) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  return addSection(name, kind, std::vector<uint8_t>(p, p + size), error);
}

bool BundleWriter::addStreamedSection(const std::string &name, SectionKind kind,
                                      SectionProducer producer,
                                      std::string *error) {
  if (!producer)
    return setError(error, "section '" + name + "': no producer");
  if (!checkNew(name, kind, error))
    return false;
  pending_.push_back({name, kind, {}, std::move(producer)});
  noteAdded(name, kind);
  return true;
}

bool BundleWriter::addProgram(const std::string &name,
                              const std::vector<uint64_t> &words,
                              std::string *error) {
  std::vector<uint8_t> bytes(words.size() * 8);
  for (size_t i = 0; i < words.size(); ++i)
    writeU64(bytes.data() + 8 * i, words[i]);
  return addSection(name, SectionKind::Program, std::move(bytes), error);
}

bool BundleWriter::addManifest(const nlohmann::json &manifest,
                               std::string *error) {
  if (!manifest.is_object())
    return setError(error, "the manifest must be a JSON object");
  std::string text;
  try {
    // nlohmann::json keeps object keys in a std::map, so they come out
    // sorted and the text is a function of the value alone.
    text = manifest.dump(2) + "\n";
  } catch (const std::exception &ex) {
    return setError(error, std::string("manifest: ") + ex.what());
  }
  return addSection("manifest", SectionKind::Manifest, text.data(), text.size(),
                    error);
}

bool BundleWriter::write(const std::string &path, std::string *error) {
  // A unique temp file renamed into place (a device such as /dev/null is
  // written in place; the header is written last, at offset 0).
  OutputFile file;
  if (!file.open(path, error))
    return false;
  auto abandon = [&](const std::string &message) {
    file.abandon();
    return setError(error, path + ": " + message);
  };
  int fd = file.fd();
  // A pipe or FIFO cannot seek back to write the header: the bundle is
  // built in an unlinked scratch file (nothing left behind on a signal)
  // and copied in order once complete.
  struct Scratch {
    int fd = -1;
    ~Scratch() {
      if (fd >= 0)
        ::close(fd);
    }
  } scratch;
  if (!file.replaces() && ::lseek(fd, 0, SEEK_CUR) < 0 && errno == ESPIPE) {
    const char *tmp = std::getenv("TMPDIR");
    std::string scratchPath =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/pccx-bundle.XXXXXX";
    scratch.fd = ::mkstemp(&scratchPath[0]);
    if (scratch.fd < 0)
      return abandon("cannot create a scratch file in " +
                     scratchPath.substr(0, scratchPath.rfind('/')) + ": " +
                     std::strerror(errno));
    ::unlink(scratchPath.c_str());
    fd = scratch.fd;
  }

  FileOutput out(fd);
  uint32_t count = uint32_t(pending_.size());
  uint64_t headerSize = headerBytes(count);
  std::vector<SectionInfo> infos;
  infos.reserve(count);
  if (!out.padTo(headerSize))
    return abandon("write failed: " + out.failure());

  for (const Pending &p : pending_) {
    SectionInfo info;
    info.name = p.name;
    info.kind = p.kind;
    if (!out.padTo(alignUp(out.position())))
      return abandon("write failed: " + out.failure());
    info.offset = out.position();
    HashingSink sink(out);
    bool ok;
    std::string producerError;
    if (p.producer) {
      try {
        ok = p.producer(sink, &producerError);
      } catch (const std::exception &ex) {
        ok = false;
        producerError = ex.what();
      }
    } else {
      ok = sink.write(p.bytes.data(), p.bytes.size());
    }
    if (out.failed())
      return abandon("writing section '" + p.name +
                     "' failed: " + out.failure());
    if (!ok)
      return abandon(
          "section '" + p.name + "': " +
          (producerError.empty() ? "the producer failed" : producerError));
    info.size = sink.size();
    info.checksum = sink.digest();
    if (p.kind == SectionKind::Program && info.size % 8)
      return abandon(formatString("program section '%s' has %llu bytes, not a "
                            "multiple of 8",
                            p.name.c_str(), (unsigned long long)info.size));
    infos.push_back(std::move(info));
  }
  if (!out.flush())
    return abandon("write failed: " + out.failure());

  // The header goes in last: only now are sizes and checksums known.
  std::vector<uint8_t> header(size_t(headerSize), 0);
  std::memcpy(header.data() + kOffMagic, kMagic, sizeof(kMagic));
  writeU32(header.data() + kOffFormatVersion, kFormatVersion);
  writeU32(header.data() + kOffIsaVersion, kIsaVersion);
  writeU64(header.data() + kOffMachineDigest, machineDigest_);
  writeU32(header.data() + kOffSectionCount, count);
  writeU32(header.data() + kOffFlags, 0);
  writeU64(header.data() + kOffFileSize, out.position());
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t *e = header.data() + kFixedHeaderSize + kSectionEntrySize * i;
    const SectionInfo &s = infos[i];
    std::memcpy(e + kEntName, s.name.data(), s.name.size());
    writeU32(e + kEntKind, uint32_t(s.kind));
    writeU32(e + kEntFlags, s.flags);
    writeU64(e + kEntOffset, s.offset);
    writeU64(e + kEntSize, s.size);
    writeU64(e + kEntChecksum, s.checksum);
  }
  writeU64(header.data() + headerSize - 8,
           headerChecksum(header.data(), count));
  if (!out.writeAt(0, header.data(), header.size()))
    return abandon("write failed: " + out.failure());

  std::string written = scratch.fd >= 0
                            ? "/proc/self/fd/" + std::to_string(scratch.fd)
                            : file.tempPath();
  if (verifier_ && !written.empty()) {
    std::string why;
    if (!verifier_(written, &why)) {
      // The message names the temp file; the user knows the output.
      for (size_t at; (at = why.find(written)) != std::string::npos;)
        why.replace(at, written.size(), path);
      return abandon("the runtime would refuse this bundle: " + why);
    }
  }
  if (scratch.fd >= 0) {
    std::vector<char> buf(1 << 20);
    for (uint64_t at = 0; at < out.position();) {
      ssize_t n = ::pread(scratch.fd, buf.data(), buf.size(), off_t(at));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return abandon("cannot read back the scratch file: " +
                       std::string(n < 0 ? std::strerror(errno) : "short"));
      for (ssize_t done = 0; done < n;) {
        ssize_t w = ::write(file.fd(), buf.data() + done, size_t(n - done));
        if (w < 0 && errno == EINTR)
          continue;
        if (w < 0)
          return abandon(std::string("write failed: ") + std::strerror(errno));
        done += w;
      }
      at += uint64_t(n);
    }
  }
  return file.commit(error);
}

} // namespace pccx::bundle
