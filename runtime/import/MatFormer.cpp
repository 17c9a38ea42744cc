//===- MatFormer.cpp - nested Gemma 3n models cut from a checkpoint -------===//

#include "runtime/import/MatFormer.h"

#include "hw/support/InputFile.h"
#include "hw/support/OutputFile.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

using nlohmann::json;

namespace pccx::import {

const std::vector<PublishedSlice> &publishedSlices() {
  // google/gemma3n-slicing-configs, in its order (docs/matformer.md).
  static const std::vector<PublishedSlice> slices = {
      {"Main model (E4B)", "E4B", 35, 3.98, 62.30, "",
       "88888888888888888888888888888888888"},
      {"Config for official E2B Model", "E2B", 30, 1.91, 50.90,
       "20,21,22,23,24", "444444444444444444444444444444"},
      {"Config for E1.96B (layer-level)", "E1.96B-layer", 30, 1.96, 53.40,
       "20,21,22,23,24", "444484444444444444444444444444"},
      {"Config for E2.54B (layer-level)", "E2.54B-layer", 35, 2.54, 55.40, "",
       "44448444444444444444888884444444444"},
      {"Config for E2.69B (layer-level)", "E2.69B-layer", 35, 2.69, 57.70, "",
       "44448444484444844448888884444444444"},
      {"Config for E2.98B (layer-level)", "E2.98B-layer", 35, 2.98, 59.50, "",
       "44444444444444488888888884444488888"},
      {"Config for E3.18B (layer-level)", "E3.18B-layer", 35, 3.18, 61.80, "",
       "44448444488888888888888884444844448"},
      {"Config for E3.39B (layer-level)", "E3.39B-layer", 35, 3.39, 63.00, "",
       "44448444488888888888888888888844448"},
      {"Config for E3.59B (layer-level)", "E3.59B-layer", 35, 3.59, 63.40, "",
       "44448888888888888888888888888844448"},
      {"Config for E3.79B (layer-level)", "E3.79B-layer", 35, 3.79, 63.40, "",
       "44448888888888888888888888888888888"},
      {"Config for E2.49B (block-level)", "E2.49B-block", 35, 2.49, 54.50, "",
       "44444444444444444444888884444444444"},
      {"Config for E2.73B (block-level)", "E2.73B-block", 35, 2.73, 57.10, "",
       "44444444444444488888888884444444444"},
      {"Config for E2.98B (block-level)", "E2.98B-block", 35, 2.98, 59.50, "",
       "44444444448888888888888884444444444"},
      {"Config for E3.24B (block-level)", "E3.24B-block", 35, 3.24, 60.70, "",
       "44444444448888888888888888888844444"},
      {"Config for E3.49B (block-level)", "E3.49B-block", 35, 3.49, 61.40, "",
       "44444888888888888888888888888844444"},
      // The name says 3.79B, the parameter column 3.74 (as published).
      {"Config for E3.79B (block-level)", "E3.79B-block", 35, 3.74, 62.00, "",
       "44444888888888888888888888888888888"},
  };
  return slices;
}

const std::vector<std::string> &sliceCompanionFiles() {
  // What a Hugging Face Gemma 3n repository holds beside config.json and
  // the weights that a slice still uses or must carry: the tokenizer, the
  // chat template, the generation defaults, the multimodal processor's
  // configs, the model card and the license terms.
  static const std::vector<std::string> names = {
      "tokenizer.model",
      "tokenizer.json",
      "tokenizer_config.json",
      "special_tokens_map.json",
      "added_tokens.json",
      "chat_template.jinja",
      "chat_template.json",
      "generation_config.json",
      "preprocessor_config.json",
      "processor_config.json",
      "README.md",
      "LICENSE",
      "LICENSE.md",
      "LICENSE.txt",
      "NOTICE",
      "NOTICE.md",
      "NOTICE.txt",
      "USE_POLICY.md",
  };
  return names;
}

namespace {

bool sameText(const std::string &a, const char *b) {
  const std::string other(b);
  return a.size() == other.size() &&
         std::equal(a.begin(), a.end(), other.begin(), [](char x, char y) {
           return std::tolower((unsigned char)x) ==
                  std::tolower((unsigned char)y);
         });
}

const PublishedSlice *findPublished(const std::string &text) {
  for (const PublishedSlice &s : publishedSlices())
    if (sameText(text, s.name) || sameText(text, s.shortName))
      return &s;
  return nullptr;
}

bool publishedSlice(const PublishedSlice &p, const Gemma3nTextConfig &full,
                    MatFormerSlice *out, std::string *error) {
  const int64_t width = full.intermediate_size.empty()
                            ? 0
                            : full.intermediate_size.front();
  const bool uniform = std::all_of(
      full.intermediate_size.begin(), full.intermediate_size.end(),
      [&](int64_t w) { return w == width; });
  if (full.num_hidden_layers != 35 || full.num_kv_shared_layers != 15 ||
      !uniform || width % 8 != 0) {
    *error = std::string("slice '") + p.shortName +
             "' is published for E4B-shaped checkpoints (35 layers, the last "
             "15 KV-shared, one FFN width divisible by 8); this checkpoint "
             "has " +
             std::to_string(full.num_hidden_layers) + " layers, " +
             std::to_string(full.num_kv_shared_layers) + " KV-shared, " +
             (uniform ? "FFN width " + std::to_string(width)
                      : std::string("FFN widths that differ by layer")) +
             " (give a slice file for other models)";
    return false;
  }
  MatFormerSlice s;
  s.name = p.name;
  std::string skipped = p.skipped;
  for (size_t i = 0; i < skipped.size();) {
    size_t comma = skipped.find(',', i);
    if (comma == std::string::npos)
      comma = skipped.size();
    s.layersToSkip.push_back(std::stoll(skipped.substr(i, comma - i)));
    i = comma + 1;
  }
  for (const char *d = p.ffnEighths; *d; ++d)
    s.ffnHiddenDims.push_back(int64_t(*d - '0') * width / 8);
  *out = std::move(s);
  return true;
}

bool sliceFile(const std::string &path, MatFormerSlice *out,
               std::string *error) {
  std::string text;
  if (!support::readInputFile(path, uint64_t(1) << 20, &text, error))
    return false;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *error = path + ": not a JSON object {\"layers_to_skip\": [...], "
                    "\"ffn_hidden_dims\": [...]}";
    return false;
  }
  auto ints = [&](const char *key, bool required, std::vector<int64_t> *v) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required)
        *error = path + ": " + key + " is missing (one width per kept layer)";
      return !required;
    }
    if (!it->is_array()) {
      *error = path + ": " + key + " must be a list of integers";
      return false;
    }
    for (const json &item : *it) {
      if (!item.is_number_integer()) {
        *error = path + ": " + key + " must be a list of integers, got " +
                 item.dump(-1, ' ', false, json::error_handler_t::replace);
        return false;
      }
      v->push_back(item.get<int64_t>());
    }
    return true;
  };
  MatFormerSlice s;
  if (!ints("layers_to_skip", false, &s.layersToSkip) ||
      !ints("ffn_hidden_dims", true, &s.ffnHiddenDims))
    return false;
  s.name = path.substr(path.rfind('/') + 1);
  *out = std::move(s);
  return true;
}

} // namespace

