# An async host-to-L2 MEMCPY of 4096 words, then an exp over 16384
# elements elsewhere in L2: the two may run at once. Then the same MEMCPY
# followed by the GEMV of gemv.s, which reads other L2 words: the driver
# queues the GEMV's weight commands at once, so those two overlap too.
.program decode
memset dest_cache=fmap_shape dest_addr=2 a_value=4096 b_value=1
memset dest_cache=fmap_shape dest_addr=0 a_value=1
memcpy from_device=1 to_device=0 dest_addr=0x08000 aux_addr=0x00000 shape_ptr_addr=2 async=1
cvo cvo_func=exp src_addr=0x00000 dst_addr=0x00000 length=16384
memset dest_cache=weight_shape dest_addr=1 a_value=4096 b_value=2048 c_value=0
memcpy from_device=1 to_device=0 dest_addr=0x08000 aux_addr=0x00000 shape_ptr_addr=2 async=1
gemv dest_reg=0x01000 src_addr=0x00000 shape_ptr_addr=1 size_ptr_addr=0
