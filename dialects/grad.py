"""What an op's gradient rule (OpDef.grad) receives and the combinators rules are made of.

A rule is `grad(g: GradCtx, dout) -> sequence` with one entry per data operand of the op: the
operand's cotangent (a Value of exactly the operand's type) or None for "no gradient". `dout`
is the cotangent of the op's result. Rules build ms IR with the GradCtx methods, at the insertion
point ms-autodiff chose and at the forward op's location; the backward program is therefore ms
IR and can be differentiated again (grad of grad), provided that a rule only uses ops that have
rules themselves and only uses forward values where the math needs them.

Rules run after ms-implicit-cast, so the operands of a dtype group already agree; GradCtx.emit
checks that a rule keeps it that way (no op it builds would need a cast).

ms-autodiff asks for the cotangents of float operands that depend on a differentiated input
(`g.needs[i]`); integer and bool values never get one, and the gradient of an integer or bool
input is zeros of its type.
"""
from __future__ import annotations

from .lazy import ir

from . import shape_rules as rules
from .dtypes import TensorSpec
from .builders import (build_op, cast_targets, constant, data_values, op_attrs,
                       operand_groups, spec_of)
from .registry import NotConstant, lookup
from .symdim import DynamicDimError, has_dynamic


class GradRuleError(RuntimeError):
    """A gradient rule built IR that is not valid post-implicit-cast ms IR (a rule bug)."""


