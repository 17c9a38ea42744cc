//===- Gemma3nDialect.td - Gemma 3n model-level dialect ----*- tablegen -*-===//

#ifndef GEMMA3N_DIALECT_TD
#define GEMMA3N_DIALECT_TD

include "mlir/IR/OpBase.td"

def Gemma3n_Dialect : Dialect {
  let name = "gemma3n";
  let summary = "Model-level operations of the Gemma 3n text decoder";
  let description = [{
    Ops at the granularity of Hugging Face's Gemma 3n text modules
    (docs/gemma3n-semantics.md). Activations are f32 tensors whose last
    dimension is the feature dimension and whose optional leading dimension
    is the token sequence (prefill); weights are `gemma3n.weight` values
    that name a checkpoint tensor and are never copied into the IR.
  }];
  let cppNamespace = "::pccx::gemma3n";
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Gemma3n_Op<string mnemonic, list<Trait> traits = []>
    : Op<Gemma3n_Dialect, mnemonic, traits>;

#endif
