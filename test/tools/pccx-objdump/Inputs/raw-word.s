gemv
.word 0x3c00000000000000 ; deliberately bad
