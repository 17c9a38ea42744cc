//===- HostCall.h - typed parameters of pccx.host.kernel --------*- C++ -*-===//
//
// One struct per kernel of hw/abi/HostKernels.def with one field per
// parameter, typed by the parameter's kind, for code that builds a
// pccx.host.kernel op:
//
//   hostcall::RmsNorm call;
//   call.In = inRegion;   // a HostRegionAttr
//   call.Eps = 1e-6;      // a Float takes floating-point values only
//   FailureOr<DictionaryAttr> params = hostcall::buildParams(loc, call);
//
// Naming a parameter the kernel does not have, or giving a value of another
// kind, does not compile; buildParams reports a required parameter left
// unset as an error naming the kernel and the parameter.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_DIALECTS_PCCX_HOSTCALL_H
#define PCCX_DIALECTS_PCCX_HOSTCALL_H

#include "dialects/Pccx/PccxOps.h"
#include "hw/abi/HostAbi.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace pccx::dialect::hostcall {

/// The value a parameter of kind K holds, the values it accepts, and how
/// it makes the one from the other.
template <abi::ParamKind K> struct KindTraits;
template <> struct KindTraits<abi::ParamKind::Region> {
  using Value = HostRegionAttr;
  template <typename U>
  static constexpr bool accepts = std::is_same_v<U, Value>;
};
template <> struct KindTraits<abi::ParamKind::RegionList> {
  using Value = llvm::SmallVector<HostRegionAttr, 4>;
  template <typename U>
  static constexpr bool accepts =
      std::is_convertible_v<U, llvm::ArrayRef<HostRegionAttr>>;
  static Value make(llvm::ArrayRef<HostRegionAttr> regions) {
    return Value(regions.begin(), regions.end());
  }
};
template <> struct KindTraits<abi::ParamKind::Int> {
  using Value = int64_t;
  template <typename U>
  static constexpr bool accepts =
      std::is_integral_v<U> && !std::is_same_v<U, bool>;
};
template <> struct KindTraits<abi::ParamKind::Float> {
  using Value = double;
  template <typename U>
  static constexpr bool accepts = std::is_floating_point_v<U>;
};
/// Names: of a host tensor, a KV cache, a gather table.
struct NameTraits {
  using Value = std::string;
  template <typename U>
  static constexpr bool accepts = std::is_constructible_v<Value, U>;
};
template <> struct KindTraits<abi::ParamKind::Tensor> : NameTraits {};
template <> struct KindTraits<abi::ParamKind::Cache> : NameTraits {};
template <> struct KindTraits<abi::ParamKind::Gather> : NameTraits {};
template <> struct KindTraits<abi::ParamKind::TensorList> {
  using Value = std::vector<std::string>;
  template <typename U>
  static constexpr bool accepts = std::is_constructible_v<Value, U>;
};

/// One parameter of a call: unset until assigned.
template <abi::HostParam P> class Param {
  using Traits = KindTraits<abi::paramKind(P)>;

public:
  using Value = typename Traits::Value;

  template <typename U, typename = std::enable_if_t<
                            Traits::template accepts<std::decay_t<U>>>>
  Param &operator=(U &&value) {
    if constexpr (abi::paramKind(P) == abi::ParamKind::RegionList)
      value_ = Traits::make(value);
    else
      value_ = Value(std::forward<U>(value));
    return *this;
  }
  const std::optional<Value> &get() const { return value_; }

private:
  std::optional<Value> value_;
};

// The structs: each PCCX_HOST_KERNEL row closes the previous kernel's
// struct and opens its own (the first closes TableStart).
struct TableStart {
#define PCCX_HOST_KERNEL(Id, Name)                                             \
  }                                                                            \
  ;                                                                            \
  struct Id {                                                                  \
    static constexpr abi::HostKernel kernel = abi::HostKernel::Id;
#define PCCX_HOST_PARAM(Kernel, Id, Key, Kind, Role, Required)                 \
  Param<abi::HostParam::Kernel##_##Id> Id;
#include "hw/abi/HostKernels.def"
};

namespace detail {
mlir::FailureOr<mlir::DictionaryAttr>
buildParams(mlir::Location loc, abi::HostKernel kernel, const void *call);
} // namespace detail

/// The `params` dictionary of a pccx.host.kernel op for `call`, or failure
/// after an error at `loc` naming the kernel and a required parameter the
/// call leaves unset.
template <typename Call>
mlir::FailureOr<mlir::DictionaryAttr> buildParams(mlir::Location loc,
                                                  const Call &call) {
  return detail::buildParams(loc, Call::kernel, &call);
}

} // namespace pccx::dialect::hostcall

#endif
