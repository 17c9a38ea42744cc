module {
}
