//===- Safetensors.cpp - safetensors checkpoints, read and write ----------===//
//
// Format: https://github.com/huggingface/safetensors (README, "Format").
// Sharded checkpoints: transformers' `model.safetensors.index.json`.
//
//===----------------------------------------------------------------------===//

#include "runtime/import/Safetensors.h"

#include "hw/support/InputFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using nlohmann::json;

namespace pccx::import {

namespace {

// The limit the reference implementation applies to header lengths.
constexpr uint64_t kMaxHeaderBytes = 100000000;

using hw::bitsFloat;
using hw::floatBits;

uint16_t loadLE16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

uint32_t loadLE32(const uint8_t *p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) |
         (uint32_t(p[3]) << 24);
}

uint64_t loadLE64(const uint8_t *p) {
  return uint64_t(loadLE32(p)) | (uint64_t(loadLE32(p + 4)) << 32);
}

void storeLE16(uint8_t *p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}

void storeLE32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = uint8_t(v >> (8 * i));
}

// Dtypes that safetensors defines but the importer does not handle; named
// separately so the message says "unsupported" rather than "unknown".
bool isOtherSafetensorsDType(const std::string &text) {
  static const char *const kOther[] = {
      "BOOL",    "U8",  "I8",      "U16",     "I16",     "U32",
      "U64",     "I32", "I64",     "F64",     "F8_E4M3", "F8_E5M2",
      "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};
  for (const char *name : kOther)
    if (text == name)
      return true;
  return false;
}

bool mulOverflows(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

std::string quote(const std::string &name) { return "'" + name + "'"; }

// Reads a JSON value that must be a non-negative integer.
bool asUnsigned(const json &value, uint64_t *out) {
  if (value.is_number_unsigned()) {
    *out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(value.get<int64_t>());
    return true;
  }
  return false;
}

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty() || dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

bool isRegularFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A shard name in an index must stay inside the checkpoint directory.
bool isSafeRelativePath(const std::string &name) {
  if (name.empty() || name.front() == '/')
    return false;
  std::stringstream parts(name);
  std::string part;
  while (std::getline(parts, part, '/'))
    if (part == "..")
      return false;
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Dtypes and conversions
//===----------------------------------------------------------------------===//

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  }
  return "?";
}

size_t dtypeSize(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

bool parseDType(const std::string &text, DType *dtype) {
  if (text == "F32")
    *dtype = DType::F32;
  else if (text == "F16")
    *dtype = DType::F16;
  else if (text == "BF16")
    *dtype = DType::BF16;
  else
    return false;
  return true;
}

uint64_t TensorView::numElements() const {
  uint64_t count = 1;
  for (int64_t dim : shape)
    count *= static_cast<uint64_t>(dim);
  return count;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

namespace {

/// `count` consecutive stored elements from `p` as floats.
void convertRun(DType dtype, const uint8_t *p, uint64_t count, float *out) {
  switch (dtype) {
  case DType::F32:
    for (uint64_t i = 0; i < count; ++i, p += 4)
      out[i] = bitsFloat(loadLE32(p));
    break;
  case DType::F16:
    for (uint64_t i = 0; i < count; ++i, p += 2)
      out[i] = f16ToFloat(loadLE16(p));
    break;
  case DType::BF16:
    for (uint64_t i = 0; i < count; ++i, p += 2)
      out[i] = bf16ToFloat(loadLE16(p));
    break;
  }
}

} // namespace

void releasePages(const uint8_t *begin, const uint8_t *end) {
  if (end - begin < (1 << 20))
    return;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  uintptr_t from = (uintptr_t(begin) + page - 1) & ~(page - 1);
  uintptr_t to = uintptr_t(end) & ~(page - 1);
  if (to > from)
    ::madvise(reinterpret_cast<void *>(from), to - from, MADV_DONTNEED);
}

namespace {

/// The stored index of index `i` of a dimension kept as `ranges` (empty:
/// all), and how many indices follow it in the same range.
int64_t storedIndex(const std::vector<std::pair<int64_t, int64_t>> &ranges,
                    int64_t i, int64_t *runLeft) {
  for (const auto &[begin, end] : ranges) {
    if (i < end - begin) {
      *runLeft = end - begin - i;
      return begin + i;
    }
    i -= end - begin;
  }
  *runLeft = 0;
  return -1;
}

/// Elements [first, first + count) of a sliced view, one stored run at a
/// time.
void convertSliced(const TensorView &t, uint64_t first, uint64_t count,
                   float *out) {
  const int64_t cols = t.shape.back();
  const size_t size = dtypeSize(t.dtype);
  const uint8_t *lowest = nullptr, *highest = nullptr;
  while (count) {
    const int64_t row = int64_t(first / uint64_t(cols));
    int64_t col = int64_t(first % uint64_t(cols));
    int64_t rowRun = 0; // unused: rows are converted one at a time
    const int64_t storedRow =
        t.rowRanges.empty() ? row : storedIndex(t.rowRanges, row, &rowRun);
    while (col < cols && count) {
      int64_t runLeft = cols - col;
      const int64_t storedCol =
          t.columnRanges.empty() ? col
                                 : storedIndex(t.columnRanges, col, &runLeft);
      const uint64_t n = std::min<uint64_t>(uint64_t(runLeft), count);
      const uint8_t *p =
          t.data + (uint64_t(storedRow) * uint64_t(t.storedColumns) +
                    uint64_t(storedCol)) *
                       size;
      convertRun(t.dtype, p, n, out);
      if (!lowest || p < lowest)
        lowest = p;
      if (!highest || p + n * size > highest)
        highest = p + n * size;
      out += n;
      first += n;
      count -= n;
      col += int64_t(n);
    }
  }
  if (lowest)
    releasePages(lowest, highest);
}

} // namespace

bool convertToFloat(const TensorView &tensor, uint64_t first, uint64_t count,
                    float *out, std::string *error) {
  uint64_t total = tensor.numElements();
  if (first > total || count > total - first) {
    *error = tensor.file + ": tensor " + quote(tensor.name) + ": elements [" +
             std::to_string(first) + ", " + std::to_string(first + count) +
             ") are outside its " + std::to_string(total) + " elements";
    return false;
  }
  if (tensor.sliced()) {
    convertSliced(tensor, first, count, out);
    return true;
  }
  const size_t size = dtypeSize(tensor.dtype);
  const uint8_t *p = tensor.data + first * size;
  convertRun(tensor.dtype, p, count, out);
  releasePages(p, p + count * size);
  return true;
}

//===----------------------------------------------------------------------===//
// SafetensorsFile
//===----------------------------------------------------------------------===//

struct SafetensorsParser {
  SafetensorsFile &file;
  const std::string &path;
  std::string *error;

  bool fail(const std::string &message) {
    *error = path + ": " + message;
    return false;
  }
  bool failTensor(const std::string &name, const std::string &message) {
    return fail("tensor " + quote(name) + ": " + message);
  }

  bool parse(const uint8_t *base, uint64_t fileBytes) {
    if (fileBytes < 8)
      return fail("file too small for a safetensors header (" +
                  std::to_string(fileBytes) + " bytes, need at least 8)");
    uint64_t headerBytes = loadLE64(base);
    if (headerBytes > kMaxHeaderBytes)
      return fail("header length " + std::to_string(headerBytes) +
                  " exceeds the limit of " + std::to_string(kMaxHeaderBytes) +
                  " bytes");
    if (headerBytes > fileBytes - 8)
      return fail("header length " + std::to_string(headerBytes) +
                  " runs past the end of the file (" +
                  std::to_string(fileBytes) + " bytes)");
    const char *text = reinterpret_cast<const char *>(base + 8);
    uint64_t dataBytes = fileBytes - 8 - headerBytes;
    const uint8_t *data = base + 8 + headerBytes;

    // Repeated tensor names would otherwise collapse silently into one.
    std::set<std::string> seen;
    std::string duplicate;
    auto callback = [&](int depth, json::parse_event_t event, json &parsed) {
      if (event == json::parse_event_t::key && depth == 1 &&
          duplicate.empty() && !seen.insert(parsed.get<std::string>()).second)
        duplicate = parsed.get<std::string>();
      return true;
    };
    json header;
    try {
      header = json::parse(text, text + headerBytes, callback);
    } catch (const json::exception &e) {
      return fail(std::string("header is not valid JSON: ") + e.what());
    }
    if (!header.is_object())
      return fail("header is not a JSON object");
    if (!duplicate.empty())
      return fail("header names " + quote(duplicate) + " more than once");

    struct Range {
      uint64_t begin, end;
      const std::string *name;
    };
    std::vector<Range> ranges;
    for (auto it = header.begin(); it != header.end(); ++it) {
      const std::string &name = it.key();
      const json &entry = it.value();
      if (name == "__metadata__") {
        if (!parseMetadata(entry))
          return false;
        continue;
      }
      if (name.empty())
        return fail("header has a tensor with an empty name");
      TensorView view;
      view.name = name;
      view.file = path;
      uint64_t begin = 0, end = 0;
      if (!parseEntry(name, entry, &view, &begin, &end, dataBytes))
        return false;
      view.data = data + begin;
      auto inserted = file.tensors_.emplace(name, std::move(view));
      if (begin != end)
        ranges.push_back({begin, end, &inserted.first->first});
    }

    std::sort(ranges.begin(), ranges.end(),
              [](const Range &a, const Range &b) { return a.begin < b.begin; });
    for (size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].begin < ranges[i - 1].end)
        return fail("tensors " + quote(*ranges[i - 1].name) + " and " +
                    quote(*ranges[i].name) + " overlap in the data section");
    return true;
  }

  bool parseMetadata(const json &entry) {
    if (!entry.is_object())
      return fail("__metadata__ is not a JSON object");
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      if (!it.value().is_string())
        return fail("__metadata__ value for " + quote(it.key()) +
                    " is not a string");
      file.metadata_[it.key()] = it.value().get<std::string>();
    }
    return true;
  }

  bool parseEntry(const std::string &name, const json &entry, TensorView *view,
                  uint64_t *begin, uint64_t *end, uint64_t dataBytes) {
    if (!entry.is_object())
      return failTensor(name, "header entry is not a JSON object");

    auto dtypeIt = entry.find("dtype");
    if (dtypeIt == entry.end() || !dtypeIt->is_string())
      return failTensor(name, "missing or non-string \"dtype\"");
    const std::string dtype = dtypeIt->get<std::string>();
    if (!parseDType(dtype, &view->dtype)) {
      if (isOtherSafetensorsDType(dtype))
        return failTensor(name, "unsupported dtype " + dtype +
                                    " (only F32, F16 and BF16 are handled)");
      return failTensor(name, "unknown dtype " + quote(dtype));
    }

    auto shapeIt = entry.find("shape");
    if (shapeIt == entry.end() || !shapeIt->is_array())
      return failTensor(name, "missing or non-array \"shape\"");
    uint64_t elements = 1;
    bool overflow = false;
    for (size_t i = 0; i < shapeIt->size(); ++i) {
      uint64_t dim;
      if (!asUnsigned((*shapeIt)[i], &dim) ||
          dim > uint64_t(std::numeric_limits<int64_t>::max()))
        return failTensor(name, "shape entry " + std::to_string(i) +
                                    " is not a non-negative integer");
      view->shape.push_back(static_cast<int64_t>(dim));
      overflow = overflow || mulOverflows(elements, dim, &elements);
    }
    uint64_t bytes = 0;
    overflow =
        overflow || mulOverflows(elements, dtypeSize(view->dtype), &bytes);
    if (overflow)
      return failTensor(name, "shape " + formatShape(view->shape) +
                                  " is too large to address");

    auto offsetsIt = entry.find("data_offsets");
    if (offsetsIt == entry.end() || !offsetsIt->is_array() ||
        offsetsIt->size() != 2 || !asUnsigned((*offsetsIt)[0], begin) ||
        !asUnsigned((*offsetsIt)[1], end))
      return failTensor(
          name, "\"data_offsets\" is not a pair of non-negative integers");
    std::string range =
        "[" + std::to_string(*begin) + ", " + std::to_string(*end) + "]";
    if (*begin > *end)
      return failTensor(name, "data_offsets " + range + " are reversed");
    if (*end > dataBytes)
      return failTensor(name, "data_offsets " + range +
                                  " lie outside the data section of " +
                                  std::to_string(dataBytes) + " bytes");
    if (*end - *begin != bytes)
      return failTensor(name, "data_offsets " + range + " span " +
                                  std::to_string(*end - *begin) +
                                  " bytes but shape " +
                                  formatShape(view->shape) + " of " + dtype +
                                  " needs " + std::to_string(bytes));
    view->bytes = static_cast<size_t>(bytes);
    return true;
  }
};

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string &path,
                                                       std::string *error) {
  int fd = support::openRegularFile(path, error);
  if (fd < 0)
    return nullptr;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *error = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  uint64_t fileBytes = static_cast<uint64_t>(st.st_size);
  const uint8_t *base = nullptr;
  // An empty file cannot be mapped; the parser reports it as too small.
  static const uint8_t kEmpty[1] = {0};
  if (fileBytes == 0) {
    base = kEmpty;
  } else {
    void *mapping =
        ::mmap(nullptr, fileBytes, PROT_READ, MAP_PRIVATE, fd, /*offset=*/0);
    if (mapping == MAP_FAILED) {
      *error = path + ": cannot map: " + std::strerror(errno);
      ::close(fd);
      return nullptr;
    }
    file->mapping_ = mapping;
    file->mappedBytes_ = fileBytes;
    base = static_cast<const uint8_t *>(mapping);
  }
  ::close(fd);

  try {
    SafetensorsParser parser{*file, file->path_, error};
    if (!parser.parse(base, fileBytes))
      return nullptr;
  } catch (const std::exception &e) {
    *error = path + ": " + e.what();
    return nullptr;
  }
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_)
    ::munmap(mapping_, mappedBytes_);
}

