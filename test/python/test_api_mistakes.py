"""Mistakes a MindSpore user makes, across the API: each raises TypeError, ValueError or
IndexError whose message names the op (or function) and ends with `(at <file>:<line>)` of the
mistake, once, eagerly (PYNATIVE_MODE) and inside ms.jit (and in GRAPH_MODE for Cells and
gradients), as DESIGN.md promises.

Each mistake is a lambda written on one line of this file: that line is where the message must
point (the lambda's `co_firstlineno`). The lambda takes the Tensors in `args`, so under jit they
are traced values rather than constants.
"""
from __future__ import annotations

import inspect
import os
import re
from typing import Callable, NamedTuple

import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops

USER_ERRORS = (TypeError, ValueError, IndexError)
SHAPE, TYPE, INDEX = ValueError, TypeError, IndexError
INDEX_OR_TYPE = (IndexError, TypeError)
RANGE = (ValueError, TypeError)  # a Python int outside int64: MindSpore's wording varies

x23 = ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
x32 = ms.Tensor(np.ones((3, 2), np.float32))
x13 = ms.Tensor(np.ones((1, 3), np.float32))
shape32 = ms.Tensor(np.array([3, 2], np.int32))
n3 = ms.Tensor(np.array(3, np.int32))
v3 = ms.Tensor(np.ones(3, np.float32))
s0 = ms.Tensor(np.float32(1.0))
i23 = ms.Tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
idx2 = ms.Tensor(np.array([0, 1], np.int32))
fidx2 = ms.Tensor(np.array([0.0, 1.0], np.float32))
img = ms.Tensor(np.ones((1, 2, 5, 5), np.float32))
ph = ms.Tensor(shape=(2, 3), dtype=ms.float32)
p23 = ms.Parameter(np.zeros((2, 3), np.float32), name="p23")

dense = nn.Dense(4, 2)
conv = nn.Conv2d(3, 4, 3)
bn = nn.BatchNorm1d(4)
xent = nn.SoftmaxCrossEntropyWithLogits()
sparse_xent = nn.SoftmaxCrossEntropyWithLogits(sparse=True)
mse = nn.MSELoss()


def _total(a):
    return ops.reduce_sum(a)


def _returns_str(a):
    return "not a tensor"


def _double(a):
    return a * 2


class Mistake(NamedTuple):
    name: str
    fn: Callable
    names: tuple            # the message names one of these (the op or function)
    expect: tuple | type = USER_ERRORS
    args: tuple = (x23,)
    modes: tuple = ("eager", "jit")
    xfail: str = ""         # why this case cannot pass yet (a part owned elsewhere)


EAGER = ("eager",)
CELL = ("eager", "jit", "graph")

