# Two rows of 64 words, 128 words apart, copied from L2 to the host window
# at word 0x100; the segment's end is a sync, where the host reads them.
.program decode
memset dest_cache=fmap_shape dest_addr=2 a_value=64 b_value=2 c_value=128
memcpy from_device=0 to_device=1 src_addr=0x00000 aux_addr=0x00100 shape_ptr_addr=2
