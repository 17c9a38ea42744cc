# lit configuration that runs every GoogleTest executable (named *Tests).
import lit.formats

config.name = "pccx-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = config.pccx_unittest_dir
config.test_exec_root = config.pccx_unittest_dir
