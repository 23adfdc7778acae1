"""MindSpore's private frontend-graph API (mscc.common.api._frontend_compile, _graph_split):
the marks a split_op Primitive leaves in the IR, the fragments and their conventions (id,
is_graph, py_key, args_list), that running them in order gives the function's result (numpy
references), that the split op runs the Primitive object itself, and the errors."""
import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.common.api import _frontend_compile, _graph_split, run_fragments
from mscc.ops import operations as P

import mstest  # noqa: E402

HERE = __file__


def line_of(marker):
    return mstest.line_of(HERE, marker)


def split_prim(prim, func_id):
    return prim.add_prim_attr("split_op", True).add_prim_attr("func_id", func_id)


def docstring_func(x, y):
    a = x + y
    add = ops.Add()
    add.add_prim_attr("split_op", True)
    add.add_prim_attr("func_id", "add_func")
    return add(a, y)


def ms_ops(text):
    """(name, attributes) of the ops in the entry function of printed IR, parsed back with the
    MLIR bindings."""
    from mlir import ir
    from mscc.dialects.builders import mlir_context
    module = ir.Module.parse(text, context=mlir_context())
    fn = list(module.body.operations)[0]
    return [(op.name, {n: op.attributes[n] for n in op.attributes})
            for op in fn.regions[0].blocks[0].operations]


# ------------------------------------------------------------------ the docstring example

def test_docstring_example_fragments_and_result():
    graph = _frontend_compile(docstring_func)(ms.Tensor(1.0), ms.Tensor(2.0))
    fragments = _graph_split(graph)
    assert len(fragments) == 2
    first, second = fragments
    assert (first.id(), first.is_graph(), first.py_key()) == (0, True, "")
    assert (second.id(), second.is_graph(), second.py_key()) == (1, False, "add_func")
    # running values: x=0, y=1, then a=2 (fragment 0's output), then the split add's result
    assert first.args_list() == [0, 1] and first.outputs_list() == [2]
    assert second.args_list() == [2, 1] and second.outputs_list() == [3]
    out = run_fragments(fragments, ms.Tensor(1.0), ms.Tensor(2.0))
    assert out.asnumpy() == np.float32(5.0)
    # by hand: each fragment called with the values its args_list names
    x, y = ms.Tensor(np.float32(3.0)), ms.Tensor(np.float32(-1.0))
    a, = first(x, y)
    result, = second(a, y)
    assert result.asnumpy() == np.float32(1.0)


def test_print_shows_front_end_ir_with_the_mark(capsys):
    graph = _frontend_compile(docstring_func)(ms.Tensor(1.0), ms.Tensor(2.0))
    text = graph.print()
    assert capsys.readouterr().out.strip() == text.strip()
    found = ms_ops(text)
    assert [name for name, _ in found] == ["ms.add", "ms.add", "func.return"]
    plain, marked = found[0][1], found[1][1]
    assert "ms.split_op" not in plain
    assert str(marked["ms.split_op"]) == "true"
    assert str(marked["ms.func_id"]) == '"add_func"'
    # the front-end passes ran, ms-fuse did not (no ms.fused region hides the split op)
    assert "ms-implicit-cast" in graph.passes and "ms-fuse" not in graph.passes
    debug = graph.print(debug_info=True)
    assert f"{HERE}\":{line_of('return add(a, y)')}" in debug


# ------------------------------------------------------------------ a longer example

K = ms.Tensor(np.linspace(-1, 1, 12).reshape(3, 4).astype(np.float32))
BIAS = ms.Parameter(ms.Tensor(np.array([0.5, -0.5, 1.0, 2.0, 0.0], np.float32)), name="bias")
MUL = split_prim(P.Mul(), "mul_cb")
MATMUL = split_prim(P.MatMul(transpose_b=True), "matmul_cb")


def long_func(x, w, b):
    h = ops.relu(x + K)                 # K: a constant read before and after the splits
    s = ops.exp(h * 0.1)
    m = MUL(h, s)                        # split 1: h and s both live across it
    t = MATMUL(m + b, w)                 # split 2; b is int32 (implicit cast)
    u = ops.reduce_sum(t * h[:, :1] + BIAS, 1) + s.sum() + K.sum()
    return u, m


def long_ref(x, w, b):
    k = K.asnumpy()
    h = np.maximum(x + k, 0)
    s = np.exp(h * np.float32(0.1))
    m = h * s
    t = (m + np.float32(b)) @ w.T
    u = (t * h[:, :1] + BIAS.asnumpy()).sum(1) + s.sum() + k.sum()
    return u, m


def long_args():
    rng = np.random.default_rng(3)
    return (rng.uniform(-1, 1, (3, 4)).astype(np.float32),
            rng.uniform(-1, 1, (5, 4)).astype(np.float32), np.int32(2))


def test_longer_example_reproduces_the_function():
    x, w, b = long_args()
    args = [ms.Tensor(v) for v in (x, w, b)]
    graph = _frontend_compile(long_func)(*args)
    fragments = _graph_split(graph)
    assert [f.is_graph() for f in fragments] == [True, False, True, False, True]
    assert [f.py_key() for f in fragments] == ["", "mul_cb", "", "matmul_cb", ""]
    assert [f.id() for f in fragments] == [0, 1, 2, 3, 4]
    # inputs: x=0, w=1, b=2 and the Parameter bias=3 (read, not passed)
    assert graph.n_inputs == 4 and graph.parameters == [BIAS]
    head, mul, mid, matmul, tail = fragments
    h, s = head.outputs_list()
    assert head.args_list() == [0]                   # (K is copied in, not passed)
    assert mul.args_list() == [h, s]                 # the Primitive's own arguments
    m, = mul.outputs_list()
    assert sorted(mid.args_list()) == [2, m]         # m + b (b cast first)
    assert matmul.args_list() == [mid.outputs_list()[0], 1]
    t, = matmul.outputs_list()
    # h and s cross both splits; the Parameter comes in as an input of the last fragment
    assert sorted(tail.args_list()) == sorted([h, t, 3, s])
    u, m_out = run_fragments(fragments, *args)
    ref_u, ref_m = long_ref(x, w, b)
    np.testing.assert_allclose(u.asnumpy(), ref_u, rtol=1e-5)
    np.testing.assert_allclose(m_out.asnumpy(), ref_m, rtol=1e-6)
    assert fragments.outputs == [tail.outputs_list()[0], m]


