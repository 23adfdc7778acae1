"""The benchmark programs: each as ms IR (built with dialects.builders.build_function/build_op),
as numpy, and as the peers' code: torch (run eager and under torch.compile) and jax (run under
jax.jit), each used only where that framework is installed.

Goals are issue 6's (speed-up over numpy, measured on the 2-core CI machine); they are
reported, never asserted. Programs written with the Python frontend (ms.jit, grad, nn) give
`frontend`, which builds the jit function (its first call, compile included, is timed apart).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Benchmark:
    name: str
    inputs: Callable[[], list]            # fresh input arrays (float32)
    numpy: Callable                        # (*inputs) -> array
    ms: Callable | None = None             # (op, scalar, *args) -> ms value: the ms IR body
    torch: Callable | None = None          # (torch, *tensors) -> tensor; eager and torch.compile
    jax: Callable | None = None            # (jnp, *arrays) -> array(s): what jax.jit compiles
    frontend: Callable | None = None       # (*inputs) -> callable: a jit function of the inputs
    goal: float | None = None              # target speed-up over numpy (issue 6)
    goal_kind: str = "speedup"             # "speedup", or "max_us" for absolute overheads
    needs: str | None = None               # what is missing before it can run
    flops: float = 0.0                     # for GFLOP/s in the report
    rtol: float = 2e-4
    atol: float = 2e-5
    tags: list = field(default_factory=list)
    # How the mscc frontend function is called: "tensors" (positional ms.Tensor arguments) or
    # "numpy" (the numpy arrays themselves). `keywords` names the inputs when every
    # implementation passes them by keyword (the peers' functions take the same names).
    call: str = "tensors"
    keywords: tuple = ()


def _rng():
    return np.random.default_rng(0)


def _f32(*shape, lo=-2.0, hi=2.0):
    return _rng().uniform(lo, hi, shape).astype(np.float32)


SQRT_2_OVER_PI = float(np.sqrt(2 / np.pi))


# ------------------------------------------------------------------ elementwise

def chain_ms(op, scalar, x, a, b):
    t = op("ms.tanh", op("ms.add", op("ms.mul", x, a), b))
    return op("ms.add", op("ms.mul", t, op("ms.sigmoid", x)), op("ms.mul", scalar(0.5), x))


def chain_np(x, a, b):
    return np.tanh(x * a + b) * (1 / (1 + np.exp(-x))) + 0.5 * x


def chain_torch(torch, x, a, b):
    return torch.tanh(x * a + b) * torch.sigmoid(x) + 0.5 * x


def chain_jax(jnp, x, a, b):
    import jax
    return jnp.tanh(x * a + b) * jax.nn.sigmoid(x) + 0.5 * x


def gelu_ms(op, scalar, x):
    cube = op("ms.mul", x, op("ms.mul", x, x))
    inner = op("ms.mul", op("ms.add", x, op("ms.mul", scalar(0.044715), cube)),
               scalar(SQRT_2_OVER_PI))
    return op("ms.mul", op("ms.mul", scalar(0.5), x),
              op("ms.add", scalar(1.0), op("ms.tanh", inner)))


def gelu_np(x):
    return 0.5 * x * (1 + np.tanh(np.float32(SQRT_2_OVER_PI) * (x + np.float32(0.044715) * x ** 3)))


def gelu_torch(torch, x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def gelu_jax(jnp, x):
    import jax
    return jax.nn.gelu(x, approximate=True)


# ------------------------------------------------------------------ normalizations

def softmax_ms(op, scalar, x):
    return op("ms.softmax", x, axis=-1)


def softmax_np(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_jax(jnp, x):
    import jax
    return jax.nn.softmax(x, axis=-1)


def layernorm_ms(op, scalar, x, g, b):
    mean = op("ms.reduce_mean", x, axis=(1,), keep_dims=True)
    d = op("ms.sub", x, mean)
    var = op("ms.reduce_mean", op("ms.mul", d, d), axis=(1,), keep_dims=True)
    rstd = op("ms.rsqrt", op("ms.add", var, scalar(1e-5)))
    return op("ms.add", op("ms.mul", op("ms.mul", d, rstd), g), b)


def layernorm_np(x, g, b):
    mean = x.mean(axis=1, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=1, keepdims=True)
    return d / np.sqrt(var + np.float32(1e-5)) * g + b


def layernorm_torch(torch, x, g, b):
    return torch.nn.functional.layer_norm(x, (x.shape[1],), g, b, eps=1e-5)


def layernorm_jax(jnp, x, g, b):
    """As torch's layer_norm: the biased variance, eps inside the square root."""
    import jax
    mean = x.mean(axis=1, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=1, keepdims=True)
    return d * jax.lax.rsqrt(var + 1e-5) * g + b