const TensorView *SafetensorsFile::find(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// Checkpoint
//===----------------------------------------------------------------------===//

struct CheckpointLoader {
  Checkpoint &ckpt;
  std::string *error;

  bool openSingle(const std::string &path) {
    auto file = SafetensorsFile::open(path, error);
    if (!file)
      return false;
    for (const auto &[name, view] : file->tensors())
      ckpt.table_[name] = &view;
    ckpt.files_.push_back(std::move(file));
    return true;
  }

  bool openSharded(const std::string &dir, const std::string &indexPath) {
    auto fail = [&](const std::string &message) {
      *error = indexPath + ": " + message;
      return false;
    };
    std::string text;
    if (!support::readInputFile(indexPath, support::kMaxJsonFileBytes, &text,
                                error))
      return false;

    // A tensor named twice in weight_map would otherwise be dropped.
    std::string topKey, duplicate;
    std::set<std::string> seen;
    auto callback = [&](int depth, json::parse_event_t event, json &parsed) {
      if (event != json::parse_event_t::key)
        return true;
      if (depth == 1)
        topKey = parsed.get<std::string>();
      else if (depth == 2 && topKey == "weight_map" && duplicate.empty() &&
               !seen.insert(parsed.get<std::string>()).second)
        duplicate = parsed.get<std::string>();
      return true;
    };
    json index;
    try {
      index = json::parse(text, callback);
    } catch (const json::exception &e) {
      return fail(std::string("not valid JSON: ") + e.what());
    }
    if (!index.is_object())
      return fail("not a JSON object");
    if (!duplicate.empty())
      return fail("weight_map lists tensor " + quote(duplicate) +
                  " more than once");

    auto metaIt = index.find("metadata");
    if (metaIt != index.end() && !metaIt->is_null()) {
      if (!metaIt->is_object())
        return fail("\"metadata\" is not a JSON object");
      for (auto it = metaIt->begin(); it != metaIt->end(); ++it)
        ckpt.indexMetadata_[it.key()] = it.value().is_string()
                                            ? it.value().get<std::string>()
                                            : it.value().dump();
    }

    auto mapIt = index.find("weight_map");
    if (mapIt == index.end() || !mapIt->is_object())
      return fail("missing \"weight_map\" object");
    if (mapIt->empty())
      return fail("\"weight_map\" is empty");
    std::map<std::string, std::string> weightMap;
    std::set<std::string> shardNames;
    for (auto it = mapIt->begin(); it != mapIt->end(); ++it) {
      if (!it.value().is_string())
        return fail("weight_map entry for " + quote(it.key()) +
                    " is not a string");
      std::string shard = it.value().get<std::string>();
      if (!isSafeRelativePath(shard))
        return fail("weight_map entry for " + quote(it.key()) + " names file " +
                    quote(shard) + " outside the checkpoint directory");
      weightMap[it.key()] = shard;
      shardNames.insert(shard);
    }

    // shard name -> opened file; tensor -> shard it was found in.
    std::map<std::string, const SafetensorsFile *> shards;
    std::map<std::string, std::string> foundIn;
    for (const std::string &shard : shardNames) {
      std::string path = joinPath(dir, shard);
      if (!isRegularFile(path)) {
        std::string example;
        for (const auto &[tensor, mapped] : weightMap)
          if (mapped == shard) {
            example = tensor;
            break;
          }
        return fail("weight_map maps " + quote(example) + " to " +
                    quote(shard) + ", which does not exist");
      }
      auto file = SafetensorsFile::open(path, error);
      if (!file)
        return false;
      for (const auto &[name, view] : file->tensors()) {
        auto [it, fresh] = foundIn.emplace(name, shard);
        if (!fresh)
          return fail("tensor " + quote(name) + " appears in both " +
                      quote(it->second) + " and " + quote(shard));
        ckpt.table_[name] = &view;
      }
      shards[shard] = file.get();
      ckpt.files_.push_back(std::move(file));
    }

    for (const auto &[tensor, shard] : weightMap) {
      auto it = foundIn.find(tensor);
      if (it == foundIn.end())
        return fail("weight_map maps " + quote(tensor) + " to " + quote(shard) +
                    ", which does not contain it");
      if (it->second != shard)
        return fail("weight_map maps " + quote(tensor) + " to " + quote(shard) +
                    ", but it is stored in " + quote(it->second));
    }
    for (const auto &[tensor, shard] : foundIn)
      if (!weightMap.count(tensor))
        return fail("tensor " + quote(tensor) + " in " + quote(shard) +
                    " is not listed in weight_map");
    return true;
  }
};

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string &dir,
                                             std::string *error) {
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
  ckpt->source_ = dir;
  CheckpointLoader loader{*ckpt, error};
  try {
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) {
      *error = dir + ": cannot open checkpoint: " + std::strerror(errno);
      return nullptr;
    }
    bool ok;
    if (S_ISREG(st.st_mode)) {
      ok = loader.openSingle(dir);
    } else {
      std::string index = joinPath(dir, "model.safetensors.index.json");
      std::string single = joinPath(dir, "model.safetensors");
      if (isRegularFile(index)) {
        ok = loader.openSharded(dir, index);
      } else if (isRegularFile(single)) {
        ok = loader.openSingle(single);
      } else {
        *error = dir + ": no model.safetensors or "
                       "model.safetensors.index.json in the directory";
        return nullptr;
      }
    }
    if (!ok)
      return nullptr;
  } catch (const std::exception &e) {
    *error = dir + ": " + e.what();
    return nullptr;
  }
  return ckpt;
}

