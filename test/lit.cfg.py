# lit configuration for the tool, dialect and pass tests (FileCheck).
import os
import shutil
import lit.formats

emulated = bool(getattr(config, "pccx_emulator", ""))
config.name = "pccx-emulated" if emulated else "pccx"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pccx_obj_root, "test")
config.excludes = ["unit", "fuzz", "Inputs", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "run-tests.py"]

# A runtime-only build (the board's, or the aarch64 cross build) tests its
# runtime tools; the models they run are compiled with a full build's
# pccx-compile, found after them on PATH.
if getattr(config, "pccx_runtime_only", False):
    config.excludes += ["pccx-compile", "pccx-opt", "pccx-translate",
                        "dialects", "passes", "readme", "docs"]
compiler_tools = getattr(config, "pccx_compiler_tools_dir", "") or config.pccx_tools_dir
path = os.pathsep.join([config.pccx_tools_dir, compiler_tools, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
config.substitutions.append(("%compiler_tools", compiler_tools))
# Under qemu-user (the aarch64 cross build): the tests that compare its
# results with this machine's, and those that cannot run emulated, ask.
if emulated:
    config.available_features.add("emulated")
# reuse.test's sequences: each request is checked against a fresh server,
# whose start takes seconds under qemu-user.
config.substitutions.append(("%reuse_requests", "12" if emulated else "40"))
config.substitutions.append(("%pccx_src", config.pccx_src_root))
config.substitutions.append(("%python", "python3"))
config.substitutions.append(("%pccx_obj", config.pccx_obj_root))
# In the sanitizer tree (make test-sanitize) python3, which is not
# instrumented, loads libpccxrt.so only with the sanitizer runtime first.
preload = getattr(config, "pccx_sanitizer_runtime", "")
config.substitutions.append(("%preload_sanitizer", "LD_PRELOAD=" + preload if preload else ""))
# The sanitizer tree (make test-sanitize): tests that check documents rather
# than code paths ask for it.
if preload:
    config.available_features.add("sanitizer")
# Caps a command's address space (1 GiB) to prove its memory stays bounded;
# nothing under the sanitizers, whose shadow memory alone is far larger.
config.substitutions.append(("%ulimit_as", "" if preload else "ulimit -v 1048576;"))

# The server's client test runs OpenAI's npm package under Node.js (make
# deps installs nodejs and npm); without them it is reported UNSUPPORTED.
if shutil.which("node") and shutil.which("npm"):
    config.available_features.add("node")
    # npm reads the user's configuration (registry, proxy, certificate
    # authorities) from these.
    for var in ("HOME", "http_proxy", "https_proxy", "HTTP_PROXY",
                "HTTPS_PROXY", "no_proxy", "NO_PROXY", "NODE_EXTRA_CA_CERTS",
                "SSL_CERT_FILE", "SSL_CERT_DIR"):
        if var in os.environ:
            config.environment[var] = os.environ[var]
else:
    lit_config.note("node or npm not found: the OpenAI npm client test of pccx-serve is skipped (install nodejs and npm)")

# The Python module's test runs under Debian's python3 with python3-numpy.
import subprocess
if os.path.exists("/usr/bin/python3") and subprocess.run(
        ["/usr/bin/python3", "-c", "import numpy"], capture_output=True).returncode == 0:
    config.available_features.add("python3-numpy")
else:
    lit_config.note("/usr/bin/python3 with numpy not found: the test of runtime/python/pccxrt.py is skipped (install python3-numpy)")
# pip install runtime/python into a virtual environment, offline.
if os.path.exists("/usr/bin/python3") and subprocess.run(
        ["/usr/bin/python3", "-c", "import ensurepip, venv"],
        capture_output=True).returncode == 0:
    config.available_features.add("python3-venv")
else:
    lit_config.note("python3-venv not found: the pip install test of runtime/python is skipped")


# pccx-run --chat's line editing (libedit found at configure time).
if getattr(config, "pccx_libedit", False):
    config.available_features.add("libedit")

# Tests that render a page in a real browser (the Makefile's deps install it).
if shutil.which("chromium"):
    config.available_features.add("chromium")

# Tests of output that cannot be written (a full device).
if os.path.exists("/dev/full"):
    config.available_features.add("dev-full")
