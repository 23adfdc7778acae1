"""Machine code of a large module from several threads (passes/cpu_codegen.py) and loop
nests outlined into functions of their own (passes/cpu_outline.py): the library they make
computes what the ExecutionEngine's code computes, goes into the disk cache as it is, and a
failing part is a compile error."""
import contextlib
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.passes import cpu_codegen
from mscc.passes.diagnostics import CompileError


def _loss(x, w1, w2):
    h = ops.tanh(x @ w1)
    return ops.reduce_mean((h @ w2) ** 2)


def _step(x, w1, w2):
    """The loss's gradients and an SGD update: a few dozen loop nests and two kernels."""
    g1, g2 = ms.grad(_loss, grad_position=(1, 2))(x, w1, w2)
    return w1 - 0.1 * g1, w2 - 0.1 * g2


def _numpy_step(x, w1, w2):
    h = np.tanh(x @ w1)
    z = h @ w2
    dz = 2 * z / z.size
    g2 = h.T @ dz
    g1 = x.T @ ((dz @ w2.T) * (1 - h * h))
    return w1 - 0.1 * g1, w2 - 0.1 * g2


def _inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) / 4 for s in ((37, 24), (24, 40), (40, 9))]


def _executable(f):
    return next(iter(f._flat_cache.values())).exe


@pytest.fixture(autouse=True)
def _no_background_compile():
    """Tests here record or replace what LLVM's C API runs: an earlier test's tier-up or
    disk-cache link, still running, would be seen too (a full run counted 8 target machines
    for this file's 6 parts) or meet the replacement."""
    from mscc.passes import exe_cache
    ms.wait_optimized()
    exe_cache.wait()


@pytest.fixture
def small_parts(monkeypatch):
    """Split even this small step: two threads whatever the module's size (untiered: no
    background compile links while a test records what the link ran)."""
    monkeypatch.setenv("MSCC_TIERED", "0")
    monkeypatch.setattr(cpu_codegen, "MIN_PART_COST", 400)
    monkeypatch.setattr(cpu_codegen, "_cores", lambda: 2)
    monkeypatch.delenv(cpu_codegen.ENV, raising=False)


def test_parts_compute_what_numpy_does(small_parts):
    f = ms.jit(_step)
    arrays = _inputs()
    got = [t.asnumpy() for t in f(*map(ms.Tensor, arrays))]
    exe = _executable(f)
    assert type(exe).__name__ == "CpuExecutable" and "codegen" in exe.compile_times
    assert len(exe.objects) == 2  # (one per thread, linked into the process together)
    want = _numpy_step(*[a.astype(np.float64) for a in arrays])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
    again = [t.asnumpy() for t in f(*map(ms.Tensor, arrays))]  # the cached entry's call
    for g, a in zip(got, again):
        np.testing.assert_array_equal(g, a)


