//===- FuzzSupport.h - scratch files for the fuzz targets -------*- C++ -*-===//
//
// The readers under test take paths (they map their files), so each input
// is written to a per-process scratch directory, on tmpfs when there is one.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_TEST_FUZZ_FUZZSUPPORT_H
#define PCCX_TEST_FUZZ_FUZZSUPPORT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace pccx::fuzz {

/// A directory that lives as long as the process (the string is never
/// destroyed: the exit handler that removes the directory reads it).
inline const std::string &scratchDir() {
  static const std::string &dir = *new std::string([] {
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string tmpl = base + "/pccx-fuzz-XXXXXX";
    if (!mkdtemp(&tmpl[0]))
      std::abort();
    std::atexit([] {
      std::string cmd = "rm -rf '" + scratchDir() + "'";
      (void)!std::system(cmd.c_str());
    });
    return tmpl;
  }());
  return dir;
}

/// Writes `size` bytes to scratchDir()/name and returns the path.
inline std::string writeScratch(const std::string &name, const void *data,
                                size_t size) {
  std::string path = scratchDir() + "/" + name;
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  if (size)
    std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

} // namespace pccx::fuzz

#endif
