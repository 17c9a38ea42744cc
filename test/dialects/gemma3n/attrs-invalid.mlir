// RUN: pccx-opt %s --split-input-file --verify-diagnostics

// An invalid config is refused when the IR is read, naming the field.
// expected-error @+1 {{#gemma3n.config: head_dim must be positive, got -4}}
module attributes {gemma3n.config = #gemma3n.config<{head_dim = -4 : i64}>} {
}

// -----

// Only JSON values.
// expected-error @+1 {{unexpected attribute}}
module attributes {gemma3n.config = #gemma3n.config<{hidden_size = #gemma3n.kv_sharing_resolved}>} {
}

// -----

// expected-error @+1 {{expected attribute value}}
module attributes {gemma3n.config = #gemma3n.config<>} {
}
