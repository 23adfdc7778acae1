"""What an op's batching rule (OpDef.batch) receives, and the combinators rules are made of.

ops.vmap (pyfront/vmap.py) traces the mapped function once, on unbatched values, and replays
its ms ops into the caller's program (JAX's batching interpreter over per-primitive rules).
A batched value is a pair (value, dim): the value in the caller's program and where its
batch dimension is, an int, or None (NOT_MAPPED) for a value that is the same for every
element. An op whose operands are all unmapped is emitted as it is; any other op goes to its
rule, `batch(b: BatchCtx) -> (value, dim)`, which sees the op as traced (`b.in_specs`,
`b.out_spec` and `b.attrs` describe the unbatched op, const inputs included) and the batched
operands (`b.inputs`, `b.dims`), and builds ms ops with `b.emit` (const inputs by name, as
attributes). The result must be the batched op's result: out_spec with a dimension of
`b.size` inserted at `dim`. Rules emit ms ops only, so the batched program is differentiable
(grad of vmap) and has as many ops whatever the batch size.

Rules run on the traced function after ms-implicit-cast: the operands of a dtype group agree,
and a rule must keep them agreeing (constants it makes take their operand's dtype).
"""
from __future__ import annotations

from . import shape_rules as rules
from .dtypes import TensorSpec
from .registry import MissingRuleError, lookup

NOT_MAPPED = None


def unbatched_spec(spec: TensorSpec, dim) -> TensorSpec:
    """The spec of one element of a batched value."""
    if dim is None:
        return spec
    return TensorSpec(spec.shape[:dim] + spec.shape[dim + 1:], spec.dtype)


class BatchCtx:
    """One traced op seen by its batching rule, plus builders of ms ops in the batched program.
    `builder` is the interpreter's: emit(name, operands, attrs) -> value, constant(array,
    dtype) -> value, spec(value) -> TensorSpec."""

    def __init__(self, opdef, inputs, dims, attrs, in_specs, out_spec, size, builder):
        self.opdef = opdef
        self.inputs = list(inputs)     # data operands in the batched program, IR order
        self.dims = list(dims)         # per data operand: its batch dim, or None
        self.attrs = attrs             # Python values, const inputs included
        self.in_specs = list(in_specs)  # the traced (unbatched) operand specs
        self.out_spec = out_spec       # the traced (unbatched) result spec
        self.size = size               # the mapped axis size
        self.builder = builder

    # ------------------------------------------------------------ building
    def emit(self, name, *operands, **attrs):
        return self.builder.emit(name, list(operands), attrs)

    def const(self, value, dtype):
        return self.builder.constant(value, dtype)

    def spec(self, v) -> TensorSpec:
        return self.builder.spec(v)

    def reshape(self, v, shape):
        return v if self.spec(v).shape == tuple(shape) else self.emit("ms.reshape", v,
                                                                       shape=tuple(shape))

    def moved(self, v, src, dst):
        """v with its axis `src` moved to `dst` (one transpose, none when it is there)."""
        if src == dst:
            return v
        perm = list(range(self.spec(v).rank))
        perm.insert(dst, perm.pop(src))
        return self.emit("ms.transpose", v, perm=tuple(perm))

    def materialized(self, v, dim, at=0):
        """A batched value with its batch dim at `at`; an unmapped one broadcast to it (a
        broadcast_to, which fuses into its users rather than being stored)."""
        if dim is not None:
            return self.moved(v, dim, at)
        shape = self.spec(v).shape
        v = self.emit("ms.expand_dims", v, axis=at)
        return self.emit("ms.broadcast_to", v, shape=shape[:at] + (self.size,) + shape[at:])

    def front(self, i):
        """Operand i with its batch dim first (broadcast if unmapped)."""
        return self.materialized(self.inputs[i], self.dims[i])

    def aligned(self, i, rank):
        """Operand i for numpy broadcasting in a batched result of logical rank `rank` with
        the batch dim first: a mapped one moved to the front, with size-1 dims after the
        batch dim up to `rank`; an unmapped one as it is (it aligns with the trailing dims)."""
        v, d = self.inputs[i], self.dims[i]
        if d is None:
            return v
        v = self.moved(v, d, 0)
        shape = self.in_specs[i].shape
        return self.reshape(v, (self.size,) + (1,) * (rank - len(shape)) + shape)

    def bind(self, name, inputs, dims, **attrs):
        """(value, dim) of the op `name` applied to batched operands: its own rule (rules
        compose: dynamic_index with a mapped index is a gather)."""
        opdef = lookup(name)
        specs = [unbatched_spec(self.spec(v), d) for v, d in zip(inputs, dims)]
        out = opdef.infer_specs(specs, attrs)[0]
        return batch_op(opdef, inputs, dims, attrs, specs, out, self.size, self.builder)

    # ------------------------------------------------------------ shapes
    @property
    def x(self):
        return self.inputs[0]

    @property
    def y(self):
        return self.inputs[1]

    def axis(self, name="axis", rank=None):
        """The op's int attribute `name` normalized against the traced operand rank."""
        rank = self.in_specs[0].rank if rank is None else rank
        return rules.normalize_axis(self.attrs[name], rank)


