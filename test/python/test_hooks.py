"""ops.HookBackward and Cell forward/backward hooks in PYNATIVE_MODE (pyfront/hooks.py):
what the hooks see, what their return values change, handles, the graph-mode errors, and the
segmented backward against the whole-recording gradient and finite differences."""
import numpy as np
import pytest

import mscc as ms
from mscc import nn, ops
from mstest import finite_differences

rng = np.random.default_rng(19)


@pytest.fixture(autouse=True)
def pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def t64(a):
    return ms.Tensor(np.asarray(a, dtype=np.float64))


def close(got, want, tol=1e-10):
    np.testing.assert_allclose(np.asarray(got.asnumpy() if isinstance(got, ms.Tensor) else got),
                               want, rtol=tol, atol=tol)


class Mlp(nn.Cell):
    """dense1 -> tanh -> dense2, float64, seeded weights (two instances are equal)."""

    def __init__(self, seed=0):
        super().__init__()
        r = np.random.default_rng(seed)
        self.dense1 = nn.Dense(3, 4, weight_init=t64(r.standard_normal((4, 3))),
                               bias_init=t64(r.standard_normal(4)), dtype=ms.float64)
        self.dense2 = nn.Dense(4, 2, weight_init=t64(r.standard_normal((2, 4))),
                               bias_init=t64(r.standard_normal(2)), dtype=ms.float64)

    def construct(self, x):
        return self.dense2(ops.tanh(self.dense1(x)))


def mlp_numpy(net, x):
    """(hidden pre-activation, hidden, output) of Mlp in numpy."""
    w1, b1 = net.dense1.weight.asnumpy(), net.dense1.bias.asnumpy()
    w2, b2 = net.dense2.weight.asnumpy(), net.dense2.bias.asnumpy()
    pre = x @ w1.T + b1
    h = np.tanh(pre)
    return pre, h, h @ w2.T + b2


# ------------------------------------------------------------------ HookBackward

def _scalar_case():
    """MindSpore's documented example: z = hook(x * y) * y at x=1, y=2."""
    def fn(hook):
        return lambda x, y: hook(x * y) * y
    return fn, (1.0, 2.0)


HOOK_CASES = [
    # (id, hook return given the grads it sees, the grad it must see, expected (dx, dy))
    ("records", lambda g: None, [2.0], (4.0, 4.0)),
    # replaced by 2*g = 4: dx = 4*y = 8, dy = 4*x + x*y = 6
    ("tuple", lambda g: (g[0] * 2,), [2.0], (8.0, 6.0)),
    ("tensor", lambda g: g[0] * 0, [2.0], (0.0, 2.0)),
    ("numpy", lambda g: np.array(3.0), [2.0], (6.0, 5.0)),
]


@pytest.mark.parametrize("ret, want_seen, want", [c[1:] for c in HOOK_CASES],
                         ids=[c[0] for c in HOOK_CASES])
def test_hook_backward_sees_and_replaces_the_gradient(ret, want_seen, want):
    seen = []

    def hook_fn(grads):
        seen.append(grads)
        return ret(grads)
    fn, (x, y) = _scalar_case()
    grads = ms.grad(fn(ops.HookBackward(hook_fn)), grad_position=(0, 1))(t64(x), t64(y))
    assert len(seen) == 1 and isinstance(seen[0], tuple)  # MindSpore passes a tuple
    close(seen[0][0], want_seen[0])
    close(grads[0], want[0])
    close(grads[1], want[1])


def test_hook_backward_on_two_vector_inputs_matches_numpy():
    """hook(a, b) on a = x * w, b = exp(x): the loss sum(a * b) sends b and a into them."""
    x, w = rng.standard_normal(5), rng.standard_normal(5)
    seen = []

    def hook_fn(grads):
        seen.append([g.asnumpy() for g in grads])
        return grads[0] * 3, grads[1]
    hook = ops.HookBackward(hook_fn)

    def fn(x):
        a, b = hook(x * t64(w), ops.exp(x))
        return ops.reduce_sum(a * b)
    gx = ms.grad(fn)(t64(x))
    a, b = x * w, np.exp(x)
    close(seen[0][0], b)
    close(seen[0][1], a)
    close(gx, 3 * b * w + a * np.exp(x))


