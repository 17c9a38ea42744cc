// RUN: pccx-opt %s --split-input-file --verify-diagnostics

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'cvo_func': must be one of exp, sqrt, gelu, sin, cos, reduce_sum, scale, recip}}
    pccx.cvo {cvo_func = "tanh", src_addr = 0, dst_addr = 0, length = 4}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'dest_reg' value 200000 does not fit in 17 bits [59:43]}}
    pccx.gemv {dest_reg = 200000, src_addr = 0, size_ptr_addr = 1, shape_ptr_addr = 1}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'src_addr': L2 word 114688 does not exist (the L2 has 114688 words)}}
    pccx.gemm {dest_reg = 0, src_addr = 114688, size_ptr_addr = 1, shape_ptr_addr = 1}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{parallel_lane 5 exceeds the 4 GEMV cores}}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 1, shape_ptr_addr = 1, parallel_lane = 5}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'size_ptr_addr' value 64 does not fit in 6 bits [19:14]}}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 64, shape_ptr_addr = 1}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host-to-host transfers are not supported}}
    pccx.memcpy {from_device, to_device, dest_addr = 0, src_addr = 0, aux_addr = 0, shape_ptr_addr = 0}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'aux_addr' value 131072 does not fit in 17 bits [23:7]}}
    pccx.memcpy {from_device, dest_addr = 0, src_addr = 0, aux_addr = 131072, shape_ptr_addr = 0}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'dest_cache': must be one of fmap_shape, weight_shape}}
    pccx.memset {dest_cache = "scale", dest_addr = 0, a_value = 0, b_value = 0, c_value = 0}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'c_value' value 65536 does not fit in 16 bits [19:4]}}
    pccx.memset {dest_cache = "fmap_shape", dest_addr = 0, a_value = 0, b_value = 0, c_value = 65536}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'length' value 70000 does not fit in 16 bits [21:6]}}
    pccx.cvo {cvo_func = "exp", src_addr = 0, dst_addr = 0, length = 70000}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{recip_scale applies only to cvo_func "scale"}}
    pccx.cvo {cvo_func = "exp", src_addr = 0, dst_addr = 0, length = 4, recip_scale}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'src_addr': 'nowhere' does not name a pccx.buffer of the program}}
    pccx.cvo {cvo_func = "exp", src_addr = @nowhere, dst_addr = 0, length = 4}
  }
}

// -----