def test_a_large_module_is_cut_into_more_parts_than_threads(small_parts, monkeypatch):
    """Parts of at least PIECE_COST, up to PARTS_PER_THREAD per thread, each thread taking
    the next part when it finishes one: here six parts, never more than two at once."""
    monkeypatch.setattr(cpu_codegen, "PIECE_COST", 500)
    running, most = [0], [0]
    lock = threading.Lock()
    compile_part = cpu_codegen._compile_part

    def counted(*args, **kwargs):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            return compile_part(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1
    monkeypatch.setattr(cpu_codegen, "_compile_part", counted)
    exe = _checked_step()
    assert len(exe.objects) == 2 * cpu_codegen.PARTS_PER_THREAD
    assert most[0] <= 2


@pytest.mark.parametrize("threshold,marked", [(1, True), (None, False)])
def test_a_large_entry_is_compiled_with_fast_instruction_selection(small_parts, monkeypatch,
                                                                    threshold, marked):
    """An entry of FAST_ISEL_INSTRUCTIONS or more (after O3: its body inlined) is optnone
    for code generation; the results stay numpy's. This step's entry is far below the
    default."""
    from mscc.passes import llvm_capi
    if threshold is not None:
        monkeypatch.setattr(cpu_codegen, "FAST_ISEL_INSTRUCTIONS", threshold)
    names, set_optnone = [], llvm_capi.set_optnone

    def recorded(lib, function):
        names.append(llvm_capi.name_of(lib, function))
        set_optnone(lib, function)
    monkeypatch.setattr(llvm_capi, "set_optnone", recorded)
    _checked_step()
    assert names == (["_mlir_ciface__step"] if marked else [])


def test_a_large_entry_gets_a_part_of_its_own():
    W = cpu_codegen.FunctionWork
    big = cpu_codegen.PLAIN_ENTRY_OPS
    sizes = {"_mlir_ciface_f": W(10, 100), "mscc.f": W(big, 9000), "mscc.f__loop0": W(50, 5000),
             "mscc.f__loop1": W(40, 4000), "mscc.f__matmul0": W(30, 3000)}
    assignment = cpu_codegen.share_out(sizes, 3)
    assert assignment["_mlir_ciface_f"] == assignment["mscc.f"] == 0
    assert all(part != 0 for name, part in assignment.items() if "__" in name)
    small = dict(sizes, **{"mscc.f": W(10, 9000)})  # (costly, but few operations)
    assert list(cpu_codegen.share_out(small, 3).values()).count(0) == 2


def test_a_large_entrys_part_compiles_at_o0(small_parts, monkeypatch):
    """The entry alone in part 0 (PLAIN_ENTRY_OPS) compiles at O0, the other parts at O3;
    the results stay numpy's."""
    from mscc.passes import llvm_capi
    monkeypatch.setattr(cpu_codegen, "PLAIN_ENTRY_OPS", 1)
    monkeypatch.setattr(cpu_codegen, "FAST_ISEL_INSTRUCTIONS", 1)
    monkeypatch.setattr(cpu_codegen, "PIECE_COST", 500)
    levels, target_machine = [], llvm_capi.target_machine

    def recorded(lib, triple, cpu, level=llvm_capi.CODEGEN_AGGRESSIVE):
        levels.append(level)
        return target_machine(lib, triple, cpu, level)
    monkeypatch.setattr(llvm_capi, "target_machine", recorded)
    exe = _checked_step()
    assert len(exe.objects) == len(levels) == 2 * cpu_codegen.PARTS_PER_THREAD
    assert sorted(levels) == [0] + [3] * (len(levels) - 1)


def _checked_step():
    """The executable of a jit compile of _step, its results checked against numpy."""
    f = ms.jit(_step)
    arrays = _inputs()
    got = [t.asnumpy() for t in f(*map(ms.Tensor, arrays))]
    for g, w in zip(got, _numpy_step(*[a.astype(np.float64) for a in arrays])):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
    return _executable(f)


def test_one_thread_compiles_in_process(small_parts, monkeypatch):
    monkeypatch.setenv(cpu_codegen.ENV, "1")
    exe = _checked_step()
    assert type(exe).__name__ == "CpuExecutable" and len(exe.objects) == 1


def test_small_modules_stay_in_process():
    f = ms.jit(lambda a: a * 2.0 + 1.0)
    np.testing.assert_array_equal(f(ms.Tensor(np.ones(4, np.float32))).asnumpy(), 3.0)
    assert type(_executable(f)).__name__ == "CpuExecutable"


def test_a_module_whose_functions_share_out_evenly_takes_two_threads(monkeypatch):
    """Below 2 x MIN_PART_COST a module takes two threads only where the lighter of its two
    parts costs MIN_SECOND_PART_COST or more (a Conv2d forward: entry and kernel)."""
    monkeypatch.setattr(cpu_codegen, "_cores", lambda: 2)
    monkeypatch.delenv(cpu_codegen.ENV, raising=False)
    work = cpu_codegen.FunctionWork
    second = cpu_codegen.MIN_SECOND_PART_COST
    even = {"entry": work(200, 2 * second), "kernel": work(200, second), "": work(1, 4)}
    lopsided = {"entry": work(200, 3 * second), "helper": work(20, second - 1)}
    assert cpu_codegen.part_costs(even, 2) == [2 * second, second]
    assert cpu_codegen.plan(None, even)[0] == 2
    assert cpu_codegen.plan(None, lopsided)[0] == 0
    half = work(900, cpu_codegen.MIN_PART_COST)
    large = {"a": half, "b": half}
    assert cpu_codegen.plan(None, large)[0] == 2


def test_a_conv2d_forward_is_compiled_by_two_threads(monkeypatch):
    """Its loop over images (the entry) and its matmul kernel, one part each, linked into
    the process together; the numbers as a direct float64 convolution's."""
    monkeypatch.setattr(cpu_codegen, "_cores", lambda: 2)
    monkeypatch.delenv(cpu_codegen.ENV, raising=False)
    monkeypatch.setenv("MSCC_TIERED", "0")
    monkeypatch.setenv("MSCC_CACHE_DIR", "")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 16, 14, 14)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32) / 12
    f = ms.jit(lambda a, b: ops.conv2d(a, b, pad_mode="same"))
    got = f(ms.Tensor(x), ms.Tensor(w)).asnumpy()
    assert len(_executable(f).objects) == 2
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((8, 32, 14, 14))
    for i in range(3):
        for j in range(3):
            want += np.einsum("nchw,oc->nohw", padded[:, :, i:i + 14, j:j + 14], w[:, :, i, j])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_without_llvms_c_api_the_execution_engine_compiles(monkeypatch):
    """Where libLLVM's C API cannot be loaded (another architecture), the MLIR
    ExecutionEngine compiles every module, large ones too."""
    from mscc.passes import llvm_capi
    monkeypatch.setattr(llvm_capi, "library", lambda: None)
    monkeypatch.setenv("MSCC_CACHE_DIR", "")
    assert type(_checked_step()).__name__ == "EngineExecutable"


