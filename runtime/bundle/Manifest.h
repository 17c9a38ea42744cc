//===- Manifest.h - conventions of the bundle manifest ----------*- C++ -*-===//
//
// Keys of the manifest JSON that more than one component reads: the
// per-instruction annotations shown by pccx-objdump, the memory map, the
// patch points the runtime applies before issuing a program, and the
// segment list. docs/bundle-format.md ("Manifest") describes each.
//
// Accessors never throw; a malformed entry is reported as an error value.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_BUNDLE_MANIFEST_H
#define PCCX_RUNTIME_BUNDLE_MANIFEST_H

#include "hw/machine/Target.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace pccx::bundle {

class Bundle;

namespace manifest_keys {
/// {"program.decode": ["comment of word 0", "comment of word 1", ...]}
constexpr const char *kAnnotations = "annotations";
/// [{"name", "space", "offset", "size", ...}]
constexpr const char *kMemoryMap = "memory_map";
/// [{"program", "index", "field", "value", "scale", "offset"}]
constexpr const char *kPatchPoints = "patch_points";
/// [{"name", "program", "begin", "end", ...}]
constexpr const char *kSegments = "segments";
/// Name of the tool that wrote the bundle.
constexpr const char *kProducer = "producer";
/// Target profile the programs follow (hw/machine/Targets.def); absent in
/// bundles older than target profiles, which were all "v002".
constexpr const char *kTarget = "target";
} // namespace manifest_keys

/// The target a manifest records (the default when it records none). Fails
/// on an unknown one; the message names the value and the known targets.
bool targetOf(const nlohmann::json &manifest, machine::Target &target,
              std::string *error);

/// Annotations of one program, indexed by word; missing entries (and words
/// past the end of the list) have none. Entries that are not strings are
/// returned as their JSON text.
std::vector<std::string> annotationsOf(const nlohmann::json &manifest,
                                       const std::string &program);

/// Stores the annotations of `program` (all of them, "" where a word has
/// none). Fails when the manifest already holds annotations for it or
/// "annotations" is not an object.
bool setAnnotations(nlohmann::json &manifest, const std::string &program,
                    const std::vector<std::string> &annotations,
                    std::string *error);

/// A word field the runtime rewrites before each issue:
///   word[index].field = value(q) * scale + offset,  q = position + delta
/// where `value` names a run-time quantity (PatchSources.h: "token_id",
/// "position", "attn_len", "window_len", "window_start"); the window
/// sources need `window`.
struct PatchPoint {
  std::string program;
  uint64_t index = 0;
  std::string field;
  std::string value;
  int64_t scale = 1;
  int64_t offset = 0;
  int64_t delta = 0;
  int64_t window = 0;
};

nlohmann::json toJson(const PatchPoint &patch);

/// Reads "patch_points" (absent means none). Fails on a malformed entry,
/// naming its position.
bool parsePatchPoints(const nlohmann::json &manifest,
                      std::vector<PatchPoint> &patches, std::string *error);

/// Checks that the patched field exists in the format of `word`, which must
/// decode. Returns an empty string when it does, else the reason.
std::string checkPatchPoint(const PatchPoint &patch, uint64_t word);

/// Checks every patch point of a bundle against its program sections.
bool checkPatchPoints(const Bundle &bundle, std::string *error);

} // namespace pccx::bundle

#endif // PCCX_RUNTIME_BUNDLE_MANIFEST_H
