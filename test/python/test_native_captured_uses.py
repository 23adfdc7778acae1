"""What each top-level loop nest reads from its function (passes/cpu_outline._captured_uses),
found in C (dialects/_structure.c) and walked in Python: the same values in the same order
(the function's arguments, then the top-level ops' results, as defined), each with the same
uses (user op, operand number); values a nest defines itself, and nests that read nothing,
included as Python has them."""
import pytest
from mlir import ir

from mscc.dialects import capi
from mscc.dialects.builders import mlir_context
from mscc.passes import cpu_outline

needs_c = pytest.mark.skipif(capi.native_captured_uses() is None,
                             reason="dialects/_structure.c is not built")

MODULE = """
func.func @nests(%x: memref<8xf32>, %y: memref<8xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<8xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  %twice = arith.addf %sum, %sum : f32
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %x[%j] : memref<8xf32>
      %w = arith.mulf %v, %twice : f32
      %u = arith.addf %w, %sum : f32
      memref.store %u, %y[%j] : memref<8xf32>
    }
  }
  %flag = arith.cmpf ogt, %sum, %zero : f32
  scf.if %flag {
    memref.store %sum, %y[%c0] : memref<8xf32>
  }
  scf.execute_region {
    scf.yield
  }
  return %twice : f32
}
"""


def _as_tuples(found):
    return {nest: [(value, sorted((user.name, number, str(user.location)) for user, number in uses),
                    {(user.operation if hasattr(user, "operation") else user, number)
                     for user, number in uses})
                   for value, uses in values]
            for nest, values in found.items()}


@needs_c
def test_the_c_walk_finds_what_the_python_walk_finds():
    with mlir_context():
        module = ir.Module.parse(MODULE)
        fn = module.body.operations[0]
        nests = cpu_outline._nests(fn)
        assert len(nests) == 4
        got = _as_tuples(cpu_outline._captured_uses(fn, nests))
        want = _as_tuples(cpu_outline._captured_uses_walked(fn, nests))
        assert list(got) == list(want) == nests
        for nest in nests:
            assert [v for v, _, _ in got[nest]] == [v for v, _, _ in want[nest]]
            for (_, names, uses), (_, want_names, want_uses) in zip(got[nest], want[nest]):
                assert names == want_names and uses == want_uses
        # the second nest reads %n, %c0, %c1, %c8 (its own bounds and the inner loop's),
        # %x, %y and the first nest's and the addf's results: arguments first, in order
        body = fn.regions[0].blocks[0]
        second = [v for v, _, _ in got[nests[1]]]
        assert second[:3] == [body.arguments[0], body.arguments[1], body.arguments[2]]
        assert second[-2:] == [nests[0].results[0], list(body.operations)[5].results[0]]
        assert got[nests[3]] == []  # the execute_region reads nothing
