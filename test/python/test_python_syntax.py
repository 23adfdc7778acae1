"""Python `if`/`elif`/`else`, `while` and `for i in range(...)` on Tensors inside compiled
functions (pyfront/autograph.py): a table of small programs, each run under ms.jit (graph
mode: a Tensor condition becomes one scf.if / scf.while / scf.for) and eagerly (PyNative:
plain Python), against numpy references; the same as a Cell's construct in GRAPH_MODE;
gradients against central differences; Python-valued conditions keep Python's semantics;
the mistakes users make, reported at their line."""
import re

import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops

RNG = np.random.default_rng(15)


def f32(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def T(a):
    return ms.Tensor(a)


# ------------------------------------------------------------------ programs

def if_else(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = -x
    return y


def if_elif(x):
    s = x.sum()
    if s > 1:
        y = x * 2
    elif s > -1:
        y = x + 10
    else:
        y = -x
    return y, s


def if_without_else(x):
    y = x
    if x.mean() < 0:
        y = y * 3 + 1
    return y


def nested_ifs(x, z):
    if x.sum() > 0:
        if z.sum() > 0:
            out = x + z
        else:
            out = x - z
        k = 1.0
    else:
        out = x * z
        k = 2.0
    return out * k


def if_python_condition(x, flag):
    if flag:  # a Python value: decided while tracing, as before
        y = x + 1
    else:
        y = "unused"
        y = x - 1
    return y


def if_and_or(x, z):
    if x.sum() > 0 and z.sum() > 0:
        y = x + z
    elif not x.sum() > 0 or z.max() > 10:
        y = x - z
    else:
        y = x * z
    return y


def returns_in_both(x):
    if x.max() > 0.5:
        return x * 3, x.sum()
    else:
        return x - 1, x.mean()


def early_return(x):
    if x.sum() > 0:
        return ops.exp(x)
    y = x * x
    return y + 1


def conditional_expression(x):
    y = x * 2 if x.sum() > 0 else ops.exp(x)
    return y + (1.0 if x.shape[0] == 3 else 2.0)


def while_tensor(x):
    i = 0
    while x.sum() < 20.0:
        x = x * 2 + 1
        i = i + 1
    return x, i


def while_python(x):
    n = 0
    while n < 3:  # Python: unrolled, as before
        x = ops.sin(x)
        n += 1
    return x


def if_in_while(x):
    i = 0
    acc = ops.zeros_like(x)
    while i < 6:
        if acc.sum() > 2.0:
            acc = acc - x
        else:
            acc = acc + ops.abs(x)
        i = i + 1
    return acc


def for_tensor_range(x, n):
    s = x
    for i in range(n):
        s = s * 0.5 + ops.cast(i, ms.float32)
    return s


def for_tensor_bounds(x, lo, hi):
    total = 0.0
    for i in range(lo, hi):
        total = total + ops.cast(i * i, ms.float32)
        x = x + total
    return x


def for_int_range_with_if(x):
    for i in range(3):
        if (x * (i + 1)).sum() > 0:
            x = ops.tanh(x * 1.5)
        else:
            x = x * 0.5 + 0.1
    return x


def newton_sqrt(x):
    y = x
    n = 0
    while ops.abs(y * y / x - 1).max() > 1e-5:  # (relative: float32 has ~7 digits)
        y = 0.5 * (y + x / y)
        n = n + 1
    return y, n


def while_break(x):
    while x.sum() < 10:
        x = x + 1
        if x.max() > 3:
            break
        x = x * 1.5
    return x


def while_continue(x):
    i = 0
    acc = ops.zeros_like(x)
    while i < 6:
        i = i + 1
        if (x * i).sum() < 0:
            continue
        acc = acc + x * i
    return acc


def for_tensor_range_break(x, n):
    acc = ops.zeros((), ms.float32)
    for i in range(n):
        if acc > 2.0:
            break
        acc = acc + x[i] * x[i]
    return acc


def for_continue_and_break(x, n):
    acc = ops.zeros((), ms.float32)
    count = ops.zeros((), ms.int64)
    for i in range(n):
        v = x[i]
        if v < 0:
            continue
        if count >= 2:
            break
        acc = acc + v
        count = count + 1
    return acc, count


def nested_loop_inner_break(x, n):
    acc = ops.zeros((), ms.float32)
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            acc = acc + x[i] * x[j]
    return acc


def for_over_tensor_rows(x):
    acc = ops.zeros(x.shape[1:], x.dtype)
    for row in x:
        acc = ops.tanh(acc * 0.5 + row)
    return acc


def for_over_list(x):
    outs = []
    for k in [1.0, 2.0, 3.0]:
        outs.append(x * k)
    return ops.stack(outs)


def for_stepped_tensor_bounds(x, lo, hi):
    acc = ops.zeros((), ms.float32)
    for i in range(lo, hi, 3):
        acc = acc + ops.cast(i, ms.float32) * x.sum()
    return acc


def for_negative_step(x, hi):
    acc = ops.zeros((), ms.float32)
    for i in range(hi, 0, -2):
        acc = acc * 0.5 + ops.cast(i, ms.float32)
    return acc + x.sum()


def while_else(x):
    while x.sum() < 10:
        x = x * 2 + 0.5
        if x.max() > 100:
            break
    else:
        x = x - 1
    return x


def _newton_ref(x):
    y, n = x, 0
    while np.abs(y * y / x - 1).max() > 1e-5:
        y, n = 0.5 * (y + x / y), n + 1
    return y, np.int64(n)


PROGRAMS = [
    ("if_true", if_else, [np.abs(f32(3))]),
    ("if_false", if_else, [-np.abs(f32(3))]),
    ("elif_first", if_elif, [np.full(3, 1.0, np.float32)]),
    ("elif_second", if_elif, [np.full(3, 0.1, np.float32)]),
    ("elif_else", if_elif, [np.full(3, -1.0, np.float32)]),
    ("if_without_else", if_without_else, [-np.abs(f32(4))]),
    ("if_without_else_not_taken", if_without_else, [np.abs(f32(4))]),
    ("nested_ifs_tt", nested_ifs, [np.abs(f32(3)), np.abs(f32(3))]),
    ("nested_ifs_tf", nested_ifs, [np.abs(f32(3)), -np.abs(f32(3))]),
    ("nested_ifs_f", nested_ifs, [-np.abs(f32(3)), f32(3)]),
    ("and_or", if_and_or, [np.abs(f32(3)), np.abs(f32(3))]),
    ("and_or_second", if_and_or, [-np.abs(f32(3)), np.abs(f32(3))]),
    ("and_or_else", if_and_or, [np.abs(f32(3)), -np.abs(f32(3))]),
    ("returns_in_both", returns_in_both, [np.full(3, 0.9, np.float32)]),
    ("returns_in_both_else", returns_in_both, [np.full(3, 0.1, np.float32)]),
    ("early_return", early_return, [np.abs(f32(3))]),
    ("early_return_rest", early_return, [-np.abs(f32(3))]),
    ("ifexp_true", conditional_expression, [np.abs(f32(3))]),
    ("ifexp_false", conditional_expression, [-np.abs(f32(3))]),
    ("while_tensor", while_tensor, [np.abs(f32(3))]),
    ("while_python", while_python, [f32(3)]),
    ("if_in_while", if_in_while, [f32(4)]),
    ("for_tensor_range", for_tensor_range, [f32(3), np.array(5, np.int64)]),
    ("for_tensor_range_zero", for_tensor_range, [f32(3), np.array(0, np.int64)]),
    ("for_tensor_bounds", for_tensor_bounds, [f32(3), np.array(2, np.int32),
                                              np.array(5, np.int32)]),
    ("for_int_range_with_if", for_int_range_with_if, [f32(3)]),
    ("newton_3_steps", newton_sqrt, [np.full(3, 1.5, np.float32)]),
    ("while_break", while_break, [np.abs(f32(3))]),
    ("while_break_never", while_break, [np.full(3, 0.1, np.float32)]),
    ("while_continue", while_continue, [f32(4)]),
    ("for_range_break", for_tensor_range_break, [np.full(6, 0.9, np.float32),
                                                 np.array(6, np.int64)]),
    ("for_range_no_break", for_tensor_range_break, [np.full(6, 0.1, np.float32),
                                                    np.array(6, np.int64)]),
    ("for_continue_and_break", for_continue_and_break, [
        np.array([0.5, -1.0, 0.25, 2.0, 4.0], np.float32), np.array(5, np.int64)]),
    ("nested_loop_inner_break", nested_loop_inner_break, [f32(4), np.array(4, np.int64)]),
    ("for_over_tensor_rows", for_over_tensor_rows, [f32(5, 3)]),
    ("for_over_list", for_over_list, [f32(3)]),
    ("for_stepped_tensor_bounds", for_stepped_tensor_bounds, [
        f32(3), np.array(1, np.int64), np.array(11, np.int64)]),
    ("for_stepped_empty", for_stepped_tensor_bounds, [
        f32(3), np.array(5, np.int64), np.array(2, np.int64)]),
    ("for_negative_step", for_negative_step, [f32(2), np.array(7, np.int64)]),
    ("while_else", while_else, [np.full(3, 0.5, np.float32)]),
    ("while_else_broken", while_else, [np.full(3, 9.0, np.float32)]),
]


def _numpy(fn, inputs):
    """The reference: the same Python function run eagerly (PyNative: plain Python on
    concrete Tensors)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    out = fn(*[T(a) for a in inputs])
    return [np.asarray(o.asnumpy() if isinstance(o, ms.Tensor) else o)
            for o in (out if isinstance(out, tuple) else (out,))]


def _check(got, want):
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = g.asnumpy() if isinstance(g, ms.Tensor) else np.asarray(g)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,fn,inputs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program_jit_matches_pynative(name, fn, inputs):
    want = _numpy(fn, inputs)
    _check(ms.jit(fn)(*[T(a) for a in inputs]), want)


def test_references_are_plain_python():
    """Spot checks of the eager runs against numpy written out."""
    x = np.abs(f32(3))
    _check(if_else(T(x)), [x * 2])
    _check(if_else(T(-x)), [x])
    _check(while_tensor(T(x)), list(_while_ref(x)))
    _check(for_tensor_range(T(x), T(np.array(4))), [_for_ref(x, 4)])
    v = np.array([2.0, 9.0, 0.25], np.float32)
    np.testing.assert_allclose(ms.jit(newton_sqrt)(T(v))[0].asnumpy(), np.sqrt(v), rtol=1e-5)


def _while_ref(x):
    i = 0
    while x.sum() < 20.0:
        x, i = x * 2 + 1, i + 1
    return x, np.int64(i)


def _for_ref(x, n):
    for i in range(n):
        x = x * 0.5 + i
    return x


def test_python_condition_under_jit():
    x = f32(3)
    f = ms.jit(if_python_condition)
    _check(f(T(x), True), [x + 1])
    _check(f(T(x), False), [x - 1])
    assert "scf.if" not in f.lower(T(x), True).as_text("ms")


def test_newton_one_loop_one_compile():
    f = ms.jit(newton_sqrt)
    few = np.full(4, 1.5, np.float32)       # a few iterations
    many = np.full(4, 1e18, np.float32)     # ~30 iterations
    _check(f(T(few)), list(_newton_ref(few)))
    _check(f(T(many)), list(_newton_ref(many)))
    assert int(f(T(few))[1].asnumpy()) <= 4 and int(f(T(many))[1].asnumpy()) >= 28
    assert f.cache_info()["compiles"] == 1
    text = f.lower(T(few)).as_text("ms")
    assert text.count("scf.while") == 1 and 'ms.api = "WhileLoop"' in text


@pytest.mark.parametrize("fn,op,api", [
    (if_else, "scf.if", "cond"),
    (while_tensor, "scf.while", "WhileLoop"),
    (conditional_expression, "scf.if", "cond"),
])
def test_tensor_condition_is_one_region_op(fn, op, api):
    text = ms.jit(fn).lower(T(f32(3))).as_text("ms")
    assert text.count(op) == 1 and f'ms.api = "{api}"' in text


def test_for_over_tensor_range_is_one_loop():
    text = ms.jit(for_tensor_range).lower(T(f32(3)), T(np.array(5))).as_text("ms")
    assert text.count("scf.for") == 1 and 'ms.api = "ForiLoop"' in text
    unrolled = ms.jit(for_tensor_range).lower(T(f32(3)), 3).as_text("ms")
    assert "scf.for" not in unrolled  # an int range stays a Python loop (unrolled)


# ------------------------------------------------------------------ Cells

class Branchy(nn.Cell):
    """MindSpore's tutorial style: an `if` on a Tensor in construct."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 3)

    def construct(self, x):
        h = self.dense(x)
        if h.sum() > 0:
            y = h * 2
        else:
            y = -h
        return y


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cell_construct_with_tensor_if(mode, sign):
    ms.set_seed(3)
    net = Branchy()
    x = T(np.full((2, 3), sign, np.float32))
    ms.set_context(mode=mode)
    got = net(x).asnumpy()
    h = x.asnumpy() @ net.dense.weight.asnumpy().T + net.dense.bias.asnumpy()
    np.testing.assert_allclose(got, h * 2 if h.sum() > 0 else -h, rtol=1e-5, atol=1e-6)


def test_cell_graph_mode_is_compiled_to_scf_if():
    ms.set_seed(3)
    net = Branchy()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net(T(f32(2, 3)))
        assert net._graph_fn.cache_info()["compiles"] == 1
        text = net._graph_fn.lower(net._static_state(), T(f32(2, 3))).as_text("ms")
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert text.count("scf.if") == 1


# ------------------------------------------------------------------ gradients

def central(fn, args, k, eps=1e-6):
    grad = np.zeros_like(args[k])
    for idx in np.ndindex(args[k].shape):
        hi = [a.copy() for a in args]
        lo = [a.copy() for a in args]
        hi[k][idx] += eps
        lo[k][idx] -= eps
        grad[idx] = (fn(*hi).sum() - fn(*lo).sum()) / (2 * eps)
    return grad


def grad_if(x, w):
    if (x * w).sum() > 0:
        y = ops.sin(x) * w
    else:
        y = x * x * w
    return y.sum()


def grad_if_ref(x, w):
    return np.sin(x) * w if (x * w).sum() > 0 else x * x * w


def grad_for(x, w):
    for i in range(3):
        x = ops.tanh(x * w + i)
        if x.sum() > 0:
            x = x * 2
    return x.sum()


def grad_for_ref(x, w):
    for i in range(3):
        x = np.tanh(x * w + i)
        if x.sum() > 0:
            x = x * 2
    return x


@pytest.mark.parametrize("fn,ref,sign", [(grad_if, grad_if_ref, 1.0),
                                         (grad_if, grad_if_ref, -1.0),
                                         (grad_for, grad_for_ref, 1.0)],
                         ids=["if_true", "if_false", "for_range"])
def test_gradient(fn, ref, sign, mode):
    x = np.abs(RNG.uniform(0.1, 1, 3)) * sign
    w = RNG.uniform(0.5, 1, 3)
    g = ms.grad(ms.jit(fn) if mode == ms.GRAPH_MODE else fn, (0, 1))(T(x), T(w))
    for k in range(2):
        np.testing.assert_allclose(g[k].asnumpy(), central(ref, [x, w], k), rtol=1e-6,
                                   atol=1e-8)


def test_graph_mode_grad_of_plain_function_converts_it(mode):
    x, w = np.abs(RNG.uniform(0.1, 1, 3)), RNG.uniform(0.5, 1, 3)
    g = ms.grad(grad_if, 0)(T(x), T(w)).asnumpy()
    np.testing.assert_allclose(g, central(grad_if_ref, [x, w], 0), rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ semantics kept

COUNTER = [0]


def _closure_maker(scale):
    offset = T(np.float32(1.0))

    def fn(x, k=2.0):
        COUNTER[0] += 1
        if x.sum() > 0:
            y = x * scale * k + offset
        else:
            y = x
        return y
    return fn


def test_closures_globals_defaults_are_kept():
    fn = _closure_maker(3.0)
    x = np.abs(f32(3))
    COUNTER[0] = 0
    _check(ms.jit(fn)(T(x)), [x * 6 + 1])
    assert COUNTER[0] == 1  # the global the function writes is the module's


def test_function_without_control_flow_is_not_rewritten():
    from mscc.pyfront.autograph import convert

    def plain(x):
        return x + 1
    assert convert(plain) is plain
    assert convert(if_else) is not if_else and convert(if_else).__wrapped__ is if_else


def _nested_branch(x):
    def inner(y):
        return y if y else 0
    return inner(x)


@pytest.mark.parametrize("fn, branches", [
    (lambda x: x * 2 + 1, False),
    (lambda x: x * 2 if x else -x, True),
    (lambda x: [y if y else 0 for y in x], True),  # in the comprehension's own code
    (lambda x: x and 1, True),  # a jump without a statement to rewrite: read anyway
    (_nested_branch, True),  # in a function defined inside
    (if_else, True),
])
def test_only_functions_whose_bytecode_may_branch_have_their_source_read(fn, branches,
                                                                          monkeypatch):
    from mscc.pyfront import autograph
    assert autograph._may_branch(fn.__code__) is branches
    read = []
    monkeypatch.setattr(autograph, "_parse", lambda f: read.append(f) or (None, 0))
    monkeypatch.setattr(autograph, "_converted", type(autograph._converted)())
    assert autograph.convert(fn) is fn  # (_parse found nothing to rewrite)
    assert read == ([fn] if branches else [])


def test_lambda_with_tensor_condition_says_source_is_unavailable():
    fn = eval("lambda x: x * 2 if x.sum() > 0 else -x")
    with pytest.raises(TypeError, match="could not read the source") as info:
        ms.jit(fn)(T(f32(3)))
    assert "ops.cond" in str(info.value)


def test_python_unbound_semantics_in_pynative_and_python_conditions():
    def f(x, flag):
        if flag:
            y = x
        return y
    with pytest.raises(UnboundLocalError):
        ms.jit(f)(T(f32(2)), False)


# ------------------------------------------------------------------ mistakes

def one_branch_only(x):
    if x.sum() > 0:
        y = x * 2
    return y


def branch_changes_dtype(x):
    if x.sum() > 0:
        y = x
    else:
        y = ops.cast(x, ms.int32)
    return y


def branch_changes_shape(x):
    y = x
    if x.sum() > 0:
        y = ops.concat((x, x))
    return y


def while_changes_shape(x):
    while x.sum() < 10:
        x = ops.concat((x, x))
    return x


def return_in_loop(x):
    for i in range(3):
        if x.sum() > 0:
            return x
        x = x + 1
    return x


def tensor_step(x, n):
    for i in range(0, n, n):
        x = x + 1
    return x


def break_in_try(x):
    while x.sum() < 10:
        try:
            x = x + 1
            break
        finally:
            pass
    return x


def _line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


MISTAKES = [
    (one_branch_only, UnboundLocalError, "variable 'y' is assigned only in the true branch",
     "if x.sum() > 0"),
    (branch_changes_dtype, ValueError, "variable 'y' is float32 of shape (3,) in the true "
     "branch of the `if` and int32 of shape (3,) in the false branch", "if x.sum() > 0"),
    (branch_changes_shape, ValueError, "variable 'y' is float32 of shape (6,) in the true",
     "if x.sum() > 0"),
    (while_changes_shape, ValueError, "the body of the while loop changed variable 'x' from "
     "float32 of shape (3,) to float32 of shape (6,)", "while x.sum()"),
    (break_in_try, TypeError, "cannot compile this `while` on a Tensor: `break`/`continue` "
     "inside a `try`, `with` or `match` of the loop", "while x.sum()"),
    (return_in_loop, TypeError, "cannot compile this `if` on a Tensor: `return` in a branch",
     "if x.sum() > 0"),
]


@pytest.mark.parametrize("fn,kind,message,line", MISTAKES, ids=[m[0].__name__ for m in MISTAKES])
def test_mistake(fn, kind, message, line):
    with pytest.raises(kind) as info:
        ms.jit(fn)(T(np.abs(f32(3))))
    text = str(info.value)
    assert message in text
    assert f"test_python_syntax.py:{_line_of(fn, line)}" in text


def test_tensor_step_is_refused_at_the_line():
    with pytest.raises(TypeError, match=r"needs a Python int step, got Tensor.*"
                                        r"test_python_syntax\.py:\d+"):
        ms.jit(tensor_step)(T(f32(3)), T(np.array(4)))


class _Base(nn.Cell):
    def construct(self, x):
        return x + 1


class _Mixed(_Base):
    """Python conditions (None, self.training, an attribute) beside a Tensor one, super()
    and a default argument in a converted construct."""

    def __init__(self):
        super().__init__()
        self.scale = 2.0

    def construct(self, x, y=None):
        h = super().construct(x)
        if y is None:
            y = h
        if self.training:
            h = h * 10
        if h.sum() > 0:
            out = h * self.scale + y
        else:
            out = h - y
        for i in range(2):
            out = out + i
        return out


def _mixed_ref(x, training):
    h = x + 1
    y = h
    h = h * 10 if training else h
    out = h * 2 + y if h.sum() > 0 else h - y
    return out + 1


@pytest.mark.parametrize("training", [False, True])
def test_cell_with_python_and_tensor_conditions(mode, training):
    net = _Mixed()
    net.set_train(training)
    for x in (np.ones(3, np.float32), np.full(3, -5.0, np.float32)):
        np.testing.assert_allclose(net(T(x)).asnumpy(), _mixed_ref(x, training))


# ------------------------------------------------------------------ loops: structure, Cells,
# gradients, fullgraph, MS_JIT, loops=

def _op_counts(fn, *args, **jit_kw):
    """How often each op occurs in the `ms` stage of ms.jit(fn, **jit_kw) (parsed IR)."""
    from mstest import op_counts
    return op_counts(ms.jit(fn, **jit_kw).lower(*args).as_text("ms"))


@pytest.mark.parametrize("fn,inputs,loops", [
    (for_over_tensor_rows, [f32(5, 3)], {"scf.for": 1}),
    (for_tensor_range_break, [f32(6), np.array(6)], {"scf.for": 1}),
    (for_continue_and_break, [f32(5), np.array(5)], {"scf.for": 1}),
    (nested_loop_inner_break, [f32(4), np.array(4)], {"scf.for": 2}),
    (while_break, [f32(3)], {"scf.while": 1}),
    (for_stepped_tensor_bounds, [f32(3), np.array(1), np.array(11)], {"scf.for": 1}),
    (for_over_list, [f32(3)], {"scf.for": 0, "scf.while": 0}),
], ids=lambda v: getattr(v, "__name__", None))
def test_converted_loops_are_one_loop_each(fn, inputs, loops):
    counts = _op_counts(fn, *[T(a) for a in inputs])
    for op, n in loops.items():
        assert counts.get(op, 0) == n, counts


def _as_cell(fn):
    """A Cell whose construct is `fn` (converted when GRAPH_MODE traces it)."""
    return type(f"Cell_{fn.__name__}", (nn.Cell,), {"construct": staticmethod(fn)})()


@pytest.mark.parametrize("name,fn,inputs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program_as_cell_construct_in_graph_mode(name, fn, inputs):
    want = _numpy(fn, inputs)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        _check(_as_cell(fn)(*[T(a) for a in inputs]), want)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def _loss_break(x):
    acc = ops.zeros((), x.dtype)
    for i in range(ms.Tensor(np.int64(x.shape[0]))):
        if acc > 1.0:
            break
        acc = acc + ops.sin(x[i]) ** 2
    return acc


def _loss_rows(x):
    h = ops.zeros(x.shape[1:], x.dtype)
    for row in x:
        h = ops.tanh(h * 0.7 + row)
    return (h * h).sum()


def _loss_continue(x):
    acc = ops.zeros((), x.dtype)
    for i in range(ms.Tensor(np.int64(x.shape[0]))):
        if x[i] < 0:
            continue
        acc = acc + x[i] * x[i] * (i + 1)
    return acc


def _np_loss(fn):
    return lambda x: float(fn(T(x)).asnumpy())


@pytest.mark.parametrize("fn,x", [
    (_loss_break, np.array([0.9, 0.3, 1.2, 0.7, 0.2])),
    (_loss_rows, RNG.uniform(-1, 1, (4, 3))),
    (_loss_continue, np.array([0.5, -0.3, 0.8, -0.1, 0.4])),
], ids=["break", "rows", "continue"])
def test_loop_gradients_match_pynative_and_differences(fn, x):
    from mstest import finite_differences
    ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = ms.grad(fn)(T(x)).asnumpy()
    graph = ms.jit(ms.grad(fn))(T(x)).asnumpy()
    np.testing.assert_allclose(graph, eager, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(graph, finite_differences(_np_loss(fn), x), rtol=1e-6,
                               atol=1e-8)


def _python_return_in_loop(x, n):
    for i in range(3):
        if n <= i:  # (a Python condition)
            return x * i
        x = x + 1
    return x


def test_fullgraph_refuses_what_it_cannot_compile_at_the_line():
    for fn, kind, line in ((return_in_loop, "if", "if x.sum() > 0"),
                           (break_in_try, "while", "while x.sum()")):
        with pytest.raises(TypeError) as info:
            ms.jit(fn, fullgraph=True)(T(np.abs(f32(3))))
        text = str(info.value)
        assert f"ms.jit(fullgraph=True) cannot compile this `{kind}`" in text
        assert f"test_python_syntax.py:{_line_of(fn, line)}" in text
    # LAX (the default) leaves such statements to Python: on a Python condition they run
    x = f32(3)
    _check(ms.jit(_python_return_in_loop)(T(x), 1), [x * 1 + 1])
    with pytest.raises(TypeError, match="fullgraph=True"):
        ms.jit(_python_return_in_loop, fullgraph=True)(T(x), 1)
    _check(ms.jit(while_break, fullgraph=True)(T(np.full(3, 0.1, np.float32))),
           _numpy(while_break, [np.full(3, 0.1, np.float32)]))


def test_fullgraph_checks_a_cell_construct_too():
    cell = _as_cell(return_in_loop)
    with pytest.raises(TypeError, match="fullgraph=True"):
        ms.jit(lambda x: cell(x), fullgraph=True)(T(f32(3)))


def test_ms_jit_0_runs_plain_python(monkeypatch):
    monkeypatch.setenv("MS_JIT", "0")
    assert ms.jit(if_else) is if_else
    decorated = ms.jit(input_signature=(ms.Tensor(shape=(3,), dtype=ms.float32),))(while_break)
    assert decorated is while_break
    x = np.abs(f32(3))
    _check(decorated(T(x)), _numpy(while_break, [x]))


def _python_int_loop(x):
    for i in range(40):
        x = ops.sin(x) + 0.01
    return x


def _appending_loop(x):
    outs = []
    for i in range(40):
        outs.append(x * i)
    return ops.stack(outs).sum(0)


def test_loops_option(monkeypatch):
    x = T(f32(3))
    want = _numpy(_python_int_loop, [x.asnumpy()])
    assert _op_counts(_python_int_loop, x).get("scf.for", 0) == 0           # auto: unrolled
    assert _op_counts(_python_int_loop, x, loops="rolled")["scf.for"] == 1
    _check(ms.jit(_python_int_loop, loops="rolled")(x), want)
    assert _op_counts(for_over_tensor_rows, T(f32(5, 3)), loops="unrolled").get("scf.for", 0) == 0
    from mscc.pyfront import autograph
    monkeypatch.setattr(autograph, "AUTO_ROLL_NODES", 50)  # 40 iterations x 7 nodes > 50
    assert _op_counts(_python_int_loop, x)["scf.for"] == 1
    _check(ms.jit(_python_int_loop)(x), want)
    # a body with a call statement (the list it appends to) is not rolled automatically
    assert _op_counts(_appending_loop, x).get("scf.for", 0) == 0
    with pytest.raises(ValueError, match="loops must be one of auto, rolled, unrolled"):
        ms.jit(_python_int_loop, loops="sometimes")


def _while_loss(x):
    while x.sum() < 10.0:
        x = x * 2.0
    return x.sum()


def test_gradient_through_a_tensor_while_is_refused_at_its_line(mode):
    """Graph mode compiles the `while` to a WhileLoop, which has no reverse: the control-flow
    error at the user's line. PyNative runs the Python loop and differentiates the two
    iterations that ran (x * 4)."""
    from mscc.passes.diagnostics import CompileError
    x = T(np.ones(3))
    assert float(ms.jit(_while_loss)(x).asnumpy()) == 12.0  # the forward compiles
    if mode == ms.PYNATIVE_MODE:
        np.testing.assert_array_equal(ms.grad(_while_loss)(x).asnumpy(), np.full(3, 4.0))
        return
    with pytest.raises(CompileError) as info:
        ms.grad(_while_loss)(x)
    message = str(info.value)
    assert "'WhileLoop'" in message and "cannot be differentiated" in message
    assert f"test_python_syntax.py:{_line_of(_while_loss, 'while x.sum()')}" in message
