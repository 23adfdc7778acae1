"""The last ops of MindSpore's 150 most used (pyfront/mindspore_modules/usage_rank.txt):
Print / print_, ctc_loss / CTCLoss, RandomChoiceWithMask / choice_with_mask, DynamicRNN and
the Ascend float-status Primitives. Compositions of existing ops (Print is an ms op of its
own: dialects/ops/debug.py), with MindSpore's names, defaults and errors; their Primitive rows
are in pyfront/primitives.py, their tests in test/python/test_ops_last.py.
"""
from __future__ import annotations

import numbers as _numbers

import numpy as _np

from ..dialects import dtypes as _dt
from . import ops as _ops
from .dispatch import call as _call
from .location import user_api as _user_api
from .state import active_traces as _active_traces
from .tensor import Tensor as _Tensor

__all__ = ["print_", "ctc_loss", "choice_with_mask"]


# ------------------------------------------------------------------ Print

def _text(item):
    """An item of a Print that is not a Tensor, as MindSpore prints it."""
    if isinstance(item, (tuple, list)):
        inner = ", ".join(_text(v) for v in item)
        return f"({inner}{',' if len(item) == 1 else ''})" if isinstance(item, tuple) \
            else f"[{inner}]"
    if isinstance(item, _Tensor):
        from ..runtime.debug_print import format_tensor
        return format_tensor(item.asnumpy(), item.dtype)
    if isinstance(item, (str, bool, _numbers.Number, _np.generic)):
        return str(item)
    raise TypeError(f"For 'Print', the inputs must be Tensors, bools, ints, floats, strs, "
                    f"tuples or lists, got {type(item).__name__}")


def print_(*input_x):
    """Print the inputs, one a line, as MindSpore's Print (ops.print_, P.Print). In PyNative
    mode they are printed now; inside jit / GRAPH_MODE each Tensor becomes an ms.print op,
    printed each time the compiled code runs (the texts and numbers around it are known when
    tracing and travel with it), in program order. Returns None (MindSpore: an invalid value,
    to be ignored)."""
    if not input_x:
        raise ValueError("For 'Print', it needs at least one input")
    if not _active_traces.items:
        from ..runtime.debug_print import write
        write("".join(_text(v) + "\n" for v in input_x))
        return None
    texts = []
    for item in _flatten_print(input_x):
        if isinstance(item, _Tensor):
            _call("ms.print", (item,), {"before": "\n".join(texts), "after": ""})
            texts = []
        else:
            texts.append(_text(item))
    if texts:
        _call("ms.print", (), {"before": "\n".join(texts), "after": ""})
    return None


def _flatten_print(items):
    """Print's items with traced Tensors inside tuples/lists brought to the top (each printed
    on its own line, as MindSpore's graph mode does)."""
    for item in items:
        if isinstance(item, (tuple, list)) and any(isinstance(v, _Tensor) for v in item):
            yield from _flatten_print(item)
        else:
            yield item


def _print_primitive(*input_x):
    return print_(*input_x)



# ------------------------------------------------------------------ Ascend float status

# Status Tensors (NPUAllocFloatStatus's outputs) -> the Tensors made to depend on them since
# the last clear (`ops.depend(status, grads)`, as MindSpore's loss-scaling code does).
import weakref as _weakref  # noqa: E402

# (keyed by id, the entry dropped with the Tensor: a Tensor's == is elementwise)
_WATCHED: dict = {}


def _watch(status, tensors):
    if id(status) not in _WATCHED:
        _weakref.finalize(status, _WATCHED.pop, id(status), None)
    _WATCHED[id(status)] = tensors


def _float_tensors(expr):
    if isinstance(expr, _Tensor):
        return [expr] if expr.dtype.is_float else []
    if isinstance(expr, (tuple, list)):
        return [t for v in expr for t in _float_tensors(v)]
    return []


