"""Random numbers in compiled code, counter-based: a value is a hash of (seed, counter,
element index), so a program is a pure function of its counter (an int64 scalar, kept by the
frontend in a Parameter that every draw advances). The same counter gives the same numbers:
a gradient function that recomputes the forward sees the forward's dropout mask."""
from ..lazy import arith, ir, linalg

from .. import dtypes as dt
from .. import lowering
from .. import shape_rules as rules
from ..dtypes import TensorSpec
from ..grad import no_grad
from ..registry import ShapeError, define
from ..symdim import Dim

_GOLDEN = 0x9E3779B9  # spreads consecutive counters over the 32-bit space


def _uniform_infer(ins, attrs):
    counter, = ins
    if counter.rank != 0 or counter.dtype is not dt.int64:
        raise ShapeError(f"counter must be an int64 scalar, got {counter}")
    if any(d < 0 for d in attrs["shape"]):
        raise ShapeError(f"shape {attrs['shape']} has a negative dimension")
    return TensorSpec(tuple(attrs["shape"]), dt.float32)


def _lower_uniform(lc, counter, *_like):
    """u = lowbias32(index + counter * golden + seed) >> 8, times 2^-24: in [0, 1), exact in
    float32, 2^24 levels."""
    out = lc.out
    rank = len(out.shape)
    i32 = ir.IntegerType.get_signless(32)

    def c(v):
        return arith.constant(i32, v - (1 << 32) if v >= 1 << 31 else v)

    # the row-major strides; a dynamic one computed before the loop (modulo 2^32 as well)
    strides = [rules.prod(out.shape[d + 1:]) for d in range(rank)]
    strides = [arith.index_cast(i32, lowering.index_value(s)) if isinstance(s, Dim) else s
               for s in strides]

    def body(k, _out):
        index = arith.constant(i32, 0)
        for d in range(rank):  # the row-major linear index, modulo 2^32
            stride = strides[d]
            pos = arith.index_cast(i32, linalg.IndexOp(d).result)
            index = arith.addi(index, arith.muli(pos, stride if isinstance(stride, ir.Value)
                                                 else c(stride % (1 << 32))))
        x = arith.addi(arith.addi(index, arith.muli(arith.trunci(i32, k), c(_GOLDEN))),
                       c(lc.attrs["seed"] % (1 << 32)))
        for shift, mul in ((16, 0x7FEB352D), (15, 0x846CA68B), (16, None)):
            x = arith.xori(x, arith.shrui(x, c(shift)))
            if mul is not None:
                x = arith.muli(x, c(mul))
        bits = arith.uitofp(ir.F32Type.get(), arith.shrui(x, c(8)))
        return arith.mulf(bits, arith.constant(ir.F32Type.get(), 2.0 ** -24))
    return lowering.generic([counter], [lowering.empty(out)], [lowering.affine_map(rank, []), lowering.identity_map(rank)],
                     ["parallel"] * rank, body, [dt.int64, dt.float32])


define("ms.random_uniform", ["counter"], _uniform_infer, attrs={"shape": "ints", "seed": "int"},
       dtypes=(dt.int64,), signature=(None,), lower=_lower_uniform, grad=no_grad,
       doc="float32 numbers uniform in [0, 1) of `shape`, a hash of (seed, counter, index)")


def _uniform_like_infer(ins, attrs):
    counter, like = ins
    _uniform_infer([counter], {**attrs, "shape": ()})
    return TensorSpec(like.shape, dt.float32)


define("ms.random_uniform_like", ["counter", "like"], _uniform_like_infer,
       attrs={"seed": "int"}, signature=(None, None), lower=_lower_uniform, grad=no_grad,
       doc="ms.random_uniform of like's shape (the same numbers for the same shape), for a "
           "shape known only at run time (a dropout mask of a dynamic batch)")
