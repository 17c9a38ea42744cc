//===- Gemma3nAttrs.td - Gemma 3n module attributes --------*- tablegen -*-===//
//
// What a gemma3n module records about its model, typed: the text config
// (parsed once, at import or when IR is read) and the KV-sharing marker.
//
//===----------------------------------------------------------------------===//

#ifndef GEMMA3N_ATTRS_TD
#define GEMMA3N_ATTRS_TD

include "Gemma3nDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Gemma3n_Attr<string name, string attrMnemonic>
    : AttrDef<Gemma3n_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Gemma3n_ConfigAttr : Gemma3n_Attr<"Config", "config"> {
  let summary = "The text config of the checkpoint a module was imported from";
  let description = [{
    The Hugging Face text config, normalised and validated as the importer
    reads config.json (runtime/import/Gemma3nConfig.h), held as that typed
    struct: passes ask it for sizes and layer types without parsing again.
    Printed as its config.json form, `#gemma3n.config<{hidden_size = 64 :
    i64, ...}>`, under the alias `#config`; reading IR parses and validates
    it the same way, and an invalid config is an error naming the field.
  }];
  let parameters = (ins "::pccx::import::Gemma3nTextConfig":$config);
  let hasCustomAssemblyFormat = 1;
}

def Gemma3n_KvSharingResolvedAttr
    : Gemma3n_Attr<"KvSharingResolved", "kv_sharing_resolved"> {
  let summary = "Marks a module whose KV-shared layers read their source cache";
  let description = [{
    Set by gemma3n-resolve-kv-sharing as the module attribute
    `gemma3n.kv_sharing`; the conversion to pccx requires it. A module
    straight from the importer has none: every layer caches its own K/V.
  }];
}

#endif
