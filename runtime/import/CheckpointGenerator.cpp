//===- CheckpointGenerator.cpp - synthetic Gemma 3n checkpoints -----------===//

#include "runtime/import/CheckpointGenerator.h"

#include "runtime/import/Safetensors.h"

#include "hw/support/Names.h"
#include "hw/support/OutputFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pccx::import {

namespace {

/// splitmix64: small, fast and identical on every platform (the standard
/// library's distributions are not), so a seed names one checkpoint.
struct Random {
  uint64_t state;
  explicit Random(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1).
  double uniform() { return (double(next() >> 11) + 0.5) * 0x1.0p-53; }
  /// Standard normal pairs (Box-Muller).
  void normalPair(float *a, float *b) {
    double r = std::sqrt(-2.0 * std::log(uniform()));
    double t = 2.0 * M_PI * uniform();
    *a = float(r * std::cos(t));
    *b = float(r * std::sin(t));
  }
};

uint64_t hashName(const std::string &name, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : name)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/// Every value is mean + sigma * N(0, 1).
struct Distribution {
  float mean, sigma;
};

/// Magnitudes that keep each stage's activations near unit RMS: matrices
/// N(0, 1/fan_in), gains near 1, the embeddings scaled so that the scaled
/// lookups have unit RMS, router weights large enough that tanh leaves its
/// linear range (its input is divided by H).
Distribution distributionFor(const std::string &name,
                             const std::vector<int64_t> &shape,
                             const Gemma3nTextConfig &config) {
  if (endsWith(name, "norm.weight") || endsWith(name, "correct_output_scale"))
    return {1.0f, 0.1f};
  if (endsWith(name, "modality_router.weight"))
    return {0.0f, float(std::sqrt(double(config.hidden_size)))};
  if (endsWith(name, "prediction_coefs.weight") ||
      endsWith(name, "correction_coefs.weight"))
    return {0.0f, 0.1f};
  if (endsWith(name, "embed_tokens.weight") || name == "lm_head.weight")
    return {0.0f, float(1.0 / std::sqrt(double(config.hidden_size)))};
  if (endsWith(name, "embed_tokens_per_layer.weight"))
    return {0.0f, float(1.0 / std::sqrt(double(
                                  config.hidden_size_per_layer_input)))};
  int64_t fanIn = shape.size() == 2 ? shape[1] : 1;
  return {0.0f, float(1.0 / std::sqrt(double(fanIn)))};
}

bool writeTextFile(const std::string &path, const std::string &text,
                   std::string *error) {
  return writeOutputFile(path, text.data(), text.size(), error);
}

} // namespace

std::vector<std::string> checkpointPresets() { return {"tiny", "e2b", "e4b"}; }

bool presetConfig(const std::string &name, Gemma3nTextConfig *config,
                  std::string *error) {
  Gemma3nTextConfig c; // transformers' defaults are the E4B sizes
  if (name == "e4b") {
    c.normalize();
  } else if (name == "e2b") {
    c.num_hidden_layers = 30;
    c.intermediate_size.assign(30, 8192);
    c.num_kv_shared_layers = 10;
    c.normalize();
  } else if (name == "tiny") {
    using T = LayerType;
    c.vocab_size = 512;
    c.vocab_size_per_layer_input = 384;
    c.hidden_size = 64;
    c.hidden_size_per_layer_input = 16;
    c.num_hidden_layers = 7;
    // Layers 5 and 6 share the caches of layers 3 (sliding) and 4 (full).
    c.layer_types = {T::Sliding, T::Sliding, T::Full, T::Sliding,
                     T::Full,    T::Sliding, T::Full};
    c.num_kv_shared_layers = 2;
    c.intermediate_size = {128, 128, 96, 128, 96, 128, 96};
    c.activation_sparsity = {0.95, 0.9, 0, 0, 0, 0, 0};
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 16;
    c.sliding_window = 8;
    c.laurel_rank = 8;
    c.max_position_embeddings = 256;
    c.bos_token_id = 2;
    c.pad_token_id = 0;
    c.eos_token_id = {1};
  } else {
    *error = "unknown preset '" + name + "' (known: " +
             support::joinNames(checkpointPresets(),
                                [](const std::string &p) { return p; }) +
             ")";
    return false;
  }
  if (!c.validate(error))
    return false;
  *config = c;
  return true;
}