def watch_depend(value, expr):
    """ops.depend's hook: a status Tensor made to depend on `expr` watches its float
    Tensors (NPUGetFloatStatus checks them)."""
    if isinstance(value, _Tensor) and id(value) in _WATCHED:
        _WATCHED[id(value)] = _WATCHED[id(value)] + _float_tensors(expr)


def _rebind(status, new):
    """Write `new` into the Tensor `status` in place: Ascend's status ops update their input
    (models read the input afterwards, not the result)."""
    status._data, status._spec, status._device, status._value, status._trace = (
        new._data, new._spec, new._device, new._value, new._trace)


def _check_status(name, x):
    if not isinstance(x, _Tensor) or x.shape != (8,) or x.dtype is not _dt.float32:
        raise TypeError(f"For '{name}', the input must be a float32 Tensor of shape (8,) "
                        f"(NPUAllocFloatStatus's output), got {x!r}")


def _npu_alloc_float_status():
    """NPUAllocFloatStatus: a float32 status Tensor of shape (8,), zeros. Portable stand-in
    for Ascend's overflow register: there is no register on CPUs and GPUs, so the status is
    computed from the Tensors the status is made to depend on (ops.depend(status, grads)):
    NPUGetFloatStatus sets it to 1. where one of them holds an infinity or a NaN (overflow in
    float16, the case loss scaling checks); it cannot see overflows inside ops whose results
    were not made dependencies, as the register does."""
    out = _ops.zeros((8,), _dt.float32)
    _watch(out, [])
    return out


def _npu_clear_float_status(x):
    """NPUClearFloatStatus: zeros the status (in place, as Ascend's) and forgets what it
    watched; returns the zeroed status."""
    _check_status("NPUClearFloatStatus", x)
    zeros = _ops.mul(x, 0.0)
    _rebind(x, zeros)
    _watch(x, [])
    return x


def _npu_get_float_status(x):
    """NPUGetFloatStatus: every element of the status becomes 1. when a watched Tensor (see
    NPUAllocFloatStatus) has an infinity or a NaN, else stays as it was (0. after a clear);
    in place, as Ascend's, and returned. Models then test `reduce_sum(status) > 0`."""
    _check_status("NPUGetFloatStatus", x)
    flag = None
    watched = _WATCHED.get(id(x), [])
    for t in watched:
        bad = _ops.cast(_ops.any(_ops.logical_not(_ops.isfinite(t))), _dt.float32)
        flag = bad if flag is None else _ops.maximum(flag, bad)
    new = x if flag is None else _ops.maximum(x, _ops.broadcast_to(flag, (8,)))
    _rebind(x, new)
    _watch(x, watched)
    return x


# ------------------------------------------------------------------ RandomChoiceWithMask

def _unravel(flat, shape):
    """(n, rank) int32 coordinates of row-major flat indices."""
    cols, rest = [], flat
    for d in reversed(shape):
        quotient = _ops.floor_divide(rest, d)
        cols.append(rest - quotient * d)
        rest = quotient
    return _ops.cast(_ops.stack(cols[::-1], axis=1), _dt.int32)


