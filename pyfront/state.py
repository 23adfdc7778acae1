"""Per-thread tracing state, and the one lock that serializes all work on MLIR.

Each thread has its own stack of traces being built and of PyNative tapes recording (innermost
last): a thread tracing a function must not make another thread's eager ops or jit cache hits
trace into its function. Every op and jit call checks whether one is active, so the
stacks are thread-local objects that read like lists; the hot paths test their `.items`
list directly (no Python-level `__bool__`): a jit cache hit costs what it did before
(2.55 us for a 4-element add here, single-threaded).

`compiler_lock` is held while a function is traced, lowered or compiled: the process has one
MLIR context, and the bindings' builders, the pass pipeline and the ExecutionEngine are not
safe to drive from two threads at once. Running compiled code needs no lock. It is re-entrant:
tracing a function compiles the eager ops and nested jit functions it calls.
"""
from __future__ import annotations

import contextlib
import gc
import os
import threading


class ThreadStack(threading.local):
    """A stack private to each thread, with the list operations the frontend uses."""

    def __init__(self):
        self.items = []

    def __bool__(self):
        return bool(self.items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]

    def __iter__(self):
        return iter(self.items)

    def append(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()


active_traces = ThreadStack()
# Tapes recording eager ops for PyNative gradients (pyfront/pynative.py), innermost last.
active_tapes = ThreadStack()
# The bodies of loops and conditionals running now (pyfront/control_flow.py), innermost last:
# (API, role) pairs; ops.assign refuses to write a Parameter inside one.
active_bodies = ThreadStack()
# The options of the ms.jit functions being traced (JitOptions: loops, fullgraph), innermost
# last: pyfront/autograph.py reads them while it converts and runs control flow.
jit_options = ThreadStack()
class CompilerLock:
    """A re-entrant lock that counts the threads blocked acquiring it, so that a thread
    holding it for long (the tier-up's background lowering) hands it over between steps
    exactly when someone waits (it slept 1 ms per pass and hoped; a loaded machine did not
    wake the waiter in time, and the background took the lock back). threading.Condition
    works on it as on an RLock."""

    def __init__(self):
        self._lock = threading.RLock()
        self._count_lock = threading.Lock()
        self._waiting = 0

    def acquire(self, blocking=True, timeout=-1):
        if self._lock.acquire(blocking=False):
            return True
        if not blocking:
            return False
        with self._count_lock:
            self._waiting += 1
        try:
            return self._lock.acquire(True, timeout)
        finally:
            with self._count_lock:
                self._waiting -= 1

    def release(self):
        self._lock.release()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()

    def waiting(self) -> int:
        """How many threads are blocked acquiring it now."""
        return self._waiting

    def _forget_waiters(self):
        """In a forked child: the threads that waited are not there."""
        self._count_lock = threading.Lock()
        self._waiting = 0

    # threading.Condition's hooks, as an RLock has them
    def _is_owned(self):
        return self._lock._is_owned()

    def _release_save(self):
        return self._lock._release_save()

    def _acquire_restore(self, state):
        self._lock._acquire_restore(state)


compiler_lock = CompilerLock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=compiler_lock._forget_waiters)


# The cyclic garbage collector is paused while a function is traced and compiled: the
# pipeline makes hundreds of thousands of short-lived binding objects, and the collections
# they set off walked the process's objects ~50 times per compile (AMD EPYC, first call of
# a training step: MLP 27 ms, LeNet5 21 ms of collections). What the compile leaves for the
# collector is collected by the first collection after it.
_gc_pauses = 0
_gc_was_enabled = False
_gc_lock = threading.Lock()


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection inside (re-entrant, and across threads: the collector
    runs again when the last pause ends, if it ran before the first)."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()