namespace {

bool isCheckpointFile(const std::string &name) {
  return name == "config.json" || endsWith(name, ".safetensors") ||
         endsWith(name, ".safetensors.index.json");
}

/// "a, b, c, ..." of the first three names.
std::string someNames(const std::vector<std::string> &names) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < 3; ++i)
    text += (i ? ", " : "") + names[i];
  return names.size() > 3 ? text + ", ..." : text;
}

/// A checkpoint's files, sorted, its shards counted rather than listed:
/// "config.json, model.safetensors.index.json, 4 .safetensors files".
std::string describeCheckpointFiles(const std::vector<std::string> &names) {
  std::string text, shard;
  size_t shards = 0;
  for (const std::string &name : names) {
    if (endsWith(name, ".safetensors")) {
      shard = name;
      ++shards;
      continue;
    }
    text += (text.empty() ? "" : ", ") + name;
  }
  if (shards)
    text +=
        (text.empty() ? "" : ", ") +
        (shards == 1 ? shard : std::to_string(shards) + " .safetensors files");
  return text;
}

} // namespace

bool checkCheckpointOutput(const std::string &dir, bool overwrite,
                           std::string *error, const char *overwriteFlag) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return true; // created by the writer (or an error it reports)
  if (!S_ISDIR(st.st_mode)) {
    *error = dir + ": exists and is not a directory";
    return false;
  }
  DIR *d = ::opendir(dir.c_str());
  if (!d) {
    *error = dir + ": cannot list the directory: " + std::strerror(errno);
    return false;
  }
  std::vector<std::string> names, checkpointFiles;
  std::string subdirectory;
  while (dirent *e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..")
      continue;
    names.push_back(name);
    if (isCheckpointFile(name))
      checkpointFiles.push_back(name);
    struct stat entry;
    if (::lstat((dir + "/" + name).c_str(), &entry) == 0 &&
        S_ISDIR(entry.st_mode))
      subdirectory = name;
  }
  ::closedir(d);
  if (!subdirectory.empty()) {
    *error = dir + ": holds the directory '" + subdirectory +
             "'; a checkpoint replaces a directory of files only, never a "
             "tree (remove it yourself, or give another directory)";
    return false;
  }
  if (names.empty() || overwrite)
    return true;
  std::sort(names.begin(), names.end());
  std::sort(checkpointFiles.begin(), checkpointFiles.end());
  *error = checkpointFiles.empty()
               ? dir + ": is not empty (" + someNames(names) +
                     "); remove what it holds"
               : dir + ": already holds a checkpoint (" +
                     describeCheckpointFiles(checkpointFiles) + "); remove it";
  if (overwriteFlag)
    *error += std::string(", or give ") + overwriteFlag +
              " to replace the directory whole";
  return false;
}

