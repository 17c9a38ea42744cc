# Every line below except the first instruction is wrong in one way.
gemv dest_reg=0x00010
gemx dest_reg=0x00010
gemv dest_reg=0x20000
gemv flags=accm|bogus
memset dest_cache=2
cvo cvo_func=tanh length=4
memcpy from_device=1 size_ptr_addr=3
gemv dest_reg=1 dest_reg=2
gemv dest_reg
.program
.program bad/name
.word 0x1ffffffffffffffff
.section weights
.program main
cvo cvo_func=exp length=99999
