//===- Quantize.cpp - the target's weight quantization rule ---------------===//

#include "hw/numerics/Quantize.h"

#include "hw/numerics/QuantizeSearchAvx2.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

namespace pccx::hw {

float quantizeRowInt4(const float *row, size_t n, int8_t *q) {
  float maxAbs = 0;
  for (size_t i = 0; i < n; ++i)
    maxAbs = std::max(maxAbs, std::fabs(row[i]));
  float scale = maxAbs / 7.0f;
  if (q)
    for (size_t i = 0; i < n; ++i) {
      // std::round rounds halves away from zero.
      float v = scale == 0 ? 0.0f : std::round(row[i] / scale);
      q[i] = int8_t(std::min(7.0f, std::max(-8.0f, v)));
    }
  return scale;
}

namespace {
/// Whether the scale search can run on a row: its weights finite, and the
/// largest candidate inverse scale finite too (a row of subnormals would
/// overflow it). Any other row keeps its absmax codes, because the search
/// converts scaled weights to int, which is undefined for a non-finite
/// value (rows with NaN or Inf come with --allow-nonfinite).
bool searchable(const float *row, size_t n) {
  float maxAbs = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(row[i]))
      return false;
    maxAbs = std::max(maxAbs, std::fabs(row[i]));
  }
  return maxAbs > 0 &&
         std::isfinite((7.0f + 0.25f * float(kScaleSearchSteps)) / maxAbs);
}

