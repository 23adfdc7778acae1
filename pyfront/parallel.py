"""Data parallel training: the collective ops, MindSpore's auto-parallel context and
nn.DistributedGradReducer.

    init()                                            # mscc.communication
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL,
                                 gradients_mean=True)
    reducer = nn.DistributedGradReducer(optimizer.parameters)
    def step(x, y):                                   # each rank on its own shard
        loss, grads = grad_fn(x, y)
        optimizer(reducer(grads))                     # the same update on every rank
        return loss

The collectives (ops.AllReduce(op), ops.AllGather(), ops.ReduceScatter(op),
ops.Broadcast(root_rank), and their functional forms here) are ms ops (dialects/ops/
collective.py): under jit they are part of the compiled step, in PyNative mode each runs as
its own compiled op, and gradients flow through them. They need mscc.communication.init().
"""
from __future__ import annotations

from . import communication
from . import ops
from . import primitives as _primitives
from .dispatch import call as _call
from .nn.cell import Cell


class ReduceOp:
    """MindSpore's ReduceOp: how ops.AllReduce combines the ranks' tensors."""
    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


_REDUCE_OPS = (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD)


def _reduce_op(op, who):
    if op not in _REDUCE_OPS:
        raise ValueError(f"For '{who}', op must be one of ReduceOp.SUM, MAX, MIN, PROD, got "
                         f"{op!r}")
    return op


def _ready(who, group):
    communication.require_init(who)
    communication._check_group(group, who)


_WORLD = communication.GlobalComm.WORLD_COMM_GROUP


# ------------------------------------------------------------------ functional forms

def all_reduce(x, op=ReduceOp.SUM, group=_WORLD):
    """x combined elementwise over every process (sum, max, min or prod); every process gets
    the result."""
    _ready("AllReduce", group)
    return _call("ms.all_reduce", (x,), {"reduce_op": _reduce_op(op, "AllReduce")})


def all_gather(x, group=_WORLD):
    """Every process's x, stacked along axis 0 in rank order."""
    _ready("AllGather", group)
    return _call("ms.all_gather", (x,), {"group_size": communication.get_group_size()})


def reduce_scatter(x, op=ReduceOp.SUM, group=_WORLD):
    """The sum over the processes of x, cut along axis 0 into one part per process: process
    r gets part r."""
    _ready("ReduceScatter", group)
    if op != ReduceOp.SUM:
        raise ValueError(f"For 'ReduceScatter', mscc implements op=ReduceOp.SUM only, got "
                         f"{op!r}")
    return _call("ms.reduce_scatter", (x,), {"reduce_op": op,
                                              "group_size": communication.get_group_size()})


def broadcast(x, root_rank=0, group=_WORLD):
    """Process root_rank's x on every process. A tuple or list of tensors gives a tuple
    (MindSpore's Broadcast takes and returns tuples)."""
    _ready("Broadcast", group)
    if isinstance(root_rank, bool) or not isinstance(root_rank, int):
        raise TypeError(f"For 'Broadcast', root_rank must be an int, got {root_rank!r}")
    if not 0 <= root_rank < communication.get_group_size():
        raise ValueError(f"For 'Broadcast', root_rank {root_rank} is not a rank of this job "
                         f"(group size {communication.get_group_size()})")
    if isinstance(x, (tuple, list)):
        return tuple(_call("ms.broadcast", (t,), {"root": root_rank}) for t in x)
    return _call("ms.broadcast", (x,), {"root": root_rank})


def comm_rank():
    """This process's rank as an int32 scalar Tensor, computed where it runs (inside a
    compiled function it is read at run time)."""
    communication.require_init("comm_rank")
    return _call("ms.comm_rank", ())


# ------------------------------------------------------------------ Primitive classes

def _make(name, fn, params):
    return _primitives._make_class(_primitives._row(name, fn, params))


AllReduce = _make("AllReduce", all_reduce, {"op": ReduceOp.SUM, "group": _WORLD})
AllGather = _make("AllGather", all_gather, {"group": _WORLD})
ReduceScatter = _make("ReduceScatter", reduce_scatter, {"op": ReduceOp.SUM, "group": _WORLD})
Broadcast = _make("Broadcast", broadcast, {"root_rank": _primitives._REQUIRED,
                                           "group": _WORLD})
PRIMITIVES = {"AllReduce": AllReduce, "AllGather": AllGather, "ReduceScatter": ReduceScatter,
              "Broadcast": Broadcast}


# ------------------------------------------------------------------ auto-parallel context

class ParallelMode:
    """MindSpore's parallel modes; mscc runs STAND_ALONE and DATA_PARALLEL."""
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"


_MODES = (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL, ParallelMode.HYBRID_PARALLEL,
          ParallelMode.SEMI_AUTO_PARALLEL, ParallelMode.AUTO_PARALLEL)
_DEFAULTS = {"parallel_mode": ParallelMode.STAND_ALONE, "gradients_mean": False,
             "device_num": 1, "global_rank": 0, "gradient_fp32_sync": True,
             "parameter_broadcast": False}
_auto_parallel = dict(_DEFAULTS)


