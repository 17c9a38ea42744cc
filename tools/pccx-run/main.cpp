//===- main.cpp - pccx-run --------------------------------------*- C++ -*-===//
//
// Runs a .pccx bundle on the functional simulator. The work is done by
// runtime/driver; this file reads the command line.
//
//===----------------------------------------------------------------------===//

#include "runtime/driver/Session.h"
#include "runtime/driver/SimDevice.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace {

const char kHelp[] =
    R"(USAGE: pccx-run MODEL.pccx --tokens IDS [options]

Runs a bundle: the prompt, then greedy generation.

OPTIONS:
  --tokens IDS           comma-separated prompt token ids
  --max-new-tokens N     tokens to generate after the prompt (default 16)
  --numerics MODE        reference (fp32 everywhere) or hardware (BF16 L2,
                         fp16 KV cache as compiled); default hardware
  --decode-only          feed the prompt token by token through the decode
                         program instead of the prefill program
  --dump-logits FILE     write float32 little-endian rows of vocab_size
                         logits, one per consumed token position, in order
  -h, --help             show this help
)";

int fail(const std::string &message) {
  std::cerr << "pccx-run: error: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  std::string bundlePath, tokensText, dumpPath, numerics = "hardware";
  long maxNew = 16;
  bool decodeOnly = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      size_t eq = a.find('=');
      if (a.compare(0, 2, "--") == 0 && eq != std::string::npos)
        return a.substr(eq + 1);
      if (i + 1 >= argc) {
        fail(a + " needs a value");
        std::exit(1);
      }
      return argv[++i];
    };
    auto is = [&](const char *flag) {
      return a == flag || a.rfind(std::string(flag) + "=", 0) == 0;
    };
    if (a == "-h" || a == "--help") {
      std::cout << kHelp;
      return 0;
    } else if (is("--tokens")) {
      tokensText = value();
    } else if (is("--max-new-tokens")) {
      std::string v = value();
      char *end = nullptr;
      maxNew = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || maxNew < 0)
        return fail("--max-new-tokens: not a count: '" + v + "'");
    } else if (is("--numerics")) {
      numerics = value();
      if (numerics != "reference" && numerics != "hardware")
        return fail("--numerics must be reference or hardware");
    } else if (is("--dump-logits")) {
      dumpPath = value();
    } else if (a == "--decode-only") {
      decodeOnly = true;
    } else if (a[0] == '-' && a.size() > 1) {
      return fail("unknown option '" + a + "' (see --help)");
    } else if (bundlePath.empty()) {
      bundlePath = a;
    } else {
      return fail("more than one bundle given");
    }
  }
  if (bundlePath.empty())
    return fail("no bundle (see --help)");
  std::vector<int32_t> prompt;
  for (size_t start = 0; start < tokensText.size();) {
    size_t end = tokensText.find(',', start);
    if (end == std::string::npos)
      end = tokensText.size();
    std::string item = tokensText.substr(start, end - start);
    char *stop = nullptr;
    long v = std::strtol(item.c_str(), &stop, 10);
    if (item.empty() || *stop || v < 0 || v > INT32_MAX)
      return fail("--tokens: '" + item + "' is not a token id");
    prompt.push_back(int32_t(v));
    start = end + 1;
  }
  if (prompt.empty())
    return fail("no prompt (--tokens)");

  std::string error;
  auto model = pccx::driver::Model::load(bundlePath, &error);
  if (!model)
    return fail(error);
  bool reference = numerics == "reference";
  pccx::driver::Session session(
      *model,
      std::make_unique<pccx::driver::SimDevice>(
          reference ? pccx::sim::Numerics::Reference
                    : pccx::sim::Numerics::Hardware),
      reference);
  std::vector<float> logits;
  if (!session.consume(prompt, decodeOnly, &logits, &error))
    return fail(error);
  const int64_t V = model->vocabSize();
  auto argmax = [&](size_t row) {
    const float *r = logits.data() + row * size_t(V);
    return int32_t(std::max_element(r, r + V) - r);
  };
  std::vector<int32_t> generated;
  int32_t next = argmax(prompt.size() - 1);
  for (long n = 0; n < maxNew; ++n) {
    generated.push_back(next);
    if (n + 1 == maxNew)
      break;
    if (!session.consume({next}, true, &logits, &error))
      return fail(error);
    next = argmax(logits.size() / size_t(V) - 1);
  }
  for (size_t i = 0; i < generated.size(); ++i)
    std::cout << (i ? "," : "") << generated[i];
  std::cout << "\n";
  if (!dumpPath.empty()) {
    std::string tmp = dumpPath + ".tmp";
    std::FILE *f = std::fopen(tmp.c_str(), "wb");
    if (!f)
      return fail(tmp + ": " + std::strerror(errno));
    bool ok = std::fwrite(logits.data(), 4, logits.size(), f) == logits.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), dumpPath.c_str()) != 0) {
      std::remove(tmp.c_str());
      return fail(dumpPath + ": cannot write");
    }
    std::cerr << "wrote " << logits.size() / size_t(V) << " logit rows to "
              << dumpPath << "\n";
  }
  return 0;
}