/// The definition of the search; QuantizeSearchAvx2.cpp repeats its
/// operations eight elements at a time.
float quantizeRowInt4SearchPortable(const float *row, size_t n, int8_t *q) {
  std::vector<int8_t> candidate(n), best(n);
  float bestScale = quantizeRowInt4(row, n, best.data());
  if (bestScale == 0 || !searchable(row, n)) {
    if (q)
      std::copy(best.begin(), best.end(), q);
    return bestScale;
  }
  float maxAbs = 0;
  double rowSquares = 0, bestDot = 0, bestNorm = 0;
  for (size_t i = 0; i < n; ++i) {
    maxAbs = std::max(maxAbs, std::fabs(row[i]));
    rowSquares += double(row[i]) * row[i];
    bestDot += double(row[i]) * best[i];
    bestNorm += double(best[i]) * best[i];
  }
  detail::ScaleSearchBest search(rowSquares, bestDot, bestNorm, bestScale);
  for (int k = 0; k <= kScaleSearchSteps; ++k) {
    const float inverse = (7.0f + 0.25f * float(k)) / maxAbs;
    // Eight float partial sums in a fixed order: deterministic, and the
    // loop vectorizes (3-4x faster than one chain of double additions).
    float dots[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int32_t norms[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    auto code = [&](size_t i) {
      // std::round without the library call: |x| <= 10, so x - trunc(x) is
      // exact and halves round away from zero as in std::round.
      const float x = row[i] * inverse;
      int v = int(x);
      const float frac = x - float(v);
      v += int(frac >= 0.5f) - int(frac <= -0.5f);
      v = std::min(7, std::max(-8, v));
      candidate[i] = int8_t(v);
      return v;
    };
    const size_t body = n / 8 * 8;
    for (size_t i = 0; i < body; i += 8)
      for (size_t j = 0; j < 8; ++j) {
        const int v = code(i + j);
        dots[j] += row[i + j] * float(v);
        norms[j] += v * v;
      }
    for (size_t i = body; i < n; ++i) {
      const int v = code(i);
      dots[i - body] += row[i] * float(v);
      norms[i - body] += v * v;
    }
    if (search.offer(dots, norms))
      best.swap(candidate);
  }
  if (q)
    std::copy(best.begin(), best.end(), q);
  return search.scale();
}
} // namespace

bool quantizeIsaAvailable(QuantizeIsa isa) {
  return isa == QuantizeIsa::Portable || detail::haveQuantizeSearchAvx2();
}

float quantizeRowInt4Search(const float *row, size_t n, int8_t *q,
                            QuantizeIsa isa) {
  // Rows the search cannot take keep their absmax codes, which the portable
  // definition gives.
  return isa == QuantizeIsa::Avx2 && searchable(row, n)
             ? detail::quantizeRowInt4SearchAvx2(row, n, q)
             : quantizeRowInt4SearchPortable(row, n, q);
}

float quantizeRowInt4Search(const float *row, size_t n, int8_t *q) {
  static const QuantizeIsa best = detail::haveQuantizeSearchAvx2()
                                      ? QuantizeIsa::Avx2
                                      : QuantizeIsa::Portable;
  return quantizeRowInt4Search(row, n, q, best);
}

float quantizeRowInt8(const float *row, size_t n, int8_t *q) {
  float maxAbs = 0;
  for (size_t i = 0; i < n; ++i)
    maxAbs = std::max(maxAbs, std::fabs(row[i]));
  float scale = maxAbs / 127.0f;
  for (size_t i = 0; i < n; ++i) {
    float v = scale == 0 ? 0.0f : std::round(row[i] / scale);
    q[i] = int8_t(std::min(127.0f, std::max(-127.0f, v)));
  }
  return scale;
}

void fakeQuantizeRowInt4(float *row, size_t n) {
  float maxAbs = 0;
  for (size_t i = 0; i < n; ++i)
    maxAbs = std::max(maxAbs, std::fabs(row[i]));
  float scale = maxAbs / 7.0f;
  for (size_t i = 0; i < n; ++i) {
    float v = scale == 0 ? 0.0f : std::round(row[i] / scale);
    row[i] = std::min(7.0f, std::max(-8.0f, v)) * scale;
  }
}

void packInt4(const int8_t *q, size_t n, uint8_t *out) {
  for (size_t j = 0; 2 * j < n; ++j) {
    uint8_t lo = uint8_t(q[2 * j]) & 0xf;
    uint8_t hi = 2 * j + 1 < n ? uint8_t(q[2 * j + 1]) & 0xf : 0;
    out[j] = uint8_t(lo | (hi << 4));
  }
}

void unpackInt4Row(const uint8_t *packed, size_t n, float scale, float *out) {
  for (size_t i = 0; i < n; ++i) {
    int nibble = (packed[i / 2] >> ((i & 1) * 4)) & 0xf;
    out[i] = float(nibble >= 8 ? nibble - 16 : nibble) * scale;
  }
}

namespace {
/// The one list of weight formats and their names.
struct FormatNames {
  WeightFormat format;
  const char *name, *scheme;
};
constexpr FormatNames kFormatNames[] = {
    {WeightFormat::Int4, "int4", "int4_per_row"},
    {WeightFormat::Int8, "int8", "int8_per_row"},
};

/// The one list of scheme names: the absmax scheme of each format is named
/// in kFormatNames; the other INT4 schemes have their own.
constexpr const char kInt4SearchScheme[] = "int4_per_row_search";
constexpr std::pair<QuantScheme, const char *> kInt4Schemes[] = {
    {{WeightFormat::Int4, ScaleRule::Search, Rounding::Nearest},
     kInt4SearchScheme},
    {{WeightFormat::Int4, ScaleRule::AbsMax, Rounding::Gptq},
     "int4_per_row_gptq"},
    {{WeightFormat::Int4, ScaleRule::Search, Rounding::Gptq},
     "int4_per_row_search_gptq"},
};

constexpr std::pair<Rounding, const char *> kRoundingNames[] = {
    {Rounding::Nearest, "nearest"},
    {Rounding::Gptq, "gptq"},
};

constexpr std::pair<ScaleRule, const char *> kScaleRuleNames[] = {
    {ScaleRule::AbsMax, "absmax"},
    {ScaleRule::Search, "search"},
};
} // namespace

const char *scaleRuleName(ScaleRule rule) {
  for (const auto &[r, name] : kScaleRuleNames)
    if (r == rule)
      return name;
  return "?";
}

bool parseScaleRule(const std::string &name, ScaleRule *rule) {
  for (const auto &[r, text] : kScaleRuleNames)
    if (name == text) {
      *rule = r;
      return true;
    }
  return false;
}

const char *schemeName(WeightFormat format) {
  for (const FormatNames &f : kFormatNames)
    if (f.format == format)
      return f.scheme;
  return "?";
}

const char *roundingName(Rounding rounding) {
  for (const auto &[r, name] : kRoundingNames)
    if (r == rounding)
      return name;
  return "?";
}

bool parseRounding(const std::string &name, Rounding *rounding) {
  for (const auto &[r, text] : kRoundingNames)
    if (name == text) {
      *rounding = r;
      return true;
    }
  return false;
}

std::string checkGroup(int64_t group) {
  if (group == 0 || (group >= kGroupAlign && group <= kMaxGroup &&
                     group % kGroupAlign == 0))
    return "";
  return "a group is 0 (one scale per row) or a multiple of " +
         std::to_string(kGroupAlign) + " up to " + std::to_string(kMaxGroup) +
         " columns, not " + std::to_string(group);
}

namespace {
constexpr const char kPerRow[] = "_per_row";

std::string rowSchemeName(const QuantScheme &scheme) {
  if (scheme.format == WeightFormat::Int4)
    for (const auto &[s, name] : kInt4Schemes)
      if (s.scales == scheme.scales && s.rounding == scheme.rounding)
        return name;
  return schemeName(scheme.format);
}

bool parseRowScheme(const std::string &name, QuantScheme *scheme) {
  for (const auto &[s, text] : kInt4Schemes)
    if (name == text) {
      *scheme = s;
      return true;
    }
  for (const FormatNames &f : kFormatNames)
    if (name == f.scheme) {
      *scheme = {f.format, ScaleRule::AbsMax};
      return true;
    }
  return false;
}
} // namespace

std::string schemeName(QuantScheme scheme) {
  std::string name = rowSchemeName(scheme);
  if (scheme.group)
    name.replace(name.find(kPerRow), sizeof kPerRow - 1,
                 "_g" + std::to_string(scheme.group));
  return name;
}

bool parseScheme(const std::string &name, QuantScheme *scheme) {
  // "int4_g64_search": the row scheme's name with "_per_row" for "_g64".
  size_t at = name.find("_g");
  if (at == std::string::npos || name.find(kPerRow) != std::string::npos)
    return parseRowScheme(name, scheme);
  size_t end = at + 2;
  int64_t group = 0;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9' &&
         group <= kMaxGroup)
    group = group * 10 + (name[end++] - '0');
  if (end == at + 2 || name[at + 2] == '0' || group == 0 ||
      !checkGroup(group).empty())
    return false;
  QuantScheme row;
  if (!parseRowScheme(name.substr(0, at) + kPerRow + name.substr(end), &row))
    return false;
  row.group = group;
  *scheme = row;
  return true;
}

