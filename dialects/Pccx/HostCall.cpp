//===- HostCall.cpp - typed parameters of pccx.host.kernel ----------------===//

#include "dialects/Pccx/HostCall.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace pccx::dialect::hostcall {

namespace {

Attribute toAttr(Builder &, const HostRegionAttr &region) { return region; }
Attribute toAttr(Builder &b, const llvm::SmallVector<HostRegionAttr, 4> &list) {
  return b.getArrayAttr(SmallVector<Attribute>(list.begin(), list.end()));
}
Attribute toAttr(Builder &b, int64_t value) {
  return b.getI64IntegerAttr(value);
}
Attribute toAttr(Builder &b, double value) { return b.getF64FloatAttr(value); }
Attribute toAttr(Builder &b, const std::string &name) {
  return b.getStringAttr(name);
}
// No kernel takes a TensorList today; the table may add one.
[[maybe_unused]] Attribute toAttr(Builder &b,
                                  const std::vector<std::string> &names) {
  SmallVector<Attribute> list;
  for (const std::string &n : names)
    list.push_back(b.getStringAttr(n));
  return b.getArrayAttr(list);
}

/// The attribute of one parameter of a call, or null when it is unset.
template <typename V>
Attribute toAttr(Builder &b, const std::optional<V> &value) {
  return value ? toAttr(b, *value) : Attribute();
}

/// Reads parameter HostParam(i) from a call of its kernel's struct.
using Reader = Attribute (*)(Builder &, const void *);
const Reader kReaders[] = {
#define PCCX_HOST_PARAM(Kernel, Id, Key, Kind, Role, Required)                 \
  [](Builder &b, const void *call) {                                           \
    return toAttr(b, static_cast<const Kernel *>(call)->Id.get());             \
  },
#include "hw/abi/HostKernels.def"
};

} // namespace

FailureOr<DictionaryAttr>
detail::buildParams(Location loc, abi::HostKernel kernel, const void *call) {
  Builder b(loc.getContext());
  const abi::KernelInfo &info = abi::kernelInfo(kernel);
  SmallVector<NamedAttribute> params;
  for (const abi::ParamInfo &p : info.params) {
    Attribute value = kReaders[unsigned(p.id)](b, call);
    if (value)
      params.push_back(b.getNamedAttr(p.key, value));
    else if (p.required)
      return emitError(loc)
                 << "internal: host kernel '" << info.name
                 << "' called without its required parameter '" << p.key << "'",
             failure();
  }
  return b.getDictionaryAttr(params);
}

} // namespace pccx::dialect::hostcall
