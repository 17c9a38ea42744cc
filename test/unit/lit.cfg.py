# lit configuration that runs every GoogleTest executable (named *Tests);
# in a cross build each runs under the emulator (qemu-user).
import lit.formats

run_under = getattr(config, "pccx_run_under", [])
config.name = "pccx-unit-emulated" if run_under else "pccx-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests", run_under=run_under)
config.test_source_root = config.pccx_unittest_dir
config.test_exec_root = config.pccx_unittest_dir
