"""Hostile IR: seeded mutants of the repository's own .mlir files (bench/fuzz_ir.py) and the
inputs that used to crash, through `ms-opt`, `ms-opt --convert-ms-to-linalg` and `mscc
--emit=llvm-ir`. Each run must exit 0, or 1 with a located diagnostic: no signal, no
traceback, no internal compiler error. The tools run in-process in two worker subprocesses
(a signal kills a worker, which is noticed and restarted), so a few hundred mutants take
about 10 s. `python bench/fuzz_ir.py --mutants 1000` runs a larger share."""
import os
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "bench")
sys.path.insert(0, BENCH)
import fuzz_ir  # noqa: E402

MUTANTS = 500
OWN_PASS_MUTANTS = 300
SEED = 20240611

T = "tensor<2xf32>"
# The inputs of the robustness issue, one per class (each used to abort, overflow the stack or
# be an internal compiler error in at least one of the commands).
HOSTILE = [
    f'func.func @f(%a: {T}) -> {T} {{\n  %0 = "ms."(%a) : ({T}) -> {T}\n  return %0 : {T}\n}}\n',
    f'func.func @f(%a: {T}) -> {T} {{\n  %0 = "func."(%a) : ({T}) -> {T}\n  return %0 : {T}\n}}\n',
    f'"ms"() : () -> ()\n',
    f'func.func @f(%a: {T}) -> {T} {{\n  %0 = ms.neg %a : {T}\n  return %0 : {T}\n}}\n',
    'func.func private @f() attributes {x = array<index: 1>}\n',
    "func.func @f(%x: memref<2x3xf32>, %y: memref<3x2xf32>) {\n  linalg.transpose ins(%x : "
    "memref<2x3xf32>) outs(%y : memref<3x2xf32>) permutation = [1,, 0]\n  return\n}\n",
    # the same list after something no attribute starts with, or after a name
    "func.func @f(%x: memref<2x3xf32>, %y: memref<3x2xf32>) {\n  linalg.transpose ins(%x : "
    "memref<2x3xf32>) outs(%y : memref<3x2xf32>) permutation = . [1, 0]\n  return\n}\n",
    "func.func @f(%x: memref<2x3xf32>, %y: memref<3x2xf32>) {\n  linalg.transpose ins(%x : "
    "memref<2x3xf32>) outs(%y : memref<3x2xf32>) permutation = x [1, 0]\n  return\n}\n",
    fuzz_ir.deep_nesting("attr", 10000),
    fuzz_ir.deep_nesting("type", 10000),
    fuzz_ir.deep_nesting("region", 3000),
    fuzz_ir.deep_nesting("alias", 5000),
    "func.func @f(%a: tensor<99999999999x99999999xf32>) -> tensor<99999999999x99999999xf32> {\n"
    '  %0 = "ms.neg"(%a) : (tensor<99999999999x99999999xf32>) -> tensor<99999999999x99999999xf32>\n'
    "  return %0 : tensor<99999999999x99999999xf32>\n}\n",
    'func.func @f() -> tensor<3000000000x3000000000xf32> {\n  %0 = "ms.constant"() {value = '
    "dense<0.5> : tensor<3000000000x3000000000xf32>} : () -> tensor<3000000000x3000000000xf32>\n"
    "  return %0 : tensor<3000000000x3000000000xf32>\n}\n",
    "func.func @f(%a: f32) -> f32 {\n  return %a : f32\n}\n",
    "func.func @f(%a: memref<4xf32>) {\n  linalg.fill ins(%c : f32) outs(%a : memref<4xf32>)\n"
    "  return\n}\n",
    f"func.func @f(%a: {T}) -> memref<2xf32> {{\n  %0 = bufferization.to_buffer %a : {T} to "
    "memref<2xf32>\n  return %0 : memref<2xf32>\n}\n",
    f'func.func @""(%a: {T}) -> {T} {{\n  return %a : {T}\n}}\n',
    f'func.func @f(%a: tensor<6xf32>) -> tensor<2x3xf32> {{\n  %0 = "ms.reshape"(%a) '
    '{shape = array<i128: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>\n'
    "  return %0 : tensor<2x3xf32>\n}\n",
    # a splat of 2**32 elements: a few bytes of text, 32 GiB as the array the verifier read
    'func.func @f() -> tensor<4xi64> {\n  %0 = "ms.constant"() {value = dense<1> : '
    "tensor<4294967296xi64>} : () -> tensor<4xi64>\n  return %0 : tensor<4xi64>\n}\n",
    # the same splat behind a tensor<1xi64> result, read as a const input by its consumer
    # (a MemoryError in the verifier; fuzzing seed 108)
    'func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %s = "ms.constant"() {value = '
    "dense<4> : tensor<4294967296xi64>} : () -> tensor<1xi64>\n"
    '  %0 = "ms.reshape"(%x, %s) : (tensor<4xf32>, tensor<1xi64>) -> tensor<4xf32>\n'
    "  return %0 : tensor<4xf32>\n}\n",
    # a memref result beside a dynamic argument (the dynamic sizes' record read its spec)
    "func.func @buffers(%a: tensor<?xf32>) -> memref<4xf32> {\n  %0 = memref.alloc() : "
    "memref<4xf32>\n  return %0 : memref<4xf32>\n}\n",
    # a struct position beyond 32 bits (the parser's bounds check truncates it, then asserts)
    "llvm.func @f(%p: !llvm.ptr) {\n  %d = llvm.load %p : !llvm.ptr -> !llvm.struct<(ptr, i64)>\n"
    "  %x = llvm.extractvalue %d[4294967296] : !llvm.struct<(ptr, i64)>\n  llvm.return\n}\n",
    # an element type numpy cannot hold (bf16 was one: it is an ms dtype now)
    'func.func @f() -> tensor<2xf8E4M3FN> {\n  %0 = "ms.constant"() {value = dense<0.5> : '
    "tensor<2xf8E4M3FN>} : () -> tensor<2xf8E4M3FN>\n  return %0 : tensor<2xf8E4M3FN>\n}\n",
]