bool resolveMatFormerSlice(const std::string &text,
                           const Gemma3nTextConfig &full, MatFormerSlice *out,
                           std::string *error) {
  if (const PublishedSlice *p = findPublished(text))
    return publishedSlice(*p, full, out, error);
  std::string why;
  if (sliceFile(text, out, &why))
    return true;
  std::string names;
  for (const PublishedSlice &s : publishedSlices())
    names += (names.empty() ? "" : ", ") + std::string(s.shortName);
  *error = "--matformer-slice '" + text +
           "' is neither a published slice (" + names +
           "; --list-matformer-slices) nor a slice file: " + why;
  return false;
}

bool sliceConfig(const Gemma3nTextConfig &full, const MatFormerSlice &slice,
                 Gemma3nTextConfig *out, std::string *error) {
  const int64_t L = full.num_hidden_layers;
  if (full.matformer_slice) {
    *error = "the checkpoint is already a MatFormer slice ('" +
             full.matformer_slice->name +
             "'); slice the model it was cut from";
    return false;
  }
  std::vector<int64_t> skip = slice.layersToSkip;
  std::sort(skip.begin(), skip.end());
  for (size_t i = 0; i < skip.size(); ++i) {
    if (skip[i] < 0 || skip[i] >= L) {
      *error = "layers_to_skip: layer " + std::to_string(skip[i]) +
               " does not exist (the checkpoint has " + std::to_string(L) +
               " layers)";
      return false;
    }
    if (i && skip[i] == skip[i - 1]) {
      *error = "layers_to_skip: layer " + std::to_string(skip[i]) +
               " is listed twice";
      return false;
    }
  }
  if (int64_t(skip.size()) >= L) {
    *error = "layers_to_skip: a slice keeps at least one layer";
    return false;
  }
  std::vector<int64_t> kept;
  for (int64_t l = 0; l < L; ++l)
    if (!std::binary_search(skip.begin(), skip.end(), l))
      kept.push_back(l);
  if (slice.ffnHiddenDims.size() != kept.size()) {
    *error = "ffn_hidden_dims lists " +
             std::to_string(slice.ffnHiddenDims.size()) +
             " widths; the slice keeps " + std::to_string(kept.size()) +
             " layers (one width per kept layer, in order)";
    return false;
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    const int64_t w = slice.ffnHiddenDims[i];
    const int64_t stored = full.intermediate_size[size_t(kept[i])];
    if (w <= 0 || w > stored) {
      *error = "ffn_hidden_dims[" + std::to_string(i) + "] (layer " +
               std::to_string(kept[i]) + ") is " + std::to_string(w) +
               (w <= 0 ? ", not a width"
                       : ", above the checkpoint's width " +
                             std::to_string(stored) +
                             ": a slice can only narrow a layer");
      return false;
    }
  }
  // A KV-shared layer reads the cache of the last earlier layer of its type
  // before the shared range: those layers must stay.
  const int64_t firstShared = full.firstKvSharedLayer();
  int64_t skippedShared = 0;
  for (int64_t l : skip) {
    if (l >= firstShared) {
      ++skippedShared;
      continue;
    }
    for (int64_t s = firstShared; s < L; ++s)
      if (full.kvSourceLayer(s) == l) {
        *error = "layers_to_skip: layer " + std::to_string(l) +
                 " is the KV-sharing source of layer " + std::to_string(s) +
                 " (the last " + layerTypeName(full.layer_types[size_t(l)]) +
                 " layer before the shared layers " +
                 std::to_string(firstShared) + "-" + std::to_string(L - 1) +
                 "); it cannot be skipped";
        return false;
      }
  }

  Gemma3nTextConfig c = full;
  c.num_hidden_layers = int64_t(kept.size());
  c.intermediate_size = slice.ffnHiddenDims;
  c.layer_types.clear();
  c.activation_sparsity.clear();
  for (int64_t l : kept) {
    c.layer_types.push_back(full.layer_types[size_t(l)]);
    c.activation_sparsity.push_back(full.activation_sparsity[size_t(l)]);
  }
  c.num_kv_shared_layers = full.num_kv_shared_layers - skippedShared;
  c.matformer_slice =
      Gemma3nTextConfig::MatFormerRecord{slice.name, skip, slice.ffnHiddenDims};
  if (!c.validate(error, "sliced config: "))
    return false;
  *out = std::move(c);
  return true;
}

