"""Normalization: training-mode batch normalization as one op, for its gradient.

`ms.batch_norm(x, gamma, beta) {epsilon}` normalizes x (N, C, ...) with the batch's statistics
over every axis but the channel axis 1, as MindSpore's BatchNorm primitive in training:
y = (x - mean) * rsqrt(var + epsilon) * gamma + beta, var biased. (Inference normalizes with
the moving statistics: plain elementwise ops, nothing to gain from an op.)

The op exists for its gradient rule, MindSpore's BatchNormGrad: with xhat = (x - mean) * rstd,

    dbeta = sum(dy), dgamma = sum(dy * xhat),
    dx = gamma * rstd * (dy - (dbeta + xhat * dgamma) / M)      (M elements per channel)

two reductions of the output gradient. Differentiating the composed ops builds four (the
mean's and the variance's paths each sum their own cotangent), and each is a pass over the
whole activation, recomputing its elementwise producers: a ResNet block's training step had
eight such loops for two BatchNorms. After ms-autodiff, ms-expand-composites replaces the
op by its composition (`expand`), so that ms-fuse fuses its elementwise parts with their
neighbours and ms-canonicalize merges the statistics with the equal ones of the layer's
moving-statistics update and of the backward.
"""
from __future__ import annotations

from .. import batching
from .. import dtypes as dt
from .. import shape_rules as rules
from ..builders import spec_of
from ..registry import ShapeError, define
from ..symdim import Dim


def _batch_norm_infer(ins, attrs):
    x, gamma, beta = ins
    if x.rank < 2:
        raise ShapeError(f"expects an input (N, C, ...) of rank >= 2, got shape {x.shape}")
    channels = x.shape[1]
    for name, p in (("gamma", gamma), ("beta", beta)):
        if p.shape != (channels,):
            raise ShapeError(f"{name} must have shape ({channels},) for the {channels} "
                             f"channels of axis 1, got {p.shape}")
    if not attrs["epsilon"] > 0:
        raise ShapeError(f"epsilon must be > 0, got {attrs['epsilon']}")
    return x


def _axes(spec):
    """Every axis but the channel axis 1."""
    return (0,) + tuple(range(2, spec.rank))


def _per_channel(spec):
    return (1, spec.shape[1]) + (1,) * (spec.rank - 2)


def _statistics(g, x):
    """(x - mean, rsqrt(var + epsilon)) over the batch axes, built as the layer builds its
    moving statistics (nn.BatchNorm2d), so that ms-canonicalize finds them equal."""
    axes = _axes(spec_of(x.type))
    mean = g.emit("ms.reduce_mean", x, axis=axes, keep_dims=True)
    centered = g.sub(x, mean)
    var = g.emit("ms.reduce_mean", g.mul(centered, centered), axis=axes, keep_dims=True)
    return centered, g.emit("ms.rsqrt", g.add(var, g.const(g.attrs["epsilon"], x)))


def _expand_batch_norm(g, x, gamma, beta):
    centered, rstd = _statistics(g, x)
    shape = _per_channel(g.in_specs[0])
    return g.add(g.mul(g.mul(centered, rstd), g.reshape(gamma, shape)), g.reshape(beta, shape))


def _inverse_count(g, x):
    """1 / the elements per channel: a constant, or a run-time count (dynamic batch)."""
    spec = spec_of(x.type)
    count = rules.prod(spec.shape[a] for a in _axes(spec))
    if isinstance(count, Dim):
        return g.div(g.const(1, x), g.dim_size(x, _axes(spec), spec.dtype))
    return g.const(1 / count, x)


def _batch_norm_grad(g, dy):
    """MindSpore's BatchNormGrad (see the module's docstring)."""
    x, gamma, _ = g.inputs
    spec = g.in_specs[0]
    axes, shape, channels = _axes(spec), _per_channel(spec), (spec.shape[1],)
    centered, rstd = _statistics(g, x)
    xhat = g.mul(centered, rstd)
    dbeta = g.emit("ms.reduce_sum", dy, axis=axes, keep_dims=True)
    dgamma = g.emit("ms.reduce_sum", g.mul(dy, xhat), axis=axes, keep_dims=True)
    dx = None
    if g.needs[0]:
        means = g.mul(g.add(dbeta, g.mul(xhat, dgamma)), _inverse_count(g, x))
        dx = g.mul(g.mul(g.reshape(gamma, shape), rstd), g.sub(dy, means))
    return [dx, g.reshape(dgamma, channels) if g.needs[1] else None,
            g.reshape(dbeta, channels) if g.needs[2] else None]


def _batch_batch_norm(b):
    """vmap: each element has its own statistics, so the mapped axis joins the channels:
    x (N, B, C, ...) as (N, B*C, ...), gamma and beta (B, C) as (B*C,)."""
    spec = b.in_specs[0]
    n, c, rest = spec.shape[0], spec.shape[1], spec.shape[2:]
    x = b.reshape(b.materialized(b.inputs[0], b.dims[0], at=1), (n, b.size * c) + rest)
    gamma, beta = (b.reshape(b.materialized(v, d), (b.size * c,))
                   for v, d in zip(b.inputs[1:], b.dims[1:]))
    y = b.emit("ms.batch_norm", x, gamma, beta, epsilon=b.attrs["epsilon"])
    return b.reshape(y, (n, b.size, c) + rest), 1


define("ms.batch_norm", ["x", "gamma", "beta"], _batch_norm_infer, attrs={"epsilon": "float"},
       signature=("T", "T", "T"), dtypes=dt.FLOATS, expand=_expand_batch_norm,
       grad=_batch_norm_grad, batch=_batch_batch_norm,
       doc="training-mode batch normalization over every axis but 1: (x - mean) * "
           "rsqrt(var + epsilon) * gamma + beta, with the batch's mean and biased variance")