const TensorView *Checkpoint::find(const std::string &name) const {
  auto it = table_.find(name);
  return it == table_.end() ? nullptr : it->second;
}

void Checkpoint::replaceTensors(std::map<std::string, TensorView> views) {
  replaced_ = std::move(views);
  table_.clear();
  for (const auto &[name, view] : replaced_)
    table_[name] = &view;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> result;
  result.reserve(table_.size());
  for (const auto &entry : table_)
    result.push_back(entry.first);
  return result;
}

//===----------------------------------------------------------------------===//
// SafetensorsWriter
//===----------------------------------------------------------------------===//

SafetensorsWriter::~SafetensorsWriter() { abandon(); }

void SafetensorsWriter::abandon() {
  file_.abandon();
  out_ = nullptr;
}

bool SafetensorsWriter::setMetadata(const std::string &key,
                                    const std::string &value,
                                    std::string *error) {
  if (begun_) {
    *error = "safetensors writer: metadata must be set before begin()";
    return false;
  }
  metadata_[key] = value;
  return true;
}

bool SafetensorsWriter::declare(const std::string &name, DType dtype,
                                const std::vector<int64_t> &shape,
                                std::string *error) {
  auto fail = [&](const std::string &message) {
    *error = "safetensors writer: tensor " + quote(name) + ": " + message;
    return false;
  };
  if (begun_)
    return fail("declared after begin()");
  if (name.empty() || name == "__metadata__")
    return fail("invalid tensor name");
  if (entries_.count(name))
    return fail("declared twice");
  uint64_t bytes = dtypeSize(dtype);
  for (int64_t dim : shape) {
    if (dim < 0)
      return fail("negative dimension in shape " + formatShape(shape));
    if (mulOverflows(bytes, static_cast<uint64_t>(dim), &bytes))
      return fail("shape " + formatShape(shape) + " is too large");
  }
  entries_[name] = Entry{dtype, shape, bytes};
  return true;
}

