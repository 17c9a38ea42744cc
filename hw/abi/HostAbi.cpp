//===- HostAbi.cpp - tables of HostKernels.def ----------------------------===//

#include "hw/abi/HostAbi.h"

#include "hw/support/CheckedMath.h"
#include "hw/support/Names.h"

namespace pccx::abi {

namespace {

// Slots count parameters within their kernel: a running index reset by each
// PCCX_HOST_KERNEL line.
constexpr ParamInfo kParams[] = {
#define PCCX_HOST_PARAM(Kernel, Id, Key, Kind, Role, Required)                 \
  {HostParam::Kernel##_##Id, HostKernel::Kernel, Key, ParamKind::Kind,         \
   ParamRole::Role,          Required,           0},
#include "hw/abi/HostKernels.def"
};
constexpr unsigned kNumParams = sizeof(kParams) / sizeof(kParams[0]);

struct Tables {
  ParamInfo params[kNumParams];
  KernelInfo kernels[kNumHostKernels];
};

const Tables &tables() {
  static const Tables t = [] {
    Tables t{};
    static const char *const names[] = {
#define PCCX_HOST_KERNEL(Id, Name) Name,
#include "hw/abi/HostKernels.def"
    };
    for (unsigned i = 0; i < kNumParams; ++i)
      t.params[i] = kParams[i];
    for (unsigned k = 0; k < kNumHostKernels; ++k) {
      unsigned first = 0;
      while (first < kNumParams && unsigned(t.params[first].kernel) != k)
        ++first;
      unsigned last = first;
      while (last < kNumParams && unsigned(t.params[last].kernel) == k) {
        t.params[last].slot = last - first;
        ++last;
      }
      t.kernels[k] = {
          HostKernel(k), names[k], {t.params + first, t.params + last}};
    }
    return t;
  }();
  return t;
}

} // namespace

const KernelInfo &kernelInfo(HostKernel kernel) {
  return tables().kernels[unsigned(kernel)];
}

const ParamInfo &paramInfo(HostParam param) {
  return tables().params[unsigned(param)];
}

bool lookupKernel(std::string_view name, HostKernel &kernel) {
  for (const KernelInfo &k : tables().kernels)
    if (name == k.name) {
      kernel = k.id;
      return true;
    }
  return false;
}

const ParamInfo *lookupParam(HostKernel kernel, std::string_view key) {
  for (const ParamInfo &p : kernelInfo(kernel).params)
    if (key == p.key)
      return &p;
  return nullptr;
}

const char *paramKindName(ParamKind kind) {
  switch (kind) {
  case ParamKind::Region:
    return "a region [offset, elems, rows, stride]";
  case ParamKind::RegionList:
    return "a list of regions";
  case ParamKind::Int:
    return "an integer";
  case ParamKind::Float:
    return "a number";
  case ParamKind::Tensor:
    return "the name of a host tensor";
  case ParamKind::TensorList:
    return "a list of host tensor names";
  case ParamKind::Cache:
    return "the name of a KV cache";
  case ParamKind::Gather:
    return "the name of a gather table";
  }
  return "?";
}

std::string kernelNames() {
  return support::joinNames(tables().kernels,
                            [](const KernelInfo &k) { return k.name; });
}

std::string HostRegion::check(int64_t windowWords) const {
  if (offset < 0 || elems <= 0 || rows <= 0 || stride < 0 ||
      stride < rowWords())
    return "is not a valid region (elems and rows positive, stride at least "
           "ceil(elems / 8))";
  // Each term is bounded by the window first; the product of two such
  // bounds (rows and stride up to 2^40 for a symbolic region) can still
  // exceed 64 bits, so the span is computed with overflow checks.
  const int64_t w = windowWords;
  int64_t span;
  if (offset > w || elems / 8 > w || rows > w || (rows > 1 && stride > w) ||
      !checkedMulAdd(rows - 1, stride, offset + rowWords(), &span) || span > w)
    return "reaches past the host window of " + std::to_string(w) + " words";
  return "";
}

} // namespace pccx::abi
