//===- json-mask.cpp - the cost of structured output per token ------------===//
//
// Times the token masks of constrained decoding over a full-size
// vocabulary while a reply is spelled token by token (each reply a valid
// document of its schema, split into tokens by longest match), and, in the
// same run, a decode step of a bundle on the CPU path: the mask's share of
// a token is the ratio of the two. Each reply's row gives the most steps a
// mask took, the work its budget counts (grammar::kMaxMaskWork).
//
//   bench-json-mask [--tokenizer MODEL | --vocab-size V] [--bundle BUNDLE]
//                   [--threads N] [--steps S] [--only TEXT]
//
// --tokenizer reads a SentencePiece model (a Gemma checkpoint's
// tokenizer.model: the vocabulary users decode with); without it the
// vocabulary is a synthetic one of V pieces (default 262 144, Gemma's
// size) mixing words with and without a leading space, punctuation runs
// with quotes and brackets, digits, white space runs, multi-byte
// characters and every byte alone. --bundle times S decode steps (default
// 16) of that bundle on the simulator device, integer numerics, with N
// threads (default: every core). --only times the replies whose name
// holds TEXT.
//
//===----------------------------------------------------------------------===//

#include "runtime/devices/SimDevice.h"
#include "runtime/exec/Session.h"
#include "runtime/grammar/TokenMask.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

using namespace pccx;

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A vocabulary the size of Gemma's, with its kinds of pieces.
std::vector<std::string> syntheticVocabulary(size_t size) {
  std::vector<std::string> texts(4); // <pad> <eos> <bos> <unk>: not text
  std::unordered_set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    texts.push_back(std::string(1, char(b)));
    seen.insert(texts.back());
  }
  uint64_t state = 88172645463325252ull;
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  const std::string punct = "{}[]\",:.;()!?'-_=+*/\\<>|&#@$%`~";
  const char *cjk[] = {"\xE4\xBD\xA0", "\xE5\xA5\xBD", "\xE4\xB8\xAD",
                       "\xE6\x96\x87", "\xE8\xAF\xAD", "\xE3\x81\x82",
                       "\xE3\x82\xA2", "\xED\x95\x9C", "\xEA\xB8\x80"};
  const char *twoByte[] = {"\xD0\xB0", "\xD0\xB5", "\xD0\xBE", "\xCE\xB1",
                           "\xCE\xBF", "\xC3\xA9", "\xC3\xA8", "\xC3\xBC"};
  while (texts.size() < size) {
    const uint64_t r = next();
    std::string t;
    const unsigned kind = unsigned(r % 100);
    if (kind < 60) { // words
      if (r >> 8 & 1)
        t += ' ';
      const int length = 2 + int(r >> 9 & 7);
      for (int i = 0; i < length; ++i)
        t += char('a' + next() % 26);
      if ((r >> 12 & 15) == 0)
        t[t[0] == ' ' ? 1 : 0] = char(t[t[0] == ' ' ? 1 : 0] - 32);
    } else if (kind < 70) { // punctuation runs, often beside letters
      const int length = 1 + int(r >> 8 & 3);
      for (int i = 0; i < length; ++i)
        t += (next() & 3) ? punct[next() % punct.size()]
                          : char('a' + next() % 26);
    } else if (kind < 73) { // digits
      const int length = 1 + int(r >> 8 & 3);
      for (int i = 0; i < length; ++i)
        t += char('0' + next() % 10);
    } else if (kind < 74) { // white space runs
      t = (r >> 8 & 1) ? "\n" : "";
      t += std::string(1 + (r >> 9) % 31, (r >> 14 & 3) ? ' ' : '\t');
    } else if (kind < 88) { // CJK
      const int length = 1 + int(r >> 8 & 1);
      for (int i = 0; i < length; ++i)
        t += cjk[next() % 9];
    } else if (kind < 99) { // Cyrillic, Greek, accents
      if (r >> 8 & 1)
        t += ' ';
      const int length = 2 + int(r >> 9 & 3);
      for (int i = 0; i < length; ++i)
        t += (next() & 1) ? twoByte[next() % 8] : std::string(1, char('a' + next() % 26));
    } else { // emoji
      t = "\xF0\x9F\x98";
      t += char(0x80 + next() % 64);
    }
    if (seen.insert(t).second)
      texts.push_back(t);
  }
  return texts;
}