def test_graph_fragment_is_its_own_function():
    graph = _frontend_compile(long_func)(*[ms.Tensor(v) for v in long_args()])
    head = _graph_split(graph)[0]
    found = ms_ops(head.print())
    names = [name for name, _ in found]
    assert names[-1] == "func.return" and "ms.exp" in names and "ms.relu" in names
    assert not any("ms.split_op" in attrs for _, attrs in found)
    assert "ms.mul" in names  # h * 0.1, not the split Mul (that one is fragment 1)


# ------------------------------------------------------------------ the Python callback

class SwitchableAdd(P.Add):
    """An Add whose eager behaviour the test changes after the split."""

    def __init__(self):
        super().__init__()
        self.replacement = None
        self.seen = []

    def __call__(self, x, y):
        self.seen.append((x._trace is None, y.dtype))
        if self.replacement is not None:
            return self.replacement(x, y)
        return super().__call__(x, y)


def test_split_op_runs_the_primitive_object_itself():
    add = split_prim(SwitchableAdd(), "switch")

    def func(x, y):
        return add(x * 2, y) - 1

    x, y = ms.Tensor(np.float32([1.0, 2.0])), ms.Tensor(np.int32([10, 20]))
    fragments = _graph_split(_frontend_compile(func)(x, y))
    assert [f.py_key() for f in fragments] == ["", "switch", ""]
    assert add.seen == [(False, ms.int32)]  # traced once
    np.testing.assert_allclose(run_fragments(fragments, x, y).asnumpy(), [11.0, 23.0])
    # eager, on its own arguments: y is still int32 (the implicit cast is looked through)
    assert add.seen[-1] == (True, ms.int32)
    assert fragments[1].args_list() == [2, 1]
    add.replacement = lambda a, b: ops.sub(a, b)
    np.testing.assert_allclose(run_fragments(fragments, x, y).asnumpy(), [-9.0, -17.0])


def test_marked_primitive_elsewhere_is_unchanged():
    add = split_prim(P.Add(), "add_func")
    _frontend_compile(docstring_func)(ms.Tensor(1.0), ms.Tensor(2.0))  # (hook installed)

    def func(x, y):
        return add(x, y) * 2

    x, y = ms.Tensor(1.0), ms.Tensor(2.0)
    assert add(x, y).asnumpy() == np.float32(3.0)
    assert ms.jit(func)(x, y).asnumpy() == np.float32(6.0)
    names = [attrs for _, attrs in ms_ops(ms.jit(func).lower(x, y).as_text("ms"))]
    assert not any("ms.split_op" in attrs for attrs in names)


def test_unmarked_primitive_is_one_graph():
    def func(x, y):
        return P.Add()(x, y) * 2

    fragments = _graph_split(_frontend_compile(func)(ms.Tensor(1.0), ms.Tensor(2.0)))
    assert len(fragments) == 1 and fragments[0].is_graph()
    assert run_fragments(fragments, ms.Tensor(4.0), ms.Tensor(1.0)).asnumpy() == 10.0


# ------------------------------------------------------------------ errors

def test_graph_split_of_something_else_is_a_type_error():
    with pytest.raises(TypeError, match="_frontend_compile"):
        _graph_split(ms.jit(docstring_func))
    with pytest.raises(TypeError, match="_graph_split"):
        run_fragments([], ms.Tensor(1.0))


def test_split_op_in_a_conditional_is_a_value_error():
    add = split_prim(P.Add(), "in_branch")

    def func(x, y):
        if x.sum() > 0:
            z = add(x, y)  # marker: split in branch
        else:
            z = x - y
        return z

    ones = ms.Tensor(np.ones(3, np.float32))
    graph = _frontend_compile(func)(ones, ones)
    with pytest.raises(ValueError, match="'ms.add' is inside the region of 'scf.if'") as e:
        _graph_split(graph)
    assert f"{HERE}:{line_of('marker: split in branch')}" in str(e.value)
    assert "in_branch" in str(e.value)


def test_composite_primitive_cannot_be_marked():
    bias_add = split_prim(P.BiasAdd(), "bias")

    def func(x, b):
        return bias_add(x, b)  # marker: composite

    with pytest.raises(ValueError, match="BiasAdd.*one ms op") as e:
        _frontend_compile(func)(ms.Tensor(np.ones((2, 3), np.float32)),
                                ms.Tensor(np.ones(3, np.float32)))
    assert f"{HERE}:{line_of('marker: composite')}" in str(e.value)


def test_graph_writing_a_parameter_is_refused():
    p = ms.Parameter(ms.Tensor(np.zeros(2, np.float32)), name="state")
    add = split_prim(P.Add(), "write")

    def func(x):
        ops.assign(p, add(x, x))
        return x

    with pytest.raises(ValueError, match="state"):
        _graph_split(_frontend_compile(func)(ms.Tensor(np.ones(2, np.float32))))
