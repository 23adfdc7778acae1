"""Tiered CPU compilation: a jit compile of a large module returns quick code, and the
optimized code is compiled in a background thread and serves the jit entry's calls from the
second on, as the JVM's and V8's tiers take over from their interpreters.

The quick tier lowers the bufferized module without the passes that only make code faster
(pipeline.QUICK_STAGES: no matmul schedule, fusion of loops, threads or outlining; its
matmuls call a compiled matrix product, ms-cpu-matmul-calls and runtime/_quick_kernels.c)
and LLVM compiles that at -O0 (no opt passes, fast instruction selection and register
allocation). The optimized tier lowers a copy of the bufferized module with every pass and
compiles it at -O3 on every core (passes/cpu_codegen.py). Measured on the Intel Xeon
(Emerald Rapids, 2 cores) with bench/conv.py, LeNet5's training step: compile 0.64-0.69 s
with an -O0 tier of the fully lowered module, 0.42-0.44 s with this one (its llvm stage
~380 -> ~130 ms, -O0 code generation ~135 -> ~40 ms of CPU); the optimized code is ready
~0.2-0.3 s later than before (its lowering now runs after the quick call).

The quick code runs 10-25x slower (LeNet5 step 1.7 -> ~40 ms), so a module tiers only when
its quick run is short next to the time the optimized compile takes: `quick_run_seconds`
estimates it from the iteration space of every linalg op (loop trip counts and kernel calls
multiplied through), and a module whose estimate exceeds QUICK_RUN_LIMIT (a ResNet block at
batch 32: seconds) or that has dynamic sizes compiles optimized at once.

MSCC_TIERED: `0` never tiers; `all` tiers every jit compile, small ones too (tests); unset or
anything else: modules of at least MIN_LOOP_NESTS loop nests (smaller ones compile quickly
anyway) whose quick run is short, on a machine with two cores or more for the compile.

The quick code serves exactly the first call, and the optimized compile starts when that call
returns (TierUp says why not sooner); the second call waits for the optimized code (if it is
not ready yet) and every later call runs it. So which calls ran which code does not
depend on timing: the two tiers' float results may differ in the last bits (LLVM contracts
products into FMAs and vectorizes reassociable sums at -O3 only), and a run's numbers are the
same every time its cache state is the same. jit does not ask for tiers in processes that
have called communication.init(): data-parallel ranks must update their weights with the same
code (one rank's compile could find another's optimized code in a shared disk cache).

The disk cache stores only optimized code: the background thread stores it when it is done.
The thread is not a daemon: at exit Python waits for it (the cache gets the entry; LLVM is
not killed mid-compile). `wait_optimized()` waits for every compile in flight (benchmarks
call it before timing). os.fork() waits for them too (multiprocessing's fork start method,
a data loader's workers): a child forked while LLVM runs in another thread inherits LLVM's
locks held by a thread it does not have, and its own first compile would hang.
"""
from __future__ import annotations

import functools
import math
import os
import threading
import time
import warnings
from concurrent.futures import Future, wait

from mlir import ir

from ..dialects.ir_helpers import indexing_maps, loop_sizes, ops_of_kind, static_trip_count

ENV = "MSCC_TIERED"
# Iteration-space points per second of the quick code, measured on the Intel Xeon (Emerald
# Rapids): matmul kernels (runtime/_quick_kernels.c: 5-14 G multiply-adds/s for LeNet5's and
# larger products, less for a few columns) and everything else (serial scalar loops at -O0,
# ~0.3 G points/s: LeNet5's step 10.5 M points in ~30 ms, a MobileNetV2 block's 177 M in
# ~0.6 s).
KERNEL_POINTS_PER_SECOND = 6e9
LOOP_POINTS_PER_SECOND = 0.3e9
# The longest quick run worth tiering: the quick tier saves 0.2-0.3 s of LeNet5's first call
# (more for larger modules).
QUICK_RUN_LIMIT = 0.1
# The loop nests (linalg ops on buffers) of the smallest module worth tiering: below, the
# optimized compile is short. test_cpu_codegen's MLP step (18) tiers; a convolution's
# forward (5) or a softmax (7) compiles optimized at once.
MIN_LOOP_NESTS = 16
_NESTS = ("linalg.generic", "linalg.matmul", "linalg.batch_matmul", "linalg.fill",
          "linalg.transpose", "linalg.copy", "linalg.reduce", "linalg.map")