def test_hook_backward_forward_is_the_identity_without_a_gradient():
    calls = []
    hook = ops.HookBackward(lambda g: calls.append(g))
    x = t64([1.0, 2.0])
    out = hook(x)
    assert out is x and calls == []
    a, b = hook(x, x * 2)
    close(b, [2.0, 4.0])


def test_hook_backward_bad_arguments_and_returns():
    with pytest.raises(TypeError, match="HookBackward.*hook_fn must be a Python function"):
        ops.HookBackward(3)
    with pytest.raises(TypeError, match="HookBackward.*input #0 must be a Tensor"):
        ops.HookBackward(print)(np.ones(2))
    fn, (x, y) = _scalar_case()
    for ret, message in [((t64(1.0), t64(2.0)), "tuple of 1 gradient"),
                         ((t64([1.0, 2.0]),), "shape \\(2,\\) for a value of shape \\(\\)")]:
        hook = ops.HookBackward(lambda g, ret=ret: ret)
        with pytest.raises(ValueError, match=f"HookBackward.*{message}"):
            ms.grad(fn(hook))(t64(x), t64(y))


def test_hook_backward_with_cell_id_warns_and_does_not_run_as_in_mindspore():
    calls = []
    with pytest.warns(UserWarning, match="cell_id"):
        hook = ops.HookBackward(lambda g: calls.append(g) or (g[0] * 0,), cell_id="net")
    fn, (x, y) = _scalar_case()
    grads = ms.grad(fn(hook), grad_position=(0, 1))(t64(x), t64(y))
    assert calls == []
    close(grads[0], 4.0)


# ------------------------------------------------------------------ Cell backward hooks

def test_backward_hook_sees_grad_input_and_grad_output_of_a_dense_layer():
    net = Mlp()
    x = rng.standard_normal((5, 3))
    seen = []
    net.dense2.register_backward_hook(lambda cell, gi, go: seen.append((cell, gi, go)))
    gx, gw = ms.grad(lambda x: ops.reduce_sum(net(x) ** 2), 0,
                     weights=net.trainable_params())(t64(x))
    _, h, out = mlp_numpy(net, x)
    (cell, grad_input, grad_output), = seen
    assert cell is net.dense2 and len(grad_input) == 1 and len(grad_output) == 1
    assert grad_input[0].shape == (5, 4) and grad_output[0].shape == (5, 2)
    close(grad_output[0], 2 * out)  # d sum(out^2) / d out
    close(grad_input[0], 2 * out @ net.dense2.weight.asnumpy())


def _mlp_gradients(x, scale_dense2_input=None):
    """Gradients of sum(Mlp(x)^2) w.r.t. x and the weights, in numpy; the cotangent of
    dense2's input scaled by `scale_dense2_input` (what a replacing hook does)."""
    net = Mlp()
    w1, w2 = net.dense1.weight.asnumpy(), net.dense2.weight.asnumpy()
    pre, h, out = mlp_numpy(net, x)
    d_out = 2 * out
    d_h = d_out @ w2 * (scale_dense2_input or 1.0)
    d_pre = d_h * (1 - h ** 2)
    return d_pre @ w1, [d_pre.T @ x, d_pre.sum(0), d_out.T @ h, d_out.sum(0)]


REPLACE_CASES = [
    ("none", lambda gi: None, None),
    ("half", lambda gi: (gi[0] * 0.5,), 0.5),
    ("list", lambda gi: [gi[0] * -2.0], -2.0),
]


@pytest.mark.parametrize("ret, scale", [c[1:] for c in REPLACE_CASES],
                         ids=[c[0] for c in REPLACE_CASES])
def test_backward_hook_replacement_changes_upstream_gradients_only(ret, scale):
    """A replaced grad_input of dense2 reaches dense1 and x; dense2's own weight gradients
    are those of the unchanged grad_output (MindSpore's test_pynative_hook_base_line)."""
    net = Mlp()
    net.dense2.register_backward_hook(lambda cell, gi, go: ret(gi))
    x = rng.standard_normal((5, 3))
    gx, gw = ms.grad(lambda x: ops.reduce_sum(net(x) ** 2), 0,
                     weights=net.trainable_params())(t64(x))
    want_x, want_w = _mlp_gradients(x, scale)
    close(gx, want_x)
    for g, w in zip(gw, want_w):
        close(g, w)