namespace {

/// [begin, end) ranges of `width` elements per kept layer, adjacent ones
/// merged.
std::vector<std::pair<int64_t, int64_t>>
layerRanges(const std::vector<int64_t> &kept, int64_t width) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t l : kept) {
    if (!ranges.empty() && ranges.back().second == l * width)
      ranges.back().second += width;
    else
      ranges.push_back({l * width, (l + 1) * width});
  }
  return ranges;
}

} // namespace

bool sliceCheckpoint(Checkpoint &checkpoint, const Gemma3nTextConfig &full,
                     const MatFormerSlice &slice, const std::string &prefix,
                     std::string *error) {
  const int64_t L = full.num_hidden_layers;
  std::vector<int64_t> skip = slice.layersToSkip;
  std::sort(skip.begin(), skip.end());
  std::vector<int64_t> newIndex(size_t(L), -1), kept;
  for (int64_t l = 0; l < L; ++l)
    if (!std::binary_search(skip.begin(), skip.end(), l)) {
      newIndex[size_t(l)] = int64_t(kept.size());
      kept.push_back(l);
    }
  const std::string layers = prefix + "layers.";
  std::map<std::string, TensorView> views;
  for (const std::string &name : checkpoint.names()) {
    TensorView view = *checkpoint.find(name);
    const size_t size = dtypeSize(view.dtype);
    if (name.compare(0, layers.size(), layers) == 0) {
      size_t dot = name.find('.', layers.size());
      int64_t layer = 0;
      bool digits = dot != std::string::npos && dot > layers.size() &&
                    dot - layers.size() <= 6;
      for (size_t i = layers.size(); digits && i < dot; ++i) {
        digits = std::isdigit((unsigned char)name[i]);
        layer = layer * 10 + (name[i] - '0');
      }
      if (!digits || layer >= L) {
        *error = checkpoint.source() + ": tensor '" + name +
                 "' is not in a layer of the checkpoint's " +
                 std::to_string(L) + "; cannot slice it";
        return false;
      }
      if (newIndex[size_t(layer)] < 0)
        continue; // a skipped layer
      const int64_t index = newIndex[size_t(layer)];
      const std::string rest = name.substr(dot + 1);
      view.name = layers + std::to_string(index) + "." + rest;
      const int64_t width = slice.ffnHiddenDims[size_t(index)];
      const int64_t stored = full.intermediate_size[size_t(layer)];
      if (width != stored && view.shape.size() == 2) {
        if (rest == "mlp.gate_proj.weight" || rest == "mlp.up_proj.weight") {
          // The prefix of the rows: still one stored run.
          view.shape[0] = width;
          view.bytes = size_t(width * view.shape[1]) * size;
        } else if (rest == "mlp.down_proj.weight") {
          view.storedColumns = view.shape[1];
          view.columnRanges = {{0, width}};
          view.shape[1] = width;
          view.bytes = size_t(width * view.shape[0]) * size;
        }
      }
      views[view.name] = std::move(view);
      continue;
    }
    if (!skip.empty() && view.shape.size() == 2) {
      const int64_t P = full.hidden_size_per_layer_input;
      const int64_t K = int64_t(kept.size());
      if (name == prefix + "embed_tokens_per_layer.weight") {
        // [vocab, L * P]: the kept layers' P-wide column blocks.
        view.storedColumns = view.shape[1];
        view.columnRanges = layerRanges(kept, P);
        view.shape[1] = K * P;
        view.bytes = size_t(view.shape[0] * K * P) * size;
      } else if (name == prefix + "per_layer_model_projection.weight") {
        // [L * P, hidden]: the kept layers' P-row blocks.
        view.storedColumns = view.shape[1];
        view.rowRanges = layerRanges(kept, P);
        view.shape[0] = K * P;
        view.bytes = size_t(K * P * view.shape[1]) * size;
      }
    }
    views[name] = std::move(view);
  }
  checkpoint.replaceTensors(std::move(views));
  return true;
}