class GradCtx:
    """The forward op seen by its gradient rule, plus ms op builders."""

    @classmethod
    def of(cls, op, opdef, wanted=lambda v: True):
        """The context of `op` (its data operands and attribute values); `wanted(operand)`:
        whether its cotangent is needed. Returns (ctx, the name of a const input that is not
        a constant, or None)."""
        groups = operand_groups(opdef, op)
        data = data_values(opdef, groups)
        attrs = op_attrs(opdef, op, groups)
        unknown = next((k for k, v in attrs.items() if isinstance(v, NotConstant)), None)
        return cls(op, opdef, data, attrs, [wanted(v) for v in data]), unknown

    def __init__(self, op, opdef, inputs, attrs, needs):
        self.op = op
        self.opdef = opdef
        self.inputs = list(inputs)          # data operands (Values), in IR order
        self.in_specs = [spec_of(v.type) for v in self.inputs]
        self.out = op.results[0]            # the forward result (re-used, never recomputed)
        self.out_spec = spec_of(self.out.type)
        self.attrs = attrs                  # Python values, const inputs included
        self.needs = tuple(needs)           # per data operand: is its cotangent wanted
        self.loc = op.location

    @property
    def x(self):
        return self.inputs[0]

    @property
    def y(self):
        return self.inputs[1]

    # ------------------------------------------------------------ building
    def emit(self, name, *operands, **attrs) -> ir.Value:
        """One ms op (data operands, const inputs as attributes) at the forward op's location."""
        op = build_op(name, list(operands), attrs, loc=self.loc)
        opdef = lookup(name)
        data = data_values(opdef, operand_groups(opdef, op))
        for v, target in zip(data, cast_targets(opdef, data)):
            if target is not None and spec_of(v.type).dtype is not target:
                raise GradRuleError(f"built '{name}' with operands of dtypes "
                                    + ", ".join(spec_of(u.type).dtype.name for u in data))
        return op.result

    def const(self, value, like) -> ir.Value:
        """A rank-0 constant of `like`'s dtype (like: a Value or TensorSpec)."""
        spec = like if isinstance(like, TensorSpec) else spec_of(like.type)
        return constant(value, spec.dtype, loc=self.loc)

    def add(self, a, b):
        return self.emit("ms.add", a, b)

    def sub(self, a, b):
        return self.emit("ms.sub", a, b)

    def mul(self, a, b):
        return self.emit("ms.mul", a, b)

    def div(self, a, b):
        return self.emit("ms.div", a, b)

    def neg(self, a):
        return self.emit("ms.neg", a)

    def select(self, cond, a, b):
        return self.emit("ms.select", cond, a, b)

    def zeros_like(self, a):
        return self.emit("ms.zeros_like", a)

    def cast(self, a, dtype):
        return a if spec_of(a.type).dtype is dtype else self.emit("ms.cast", a, dtype=dtype)

    def reshape(self, a, shape):
        if spec_of(a.type).shape == tuple(shape):
            return a
        return self.emit("ms.reshape", a, shape=rules.shape_attr(shape))

    def broadcast_to(self, a, shape):
        """a broadcast to `shape`; a size known only at run time is taken from the op's
        operand or result of that shape (a + zeros_like(it): fused, it costs nothing)."""
        shape = tuple(shape)
        if spec_of(a.type).shape == shape:
            return a
        if not has_dynamic(shape):
            return self.emit("ms.broadcast_to", a, shape=shape)
        like = next((v for v in list(self.inputs) + [self.out]
                     if spec_of(v.type).shape == shape), None)
        if like is None:
            raise DynamicDimError(f"a broadcast to {shape} needs its sizes at run time")
        zeros = self.emit("ms.zeros_like", like)
        if spec_of(like.type).dtype is not spec_of(a.type).dtype:
            zeros = self.cast(zeros, spec_of(a.type).dtype)
        return self.emit("ms.add", a, zeros)

    def dim_size(self, x, axes, dtype):
        """The number of elements of x along `axes` at run time (a 0-d tensor of dtype)."""
        return self.emit("ms.dim_size", x, axis=tuple(axes), dtype=dtype)

    def reduce_sum(self, a, axes, keep_dims=False):
        """Sum over `axes` (an empty tuple sums nothing, unlike ms.reduce_sum's axis=())."""
        if not axes:
            return a
        return self.emit("ms.reduce_sum", a, axis=tuple(axes), keep_dims=keep_dims)

    # ------------------------------------------------------------ shapes
    def unbroadcast(self, v, spec: TensorSpec) -> ir.Value:
        """Undo numpy broadcasting of an operand of shape `spec.shape` to v's shape: sum over
        the leading axes and the size-1 axes that were stretched, then restore the shape."""
        shape = spec_of(v.type).shape
        lead = len(shape) - spec.rank
        axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(spec.shape)
                                          if d == 1 and shape[lead + i] != 1)
        return self.reshape(self.reduce_sum(v, axes), spec.shape)

    def reduction_axes(self):
        """Normalized axes of a reduction op (MindSpore: empty means all)."""
        return rules.reduce_axes(self.in_specs[0], self.attrs["axis"])

    def keep_reduced_dims(self, v, axes):
        """Reshape a value reduced over `axes` (keep_dims or not) to the input's rank, with
        size-1 reduced axes, so it broadcasts against the input."""
        shape = tuple(1 if i in axes else d for i, d in enumerate(self.in_specs[0].shape))
        return self.reshape(v, shape)


def each(*rules):
    """A rule from one function (g, dout) -> cotangent per data operand (None: the operand
    gets no gradient); only the wanted ones run."""
    def rule(g, dout):
        return [r(g, dout) if r is not None and g.needs[i] else None
                for i, r in enumerate(rules)]
    return rule


def broadcasting(*rules):
    """Like `each`, for ops that broadcast their operands numpy-style: each cotangent, computed
    in the result's shape, is reduced back to its operand's shape."""
    def rule(g, dout):
        return [None if c is None else g.unbroadcast(c, g.in_specs[i])
                for i, c in enumerate(each(*rules)(g, dout))]
    return rule


def no_grad(g, dout):
    """The op's result does not depend differentiably on its operands (comparisons, logic,
    zeros_like, stop_gradient, ...). ms-autodiff treats its result as a constant."""
    return [None] * len(g.inputs)