int64_t groupCount(const QuantScheme &scheme, int64_t n) {
  return scheme.group > 0 && n > 0 ? (n + scheme.group - 1) / scheme.group
                                   : 1;
}

int64_t groupWidth(const QuantScheme &scheme, int64_t n) {
  return scheme.group > 0 ? scheme.group : n;
}

bool parseScheme(const std::string &name, WeightFormat *format) {
  QuantScheme scheme;
  if (!parseScheme(name, &scheme))
    return false;
  *format = scheme.format;
  return true;
}

const char *formatName(WeightFormat format) {
  for (const FormatNames &f : kFormatNames)
    if (f.format == format)
      return f.name;
  return "?";
}

bool parseFormatName(const std::string &name, WeightFormat *format) {
  for (const FormatNames &f : kFormatNames)
    if (name == f.name) {
      *format = f.format;
      return true;
    }
  return false;
}

float quantizeRow(WeightFormat format, const float *row, size_t n,
                  int8_t *q) {
  return format == WeightFormat::Int8 ? quantizeRowInt8(row, n, q)
                                      : quantizeRowInt4(row, n, q);
}

void fakeQuantizeRow(WeightFormat format, float *row, size_t n) {
  if (format == WeightFormat::Int4)
    return fakeQuantizeRowInt4(row, n);
  std::vector<int8_t> q(n);
  float scale = quantizeRowInt8(row, n, q.data());
  for (size_t i = 0; i < n; ++i)
    row[i] = float(q[i]) * scale;
}