_pending: set = set()  # the TierUps whose optimized code is not ready yet
_lock = threading.Lock()


def mode() -> str:
    value = os.environ.get(ENV, "").strip().lower()
    return {"0": "off", "off": "off", "all": "all"}.get(value, "auto")


def should_tier(module) -> bool:
    """Whether a bufferized module gets a quick first tier: MSCC_TIERED=all, or (auto) a
    module with threads to compile it (the background compile leaves the program a core),
    at least MIN_LOOP_NESTS loop nests and an estimated quick run (quick_run_seconds) of at
    most QUICK_RUN_LIMIT."""
    from . import cpu_codegen
    from ..runtime import quick_kernels
    chosen = mode()
    if chosen == "off" or not cpu_codegen.available() or not quick_kernels.load():
        return False
    if chosen == "all":
        return True
    if cpu_codegen.codegen_threads() < 2 or len(ops_of_kind(module, *_NESTS)) < MIN_LOOP_NESTS:
        return False
    quick_run = quick_run_seconds(module)
    return quick_run is not None and quick_run <= QUICK_RUN_LIMIT


def quick_run_seconds(module) -> float | None:
    """The estimated seconds one call of a bufferized module takes at -O0: every linalg op's
    iteration-space points, times the trip counts of the loops around it and the calls of
    its function, at the rate of its kind. None when a size is not known at compile time."""
    functions = {ir.StringAttr(op.attributes["sym_name"]).value: op
                 for op in module.body.operations if op.operation.name == "func.func"}
    memo: dict[str, tuple | None] = {}

    def function_points(name):
        if name not in memo:
            memo[name] = None  # (a recursive call: unknown)
            fn = functions.get(name)
            memo[name] = (0, 0) if fn is None else _region_points(
                fn.regions[0], function_points, "ms.kernel" in fn.attributes)
        return memo[name]
    totals = [0, 0]
    for name, fn in functions.items():
        if "sym_visibility" in fn.attributes:
            continue  # (private: counted through its calls)
        points = function_points(name)
        if points is None:
            return None
        totals = [a + b for a, b in zip(totals, points)]
    return totals[0] / KERNEL_POINTS_PER_SECOND + totals[1] / LOOP_POINTS_PER_SECOND


