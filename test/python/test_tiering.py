"""Tiered CPU compilation (passes/tiering.py): a jit compile may first return code LLVM did not
optimize, while the optimized code is compiled in the background and then serves the calls.
Both tiers must compute the same function (numbers against numpy, float64 references), the
optimized tier must take over, the quick run's estimate must count what the module does,
and a failed optimized compile must leave the working quick code in place."""
import time
import warnings

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.passes import compiler, tiering


def _entry(f):
    return next(iter(f._cache.values()))


@pytest.fixture
def tiered_all(monkeypatch, tmp_path):
    """Every jit compile tiers: an empty disk cache (a hit loads optimized code), and no
    communication.init() from an earlier test (data-parallel processes never tier)."""
    from mscc.pyfront import communication
    monkeypatch.setenv(tiering.ENV, "all")
    monkeypatch.setenv("MSCC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(communication, "is_initialized", lambda: False)
    yield
    ms.wait_optimized()


def _mlp_step_program():
    """An MLP's loss gradients and SGD update (two matmul kernels, a dozen loop nests): the
    threaded code generation's test program."""
    import test_cpu_codegen as threaded
    return threaded._step, threaded._numpy_step, ((37, 24), (24, 40), (40, 9))


def _conv_program():
    """A convolution, ReLU and a sum (im2col, a matmul kernel, row-block loops)."""
    def f(x, w):
        return ops.relu(ops.conv2d(x, w, pad_mode="pad", padding=1)) * 0.5

    def reference(x, w):
        n, c, h, wd = x.shape
        o, _, k, _ = w.shape
        p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((n, o, h, wd))
        for i in range(k):
            for j in range(k):
                out += np.einsum("nchw,oc->nohw", p[:, :, i:i + h, j:j + wd], w[:, :, i, j])
        return (np.maximum(out, 0) * 0.5,)
    return f, reference, ((2, 3, 9, 9), (4, 3, 3, 3))


def _softmax_program():
    def f(x):
        return ops.softmax(x, -1) * x

    def reference(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True) * x,)
    return f, reference, ((33, 70),)


PROGRAMS = {"mlp-step": _mlp_step_program, "conv": _conv_program,
            "softmax": _softmax_program}


def _check(got, reference, inputs):
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = reference(*[a.astype(np.float64) for a in inputs])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_both_tiers_compute_the_function(tiered_all, name):
    fn, reference, shapes = PROGRAMS[name]()
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(s).astype(np.float32) / 4 for s in shapes]
    f = ms.jit(fn)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)  # the quick tier
    entry = _entry(f)
    quick = entry.exe
    assert entry.tier_up is not None and quick.artifact is None  # (never stored)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)  # waits for the optimized tier
    optimized = entry.exe
    assert optimized is not quick and optimized.compile_times.keys() == {"tier-up"}
    assert optimized.artifact is not None and entry.tier_up is None
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)  # the optimized tier, fast path
    assert f.compile_count == 1


def test_the_quick_code_serves_only_the_first_call(tiered_all):
    """Which call runs which code does not depend on timing: the first runs the quick code
    even when the optimized code is ready, the second always the optimized code."""
    fn, reference, shapes = _softmax_program()
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    f = ms.jit(fn)
    first = f(*map(ms.Tensor, inputs))
    entry = _entry(f)
    quick = entry.exe
    ms.wait_optimized()
    assert entry.exe is quick  # (ready, but not yet serving)
    second = f(*map(ms.Tensor, inputs))
    assert entry.exe is not quick
    for r in (first, second):
        _check(r, reference, inputs)
    np.testing.assert_array_equal(f(*map(ms.Tensor, inputs)).asnumpy(), second.asnumpy())


