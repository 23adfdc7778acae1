"""Loops and conditionals (ops.WhileLoop, ops.ForiLoop, ops.Scan, ops.cond): one table of
programs against plain Python/numpy references, in graph mode (jit: one scf loop or
conditional, the body traced once) and in PyNative mode (the Python loop runs eagerly);
gradients through cond, ForiLoop and Scan against central differences in float64, in both
modes; the IR they compile to; the mistakes users make."""
import re

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.passes.diagnostics import CompileError

RNG = np.random.default_rng(14)


def f32(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def f64(*shape):
    return RNG.uniform(-1, 1, shape)


def T(a):
    return ms.Tensor(a)


W = f32(4, 4) / 2
W_PARAM = ms.Parameter(T(W), name="cf_w")


class Case:
    """`fn(*Tensors)` uses the control-flow ops; `ref(*numpy arrays)` is plain Python."""

    def __init__(self, name, fn, ref, inputs):
        self.name, self.fn, self.ref, self.inputs = name, fn, ref, inputs


def _fori_tuple(x):
    body = lambda i, c: (c[0] * 0.5 + ops.cast(i, ms.float32), c[1] + i)  # noqa: E731
    return ops.ForiLoop()(1, 6, body, (x, 0), unroll=False)


def _fori_tuple_ref(x):
    a, n = x, 0
    for i in range(1, 6):
        a, n = a * 0.5 + i, n + i
    return a, np.int64(n)


def _fori_dict(x):
    def body(i, c):
        return {"h": ops.tanh(ops.matmul(c["h"], W_PARAM)), "steps": c["steps"] + 1.0}
    return ops.ForiLoop()(0, 4, body, {"h": x, "steps": 0.0}, unroll=False)


def _fori_dict_ref(x):
    h = x
    for _ in range(4):
        h = np.tanh(h @ W)
    return {"h": h, "steps": np.float32(4)}


def _fori_tensor_bounds(x, lo, hi):
    return ops.ForiLoop()(lo, hi, lambda i, c: c + ops.cast(i * i, ms.float32), x)


def _fori_tensor_bounds_ref(x, lo, hi):
    for i in range(int(lo), int(hi)):
        x = x + i * i
    return x


def _nested(x):
    def outer(i, c):
        return ops.ForiLoop()(0, 3, lambda j, d: ops.sin(d) + ops.cast(i * 10 + j, ms.float32),
                              c, unroll=False)
    return ops.ForiLoop()(0, 2, outer, x, unroll=False)


def _nested_ref(x):
    for i in range(2):
        for j in range(3):
            x = np.sin(x) + (i * 10 + j)
    return x


def _while(x):
    cond = lambda c: c[0].sum() < 50.0  # noqa: E731
    body = lambda c: (c[0] * 2.0 + 1.0, c[1] + 1)  # noqa: E731
    return ops.WhileLoop()(cond, body, (x, 0))


def _while_ref(x):
    n = 0
    while x.sum() < 50:
        x, n = x * 2 + 1, n + 1
    return x, np.int64(n)


def _cond_both(x, y):
    r1 = ops.cond(x.sum() > 0, lambda a, b: (a * b, a.sum()), lambda a, b: (a - b, b.sum()),
                  x, y)
    r2 = ops.cond(x.sum() < -100.0, lambda a: a * 0.0, lambda a: ops.exp(a), x)
    return r1, r2


def _cond_both_ref(x, y):
    r1 = (x * y, x.sum()) if x.sum() > 0 else (x - y, y.sum())
    return r1, np.exp(x)


def _cond_in_loop(x):
    def body(i, c):
        return ops.cond(i < 3, lambda a: a * 2.0, lambda a: a - 1.0, c)
    return ops.ForiLoop()(0, 5, body, x, unroll=False)


def _cond_in_loop_ref(x):
    for i in range(5):
        x = x * 2 if i < 3 else x - 1
    return x


def _scan_tensor(xs, h):
    def step(c, x):
        c = ops.tanh(ops.matmul(c, W_PARAM) + x)
        return c, (c.sum(), c * 2.0)
    return ops.Scan()(step, h, xs, unroll=False)


def _scan_tensor_ref(xs, h):
    ys1, ys2 = [], []
    for x in xs:
        h = np.tanh(h @ W + x)
        ys1.append(h.sum())
        ys2.append(h * 2)
    return h, (np.array(ys1, np.float32), np.array(ys2, np.float32))


def _scan_list(a, b, c):
    return ops.Scan()(lambda s, x: (s + x, s * x), ops.zeros(3), [a, b, c], unroll=False)


def _scan_list_ref(a, b, c):
    s, ys = np.zeros(3, np.float32), []
    for x in (a, b, c):
        s, y = s + x, s * x
        ys.append(y)
    return s, ys


def _scan_length(x):
    return ops.Scan()(lambda c, _: (c * 1.5, c.sum()), x, None, length=4, unroll=False)


def _scan_length_ref(x):
    ys = []
    for _ in range(4):
        x, y = x * 1.5, x.sum()
        ys.append(y)
    return x, ys


def _scan_empty(xs, h):
    return ops.Scan()(lambda c, x: (c + x, x * 2.0), h, xs, unroll=False)


def _scan_empty_ref(xs, h):
    return h, np.zeros((0, 3), np.float32)


def _zero_trip(x):
    a = ops.ForiLoop()(5, 2, lambda i, c: c * 100.0, x, unroll=False)
    b = ops.WhileLoop()(lambda c: c.sum() > 1e9, lambda c: c * 100.0, x)
    return a, b


def _unrolled(x):
    # MindSpore's default: i is a Python int, the loop runs while tracing
    return ops.ForiLoop()(0, 3, lambda i, c: c * (i + 1), x)


def _unrolled_ref(x):
    return x * 6


def _backend_body(x):
    def body(i, c):
        z = ops.softmax(ops.matmul(c, W_PARAM), -1) * 4.0
        m = ops.reduce_mean(z, 1, True)
        return ops.tanh((z - m) / ops.sqrt(ops.reduce_mean((z - m) ** 2, 1, True) + 1e-5))
    return ops.ForiLoop()(0, 3, body, x, unroll=False)


def _backend_body_ref(x):
    for _ in range(3):
        z = x @ W
        z = np.exp(z - z.max(1, keepdims=True))
        z = 4 * z / z.sum(1, keepdims=True)
        m = z.mean(1, keepdims=True)
        x = np.tanh((z - m) / np.sqrt(((z - m) ** 2).mean(1, keepdims=True) + 1e-5))
    return x


W_BIG = (f32(256, 256) / 16).astype(np.float32)


def _threaded_body(x):
    """Sizes at which the CPU backend splits the matmul kernel over threads and tiles rows:
    the kernel is called from inside the loop."""
    def body(i, c):
        z = ops.softmax(ops.matmul(c, T(W_BIG)), -1) * 64.0
        return ops.tanh(z - ops.reduce_mean(z, 1, True))
    return ops.ForiLoop()(0, 3, body, x, unroll=False)


def _threaded_body_ref(x):
    for _ in range(3):
        z = x @ W_BIG
        z = np.exp(z - z.max(1, keepdims=True))
        z = 64 * z / z.sum(1, keepdims=True)
        x = np.tanh(z - z.mean(1, keepdims=True))
    return x


def _bool_and_int_carries(x):
    def body(i, c):
        a, flag, count = c
        a = ops.cond(flag, lambda v: v * 2.0, lambda v: v + 1.0, a)
        return a, ops.logical_not(flag), count + ops.cast(flag, ms.int32)
    return ops.ForiLoop()(0, 5, body, (x, True, T(np.array(0, np.int32))), unroll=False)


def _bool_and_int_carries_ref(x):
    flag, count = True, 0
    for _ in range(5):
        x = x * 2 if flag else x + 1
        flag, count = not flag, count + flag
    return x, np.bool_(flag), np.int32(count)


def _descent(w, x):
    """Gradient descent in a loop: a gradient taken inside the body."""
    step = ms.grad(lambda w, x: ((ops.matmul(x, w) - 1.0) ** 2).mean())
    return ops.ForiLoop()(0, 20, lambda i, w: w - 0.1 * step(w, x), w, unroll=False)


def _descent_ref(w, x):
    for _ in range(20):
        w = w - 0.1 * (2 * x.T @ (x @ w - 1) / len(x))
    return w


def _scan_pytree_steps(a, b):
    steps = [(a, {"k": b}), (b, {"k": a}), (a + b, {"k": a * b})]
    return ops.Scan()(lambda c, x: (c * x[0] + x[1]["k"], {"y": c.sum()}), a, steps,
                      unroll=False)


def _scan_pytree_steps_ref(a, b):
    c, ys = a, []
    for x0, k in ((a, b), (b, a), (a + b, a * b)):
        ys.append({"y": c.sum()})
        c = c * x0 + k
    return c, ys


def _scan_unrolled(xs, h):
    """Scan's default unroll=True: one body per step while tracing, the same results."""
    return ops.Scan()(lambda c, x: (ops.tanh(c + x), c * x), h, xs)


def _while_dict(x):
    return ops.WhileLoop()(lambda c: c["n"] < 4, lambda c: {"n": c["n"] + 1, "v": c["v"] * 1.5},
                           {"n": 0, "v": x})


def _while_dict_ref(x):
    return {"n": np.int64(4), "v": x * 1.5 ** 4}


PROGRAMS = [
    Case("fori_tuple_and_number", _fori_tuple, _fori_tuple_ref, [f32(3)]),
    Case("fori_dict_parameter", _fori_dict, _fori_dict_ref, [f32(2, 4)]),
    Case("fori_tensor_bounds", _fori_tensor_bounds, _fori_tensor_bounds_ref,
         [f32(3), np.array(2, np.int32), np.array(6, np.int32)]),
    Case("fori_nested", _nested, _nested_ref, [f32(3)]),
    Case("fori_unrolled", _unrolled, _unrolled_ref, [f32(3)]),
    Case("zero_trip", _zero_trip, lambda x: (x, x), [f32(3)]),
    Case("while_tuple", _while, _while_ref, [np.abs(f32(3))]),
    Case("cond_both_branches", _cond_both, _cond_both_ref, [np.abs(f32(3)), f32(3)]),
    Case("cond_false_branch", _cond_both, _cond_both_ref, [-np.abs(f32(3)), f32(3)]),
    Case("cond_in_loop", _cond_in_loop, _cond_in_loop_ref, [f32(3)]),
    Case("scan_tensor_xs", _scan_tensor, _scan_tensor_ref, [f32(5, 2, 4), f32(2, 4)]),
    Case("scan_list_xs", _scan_list, _scan_list_ref, [f32(3), f32(3), f32(3)]),
    Case("scan_length", _scan_length, _scan_length_ref, [f32(3)]),
    Case("scan_no_steps", _scan_empty, _scan_empty_ref, [np.zeros((0, 3), np.float32), f32(3)]),
    Case("backend_matmul_softmax_norm", _backend_body, _backend_body_ref, [f32(8, 4)]),
    Case("backend_threaded_kernel", _threaded_body, _threaded_body_ref, [f32(512, 256)]),
    Case("bool_and_int_carries", _bool_and_int_carries, _bool_and_int_carries_ref, [f32(3)]),
    Case("gradient_inside_body", _descent, _descent_ref, [np.zeros(3), f64(8, 3)]),
    Case("scan_pytree_steps", _scan_pytree_steps, _scan_pytree_steps_ref, [f32(2), f32(2)]),
    Case("scan_unrolled", _scan_unrolled, lambda xs, h: _np_scan_unrolled(xs, h),
         [f32(4, 3), f32(3)]),
    Case("while_dict", _while_dict, _while_dict_ref, [f32(3)]),
]


def _np_scan_unrolled(xs, h):
    ys = []
    for x in xs:
        ys.append(h * x)
        h = np.tanh(h + x)
    return h, np.array(ys)


def _leaves(x):
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _leaves(x[k])]
    if isinstance(x, (tuple, list)):
        return [v for e in x for v in _leaves(e)]
    return [x]


