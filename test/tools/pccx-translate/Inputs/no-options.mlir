pccx.program @decode {
}