def choice_with_mask(input_x, count=256, seed=None):
    """(index (count, rank) int32, mask (count,) bool): `count` elements of the bool
    input_x where it is True, chosen at random without repetition; when fewer are True, the
    rest are index 0 with mask False (ops.choice_with_mask, P.RandomChoiceWithMask).
    How: every element gets a distinct random integer key (uniform bits times n plus its
    index); a compiled bisection loop (about 24 + log2(n) passes, each one reduction over
    the input, whatever `count`) finds the threshold below which exactly min(count, #True)
    True elements lie; those are compacted in index order by a cumulative sum and a scatter.
    So the choice is uniformly random, its order is the input's (MindSpore's kernels return
    a random order too: treat the order as unspecified)."""
    from .control_flow import fori_loop
    from .ops_more import scatter_nd
    x = input_x if isinstance(input_x, _Tensor) else _Tensor(input_x)
    if x.dtype is not _dt.bool_:
        raise TypeError(f"For 'RandomChoiceWithMask', input_x must be a bool Tensor, got "
                        f"{x.dtype.name}")
    if not 1 <= len(x.shape) <= 5:
        raise ValueError(f"For 'RandomChoiceWithMask', the rank of input_x must be in [1, 5], "
                         f"got {len(x.shape)}")
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        raise ValueError(f"For 'RandomChoiceWithMask', count must be a positive int, got "
                         f"{count!r}")
    n = int(_np.prod(x.shape))
    valid = _ops.reshape(x, (n,))
    bits = _ops.cast(_ops.mul(_ops.uniform((n,), seed), float(1 << 24)), _dt.int64)
    key = _ops.add(_ops.mul(bits, n), _Tensor(_np.arange(n, dtype=_np.int64)))
    top = (1 << 24) * n
    key = _ops.where(valid, key, _Tensor(_np.int64(top)))
    k = _ops.minimum(_ops.reduce_sum(_ops.cast(valid, _dt.int64)), count)

    def halve(_, bounds):
        lo, hi = bounds
        mid = _ops.floor_divide(lo + hi, 2)
        enough = _ops.reduce_sum(_ops.cast(_ops.less(key, mid), _dt.int64)) >= k
        return _ops.where(enough, lo, mid + 1), _ops.where(enough, mid, hi)

    lo0, hi0 = _Tensor(_np.int64(0)), _Tensor(_np.int64(top))
    _, tau = fori_loop(0, int(top).bit_length() + 1, halve, (lo0, hi0), unroll=False)
    chosen = _ops.less(key, tau)
    slot = _ops.cumsum(_ops.cast(chosen, _dt.int32), 0) - 1
    slot = _ops.where(chosen, slot, count)
    coords = _unravel(_Tensor(_np.arange(n, dtype=_np.int64)), x.shape)
    out = scatter_nd(_ops.reshape(slot, (n, 1)), coords, (count + 1, len(x.shape)))
    index = out[:count]
    mask = _ops.less(_Tensor(_np.arange(count, dtype=_np.int64)), k)
    return index, mask


def _random_choice_with_mask(input_x, count=256, seed=0, seed2=0):
    from .ops_more import _seed
    return choice_with_mask(input_x, count, _seed(seed, seed2))


# ------------------------------------------------------------------ DynamicRNN

