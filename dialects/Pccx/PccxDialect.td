//===- PccxDialect.td - pccx v002 target dialect -----------*- tablegen -*-===//

#ifndef PCCX_DIALECT_TD
#define PCCX_DIALECT_TD

include "mlir/IR/OpBase.td"

def Pccx_Dialect : Dialect {
  let name = "pccx";
  let summary = "The pccx v002 NPU instruction set";
  let description = [{
    One op per v002 instruction (gemv, gemm, memcpy, memset, cvo). Each op
    carries every field of its instruction word as an attribute named after
    the field in hw/isa/PccxIsa.def; flags and one-bit fields are unit
    attributes named after the flag. L2 addresses may be symbolic
    (`@buffer`, a `pccx.buffer` of the enclosing program) until L2
    allocation assigns them. Structure: `pccx.program` holds `pccx.buffer`
    declarations and ordered `pccx.segment`s; a segment is a run of
    instructions issued together, and `pccx.host.*` ops stand for work the
    ISA cannot express, executed by the runtime between instructions.
    Host-window space is symbolic too (`pccx.host.buffer`, `#pccx.region`)
    until host-buffer placement assigns words.
  }];
  let cppNamespace = "::pccx::dialect";
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
}

class Pccx_Op<string mnemonic, list<Trait> traits = []>
    : Op<Pccx_Dialect, mnemonic, traits>;

#endif // PCCX_DIALECT_TD
