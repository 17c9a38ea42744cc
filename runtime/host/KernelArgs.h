//===- KernelArgs.h - typed access to a bound call's arguments --*- C++ -*-===//
//
// What a kernel body reads its parameters through. A parameter is named by
// its id from hw/abi/HostKernels.def (abi::param::Kernel::Param), so reading
// one the table does not declare, or with the wrong kind, does not compile;
// reading another kernel's parameter, or one the call lacks, is an error
// naming the kernel and the parameter.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_HOST_KERNELARGS_H
#define PCCX_RUNTIME_HOST_KERNELARGS_H

#include "runtime/host/HostKernels.h"

namespace pccx::host {

class KernelArgs {
public:
  KernelArgs(const BoundCall &call, HostContext &ctx, std::string *error)
      : call_(call), ctx_(ctx), error_(error) {}

  /// Sets the error "host kernel 'K': parameter 'P' <why>"; false.
  bool fail(abi::HostParam param, const std::string &why);

  /// A region of the host window as the kernel addresses it.
  struct Region {
    float *base = nullptr;
    int64_t elems = 0, rows = 0, stride = 0;
    float *row(int64_t r) const { return base + r * stride * 8; }
  };

  /// A Region parameter inside the window, with `elems` elements per row
  /// and `rows` rows unless negative.
  template <abi::HostParam P>
  bool region(abi::ParamId<P>, Region *out, int64_t elems = -1,
              int64_t rows = -1) {
    static_assert(abi::paramKind(P) == abi::ParamKind::Region,
                  "not a Region parameter");
    const BoundArg *a = arg(P);
    return a && regionFrom(P, a->region, out, elems, rows);
  }

  /// The regions of a RegionList parameter (each to be checked with
  /// regionFrom).
  template <abi::HostParam P>
  bool regions(abi::ParamId<P>, const std::vector<abi::HostRegion> **out) {
    static_assert(abi::paramKind(P) == abi::ParamKind::RegionList,
                  "not a RegionList parameter");
    const BoundArg *a = arg(P);
    if (a)
      *out = &a->regions;
    return a;
  }

  /// Checks `r`, one region of parameter `param`, as region() does.
  bool regionFrom(abi::HostParam param, const abi::HostRegion &r, Region *out,
                  int64_t elems, int64_t rows);

  template <abi::HostParam P> bool integer(abi::ParamId<P>, int64_t *out) {
    static_assert(abi::paramKind(P) == abi::ParamKind::Int,
                  "not an Int parameter");
    const BoundArg *a = arg(P);
    if (a)
      *out = a->integer;
    return a;
  }

  template <abi::HostParam P> bool number(abi::ParamId<P>, double *out) {
    static_assert(abi::paramKind(P) == abi::ParamKind::Float,
                  "not a Float parameter");
    const BoundArg *a = arg(P);
    if (a)
      *out = a->number;
    return a;
  }

  /// Whether the call gives optional parameter `param` (false only on an
  /// error: a parameter of another kernel).
  bool given(abi::HostParam param, bool *present);

  /// A host tensor of shape [rows, cols].
  template <abi::HostParam P>
  bool tensor(abi::ParamId<P>, const HostTensor **out, int64_t rows,
              int64_t cols) {
    static_assert(abi::paramKind(P) == abi::ParamKind::Tensor,
                  "not a Tensor parameter");
    const BoundArg *a = arg(P);
    return a && tensorShaped(P, *a, out, rows, cols);
  }

  /// A KV cache of this session with rows of `width` values.
  template <abi::HostParam P>
  bool cache(abi::ParamId<P>, StepCache *out, int64_t width) {
    static_assert(abi::paramKind(P) == abi::ParamKind::Cache,
                  "not a Cache parameter");
    const BoundArg *a = arg(P);
    return a && cacheSized(P, *a, out, width);
  }

  /// A gather table of `cols` columns.
  template <abi::HostParam P>
  bool gather(abi::ParamId<P>, const GatherTable **out, int64_t cols) {
    static_assert(abi::paramKind(P) == abi::ParamKind::Gather,
                  "not a Gather parameter");
    const BoundArg *a = arg(P);
    return a && gatherSized(P, *a, out, cols);
  }

  /// Step rows must match the tokens the runtime supplied.
  bool stepRows(abi::HostParam param, int64_t rows);

  HostContext &ctx() { return ctx_; }
  abi::HostKernel kernel() const { return call_.kernel; }

private:
  /// The argument of `param` when it is a parameter of the call's kernel
  /// that the call gives; otherwise null after fail().
  const BoundArg *arg(abi::HostParam param);
  bool tensorShaped(abi::HostParam param, const BoundArg &a,
                    const HostTensor **out, int64_t rows, int64_t cols);
  bool cacheSized(abi::HostParam param, const BoundArg &a, StepCache *out,
                  int64_t width);
  bool gatherSized(abi::HostParam param, const BoundArg &a,
                   const GatherTable **out, int64_t cols);

  const BoundCall &call_;
  HostContext &ctx_;
  std::string *error_;
};

} // namespace pccx::host

#endif