def _dynamic_rnn(x, w, b, seq_length=None, init_h=None, init_c=None, cell_type="LSTM",
                 direction="UNIDIRECTIONAL", cell_depth=1, use_peephole=False, keep_prob=1.0,
                 cell_clip=-1.0, num_proj=0, time_major=True, activation="tanh",
                 forget_bias=0.0, is_training=True):
    """DynamicRNN (Ascend's fused LSTM Primitive) on any target: the LSTM equations over a
    compiled loop over time (ops.Scan, unroll=False). w: (input_size + hidden, 4 hidden) with
    the gates in Ascend's order i, j (the cell candidate), f, o along its columns; b: (4
    hidden,); init_h, init_c: (1, batch, hidden). Gates: i, f, o sigmoids, j tanh, f with
    forget_bias added; c = f * c + i * j, h = o * tanh(c). Outputs (each (num_step, batch,
    hidden)): y, output_h, output_c (h and c of every step, y = h), i, j, f, o, tanhc.
    Only MindSpore's supported values: LSTM, unidirectional, depth 1, no peephole, keep_prob
    1, no cell_clip, no projection, time-major, tanh, seq_length None."""
    from .control_flow import scan
    for name, value, want in (("cell_type", cell_type, "LSTM"),
                              ("direction", direction, "UNIDIRECTIONAL"),
                              ("cell_depth", cell_depth, 1), ("use_peephole", use_peephole, False),
                              ("keep_prob", keep_prob, 1.0), ("cell_clip", cell_clip, -1.0),
                              ("num_proj", num_proj, 0), ("time_major", time_major, True),
                              ("activation", activation, "tanh")):
        if value != want:
            raise ValueError(f"For 'DynamicRNN', {name} must be {want!r} (the only value "
                             f"MindSpore supports), got {value!r}")
    if seq_length is not None:
        raise ValueError("For 'DynamicRNN', seq_length must be None (MindSpore supports only "
                         "None)")
    x, w, b = (v if isinstance(v, _Tensor) else _Tensor(v) for v in (x, w, b))
    if len(x.shape) != 3:
        raise ValueError(f"For 'DynamicRNN', x must be (num_step, batch_size, input_size), "
                         f"got shape {x.shape}")
    steps, batch, size = x.shape
    hidden = w.shape[1] // 4 if len(w.shape) == 2 else -1
    if len(w.shape) != 2 or w.shape != (size + hidden, 4 * hidden) or b.shape != (4 * hidden,):
        raise ValueError(f"For 'DynamicRNN', w must be (input_size + hidden_size, 4 * "
                         f"hidden_size) and b (4 * hidden_size,), got {w.shape} and {b.shape}")
    for name, v in (("init_h", init_h), ("init_c", init_c)):
        if not isinstance(v, _Tensor) or v.shape != (1, batch, hidden):
            raise ValueError(f"For 'DynamicRNN', {name} must be a Tensor of shape "
                             f"(1, {batch}, {hidden}), got {getattr(v, 'shape', v)}")

    def cell(carry, xt):
        h, c = carry
        gates = _ops.matmul(_ops.concat((xt, h), 1), w) + b
        gi, gj, gf, go = _ops.split(gates, hidden, 1)
        i, j, o = _ops.sigmoid(gi), _ops.tanh(gj), _ops.sigmoid(go)
        f = _ops.sigmoid(gf + forget_bias)
        c = f * c + i * j
        tanhc = _ops.tanh(c)
        h = o * tanhc
        return (h, c), _ops.stack((h, c, i, j, f, o, tanhc), 0)

    h0 = _ops.reshape(init_h, (batch, hidden))
    c0 = _ops.reshape(init_c, (batch, hidden))
    _, ys = scan(cell, (h0, c0), x, unroll=False)
    h, c, i, j, f, o, tanhc = _ops.unstack(_ops.transpose(ys, (1, 0, 2, 3)), 0)
    return h, h, c, i, j, f, o, tanhc



# ------------------------------------------------------------------ CTC loss

def _neg(dtype):
    """log(0) in the recursion: finite, so that gradients stay finite (not NaN); a
    log-likelihood below a tenth of it means no alignment (an infinite loss)."""
    return -1e30 if dtype in (_dt.float32, _dt.float64) else -1e4


def _lse3(a, b, c):
    m = _ops.maximum(_ops.maximum(a, b), c)
    return m + _ops.log(_ops.exp(a - m) + _ops.exp(b - m) + _ops.exp(c - m))


def _shift(alpha, k):
    """alpha moved k places right along the extended labels, log(0) coming in."""
    n, width = alpha.shape
    pad = _ops.full((n, k), _neg(alpha.dtype), dtype=alpha.dtype)
    return _ops.concat((pad, alpha[:, :width - k]), 1)