def test_the_optimized_compile_starts_when_the_quick_call_returns(tiered_all, monkeypatch):
    """Run beside LLVM's threads, the quick code's OpenMP loops waited for descheduled
    threads: the optimized compile starts after the first call's run, not before."""
    from mscc.passes import artifact
    from mscc.runtime import cpu
    events = []
    optimize, quick_run = artifact.code_artifact, cpu.CpuExecutable.run

    def code_artifact(*args, **kwargs):
        events.append("optimized compile")
        return optimize(*args, **kwargs)

    def run(self, arrays):
        events.append("quick run starts")
        try:
            return quick_run(self, arrays)
        finally:
            events.append("quick run ends")
    monkeypatch.setattr(artifact, "code_artifact", code_artifact)
    monkeypatch.setattr(cpu.CpuExecutable, "run", run)
    fn, reference, shapes = _softmax_program()
    inputs = [np.linspace(-1, 1, 33 * 70, dtype=np.float32).reshape(33, 70)]
    f = ms.jit(fn)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)
    ms.wait_optimized()
    assert events == ["quick run starts", "quick run ends", "optimized compile"]


def test_a_tier_up_nobody_called_starts_when_waited_for():
    import types
    built = []

    class Artifact:
        def load(self):
            return types.SimpleNamespace()

    def build():
        built.append(Artifact())
        return built[-1]
    tier_up = tiering.TierUp(build, lambda artifact: None)
    assert not built  # (not started: jit starts it after the quick call)
    assert ms.wait_optimized(timeout=60)  # (it would wait for ever for one never started)
    assert len(built) == 1 and tier_up.result().artifact is built[0]


def test_untiered_compiles_optimize_at_once(monkeypatch):
    monkeypatch.setenv(tiering.ENV, "0")
    fn, reference, shapes = _mlp_step_program()
    inputs = [np.ones(s, np.float32) / 8 for s in shapes]
    f = ms.jit(fn)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)
    assert getattr(_entry(f).exe, "tier_up", None) is None


def test_a_long_quick_run_is_not_tiered(monkeypatch):
    """auto: a module whose unoptimized run would take longer than it saves compiles
    optimized at once."""
    from mscc.pyfront import communication
    monkeypatch.setenv(tiering.ENV, "1")
    monkeypatch.setenv("MSCC_CACHE_DIR", "")
    monkeypatch.setattr(communication, "is_initialized", lambda: False)
    monkeypatch.setattr(tiering, "QUICK_RUN_LIMIT", 0.0)
    monkeypatch.setattr(tiering, "MIN_LOOP_NESTS", 1)
    from mscc.passes import cpu_codegen
    monkeypatch.setattr(cpu_codegen, "_cores", lambda: 2)
    fn, reference, shapes = _mlp_step_program()
    inputs = [np.ones(s, np.float32) / 8 for s in shapes]
    f = ms.jit(fn)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)
    assert getattr(_entry(f).exe, "tier_up", None) is None
    monkeypatch.setattr(tiering, "QUICK_RUN_LIMIT", 1.0)  # now it tiers
    g = ms.jit(fn)
    g(*map(ms.Tensor, inputs))
    assert _entry(g).tier_up is not None
    ms.wait_optimized()


def test_a_small_module_is_not_tiered(monkeypatch):
    """auto: a module of fewer than MIN_LOOP_NESTS loop nests (a softmax: its optimized
    compile is short) compiles optimized at once, however short its quick run."""
    from mscc.pyfront import communication
    from mscc.passes import cpu_codegen
    monkeypatch.setenv(tiering.ENV, "1")
    monkeypatch.setenv("MSCC_CACHE_DIR", "")
    monkeypatch.setattr(communication, "is_initialized", lambda: False)
    monkeypatch.setattr(tiering, "QUICK_RUN_LIMIT", 1.0)
    monkeypatch.setattr(cpu_codegen, "_cores", lambda: 2)
    fn, reference, shapes = _softmax_program()
    inputs = [np.linspace(-1, 1, 33 * 70, dtype=np.float32).reshape(33, 70)]
    f = ms.jit(fn)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)
    assert getattr(_entry(f).exe, "tier_up", None) is None
    monkeypatch.setattr(tiering, "MIN_LOOP_NESTS", 1)  # now it tiers
    g = ms.jit(fn)
    _check(g(*map(ms.Tensor, inputs)), reference, inputs)
    assert _entry(g).tier_up is not None
    ms.wait_optimized()