bool SafetensorsWriter::begin(const std::string &path, std::string *error) {
  if (begun_) {
    *error = "safetensors writer: begin() called twice";
    return false;
  }
  json header = json::object();
  if (!metadata_.empty())
    header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const auto &[name, entry] : entries_) {
    header[name] = {{"dtype", dtypeName(entry.dtype)},
                    {"shape", entry.shape},
                    {"data_offsets", {offset, offset + entry.bytes}}};
    offset += entry.bytes;
    order_.push_back(name);
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception &) {
    *error = path + ": tensor names and metadata must be valid UTF-8";
    return false;
  }
  // Pad so that the data section starts 8-byte aligned, as the reference
  // writer does.
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxHeaderBytes) {
    *error = path + ": header of " + std::to_string(text.size()) +
             " bytes exceeds the limit of " + std::to_string(kMaxHeaderBytes);
    return false;
  }

  path_ = path;
  if (!file_.open(path, error))
    return false;
  out_ = file_.stream();
  begun_ = true;
  uint8_t length[8];
  storeLE32(length, static_cast<uint32_t>(text.size()));
  storeLE32(length + 4, static_cast<uint32_t>(uint64_t(text.size()) >> 32));
  return writeRaw(length, sizeof length, error) &&
         writeRaw(text.data(), text.size(), error);
}

