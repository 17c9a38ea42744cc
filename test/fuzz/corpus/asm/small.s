# A two-program test: one decode step of a toy projection and a prefill stub.
# Lines use the syntax pccx-objdump prints; omitted fields are zero.

.program decode
memset dest_cache=fmap_shape dest_addr=1 a_value=1 b_value=2048 c_value=256   ; layer 0: shape of q_proj
memcpy from_device=1 to_device=0 dest_addr=0x00100 aux_addr=0x00040 shape_ptr_addr=1   ; load x -> l2:x_in
gemv dest_reg=0x00200 src_addr=0x00100 flags=w_scale shape_ptr_addr=1 parallel_lane=0  ; layer 0 q_proj: l2:q <- W_q * l2:x_in

cvo cvo_func=exp src_addr=0x00200 dst_addr=0x00300 length=256 flags=sub_emax
cvo cvo_func=reduce_sum src_addr=0x00300 dst_addr=0x00400 length=256  # plain comment, not kept
memcpy from_device=0 to_device=1 src_addr=0x00400 aux_addr=0x00080 shape_ptr_addr=1 ; store l2:sum -> host

.program prefill
gemm dest_reg=0x01000 src_addr=0x00100 flags=accm|w_scale size_ptr_addr=2 shape_ptr_addr=3 ; layer 0 q_proj (prefill)