float quantizeRow(QuantScheme scheme, const float *row, size_t n, int8_t *q) {
  if (scheme.format == WeightFormat::Int4 && scheme.scales == ScaleRule::Search)
    return quantizeRowInt4Search(row, n, q);
  return quantizeRow(scheme.format, row, n, q);
}

void quantizeRowGroups(QuantScheme scheme, const float *row, size_t n,
                       int8_t *q, float *scales) {
  const int64_t groups = groupCount(scheme, int64_t(n));
  const size_t width = size_t(groupWidth(scheme, int64_t(n)));
  for (int64_t g = 0; g < groups; ++g) {
    const size_t first = size_t(g) * width;
    scales[g] = quantizeRow(scheme, row + first, std::min(width, n - first),
                            q + first);
  }
}

void fakeQuantizeRow(QuantScheme scheme, float *row, size_t n) {
  if (scheme.scales == ScaleRule::AbsMax && !scheme.group)
    return fakeQuantizeRow(scheme.format, row, n);
  std::vector<int8_t> q(n);
  std::vector<float> scales(size_t(groupCount(scheme, int64_t(n))));
  quantizeRowGroups(scheme, row, n, q.data(), scales.data());
  const size_t width = size_t(groupWidth(scheme, int64_t(n)));
  for (size_t i = 0; i < n; ++i)
    row[i] = float(q[i]) * scales[i / width];
}

size_t packedRowBytes(WeightFormat format, size_t n) {
  return format == WeightFormat::Int8 ? n : (n + 1) / 2;
}

void packRow(WeightFormat format, const int8_t *q, size_t n, uint8_t *out) {
  if (format == WeightFormat::Int4)
    return packInt4(q, n, out);
  std::memcpy(out, q, n);
}

void unpackRow(WeightFormat format, const uint8_t *packed, size_t n,
               float scale, float *out) {
  if (format == WeightFormat::Int4)
    return unpackInt4Row(packed, n, scale, out);
  for (size_t i = 0; i < n; ++i)
    out[i] = float(int8_t(packed[i])) * scale;
}

void unpackRowGroups(WeightFormat format, const uint8_t *packed, size_t n,
                     int64_t group, const float *scales, float *out) {
  const size_t width = group > 0 ? size_t(group) : n;
  for (size_t first = 0, g = 0; first < n; first += width, ++g)
    unpackRow(format, packed + packedRowBytes(format, first),
              std::min(width, n - first), scales[g], out + first);
}

int64_t recordScaleBytes(int64_t n) { return int64_t(pad16(uint64_t(4 * n))); }

int64_t recordRowStride(WeightFormat format, int64_t k) {
  return int64_t(pad16(packedRowBytes(format, size_t(k))));
}

int64_t recordBytes(WeightFormat format, int64_t n, int64_t k) {
  return recordScaleBytes(n) + n * recordRowStride(format, k);
}

int64_t gatherRowBytes(WeightFormat format, int64_t group, int64_t cols) {
  QuantScheme scheme;
  scheme.group = group;
  return int64_t(packedRowBytes(format, size_t(cols))) +
         4 * groupCount(scheme, cols);
}

int64_t tensorRecordBytes(const QuantScheme &scheme, int64_t n, int64_t k) {
  const int64_t groups = groupCount(scheme, k), width = groupWidth(scheme, k);
  int64_t bytes = 0;
  for (int64_t g = 0; g < groups; ++g)
    bytes += recordBytes(scheme.format, n, std::min(width, k - g * width));
  return bytes;
}

} // namespace pccx::hw