std::vector<std::string> SafetensorsWriter::order() const {
  std::vector<std::string> names;
  for (const auto &entry : entries_)
    names.push_back(entry.first);
  return names;
}

bool SafetensorsWriter::writeRaw(const void *data, size_t bytes,
                                 std::string *error) {
  if (bytes && std::fwrite(data, 1, bytes, out_) != bytes) {
    *error = path_ + ": write failed: " + std::strerror(errno);
    failed_ = true;
    abandon();
    return false;
  }
  return true;
}

bool SafetensorsWriter::advanceTo(const std::string &name, uint64_t bytes,
                                  std::string *error) {
  auto fail = [&](const std::string &message) {
    *error = path_ + ": tensor " + quote(name) + ": " + message;
    return false;
  };
  if (!begun_ || failed_ || !out_) {
    *error = "safetensors writer: not writing (begin() missing, an earlier "
             "write failed, or finish() was called)";
    return false;
  }
  if (!entries_.count(name))
    return fail("was never declared");
  // Step past finished tensors until `name` is the one being filled.
  while (current_ < order_.size() && order_[current_] != name &&
         currentDone_ == entries_[order_[current_]].bytes) {
    ++current_;
    currentDone_ = 0;
  }
  if (current_ >= order_.size())
    return fail("written out of order (its data is already complete)");
  const std::string &expected = order_[current_];
  const Entry &entry = entries_[expected];
  if (expected != name) {
    if (name < expected)
      return fail("written out of order (its data is already complete)");
    return fail("written out of order: " + quote(expected) + " has " +
                std::to_string(currentDone_) + " of " +
                std::to_string(entry.bytes) + " bytes");
  }
  if (bytes > entry.bytes - currentDone_)
    return fail("writing " + std::to_string(bytes) + " bytes exceeds its " +
                std::to_string(entry.bytes) + " bytes (" +
                std::to_string(currentDone_) + " already written)");
  return true;
}