MISTAKES = [
    # ---------------------------------------------------------------- shapes
    Mistake("reshape-size", lambda x: ops.reshape(x, (4, 2)), ("reshape",), SHAPE),
    Mistake("reshape-two-minus-one", lambda x: ops.reshape(x, (-1, -1)), ("reshape",), SHAPE),
    Mistake("reshape-negative", lambda x: ops.reshape(x, (-2, -3)), ("reshape",), SHAPE),
    Mistake("reshape-float-entry", lambda x: ops.reshape(x, (3.0, 2)), ("reshape",), TYPE),
    Mistake("reshape-string", lambda x: ops.reshape(x, "23"), ("reshape",), TYPE),
    Mistake("reshape-none", lambda x: ops.reshape(x, None), ("reshape",), TYPE),
    Mistake("reshape-huge", lambda x: ops.reshape(x, (2**70,)), ("reshape",), RANGE),
    Mistake("method-reshape", lambda x: x.reshape(4, 4), ("reshape",), SHAPE),
    Mistake("matmul-contracting", lambda x: ops.matmul(x, x), ("matmul",), SHAPE),
    Mistake("matmul-1d", lambda x, v: ops.matmul(v, x), ("matmul",), SHAPE, (x23, v3)),
    Mistake("matmul-operator", lambda x: x @ x, ("matmul",), SHAPE),
    Mistake("matmul-operator-1d", lambda x, v: v @ x, ("matmul", "@"), SHAPE, (x23, v3)),
    Mistake("batch-matmul-rank", lambda x: ops.batch_matmul(x, x), ("batch_matmul",), SHAPE),
    Mistake("concat-shapes", lambda x, y: ops.concat((x, y), 0), ("concat",), SHAPE, (x23, x32)),
    Mistake("concat-axis", lambda x: ops.concat((x, x), axis=2), ("concat",), SHAPE),
    Mistake("concat-float-axis", lambda x: ops.concat((x, x), axis=0.5), ("concat",), TYPE),
    Mistake("concat-empty", lambda x: ops.concat([], 0), ("concat",), SHAPE),
    Mistake("concat-none", lambda x: ops.concat(None), ("concat",), TYPE),
    Mistake("stack-shapes", lambda x, y: ops.stack([x, y]), ("stack", "concat"), SHAPE, (x23, x32)),
    Mistake("stack-axis", lambda x: ops.stack([x, x], axis=5), ("stack", "expand_dims"), SHAPE),
    Mistake("stack-none-axis", lambda x: ops.stack([x, x], axis=None), ("stack",), TYPE),
    Mistake("broadcast-to", lambda x: ops.broadcast_to(x, (4, 3)), ("broadcast_to",), SHAPE),
    Mistake("broadcast-lower-rank", lambda x: ops.broadcast_to(x, (3,)), ("broadcast_to",), SHAPE),
    Mistake("broadcast-negative", lambda v: ops.broadcast_to(v, (-2, 3)),
            ("broadcast_to",), SHAPE, (v3,)),
    Mistake("binary-broadcast", lambda x, y: x + y, ("add",), SHAPE, (x23, x32)),
    Mistake("transpose-repeated", lambda x: ops.transpose(x, (0, 0)), ("transpose",), SHAPE),
    Mistake("transpose-length", lambda x: ops.transpose(x, (1, 0, 2)), ("transpose",), SHAPE),
    Mistake("transpose-float", lambda x: ops.transpose(x, (1.0, 0)), ("transpose",), TYPE),
    Mistake("method-transpose", lambda x: x.transpose(2, 0), ("transpose",), SHAPE),
    Mistake("tile-negative", lambda x: ops.tile(x, (-1, 2)), ("tile",), SHAPE),
    Mistake("slice-range", lambda x: ops.slice(x, (0, 0), (3, 3)), ("slice",), SHAPE),
    Mistake("strided-slice-step", lambda x: ops.strided_slice(x, (0, 0), (2, 3), (0, 1)),
            ("strided_slice",), SHAPE),
    Mistake("zeros-negative", lambda: ops.zeros((-2, 3)), ("zeros", "broadcast_to"), SHAPE, ()),
    Mistake("full-float-size", lambda: ops.full((2.5, 2), 1.0), ("full",), TYPE, ()),
    Mistake("ones-none", lambda: ops.ones(None), ("ones",), TYPE, ()),
    # ---------------------------------------------------------------- axes
    Mistake("sum-axis", lambda x: ops.reduce_sum(x, 2), ("reduce_sum",), SHAPE),
    Mistake("mean-duplicate-axes", lambda x: ops.reduce_mean(x, (0, 0)), ("reduce_mean",), SHAPE),
    Mistake("max-float-axis", lambda x: ops.reduce_max(x, 1.0), ("reduce_max",), TYPE),
    Mistake("method-sum-axis", lambda x: x.sum(axis=5), ("reduce_sum",), SHAPE),
    Mistake("functional-sum-axis", lambda x: ops.sum(x, dim=-3), ("sum",), SHAPE),
    Mistake("softmax-axis", lambda x: ops.softmax(x, axis=2), ("softmax",), SHAPE),
    Mistake("log-softmax-axis", lambda x: ops.log_softmax(x, axis=-3), ("log_softmax",), SHAPE),
    Mistake("squeeze-size", lambda x: ops.squeeze(x, 0), ("squeeze",), SHAPE),
    Mistake("squeeze-axis", lambda x: ops.squeeze(x, 3), ("squeeze",), SHAPE, (x13,)),
    Mistake("expand-dims-axis", lambda x: ops.expand_dims(x, 4), ("expand_dims",), SHAPE),
    Mistake("expand-dims-float", lambda x: ops.expand_dims(x, 1.5), ("expand_dims",), TYPE),
    Mistake("argmax-axis", lambda x: ops.argmax(x, axis=2), ("argmax",), SHAPE),
    Mistake("argmax-scalar", lambda s: ops.argmax(s, axis=0), ("argmax",), SHAPE, (s0,)),
    Mistake("method-argmin-axis", lambda x: x.argmin(axis=-3), ("argmin",), SHAPE),
    Mistake("gather-axis", lambda x, i: ops.gather(x, i, 2), ("gather",), SHAPE, (x23, idx2)),
    Mistake("argmax-float-axis", lambda x: ops.argmax(x, axis=0.0), ("argmax",), TYPE),
    Mistake("segment-sum-float-count", lambda x, i: ops.unsorted_segment_sum(x, i, 2.5),
            ("unsorted_segment_sum",), TYPE, (x23, idx2)),
    Mistake("uniform-negative-shape", lambda: ops.uniform((-1, 2)), ("uniform",), SHAPE, ()),
    # A traced Tensor where the value must be known when tracing (fine eagerly: concrete)
    Mistake("reshape-traced-shape", lambda x, s: ops.reshape(x, s), ("reshape",), TYPE,
            (x23, shape32), ("jit",)),
    Mistake("repeat-interleave-traced-repeats", lambda v, n: ops.repeat_interleave(v, n),
            ("repeat_interleave",), TYPE, (v3, n3), ("jit",)),
    Mistake("arange-traced-end", lambda n: ops.arange(0, n), ("arange",), TYPE, (n3,), ("jit",)),
    # ---------------------------------------------------------------- dtypes
    Mistake("softmax-int", lambda i: ops.softmax(i), ("softmax",), TYPE, (i23,)),
    Mistake("logical-and-float", lambda x: ops.logical_and(x, x), ("logical_and",), TYPE),
    Mistake("gather-float-indices", lambda x, f: ops.gather(x, f, 0),
            ("gather",), TYPE, (x23, fidx2)),
    Mistake("one-hot-float-indices", lambda f: ops.one_hot(f, 3), ("one_hot",), TYPE, (fidx2,)),
    Mistake("one-hot-negative-depth", lambda i: ops.one_hot(i, -1), ("one_hot",), SHAPE, (idx2,)),
    Mistake("one-hot-float-depth", lambda i: ops.one_hot(i, 2.5), ("one_hot",), TYPE, (idx2,)),
    Mistake("one-hot-none-depth", lambda i: ops.one_hot(i, None), ("one_hot",), TYPE, (idx2,)),
    Mistake("cast-unknown-dtype", lambda x: ops.cast(x, "float99"), ("cast",), TYPE),
    Mistake("cast-none-dtype", lambda x: ops.cast(x, None), ("cast",), TYPE),
    Mistake("segment-sum-float-ids", lambda x, f: ops.unsorted_segment_sum(x, f, 2),
            ("unsorted_segment_sum",), TYPE, (x23, fidx2)),
    # ---------------------------------------------------------------- operands and scalars
    Mistake("add-int-overflow", lambda x: x + 2**70, ("add",), RANGE),
    Mistake("mul-int-underflow", lambda x: ops.mul(x, -2**64), ("mul",), RANGE),
    Mistake("add-string", lambda x: x + "abc", ("add",), TYPE),
    Mistake("add-none", lambda x: x + None, ("add",), TYPE),
    Mistake("sub-dict", lambda x: x - {}, ("sub",), TYPE),
    Mistake("exp-string", lambda: ops.exp("abc"), ("exp",), TYPE, ()),
    Mistake("relu-none", lambda: ops.relu(None), ("relu",), TYPE, ()),
    Mistake("tensor-string", lambda: ms.Tensor("abc"), ("Tensor",), TYPE, ()),
    Mistake("tensor-int-overflow", lambda: ms.Tensor([1, 2**70]), ("Tensor",), RANGE, ()),
    Mistake("tensor-ragged", lambda: ms.Tensor([[1, 2], [3]]), ("Tensor",), TYPE, ()),
    Mistake("tensor-bad-dtype", lambda: ms.Tensor([1.0], dtype="floaty"), ("Tensor",), TYPE, ()),
    Mistake("placeholder-float-shape", lambda: ms.Tensor(shape=(2.5, 3), dtype=ms.float32),
            ("Tensor",), TYPE, ()),
    Mistake("placeholder-negative-shape", lambda: ms.Tensor(shape=(-2, 3), dtype=ms.float32),
            ("Tensor",), SHAPE, ()),
    Mistake("placeholder-as-data", lambda: ops.exp(ph), ("exp", "placeholder"), TYPE, ()),
    Mistake("len-0d", lambda s: len(s), ("len",), TYPE, (s0,), EAGER),
    Mistake("float-of-matrix", lambda x: float(x), ("float",), TYPE, (x23,), EAGER),
    Mistake("set-data-shape", lambda: p23.set_data(np.ones(3, np.float32)),
            ("set_data",), SHAPE, (), EAGER),
    Mistake("assign-not-parameter", lambda x: ops.assign(x, x), ("assign",), TYPE),
    Mistake("assign-shape", lambda y: ops.assign(p23, y), ("assign",), SHAPE, (x32,)),
    Mistake("dropout-p", lambda x: ops.dropout(x, p=1.5), ("dropout",), SHAPE),
    # ---------------------------------------------------------------- indexing
    Mistake("index-float", lambda x: x[1.5], ("x[", "index"), INDEX_OR_TYPE),
    Mistake("index-string", lambda x: x["a"], ("x[", "index"), INDEX_OR_TYPE),
    Mistake("index-range", lambda x: x[5], ("x[", "index"), INDEX),
    Mistake("index-too-many", lambda x: x[0, 0, 0], ("x[", "index"), INDEX),
    Mistake("index-float-tensor", lambda x, f: x[f],
            ("gather", "index"), INDEX_OR_TYPE, (x23, fidx2)),
    Mistake("index-two-ellipses", lambda x: x[..., ...], ("x[", "index"), INDEX),
    # ---------------------------------------------------------------- nn
    Mistake("dense-width", lambda x: dense(x), ("matmul", "Dense"), SHAPE, modes=CELL),
    Mistake("dense-none", lambda: dense(None), ("Dense",), TYPE, (), CELL),
    Mistake("dense-bad-activation", lambda: nn.Dense(3, 2, activation="swish"),
            ("Dense", "activation"), SHAPE, (), EAGER),
    Mistake("dense-tuple-width", lambda: nn.Dense(1, (1, 0)), ("Dense",), SHAPE, (), EAGER),
    Mistake("dense-int-has-bias", lambda: nn.Dense(3, 2, has_bias=2), ("Dense",), TYPE, (), EAGER),
    # numpy's error from inside its Cython code, raised in the layer's weight initializer
    Mistake("lstm-huge-size", lambda: nn.LSTM(2**70, 3), ("LSTM",), RANGE, (), EAGER),
    Mistake("conv-channels", lambda i: conv(i), ("Conv2d",), SHAPE, (img,), CELL),
    Mistake("conv-rank", lambda x: conv(x), ("Conv2d",), SHAPE, modes=CELL),
    Mistake("conv-bad-kernel", lambda: nn.Conv2d(3, 4, 0),
            ("Conv2d", "kernel_size"), SHAPE, (), EAGER),
    Mistake("maxpool-rank", lambda x: nn.MaxPool2d(2)(x), ("MaxPool2d",), SHAPE, modes=CELL),
    Mistake("batchnorm-features", lambda x: bn(x), ("BatchNorm1d",), SHAPE, modes=CELL),
    Mistake("layernorm-shape", lambda x: nn.LayerNorm((4,))(x),
            ("LayerNorm", "mul", "add"), SHAPE, modes=CELL),
    Mistake("softmax-cell-axis", lambda x: nn.Softmax(axis=3)(x),
            ("softmax", "Softmax"), SHAPE, modes=CELL),
    Mistake("xent-labels", lambda x, y: xent(x, y),
            ("mul", "SoftmaxCrossEntropyWithLogits"), SHAPE, (x23, x32), CELL),
    Mistake("sparse-xent-float-labels", lambda x, f: sparse_xent(x, f),
            ("one_hot", "SoftmaxCrossEntropyWithLogits"), TYPE, (x23, fidx2), CELL),
    Mistake("mse-labels", lambda x, y: mse(x, y), ("sub", "MSELoss"), SHAPE, (x23, x32), CELL),
    Mistake("loss-bad-reduction", lambda: nn.MSELoss(reduction="avg"),
            ("MSELoss", "reduction"), SHAPE, (), EAGER),
    Mistake("sequential-not-cell", lambda: nn.SequentialCell([1]),
            ("SequentialCell",), TYPE, (), EAGER),
    Mistake("sequential-none", lambda: nn.SequentialCell([dense])(None),
            ("SequentialCell", "Dense"), TYPE, (), CELL),
    # an empty parameter list is a ValueError, as MindSpore's Optimizer raises
    Mistake("optimizer-no-params", lambda: nn.SGD([], 0.1), ("SGD",), SHAPE, (), EAGER),
    # ---------------------------------------------------------------- gradients
    Mistake("grad-position-range", lambda x: ms.grad(_total, grad_position=3)(x),
            ("grad",), SHAPE, modes=CELL),
    Mistake("grad-position-static", lambda x: ms.grad(ops.mul, grad_position=1)(x, 2),
            ("grad",), TYPE, modes=CELL),
    Mistake("value-and-grad-position", lambda x: ms.value_and_grad(_total, grad_position=(0, 1))(x),
            ("grad",), SHAPE, modes=CELL),
    Mistake("grad-position-float", lambda x: ms.grad(_total, grad_position=1.5)(x),
            ("grad",), TYPE),
    Mistake("grad-weights-not-parameters", lambda x: ms.grad(_total, weights=[x])(x),
            ("grad", "weights"), TYPE),
    Mistake("grad-by-list-no-weights", lambda x: ops.GradOperation(get_by_list=True)(_total)(x),
            ("GradOperation",), TYPE),
    # ---------------------------------------------------------------- jit
    Mistake("jit-returns-str", lambda x: ms.jit(_returns_str)(x),
            ("returned", "jit"), TYPE, modes=EAGER),
    Mistake("jit-placeholder-argument", lambda: ms.jit(_double)(ph),
            ("placeholder",), TYPE, (), EAGER),
    Mistake("jit-unhashable-static", lambda x: ms.jit(lambda a, s: a)(x, {1}),
            ("jit", "static"), TYPE, modes=EAGER),
    Mistake("jit-bad-signature", lambda: ms.jit(_double, input_signature=(1,)),
            ("input_signature",), TYPE, (), EAGER),
    Mistake("if-on-traced-tensor", lambda x: 1 if x > 0 else 0, ("if",), TYPE, modes=("jit",)),
]