def test_the_quick_tier_lowers_without_the_speed_passes(tiered_all, monkeypatch):
    """The quick tier runs pipeline.QUICK_STAGES: its matmuls call the compiled product
    (ms-cpu-matmul-calls) and none of the passes that only make code faster runs (a
    float64 Dense layer: a transposed read made plain, the float64 product); both tiers
    compute it."""
    from mscc.passes import pipeline
    monkeypatch.setenv("MSCC_TIME_REPORT", "1")

    def f(x, w, b):
        return ops.relu(ops.matmul(x, w, transpose_b=True) + b)
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s) for s in ((7, 12), (5, 12), (5,)))
    want = np.maximum(x @ w.T + b, 0)
    g = ms.jit(f)
    for _ in range(3):  # quick, then optimized (waited for), then optimized
        got = g(ms.Tensor(x), ms.Tensor(w), ms.Tensor(b)).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        if _entry(g).tier_up is not None:
            quick_passes = {name for name, _ in _entry(g).exe.pass_times}
    assert "ms-cpu-matmul-calls" in quick_passes
    assert not quick_passes & pipeline.CPU_SPEED_ONLY
    assert _entry(g).exe.artifact is not None  # (the optimized tier took over)


def test_the_second_call_may_hold_the_compiler_lock(tiered_all, monkeypatch):
    """The optimized tier's lowering takes the compiler lock (the MLIR context is shared): a
    second call made while the lock is held (a call from a thread that is tracing or
    compiling) waits for it without holding the lock, instead of for ever."""
    import threading
    from mscc.pyfront.state import compiler_lock
    held = threading.Event()
    # (the background compile starts once the caller holds the lock)
    monkeypatch.setattr(tiering, "_yield_to_the_program", lambda: held.wait(60))
    fn, reference, shapes = _softmax_program()
    inputs = [np.linspace(-1, 1, 33 * 70, dtype=np.float32).reshape(33, 70)]
    f = ms.jit(fn)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)  # the quick tier
    results = []

    def second_call():
        with compiler_lock, compiler_lock:  # (held twice: an RLock's depth)
            held.set()
            results.append(f(*map(ms.Tensor, inputs)))
    caller = threading.Thread(target=second_call, daemon=True)
    caller.start()
    caller.join(timeout=60)
    assert not caller.is_alive(), "the second call waited for ever"
    _check(results[0], reference, inputs)
    assert _entry(f).exe.artifact is not None


def test_the_programs_compiles_come_before_the_optimized_lowering(tiered_all, monkeypatch):
    """The background lowering lets the compiler lock go after every pass: a compile the
    program starts meanwhile (a PyNative step's next graph) runs between two of its passes,
    not after the whole stage."""
    import threading
    from mscc.passes import base
    started, compiled, seen = threading.Event(), threading.Event(), []
    # Two passes that only the optimized lowering runs: the first tells the program it has
    # begun (and gives it time to ask for the lock), the second looks whether the program's
    # compile ran in between.
    first, second = base.PASSES["ms-cpu-kernel-dest"], base.PASSES["ms-cpu-kernel-zero-init"]
    monkeypatch.setattr(first, "run", lambda self, module: (started.set(), time.sleep(0.2)))
    monkeypatch.setattr(second, "run", lambda self, module: seen.append(compiled.wait(20)))
    fn, reference, shapes = _softmax_program()
    inputs = [np.linspace(-1, 1, 33 * 70, dtype=np.float32).reshape(33, 70)]
    f = ms.jit(fn)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)  # the quick tier; lowering starts
    assert started.wait(60)
    g = ms.jit(lambda x: ops.exp(x) + 1.0)
    np.testing.assert_allclose(g(ms.Tensor(inputs[0])).asnumpy(), np.exp(inputs[0]) + 1.0,
                               rtol=1e-6)
    compiled.set()
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)  # the optimized tier
    assert seen[0] is True  # (then g's own optimized lowering's)