def test_in_process_code_is_a_position_independent_object(tmp_path):
    """The object the JIT links is what the disk cache links into its library."""
    f = ms.jit(lambda a: ops.exp(a) - 1.0)
    x = np.linspace(-2, 2, 12, dtype=np.float32)
    np.testing.assert_allclose(f(ms.Tensor(x)).asnumpy(), np.expm1(x.astype(np.float64)),
                               rtol=2e-6, atol=1e-7)
    exe = _executable(f)
    [path] = exe.write_objects(str(tmp_path / "code"))
    with open(path, "rb") as obj:
        data = obj.read()
    assert data[:4] == b"\x7fELF" and [data] == exe.objects
    relocations = subprocess.run(["readelf", "-r", path], capture_output=True, text=True)
    if relocations.returncode == 0:  # (binutils installed) no absolute 64-bit code addresses
        assert "R_X86_64_64 " not in relocations.stdout.split(".rela.eh_frame")[0]


def test_a_symbol_the_process_lacks_is_an_llvm_error():
    """The JIT links at the first lookup: an undefined function nothing in the process
    defines is reported by name, not called."""
    from mscc.passes import llvm_capi
    from mscc.passes.cpu_target import current
    from mscc.runtime.jit_code import JitCode
    text = ("declare void @mscc_no_such_function()\n"
            "define void @f() {\n  call void @mscc_no_such_function()\n  ret void\n}\n")
    obj = cpu_codegen.compile_object(text.encode(), current().cpu)
    code = JitCode([obj])
    with pytest.raises(llvm_capi.LLVMError, match="Symbols not found.*mscc_no_such_function"):
        code.address("f")


RUNNER_UTILS_PROGRAM = r'''
import ctypes, numpy as np
from mscc.passes import cpu_codegen
from mscc.passes.cpu_target import current
from mscc.runtime import cpu
# f(n, a, b): memrefCopy of two rank-0 f32 descriptors, which only the runtime library defines
text = """
declare void @memrefCopy(i64, ptr, ptr)
define void @f(ptr %a, ptr %b) {
  %da = alloca { i64, ptr }
  %db = alloca { i64, ptr }
  %pa = getelementptr { i64, ptr }, ptr %da, i32 0, i32 1
  %pb = getelementptr { i64, ptr }, ptr %db, i32 0, i32 1
  store i64 0, ptr %da
  store i64 0, ptr %db
  store ptr %a, ptr %pa
  store ptr %b, ptr %pb
  call void @memrefCopy(i64 4, ptr %da, ptr %db)
  ret void
}
"""
obj = cpu_codegen.compile_object(text.encode(), current().cpu)
assert not cpu._runner_utils_loaded
code, address = cpu.link_in_process([obj], "f")
print(cpu._runner_utils_loaded)
'''


def test_code_that_calls_the_runtime_library_loads_it():
    """memrefCopy & co. are in libmlir_c_runner_utils, loaded the first time linked code
    needs it (a fresh process: nothing loaded it before)."""
    out = subprocess.run([sys.executable, "-c", RUNNER_UTILS_PROGRAM], check=True,
                         capture_output=True, text=True).stdout
    assert out.split() == ["True"]


def test_collected_code_is_freed(monkeypatch):
    """An executable's JIT goes with it (its finalizer disposes of the session)."""
    import gc
    import weakref
    from mscc.runtime import jit_code
    disposed = []
    real = jit_code._dispose
    monkeypatch.setattr(jit_code, "_dispose", lambda *a: (disposed.append(1), real(*a)))
    f = ms.jit(lambda a: a * 3.0)
    f(ms.Tensor(np.ones(3, np.float32)))
    code = weakref.ref(_executable(f)._code)
    del f
    gc.collect()
    assert code() is None and disposed == [1]


def _step_and_statistics(x, w1, w2):
    """_step and statistics of its results: a dozen loop nests in the entry (min-loops of
    ms-cpu-outline-loops is 8; _step alone has fewer since its products' kernels zero their
    outputs themselves)."""
    n1, n2 = _step(x, w1, w2)
    return n1, n2, ops.reduce_max(n1, 0), ops.reduce_min(n2, 1), ops.reduce_sum(x * x, 1)