pccx.program @p {
  pccx.buffer @b {words = 4}
  pccx.segment @s {
    // expected-error @+1 {{field 'aux_addr': 'b' does not name a pccx.host.buffer of the program}}
    pccx.memcpy {from_device, dest_addr = 0, src_addr = 0, aux_addr = @b, shape_ptr_addr = 0}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{field 'dest_addr': value -1 is negative}}
    pccx.memset {dest_cache = "fmap_shape", dest_addr = -1, a_value = 0, b_value = 0, c_value = 0}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{patch source 'time' must be one of token_id, position, attn_len, window_len, window_start}}
    pccx.cvo {cvo_func = "exp", src_addr = 0, dst_addr = 0, length = 4, patches = [#pccx.patch<field = "length", source = "time">]}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{patch of field 'cvo_func': only numeric fields can be patched}}
    pccx.cvo {cvo_func = "exp", src_addr = 0, dst_addr = 0, length = 4, patches = [#pccx.patch<field = "cvo_func", source = "position">]}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{patch names no field 'aux_addr' of this instruction}}
    pccx.cvo {cvo_func = "exp", src_addr = 0, dst_addr = 0, length = 4, patches = [#pccx.patch<field = "aux_addr", source = "position">]}
  }
}

// -----

pccx.program @p {
  // expected-error @+1 {{occupies words [114600, 114700) but the L2 has 114688 words}}
  pccx.buffer @b {words = 100, address = 114600}
}

// -----

pccx.program @p {
  // expected-error @+1 {{attribute 'words' failed to satisfy constraint}}
  pccx.buffer @b {words = 0}
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{region reaches past the host window of 131072 words}}
    pccx.host.kernel "fill" {params = {out = #pccx.region<offset = 131000, elems = 800, rows = 1, stride = 100>, value = 1.0}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'emit_logits': parameter 'in' must be a #pccx.region}}
    pccx.host.kernel "emit_logits" {params = {in = [1, 8, 1, 1], first_row = 0}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'emit_logits': parameter 'first_row' must be an integer}}
    pccx.host.kernel "emit_logits" {params = {in = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, first_row = 1.5}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'fill': parameter 'value' must be a number}}
    pccx.host.kernel "fill" {params = {out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, value = "one"}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'mul_tensor': parameter 'tensor' must be the name of a host tensor}}
    pccx.host.kernel "mul_tensor" {params = {in = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, tensor = 3}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'combine': parameter 'inputs' must be a list of #pccx.region}}
    pccx.host.kernel "combine" {params = {inputs = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, scale = 1.0}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'cache_write': parameter 'cache' must be the name of a KV cache}}
    pccx.host.kernel "cache_write" {params = {rows = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, cache = ["kv"]}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'embed': parameter 'table' must be the name of a gather table}}
    pccx.host.kernel "embed" {params = {out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, table = 0, scale = 1.0}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'fill' needs parameter 'out'}}
    pccx.host.kernel "fill"
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{names no host kernel 'rms_square' (known: embed, per_layer_inputs,}}
    pccx.host.kernel "rms_square"
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'fill' needs parameter 'value'}}
    pccx.host.kernel "fill" {params = {out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'fill' has no parameter 'colour'}}
    pccx.host.kernel "fill" {params = {out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, value = 1.0, colour = 2}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{parameter 'cache' must be the name of a KV cache}}
    pccx.host.kernel "cache_write" {params = {rows = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, cache = 3}}
  }
}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'fill': parameter 'out' names @h.9, which is not a pccx.host.buffer of the program}}
    pccx.host.kernel "fill" {params = {out = #pccx.region<buffer = @h.9, offset = 0, elems = 8, rows = 1, stride = 1>, value = 1.0}}
  }
}

// -----

pccx.program @p {
  pccx.host.buffer @h.0 {words = 4, alloc = 0, free = 1}
  pccx.segment @s {
    // expected-error @+1 {{host kernel 'fill': parameter 'out' reaches word 5 of @h.0, which has 4 words}}
    pccx.host.kernel "fill" {params = {out = #pccx.region<buffer = @h.0, offset = 4, elems = 8, rows = 1, stride = 1>, value = 1.0}}
  }
}

// -----

pccx.program @p {
  // expected-error @+1 {{lifetime [3, 3) must have 0 <= alloc < free}}
  pccx.host.buffer @h.0 {words = 4, alloc = 3, free = 3}
}

// -----

// Negative ordinals are refused, not read as huge unsigned ones.
pccx.program @p {
  // expected-error @+1 {{lifetime [-3, -1) must have 0 <= alloc < free}}
  pccx.host.buffer @h.0 {words = 4, alloc = -3, free = -1}
}

// -----

// expected-error @+1 {{expects parent op 'pccx.segment'}}
pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 1, shape_ptr_addr = 1}

// -----

pccx.program @p {
  pccx.segment @s {
    // expected-error @+1 {{requires attribute 'dest_reg'}}
    pccx.gemv {src_addr = 0, size_ptr_addr = 1, shape_ptr_addr = 1}
  }
}

// -----

// expected-error @+1 {{only a key or value record of a cache has a row}}
func.func private @f() attributes {w = #pccx.weights<cache = "kv.0.k", mask = true, row = 1>}

// -----

// expected-error @+1 {{row -2 is out of range}}
func.func private @g() attributes {w = #pccx.weights<cache = "kv.0.k", row = -2>}
