//===- EmitBundle.cpp - lowered module to a .pccx bundle ------------------===//
//
// The bundle target: the program encoder, the weight plan and the constant
// layout fill one typed manifest (runtime/bundle/ModelManifest.h), and the
// bundle writer streams the sections.
//
//===----------------------------------------------------------------------===//

#include "compiler/emit/EmitBundle.h"

#include "hw/support/InputFile.h"

#include "compiler/emit/ConstantLayout.h"
#include "compiler/emit/ProgramEncoder.h"
#include "dialects/Pccx/PccxOps.h"
#include "compiler/emit/WeightPlan.h"
#include "dialects/Gemma3n/model/ModelInfo.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/ModelManifest.h"
#include "runtime/exec/Model.h"

#include <fstream>

using namespace mlir;

namespace pccx {

bool emitBundle(ModuleOp module, const std::string &path,
                const EmitOptions &options, std::string *error) {
  LoadedCheckpoint checkpoint;
  if (!loadModuleCheckpoint(module, &checkpoint, error))
    return false;
  WeightEvaluator evaluator(*checkpoint.checkpoint);
  evaluator.setInputGrams(options.inputGrams);

  // The target the lowering recorded (v002 on modules without one).
  const machine::Target target = dialect::targetOf(module);

  bundle::ModelManifest manifest;
  manifest.producer = "pccx-compile";
  manifest.target = target;
  manifest.config = checkpoint.config.toJsonValue();
  manifest.compileOptions = options.compileOptions;
  manifest.compileOptions[compile_option_key::target] = choiceName(target);

  // Programs, and the weight records they use in first-use order.
  WeightPlan weights(evaluator);
  weights.setThreads(options.threads);
  std::vector<std::pair<std::string, std::vector<uint64_t>>> sections;
  for (auto program : module.getOps<dialect::ProgramOp>()) {
    std::vector<uint64_t> words;
    if (!encodeProgram(program, weights, options.kvDtype, target,
                       manifest, words, error))
      return false;
    sections.emplace_back(manifest.programs.back().section, std::move(words));
  }
  if (sections.empty()) {
    *error = "the module has no pccx.program; lower it first";
    return false;
  }
  ConstantLayout constants(evaluator);
  constants.setThreads(options.threads);
  if (!constants.plan(module, error))
    return false;
  manifest.hostTensors = constants.hostTensors();
  manifest.gathers = constants.gathers();
  manifest.weightTable = weights.table();
  manifest.weightsBytes = weights.bytes();
  manifest.tokenizer = !options.tokenizerPath.empty();
  manifest.chatTemplate = options.chatTemplate;

  bundle::BundleWriter writer;
  // What compiles must run: the runtime's own loader (manifest tables,
  // caches, host-call parameters, session size) judges the complete file
  // before it replaces the output. Its memory limit is the runtime's
  // largest, not this machine's: the bundle may be for another.
  writer.setVerifier([](const std::string &path, std::string *why) {
    return exec::Model::load(path, why, exec::Model::kMaxSessionBytes) !=
           nullptr;
  });
  if (!writer.addManifest(bundle::toJson(manifest), error))
    return false;
  for (auto &[name, words] : sections)
    if (!writer.addProgram(name, words, error))
      return false;

  const uint64_t weightBytes = weights.bytes(),
                 hostBytes = constants.hostBytes(),
                 totalBytes = weightBytes + hostBytes + constants.gatherBytes();
  const size_t items = weights.records().size() +
                       constants.hostTensors().size() +
                       constants.gathers().size();
  auto progress = [&](uint64_t done, size_t item) {
    if (options.progress)
      options.progress(done, totalBytes, std::min(item, items), items);
  };
  if (!writer.addStreamedSection(
          "weights", bundle::SectionKind::Weights,
          [&](bundle::SectionSink &sink, std::string *err) {
            return weights.stream(sink, progress, err);
          },
          error) ||
      !writer.addStreamedSection(
          "host_tensors", bundle::SectionKind::Constants,
          [&](bundle::SectionSink &sink, std::string *err) {
            if (!constants.streamHostTensors(sink, err))
              return false;
            progress(weightBytes + hostBytes,
                     weights.records().size() + constants.hostTensors().size());
            return true;
          },
          error) ||
      !writer.addStreamedSection(
          "gather", bundle::SectionKind::Weights,
          [&](bundle::SectionSink &sink, std::string *err) {
            return constants.streamGathers(
                sink,
                [&](uint64_t done, size_t table) {
                  progress(weightBytes + hostBytes + done,
                           weights.records().size() +
                               constants.hostTensors().size() + table);
                },
                err);
          },
          error))
    return false;

  if (!options.tokenizerPath.empty()) {
    std::string text;
    if (!support::readInputFile(options.tokenizerPath,
                                support::kMaxTokenizerFileBytes, &text, error))
      return false;
    std::vector<uint8_t> bytes(text.begin(), text.end());
    if (!writer.addSection("tokenizer", bundle::SectionKind::Tokenizer,
                           std::move(bytes), error))
      return false;
  }
  return writer.write(path, error);
}

} // namespace pccx