def test_backward_hooks_run_in_registration_order_and_the_last_replacement_wins():
    """MindSpore's test_pynative_backward_hook case 3: hooks returning (2, 3) then (5, 6)."""
    class Mul(nn.Cell):
        def construct(self, x, y):
            return x * y
    mul = Mul()
    order = []
    mul.register_backward_hook(lambda c, gi, go: order.append(1) or (t64([2.0]), t64([3.0])))
    handle = mul.register_backward_hook(
        lambda c, gi, go: order.append((2, float(gi[0].asnumpy()[0]))) or (t64([5.0]),
                                                                           t64([6.0])))
    g = ms.GradOperation(get_all=True)(lambda x, y: mul(x, y) * 2)
    gx, gy = g(t64([1.0]), t64([1.0]))
    assert order == [1, (2, 2.0)]  # the second hook sees the first one's replacement
    close(gx, [5.0])
    close(gy, [6.0])
    handle.remove()
    handle.remove()  # (twice is harmless)
    gx, gy = g(t64([1.0]), t64([1.0]))
    close(gx, [2.0])
    close(gy, [3.0])


def test_backward_hook_of_a_cell_called_twice_runs_per_call():
    """MindSpore's MsMultiInputNet: one Cell called twice has two boundaries."""
    class Mul(nn.Cell):
        def construct(self, x, y):
            return x * y
    mul = Mul()
    seen = []
    mul.register_backward_hook(lambda c, gi, go: seen.append([g.asnumpy() for g in go]))
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    gx = ms.grad(lambda x, y: ops.reduce_sum(mul(mul(x, y), x)))(t64(x), t64(y))
    assert len(seen) == 2
    close(seen[0][0], np.ones(3))   # the outer call first (the backward runs in reverse)
    close(seen[1][0], x)            # d sum(a * x) / d a, a the inner call's output
    close(gx, 2 * x * y)


def test_backward_hook_wrong_return_names_the_cell():
    net = Mlp()
    net.dense2.register_backward_hook(lambda c, gi, go: (gi[0], gi[0]))
    with pytest.raises(ValueError, match="nn.Dense.*backward hook must return None or a tuple "
                                         "of 1 gradient"):
        ms.grad(lambda x: ops.reduce_sum(net(x)))(t64(np.ones((2, 3))))


# ------------------------------------------------------------------ forward hooks

def test_forward_pre_hook_and_forward_hook_change_inputs_outputs_and_gradients():
    """MindSpore's tutorial: ops a forward hook adds take part in the backward."""
    net, ref = Mlp(), Mlp()
    x = rng.standard_normal((2, 3))
    seen = []

    def pre(cell, args):
        seen.append(("pre", cell, len(args)))
        return args[0] * 2  # a single value: wrapped into the args tuple

    def post(cell, args, output):
        seen.append(("post", cell, args[0].shape))
        return output + output
    h1 = net.dense1.register_forward_pre_hook(pre)
    h2 = net.dense2.register_forward_hook(post)
    close(net(t64(x)), 2 * ref(t64(2 * x)).asnumpy())
    assert seen == [("pre", net.dense1, 1), ("post", net.dense2, (2, 4))]
    loss = lambda n: lambda x: ops.reduce_sum(n(x) ** 2)  # noqa: E731
    close(ms.grad(loss(net))(t64(x)), ms.grad(lambda x: 4 * loss(ref)(2 * x))(t64(x)))
    h1.remove()
    h2.remove()
    assert not net.dense1._hooks and not net.dense2._hooks
    close(net(t64(x)), ref(t64(x)).asnumpy())


