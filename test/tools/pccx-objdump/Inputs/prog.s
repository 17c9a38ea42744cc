# A small decode program for the objdump tests.
.program decode
memset dest_cache=weight_shape dest_addr=2 a_value=8 b_value=8 c_value=1 ; shape of layer0.w
memcpy from_device=1 dest_addr=0x00010 aux_addr=0x00004 shape_ptr_addr=2 ; embed row -> l2:h
gemv dest_reg=0x00020 src_addr=0x00010 flags=w_scale shape_ptr_addr=2   ; layer 0 proj: l2:y <- W * l2:h
