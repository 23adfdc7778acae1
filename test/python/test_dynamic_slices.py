"""Slices along a dynamic dimension and grouped convolutions with a dynamic batch (issue 16).

Each case is ONE jit function with an input_signature serving every size; `compiles == 1`
checks that the dynamic path served it (an op without a dynamic form falls back to a compile
per shape). A slice's size along a dynamic axis is a clamp (x[2:5] of ? rows has
min(5, ?) - min(2, ?)), which shape rules compute with (dialects/symdim.py) and the lowered
code evaluates; where such a size is an entry's result, or part of a check a call must pass,
the runtime reads it from the entry's description (runtime/dynamic.py)."""
from dataclasses import dataclass

import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops
from mscc.dialects.ops.shape import OPEN, strided_bounds
from mscc.dialects.symdim import (Dim, DynamicDimError, arg_atom, dim_max, dim_min, floor_div,
                                  parse_size, sign)
from mstest import finite_differences

F32, F64 = ms.float32, ms.float64
N = arg_atom(0, 0)  # the dynamic size of the cases' inputs


def test_the_runtime_reads_clamps_and_constant_terms_back():
    from mscc.runtime.dynamic import dim_from_json, dim_to_json
    for size in (dim_max(0, N - 1), N + 2, floor_div(N, 2), dim_min(5, N) - dim_min(2, N)):
        again = dim_from_json(dim_to_json(size), 1)
        for n in (0, 1, 7):
            assert again.evaluate({"a0.0": n}) == size.evaluate({"a0.0": n})
    with pytest.raises(ValueError, match="constant written as terms"):
        dim_from_json([[3, []]], 1)


def test_the_runtime_checks_each_pair_of_sizes_once():
    """A call checks each pair of sizes that can disagree once, named by its first op (the
    shape rules record one check per op combining two sizes), and evaluates sizes that are
    an input's dimension, a polynomial or a clamp alike."""
    from mscc.dialects import dtypes as dt
    from mscc.dialects.dtypes import TensorSpec
    from mscc.runtime.calls import CallError
    from mscc.runtime.dynamic import DynamicShapes
    specs = [TensorSpec((None, 4), dt.float32)] * 2
    a, b = [[1, ["a0.0"]]], [[1, ["a1.0"]]]
    checks = [{"a": a, "b": b, "what": "rows of an add", "where": "f.py:3"},
              {"a": b, "b": a, "what": "rows of a mul", "where": "f.py:4"},
              {"a": a, "b": a, "what": "never unequal", "where": "f.py:5"},
              {"a": a, "b": [[1, ["max(-1+a1.0,0)"]], [1, []]], "what": "a slice",
               "where": "f.py:6"}]
    shapes = DynamicShapes.from_description("f", specs, specs[:1], {
        "results": [[[[3, ["a0.0"]], [1, []]], 4]], "checks": checks})
    assert [c[2] for c in shapes.checks] == ["rows of an add", "a slice"]
    x = np.zeros((5, 4))
    assert shapes.output_shapes(shapes.sizes([x, x])) == [(16, 4)]
    with pytest.raises(CallError, match=r"f.py:3: rows of an add must be equal, got 2 and 3"):
        shapes.sizes([np.zeros((2, 4)), np.zeros((3, 4))])
    with pytest.raises(CallError, match=r"f.py:6: a slice must be equal, got 0 and 1"):
        shapes.sizes([np.zeros((0, 4)), np.zeros((0, 4))])


def T(*shape, dtype=F32):
    return ms.Tensor(shape=list(shape), dtype=dtype)


def rows(n, cols=6, dtype=np.float32, seed=0):
    return np.random.default_rng(seed + n).standard_normal((n, cols)).astype(dtype)


def one_compile(jitted, clamps):
    """compiles == 1 (`clamps`: whether the case's sizes or checks are clamps, which the
    runtime reads back from the entry's description)."""
    assert jitted.cache_info()["compiles"] == 1


@dataclass
class Case:
    name: str
    fn: object
    ref: object                    # numpy reference on the float64 array
    sizes: tuple = (0, 1, 2, 7, 64)
    clamps: bool = True            # its result's size (or a check) is a clamp
    cols: int = 6