def test_forward_hooks_with_kwargs():
    net = Mlp()
    x = t64(rng.standard_normal((2, 3)))
    seen = []
    net.dense1.register_forward_pre_hook(
        lambda cell, args, kwargs: seen.append(kwargs) or ((args[0] * 0,), {}),
        with_kwargs=True)
    net.dense1.register_forward_hook(
        lambda cell, args, kwargs, out: seen.append(("post", kwargs)), with_kwargs=True)
    close(net.dense1(x), np.broadcast_to(net.dense1.bias.asnumpy(), (2, 4)))
    assert seen == [{}, ("post", {})]
    net.dense1.register_forward_pre_hook(lambda c, a, k: a, with_kwargs=True)
    with pytest.raises(RuntimeError, match="must return None or \\(args, kwargs\\)"):
        net.dense1(x)


REMOVE_CASES = [
    ("forward_pre", lambda cell, hook: cell.register_forward_pre_hook(
        lambda c, args: hook() or (args[0] * 0,))),
    ("forward", lambda cell, hook: cell.register_forward_hook(
        lambda c, args, out: hook() or out * 0)),
    ("backward", lambda cell, hook: cell.register_backward_hook(
        lambda c, gi, go: hook() or (gi[0] * 0,))),
    ("HookBackward", None),
]


@pytest.mark.parametrize("register", [c[1] for c in REMOVE_CASES],
                         ids=[c[0] for c in REMOVE_CASES])
def test_remove_removes_each_kind_of_hook(register):
    net = Mlp()
    calls = []
    x = t64(rng.standard_normal((2, 3)))
    want = ms.grad(lambda x: ops.reduce_sum(net(x)))(x).asnumpy()
    if register is None:  # a HookBackward is removed by not calling it
        hook = ops.HookBackward(lambda g: calls.append(1) or (g[0] * 0,))
        grad = ms.grad(lambda x: ops.reduce_sum(net(hook(x))))
        assert float(np.abs(grad(x).asnumpy()).max()) == 0 and calls == [1]
        return
    handle = register(net.dense1, lambda: calls.append(1))
    grad = ms.grad(lambda x: ops.reduce_sum(net(x)))
    assert not np.allclose(grad(x).asnumpy(), want) and calls == [1]
    handle.remove()
    close(grad(x), want)
    assert calls == [1]


# ------------------------------------------------------------------ modes

def _hooked_cell(kind):
    net = Mlp()
    getattr(net.dense1, f"register_{kind}_hook")(
        (lambda c, a: None) if kind == "forward_pre" else
        (lambda c, a, o: None))
    return net


MODE_CASES = [
    ("HookBackward-graph", "graph", lambda: (lambda x: ops.HookBackward(print)(x) * 2),
     "HookBackward.*only in PYNATIVE_MODE"),
    ("HookBackward-jit", "jit", lambda: (lambda x: ops.HookBackward(print)(x) * 2),
     "HookBackward.*only in PYNATIVE_MODE"),
    ("backward-hook-graph", "graph", lambda: _hooked_cell("backward"),
     "nn.Dense.*register_backward_hook.*only in PYNATIVE_MODE"),
    ("forward-hook-jit", "jit", lambda: _hooked_cell("forward"),
     "nn.Dense.*register_forward_hook.*only in PYNATIVE_MODE"),
    ("forward-pre-hook-graph", "graph", lambda: _hooked_cell("forward_pre"),
     "nn.Dense.*register_forward_pre_hook.*only in PYNATIVE_MODE"),
]


@pytest.mark.parametrize("how, make, message", [c[1:] for c in MODE_CASES],
                         ids=[c[0] for c in MODE_CASES])
def test_hooks_in_graph_mode_or_under_jit_raise(how, make, message):
    fn = make()
    x = t64(np.ones((2, 3)))
    with pytest.raises(RuntimeError, match=message):
        if how == "jit":
            ms.jit(lambda x: fn(x))(x)
        else:
            ms.set_context(mode=ms.GRAPH_MODE)
            if isinstance(fn, nn.Cell):
                fn(x)
            else:
                ms.grad(lambda x: ops.reduce_sum(fn(x)))(x)


def test_registering_a_hook_while_compiling_is_an_error():
    net = Mlp()

    @ms.jit
    def step(x):
        net.dense1.register_forward_hook(lambda c, a, o: None)
        return net(x)
    with pytest.raises(RuntimeError, match="register_forward_hook.*cannot be registered while"):
        step(t64(np.ones((2, 3))))