# ------------------------------------------------------------------ matmul

def matmul_ms(op, scalar, a, b):
    return op("ms.matmul", a, b, transpose_a=False, transpose_b=False)


def matmul_peer(fw, a, b):  # torch and jax alike
    return a @ b


# ------------------------------------------------------------------ frontend programs

LR = 0.01


def _mlp_inputs(labels=False):
    rng = _rng()
    x = rng.standard_normal((256, 784)).astype(np.float32)
    w1 = (rng.standard_normal((512, 784)) * 0.05).astype(np.float32)
    b1 = np.zeros(512, np.float32)
    w2 = (rng.standard_normal((10, 512)) * 0.05).astype(np.float32)
    b2 = np.zeros(10, np.float32)
    extra = [rng.integers(0, 10, 256).astype(np.int32)] if labels else []
    return [x, w1, b1, w2, b2] + extra


def _jit(fn):
    import mscc as ms
    return ms.jit(fn)


def mlp_forward_np(x, w1, b1, w2, b2):
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def mlp_forward_ms(x, w1, b1, w2, b2):
    from mscc import ops
    return _jit(lambda x, w1, b1, w2, b2: ops.matmul(ops.relu(ops.matmul(x, w1, transpose_b=True)
                                                             + b1), w2, transpose_b=True) + b2)


def mlp_forward_torch(torch, x, w1, b1, w2, b2):
    F = torch.nn.functional
    return F.linear(torch.relu(F.linear(x, w1, b1)), w2, b2)


def mlp_forward_jax(jnp, x, w1, b1, w2, b2):
    return jnp.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def mlp_train_step_torch(torch, x, w1, b1, w2, b2, labels):
    """torch eager with autograd: the same loss and SGD step as mlp_train_step_np."""
    params = [p.detach().requires_grad_() for p in (w1, b1, w2, b2)]
    logits = mlp_forward_torch(torch, x, *params)
    loss = torch.nn.functional.cross_entropy(logits, labels.long())
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        return (loss,) + tuple(p - LR * g for p, g in zip(params, grads))


def mlp_train_step_jax(jnp, x, w1, b1, w2, b2, labels):
    """jax.value_and_grad: the same loss (mean softmax cross-entropy) and SGD step as torch's."""
    import jax

    def loss_fn(params):
        logp = jax.nn.log_softmax(mlp_forward_jax(jnp, x, *params))
        return -jnp.take_along_axis(logp, labels[:, None], axis=1).mean()

    params = (w1, b1, w2, b2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return (loss,) + tuple(p - LR * g for p, g in zip(params, grads))


def mlp_train_step_np(x, w1, b1, w2, b2, labels):
    """Loss and SGD-updated weights: Dense-ReLU-Dense, mean softmax cross-entropy."""
    h = x @ w1.T + b1
    a = np.maximum(h, 0)
    logits = a @ w2.T + b2
    z = logits - logits.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    n = len(x)
    loss = -np.log(p[np.arange(n), labels]).mean()
    d = p
    d[np.arange(n), labels] -= 1
    d /= n
    dh = (d @ w2) * (h > 0)
    return (loss, w1 - LR * (dh.T @ x), b1 - LR * dh.sum(0), w2 - LR * (d.T @ a),
            b2 - LR * d.sum(0))


def mlp_train_step_ms(x, w1, b1, w2, b2, labels):
    """One jit function: forward, loss, gradients (ms.grad) and the SGD update."""
    import mscc as ms
    from mscc import ops

    def loss_fn(x, w1, b1, w2, b2, labels):
        h = ops.relu(ops.matmul(x, w1, transpose_b=True) + b1)
        logits = ops.matmul(h, w2, transpose_b=True) + b2
        onehot = ops.one_hot(labels, 10, 1.0, 0.0)
        return -ops.reduce_mean(ops.reduce_sum(onehot * ops.log_softmax(logits), -1))

    grad_fn = ms.value_and_grad(loss_fn, (1, 2, 3, 4))

    def step(x, w1, b1, w2, b2, labels):
        loss, grads = grad_fn(x, w1, b1, w2, b2, labels)
        return (loss,) + tuple(w - LR * g for w, g in zip((w1, b1, w2, b2), grads))
    return _jit(step)


def _conv_inputs():
    rng = _rng()
    return [rng.standard_normal((64, 16, 28, 28)).astype(np.float32),
            (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32),
            (rng.standard_normal(32) * 0.1).astype(np.float32)]


def conv2d_np(x, w, b):
    """3x3, stride 1, "same" padding, NCHW: a sum over kernel offsets of window products."""
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    h, wd = x.shape[2:]
    y = sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j],
                      optimize=True) for i in range(3) for j in range(3))
    return y + b[None, :, None, None]