def _region_points(region, function_points, kernel: bool):
    """(kernel points, loop points) of the ops in `region`, or None (a dynamic size)."""
    kernel_points = loop_points = 0
    for block in region.blocks:
        for op in block.operations:
            op = op.operation
            name = op.name
            if name.startswith("linalg."):
                points = _linalg_points(op)
                if points is None:
                    return None
                kernel_points += points if kernel else 0
                loop_points += 0 if kernel else points
                continue
            if name == "func.call":
                inner = function_points(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
                trips = 1
            else:
                inner = (0, 0)
                for r in op.regions:
                    found = _region_points(r, function_points, kernel)
                    if found is None:
                        return None
                    inner = (inner[0] + found[0], inner[1] + found[1])
                trips = _trip_count(op) if op.regions else 1
            if inner is None or trips is None:
                return None
            kernel_points += inner[0] * trips
            loop_points += inner[1] * trips
    return kernel_points, loop_points


def _linalg_points(op) -> int | None:
    """The iteration-space size of a linalg op on memrefs: a generic's loops from its
    indexing maps, a matmul's m * n * k; any other op's output elements (times the
    contracted size for a batch matmul)."""
    from .cpu import matmul_ranges
    if op.name == "linalg.generic":
        sizes = loop_sizes(indexing_maps(op), op.operands)
    elif op.name == "linalg.matmul":
        sizes = matmul_ranges(op)
    else:
        shapes = [ir.MemRefType(v.type).shape for v in op.operands
                  if isinstance(v.type, ir.MemRefType)]
        if not shapes:
            return 0
        sizes = list(shapes[-1])
        if "matmul" in op.name and len(shapes) == 3:
            sizes.append(shapes[0][-1])
    if any(s is None or ir.ShapedType.is_dynamic_size(s) for s in sizes):
        return None
    return math.prod(sizes)


def _trip_count(op) -> int | None:
    """How often the regions of a loop run (1 for any other op with regions; None for a
    loop whose bounds are not constants)."""
    if op.name == "scf.for":
        return static_trip_count(op)
    if op.name == "scf.forall":
        if "staticUpperBound" not in op.attributes:
            return None
        trips = 1
        for upper in ir.DenseI64ArrayAttr(op.attributes["staticUpperBound"]):
            if ir.ShapedType.is_dynamic_size(upper):
                return None
            trips *= upper
        return trips
    if op.name in ("scf.while", "scf.parallel"):
        return None
    return 1


class TierUp:
    """The optimized compile of a module in a background thread, from `start()` on (jit
    starts it when the quick code's first call returns: run beside LLVM's threads on a
    2-core machine, that call's OpenMP loops waited for descheduled threads, an MLP step's
    -O0 run 30-46 ms instead of 20-21 and its first result 308-368 ms instead of 297-302);
    `result()` starts it if need be and waits for its loaded executable (None for a failed
    compile: a warning said why, and the quick code stays in use)."""

    def __init__(self, build, store):
        """`build()` returns the optimized Artifact; `store(artifact)` keeps it (the disk
        cache)."""
        self.future: Future = Future()
        self._thread = threading.Thread(target=self._run, args=(build, store),
                                        name="mscc-tier-up")
        self._started = False
        with _lock:
            _pending.add(self)

    def start(self):
        """Start the compile (once; later calls do nothing)."""
        with _lock:
            if self._started:
                return
            self._started = True
        self._thread.start()

    def _run(self, build, store):
        exe = None
        try:
            exe = self._optimized(build, store)
        finally:  # (whatever happened, the calls waiting for it go on, with the quick code
            # if there is no optimized one: a warning turned into an error by the program's
            # filters left them waiting for ever before)
            self.future.set_result(exe)
            with _lock:
                _pending.discard(self)
            with _compiler_condition():
                _compiler_condition().notify_all()

    @staticmethod
    def _optimized(build, store):
        t0 = time.perf_counter()
        _yield_to_the_program()
        try:
            artifact = build()
            exe = artifact.load()
            exe.artifact, exe.pass_times = artifact, []
            exe.compile_times = {"tier-up": time.perf_counter() - t0}
            store(artifact)
            return exe
        except Exception as e:  # noqa: BLE001 - reported, and the quick code stays in use
            warnings.warn(f"mscc: the optimized compile failed; the unoptimized code stays "
                          f"in use ({type(e).__name__}: {e})", RuntimeWarning)
            return None

    def result(self):
        """Waits with the compiler lock released: the build's MLIR part takes it, and the
        waiting thread may hold it (a call made while a function is traced or compiled)."""
        self.start()
        with _compiler_condition():
            _compiler_condition().wait_for(self.future.done)
        return self.future.result()


@functools.lru_cache(maxsize=None)
def _compiler_condition() -> threading.Condition:
    """A condition on the compiler lock: TierUp.result waits on it, releasing the lock
    however often its thread holds it, and a finished build notifies it."""
    from ..pyfront.state import compiler_lock
    return threading.Condition(compiler_lock)


# The background compile's niceness: the program's own threads (its calls, its next
# compiles) come first on a busy machine; LLVM takes the idle cycles.
BACKGROUND_NICENESS = 10


def _yield_to_the_program():
    """Lower this thread's scheduling priority (Linux: per thread; the compile threads and
    the linker processes it starts inherit it)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICENESS)
    except (AttributeError, OSError):
        pass  # (not Linux, or not permitted: the compile runs at the usual priority)


def wait_optimized(timeout: float | None = None) -> bool:
    """Wait until every optimized compile in flight (tiered jit compiles) is done and has
    whether all finished within `timeout` seconds (None: no limit)."""
    with _lock:
        pending = list(_pending)
    for tier_up in pending:  # (one compiled and never called yet starts now)
        tier_up.start()
    _, not_done = wait([t.future for t in pending], timeout=timeout)
    return not not_done


def _before_fork():
    wait_optimized()


os.register_at_fork(before=_before_fork)