def test_a_cell_whose_hooks_were_removed_compiles_again():
    net = _hooked_cell("backward")
    handle = net.dense1.register_forward_hook(lambda c, a, o: None)
    net.dense1._hooks.backward.clear()
    handle.remove()
    ms.set_context(mode=ms.GRAPH_MODE)
    x = t64(rng.standard_normal((2, 3)))
    close(net(x), mlp_numpy(net, x.asnumpy())[2])


# ------------------------------------------------------------------ the segmented backward

def _all_hooks(net, calls):
    """No-op hooks of every kind on net's layers, plus a HookBackward in construct."""
    for cell in (net.dense1, net.dense2):
        cell.register_forward_pre_hook(lambda c, a: calls.append("pre"))
        cell.register_forward_hook(lambda c, a, o: calls.append("post"))
        cell.register_backward_hook(lambda c, gi, go: calls.append("back"))
    return ops.HookBackward(lambda g: calls.append("hook"))


def test_no_op_hooks_give_the_gradients_of_no_hooks_and_offinite_differences():
    hooked, plain = Mlp(), Mlp()
    calls = []
    hook = _all_hooks(hooked, calls)

    def loss(net, h):
        return lambda x: ops.reduce_sum(ops.exp(h(net(x)) * 0.5))
    x = rng.standard_normal((4, 3))
    gx, gw = ms.grad(loss(hooked, hook), 0, weights=hooked.trainable_params())(t64(x))
    assert sorted(set(calls)) == ["back", "hook", "post", "pre"]
    px, pw = ms.grad(loss(plain, lambda v: v), 0, weights=plain.trainable_params())(t64(x))
    close(gx, px.asnumpy(), 1e-12)
    for a, b in zip(gw, pw):
        close(a, b.asnumpy(), 1e-12)
    f = lambda v: float(np.exp(mlp_numpy(plain, v)[2] * 0.5).sum())  # noqa: E731
    close(gx, finite_differences(f, x), 1e-6)
    w = plain.dense1.weight

    def f_w(v):
        w.set_data(v)
        return float(loss(plain, lambda t: t)(t64(x)).asnumpy())
    w0 = w.asnumpy().copy()
    fd = finite_differences(f_w, w0)
    w.set_data(w0)
    close(gw[0], fd, 1e-6)


GRAD_APIS = [
    ("grad_position", lambda f, net: ms.grad(f, grad_position=(0, 1))),
    ("weights_only", lambda f, net: ms.grad(f, None, weights=net.trainable_params())),
    ("value_and_grad", lambda f, net: ms.value_and_grad(f, 1, weights=net.trainable_params())),
    ("has_aux", lambda f, net: ms.grad(lambda x, y: (f(x, y), x * 2), 0, has_aux=True)),
    ("get_all", lambda f, net: ms.GradOperation(get_all=True)(f)),
    ("sens_param", lambda f, net: ms.GradOperation(get_all=True, sens_param=True)(
        lambda x, y: net(x) * y)),
]


def _flat(result):
    return [r.asnumpy() for r in ms.pyfront.pytree.flatten(result)[0]]


@pytest.mark.parametrize("api", [c[1] for c in GRAD_APIS], ids=[c[0] for c in GRAD_APIS])
def test_gradient_apis_with_no_op_hooks_equal_those_without(api):
    x, y = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))
    results = []
    for with_hooks in (True, False):
        net = Mlp()
        hook = _all_hooks(net, []) if with_hooks else (lambda v: v)
        f = lambda x, y: ops.reduce_sum(hook(net(x)) * y)  # noqa: E731
        args = (t64(x), t64(y)) + ((t64(np.ones((3, 2))),) if api is GRAD_APIS[-1][1] else ())
        results.append(_flat(api(f, net)(*args)))
    assert len(results[0]) == len(results[1]) > 0
    for a, b in zip(*results):
        close(a, b, 1e-12)


