// RUN: pccx-opt %s --split-input-file | FileCheck %s
// RUN: pccx-opt %s --split-input-file | pccx-opt --split-input-file | FileCheck %s

// The config is parsed and validated once, into the typed config
// (runtime/import/Gemma3nConfig.h): fields left out take transformers'
// defaults (E4B), and it prints whole, under the alias #config.
// CHECK: #config = #gemma3n.config<{
// CHECK-SAME: hidden_size = 64 : i64
// CHECK-SAME: num_hidden_layers = 35 : i64
// CHECK-SAME: }>
// CHECK: module attributes {gemma3n.config = #config, gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved}
module attributes {gemma3n.config = #gemma3n.config<{hidden_size = 64 : i64}>, gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved} {
}

// -----

// Equal configs are one attribute.
// CHECK: #config = #gemma3n.config<{
// CHECK: module attributes {test.a = #config, test.b = #config}
module attributes {test.a = #gemma3n.config<{vocab_size = 512 : i64}>, test.b = #gemma3n.config<{vocab_size = 512 : i64}>} {
}
