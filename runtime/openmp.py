"""The OpenMP runtime that parallel CPU code calls (__kmpc_fork_call & co.), and the number
of threads to compile for. No libomp ships with the MLIR wheels; the pip package
`intel-openmp` provides libiomp5.so (an optional extra, `mscc[openmp]`). Without one, the
compiler emits sequential loops.

Environment: MSCC_OPENMP_LIB names the library (empty: none); MSCC_NUM_THREADS the number of
threads (default: the CPUs this process may run on). This module does not import mlir.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys


def _candidates():
    if "MSCC_OPENMP_LIB" in os.environ:
        yield os.environ["MSCC_OPENMP_LIB"]
        return
    yield os.path.join(sys.prefix, "lib", "libiomp5.so")  # where the intel-openmp wheel puts it
    try:
        from importlib.metadata import PackageNotFoundError, files
        try:
            for f in files("intel-openmp") or []:
                if f.name == "libiomp5.so":
                    yield str(f.locate())
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    import ctypes.util  # (it imports subprocess: only where the wheel's runtime is missing)
    for name in ("iomp5", "omp"):
        found = ctypes.util.find_library(name)
        if found:
            yield found


@functools.lru_cache(maxsize=None)
def openmp_library() -> str | None:
    """Path of a loadable OpenMP runtime with the __kmpc entry points, or None."""
    # Idle worker threads spin for KMP_BLOCKTIME ms after a parallel loop (200 by default),
    # taking a core from numpy's BLAS threads and everything else; 1 ms still covers the gaps
    # between the kernels of one call. Read when the runtime starts; the user's value wins.
    os.environ.setdefault("KMP_BLOCKTIME", "1")
    for path in _candidates():
        if not path:
            continue
        try:
            lib = ctypes.CDLL(path)  # an unloadable library would abort the ExecutionEngine
            lib.__kmpc_fork_call  # noqa: B018  (libgomp has no __kmpc_*)
        except (OSError, AttributeError):
            continue
        return path
    return None


def num_threads() -> int:
    """Threads to compile parallel loops for (1: sequential code)."""
    env = os.environ.get("MSCC_NUM_THREADS")
    if env:
        return max(1, int(env))
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    return n if openmp_library() else 1
