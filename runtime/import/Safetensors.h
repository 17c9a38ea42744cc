//===- Safetensors.h - safetensors checkpoints, read and write --*- C++ -*-===//
//
// Reader and writer for the safetensors format used by Hugging Face
// checkpoints: an 8-byte little-endian header length N, N bytes of JSON
// ({name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {..}})
// and then the raw tensor bytes, offsets relative to the end of the header.
//
// Files are memory-mapped and every header field is checked before any data
// is handed out, so a view's data pointer always lies inside its mapping.
// Tensor data is never copied: callers convert element ranges on demand.
//
// Plain C++17 without LLVM. Errors are returned as values (a null result or
// `false` plus a message naming the file and tensor); nothing throws across
// this interface.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_IMPORT_SAFETENSORS_H
#define PCCX_RUNTIME_IMPORT_SAFETENSORS_H

#include "hw/support/OutputFile.h"

#include "hw/numerics/HalfFloat.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pccx::import {

/// Element types the importer handles. Checkpoints holding any other dtype
/// are rejected when opened.
enum class DType : uint8_t { F32, F16, BF16 };

/// Name as spelled in a safetensors header ("F32", "F16", "BF16").
const char *dtypeName(DType dtype);
/// Bytes per element.
size_t dtypeSize(DType dtype);
/// Parses a header dtype string; false for anything but F32/F16/BF16.
bool parseDType(const std::string &text, DType *dtype);

/// Scalar conversions (hw/numerics/HalfFloat.h).
using hw::bf16ToFloat;
using hw::f16ToFloat;
using hw::floatToBf16;
using hw::floatToF16;

/// One tensor inside a mapped file. `data` points into the mapping and stays
/// valid as long as the file (or checkpoint) that produced the view lives.
struct TensorView {
  std::string name;
  std::string file; ///< Path of the file holding the tensor.
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr; ///< Not necessarily aligned to the dtype.
  size_t bytes = 0; ///< of the elements the view shows
  /// A view of part of a stored matrix (a MatFormer slice,
  /// runtime/import/MatFormer.h): `data` is the stored matrix, whose rows
  /// have `storedColumns` elements, and the view's rows and columns are the
  /// stored [begin, end) ranges listed, in order. Empty lists: all of them.
  int64_t storedColumns = 0;
  std::vector<std::pair<int64_t, int64_t>> rowRanges, columnRanges;
  bool sliced() const { return storedColumns != 0; }

  /// Product of the shape (1 for a scalar).
  uint64_t numElements() const;
};

/// Converts elements [first, first + count) of `tensor` to float into `out`
/// (which must hold `count` floats). Fails, without writing, when the range
/// is outside the tensor.
bool convertToFloat(const TensorView &tensor, uint64_t first, uint64_t count,
                    float *out, std::string *error);

/// Drops the whole pages of [begin, end) of a mapping from this process once
/// read (they stay in the page cache), when the range is 1 MiB or more: a
/// 14 GB checkpoint streamed once does not grow the resident set by 14 GB.
void releasePages(const uint8_t *begin, const uint8_t *end);

/// Formats a shape as "[a, b, c]" for messages.
std::string formatShape(const std::vector<int64_t> &shape);

/// One mapped .safetensors file.
class SafetensorsFile {
public:
  /// Maps and validates `path`. On failure returns null and sets `*error`.
  static std::unique_ptr<SafetensorsFile> open(const std::string &path,
                                               std::string *error);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  const std::string &path() const { return path_; }
  /// Tensors keyed (and hence sorted) by name.
  const std::map<std::string, TensorView> &tensors() const { return tensors_; }
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// Null when the file holds no tensor of that name.
  const TensorView *find(const std::string &name) const;

private:
  SafetensorsFile() = default;
  std::string path_;
  void *mapping_ = nullptr;
  size_t mappedBytes_ = 0;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
  friend struct SafetensorsParser;
};