MatFormerSlice recordedSlice(const Gemma3nTextConfig &config) {
  MatFormerSlice s;
  if (config.matformer_slice) {
    s.name = config.matformer_slice->name;
    s.layersToSkip = config.matformer_slice->layersToSkip;
    s.ffnHiddenDims = config.matformer_slice->ffnHiddenDims;
  }
  return s;
}

namespace {

/// DIR's config and checkpoint, validated; cut to `slice` when given.
bool openAndSlice(const std::string &dir, const std::string *sliceText,
                  const MatFormerSlice *sliceGiven, Gemma3nTextConfig *config,
                  std::unique_ptr<Checkpoint> *checkpoint,
                  std::string *error) {
  Gemma3nTextConfig full;
  if (!loadGemma3nConfig(dir + "/config.json", &full, error))
    return false;
  std::unique_ptr<Checkpoint> ckpt = Checkpoint::open(dir, error);
  if (!ckpt || !validateCheckpoint(full, *ckpt, error))
    return false;
  MatFormerSlice slice;
  if (sliceText && !sliceText->empty()) {
    if (!resolveMatFormerSlice(*sliceText, full, &slice, error))
      return false;
    sliceGiven = &slice;
  }
  if (!sliceGiven) {
    *config = std::move(full);
    *checkpoint = std::move(ckpt);
    return true;
  }
  Gemma3nTextConfig sliced;
  std::string prefix;
  if (!sliceConfig(full, *sliceGiven, &sliced, error) ||
      !detectTextPrefix(*ckpt, &prefix, error) ||
      !sliceCheckpoint(*ckpt, full, *sliceGiven, prefix, error) ||
      !validateCheckpoint(sliced, *ckpt, error))
    return false;
  *config = std::move(sliced);
  *checkpoint = std::move(ckpt);
  return true;
}

} // namespace