bool writeCheckpoint(const std::string &path,
                     const std::vector<OutputTensor> &unsorted,
                     const std::vector<OutputFileText> &files,
                     const CheckpointWriteOptions &options,
                     std::string *error) {
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  // Like mkdir -p for the parents: the directory itself is renamed into
  // place.
  for (size_t at = dir.find('/', 1); at != std::string::npos;
       at = dir.find('/', at + 1)) {
    std::string part = dir.substr(0, at);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = part + ": cannot create directory: " + std::strerror(errno);
      return false;
    }
  }
  // One writer per existing directory: a second run is refused at once
  // rather than after writing gigabytes. (Two runs into a missing one
  // cannot mix either: each renames a whole directory.) The lock goes with
  // the process.
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct DirLock {
    int fd;
    ~DirLock() {
      if (fd >= 0)
        ::close(fd); // releases the flock
    }
  } lock{dirFd};
  if (dirFd >= 0 && ::flock(dirFd, LOCK_EX | LOCK_NB) != 0) {
    *error = dir + (errno == EWOULDBLOCK
                        ? ": another process is writing a checkpoint here"
                        : ": cannot lock directory: " +
                              std::string(std::strerror(errno)));
    return false;
  }
  if (!checkCheckpointOutput(dir, options.overwrite, error))
    return false;
  OutputDirectory out;
  if (!out.open(dir, error))
    return false;
  const std::string &temp = out.tempPath();

  // Tensors sorted by name, packed into shards in that order.
  std::vector<const OutputTensor *> tensors;
  for (const OutputTensor &t : unsorted)
    tensors.push_back(&t);
  std::sort(tensors.begin(), tensors.end(),
            [](const OutputTensor *a, const OutputTensor *b) {
              return a->name < b->name;
            });
  std::vector<std::vector<const OutputTensor *>> shards(1);
  uint64_t shardBytes = 0, total = 0;
  for (const OutputTensor *t : tensors) {
    if (!shards.back().empty() &&
        shardBytes + t->bytes > options.maxShardBytes) {
      shards.emplace_back();
      shardBytes = 0;
    }
    shards.back().push_back(t);
    shardBytes += t->bytes;
    total += t->bytes;
  }

  nlohmann::ordered_json weightMap = nlohmann::ordered_json::object();
  uint64_t done = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    char file[64];
    if (shards.size() == 1)
      std::snprintf(file, sizeof file, "model.safetensors");
    else
      std::snprintf(file, sizeof file, "model-%05zu-of-%05zu.safetensors",
                    s + 1, shards.size());
    SafetensorsWriter writer;
    if (!writer.setMetadata("format", "pt", error))
      return false;
    for (const OutputTensor *t : shards[s])
      if (!writer.declare(t->name, t->dtype, t->shape, error))
        return false;
    if (!writer.begin(temp + "/" + file, error))
      return false;
    for (const OutputTensor *t : shards[s]) {
      weightMap[t->name] = file;
      if (!t->write(writer, error))
        return false;
      done += t->bytes;
      if (options.progress)
        options.progress(done, total);
    }
    if (!writer.finish(error))
      return false;
  }
  if (shards.size() > 1) {
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = weightMap;
    if (!writeTextFile(temp + "/model.safetensors.index.json",
                       index.dump(2) + "\n", error))
      return false;
  }
  for (const OutputFileText &f : files)
    if (!(f.copyFrom.empty()
              ? writeTextFile(temp + "/" + f.name, f.content, error)
              : copyRegularFile(f.copyFrom, temp + "/" + f.name, error)))
      return false;
  return out.commit(options.overwrite, error);
}

bool generateCheckpoint(const Gemma3nTextConfig &config,
                        const std::string &dir,
                        const GeneratorOptions &options, std::string *error) {
  if (!config.validate(error))
    return false;
  std::vector<OutputTensor> tensors;
  for (const ExpectedTensor &t : expectedTensors(config, options.prefix)) {
    OutputTensor out;
    out.name = t.name;
    out.dtype = DType::BF16;
    out.shape = t.shape;
    out.bytes = 2;
    for (int64_t d : t.shape)
      out.bytes *= uint64_t(d);
    const std::string relative =
        t.name.compare(0, options.prefix.size(), options.prefix) == 0
            ? t.name.substr(options.prefix.size())
            : t.name;
    const uint64_t seed = options.seed;
    out.write = [&config, relative, seed, name = t.name, shape = t.shape,
                 count = out.bytes / 2](SafetensorsWriter &writer,
                                        std::string *error) {
      Distribution d = distributionFor(relative, shape, config);
      Random rng(hashName(relative, seed));
      const uint64_t chunk = uint64_t(1) << 20;
      std::vector<float> buffer(size_t(std::min(count, chunk) + 1));
      for (uint64_t first = 0; first < count; first += chunk) {
        uint64_t n = std::min(chunk, count - first);
        for (uint64_t i = 0; i < n; i += 2) {
          float a, b;
          rng.normalPair(&a, &b);
          buffer[size_t(i)] = d.mean + d.sigma * a;
          buffer[size_t(i + 1)] = d.mean + d.sigma * b;
        }
        if (!writer.writeFloats(name, buffer.data(), size_t(n), error))
          return false;
      }
      return true;
    };
    tensors.push_back(std::move(out));
  }
  CheckpointWriteOptions write;
  write.maxShardBytes = options.maxShardBytes;
  write.overwrite = options.overwrite;
  write.progress = options.progress;
  return writeCheckpoint(dir, tensors, {{"config.json", config.toJson(2), ""}},
                         write, error);
}

} // namespace pccx::import