FORWARD = [
    Case("tail", lambda x: x[1:], lambda x: x[1:]),
    Case("head", lambda x: x[:-1], lambda x: x[:-1]),
    Case("every_other", lambda x: x[::2], lambda x: x[::2]),
    Case("range", lambda x: x[2:5], lambda x: x[2:5]),
    Case("columns", lambda x: x[:, 1:3], lambda x: x[:, 1:3], clamps=False),
    Case("reversed", lambda x: x[::-1], lambda x: x[::-1], clamps=False),
    Case("reversed_step", lambda x: x[-3::-2], lambda x: x[-3::-2]),
    Case("both_axes", lambda x: x[1::3, ::-1], lambda x: x[1::3, ::-1]),
    Case("new_axis_ellipsis", lambda x: x[None, ..., 2:], lambda x: x[None, ..., 2:],
         clamps=False),
    Case("first_row", lambda x: x[0], lambda x: x[0], sizes=(1, 2, 7, 64)),
    Case("last_row_new_axis", lambda x: x[-1, None, 2:], lambda x: x[-1, None, 2:],
         sizes=(1, 2, 7, 64)),
    Case("strided_slice", lambda x: ops.strided_slice(x, (1, 0), (x.shape[0], 6), (2, 1)),
         lambda x: x[1::2]),
    Case("StridedSlice_masks", lambda x: ops.StridedSlice(begin_mask=1, end_mask=1)(
        x, (5, 1), (0, 4), (1, 2)), lambda x: x[:, 1:4:2], clamps=False),
    Case("StridedSlice_negative", lambda x: ops.StridedSlice(begin_mask=1, end_mask=1)(
        x, (0, 0), (0, 6), (-1, 1)), lambda x: x[::-1], clamps=False),
    Case("StridedSlice_shrink", lambda x: ops.StridedSlice(shrink_axis_mask=1)(
        x, (-1, 0), (0, 6), (1, 1)), lambda x: x[-1], sizes=(1, 2, 7, 64)),
    Case("slice_to_end", lambda x: ops.slice(x, (1, 0), (-1, 6)), lambda x: x[1:],
         sizes=(1, 2, 7, 64)),
    Case("Slice", lambda x: ops.Slice()(x, (1, 2), (2, 3)), lambda x: x[1:3, 2:5],
         sizes=(3, 7, 64)),
    Case("narrow", lambda x: ops.narrow(x, 0, 2, 1), lambda x: x[2:3], sizes=(3, 7, 64)),
    Case("chunk", lambda x: ops.chunk(x, 2)[1] * 2, lambda x: np.split(x, 2)[1] * 2,
         sizes=(2, 8, 64)),
    Case("Split", lambda x: ops.Split(0, 4)(x)[3], lambda x: np.split(x, 4)[3],
         sizes=(0, 4, 8, 64)),
    Case("Split_static_axis", lambda x: ops.Split(1, 3)(x)[2], lambda x: np.split(x, 3, 1)[2],
         clamps=False),
]


@pytest.mark.parametrize("case", FORWARD, ids=lambda c: c.name)
def test_one_compile_slices_every_size(case):
    jitted = ms.jit(case.fn, input_signature=(T(None, case.cols),))
    for n in case.sizes:
        x = rows(n, case.cols)
        got = jitted(ms.Tensor(x)).asnumpy()
        want = case.ref(x.astype(np.float64))
        assert got.shape == want.shape, (n, got.shape, want.shape)
        np.testing.assert_array_equal(got, want.astype(np.float32), err_msg=f"n={n}")
    one_compile(jitted, case.clamps)


# ---------------------------------------------------------------- gradients
GRADIENTS = [
    Case("shifted_product", lambda x: (x[1:] * x[:-1]).sum(), None, clamps=False),
    Case("every_other", lambda x: (x[::2] ** 2).sum(), None, clamps=False),
    Case("range", lambda x: (x[2:5] * x[2:5]).sum(), None, clamps=False),
    Case("reversed", lambda x: (x[::-1] * ops.exp(x)).sum(), None, clamps=False),
    Case("reversed_step", lambda x: (x[-2::-2] ** 3).sum(), None, clamps=False),
    Case("scaled_slice", lambda x: x[1::2] * 3.0, None, clamps=False),  # (ones_like of it)
    Case("first_and_last", lambda x: (x[-1] * x[0]).sum(), None, sizes=(1, 2, 7)),
    Case("slice_to_end", lambda x: (ops.slice(x, (1, 0), (-1, 4)) ** 2).sum(), None,
         sizes=(1, 2, 7)),
    Case("chunk", lambda x: (ops.chunk(x, 2)[0] * ops.chunk(x, 2)[1]).sum(), None,
         sizes=(2, 4, 8)),
    Case("StridedSlice_masks", lambda x: (ops.StridedSlice(begin_mask=1, end_mask=1)(
        x, (0, 0), (0, 4), (-2, 1)) ** 2).sum(), None, clamps=False),
]