def test_a_failed_optimized_compile_keeps_the_quick_code(tiered_all, monkeypatch):
    from mscc.passes import artifact

    def failing(*args, **kwargs):  # (the optimized compile: the quick one makes no library)
        raise RuntimeError("LLVM ran out of luck")
    monkeypatch.setattr(artifact, "code_artifact", failing)
    fn, reference, shapes = _softmax_program()
    inputs = [np.linspace(-1, 1, 33 * 70, dtype=np.float32).reshape(33, 70)]
    f = ms.jit(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _check(f(*map(ms.Tensor, inputs)), reference, inputs)
        quick = _entry(f).exe
        ms.wait_optimized()
    assert any("optimized compile failed" in str(w.message) and "out of luck" in
               str(w.message) for w in caught)
    for _ in range(2):
        _check(f(*map(ms.Tensor, inputs)), reference, inputs)
        assert _entry(f).exe is quick and _entry(f).tier_up is None


def test_a_failed_optimized_compile_under_warnings_as_errors_does_not_hang(tiered_all,
                                                                           monkeypatch):
    """A program that turns warnings into errors (-W error) makes the background thread's
    report raise: the calls waiting for the optimized code still go on, with the quick."""
    import threading
    from mscc.passes import artifact

    def failing(*args, **kwargs):
        raise RuntimeError("LLVM ran out of luck")
    monkeypatch.setattr(artifact, "code_artifact", failing)
    raised = []
    monkeypatch.setattr(threading, "excepthook", lambda info: raised.append(info.exc_type))
    fn, reference, shapes = _softmax_program()
    inputs = [np.linspace(-1, 1, 33 * 70, dtype=np.float32).reshape(33, 70)]
    f = ms.jit(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _check(f(*map(ms.Tensor, inputs)), reference, inputs)
        quick = _entry(f).exe
        assert ms.wait_optimized(timeout=60)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)
    assert _entry(f).exe is quick and raised == [RuntimeWarning]


def test_the_optimized_compile_keeps_the_target_of_its_compile(tiered_all, monkeypatch):
    """The background compile is for the CPU the compile was for, even when the environment
    names another (or a CPU LLVM does not know) before it runs."""
    from mscc.passes import cpu_target, tiering as tiers
    monkeypatch.setattr(tiers, "_yield_to_the_program", lambda: monkeypatch.setenv(
        cpu_target.CPU_ENV, "pentium-9000"))  # (set in the background thread, first thing)
    fn, reference, shapes = _softmax_program()
    inputs = [np.linspace(-1, 1, 33 * 70, dtype=np.float32).reshape(33, 70)]
    f = ms.jit(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a failed optimized compile warns)
        _check(f(*map(ms.Tensor, inputs)), reference, inputs)
        ms.wait_optimized()
        _check(f(*map(ms.Tensor, inputs)), reference, inputs)
    assert _entry(f).exe.artifact.manifest["cpu"]["mcpu"] != "pentium-9000"


# ------------------------------------------------------------ the quick run's estimate

KERNEL_IN_A_LOOP = """
module {
  func.func private @k(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>)
      attributes {ms.kernel = "matmul"} {
    linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>)
                  outs(%c : memref<4x16xf32>)
    return
  }
  func.func @main(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    scf.for %i = %c0 to %c3 step %c1 {
      func.call @k(%a, %b, %c) : (memref<4x8xf32>, memref<8x16xf32>, memref<4x16xf32>) -> ()
    }
    scf.forall (%j) in (2) {
      %cst = arith.constant 0.0 : f32
      linalg.fill ins(%cst : f32) outs(%c : memref<4x16xf32>)
    }
    return
  }
}
"""


def test_the_estimate_counts_loops_and_calls():
    module = compiler.parse_module(KERNEL_IN_A_LOOP)
    with module.context:
        got = tiering.quick_run_seconds(module)
    kernel_points, loop_points = 3 * 4 * 16 * 8, 2 * 4 * 16
    assert got == pytest.approx(kernel_points / tiering.KERNEL_POINTS_PER_SECOND
                                + loop_points / tiering.LOOP_POINTS_PER_SECOND)


def test_a_dynamic_size_has_no_estimate():
    module = compiler.parse_module(KERNEL_IN_A_LOOP.replace(
        "func.func @main(%a: memref<4x8xf32>", "func.func @main(%d: memref<?xf32>, "
        "%a: memref<4x8xf32>").replace(
        "    return\n  }\n}", "    %z = arith.constant 0.0 : f32\n"
        "    linalg.fill ins(%z : f32) outs(%d : memref<?xf32>)\n    return\n  }\n}"))
    with module.context:
        assert tiering.quick_run_seconds(module) is None


def test_data_parallel_processes_never_tier(tiered_all, monkeypatch):
    """After communication.init(), every rank must update its weights with the same code."""
    from mscc.pyfront import communication
    monkeypatch.setattr(communication, "is_initialized", lambda: True)
    fn, reference, shapes = _softmax_program()
    inputs = [np.full(shapes[0], 0.5, np.float32)]
    f = ms.jit(fn)
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)
    assert _entry(f).tier_up is None