bool openCheckpoint(const std::string &dir, const std::string &sliceText,
                    Gemma3nTextConfig *config,
                    std::unique_ptr<Checkpoint> *checkpoint,
                    std::string *error) {
  return openAndSlice(dir, &sliceText, nullptr, config, checkpoint, error);
}

bool reopenCheckpoint(const std::string &dir,
                      const Gemma3nTextConfig &recorded,
                      Gemma3nTextConfig *config,
                      std::unique_ptr<Checkpoint> *checkpoint,
                      std::string *error) {
  Gemma3nTextConfig stored;
  if (!loadGemma3nConfig(dir + "/config.json", &stored, error))
    return false;
  // A model cut from DIR's checkpoint when it compiled: cut it again.
  const bool cut = recorded.matformer_slice && !stored.matformer_slice;
  const MatFormerSlice slice = recordedSlice(recorded);
  return openAndSlice(dir, nullptr, cut ? &slice : nullptr, config,
                      checkpoint, error);
}

namespace {

/// Hands `view`'s stored bytes to `writer`, run by run; the pages read are
/// released afterwards (releasePages).
bool copyStoredBytes(const TensorView &view, SafetensorsWriter &writer,
                     std::string *error) {
  if (!view.sliced()) {
    const size_t chunk = size_t(16) << 20;
    for (size_t at = 0; at < view.bytes; at += chunk) {
      const size_t n = std::min(chunk, view.bytes - at);
      if (!writer.writeBytes(view.name, view.data + at, n, error))
        return false;
      releasePages(view.data + at, view.data + at + n);
    }
    return true;
  }
  const size_t size = dtypeSize(view.dtype);
  const int64_t rows = view.shape.size() == 2 ? view.shape[0] : 1;
  std::vector<std::pair<int64_t, int64_t>> rowRanges = view.rowRanges;
  if (rowRanges.empty())
    rowRanges = {{0, rows}};
  std::vector<std::pair<int64_t, int64_t>> colRanges = view.columnRanges;
  if (colRanges.empty())
    colRanges = {{0, view.storedColumns}};
  for (const auto &[firstRow, endRow] : rowRanges) {
    for (int64_t r = firstRow; r < endRow; ++r)
      for (const auto &[firstCol, endCol] : colRanges) {
        const uint8_t *p =
            view.data +
            (uint64_t(r) * uint64_t(view.storedColumns) + uint64_t(firstCol)) *
                size;
        if (!writer.writeBytes(view.name, p, size_t(endCol - firstCol) * size,
                               error))
          return false;
      }
    releasePages(
        view.data + uint64_t(firstRow) * uint64_t(view.storedColumns) * size,
        view.data + uint64_t(endRow) * uint64_t(view.storedColumns) * size);
  }
  return true;
}

/// Whether `path` is `dir` or lies inside it (both resolved).
bool isWithin(const std::string &path, const std::string &dir) {
  return path == dir || dir == "/" ||
         path.compare(0, dir.size() + 1, dir + "/") == 0;
}

/// The directory a checkpoint's files may lead into: the checkpoint's own
/// (resolved), or for a snapshot of the Hugging Face cache
/// (.../models--ORG--NAME/snapshots/REVISION, whose files are links to
/// ../../blobs) the repository's folder.
std::string checkpointRoot(const std::string &realDir) {
  // The name of the path's component that ends before `end`, and where it
  // starts (its slash).
  auto component = [&](size_t end, size_t *slash) {
    *slash = end == 0 ? std::string::npos : realDir.rfind('/', end - 1);
    return *slash == std::string::npos
               ? std::string()
               : realDir.substr(*slash + 1, end - *slash - 1);
  };
  size_t revision, snapshots, repository;
  component(realDir.size(), &revision);
  if (revision == std::string::npos ||
      component(revision, &snapshots) != "snapshots" ||
      component(snapshots, &repository).compare(0, 8, "models--") != 0)
    return realDir;
  return realDir.substr(0, snapshots);
}

/// The companion files (sliceCompanionFiles) `dir` holds, to be copied
/// from where they resolve to. A link that leads out of the checkpoint is
/// an error naming it and its target; what is not a regular file is left
/// out.
bool companionFiles(const std::string &dir, std::vector<OutputFileText> *out,
                    std::string *error) {
  const std::string realDir = resolvedPath(dir);
  if (realDir.empty()) {
    *error = dir + ": cannot resolve the path: " + std::strerror(errno);
    return false;
  }
  const std::string root = checkpointRoot(realDir);
  for (const std::string &name : sliceCompanionFiles()) {
    const std::string path = dir + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0)
      continue;
    char real[PATH_MAX];
    if (!::realpath(path.c_str(), real)) {
      *error = path + ": cannot resolve it" +
               (S_ISLNK(st.st_mode) ? " (a dangling symlink?)" : "") + ": " +
               std::strerror(errno);
      return false;
    }
    if (!isWithin(real, root)) {
      *error = path + ": a symlink to " + real + ", outside the checkpoint " +
               root +
               "; a slice copies no file from outside it (replace the link "
               "with the file)";
      return false;
    }
    if (::stat(real, &st) == 0 && S_ISREG(st.st_mode))
      out->push_back({name, "", real});
  }
  return true;
}

