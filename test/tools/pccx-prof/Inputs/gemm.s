# One GEMM of M x N x K = 64 x 1024 x 1024 INT4 (a 512 KiB record).
.program decode
memset dest_cache=weight_shape dest_addr=1 a_value=1024 b_value=1024 c_value=0
memset dest_cache=fmap_shape dest_addr=0 a_value=64
gemm dest_reg=0x04000 src_addr=0x00000 shape_ptr_addr=1 size_ptr_addr=0