def numpy_function(case):
    """The case's scalar function on float64 arrays (its result summed): mscc's ops on
    eager Tensors, for finite differences."""
    return lambda v: float(ops.reduce_sum(case.fn(ms.Tensor(v))).asnumpy())


@pytest.mark.parametrize("case", GRADIENTS, ids=lambda c: c.name)
def test_gradient_with_a_dynamic_dimension_equals_static_and_differences(case):
    sizes = case.sizes if case.sizes != Case.sizes else (1, 2, 7)
    dynamic = ms.jit(ms.grad(case.fn), input_signature=(T(None, 4, dtype=F64),))
    static = ms.jit(ms.grad(case.fn))
    for n in sizes:
        x = rows(n, 4, np.float64, seed=3)
        got = dynamic(ms.Tensor(x)).asnumpy()
        np.testing.assert_allclose(got, static(ms.Tensor(x)).asnumpy(), rtol=1e-12,
                                   atol=1e-12, err_msg=f"n={n}")
        if n <= 2 or n == sizes[0]:  # (small cases: every element by differences)
            np.testing.assert_allclose(got, finite_differences(numpy_function(case), x),
                                       rtol=1e-6, atol=1e-7, err_msg=f"n={n}")
    one_compile(dynamic, case.clamps)


# ---------------------------------------------------------------- sizes a call must have
MISTAKES = [  # (function, a size it serves, a size it refuses, the op named)
    pytest.param(lambda x: ops.chunk(x, 2)[0], 4, 7, "ms.reshape", id="chunk_odd"),
    pytest.param(lambda x: ops.Split(0, 3)(x)[1], 6, 4, "ms.reshape", id="Split"),
    pytest.param(lambda x: ops.slice(x, (1, 0), (2, 6)), 3, 2, "ms.slice", id="slice_end"),
    pytest.param(lambda x: ops.narrow(x, 0, 1, 3), 4, 1, "ms.slice", id="narrow"),
    pytest.param(lambda x: x[0], 1, 0, "ms.squeeze", id="index_of_empty"),
    pytest.param(lambda x: x[-3], 3, 2, "ms.squeeze", id="negative_index"),
]


@pytest.mark.parametrize("fn,good,bad,op", MISTAKES)
def test_a_size_the_slice_cannot_take_raises_naming_the_op(fn, good, bad, op):
    jitted = ms.jit(fn, input_signature=(T(None, 6),))
    jitted(ms.Tensor(rows(good)))
    with pytest.raises(ValueError, match=f"'{op}'"):
        jitted(ms.Tensor(rows(bad)))
    assert jitted.cache_info()["compiles"] == 1


def test_a_slice_and_another_dynamic_size_are_checked_against_each_other():
    jitted = ms.jit(lambda x, y: x[1:] + y, input_signature=(T(None, 6), T(None, 6)))
    np.testing.assert_array_equal(jitted(ms.Tensor(rows(5)), ms.Tensor(rows(4))).asnumpy(),
                                  rows(5)[1:] + rows(4))
    with pytest.raises(ValueError, match="dimension 0 of broadcast operands"):
        jitted(ms.Tensor(rows(5)), ms.Tensor(rows(5)))


@pytest.mark.parametrize("index", [slice(None, None, -1), slice(-3, None, -2),
                                   slice(5, 1, -2), slice(None, -9, -1)])
def test_negative_steps_of_static_shapes_are_pythons(index):
    jitted = ms.jit(lambda x: x[index])
    for n in (1, 4, 7):
        np.testing.assert_array_equal(jitted(ms.Tensor(rows(n))).asnumpy(), rows(n)[index])


def test_split_into_pieces_of_a_size_along_a_dynamic_axis_compiles_per_shape():
    """How many pieces ops.split(x, 3) makes depends on the size: no dynamic form."""
    jitted = ms.jit(lambda x: ops.split(x, 3)[0], input_signature=(T(None, 6),))
    for n in (3, 7):
        np.testing.assert_array_equal(jitted(ms.Tensor(rows(n))).asnumpy(), rows(n)[:3])
    assert jitted.cache_info()["compiles"] == 2


# ---------------------------------------------------------------- the size expressions
BOUNDS = [None, -7, -3, -1, 0, 1, 2, 5, 9]