@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")  # (jax's, when another test
# imported it into this process)
def test_fork_waits_for_the_optimized_compile(tiered_all):
    """A child forked during a tier-up has no tier-up thread: its second call would wait for
    it forever (and LLVM's locks held by that thread would be the child's). os.fork() waits
    until no optimized compile is in flight, and the child runs the optimized code. (That a
    child compiles anew is test_fork's.)"""
    import os
    import signal
    fn, reference, shapes = _softmax_program()
    inputs = [np.full(shapes[0], 0.25, np.float32)]
    f = ms.jit(fn)
    f(*map(ms.Tensor, inputs))  # the quick code; the optimized code compiling
    tier_up = _entry(f).tier_up
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            signal.alarm(60)  # (a hang fails the test instead of stalling it)
            got = f(*map(ms.Tensor, inputs)).asnumpy()
            ok = np.allclose(got, reference(*inputs)[0], rtol=2e-4, atol=2e-5)
            ok = ok and _entry(f).exe.compile_times.keys() == {"tier-up"}
        finally:
            os._exit(0 if ok else 1)
    assert tier_up.future.done()  # (waited for before the fork)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    _check(f(*map(ms.Tensor, inputs)), reference, inputs)


def test_the_compiler_lock_counts_its_waiters():
    """What the background lowering's handover reads: a thread blocked acquiring the lock is
    counted until it has it; re-entry and a Condition on the lock work as on an RLock."""
    import threading
    from mscc.pyfront.state import CompilerLock
    lock, got = CompilerLock(), threading.Event()
    lock.acquire()
    lock.acquire()  # re-entrant

    def waiter():
        with lock:
            got.set()
    t = threading.Thread(target=waiter)
    t.start()
    deadline = time.monotonic() + 10
    while lock.waiting() != 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert lock.waiting() == 1 and not got.is_set()
    lock.release()
    assert lock.waiting() == 1 and not got.is_set()  # still held once
    lock.release()
    t.join(10)
    assert got.is_set() and lock.waiting() == 0
    assert lock.acquire(blocking=False)
    condition, flag = threading.Condition(lock), []
    threading.Timer(0.05, lambda: (lock.acquire(), flag.append(1), condition.notify_all(),
                                   lock.release())).start()
    with condition:
        assert condition.wait_for(lambda: flag, timeout=10)
    lock.release()
