//===- PccxAttrs.td - pccx attributes ----------------------*- tablegen -*-===//

#ifndef PCCX_ATTRS_TD
#define PCCX_ATTRS_TD

include "PccxDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Pccx_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Pccx_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Pccx_HostRegionAttr : Pccx_Attr<"HostRegion", "region"> {
  let summary = "Rows of float lanes in the host window";
  let description = [{
    `rows` vectors of `elems` values, row r starting at lane 0 of word
    `offset + r * stride` (8 lanes per 128-bit word). Before host-buffer
    placement the region is symbolic: `buffer` names a pccx.host.buffer of
    the program and `offset` counts words from its start; placement drops
    `buffer` and makes `offset` a word of the window
    (hw/abi/HostAbi.h HostRegion).
  }];
  let parameters = (ins
    OptionalParameter<"::mlir::FlatSymbolRefAttr">:$buffer,
    "int64_t":$offset, "int64_t":$elems, "int64_t":$rows, "int64_t":$stride);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Words from the start of the first row to the end of the last.
    int64_t getSpanWords() const {
      return (getRows() - 1) * getStride() + (getElems() + 7) / 8;
    }
  }];
}

#endif // PCCX_ATTRS_TD