/// Refuses an output directory that is the checkpoint `fromDir`, lies
/// inside it, or holds it: the slice would replace its own source.
bool checkSliceOutput(const std::string &fromDir, const std::string &outDir,
                      std::string *error) {
  const std::string from = resolvedPath(fromDir), out = resolvedPath(outDir);
  if (from.empty() || out.empty()) {
    *error = (from.empty() ? fromDir : outDir) +
             ": cannot resolve the path: " + std::strerror(errno);
    return false;
  }
  auto trimmed = [](std::string path) {
    while (path.size() > 1 && path.back() == '/')
      path.pop_back();
    return path;
  };
  const std::string named = "the output directory " + outDir;
  if (out == from) {
    // Two spellings of one directory: say which it is.
    const bool aliased = trimmed(fromDir) != trimmed(outDir);
    *error = named + " is the checkpoint it is cut from, " + fromDir +
             (aliased ? " (both are " + from + ")" : "") +
             "; write the slice to another directory";
  } else if (isWithin(out, from)) {
    *error = named + " is inside the checkpoint it is cut from, " + fromDir +
             "; write the slice outside it";
  } else if (isWithin(from, out)) {
    *error = named + " holds the checkpoint it is cut from, " + fromDir +
             ", and would replace it; write the slice elsewhere";
  } else {
    return true;
  }
  return false;
}

} // namespace

bool writeSlicedCheckpoint(const std::string &fromDir,
                           const std::string &sliceText,
                           const std::string &outDir,
                           const CheckpointWriteOptions &options,
                           std::string *error) {
  if (!checkSliceOutput(fromDir, outDir, error))
    return false;
  Gemma3nTextConfig config;
  std::unique_ptr<Checkpoint> checkpoint;
  if (!openCheckpoint(fromDir, sliceText, &config, &checkpoint, error))
    return false;
  std::vector<OutputTensor> tensors;
  for (const std::string &name : checkpoint->names()) {
    const TensorView &view = *checkpoint->find(name);
    OutputTensor t;
    t.name = name;
    t.dtype = view.dtype;
    t.shape = view.shape;
    t.bytes = view.bytes;
    t.write = [&view](SafetensorsWriter &writer, std::string *why) {
      return copyStoredBytes(view, writer, why);
    };
    tensors.push_back(std::move(t));
  }
  std::vector<OutputFileText> files;
  if (!companionFiles(fromDir, &files, error))
    return false;
  // The config: a multimodal one keeps its vision and audio parts.
  std::string text;
  if (!support::readInputFile(fromDir + "/config.json", uint64_t(1) << 24,
                              &text, error))
    return false;
  nlohmann::ordered_json original =
      nlohmann::ordered_json::parse(text, nullptr, false);
  std::string configText = config.toJson(2);
  if (!original.is_discarded() && original.is_object() &&
      original.contains("text_config")) {
    original["text_config"] =
        nlohmann::ordered_json::parse(config.toJson(-1), nullptr, false);
    configText =
        original.dump(2, ' ', false,
                      nlohmann::ordered_json::error_handler_t::replace) +
        "\n";
  }
  files.push_back({"config.json", configText, ""});
  return writeCheckpoint(outDir, tensors, files, options, error);
}

} // namespace pccx::import