def batch_op(opdef, inputs, dims, attrs, in_specs, out_spec, size, builder):
    """One traced op in the batched program: emitted as it is when nothing is mapped, else
    by its rule. A missing rule is an error naming the op."""
    if all(d is None for d in dims):
        return builder.emit(opdef.name, list(inputs), dict(attrs)), None
    if opdef.batch is None:
        mapped = ", ".join(f"#{i}" for i, d in enumerate(dims) if d is not None)
        raise MissingRuleError(f"{opdef.name} has no batching rule for vmap (mapped operand "
                               f"{mapped})")
    b = BatchCtx(opdef, inputs, dims, attrs, in_specs, out_spec, size, builder)
    value, dim = opdef.batch(b)
    return value, dim


# ------------------------------------------------------------------ combinators

def elementwise(b):
    """Ops that broadcast their operands numpy-style (and unary ones), attributes unchanged.
    When the mapped operands share one batch dim, have the result's rank and the unmapped
    ones do not reach that dim, the op applies as it is; otherwise the mapped operands move
    their batch dim to the front with size-1 dims inserted for broadcasting (JAX's
    broadcast_batcher)."""
    rank = b.out_spec.rank
    mapped = [i for i, d in enumerate(b.dims) if d is not None]
    d0 = b.dims[mapped[0]]
    same = all(b.dims[i] == d0 and b.in_specs[i].rank == rank for i in mapped)
    if same and all(s.rank <= rank - d0 for s, d in zip(b.in_specs, b.dims) if d is None):
        return b.emit(b.opdef.name, *b.inputs, **b.attrs), d0
    operands = [b.aligned(i, rank) for i in range(len(b.inputs))]
    return b.emit(b.opdef.name, *operands, **b.attrs), 0


def reshaping(b):
    """Ops whose result is a view of their operand's elements in another shape (reshape,
    expand_dims, squeeze): one reshape of the batch-first operand to (B, *result shape)."""
    return b.emit("ms.reshape", b.front(0), shape=(b.size,) + b.out_spec.shape), 0


def _physical(axis, dim):
    """Where a traced axis is in a value whose batch dim is at `dim`."""
    return axis + (axis >= dim)


def reducing(b):
    """Reductions over `axis` (a tuple; empty: every axis) with `keep_dims`: the axes shift
    past the batch dim, which stays where it is (moved left by the reduced axes before it
    unless they are kept). A rank-0 operand reduces nothing (only its dtype may change: a
    bool sum is int64)."""
    d = b.dims[0]
    axes = rules.reduce_axes(b.in_specs[0], b.attrs["axis"])
    if not axes:
        return (b.x if b.spec(b.x).dtype is b.out_spec.dtype else
                b.emit("ms.cast", b.x, dtype=b.out_spec.dtype)), d
    keep = b.attrs.get("keep_dims", False)
    out = b.emit(b.opdef.name, b.x, **{**b.attrs, "axis": tuple(_physical(a, d) for a in axes)})
    return out, d if keep else d - sum(a < d for a in axes)


def along_axis(b):
    """Ops working along one `axis` (softmax, cumsum, argmax, ...): the axis shifts past the
    batch dim, which stays (moved left if an argmax drops an axis before it)."""
    d, axis = b.dims[0], b.axis()
    out = b.emit(b.opdef.name, b.x, **{**b.attrs, "axis": _physical(axis, d)})
    return out, d if b.attrs.get("keep_dims", True) else d - (axis < d)


def fold_leading(images=None, shape_attrs=()):
    """Ops mapping a leading image axis N independently (pooling; convolution by an unmapped
    weight): the batch dim joins N, (B, N, ...) viewed as (B*N, ...), and the result is split
    again. `images` are the operands with that N (default: all; the others must be
    unmapped, e.g. a convolution's weight); `shape_attrs` name attributes holding a full
    image shape, whose N scales too."""
    def rule(b):
        n = b.size
        folded = range(len(b.inputs)) if images is None else images
        operands = list(b.inputs)
        for i in folded:
            spec = b.in_specs[i]
            v = b.materialized(b.inputs[i], b.dims[i])
            operands[i] = b.reshape(v, (n * spec.shape[0],) + spec.shape[1:])
        attrs = dict(b.attrs)
        for name in shape_attrs:
            shape = tuple(attrs[name])
            attrs[name] = (n * shape[0],) + shape[1:]
        out = b.emit(b.opdef.name, *operands, **attrs)
        return b.reshape(out, (n,) + b.out_spec.shape), 0
    return rule