def test_segments_are_compiled_once_and_hooks_run_every_call():
    net = Mlp()
    calls = []
    net.dense2.register_backward_hook(lambda c, gi, go: calls.append(1))
    grad = ms.grad(lambda x: ops.reduce_sum(net(x)))
    x = t64(rng.standard_normal((2, 3)))
    first = grad(x).asnumpy()
    for _ in range(2):
        close(grad(x), first)
    state = grad._pynative
    assert (state.records, state.reuses, len(calls)) == (1, 2, 3)


def test_a_jit_function_inside_a_hooked_gradient_gets_its_weight_gradients():
    """A compiled call reads a Parameter that the recording does not see: the segment holding
    it is differentiated w.r.t. the weights too."""
    w = ms.Parameter(rng.standard_normal(3), name="w_hooks")
    jitted = ms.jit(lambda x: x * w)
    hook = ops.HookBackward(lambda g: (g[0] * 10,))
    x = rng.standard_normal(3)
    gx, (gw,) = ms.grad(lambda x: ops.reduce_sum(hook(jitted(x)) * x), 0,
                        weights=[w])(t64(x))
    wv = w.asnumpy()
    close(gx, 10 * x * wv + x * wv)  # through the hook (scaled), and the direct use of x
    close(gw, 10 * x * x)


def test_batchnorm_statistics_are_written_once_with_hooks():
    """BatchNorm writes its moving statistics during the eager run (ops.assign): the hooked
    backward must neither write them again nor read them after the write."""
    results = []
    for with_hook in (True, False):
        bn = nn.BatchNorm1d(3, dtype=ms.float64) if _bn_takes_dtype() else nn.BatchNorm1d(3)
        bn.set_train(True)
        dense = Mlp().dense1
        if with_hook:
            dense.register_backward_hook(lambda c, gi, go: None)
        x = ms.Tensor(rng.standard_normal((6, 3)).astype(bn.moving_mean.dtype.np)) \
            if not results else results[0][0]
        g = ms.grad(lambda x: ops.reduce_sum(ops.tanh(dense(ops.cast(bn(x), ms.float64)))))(x)
        results.append((x, g.asnumpy(), bn.moving_mean.asnumpy().copy()))
    close(results[0][1], results[1][1], 1e-6)
    close(results[0][2], results[1][2], 1e-12)
    assert float(np.abs(results[0][2]).max()) > 0  # the statistics did move


def _bn_takes_dtype():
    import inspect
    return "dtype" in inspect.signature(nn.BatchNorm1d.__init__).parameters


def test_cells_without_hooks_keep_the_whole_recording_path():
    net = Mlp()
    grad = ms.grad(lambda x: ops.reduce_sum(net(x)))
    grad(t64(np.ones((2, 3))))
    assert net._hooks is None
    (compiled,) = grad._pynative._cache.values()
    assert isinstance(compiled, ms.jit(lambda x: x).__class__)  # not a segmented plan


def test_a_compiled_call_before_a_write_reads_the_value_before_it():
    """A jit function reads the Parameter c, which the run then writes (ops.assign): its
    segment's VJP must see c as it was (1), and c must end as the run left it (2)."""
    c = ms.Parameter(np.ones(()), name="c_hooks", requires_grad=False)
    jitted = ms.jit(lambda x: x * c)
    hook = ops.HookBackward(lambda g: None)

    def f(x):
        y = jitted(x)
        ops.assign(c, c + 1.0)
        return ops.reduce_sum(hook(y) * c)  # c reads 2 here
    g = ms.grad(f)(t64(np.ones(3)))
    close(g, [2.0] * 3)  # d/dx (x * 1) * 2
    assert float(c.asnumpy()) == 2.0


def test_higher_order_gradients_through_hooks_are_refused():
    """The segments' inputs come from the inner gradient's eager run: an outer recording
    would take them for constants (a wrong second derivative), so it is an error."""
    hook = ops.HookBackward(lambda g: None)
    inner = ms.grad(lambda x: ops.reduce_sum(hook(x * x) * x))
    x = t64([1.0, 2.0])
    close(inner(x), [3.0, 12.0])
    with pytest.raises(RuntimeError, match="differentiated again"):
        ms.grad(lambda x: ops.reduce_sum(inner(x)))(x)
