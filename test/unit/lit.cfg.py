# lit configuration that runs every GoogleTest executable (named *Tests);
# in a cross build each runs under the emulator (qemu-user).
import os

import lit.formats

run_under = getattr(config, "pccx_run_under", [])
config.name = "pccx-unit-emulated" if run_under else "pccx-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests", run_under=run_under)
config.test_source_root = config.pccx_unittest_dir
config.test_exec_root = config.pccx_unittest_dir

# The reuse property tests (app/ReuseTests.cpp) check the runtime's logic,
# which is the same on every machine: under the emulator a few programs do.
if run_under:
    config.environment["PCCX_REUSE_PROGRAMS"] = "3"
    # Tests the emulator cannot run (qemu-user aborts when a forked child
    # starts threads) skip themselves.
    config.environment["PCCX_EMULATED"] = "1"
elif "PCCX_REUSE_PROGRAMS" in os.environ:
    config.environment["PCCX_REUSE_PROGRAMS"] = os.environ["PCCX_REUSE_PROGRAMS"]