@pytest.mark.parametrize("case", PROGRAMS, ids=[c.name for c in PROGRAMS])
def test_program(case, mode):
    fn = ms.jit(case.fn) if mode == ms.GRAPH_MODE else case.fn
    got = fn(*[T(a) for a in case.inputs])
    want = case.ref(*[a.copy() for a in case.inputs])
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        g = g.asnumpy()
        assert g.shape == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    assert _tree(got) == _tree(want)


def _tree(x):
    """The structure of a result, leaves left out (tuples, lists and dicts must match)."""
    if isinstance(x, dict):
        return {k: _tree(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(_tree(e) for e in x)
    return None


# ------------------------------------------------------------------ gradients

def central(fn, args, k, eps=1e-6):
    """d sum(fn(args)) / d args[k] by central differences (fn: numpy in, numpy out)."""
    args = [a.copy() for a in args]
    grad = np.zeros_like(args[k])
    for idx in np.ndindex(*args[k].shape):
        args[k][idx] += eps
        hi = fn(*args)
        args[k][idx] -= 2 * eps
        lo = fn(*args)
        args[k][idx] += eps
        grad[idx] = (hi - lo) / (2 * eps)
    return grad


P64 = ms.Parameter(T(f64(3, 3) / 2), name="cf_p64")


def _g_cond(x, y):
    return ops.cond(x.sum() > 0, lambda a, b: (ops.sin(a) * b).sum(),
                    lambda a, b: (a * a - b).sum(), x, y)


def _g_fori(x, w):
    return ops.ForiLoop()(0, 4, lambda i, c: ops.tanh(c * w + ops.cast(i, ms.float64)),
                          x, unroll=False).sum()


def _g_scan(xs, h):
    def step(c, x):
        c = ops.tanh(ops.matmul(c, P64) + x)
        return c, (c * c).sum()
    h, ys = ops.Scan()(step, h, xs, unroll=False)
    return h.sum() + ys.sum()


def _g_scan_list(a, b):
    h, ys = ops.Scan()(lambda c, x: (c * x + 1.0, ops.exp(c)), T(np.ones(2)), [a, b, a],
                       unroll=False)
    return h.sum() + ys[1].sum() * 2.0


def _g_nested(x, w):
    def outer(i, c):
        d = ops.ForiLoop()(0, 2, lambda j, d: ops.sin(d * w) + c, c, unroll=False)
        return ops.cond(d.sum() > 0, lambda v: v * 0.5, lambda v: v * v, d)
    return ops.ForiLoop()(0, 3, outer, x, unroll=False).sum()


def _g_dict(x):
    def body(i, c):
        return {"h": ops.tanh(ops.matmul(c["h"], P64)) + c["b"], "b": c["b"] * 0.9}
    out = ops.ForiLoop()(0, 3, body, {"h": x, "b": x.sum()}, unroll=False)
    return out["h"].sum() + out["b"]


def _np_cond(x, y):
    return (np.sin(x) * y).sum() if x.sum() > 0 else (x * x - y).sum()


def _np_fori(x, w):
    for i in range(4):
        x = np.tanh(x * w + i)
    return x.sum()


def _np_scan(xs, h, p=None):
    p = P64.asnumpy() if p is None else p
    total = 0.0
    for x in xs:
        h = np.tanh(h @ p + x)
        total += (h * h).sum()
    return h.sum() + total


def _np_scan_list(a, b):
    c, ys = np.ones(2), []
    for x in (a, b, a):
        ys.append(np.exp(c))
        c = c * x + 1
    return c.sum() + ys[1].sum() * 2


def _np_nested(x, w):
    for _ in range(3):
        d = x
        for _ in range(2):
            d = np.sin(d * w) + x
        x = d * 0.5 if d.sum() > 0 else d * d
    return x.sum()


def _np_dict(x, p=None):
    p = P64.asnumpy() if p is None else p
    h, b = x, x.sum()
    for _ in range(3):
        h, b = np.tanh(h @ p) + b, b * 0.9
    return h.sum() + b


def _g_passed_through_branch(x):
    """Carries b and d swap places every step and b is otherwise only passed on by a branch
    (a yield nested in the body): the backward still needs b's value at each step."""
    def body(i, c):
        a, b, d = c
        picked = ops.cond(i < 2, lambda u, v: v, lambda u, v: u, a, b)
        return ops.sin(picked) * a, d, b
    return ops.ForiLoop()(0, 4, body, (x, x * 2.0, x - 1.0), unroll=False)[0].sum()


def _np_passed_through_branch(x):
    a, b, d = x, 2 * x, x - 1
    for i in range(4):
        a, b, d = np.sin(b if i < 2 else a) * a, d, b
    return a.sum()


GRADS = [
    ("cond_true", _g_cond, _np_cond, [np.abs(f64(3)), f64(3)]),
    ("cond_false", _g_cond, _np_cond, [-np.abs(f64(3)), f64(3)]),
    ("fori", _g_fori, _np_fori, [f64(3), f64(3)]),
    ("scan_tensor_parameter", _g_scan, _np_scan, [f64(4, 2, 3), f64(2, 3)]),
    ("scan_list", _g_scan_list, _np_scan_list, [f64(2), f64(2)]),
    ("nested_with_cond", _g_nested, _np_nested, [f64(3), f64(3)]),
    ("dict_carry_parameter", _g_dict, _np_dict, [f64(2, 3)]),
    ("carry_passed_through_branch", _g_passed_through_branch, _np_passed_through_branch,
     [f64(3)]),
]


@pytest.mark.parametrize("name,fn,ref,inputs", GRADS, ids=[g[0] for g in GRADS])
def test_gradient(name, fn, ref, inputs, mode):
    grads = ms.grad(fn, tuple(range(len(inputs))))(*[T(a) for a in inputs])
    grads = grads if isinstance(grads, tuple) else (grads,)
    for k, g in enumerate(grads):
        assert g.dtype == ms.float64
        np.testing.assert_allclose(g.asnumpy(), central(ref, inputs, k), rtol=1e-6, atol=1e-8,
                                   err_msg=f"gradient of input {k}")


@pytest.mark.parametrize("name,fn,ref,uses", [
    ("scan", _g_scan, _np_scan, [f64(4, 2, 3), f64(2, 3)]),
    ("dict_carry", _g_dict, _np_dict, [f64(2, 3)])], ids=["scan", "dict_carry"])
def test_gradient_of_closed_over_parameter(name, fn, ref, uses, mode):
    """The Parameter the body reads from above gets the gradients of every iteration."""
    got = ms.grad(fn, None, [P64])(*[T(a) for a in uses])[0].asnumpy()
    want = central(lambda p: ref(*uses, p=p), [P64.asnumpy().copy()], 0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_second_order(mode):
    """Grad of grad through a loop (the gradient's own loops are differentiated again)."""
    def f(x):
        return ops.ForiLoop()(0, 3, lambda i, c: ops.sin(c) * 1.3 + c * c * 0.1, x,
                              unroll=False).sum()

    def np_f(x):
        for _ in range(3):
            x = np.sin(x) * 1.3 + x * x * 0.1
        return x.sum()
    g1 = ms.grad(f)
    g2 = ms.grad(lambda x: g1(x).sum())
    x = f64(3)
    np.testing.assert_allclose(g1(T(x)).asnumpy(), central(np_f, [x], 0), rtol=1e-6, atol=1e-8)
    want = central(lambda v: central(np_f, [v], 0, eps=1e-5).sum(), [x], 0, eps=1e-4)
    np.testing.assert_allclose(g2(T(x)).asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_second_order_through_scan_and_cond(mode):
    def f(xs, h):
        def step(c, x):
            c = ops.tanh(c * x + ops.cond(c.sum() > 0, lambda a: a * a, ops.sin, c))
            return c, c.sum()
        h, ys = ops.Scan()(step, h, xs, unroll=False)
        return h.sum() + (ys * ys).sum()

    def np_f(xs, h):
        total = 0.0
        for x in xs:
            h = np.tanh(h * x + (h * h if h.sum() > 0 else np.sin(h)))
            total += h.sum() ** 2
        return h.sum() + total
    xs, h = f64(4, 3), np.abs(f64(3))
    g1 = ms.grad(f, (0, 1))
    got = ms.grad(lambda a, b: g1(a, b)[1].sum(), 0)(T(xs), T(h)).asnumpy()
    want = central(lambda a, b: central(np_f, [a, b], 1, 1e-5).sum(), [xs, h], 0, 1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_pynative_gradients_equal_graph_mode():
    x, w = f64(3), f64(3)
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = ms.grad(_g_nested, (0, 1))(T(x), T(w))
    ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = ms.grad(_g_nested, (0, 1))(T(x), T(w))
    for a, b in zip(graph, eager):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("which", ["while", "tensor_bounds"])
def test_forward_only_loops_refuse_gradients(which, mode):
    def f(x, n):
        if which == "while":
            return ops.WhileLoop()(lambda c: c.sum() < 10.0, lambda c: c * 2.0, x).sum()
        return ops.ForiLoop()(0, n, lambda i, c: c * 2.0, x).sum()
    x, n = T(np.ones(3)), T(np.array(3))
    assert f(x, n).asnumpy() > 0  # forward is fine
    with pytest.raises(CompileError) as info:
        ms.grad(f)(x, n)
    message = str(info.value)
    api = "WhileLoop" if which == "while" else "ForiLoop"
    assert f"'{api}'" in message and "cannot be differentiated" in message
    assert "Use ForiLoop with int bounds or Scan" in message
    assert re.search(r"test_control_flow\.py:\d+", message)  # at the user's line


# ------------------------------------------------------------------ the IR

def _text(fn, *args, stage="ms", debug_info=False):
    return ms.jit(fn).lower(*[T(a) for a in args]).as_text(stage, debug_info=debug_info)


def test_ms_stage_holds_one_loop_with_the_body_traced_once():
    text = _text(lambda x: ops.ForiLoop()(0, 1000, lambda i, c: ops.sin(c) + 1.0, x,
                                          unroll=False), f32(3), debug_info=True)
    assert text.count("scf.for") == 1 and text.count('"ms.sin"') == 1
    assert 'ms.api = "ForiLoop"' in text
    assert re.search(r"loc\(\"[^\"]*test_control_flow\.py\":\d+", text)  # Python locations


@pytest.mark.parametrize("fn,op,api", [
    (lambda x: ops.WhileLoop()(lambda c: c.sum() < 3.0, lambda c: c + 1.0, x), "scf.while",
     "WhileLoop"),
    (lambda x: ops.cond(x.sum() > 0, ops.exp, ops.neg, x), "scf.if", "cond"),
    (lambda x: ops.Scan()(lambda c, v: (c + v, c), x[0], x, unroll=False), "scf.for", "Scan"),
])
def test_each_op_is_one_region_op(fn, op, api):
    text = _text(fn, f32(4, 3))
    assert text.count(op) == 1 and f'ms.api = "{api}"' in text


def test_unrolled_loop_has_no_region():
    text = _text(lambda x: ops.ForiLoop()(0, 3, lambda i, c: ops.sin(c), x), f32(3))
    assert "scf.for" not in text and text.count('"ms.sin"') == 3


def test_bodies_fuse_inside_the_loop():
    text = _text(lambda x: ops.ForiLoop()(0, 4, lambda i, c: ops.tanh(c * 2.0 + 1.0) * c, x,
                                          unroll=False), f32(8), stage="ms-opt")
    body = text[text.index("scf.for"):]
    assert '"ms.fused"' in body.split("scf.yield")[0]


def test_cpu_artifact_runs_control_flow_without_the_compiler(tmp_path):
    import mscc.runtime
    body = lambda i, c: ops.cond(c.sum() > 0, lambda a: a * 0.5, lambda a: a + 1.0, c)  # noqa
    f = ms.jit(lambda x: ops.ForiLoop()(0, 4, body, x, unroll=False))
    x = np.array([1.0, -3.0, 0.5], np.float32)
    path = f.lower(T(x)).compile().save(str(tmp_path / "loop.msx"))
    got, = mscc.runtime.load(path)(x)
    np.testing.assert_array_equal(got, f(T(x)).asnumpy())


def test_cuda_compiles_control_flow_into_plan_nodes():
    """On CUDA each region is its own function (passes/gpu_control.py): the entry calls a
    declaration describing the loop; test_cuda_control_flow.py runs the plans."""
    f = ms.jit(lambda x: ops.ForiLoop()(0, 3, lambda i, c: c * 2.0, x, unroll=False),
               target="cuda")
    text = f.lower(T(f32(3))).as_text("gpu")
    assert "scf.for" not in text.split("gpu.module")[0]
    assert re.search(r"func.func @\w+__for\d+_body", text) and '\\22kind\\22: \\22for' in text


# ------------------------------------------------------------------ mistakes

P32 = ms.Parameter(T(f32(3)), name="cf_p32")

MISTAKES = [
    ("shape", lambda x: ops.ForiLoop()(0, 3, lambda i, c: ops.concat((c, c)), x, unroll=False),
     ValueError, r"For 'ForiLoop', loop_func changed init_val from float32 of shape \(3,\) to "
                 r"float32 of shape \(6,\): each carry keeps its shape and dtype"),
    ("dtype", lambda x: ops.WhileLoop()(lambda c: c[0].sum() < 100.0,
                                        lambda c: (c[0] * 2.0, c[1] + 0.5), (x + 1.0, 0)),
     ValueError, r"For 'WhileLoop', loop_func changed init_val\[1\] from int64 of shape \(\) to "
                 r"float32 of shape \(\)"),
    ("structure", lambda x: ops.ForiLoop()(0, 3, lambda i, c: (c, c), x),
     ValueError, r"loop_func returned a tuple of 2, but init_val is a Tensor: the structure"),
    ("not_callable", lambda x: ops.WhileLoop()(3, lambda c: c, x),
     TypeError, r"For 'WhileLoop', cond_func must be a function, got int"),
    ("assign", lambda x: ops.ForiLoop()(0, 2, lambda i, c: ops.assign(P32, c), x, unroll=False),
     TypeError, r"For 'ForiLoop', loop_func assigns the Parameter 'cf_p32': the bodies of loops "
                r"and conditionals must not have side effects"),
    ("scan_pair", lambda x: ops.Scan()(lambda c, v: c, x, None, length=2, unroll=False),
     ValueError, r"For 'Scan', loop_func must return a pair \(carry, y\), got a Tensor"),
    ("float_bound", lambda x: ops.ForiLoop()(0, 2.5, lambda i, c: c, x),
     TypeError, r"For 'ForiLoop', upper must be an int or an integer Tensor, got float"),
    ("scan_length", lambda x: ops.Scan()(lambda c, v: (c, v), x, [x, x], length=3),
     ValueError, r"For 'Scan', length 3 differs from the 2 elements of xs"),
    ("carry_type", lambda x: ops.ForiLoop()(0, 2, lambda i, c: c, ("text", x)),
     TypeError, r"For 'ForiLoop', init_val\[0\] is a str; carries are Tensors, Python numbers"),
]


@pytest.mark.parametrize("name,fn,kind,message", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_mistake(name, fn, kind, message, mode):
    f = ms.jit(fn) if mode == ms.GRAPH_MODE else fn
    with pytest.raises(kind, match=message) as info:
        f(T(f32(3)))
    assert re.search(r"\(at [^()]*test_control_flow\.py:\d+\)$", str(info.value))


def test_branches_of_different_types():
    f = ms.jit(lambda x: ops.cond(x.sum() > 0, lambda a: a, lambda a: a.sum(), x))
    with pytest.raises(ValueError, match=r"For 'cond', true_fn returns float32 of shape \(3,\) "
                                         r"for the result and false_fn float32 of shape \(\)"):
        f(T(f32(3)))


def test_tensor_escaping_a_body():
    kept = []

    def body(i, c):
        kept.append(c * 2.0)
        return c

    @ms.jit
    def f(x):
        ops.ForiLoop()(0, 3, body, x, unroll=False)
        return kept[0]
    with pytest.raises(ValueError, match=r"For 'ForiLoop', a Tensor computed inside its "
                                         r"loop_func \(called at .*\) was used outside it"):
        f(T(f32(3)))
