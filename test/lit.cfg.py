# lit configuration for mscc's IR tests: `RUN: ms-opt %s ... | FileCheck %s`.
import os
import sys

import lit.formats

config.name = "mscc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["python", "Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = getattr(config, "mscc_obj_root", None) or os.path.join(
    config.test_source_root, "Output")

python = getattr(config, "python_executable", None) or sys.executable
bindir = os.path.dirname(python)


def _site_bin(package):
    """bin/ of a wheel (mlir or llvm), found without importing mlir into lit."""
    import importlib.util
    spec = importlib.util.find_spec(package)
    return os.path.join(list(spec.submodule_search_locations)[0], "bin")


repo = os.path.dirname(config.test_source_root)
config.environment["PATH"] = os.pathsep.join(
    [bindir, _site_bin("llvm"), _site_bin("mlir"), config.environment.get("PATH", "")])
config.environment["PYTHONUNBUFFERED"] = "1"
config.environment["MSCC_CACHE_DIR"] = ""  # no on-disk executable cache in tests
# A checkout that is not the installed one (a git worktree) is found through PYTHONPATH.
if os.environ.get("PYTHONPATH"):
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
# The CUDA toolkit's PTX assembler, for tests that check the PTX we emit.
import shutil
if shutil.which("ptxas", path=config.environment["PATH"]):
    config.available_features.add("ptxas")

# The host's AVX-512 (what passes/cpu_target.py reads): tests of the host's own code need it.
try:
    with open("/proc/cpuinfo") as _f:
        _flags = next((line.split(":", 1)[1].split() for line in _f
                       if line.startswith("flags")), [])
except OSError:
    _flags = []
if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(_flags):
    config.available_features.add("host-avx512")

config.substitutions.append(("%ms_irdl", os.path.join(repo, "dialects", "ms.irdl.mlir")))
config.substitutions.append(("%examples", os.path.join(repo, "examples")))
config.substitutions.append(("%python", python))
