//===- InputFile.h - bounded reads of input files ---------------*- C++ -*-===//
//
// Every file a tool reads whole (configs, tokenizers, templates, result
// files, manifests, parameter files) comes from a path a user or a
// downloaded checkpoint names, so it may be a directory, a FIFO that never
// ends or blocks the open, a device that never ends (/dev/zero), or just
// huge. These helpers refuse anything but a regular file, never block in
// open() (O_NONBLOCK, then fstat), and cap the bytes read.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_SUPPORT_INPUTFILE_H
#define PCCX_HW_SUPPORT_INPUTFILE_H

#include <cstdint>
#include <string>

namespace pccx::support {

/// Limits for the kinds of files the tools read whole.
constexpr uint64_t kMaxJsonFileBytes = 64ull << 20;      ///< config, index
constexpr uint64_t kMaxTokenizerFileBytes = 256ull << 20; ///< tokenizer.model
constexpr uint64_t kMaxTemplateFileBytes = 1ull << 20;    ///< chat template
constexpr uint64_t kMaxSchemaFileBytes = 4ull << 20;      ///< JSON schema
constexpr uint64_t kMaxDataFileBytes = 4ull << 30;        ///< results, text

/// Opens `path` for reading when it is a regular file (after symlinks);
/// returns the descriptor (blocking mode restored), or -1 with `*error`
/// naming the path: missing, unreadable, a directory, a FIFO, a device or
/// a socket. Never blocks, also on a FIFO without a writer.
int openRegularFile(const std::string &path, std::string *error);

/// Reads the whole regular file `path` into `*out`; false with `*error`
/// (naming the path) when it is not a regular file, cannot be read, or
/// holds more than `maxBytes` bytes.
bool readInputFile(const std::string &path, uint64_t maxBytes,
                   std::string *out, std::string *error);

} // namespace pccx::support

#endif
