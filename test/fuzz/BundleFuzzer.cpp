//===- BundleFuzzer.cpp - hostile manifests with valid checksums ----------===//
//
// The input is a model manifest (JSON text). Each run writes it with
// BundleWriter next to fixed program, weights, host-tensor and gather
// sections, so every checksum is valid and the bytes reach the manifest
// reader, Model::load (host-call binding included) and a few Session steps
// on the simulator. The custom mutator edits the parsed JSON (a leaf set to
// a boundary value, an entry dropped or copied) so that mutations stay
// well-formed; byte-level mutation is the fallback.
//
//===----------------------------------------------------------------------===//

#include "hw/isa/Isa.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/devices/Devices.h"
#include "runtime/exec/Model.h"
#include "runtime/exec/Session.h"
#include "test/fuzz/FuzzSupport.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace pccx;
using nlohmann::json;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size,
                                   size_t maxSize);

namespace {

/// The sections every input is written with (sizes the seed manifests use).
bool writeBundle(const json &manifest, const std::string &path) {
  bundle::BundleWriter w;
  std::string error;
  // MEMSETs run on the simulator without setup (their a_value is what the
  // seeds patch), so steps get past the words to the host kernels.
  isa::Instruction memset(isa::Opcode::Memset);
  uint64_t word = 0;
  isa::encode(memset, word, &error);
  std::vector<uint8_t> hostTensors(256);
  for (size_t i = 0; i < hostTensors.size(); i += 4) {
    float one = 1.0f;
    std::memcpy(&hostTensors[i], &one, 4);
  }
  return w.addManifest(manifest, &error) &&
         w.addProgram("program.decode", {word, word, word, word}, &error) &&
         w.addProgram("program.prefill", {word, word, word, word}, &error) &&
         w.addProgram("program.prefill_no_head", {word, word, word, word},
                      &error) &&
         w.addProgram("program.decode_batch_2", {word, word, word, word},
                      &error) &&
         w.addSection("weights", bundle::SectionKind::Weights,
                      std::vector<uint8_t>(256, 0x11), &error) &&
         w.addSection("host_tensors", bundle::SectionKind::Constants,
                      std::move(hostTensors), &error) &&
         w.addSection("gather", bundle::SectionKind::Weights,
                      std::vector<uint8_t>(256, 0x22), &error) &&
         w.write(path, &error);
}

/// Every leaf of `j` (by pointer), for the mutator.
void leaves(json &j, std::vector<json *> &out) {
  if (j.is_object() || j.is_array()) {
    out.push_back(&j); // containers too: entries get dropped or copied
    for (json &child : j)
      leaves(child, out);
  } else {
    out.push_back(&j);
  }
}

json boundary(std::mt19937_64 &rng) {
  static const int64_t values[] = {0,
                                   1,
                                   -1,
                                   2,
                                   7,
                                   8,
                                   16,
                                   255,
                                   4096,
                                   65535,
                                   65536,
                                   int64_t(1) << 24,
                                   int64_t(1) << 31,
                                   (int64_t(1) << 32) + 1,
                                   int64_t(1) << 40,
                                   int64_t(1) << 59,
                                   int64_t(1) << 62,
                                   INT64_MAX,
                                   INT64_MIN};
  switch (rng() % 6) {
  case 0:
    return json(uint64_t(UINT64_MAX));
  case 1:
    return json(double(rng() % 1000) / 7.0 * (rng() % 2 ? 1e300 : 1.0));
  case 2:
    return json(int64_t(rng() % 64));
  default:
    return json(values[rng() % (sizeof values / sizeof *values)]);
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  std::mt19937_64 rng(seed);
  json j = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || rng() % 8 == 0)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::vector<json *> all;
  leaves(j, all);
  json *target = all[rng() % all.size()];
  if (target->is_object() && !target->empty() && rng() % 2) {
    auto it = target->begin();
    std::advance(it, rng() % target->size());
    target->erase(it.key());
  } else if (target->is_array() && !target->empty()) {
    size_t i = rng() % target->size();
    if (rng() % 2)
      target->erase(i);
    else
      target->push_back((*target)[i]);
  } else if (target->is_number() || target->is_null() || rng() % 4 == 0) {
    *target = boundary(rng);
  } else if (target->is_string()) {
    std::string s = target->get<std::string>();
    if (!s.empty())
      s[rng() % s.size()] ^= char(1 << (rng() % 5));
    *target = s;
  } else if (target->is_boolean()) {
    *target = !target->get<bool>();
  }
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json manifest =
      json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object())
    return 0;
  const std::string path = fuzz::scratchDir() + "/m.pccx";
  if (!writeBundle(manifest, path))
    return 0;
  std::string error;
  // PCCX_FUZZ_VERBOSE=1 prints how far each input got (for seed writing).
  static const bool verbose = std::getenv("PCCX_FUZZ_VERBOSE");
  // Sessions stay well inside the fuzzer's -malloc_limit_mb: a manifest
  // asking for more must be refused at load, as on a smaller machine.
  constexpr uint64_t kSessionLimit = uint64_t(256) << 20;
  auto model = exec::Model::load(path, &error, kSessionLimit);
  if (!model) {
    if (error.empty())
      __builtin_trap();
    if (verbose)
      std::fprintf(stderr, "load: %s\n", error.c_str());
    return 0;
  }
  auto device = device::openDevice("sim", {}, model->target(), &error);
  if (!device)
    __builtin_trap();
  exec::Session session(*model, std::move(device));
  std::vector<float> logits;
  // A decode step, then (when the caches allow) a prefill-sized run.
  for (const std::vector<int32_t> &tokens :
       {std::vector<int32_t>{0}, std::vector<int32_t>{1, 2, 3, 4}}) {
    error.clear();
    bool ok = session.consume(tokens, tokens.size() == 1, &logits, &error);
    if (!ok && error.empty())
      __builtin_trap();
    if (verbose)
      std::fprintf(stderr, "%zu token(s): %s\n", tokens.size(),
                   ok ? "ok" : error.c_str());
  }
  // Again, reading only the last row: the prompt's earlier prefill steps
  // run program.prefill_no_head when the manifest has one.
  session.reset();
  error.clear();
  {
    bool ok = session.consume({1, 2, 3, 4, 5, 6, 7, 8}, false, &logits,
                              &error, exec::LogitsRows::Last);
    if (!ok && error.empty())
      __builtin_trap();
    if (verbose)
      std::fprintf(stderr, "8 tokens, last row: %s\n",
                   ok ? "ok" : error.c_str());
  }
  session.reset();
  // Two sequences in one step (a batch program when the manifest has one,
  // the decode program row by row otherwise).
  error.clear();
  bool ok = session.reserveSlots(2, &error) &&
            session.step({{0, 5}, {1, 6}}, &logits, &error);
  if (!ok && error.empty())
    __builtin_trap();
  if (verbose)
    std::fprintf(stderr, "2 slots: %s\n", ok ? "ok" : error.c_str());
  return 0;
}
