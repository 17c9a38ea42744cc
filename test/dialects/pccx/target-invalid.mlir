// RUN: pccx-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{unknown target "v003" (known: v002, v002-rtl)}}
module attributes {pccx.target = #pccx.target<"v003">} {
}

// -----

// expected-error @+1 {{'pccx.target' must be a #pccx.target, e.g. #pccx.target<"v002">}}
module attributes {pccx.target = "v002"} {
}

// -----

// expected-error @+1 {{'pccx.target' belongs on the module}}
pccx.program @p attributes {pccx.target = #pccx.target<"v002">} {
}
