//===- OutputFile.h - writing an output without clobbering ------*- C++ -*-===//
//
// Every tool output goes through this. A regular file (new or existing, or
// the target of a symlink) is written to a unique temp file beside it and
// renamed over it once complete, so readers never see half a file and the
// symlink stays a symlink. "-" is standard output; a device, FIFO or socket
// is written in place (renaming over /dev/null would replace the device).
// The temp file is removed on failure and when the object dies uncommitted;
// a process that is killed removes it through removePartialOutputs(), which
// the tools' signal handlers call (tools/common/OutputCleanup.h; a library
// installs no signal handler of its own).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_SUPPORT_OUTPUTFILE_H
#define PCCX_HW_SUPPORT_OUTPUTFILE_H

#include <cstdio>
#include <string>

namespace pccx {

/// Removes the temp file of every output not yet committed. Only plain
/// memory reads and unlink(): safe in a signal handler.
void removePartialOutputs();

class OutputFile {
public:
  OutputFile() = default;
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;
  ~OutputFile() { abandon(); }

  /// Opens `path` for writing; false with a message naming it on failure.
  bool open(const std::string &path, std::string *error);
  /// The stream to write (valid between open and commit/abandon).
  std::FILE *stream() const { return stream_; }
  /// Its descriptor, for positioned writes (only a regular file seeks).
  int fd() const { return stream_ ? fileno(stream_) : -1; }
  /// Whether the output is a temp file that commit() renames into place.
  bool replaces() const { return !tmp_.empty(); }
  /// That temp file's path (empty when written directly).
  const std::string &tempPath() const { return tmp_; }
  /// Flushes, syncs and closes; renames the temp file into place.
  bool commit(std::string *error);
  /// Closes and removes the temp file (a direct output is left as is).
  void abandon();

private:
  std::string path_;   // as given, for messages
  std::string target_; // where the data ends up (a symlink resolved)
  std::string tmp_;    // empty when written directly
  std::FILE *stream_ = nullptr;
  bool ownsStream_ = false;
};

/// Writes `bytes` bytes to `path` through an OutputFile.
bool writeOutputFile(const std::string &path, const void *data, size_t bytes,
                     std::string *error);

} // namespace pccx

#endif
