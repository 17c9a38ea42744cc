# lit configuration for the tool, dialect and pass tests (FileCheck).
import os
import lit.formats

config.name = "pccx"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pccx_obj_root, "test")
config.excludes = ["unit", "Inputs", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "run-tests.py"]

path = os.pathsep.join([config.pccx_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
config.substitutions.append(("%pccx_src", config.pccx_src_root))
config.substitutions.append(("%python", "python3"))

# Tests that render a page in a real browser (the Makefile's deps install it).
import shutil
if shutil.which("chromium"):
    config.available_features.add("chromium")