/// A checkpoint directory: either one `model.safetensors` or a sharded set
/// described by `model.safetensors.index.json`. Lookups go through one table
/// regardless of how many files back it.
class Checkpoint {
public:
  /// Opens `dir` (a directory; a path to a single .safetensors file is also
  /// accepted). On failure returns null and sets `*error`.
  static std::unique_ptr<Checkpoint> open(const std::string &dir,
                                          std::string *error);

  /// The directory (or file) this checkpoint was opened from.
  const std::string &source() const { return source_; }
  /// Null when no tensor has that name.
  const TensorView *find(const std::string &name) const;
  /// Every tensor name, sorted.
  std::vector<std::string> names() const;
  size_t size() const { return table_.size(); }
  /// The files backing the checkpoint, in the order they were opened.
  const std::vector<std::unique_ptr<SafetensorsFile>> &files() const {
    return files_;
  }
  /// Replaces the table with `views` (the checkpoint keeps them): what a
  /// MatFormer slice makes of the stored tensors. Views still point into
  /// this checkpoint's files.
  void replaceTensors(std::map<std::string, TensorView> views);

  /// The index's "metadata" object (string and number values rendered as
  /// text); empty for a single-file checkpoint.
  const std::map<std::string, std::string> &indexMetadata() const {
    return indexMetadata_;
  }

private:
  Checkpoint() = default;
  std::string source_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView *> table_;
  std::map<std::string, TensorView> replaced_;
  std::map<std::string, std::string> indexMetadata_;
  friend struct CheckpointLoader;
};

/// Streams tensors into a new safetensors file.
///
/// Usage: declare() every tensor, begin(path), then hand over each tensor's
/// data in sorted-name order (order() lists it), in as many chunks as
/// convenient, then finish(). The header is deterministic: names sorted,
/// compact JSON, padded with spaces so the data starts on an 8-byte
/// boundary. Data goes to `<path>.tmp`, which finish() renames to `<path>`;
/// a writer destroyed before finish() removes the temporary file.
class SafetensorsWriter {
public:
  SafetensorsWriter() = default;
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter &) = delete;
  SafetensorsWriter &operator=(const SafetensorsWriter &) = delete;

  /// Adds a string entry to "__metadata__". Only before begin().
  bool setMetadata(const std::string &key, const std::string &value,
                   std::string *error);
  /// Declares a tensor. Only before begin(); names must be unique and
  /// non-empty, dimensions non-negative.
  bool declare(const std::string &name, DType dtype,
               const std::vector<int64_t> &shape, std::string *error);
  /// Opens `<path>.tmp` and writes the header.
  bool begin(const std::string &path, std::string *error);
  /// Tensor names in the order their data must be written.
  std::vector<std::string> order() const;
  /// Appends raw bytes (already in the declared dtype) to tensor `name`,
  /// which must be the tensor currently being written or, once that one is
  /// complete, the next in order().
  bool writeBytes(const std::string &name, const void *data, size_t bytes,
                  std::string *error);
  /// Appends `count` elements given as float, converted to the declared
  /// dtype (bf16 and f16 round to nearest even).
  bool writeFloats(const std::string &name, const float *data, size_t count,
                   std::string *error);
  /// Checks that every tensor is complete, flushes and renames into place.
  bool finish(std::string *error);

private:
  struct Entry {
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t bytes;
  };
  bool advanceTo(const std::string &name, uint64_t bytes, std::string *error);
  bool writeRaw(const void *data, size_t bytes, std::string *error);
  void abandon();

  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
  std::vector<std::string> order_;
  std::string path_;
  OutputFile file_; // a unique temp file renamed over path_ by finish()
  std::FILE *out_ = nullptr;
  size_t current_ = 0;       ///< Index in order_ of the tensor being filled.
  uint64_t currentDone_ = 0; ///< Bytes of that tensor written so far.
  bool begun_ = false;
  bool failed_ = false;
};

} // namespace pccx::import

#endif // PCCX_RUNTIME_IMPORT_SAFETENSORS_H
