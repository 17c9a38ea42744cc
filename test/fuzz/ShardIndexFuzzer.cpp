//===- ShardIndexFuzzer.cpp - model.safetensors.index.json ----------------===//
//
// A checkpoint directory whose shard index is the input, next to one small
// valid shard: the index parser, duplicate detection and the tensor table
// built across files.
//
//===----------------------------------------------------------------------===//

#include "runtime/import/Safetensors.h"
#include "test/fuzz/FuzzSupport.h"

#include <sys/stat.h>

using namespace pccx::import;

namespace {
const std::string &checkpointDir() {
  static const std::string dir = [] {
    std::string d = pccx::fuzz::scratchDir() + "/ckpt";
    ::mkdir(d.c_str(), 0755);
    // One shard "a.safetensors" with tensor "x" (two F32 values).
    std::string header =
        R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    std::string bytes(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i)
      bytes[size_t(i)] = char((n >> (8 * i)) & 0xff);
    bytes += header + std::string(8, '\0');
    std::FILE *f = std::fopen((d + "/a.safetensors").c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    return d;
  }();
  return dir;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = checkpointDir();
  std::FILE *f = std::fopen((dir + "/model.safetensors.index.json").c_str(),
                            "wb");
  if (size)
    std::fwrite(data, 1, size, f);
  std::fclose(f);
  std::string error;
  auto checkpoint = Checkpoint::open(dir, &error);
  if (!checkpoint) {
    if (error.empty())
      __builtin_trap();
    return 0;
  }
  for (const std::string &name : checkpoint->names())
    if (!checkpoint->find(name))
      __builtin_trap();
  return 0;
}