_LOCATION = re.compile(r"\(at (.+):(\d+)\)$")


def _run(mistake, mode):
    if mode == "jit":
        return ms.jit(mistake.fn)(*mistake.args)
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    try:
        return mistake.fn(*mistake.args)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def _params():
    for m in MISTAKES:
        marks = [pytest.mark.xfail(reason=m.xfail, strict=True)] if m.xfail else []
        for mode in m.modes:
            yield pytest.param(m, mode, id=f"{m.name}-{mode}", marks=marks)


@pytest.mark.parametrize("mistake,mode", list(_params()))
def test_mistake_is_reported_at_its_line(mistake, mode):
    with pytest.raises(Exception) as info:
        _run(mistake, mode)
    e, message = info.value, str(info.value)
    assert isinstance(e, USER_ERRORS), f"{type(e).__name__}: {message}"
    assert isinstance(e, mistake.expect), f"{type(e).__name__}: {message}"
    assert any(n in message for n in mistake.names), message
    found = _LOCATION.search(message)
    assert found, f"no '(at file:line)' at the end of: {message}"
    assert os.path.samefile(found.group(1), __file__), message
    assert int(found.group(2)) == mistake.fn.__code__.co_firstlineno, message
    assert message.count("(at ") == 1, f"located twice: {message}"


