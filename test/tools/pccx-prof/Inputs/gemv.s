# One GEMV of N x K = 4096 x 2048 INT4 weights without scales: a 4 MiB
# record (4096 rows of 1024 bytes).
.program decode
memset dest_cache=weight_shape dest_addr=1 a_value=4096 b_value=2048 c_value=0
memset dest_cache=fmap_shape dest_addr=0 a_value=1
gemv dest_reg=0x01000 src_addr=0x00000 shape_ptr_addr=1 size_ptr_addr=0