def _ctc_alphas(log_probs, targets, input_lengths, target_lengths, blank, merge_repeated):
    """(log-likelihood (N,), log_alpha (T, N, 2S+1)) of the CTC forward recursion in log
    space, a compiled loop over time (ops.Scan, unroll=False); a sample's alphas stop
    changing after its input length."""
    from .control_flow import scan
    steps, n, _ = log_probs.shape
    width = 2 * targets.shape[1] + 1
    fdt = log_probs.dtype
    blanks = _ops.full((n, targets.shape[1]), blank, dtype=_dt.int64)
    ext = _ops.reshape(_ops.stack((blanks, _ops.cast(targets, _dt.int64)), 2), (n, width - 1))
    ext = _ops.concat((ext, _ops.full((n, 1), blank, dtype=_dt.int64)), 1)
    em = _ops.gather_elements(log_probs, 2, _ops.broadcast_to(_ops.expand_dims(ext, 0),
                                                             (steps, n, width)))
    skip = _ops.not_equal(ext, blank)
    if merge_repeated:
        skip = _ops.logical_and(skip, _ops.not_equal(ext, _ops.concat(
            (_ops.full((n, 2), -1, dtype=_dt.int64), ext[:, :width - 2]), 1)))
    pos = _Tensor(_np.arange(width, dtype=_np.int64))
    alpha0 = _ops.where(_ops.less(pos, 2), em[0], _ops.full((n, width), _neg(fdt), dtype=fdt))
    in_len = _ops.cast(input_lengths, _dt.int64)
    times = _Tensor(_np.arange(steps, dtype=_np.int64).reshape(steps, 1, 1))
    active = _ops.cast(_ops.less(times, _ops.reshape(in_len, (1, n, 1))), fdt)
    xs = _ops.concat((em, active), 2)  # (T, N, width + 1): emissions, then "t < length"

    def step(alpha, x):
        e, live = x[:, :width], x[:, width:]
        new = _lse3(alpha, _shift(alpha, 1), _ops.where(skip, _shift(alpha, 2),
                                                        _ops.full((n, width), _neg(fdt), dtype=fdt)))
        new = new + e
        alpha = live * new + (1 - live) * alpha
        return alpha, alpha

    if steps > 1:
        last, rest = scan(step, alpha0, xs[1:], unroll=False)
        log_alpha = _ops.concat((_ops.expand_dims(alpha0, 0), rest), 0)
    else:
        last, log_alpha = alpha0, _ops.expand_dims(alpha0, 0)
    end = 2 * _ops.cast(target_lengths, _dt.int64)
    at = lambda k: _ops.reduce_sum(last * _ops.cast(_ops.equal(  # noqa: E731
        _ops.expand_dims(pos, 0), _ops.expand_dims(end - k, 1)), fdt), 1)
    a, b = at(0), _ops.where(end > 0, at(1), _ops.full((n,), _neg(fdt), dtype=fdt))
    m = _ops.maximum(a, b)
    return m + _ops.log(_ops.exp(a - m) + _ops.exp(b - m)), log_alpha