def test_the_step_is_outlined_into_loop_functions():
    f = ms.jit(_step_and_statistics)
    arrays = _inputs()
    text = f.lower(*map(ms.Tensor, arrays)).as_text("llvm")
    assert "__loop0" in text and "__loop7" in text  # the entry's nests, one function each
    n1, n2, top, low, norms = (r.asnumpy() for r in f(*map(ms.Tensor, arrays)))
    w1, w2 = _numpy_step(*[a.astype(np.float64) for a in arrays])
    np.testing.assert_allclose(top, w1.max(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(low, w2.min(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norms, (arrays[0].astype(np.float64) ** 2).sum(1), rtol=1e-5)


def test_a_failing_part_is_a_compile_error(tmp_path):
    broken = "define void @f() {\n  ret i32 0\n}\n"  # returns a value from a void function
    with pytest.raises(CompileError) as info:
        cpu_codegen.compile_parts(broken, {"f": 0}, 2, str(tmp_path), "x86-64")
    assert info.value.stage == "obj" and "LLVM failed on part" in str(info.value)
    assert "value doesn't match function result type" in str(info.value)


# A mutable global and a local function in one part, called from the other: each has one
# definition in the library (the global's state is shared) and the entry stays exported.
SHARED_STATE_IR = """
@counter = internal global i32 0
@table = private unnamed_addr constant [2 x i32] [i32 1, i32 2]
define internal i32 @bump(i32 %x) {
  %c = load i32, ptr @counter
  %n = add i32 %c, %x
  store i32 %n, ptr @counter
  ret i32 %n
}
define i32 @entry(i32 %x) {
  %a = call i32 @bump(i32 %x)
  %t = load i32, ptr getelementptr ([2 x i32], ptr @table, i64 0, i64 1)
  %y = mul i32 %x, %t
  %b = call i32 @bump(i32 %y)
  %c = load i32, ptr @counter
  %r = add i32 %b, %c
  ret i32 %r
}
"""


def test_parts_share_globals_and_call_across(tmp_path):
    import ctypes
    objects = cpu_codegen.compile_parts(SHARED_STATE_IR, {"entry": 0, "bump": 1}, 2,
                                        str(tmp_path), "x86-64")
    lib = str(tmp_path / "parts.so")
    subprocess.run(["cc", "-shared", *objects, "-o", lib], check=True)
    entry = ctypes.CDLL(lib).entry
    # bump(5), bump(10), plus the counter read in the entry's part: one counter for both
    assert [entry(5), entry(5)] == [30, 60]


def test_parts_link_in_process_as_they_link_into_a_library():
    """The same two parts as objects in memory, linked by the JIT (runtime/jit_code.py):
    the hidden symbols of one part resolve in the other, the global is one."""
    import ctypes
    from mscc.runtime.jit_code import JitCode
    objects = cpu_codegen.compile_parts(SHARED_STATE_IR, {"entry": 0, "bump": 1}, 2, None,
                                        "x86-64")
    assert all(isinstance(o, bytes) and o[:4] == b"\x7fELF" for o in objects)
    code = JitCode(objects)
    entry = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(code.address("entry"))
    assert [entry(5), entry(5)] == [30, 60]


def test_work_is_shared_out_largest_first():
    sizes = {"a": 50, "b": 40, "c": 30, "d": 20, "": 7}  # ("": the module's globals)
    assert cpu_codegen.share_out(sizes, 2) == {"a": 0, "b": 1, "c": 1, "d": 0}
    assert cpu_codegen.share_out(sizes, 1) == {"a": 0, "b": 0, "c": 0, "d": 0}


# A function of descriptor plumbing and one with a loop, in the LLVM dialect.
_WORK_IR = """
llvm.func @plumbing(%p: !llvm.ptr) -> !llvm.struct<(ptr, i64)> {
  %u = llvm.mlir.undef : !llvm.struct<(ptr, i64)>
  %c = llvm.mlir.constant(4 : i64) : i64
  %a = llvm.insertvalue %p, %u[0] : !llvm.struct<(ptr, i64)>
  %b = llvm.insertvalue %c, %a[1] : !llvm.struct<(ptr, i64)>
  llvm.return %b : !llvm.struct<(ptr, i64)>
}
llvm.func @loop(%n: i64) -> i64 {
  %z = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  llvm.br ^head(%z : i64)
^head(%i: i64):
  %more = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %more, ^body, ^exit
^body:
  %next = llvm.add %i, %one : i64
  llvm.br ^head(%next : i64)
^exit:
  llvm.return %i : i64
}
"""


def test_work_counts_operations_and_weighs_loops_over_plumbing():
    from mlir import ir
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        sizes = cpu_codegen.function_sizes(ir.Module.parse(_WORK_IR))
    # (the llvm.func and the returns count as operations)
    assert sizes["plumbing"].ops == 6 and sizes["loop"].ops == 9
    c = cpu_codegen
    assert sizes["plumbing"].cost == c.FUNCTION_COST + 4 * 1 + 2 * c.OP_COST
    assert sizes["loop"].cost == (c.FUNCTION_COST + 2 * 1 + 3 * c.BRANCH_COST
                                  + 4 * c.OP_COST)
    # shared out by cost, not by operation count
    assert cpu_codegen.share_out(sizes, 2) == {"loop": 0, "plumbing": 1}


def test_the_support_object_is_linked_only_where_called(tmp_path):
    from mscc.passes import artifact
    calls, plain = tmp_path / "calls.o", tmp_path / "plain.o"
    for path, body in ((calls, "void memrefCopy(long, void *, void *);"
                               "void f(void *a, void *b) { memrefCopy(4, a, b); }"),
                       (plain, "int g(int x) { return x + 1; }")):
        source = path.with_suffix(".c")
        source.write_text(body)
        subprocess.run(["cc", "-c", "-fPIC", str(source), "-o", str(path)], check=True)
    assert artifact._support_objects("cc", [str(plain)], False) == []
    assert len(artifact._support_objects("cc", [str(plain), str(calls)], False)) == 1


PROGRAM = r'''
import json, sys, numpy as np, mscc as ms
sys.path.insert(0, sys.argv[1])
from mscc.passes import cpu_codegen, exe_cache
import test_cpu_codegen as t
cpu_codegen.MIN_PART_COST, cpu_codegen._cores = 400, lambda: 2
f = ms.jit(t._step)
got = [r.asnumpy().tolist() for r in f(*map(ms.Tensor, t._inputs()))]
stored = exe_cache.stats["stored"]  # before the tier-up's optimized code, if tiered
exe_cache.wait()
again = [r.asnumpy().tolist() for r in f(*map(ms.Tensor, t._inputs()))]  # (tiered: the
# optimized code serves the second call)
exe = t._executable(f)
print(json.dumps({"kind": type(exe).__name__, "stages": sorted(exe.compile_times),
                  "stored": stored, "stored_after_wait": exe_cache.stats["stored"],
                  "got": got, "again": again}))
'''


@pytest.mark.parametrize("tiered", ["0", "all"])
def test_the_threads_code_is_the_cache_entry(tmp_path, tiered):
    """The objects the threads compiled, linked into a library in the background, are the
    disk cache's entry; tiered, the optimized library is (stored when the background
    compile is done), never the unoptimized code."""
    env = dict(os.environ, MSCC_CACHE_DIR=str(tmp_path), MSCC_TIERED=tiered)
    env.pop(cpu_codegen.ENV, None)

    def run():
        out = subprocess.run([sys.executable, "-c", PROGRAM, os.path.dirname(__file__)],
                             env=env, check=True, capture_output=True, text=True).stdout
        return json.loads(out.splitlines()[-1])
    first = run()
    if tiered == "0":
        assert first["kind"] == "CpuExecutable" and "codegen" in first["stages"]
        assert first["stored_after_wait"] == 1  # (linked by the cache's worker)
    else:
        assert first["kind"] == "CpuLibraryExecutable"
        assert first["stages"] == ["tier-up"]  # the optimized code serves the calls now
        assert first["stored_after_wait"] == 1
    assert len(list(tmp_path.glob("*.msx"))) == 1
    second = run()
    assert second["stages"] == ["disk-cache"]
    # (the code that served the first process's second call is the entry: the same bits;
    # tiered, its first call ran the quick code, whose sums may round otherwise)
    for a, b in zip(first["again"], second["got"]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(first["got"], second["got"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


EXITING_PROGRAM = r'''
import sys, mscc as ms
sys.path.insert(0, sys.argv[1])
from mscc.passes import cpu_codegen
import test_cpu_codegen as t
cpu_codegen.MIN_PART_COST, cpu_codegen._cores = 400, lambda: 2
ms.jit(t._step)(*map(ms.Tensor, t._inputs()))
for n in (3, 4):  # and two small ones, queued behind it
    ms.jit(lambda a: a * 2.0 + 1.0)(ms.Tensor([1.0] * n))
'''


def test_a_program_that_ends_after_its_compiles_leaves_their_entries(tmp_path):
    """Entries are linked in the background: a program that exits right after its calls
    still leaves them all (exit gives the cache's worker time to link)."""
    env = dict(os.environ, MSCC_CACHE_DIR=str(tmp_path), MSCC_TIERED="0")
    env.pop(cpu_codegen.ENV, None)
    subprocess.run([sys.executable, "-c", EXITING_PROGRAM, os.path.dirname(__file__)],
                   env=env, check=True, capture_output=True)
    assert len(list(tmp_path.glob("*.msx"))) == 3
    assert not list(tmp_path.glob("*.o"))  # (their objects removed)


def _three_heads(x, w1, w2, w3, b):
    """Three products of one shape and epilogue (a ViT layer's q, k, v)."""
    return ops.reduce_sum(ops.relu(x @ w1 + b) * ops.tanh(x @ w2 + b) - (x @ w3 + b) ** 2)


def test_identical_kernels_are_compiled_once():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((128, 64)).astype(np.float32) / 4
    ws = [rng.standard_normal((64, 64)).astype(np.float32) / 8 for _ in range(3)]
    b = rng.standard_normal(64).astype(np.float32) / 4
    args = [ms.Tensor(a) for a in (x, *ws, b)]
    step = ms.jit(ms.grad(_three_heads, grad_position=(1, 2, 3)))
    text = step.lower(*args).as_text("llvm")
    calls = {line.split("llvm.call @", 1)[1].split("(", 1)[0] for line in text.splitlines()
             if "llvm.call @" in line and "__matmul" in line}
    assert 0 < len(calls) < 6  # 3 forward products, 3 weight gradients, 3 input gradients
    got = [g.asnumpy() for g in step(*args)]
    x64, b64 = x.astype(np.float64), b.astype(np.float64)
    z = [x64 @ w.astype(np.float64) + b64 for w in ws]
    r, t = np.maximum(z[0], 0), np.tanh(z[1])
    dz = [(z[0] > 0) * t, r * (1 - t * t), -2 * z[2]]
    for g, d in zip(got, dz):
        np.testing.assert_allclose(g, x64.T @ d, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ld_fails", [False, True], ids=["as+ld", "cc-after-ld-failed"])
def test_the_library_links_with_ld_or_else_cc(small_parts, monkeypatch, tmp_path, ld_fails):
    """A saved artifact's library (the threads' objects) links with as and ld, or with cc
    where they fail."""
    from mscc.passes import artifact, exe_cache
    from mscc.runtime.artifact import read
    exe_cache.wait()  # (an earlier test's background disk-cache links would be recorded too)
    tools, run, caller = [], artifact._run, threading.get_ident()

    def recording_run(cmd, *args, **kwargs):
        tool = os.path.basename(cmd[0])
        if threading.get_ident() == caller:  # (not a background store's link)
            tools.append(tool)
        if ld_fails and tool == "ld":
            raise artifact._tool_error("obj", "ld failed: on purpose")
        return run(cmd, *args, **kwargs)
    monkeypatch.setattr(artifact, "_run", recording_run)
    arrays = _inputs()
    path = ms.jit(_step).lower(*map(ms.Tensor, arrays)).compile().save(str(tmp_path / "s.msx"))
    got = read(path).load()(*arrays)
    for g, w in zip(got, _numpy_step(*[a.astype(np.float64) for a in arrays])):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
    assert tools[-2:] == (["ld", "cc"] if ld_fails else ["as", "ld"])


def _function_attributes(bitcode: bytes) -> dict[str, set[str]]:
    """{defined function: which of optnone, noinline it carries} of an LLVM module."""
    import ctypes
    from mscc.passes import llvm_capi
    lib = llvm_capi.library()
    get = lib.LLVMGetEnumAttributeAtIndex
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    kinds = {n: lib.LLVMGetEnumAttributeKindForName(n.encode(), len(n))
             for n in ("optnone", "noinline")}
    context = lib.LLVMContextCreate()
    try:
        module = llvm_capi.parse(lib, context, bitcode)
        found = {llvm_capi.name_of(lib, f): {n for n, k in kinds.items()
                                             if get(f, llvm_capi.FUNCTION_INDEX, k)}
                 for f in llvm_capi.functions(lib, module) if not lib.LLVMIsDeclaration(f)}
        lib.LLVMDisposeModule(module)
        return found
    finally:
        lib.LLVMContextDispose(context)


def test_straight_line_glue_is_compiled_at_o0(monkeypatch):
    """The entry and the outlined functions of parallel loops (an OpenMP fork call once
    translated) are optnone, as are the small loops ms-cpu-cold-loops marked; the loops'
    region functions, the other serial loop functions and kernels are optimized. The step
    still computes what numpy does."""
    from mlir import ir
    from mscc.dialects.builders import mlir_context
    from mscc.dialects.ir_helpers import defined_functions, symbol_name
    from mscc.passes import cpu_loops
    from mscc.passes.cpu_cold_loops import unoptimized
    monkeypatch.setattr(cpu_loops.ThreadedPass, "threads", lambda self: 2)
    net = ms.nn.Conv2d(4, 8, 3, pad_mode="same", has_bias=True)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4, 10, 10)).astype(np.float32)
    step = ms.jit(ms.value_and_grad(lambda a: (net(a) ** 2).mean(), 0, net.trainable_params()))
    text = step.lower(ms.Tensor(x)).as_text("llvm")
    with mlir_context():
        module = ir.Module.parse(text)
        sizes = cpu_codegen.function_sizes(module)
        code = cpu_codegen.translate(module)
        cold = {symbol_name(f) for f in defined_functions(module, "llvm.func") if unoptimized(f)}
    attributes = _function_attributes(code.bitcode)
    at_o0 = {name for name, found in attributes.items() if "optnone" in found}
    wrappers = {name for name in attributes if name + "..omp_par" in attributes}
    (interface,) = [n for n in attributes if n.startswith("_mlir_ciface_")]
    assert wrappers and cold and at_o0 == wrappers | {interface} | cold
    assert all("__loop" in n and n not in wrappers for n in cold)
    assert all("noinline" in attributes[n] for n in at_o0)
    # the work shared out counts the entry and the cold loops at O0's cost, a wrapper with
    # its region's
    assert all(sizes[n].cost < cpu_codegen.FUNCTION_COST for n in cold | {interface})
    assert all(sizes[n].cost > cpu_codegen.FUNCTION_COST for n in wrappers)
    loss, dx = step(ms.Tensor(x))[0], step(ms.Tensor(x))[1][0]
    w, b = (p.asnumpy().astype(np.float64) for p in net.trainable_params())
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    y = np.einsum("nchwij,ocij->nohw", windows, w) + b[None, :, None, None]
    np.testing.assert_allclose(loss.asnumpy(), (y ** 2).mean(), rtol=1e-5)
    dy = 2 * y / y.size
    dxp = np.zeros_like(xp)
    for i in range(3):
        for j in range(3):
            dxp[:, :, i:i + 10, j:j + 10] += np.einsum("nohw,oc->nchw", dy, w[:, :, i, j])
    np.testing.assert_allclose(dx.asnumpy(), dxp[:, :, 1:-1, 1:-1], rtol=1e-4, atol=1e-6)


def test_zero_fills_of_whole_buffers_are_memsets():
    """A Conv2d's parameter gradients start from zero-filled accumulators: those fills are
    memsets in the entry (ms-cpu-fills-as-memset), not functions of their own, and the
    gradients are numpy's on every call (the accumulators are zeroed each time)."""
    net = ms.nn.Conv2d(3, 5, 3, pad_mode="same", has_bias=True)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 8, 8)).astype(np.float32)
    step = ms.jit(ms.value_and_grad(lambda a: (net(a) ** 2).sum(), None,
                                    net.trainable_params()))
    text = step.lower(ms.Tensor(x)).as_text("llvm")
    assert text.count('"llvm.intr.memset"') >= 2
    w, b = (p.asnumpy().astype(np.float64) for p in net.trainable_params())
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    y = np.einsum("nchwij,ocij->nohw", windows, w) + b[None, :, None, None]
    dy = 2 * y
    for _ in range(2):
        loss, (dw, db) = step(ms.Tensor(x))
        np.testing.assert_allclose(loss.asnumpy(), (y ** 2).sum(), rtol=1e-5)
        np.testing.assert_allclose(dw.asnumpy(), np.einsum("nohw,nchwij->ocij", dy, windows),
                                   rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(db.asnumpy(), dy.sum((0, 2, 3)), rtol=1e-4, atol=1e-4)


_NO_LLVM_CLASSES = """
import sys
import numpy as np
import mscc as ms
net = ms.nn.Conv2d(3, 5, 3, pad_mode="same", has_bias=True)
step = ms.jit(ms.value_and_grad(lambda a: (net(a) ** 2).sum(), None, net.trainable_params()))
x = ms.Tensor(np.ones((2, 3, 8, 8), np.float32))
text = step.lower(x).as_text("llvm")
assert text.count('"llvm.intr.memset"') >= 2, "no memsets made"
step(x)
norm = ms.nn.BatchNorm2d
two = ms.jit(lambda a, b: (norm(8)(a), norm(24)(b)))
two(ms.Tensor(np.ones((2, 8, 4, 4), np.float32)), ms.Tensor(np.ones((2, 24, 4, 4), np.float32)))
print(sorted(m for m in sys.modules if m.startswith("mlir.dialects.") and "llvm" in m))
"""


def test_the_cpu_passes_build_their_llvm_ops_without_the_upstream_classes():
    """ms-cpu-fills-as-memset and ms-cpu-merge-constant-variants make LLVM ops
    (dialects/upstream/llvm.py builds them generically): a process that compiles memsets
    and merged functions never imports mlir.dialects.llvm, whose ~300 op classes took
    14-17 ms of every process's first compile."""
    env = dict(os.environ, MSCC_CACHE_DIR="")
    out = subprocess.run([sys.executable, "-c", _NO_LLVM_CLASSES], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


# ------------------------------------------------------------------ loop strength reduction

_TWO_LOOPS = """
define void @{name}(ptr %a, i64 %n, i64 %stride) #{attrs} {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %at = mul i64 %i, %stride
  %p = getelementptr float, ptr %a, i64 %at
  store float 1.0, ptr %p
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
"""


def test_only_marked_functions_get_loop_strength_reduction():
    """cpu_codegen runs LLVM's LSR on the functions ms-cpu-target-attributes marked (the
    matmul kernels) and on no other: LSR's induction variables (lsr.iv) appear in the
    marked function's loop alone."""
    import ctypes
    from mscc.passes import llvm_capi
    from mscc.passes.artifact import host_triple
    from mscc.passes.cpu_target import STRENGTH_REDUCE_ATTR, current
    lib = llvm_capi.library()
    if lib is None:
        pytest.skip("no libLLVM C API")
    text = (_TWO_LOOPS.format(name="marked", attrs=0) + _TWO_LOOPS.format(name="plain", attrs=1)
            + f'attributes #0 = {{ "{STRENGTH_REDUCE_ATTR}" }}\nattributes #1 = {{ nounwind }}\n')
    context = lib.LLVMContextCreate()
    module = llvm_capi.parse(lib, context, text.encode())
    lib.LLVMSetTarget(module, host_triple().encode())
    machine = llvm_capi.target_machine(lib, host_triple(), current().cpu)
    try:
        llvm_capi.optimize(lib, module, machine, "function(instcombine)")
        assert cpu_codegen._strength_reduce_marked(lib, module, machine) == ["marked"]
        lib.LLVMPrintModuleToString.restype = ctypes.c_void_p
        lib.LLVMPrintModuleToString.argtypes = [ctypes.c_void_p]
        printed = llvm_capi.message(lib, lib.LLVMPrintModuleToString(module))
    finally:
        lib.LLVMDisposeTargetMachine(machine)
        lib.LLVMDisposeModule(module)
        lib.LLVMContextDispose(context)
    marked, plain = printed.split("define void @plain")
    assert "lsr.iv" in marked and "lsr.iv" not in plain


def test_code_generation_turns_strength_reduction_off_and_gpu_code_back_on(monkeypatch):
    """-disable-lsr is one process-wide LLVM option: compiles that want the same setting
    share it, one that wants the other waits for them (the NVPTX code generation of
    gpu-module-to-binary wants it on)."""
    from mscc.passes import exe_cache, llvm_capi, pipeline, tiering
    tiering.wait_optimized()  # (no background compile of an earlier test meets the fakes)
    exe_cache.wait()
    set_to = []
    monkeypatch.setattr(llvm_capi, "set_options", lambda lib, options: set_to.extend(options))
    monkeypatch.setattr(llvm_capi, "library", lambda: object())
    monkeypatch.setitem(llvm_capi._lsr, "on", True)
    entered = threading.Event()
    gpu_steps = pipeline.parse_pipeline("canonicalize,gpu-module-to-binary{format=isa}")
    assert isinstance(pipeline._codegen_settings(pipeline.parse_pipeline("cse")),
                      contextlib.nullcontext)

    def gpu():
        with pipeline._codegen_settings(gpu_steps):
            set_to.append("gpu ran")
            entered.set()
    with llvm_capi.codegen_strength_reduction(False):
        with llvm_capi.codegen_strength_reduction(False):  # (a second CPU part: shared)
            thread = threading.Thread(target=gpu)
            thread.start()
            assert not entered.wait(0.2)  # (the GPU compile waits for the CPU parts)
    thread.join(5)
    assert set_to == ["-disable-lsr=true", "-disable-lsr=false", "gpu ran"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_is_not_held_up_by_its_parents_code_generation(monkeypatch):
    """A fork while a code generation thread holds a setting (a background tier-up): the
    child, which has no such thread, takes the other setting at once."""
    from mscc.passes import llvm_capi
    monkeypatch.setattr(llvm_capi, "set_options", lambda lib, options: None)
    monkeypatch.setattr(llvm_capi, "library", lambda: object())
    monkeypatch.setitem(llvm_capi._lsr, "on", True)
    with llvm_capi.codegen_strength_reduction(False):
        pid = os.fork()
        if pid == 0:  # the child: exit 0 once it got the other setting, 1 on an error
            code = 1
            try:
                with llvm_capi.codegen_strength_reduction(True):
                    code = 0
            finally:
                os._exit(code)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child waited for its parent's code generation")
    assert os.waitstatus_to_exitcode(status) == 0


def test_matmul_kernels_get_strength_reduction_in_a_jit_compile(monkeypatch):
    """A jit compile's matmul kernel is the function LSR runs on; its code generation runs
    with -disable-lsr, and the results are numpy's."""
    from mscc.passes import llvm_capi
    if llvm_capi.library() is None:
        pytest.skip("no libLLVM C API")
    monkeypatch.setenv("MSCC_TIERED", "0")
    monkeypatch.setenv("MSCC_CACHE_DIR", "")
    reduced, settings = [], []
    marked, setting = cpu_codegen._strength_reduce_marked, llvm_capi.codegen_strength_reduction

    def spy_marked(lib, module, machine):
        reduced.extend(marked(lib, module, machine))
        return reduced

    def spy_setting(on):
        settings.append(on)
        return setting(on)
    monkeypatch.setattr(cpu_codegen, "_strength_reduce_marked", spy_marked)
    monkeypatch.setattr(llvm_capi, "codegen_strength_reduction", spy_setting)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((40, 30)), rng.standard_normal((30, 50))
    f = ms.jit(lambda x, y: ops.relu(ops.matmul(x, y) + 1.0))
    got = f(ms.Tensor(a.astype(np.float32)), ms.Tensor(b.astype(np.float32))).asnumpy()
    np.testing.assert_allclose(got, np.maximum(a @ b + 1.0, 0.0), rtol=1e-5, atol=1e-5)
    assert reduced and all("matmul" in name for name in reduced)
    assert settings and not any(settings)