def _offenders(texts, results, allowed=("ok", "located", "unlocated-no-loc-input")):
    return [f"#{r.mutant} {' '.join(r.command)}: {r.outcome} rc={r.rc}\n"
            f"{r.stderr.strip()[-600:]}\n--- input ---\n{texts[r.mutant][:400]}"
            for r in results if r.outcome not in allowed]


def test_hostile_inputs_get_located_diagnostics():
    """ms-opt may accept a non-tensor entry (it is valid IR); mscc cannot compile any."""
    results = fuzz_ir.run_texts(HOSTILE)
    bad = _offenders(HOSTILE, results, allowed=("ok", "located"))
    bad += _offenders(HOSTILE, [r for r in results if r.command[0] == "mscc"],
                      allowed=("located",))
    assert not bad, "\n\n".join(bad)


def test_mutants_keep_the_cli_contract():
    texts, results = fuzz_ir.fuzz(MUTANTS, SEED)
    assert len(results) == MUTANTS * len(fuzz_ir.COMMANDS)
    bad = _offenders(texts, results)
    assert not bad, fuzz_ir.report(results) + "\n\n" + "\n\n".join(bad[:10])
    # The mutants reach past the parser: some compile, most fail with a diagnostic.
    outcomes = {r.outcome for r in results}
    assert {"ok", "located"} <= outcomes


def test_mutants_keep_the_contract_through_their_own_passes():
    # Each mutant also through `ms-opt` with the passes its seed's file tests (its RUN
    # line): every pass, not only the pipelines, meets broken variants of its own inputs
    # (an ms.distinct_pointers past the arguments was an IndexError in ms-cpu-alias-scopes).
    texts, results = fuzz_ir.fuzz(OWN_PASS_MUTANTS, SEED + 1, own_passes=True)
    own = [r for r in results if tuple(r.command) not in fuzz_ir.COMMANDS]
    assert len({tuple(r.command) for r in own}) > 10  # (many passes, not one)
    bad = _offenders(texts, results)
    assert not bad, fuzz_ir.report(results) + "\n\n" + "\n\n".join(bad[:10])


def test_run_lines_give_the_passes_and_their_quoted_options():
    text = ('// RUN: ms-opt %s --ms-cpu-matmul-schedule="vector-bits=512 threads=2" '
            '--split-input-file | FileCheck %s\n')
    assert fuzz_ir.run_line_passes(text) == ("--ms-cpu-matmul-schedule=vector-bits=512 threads=2",)
    assert fuzz_ir.run_line_passes("// RUN: ms-opt %s --verify-diagnostics\n") == ()
    assert fuzz_ir.run_line_passes("// RUN: mscc %s --emit=llvm\n") == ()


def test_mutants_are_deterministic():
    assert fuzz_ir.mutants(20, SEED) == fuzz_ir.mutants(20, SEED)
    assert fuzz_ir.mutants(20, SEED) != fuzz_ir.mutants(20, SEED + 1)


def test_huge_placeholder_is_a_value_error():
    """Lowering a 2**40 x 2**40 placeholder killed the interpreter (an MLIR assertion): now
    the shape is refused before it becomes an MLIR type. In a subprocess: a regression must
    fail this test, not end the test run."""
    code = ("import mscc as ms\n"
            "from mscc import ops\n"
            "try:\n"
            "    ms.jit(ops.exp).lower(ms.Tensor(shape=(2**40, 2**40), dtype=ms.float32))"
            ".as_text('llvm-ir')\n"
            "except ValueError as e:\n"
            "    print('ValueError:', e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "ValueError: shape (1099511627776, 1099511627776) of 4-byte elements" in p.stdout
