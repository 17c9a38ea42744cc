//===- FakeSysfs.h - a scratch directory standing in for /sys ---*- C++ -*-===//

#ifndef PCCX_TEST_UNIT_DEVICES_FAKESYSFS_H
#define PCCX_TEST_UNIT_DEVICES_FAKESYSFS_H

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace pccx::testsupport {

/// Files under a fresh /tmp directory, removed with the object.
struct FakeSysfs {
  std::string root;
  FakeSysfs() {
    char tmpl[] = "/tmp/pccx-sysfs-XXXXXX";
    root = mkdtemp(tmpl);
  }
  ~FakeSysfs() { (void)std::system(("rm -rf " + root).c_str()); }
  FakeSysfs(const FakeSysfs &) = delete;
  FakeSysfs &operator=(const FakeSysfs &) = delete;

  /// Writes `text` and a newline to root/path, creating its directories.
  void file(const std::string &path, const std::string &text) {
    std::string full = root + "/" + path;
    for (size_t i = root.size() + 1; i < full.size(); ++i)
      if (full[i] == '/')
        mkdir(full.substr(0, i).c_str(), 0755);
    std::ofstream(full) << text << "\n";
  }
  std::string read(const std::string &path) const {
    std::ifstream in(root + "/" + path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
};

} // namespace pccx::testsupport

#endif
