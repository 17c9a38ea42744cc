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
// installs no signal handler of its own). A directory written as a whole (a
// checkpoint) goes the same way through an OutputDirectory.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_SUPPORT_OUTPUTFILE_H
#define PCCX_HW_SUPPORT_OUTPUTFILE_H

#include <cstdio>
#include <string>

namespace pccx {

/// Removes the temp file of every output not yet committed, and the temp
/// directory of every OutputDirectory with the files in it. Only plain
/// memory reads and system calls: safe in a signal handler.
void removePartialOutputs();

/// The absolute path `path` names with every symlink resolved, also when its
/// last components do not exist yet: those are taken as the directories a
/// writer would create ("." and ".." applied to the path before them). Empty
/// when a component that exists cannot be resolved.
std::string resolvedPath(const std::string &path);

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

/// Copies the regular file `from` (opened as support::openRegularFile does:
/// a FIFO, device or directory is an error, the open never blocks) to `to`
/// through an OutputFile, 1 MiB at a time, so memory stays flat whatever
/// the file's size.
bool copyRegularFile(const std::string &from, const std::string &to,
                     std::string *error);

/// A directory written as a whole (a checkpoint): filled under a unique temp
/// name beside its final path (PATH.tmp.PID.N) and renamed into place by
/// commit(), so no reader sees it half-written and nothing of a directory it
/// replaces survives in it. The temp directory and the files in it are
/// removed on failure, when the object dies uncommitted, and by
/// removePartialOutputs(). It is meant to hold files only.
class OutputDirectory {
public:
  OutputDirectory() = default;
  OutputDirectory(const OutputDirectory &) = delete;
  OutputDirectory &operator=(const OutputDirectory &) = delete;
  ~OutputDirectory() { abandon(); }

  /// Creates the temp directory for `path`, whose parent must exist. What
  /// is at `path` must be nothing or a directory (a symlink to one stays a
  /// link: the directory it names is replaced), and must not hold the
  /// working directory, which the rename would leave deleted.
  bool open(const std::string &path, std::string *error);
  /// The temp directory to fill (valid between open and commit/abandon).
  const std::string &tempPath() const { return tmp_; }
  /// Syncs the temp directory and renames it to the path. A directory there
  /// that holds anything is swapped out and its files removed when
  /// `replace`; otherwise it is an error, and it stays as it was.
  bool commit(bool replace, std::string *error);
  /// Removes the temp directory and the files in it.
  void abandon();

private:
  std::string path_;   // as given, for messages
  std::string target_; // resolvedPath(path_)
  std::string tmp_;    // empty when not open
};

} // namespace pccx

#endif
