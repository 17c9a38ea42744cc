gemv
cvo cvo_func=recip length=1 ; one element
