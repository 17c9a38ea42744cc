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

def Pccx_ShapeAttr : Pccx_Attr<"Shape", "shape"> {
  let summary = "The three 16-bit values of a constant-cache shape entry";
  let description = [{
    What a GEMV/GEMM (weight_shape, fmap_shape) or MEMCPY (fmap_shape)
    needs in a shape bank, before pccx-allocate-constants gives it an entry
    and a MEMSET (docs/isa-semantics.md says what a, b and c mean per
    opcode).
  }];
  let parameters = (ins "int64_t":$a, "int64_t":$b, "int64_t":$c);
  let assemblyFormat = "`<` $a `,` $b `,` $c `>`";
  let genVerifyDecl = 1;
}

def Pccx_PatchAttr : Pccx_Attr<"Patch", "patch"> {
  let summary = "A field the runtime rewrites before issuing the word";
  let description = [{
    field = source(q) * scale + offset with q = step position + delta
    (hw/abi/PatchSources.h names the sources; the window sources need a
    positive `window`). In `shape_patches`, `bank` says which shape the
    patch belongs to until pccx-allocate-constants moves it to the MEMSET
    of that shape.
  }];
  let parameters = (ins
    StringRefParameter<"field">:$field,
    StringRefParameter<"source">:$source,
    DefaultValuedParameter<"int64_t", "1">:$scale,
    DefaultValuedParameter<"int64_t", "0">:$offset,
    DefaultValuedParameter<"int64_t", "0">:$delta,
    DefaultValuedParameter<"int64_t", "0">:$window,
    StringRefParameter<"bank", "\"\"">:$bank);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Pccx_PatchArrayAttr
    : TypedArrayAttrBase<Pccx_PatchAttr, "array of #pccx.patch">;

def Pccx_RecipeAttr : Pccx_Attr<"Recipe", "recipe"> {
  let summary = "How a stored weight derives from checkpoint tensors";
  let description = [{
    A gemma3n weight expression as a self-contained value, so that lowered
    programs name their weights without the gemma3n ops
    (dialects/Gemma3n/model/WeightEvaluator.h evaluates it). One of:
    `#pccx.recipe<tensor = "name">` (a checkpoint tensor),
    `#pccx.recipe<scale = R, by = R?, factor = f : f32>` (R's columns times
    the `by` vector and the factor), and
    `#pccx.recipe<quantize = R, scheme = "int4_per_row_search">` (R as the
    target stores it; the schemes of hw/numerics/Quantize.h). The bundle
    manifest records it as the JSON object of the same fields
    (docs/bundle-format.md); toJson() is that form.
  }];
  let parameters = (ins
    OptionalParameter<"::mlir::StringAttr">:$tensor,
    OptionalParameter<"::pccx::dialect::RecipeAttr">:$scale,
    OptionalParameter<"::pccx::dialect::RecipeAttr">:$by,
    OptionalParameter<"::mlir::FloatAttr">:$factor,
    OptionalParameter<"::pccx::dialect::RecipeAttr">:$quantize,
    OptionalParameter<"::mlir::StringAttr">:$scheme);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The three forms.
    static RecipeAttr getTensor(::mlir::MLIRContext *context,
                                ::mlir::StringAttr name);
    static RecipeAttr getScaled(RecipeAttr inner, RecipeAttr by,
                                ::mlir::FloatAttr factor);
    static RecipeAttr getQuantized(RecipeAttr inner, ::mlir::StringAttr scheme);
    /// The scheme of a quantized recipe; false for one that is not.
    bool quantScheme(::pccx::hw::QuantScheme *scheme) const;
    /// The storage format of a quantized recipe; false for one that is not.
    bool weightFormat(::pccx::hw::WeightFormat *format) const;
    /// The checkpoint tensor at the root.
    ::mlir::StringAttr rootTensor() const;
    /// The manifest's JSON form (objects with the same field names).
    ::nlohmann::json toJson() const;
  }];
}

def Pccx_WeightRecordAttr : Pccx_Attr<"WeightRecord", "weights"> {
  let summary = "The weight-stream record a GEMV/GEMM consumes";
  let description = [{
    Rows [first_row, first_row + num_rows) of a quantized weight expression
    (`recipe`, a quantized #pccx.recipe), all its columns or, with
    `num_cols`, columns [first_col, first_col + num_cols): one group of a
    scheme with group scales, whose K-sliced GEMV/GEMM accumulate,
    or a record a host kernel produces at run time (`dynamic`, the
    attention scores of host attention), or a record that lives in device
    memory and changes from step to step (`cache`: the key or value record
    of kv head `part` of that KV cache, or with `mask` the attention mask of
    step row `part` over that cache's slots; hw/numerics/KvRecords.h).
    In a program whose rows are independent sequences (`independent_rows`),
    a key or value record with `row` is that record of the cache of step
    row `row`'s sequence; without `row` every row shares the cache.
  }];
  let parameters = (ins
    OptionalParameter<"::pccx::dialect::RecipeAttr">:$recipe,
    DefaultValuedParameter<"int64_t", "0">:$first_row,
    DefaultValuedParameter<"int64_t", "0">:$num_rows,
    DefaultValuedParameter<"bool", "false">:$dynamic,
    OptionalParameter<"::mlir::StringAttr">:$cache,
    DefaultValuedParameter<"int64_t", "0">:$part,
    DefaultValuedParameter<"bool", "false">:$mask,
    DefaultValuedParameter<"int64_t", "-1">:$row,
    DefaultValuedParameter<"int64_t", "0">:$first_col,
    DefaultValuedParameter<"int64_t", "0">:$num_cols);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Pccx_TargetAttr : Pccx_Attr<"Target", "target"> {
  let summary = "The target profile a module's programs are compiled for";
  let description = [{
    One row of hw/machine/Targets.def, by name: `#pccx.target<"v002-rtl">`.
    The conversion records it on the module as `pccx.target`; the machine
    passes and pccx-verify-legality ask its profile what the target can
    run, and the emitter writes it into the bundle. A module without one is
    for the documented v002 semantics.
  }];
  let parameters = (ins "::pccx::machine::Target":$target);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// The capabilities and conventions of this target (Targets.def).
    const ::pccx::machine::TargetProfile &getProfile() const {
      return ::pccx::machine::targetProfile(getTarget());
    }
  }];
}

#endif // PCCX_ATTRS_TD