struct Scenario {
  const char *name;
  std::string schema; ///< empty: any object
  std::string document;
};

std::vector<Scenario> scenarios() {
  std::string cities = "[";
  std::string pick;
  for (int i = 0; i < 1000; ++i) {
    std::string name = "City" + std::to_string(i * 7919 % 100000);
    cities += (i ? ",\"" : "\"") + name + "\"";
    if (i == 500)
      pick = name;
  }
  cities += "]";
  // A hostile schema: 64 alternatives that share every prefix up to the
  // last member, so every branch stays alive through a long free string.
  std::string branches = "{\"anyOf\":[";
  for (int i = 0; i < 64; ++i)
    branches += (i ? "," : "") +
                std::string(R"({"type":"object","properties":{"text":{"type":"string"},"k":{"const":)") +
                std::to_string(i) + R"(}},"required":["text","k"],"additionalProperties":false})";
  branches += "]}";
  // Hostile shapes with bounded strings, where no branch's string is free
  // of a length count: `count` alternatives from `branch(i)`.
  auto anyOf = [](int count, auto branch) {
    std::string s = "{\"anyOf\":[";
    for (int i = 0; i < count; ++i)
      s += (i ? "," : "") + branch(i);
    return s + "]}";
  };
  auto boundedString = [](int maxLength) {
    return R"({"type":"string","maxLength":)" + std::to_string(maxLength) + "}";
  };
  auto nestedArrays = [](int depth, std::string items) {
    for (int d = 0; d < depth; ++d)
      items = R"({"type":"array","items":)" + items + "}";
    return items;
  };
  const std::string prose =
      "Bounded strings keep every branch counting its own characters, "
      "\\u00e9t\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD, so none may be walked once "
      "for all";
  const std::string sharedPrefix(120, 'p');
  return {
      {"object with string, integer, enum array",
       R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},)"
       R"("tags":{"type":"array","items":{"enum":["red","green","blue"]}}},)"
       R"("required":["name","age"],"additionalProperties":false})",
       "{\"name\": \"Ada Lovelace, mathematician\", \"age\": 36, \"tags\": [\"red\", \"blue\"]}"},
      {"json_object, long free text",
       "",
       "{\"title\": \"Notes on the analytical engine\", \"summary\": \"The engine "
       "could act upon other things besides number, were objects found whose "
       "mutual fundamental relations could be expressed by those of the abstract "
       "science of operations. \\u00e9 \xE4\xBD\xA0\xE5\xA5\xBD\", \"pages\": [1, 2, 3], "
       "\"ok\": true, \"meta\": {\"year\": 1843, \"ratio\": 0.75}}"},
      {"1000-value enum",
       R"({"type":"object","properties":{"city":{"enum":)" + cities +
           R"(}},"required":["city"],"additionalProperties":false})",
       "{\"city\": \"" + pick + "\"}"},
      {"64 anyOf branches alive (hostile)", branches,
       "{\"text\": \"A long string that every branch reads the same way, so that all "
       "sixty-four stay alive until the last member\", \"k\": 63}"},
      {"64 anyOf bounded strings (hostile)",
       R"({"type":"object","properties":{"text":)" +
           anyOf(64, [&](int i) { return boundedString(200 + i); }) +
           R"(},"required":["text"],"additionalProperties":false})",
       "{\"text\": \"" + prose + "\"}"},
      {"64 anyOf arrays of arrays of bounded strings (hostile)",
       anyOf(64, [&](int i) { return nestedArrays(2, boundedString(60 + i)); }),
       "[[\"first of the items\", \"" + prose.substr(0, 50) +
           "\"], [\"third\"]]"},
      {"array of 64 anyOf bounded strings and numbers (hostile)",
       nestedArrays(1, anyOf(64,
                             [&](int i) {
                               return i % 2
                                          ? std::string(R"({"type":"number"})")
                                          : boundedString(20 + i);
                             })),
       "[\"alpha\", 12.5, \"beta gamma delta\", -3, 1e5, \"epsilon\", 0.25]"},
      {"64 anyOf enums sharing a 120-byte prefix (hostile)",
       anyOf(64,
             [&](int i) {
               std::string values;
               for (int j = 0; j < 16; ++j)
                 values += (j ? ",\"" : "\"") + sharedPrefix + " " +
                           std::to_string(i) + "-" + std::to_string(j) + "\"";
               return "{\"enum\":[" + values + "]}";
             }),
       "\"" + sharedPrefix + " 63-15\""},
      {"64 anyOf bounded strings 14 arrays deep (hostile)",
       anyOf(64,
             [&](int i) { return nestedArrays(14, boundedString(30 + i)); }),
       std::string(14, '[') + "\"deep text inside\"" + std::string(14, ']')},
      {"4000 anyOf bounded strings (hostile)",
       anyOf(4000, [&](int i) { return boundedString(i + 1); }),
       "\"short words\""},
  };
}