bool SafetensorsWriter::writeBytes(const std::string &name, const void *data,
                                   size_t bytes, std::string *error) {
  if (!advanceTo(name, bytes, error))
    return false;
  if (!writeRaw(data, bytes, error))
    return false;
  currentDone_ += bytes;
  return true;
}

bool SafetensorsWriter::writeFloats(const std::string &name, const float *data,
                                    size_t count, std::string *error) {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    *error =
        "safetensors writer: tensor " + quote(name) + ": was never declared";
    return false;
  }
  DType dtype = it->second.dtype;
  size_t size = dtypeSize(dtype);
  uint64_t bytes;
  if (mulOverflows(count, size, &bytes)) {
    *error =
        "safetensors writer: tensor " + quote(name) + ": too many elements";
    return false;
  }
  if (!advanceTo(name, bytes, error))
    return false;
  constexpr size_t kChunk = 4096;
  uint8_t buffer[kChunk * 4];
  for (size_t done = 0; done < count;) {
    size_t n = std::min(kChunk, count - done);
    uint8_t *p = buffer;
    for (size_t i = 0; i < n; ++i) {
      float value = data[done + i];
      switch (dtype) {
      case DType::F32:
        storeLE32(p, floatBits(value));
        p += 4;
        break;
      case DType::F16:
        storeLE16(p, floatToF16(value));
        p += 2;
        break;
      case DType::BF16:
        storeLE16(p, floatToBf16(value));
        p += 2;
        break;
      }
    }
    if (!writeRaw(buffer, n * size, error))
      return false;
    currentDone_ += n * size;
    done += n;
  }
  return true;
}

bool SafetensorsWriter::finish(std::string *error) {
  if (!begun_ || failed_ || !out_) {
    *error = "safetensors writer: finish() without a successful begin()";
    return false;
  }
  for (; current_ < order_.size(); ++current_, currentDone_ = 0) {
    const Entry &entry = entries_[order_[current_]];
    if (currentDone_ != entry.bytes) {
      *error = path_ + ": tensor " + quote(order_[current_]) +
               " is incomplete: " + std::to_string(currentDone_) + " of " +
               std::to_string(entry.bytes) + " bytes written";
      abandon();
      failed_ = true;
      return false;
    }
  }
  out_ = nullptr;
  if (!file_.commit(error)) {
    failed_ = true;
    return false;
  }
  return true;
}

} // namespace pccx::import
