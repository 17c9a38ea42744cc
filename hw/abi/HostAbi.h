//===- HostAbi.h - the host-kernel ABI as C++ -------------------*- C++ -*-===//
//
// Typed view of HostKernels.def: kernel and parameter identifiers, their
// kinds and roles, and the host-window region a parameter describes. Plain
// C++17 without MLIR or JSON, so the compiler (builders, verifier) and the
// runtime (binding, profiler) share it.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_ABI_HOSTABI_H
#define PCCX_HW_ABI_HOSTABI_H

#include <cstdint>
#include <string>
#include <string_view>

namespace pccx::abi {

enum class HostKernel : uint8_t {
#define PCCX_HOST_KERNEL(Id, Name) Id,
#include "hw/abi/HostKernels.def"
};
constexpr unsigned kNumHostKernels = 0
#define PCCX_HOST_KERNEL(Id, Name) +1
#include "hw/abi/HostKernels.def"
    ;

enum class ParamKind : uint8_t {
  Region,     ///< [word offset, elems, rows, stride] in the host window
  RegionList, ///< a list of regions
  Int,
  Float,
  Tensor,     ///< name of a float32 host tensor
  TensorList, ///< names of host tensors
  Cache,      ///< name of a KV cache
  Gather,     ///< name of a gather table
};

enum class ParamRole : uint8_t { In, Out, Arg };

/// Every parameter of every kernel: Kernel_Param.
enum class HostParam : uint16_t {
#define PCCX_HOST_PARAM(Kernel, Id, Key, Kind, Role, Required) Kernel##_##Id,
#include "hw/abi/HostKernels.def"
};

/// Kind and kernel of every parameter, usable in constant expressions (the
/// typed accessors check a parameter's kind when they compile).
constexpr ParamKind kParamKinds[] = {
#define PCCX_HOST_PARAM(Kernel, Id, Key, Kind, Role, Required) ParamKind::Kind,
#include "hw/abi/HostKernels.def"
};
constexpr HostKernel kParamKernels[] = {
#define PCCX_HOST_PARAM(Kernel, Id, Key, Kind, Role, Required)                 \
  HostKernel::Kernel,
#include "hw/abi/HostKernels.def"
};
constexpr ParamKind paramKind(HostParam param) {
  return kParamKinds[unsigned(param)];
}
constexpr HostKernel paramKernel(HostParam param) {
  return kParamKernels[unsigned(param)];
}

/// A parameter id as a type, so that an accessor knows its kind at compile
/// time; converts to the HostParam it stands for.
template <HostParam P> struct ParamId {
  static constexpr HostParam id = P;
  static constexpr ParamKind kind = paramKind(P);
  static constexpr HostKernel kernel = paramKernel(P);
  constexpr operator HostParam() const { return P; }
};

/// The parameters of each kernel by name: param::RmsNorm::Eps is the id of
/// rms_norm's "eps". Each PCCX_HOST_KERNEL row closes the previous kernel's
/// struct and opens its own (the first closes the empty struct before it).
namespace param {
struct TableStart {
#define PCCX_HOST_KERNEL(Id, Name)                                             \
  }                                                                            \
  ;                                                                            \
  struct Id {                                                                  \
    static constexpr HostKernel kernel = HostKernel::Id;
#define PCCX_HOST_PARAM(Kernel, Id, Key, Kind, Role, Required)                 \
  static constexpr ParamId<HostParam::Kernel##_##Id> Id{};
#include "hw/abi/HostKernels.def"
};
} // namespace param

struct ParamInfo {
  HostParam id;
  HostKernel kernel;
  const char *key;
  ParamKind kind;
  ParamRole role;
  bool required;
  /// Position among its kernel's parameters (the slot of a bound call).
  unsigned slot;
};

struct ParamList {
  const ParamInfo *first, *last;
  const ParamInfo *begin() const { return first; }
  const ParamInfo *end() const { return last; }
  size_t size() const { return size_t(last - first); }
};

struct KernelInfo {
  HostKernel id;
  const char *name;
  ParamList params;
};

const KernelInfo &kernelInfo(HostKernel kernel);
const ParamInfo &paramInfo(HostParam param);
/// False when no kernel has that name.
bool lookupKernel(std::string_view name, HostKernel &kernel);
/// Null when the kernel has no parameter `key`.
const ParamInfo *lookupParam(HostKernel kernel, std::string_view key);
const char *paramKindName(ParamKind kind);
/// "embed, per_layer_inputs, ..." for messages.
std::string kernelNames();

/// A region of the host window: `rows` vectors of `elems` float lanes, row r
/// starting at lane 0 of word offset + r * stride (8 lanes per word).
struct HostRegion {
  int64_t offset = 0, elems = 0, rows = 0, stride = 0;

  int64_t rowWords() const { return elems / 8 + (elems % 8 != 0); }
  /// Words from the first to the end of the last row.
  int64_t spanWords() const { return (rows - 1) * stride + rowWords(); }
  /// Empty when the region is well formed and inside a window of
  /// `windowWords` words; otherwise the reason. No arithmetic overflows
  /// whatever the values.
  std::string check(int64_t windowWords) const;
};

} // namespace pccx::abi

#endif