def set_auto_parallel_context(**kwargs):
    """MindSpore's set_auto_parallel_context for data parallel: parallel_mode (STAND_ALONE or
    DATA_PARALLEL), gradients_mean (what DistributedGradReducer's mean=None means),
    device_num and global_rank (recorded; the job's size and rank come from MPI),
    gradient_fp32_sync and parameter_broadcast (recorded)."""
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:
        raise ValueError(f"set_auto_parallel_context() got unsupported options: "
                         f"{', '.join(unknown)} (mscc has data parallel only)")
    mode = kwargs.get("parallel_mode", _auto_parallel["parallel_mode"])
    if mode not in _MODES:
        raise ValueError(f"parallel_mode must be one of {', '.join(_MODES)}, got {mode!r}")
    if mode not in (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL):
        raise NotImplementedError(f"parallel_mode={mode!r}: mscc implements stand_alone and "
                                  "data_parallel only")
    if "gradients_mean" in kwargs and not isinstance(kwargs["gradients_mean"], bool):
        raise TypeError(f"gradients_mean must be a bool, got {kwargs['gradients_mean']!r}")
    _auto_parallel.update(kwargs)


def get_auto_parallel_context(attr_key):
    if attr_key not in _auto_parallel:
        raise ValueError(f"get_auto_parallel_context: unknown key {attr_key!r}; keys: "
                         f"{', '.join(sorted(_auto_parallel))}")
    return _auto_parallel[attr_key]


def reset_auto_parallel_context():
    """Back to stand_alone and the defaults."""
    _auto_parallel.clear()
    _auto_parallel.update(_DEFAULTS)


# ------------------------------------------------------------------ DistributedGradReducer

BUCKET_BYTES = 25 * 2 ** 20  # gradients are all-reduced in buckets of about this many bytes


def buckets(specs, bucket_bytes=BUCKET_BYTES):
    """Indexes of `specs` ((shape, dtype) per gradient) grouped into buckets: consecutive
    gradients of one dtype, a new bucket when one would pass `bucket_bytes` (one gradient
    larger than that is a bucket of its own). Each bucket is one all-reduce."""
    out, current, size, dtype = [], [], 0, None
    for i, (shape, d) in enumerate(specs):
        n = 1
        for s in shape:
            n *= s
        nbytes = n * d.itemsize
        if current and (d is not dtype or size + nbytes > bucket_bytes):
            out.append(tuple(current))
            current, size = [], 0
        current.append(i)
        size += nbytes
        dtype = d
    if current:
        out.append(tuple(current))
    return tuple(out)


class DistributedGradReducer(Cell):
    """MindSpore's nn.DistributedGradReducer(parameters, mean=None, degree=None,
    fusion_type=1, group=...): called with the gradients of `parameters` (in their order),
    returns them summed over the processes, divided by `degree` (default: the group size)
    when `mean` (default: the auto-parallel context's gradients_mean). The gradients are
    flattened and concatenated per bucket (`buckets`, BUCKET_BYTES), so the step makes one
    all-reduce per bucket, not one per parameter; every rank gets bitwise the same result."""

    def __init__(self, parameters, mean=None, degree=None, fusion_type=1, group=_WORLD):
        super().__init__()
        _ready("DistributedGradReducer", group)
        if mean is None:
            mean = _auto_parallel["gradients_mean"]
        size = communication.get_group_size()
        degree = size if degree is None else degree
        if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
            raise ValueError(f"degree must be a positive int, got {degree!r}")
        self.mean, self.degree, self.fusion_type = bool(mean), degree, fusion_type
        params = list(parameters)
        self.shapes = tuple(tuple(p.shape) for p in params)
        self.dtypes = tuple(p.dtype for p in params)
        self.buckets = buckets(list(zip(self.shapes, self.dtypes)))

    def construct(self, grads):
        grads = list(grads)
        if len(grads) != len(self.shapes):
            raise ValueError(f"For 'DistributedGradReducer', got {len(grads)} gradients for "
                             f"{len(self.shapes)} parameters")
        for i, (g, shape) in enumerate(zip(grads, self.shapes)):
            if tuple(g.shape) != shape:
                raise ValueError(f"For 'DistributedGradReducer', gradient #{i} has shape "
                                 f"{tuple(g.shape)}, its parameter {shape}")
        out = list(grads)
        for bucket in self.buckets:
            for i, g in zip(bucket, self._reduce_bucket([grads[i] for i in bucket])):
                out[i] = g
        return tuple(out)

    def _reduce_bucket(self, grads):
        """One all-reduce for the bucket: flat views concatenated, reduced, scaled, split."""
        flat = [ops.reshape(g, (-1,)) for g in grads]
        total = all_reduce(flat[0] if len(flat) == 1 else ops.concat(flat, 0))
        if self.mean and self.degree != 1:
            total = ops.mul(total, 1.0 / self.degree)
        out, at = [], 0
        for g in grads:
            n = 1
            for s in g.shape:
                n *= s
            part = total if len(grads) == 1 else ops.slice(total, (at,), (n,))
            out.append(ops.reshape(part, tuple(g.shape)))
            at += n
        return out


__all__ = ["ReduceOp", "ParallelMode", "AllReduce", "AllGather", "ReduceScatter",
           "Broadcast", "all_reduce", "all_gather", "reduce_scatter", "broadcast",
           "comm_rank", "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context", "DistributedGradReducer", "buckets"]
