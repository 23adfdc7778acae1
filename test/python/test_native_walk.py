"""The passes' op searches walked in C (dialects/_walk.c) and in Python: the same ops, in the
same order, as the same kind of objects, for a table of searches over a module with nested
regions, linalg bodies and several functions."""
import pytest
from mlir import ir

from mscc.dialects import capi
from mscc.dialects import ir_helpers as H
from mscc.dialects.builders import mlir_context

needs_c = pytest.mark.skipif(capi.native_search() is None,
                             reason="dialects/_walk.c is not built")

MODULE = """
#map = affine_map<(d0) -> (d0)>
func.func @two_loops(%x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    scf.for %j = %c0 to %c8 step %c1 {
      %w = arith.addf %v, %v : f32
      memref.store %w, %y[%j] : memref<8xf32>
    }
  }
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}
func.func @callee(%x: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<8xf32>
  %w = arith.mulf %v, %v : f32
  return %w : f32
}
"""

SEARCHES = [
    # (names, post_order)
    (("scf.for",), False),
    (("scf.for",), True),
    (("arith.addf",), False),  # in a loop and in a linalg body: the body is searched
    (("arith.addf", "arith.mulf"), True),
    (("memref.load", "memref.store", "func.return"), False),
    (("linalg.yield",), False),
    (("linalg.generic", "func.func"), False),  # no body can hold these: bodies skipped
    (("func.func",), True),
    (("gpu.launch",), False),  # none
]


@pytest.fixture
def module():
    with mlir_context():
        yield ir.Module.parse(MODULE)


def _search(monkeypatch, walk, fn, *args, **kwargs):
    monkeypatch.setenv(H.PYTHON_WALK_ENV, "1" if walk == "python" else "0")
    return fn(*args, **kwargs)


@needs_c
@pytest.mark.parametrize("names,post_order", SEARCHES)
def test_the_c_walk_finds_what_the_python_walk_finds(module, monkeypatch, names, post_order):
    for root in (module, module.body.operations[0], module.body.operations[1]):
        python = _search(monkeypatch, "python", H.ops_of_kind, root, *names,
                         post_order=post_order)
        native = _search(monkeypatch, "c", H.ops_of_kind, root, *names, post_order=post_order)
        assert native == python
        assert [type(op) for op in native] == [type(op) for op in python]
        assert _search(monkeypatch, "c", H.has_op_of_kind, root, *names) == bool(python)
        assert _search(monkeypatch, "python", H.has_op_of_kind, root, *names) == bool(python)


@needs_c
def test_the_c_walk_keeps_walk_order(module, monkeypatch):
    pre = _search(monkeypatch, "c", H.ops_of_kind, module, "scf.for", "arith.addf")
    post = _search(monkeypatch, "c", H.ops_of_kind, module, "scf.for", "arith.addf",
                   post_order=True)
    outer, inner = (op for op in pre if op.name == "scf.for")
    assert [op.name for op in pre] == ["scf.for", "scf.for", "arith.addf", "arith.addf"]
    assert pre.index(outer) < pre.index(inner)
    assert post.index(inner) < post.index(outer)  # an op after the ops it contains
    assert [op.name for op in post] == ["arith.addf", "scf.for", "scf.for", "arith.addf"]


@needs_c
def test_found_ops_are_live_and_editable(module, monkeypatch):
    (mul,) = _search(monkeypatch, "c", H.ops_of_kind, module, "arith.mulf")
    assert mul.parent.name == "func.func"
    mul.attributes["ms.seen"] = ir.UnitAttr.get()
    (again,) = _search(monkeypatch, "python", H.ops_of_kind, module, "arith.mulf")
    assert "ms.seen" in again.attributes


@needs_c
def test_a_bad_search_is_a_python_error(module):
    find = capi.native_search()
    with pytest.raises(ValueError, match="at most"):
        find(module.operation._CAPIPtr, tuple(f"x.op{i}" for i in range(40)), False, False,
             False)
    with pytest.raises(TypeError, match="str"):
        find(module.operation._CAPIPtr, (b"scf.for",), False, False, False)


def test_built_wherever_the_runtime_extension_is():
    """Both extensions need only a C compiler and Python's headers: one without the other
    is a broken build, not a machine without a compiler (the skips above would hide it)."""
    from mscc.runtime import fastcall
    if fastcall.call is None:
        pytest.skip("runtime/_fastcall.c is not built either")
    assert capi.native_search() is not None