def _nll(loglik, zero_infinity):
    impossible = _ops.less(loglik, _neg(loglik.dtype) / 10)
    value = 0.0 if zero_infinity else float("inf")
    return _ops.where(impossible, _ops.full(loglik.shape, value, dtype=loglik.dtype), -loglik)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """(loss, log_alpha) of Connectionist Temporal Classification (ops.ctc_loss): log_probs
    (T, N, C) log-softmax outputs, targets (N, S) class indices (not `blank`),
    input_lengths and target_lengths (N,). loss: per sample (reduction 'none'), their sum, or
    the mean over the batch of each loss divided by its target length ('mean'); a sample
    with no alignment has an infinite loss, 0 with zero_infinity. log_alpha (N, T, 2S+1):
    the forward variables. Differentiable in log_probs (the recursion is ops, so ms-autodiff
    differentiates it)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"For 'ctc_loss', reduction must be 'none', 'mean' or 'sum', got "
                         f"{reduction!r}")
    lp, tg, il, tl = (v if isinstance(v, _Tensor) else _Tensor(v)
                      for v in (log_probs, targets, input_lengths, target_lengths))
    if len(lp.shape) != 3 or len(tg.shape) != 2 or tg.shape[0] != lp.shape[1]:
        raise ValueError(f"For 'ctc_loss', log_probs must be (T, N, C) and targets (N, S), got "
                         f"{lp.shape} and {tg.shape}")
    if not lp.dtype.is_float:
        raise TypeError(f"For 'ctc_loss', log_probs must be float, got {lp.dtype.name}")
    if not 0 <= blank < lp.shape[2]:
        raise ValueError(f"For 'ctc_loss', blank must be in [0, {lp.shape[2]}), got {blank}")
    loglik, log_alpha = _ctc_alphas(lp, tg, il, tl, blank, True)
    loss = _nll(loglik, zero_infinity)
    if reduction == "sum":
        loss = _ops.reduce_sum(loss)
    elif reduction == "mean":
        per = loss / _ops.cast(_ops.maximum(tl, 1), loss.dtype)
        loss = _ops.reduce_mean(per)
    return loss, _ops.transpose(log_alpha, (1, 0, 2))


def _sparse_labels(labels_indices, labels_values, batch, collapse):
    """Dense (N, n) labels and (N,) lengths from CTCLoss's sparse labels (indices [b, t]);
    with `collapse`, repeated labels of a sample merged first."""
    idx = _ops.cast(labels_indices, _dt.int64)
    n = idx.shape[0]
    vals = _ops.cast(labels_values, _dt.int64)
    from .ops_more import scatter_nd
    dense = scatter_nd(idx, vals, (batch, n))
    lengths = scatter_nd(idx[:, :1], _ops.ones((n,), _dt.int64), (batch,))
    if not collapse:
        return dense, lengths
    pos = _Tensor(_np.arange(n, dtype=_np.int64))
    prev = _ops.concat((_ops.full((batch, 1), -1, dtype=_dt.int64), dense[:, :n - 1]), 1)
    keep = _ops.logical_and(_ops.less(pos, _ops.expand_dims(lengths, 1)),
                            _ops.not_equal(dense, prev))
    slot = _ops.cumsum(_ops.cast(keep, _dt.int64), 1) - 1
    hit = _ops.logical_and(_ops.expand_dims(keep, 2),
                           _ops.equal(_ops.expand_dims(slot, 2), _ops.reshape(pos, (1, 1, n))))
    dense = _ops.reduce_sum(_ops.expand_dims(dense, 2) * _ops.cast(hit, _dt.int64), 1)
    return dense, _ops.reduce_sum(_ops.cast(keep, _dt.int64), 1)


def _ctc_loss_primitive(x, labels_indices, labels_values, sequence_length,
                        preprocess_collapse_repeated=False, ctc_merge_repeated=True,
                        ignore_longer_outputs_than_inputs=False):
    """CTCLoss (the Primitive, TensorFlow's convention): x (max_time, batch, num_classes)
    logits (softmax is applied here), sparse labels, blank num_classes - 1; returns (loss
    (batch,), its gradient with respect to x). The gradient is ms-autodiff's of the same
    composition (no second implementation)."""
    from .grad import grad
    x = x if isinstance(x, _Tensor) else _Tensor(x)
    if len(x.shape) != 3 or not x.dtype.is_float:
        raise TypeError(f"For 'CTCLoss', x must be a float (max_time, batch_size, "
                        f"num_classes) Tensor, got {x!r}")
    batch, classes = x.shape[1], x.shape[2]
    labels, lengths = _sparse_labels(labels_indices, labels_values, batch,
                                     preprocess_collapse_repeated)

    def losses(logits, labels, lengths, seq):
        lp = _ops.log_softmax(logits, -1)
        loglik, _ = _ctc_alphas(lp, labels, seq, lengths, classes - 1, ctc_merge_repeated)
        loss = _nll(loglik, False)
        if ignore_longer_outputs_than_inputs:
            longer = _ops.greater(lengths, _ops.cast(seq, _dt.int64))
            loss = _ops.where(longer, _ops.zeros_like(loss), loss)
        return loss

    seq = sequence_length if isinstance(sequence_length, _Tensor) else _Tensor(sequence_length)
    loss = losses(x, labels, lengths, seq)
    gradient = grad(lambda *a: _ops.reduce_sum(losses(*a)))(x, labels, lengths, seq)
    return loss, gradient


for _name in __all__:
    if _name in globals():
        globals()[_name] = _user_api("ms." + _name)(globals()[_name])
