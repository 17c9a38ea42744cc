# One word per convention that differs on target v002-rtl (a GEMV, which
# v002-rtl cannot run, is in target.test as a raw word).
.program decode
memset dest_cache=fmap_shape dest_addr=3 a_value=4 b_value=2 c_value=8 ; shape of x
memcpy from_device=1 dest_addr=0x00010 aux_addr=0x00004 shape_ptr_addr=3 ; x -> l2
memcpy from_device=0 to_device=0 dest_addr=0x00020 src_addr=0x00010 shape_ptr_addr=3
gemm dest_reg=0x00040 src_addr=0x00010 flags=accm size_ptr_addr=7 shape_ptr_addr=3
cvo cvo_func=exp src_addr=0x00083 dst_addr=0x00100 length=16 ; softmax