def conv2d_torch(torch, x, w, b):
    return torch.nn.functional.conv2d(x, w, b, padding=1)


def conv2d_jax(jnp, x, w, b):
    import jax
    y = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b[None, :, None, None]


def conv2d_ms(x, w, b):
    from mscc import nn
    conv = nn.Conv2d(16, 32, 3, has_bias=True, weight_init=w, bias_init=b)
    return _jit(lambda t, _w, _b: conv(t))  # w and b are the Cell's Parameters


# ------------------------------------------------------------------ call overhead

def add_np(x, y):
    return x + y


def add_peer(fw, x, y):  # torch eager, torch.compile and jax.jit alike
    return x + y


def add_ms(*inputs):
    return _jit(lambda x, y: x + y)


def _add4_inputs():
    return [np.ones(4, np.float32), np.full(4, 2.0, np.float32)]


def _call_row(name, call="tensors", keywords=(), goal=1.5):
    """A cache-hit call of a 4-element add: the time is the call's own cost (in microseconds)."""
    return Benchmark(name, _add4_inputs, add_np, frontend=add_ms, torch=add_peer, jax=add_peer,
                     goal=goal, goal_kind="max_us", call=call, keywords=keywords)


N4M = 4 * 1024 * 1024

BENCHMARKS = [
    Benchmark("elementwise_chain_4M", lambda: [_f32(N4M), _f32(N4M), _f32(N4M)], chain_np,
              ms=chain_ms, torch=chain_torch, jax=chain_jax, goal=8.0),
    Benchmark("gelu_4M", lambda: [_f32(N4M)], gelu_np, ms=gelu_ms, torch=gelu_torch,
              jax=gelu_jax, goal=8.0),
    Benchmark("softmax_4096x1024", lambda: [_f32(4096, 1024, lo=-4, hi=4)], softmax_np,
              ms=softmax_ms, torch=lambda torch, x: torch.softmax(x, -1), jax=softmax_jax,
              goal=10.0),
    Benchmark("layernorm_4096x1024",
              lambda: [_f32(4096, 1024), _f32(1024, lo=0.5, hi=1.5), _f32(1024)],
              layernorm_np, ms=layernorm_ms, torch=layernorm_torch, jax=layernorm_jax, goal=20.0,
              rtol=1e-3, atol=1e-4),
    Benchmark("matmul_512", lambda: [_f32(512, 512), _f32(512, 512)], np.matmul, ms=matmul_ms,
              torch=matmul_peer, jax=matmul_peer, flops=2 * 512 ** 3, rtol=1e-3, atol=1e-3),
    Benchmark("matmul_1024", lambda: [_f32(1024, 1024), _f32(1024, 1024)], np.matmul,
              ms=matmul_ms, torch=matmul_peer, jax=matmul_peer, goal=0.9, flops=2 * 1024 ** 3,
              rtol=1e-3, atol=1e-3),
    # ---- written with the Python frontend
    Benchmark("mlp_forward_784_512_10_b256", lambda: _mlp_inputs(), mlp_forward_np,
              frontend=mlp_forward_ms, torch=mlp_forward_torch, jax=mlp_forward_jax,
              flops=2 * 256 * (784 * 512 + 512 * 10), rtol=1e-3, atol=1e-3),
    Benchmark("mlp_train_step_784_512_10_b256", lambda: _mlp_inputs(labels=True),
              mlp_train_step_np, frontend=mlp_train_step_ms, torch=mlp_train_step_torch,
              jax=mlp_train_step_jax, goal=1.2, flops=6 * 256 * (784 * 512 + 512 * 10), rtol=1e-3,
              atol=1e-4),
    Benchmark("conv2d_64x16x28x28_3x3", _conv_inputs, conv2d_np, frontend=conv2d_ms,
              torch=conv2d_torch, jax=conv2d_jax, flops=2 * 64 * 32 * 28 * 28 * 16 * 9, rtol=1e-4,
              atol=1e-4),
    # ---- call overhead: the same jit function hit in its cache, called three ways
    _call_row("call_add4_tensors"),                                 # f(a, b), ms.Tensor
    _call_row("call_add4_numpy", call="numpy", goal=2.5),           # f(a, b), numpy arrays
    _call_row("call_add4_kwargs", keywords=("x", "y"), goal=2.5),   # f(x=a, y=b), ms.Tensor
]

BY_NAME = {b.name: b for b in BENCHMARKS}
