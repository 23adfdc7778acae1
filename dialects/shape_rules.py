"""Shape and dtype rules shared by the op definitions (pure Python, no mlir).

Each rule takes the input TensorSpecs and the op's attributes as Python values and returns the
result spec(s), raising ShapeError/DTypeError with a message that the caller prefixes with the
op name (the verifier) or the user's source line (the frontend).
"""
from __future__ import annotations

from . import dtypes as dt
from .dtypes import TensorSpec
from .registry import DTypeError, NotConstant, ShapeError
from .symdim import Dim, DynamicDimError, unify


def broadcast_shapes(*shapes) -> tuple:
    """numpy broadcasting of shapes. A dynamic size (symdim.Dim) never broadcasts: it meets
    1 or itself, and any other size must equal it at run time (symdim.unify)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = []
        for s in shapes:
            if len(s) - rank + i >= 0 and s[len(s) - rank + i] != 1 \
                    and s[len(s) - rank + i] not in dims:
                dims.append(s[len(s) - rank + i])
        size = dims[0] if dims else 1
        for d in dims[1:]:
            size = unify(size, d, f"dimension {i} of broadcast operands")
            if size is None:
                raise ShapeError("shapes " + ", ".join(str(tuple(s)) for s in shapes)
                                 + " cannot be broadcast together")
        out.append(size)
    return tuple(out)


def same_size(a, b, what: str):
    """The size where `a` and `b` must agree (a run-time check when one is dynamic), or
    None when two static sizes differ."""
    return unify(a, b, what)


def shape_attr(shape) -> tuple:
    """A target shape as reshape's attribute: its one dynamic size (if any) as -1, which
    reshape infers from the input's size (two are not expressible: DynamicDimError)."""
    shape = tuple(shape)
    dynamic = [i for i, d in enumerate(shape) if isinstance(d, Dim)]
    if len(dynamic) > 1:
        raise DynamicDimError(f"a reshape to {shape} has more than one size known only at "
                              "run time")
    return tuple(-1 if i in dynamic else d for i, d in enumerate(shape))


def prod(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def normalize_axis(axis: int, rank: int, what="axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"{what} {axis} is out of range for a tensor of rank {rank}")
    return axis % rank if rank else 0


def normalize_axes(axes, rank: int, what="axis") -> tuple:
    out = tuple(normalize_axis(a, rank, what) for a in axes)
    if len(set(out)) != len(out):
        raise ShapeError(f"{what} {tuple(axes)} has duplicate entries")
    return out


def known(attrs, *names) -> bool:
    """Whether all named attributes have compile-time values."""
    return all(n in attrs and not isinstance(attrs[n], NotConstant) for n in names)


def check_dtypes(specs, allowed, what="input"):
    for i, s in enumerate(specs):
        if s.dtype not in allowed:
            raise DTypeError(f"{what} #{i} has dtype {s.dtype.name}, expected one of "
                             + ", ".join(d.name for d in allowed))


# ------------------------------------------------------------------ elementwise

def same_group_dtype(specs) -> dt.DType:
    """The dtype of a signature group after implicit cast (the promoted tensor dtype)."""
    return dt.promote([s.dtype for s in specs])


def elementwise(result_dtype=None):
    """Rule for an n-ary elementwise op: numpy broadcasting; `result_dtype(in_dtype)` maps the
    promoted input dtype to the result dtype (default: the same)."""
    def rule(ins, attrs):
        shape = broadcast_shapes(*(s.shape for s in ins))
        d = same_group_dtype(ins)
        return TensorSpec(shape, result_dtype(d) if result_dtype else d)
    return rule


def float_result(d: dt.DType) -> dt.DType:
    """Float-valued math (exp, div, ...) on integers and bools computes in float32."""
    return d if d.is_float else dt.float32


def bool_result(d: dt.DType) -> dt.DType:
    return dt.bool_


# ------------------------------------------------------------------ reductions

def reduce_axes(spec: TensorSpec, axis) -> tuple:
    """MindSpore: an empty axis tuple reduces every axis."""
    if len(axis) == 0:
        return tuple(range(spec.rank))
    return normalize_axes(axis, spec.rank)


def reduced_shape(shape, axes, keep_dims) -> tuple:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)