@pytest.mark.parametrize("step", [-3, -2, -1, 1, 2, 3])
def test_symbolic_slice_sizes_evaluate_to_pythons_for_every_size(step):
    """strided_bounds on a dynamic size, evaluated per size, is Python's slice for every
    begin/end (None: an open end) and every size 0..11."""
    for begin in BOUNDS:
        for end in BOUNDS:
            b = (0 if step > 0 else -1) if begin is None else begin
            e = (OPEN if step > 0 else -OPEN) if end is None else end
            starts, sizes, _ = strided_bounds((N,), [b], [e], [step])
            for n in range(12):
                want = range(n)[begin:end:step]
                got = [s.evaluate({"a0.0": n}) if isinstance(s, Dim) else s
                       for s in (starts[0], sizes[0])]
                assert got[1] == len(want), (begin, end, step, n)
                if len(want):
                    assert got[0] == want[0], (begin, end, step, n)


def test_clamps_compare_parse_and_simplify():
    assert dim_max(0, N - 1) <= N and dim_min(N, 5) <= 5 and dim_min(N, 5) >= 0
    assert dim_min(dim_max(N - 1, 0), N) == dim_max(N - 1, 0)
    assert N - dim_min(1, N) == N - dim_min(1, N)
    assert dim_max(0, N - dim_min(1, N)) == dim_max(N - 1, 0)  # (x[1:] is x[:-1]'s size)
    assert floor_div(2 * N + 3, 2) == N + 1
    assert floor_div(4 * N + 2, 8) == floor_div(2 * N + 1, 4)
    assert sign(floor_div(N + 1, 2)) is True and sign(-1 - N) is False
    with pytest.raises(DynamicDimError):
        dim_max(0, N - 1) < 1  # noqa: B015  (true for some sizes only)
    size = dim_max(0, dim_min(5, N) - 2) * arg_atom(1, 2) + 3
    assert parse_size(repr(size)) == size and size.atoms == {"a0.0", "a1.2"}
    assert str(dim_max(N - 1, 0)) == "max(-1+?,0)"
    for text in ("max(", "max(1)", "f(1,2)", "1++a0.0", "a0.0)"):
        with pytest.raises(ValueError):
            parse_size(text)


# ---------------------------------------------------------------- grouped convolutions
def grouped_layers():
    ms.set_seed(4)
    return {"group2": nn.Conv2d(4, 6, 3, group=2, pad_mode="pad", padding=1, has_bias=True),
            "depthwise": nn.Conv2d(4, 4, 3, group=4),
            "depthwise_multiplier": nn.Conv2d(4, 8, 3, group=4, stride=2, has_bias=True),
            "two_grouped": nn.SequentialCell([nn.Conv2d(4, 4, 3, group=2), nn.ReLU(),
                                              nn.Conv2d(4, 4, 3, group=4)]),
            "transposed_group2": nn.Conv2dTranspose(4, 4, 3, group=2, stride=2)}


@pytest.mark.parametrize("name", list(grouped_layers()))
def test_grouped_convolution_with_a_dynamic_batch_equals_static(name):
    """Forward, and the gradients of x and of the weights (x's through the first layer of
    two), against the layer compiled per batch size; one compile each."""
    layer = grouped_layers()[name]
    grad_fn = ms.value_and_grad(lambda x: (layer(x) ** 2).sum(), 0, layer.trainable_params())
    forward = ms.jit(lambda x: layer(x), input_signature=(T(None, 4, 7, 7),))
    backward = ms.jit(grad_fn, input_signature=(T(None, 4, 7, 7),))
    for n in (1, 3, 5):
        x = ms.Tensor(np.random.default_rng(n).standard_normal((n, 4, 7, 7)).astype(np.float32))
        np.testing.assert_allclose(forward(x).asnumpy(), ms.jit(lambda x: layer(x))(x).asnumpy(),
                                   rtol=1e-5, atol=1e-5)
        (loss, (dx, dw)), (loss_s, (dx_s, dw_s)) = backward(x), ms.jit(grad_fn)(x)
        np.testing.assert_allclose(loss.asnumpy(), loss_s.asnumpy(), rtol=1e-5)
        np.testing.assert_allclose(dx.asnumpy(), dx_s.asnumpy(), rtol=1e-4, atol=1e-4)
        for a, b in zip(dw, dw_s):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-4, atol=1e-3)
    assert forward.cache_info()["compiles"] == 1 and backward.cache_info()["compiles"] == 1
