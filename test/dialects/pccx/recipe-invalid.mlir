// RUN: pccx-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{a recipe is exactly one of tensor, scale or quantize}}
module attributes {test.a = #pccx.recipe<tensor = "w", scale = <tensor = "v">, factor = 1.0 : f32>} {
}

// -----

// expected-error @+1 {{a recipe is exactly one of tensor, scale or quantize}}
module attributes {test.a = #pccx.recipe<>} {
}

// -----

// expected-error @+1 {{by and factor belong to a scale recipe}}
module attributes {test.a = #pccx.recipe<tensor = "w", factor = 2.0 : f32>} {
}

// -----

// expected-error @+1 {{a scale recipe needs a factor}}
module attributes {test.a = #pccx.recipe<scale = <tensor = "w">>} {
}

// -----

// expected-error @+1 {{a recipe's factor must be a finite f32}}
module attributes {test.a = #pccx.recipe<scale = <tensor = "w">, factor = 2.0 : f64>} {
}

// -----

// expected-error @+1 {{a quantize recipe has a scheme, and only it}}
module attributes {test.a = #pccx.recipe<quantize = <tensor = "w">>} {
}

// -----

// expected-error @+1 {{unknown quantization scheme 'int3_per_row'}}
module attributes {test.a = #pccx.recipe<quantize = <tensor = "w">, scheme = "int3_per_row">} {
}

// -----

pccx.program @p attributes {kind = "decode", rows = 1 : i64} {
  pccx.segment @s {
    // expected-error @+1 {{a weight record needs a quantized recipe (#pccx.recipe<quantize = ..., scheme = ...>)}}
    pccx.gemv {dest_reg = 0 : i64, src_addr = 0 : i64, weights = #pccx.weights<recipe = <tensor = "w">, num_rows = 1>}
  }
}
