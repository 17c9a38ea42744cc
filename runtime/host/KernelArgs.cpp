//===- KernelArgs.cpp - typed access to a bound call's arguments ----------===//

#include "runtime/host/KernelArgs.h"

namespace pccx::host {

bool KernelArgs::fail(abi::HostParam param, const std::string &why) {
  *error_ = "host kernel '" + std::string(abi::kernelInfo(call_.kernel).name) +
            "': parameter '" + abi::paramInfo(param).key + "' " + why;
  return false;
}

const BoundArg *KernelArgs::arg(abi::HostParam param) {
  const abi::ParamInfo &p = abi::paramInfo(param);
  if (p.kernel != call_.kernel)
    return fail(param, std::string("is read, but it is a parameter of '") +
                           abi::kernelInfo(p.kernel).name + "'"),
           nullptr;
  if (p.slot >= call_.args.size() || !call_.args[p.slot].present)
    return fail(param, "is missing"), nullptr;
  return &call_.args[p.slot];
}

bool KernelArgs::given(abi::HostParam param, bool *present) {
  const abi::ParamInfo &p = abi::paramInfo(param);
  if (p.kernel != call_.kernel)
    return fail(param, std::string("is read, but it is a parameter of '") +
                           abi::kernelInfo(p.kernel).name + "'");
  *present = p.slot < call_.args.size() && call_.args[p.slot].present;
  return true;
}

bool KernelArgs::regionFrom(abi::HostParam param, const abi::HostRegion &r,
                            Region *out, int64_t elems, int64_t rows) {
  std::string why = r.check(ctx_.windowWords);
  if (!why.empty())
    return fail(param, why);
  if (elems >= 0 && r.elems != elems)
    return fail(param, "has " + std::to_string(r.elems) +
                           " elements per row, expected " +
                           std::to_string(elems));
  if (rows >= 0 && r.rows != rows)
    return fail(param, "has " + std::to_string(r.rows) + " rows, expected " +
                           std::to_string(rows));
  *out = Region{ctx_.window + r.offset * 8, r.elems, r.rows, r.stride};
  return true;
}

bool KernelArgs::tensorShaped(abi::HostParam param, const BoundArg &a,
                              const HostTensor **out, int64_t rows,
                              int64_t cols) {
  if (a.tensors.size() != 1 || a.names.size() != 1 || !a.tensors[0])
    return fail(param, "must name a host tensor");
  const HostTensor *t = a.tensors[0];
  if (t->rows != rows || t->cols != cols)
    return fail(param, "names host tensor '" + a.names[0] + "' of shape [" +
                           std::to_string(t->rows) + ", " +
                           std::to_string(t->cols) + "], expected [" +
                           std::to_string(rows) + ", " + std::to_string(cols) +
                           "]");
  *out = t;
  return true;
}

bool KernelArgs::cacheSized(abi::HostParam param, const BoundArg &a,
                            StepCache *out, int64_t width) {
  // Every sequence of a batched step holds the same caches.
  const std::vector<KvCache> *caches = ctx_.cachesOf(0);
  if (!caches || a.cache < 0 || size_t(a.cache) >= caches->size())
    return fail(param, "names KV cache '" +
                           (a.names.empty() ? std::string() : a.names[0]) +
                           "', which this session does not hold");
  const KvCache &c = (*caches)[size_t(a.cache)];
  if (c.width() != width)
    return fail(param, "names a KV cache of width " +
                           std::to_string(c.width()) + ", expected " +
                           std::to_string(width));
  *out = StepCache(&ctx_, a.cache);
  return true;
}

bool KernelArgs::gatherSized(abi::HostParam param, const BoundArg &a,
                             const GatherTable **out, int64_t cols) {
  if (!a.gather)
    return fail(param, "must name a gather table");
  if (a.gather->cols != cols)
    return fail(param, "names a gather table of " +
                           std::to_string(a.gather->cols) +
                           " columns, expected " + std::to_string(cols));
  *out = a.gather;
  return true;
}

bool KernelArgs::stepRows(abi::HostParam param, int64_t rows) {
  if (rows != int64_t(ctx_.tokens.size()))
    return fail(param, "has " + std::to_string(rows) +
                           " rows but the step has " +
                           std::to_string(ctx_.tokens.size()) + " tokens");
  return true;
}

} // namespace pccx::host