/// Every token id by its text (the first id of a text).
std::unordered_map<std::string, int32_t>
idsByText(const std::vector<std::string> &texts) {
  std::unordered_map<std::string, int32_t> byText;
  for (size_t id = 0; id < texts.size(); ++id)
    if (!texts[id].empty())
      byText.emplace(texts[id], int32_t(id));
  return byText;
}

/// Splits `text` into token ids by longest match.
bool tokenizeLongest(const std::unordered_map<std::string, int32_t> &byText,
                     size_t longest, const std::string &text,
                     std::vector<int32_t> *ids) {
  for (size_t at = 0; at < text.size();) {
    size_t n = std::min(longest, text.size() - at);
    for (; n > 0; --n) {
      auto it = byText.find(text.substr(at, n));
      if (it != byText.end()) {
        ids->push_back(it->second);
        break;
      }
    }
    if (n == 0)
      return false;
    at += n;
  }
  return true;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench-json-mask [--tokenizer MODEL | --vocab-size V] "
               "[--bundle BUNDLE] [--threads N] [--steps S] [--only TEXT]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string tokenizerPath, bundlePath;
  size_t vocabSize = 262144;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  int steps = 16;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tokenizer" && i + 1 < argc)
      tokenizerPath = argv[++i];
    else if (a == "--vocab-size" && i + 1 < argc)
      vocabSize = size_t(std::atol(argv[++i]));
    else if (a == "--bundle" && i + 1 < argc)
      bundlePath = argv[++i];
    else if (a == "--threads" && i + 1 < argc)
      threads = unsigned(std::atoi(argv[++i]));
    else if (a == "--steps" && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else
      return usage();
  }
  if (vocabSize < 300 || threads < 1 || steps < 1)
    return usage();

  std::vector<std::string> texts;
  std::set<int32_t> ends = {1};
  std::string source;
  if (!tokenizerPath.empty()) {
    std::ifstream in(tokenizerPath, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string data = bytes.str();
    std::string error;
    auto tokenizer = Tokenizer::load(
        reinterpret_cast<const uint8_t *>(data.data()), data.size(), &error);
    if (!tokenizer) {
      std::fprintf(stderr, "bench-json-mask: %s: %s\n", tokenizerPath.c_str(),
                   error.c_str());
      return 1;
    }
    for (int32_t id = 0; id < tokenizer->size(); ++id)
      texts.push_back(tokenizer->tokenText(id));
    const int32_t eot = tokenizer->pieceId("<end_of_turn>");
    if (eot >= 0)
      ends.insert(eot);
    source = tokenizerPath;
  } else {
    texts = syntheticVocabulary(vocabSize);
    source = "synthetic";
  }
  const double t0 = now();
  auto vocabulary = std::make_shared<grammar::TokenVocabulary>(texts);
  const double buildSeconds = now() - t0;
  std::printf("vocabulary: %zu pieces (%s), trie of %zu nodes built in %.0f ms\n",
              vocabulary->size(), source.c_str(), vocabulary->trieNodes(),
              buildSeconds * 1e3);

  // The decode step, measured before and after the masks.
  double decodeMs = 0;
  if (!bundlePath.empty()) {
    std::string error;
    auto model = exec::Model::load(bundlePath, &error);
    if (!model) {
      std::fprintf(stderr, "bench-json-mask: %s\n", error.c_str());
      return 1;
    }
    auto device = std::make_unique<device::SimDevice>(sim::Numerics::Integer,
                                                      model->target());
    device->simulator().setThreads(threads);
    exec::Session session(*model, std::move(device));
    std::vector<int32_t> prompt = {model->bosToken(), 100, 200, 300};
    if (!session.consume(prompt, false, nullptr, &error) ||
        !session.consume({400}, false, nullptr, &error)) {
      std::fprintf(stderr, "bench-json-mask: %s\n", error.c_str());
      return 1;
    }
    const double d0 = now();
    for (int i = 0; i < steps; ++i)
      if (!session.consume({int32_t(500 + 7 * i) % int32_t(model->vocabSize())},
                           false, nullptr, &error)) {
        std::fprintf(stderr, "bench-json-mask: %s\n", error.c_str());
        return 1;
      }
    decodeMs = (now() - d0) * 1e3 / steps;
    std::printf("decode step: %.2f ms (%s, integer numerics, %u threads, "
                "%d steps)\n",
                decodeMs, bundlePath.c_str(), threads, steps);
  }

  std::printf(
      "\n| reply | tokens | mask ms mean | p90 | max | allowed ids (mean) "
      "| steps (max) |%s\n",
      decodeMs > 0 ? " mask / decode step |" : "");
  std::printf("|---|---:|---:|---:|---:|---:|---:|%s\n",
              decodeMs > 0 ? "---:|" : "");
  const auto byText = idsByText(texts);
  for (const Scenario &s : scenarios()) {
    if (std::string(s.name).find(only) == std::string::npos)
      continue;
    std::string error;
    auto schema =
        s.schema.empty()
            ? grammar::anyObjectSchema()
            : grammar::compileSchema(grammar::Json::parse(s.schema), &error);
    std::vector<int32_t> ids;
    if (!schema || !tokenizeLongest(byText, vocabulary->longestText(),
                                    s.document, &ids)) {
      std::fprintf(stderr, "bench-json-mask: %s: %s\n", s.name,
                   schema ? "the vocabulary cannot spell the reply" : error.c_str());
      return 1;
    }
    ids.push_back(*ends.begin());
    grammar::JsonConstraint constraint(schema, vocabulary, ends);
    if (!(error = constraint.checkVocabulary()).empty()) {
      std::fprintf(stderr, "bench-json-mask: %s\n", error.c_str());
      return 1;
    }
    std::vector<double> times;
    double allowed = 0;
    std::vector<float> logits(vocabulary->size());
    for (int32_t id : ids) {
      std::fill(logits.begin(), logits.end(), 0.0f);
      const double m0 = now();
      constraint.mask(logits.data(), logits.size());
      times.push_back((now() - m0) * 1e3);
      if (!constraint.error().empty()) {
        std::fprintf(stderr, "bench-json-mask: %s: %s\n", s.name,
                     constraint.error().c_str());
        return 1;
      }
      allowed += double(std::count_if(logits.begin(), logits.end(),
                                      [](float v) { return v == 0.0f; }));
      if (!constraint.accept(id)) {
        std::fprintf(stderr, "bench-json-mask: %s: token %d refused\n",
                     s.name, id);
        return 1;
      }
    }
    double mean = 0;
    for (double t : times)
      mean += t;
    mean /= double(times.size());
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    const double p90 = sorted[size_t(double(sorted.size() - 1) * 0.9)];
    std::printf("| %s | %zu | %.3f | %.3f | %.3f | %.0f | %lld |", s.name,
                ids.size(), mean, p90, sorted.back(),
                allowed / double(ids.size()),
                (long long)constraint.maxMaskWork());
    if (decodeMs > 0)
      std::printf(" %.1f %% |", 100.0 * mean / decodeMs);
    std::printf("\n");
  }
  return 0;
}