def test_cases_are_many_and_distinct():
    names = [m.name for m in MISTAKES]
    assert len(names) == len(set(names))
    assert len(names) >= 50


def test_user_code_errors_pass_through_unchanged():
    """An exception raised by the user's own code under an mscc call (their Cell's construct,
    the function given to grad or jit) is theirs: not renamed, not relocated."""
    class Broken(nn.Cell):
        def construct(self, x):
            raise KeyError("user's own")

    with pytest.raises(KeyError, match="user's own"):
        Broken()(x23)
    with pytest.raises(KeyError, match="user's own"):
        ms.jit(lambda a: Broken()(a))(x23)


class _UsersCell(nn.Cell):
    def construct(self, x):
        return ops.reshape(x, (7,))  # USERS-CONSTRUCT-LINE


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_mistake_in_a_users_construct_points_into_it(mode):
    """Inside a user's Cell the innermost user frame is the construct: the line there."""
    lines, first = inspect.getsourcelines(_UsersCell)
    line = first + next(i for i, text in enumerate(lines) if "USERS-CONSTRUCT-LINE" in text)
    with pytest.raises(ValueError) as info:
        _run(Mistake("users-cell", lambda x: _UsersCell()(x), ()), mode)
    assert "For 'ms.reshape'" in str(info.value)
    assert str(info.value).endswith(f"{__file__}:{line})")


def test_internal_errors_keep_their_cause():
    """A conversion that changes the kind (an AttributeError becoming a TypeError) keeps the
    original as its cause, so a bug inside mscc stays visible in the traceback."""
    with pytest.raises(TypeError) as info:
        dense(None)
    assert isinstance(info.value.__cause__, AttributeError)
