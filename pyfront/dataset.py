"""ms.dataset: MindSpore's dataset pipeline over numpy, in memory (no downloads, no workers).

`NumpySlicesDataset(data, column_names=None, shuffle=True)` and `GeneratorDataset(source,
column_names, shuffle=None)` are sources; `.shuffle(buffer_size)`, `.map(operations,
input_columns)`, `.batch(batch_size, drop_remainder)`, `.repeat(count)` chain pipelines;
`.create_tuple_iterator()` / `.create_dict_iterator()` (and `for row in dataset`) read it, as
Tensors or (output_numpy=True) numpy arrays. Each pass over a dataset is an epoch: shuffles
draw a new order per epoch from the dataset seed (`config.set_seed`, else the seed of
ms.set_seed), so a pipeline built after the same seed yields the same batches.
`vision.Rescale/Normalize/HWC2CHW` and `transforms.TypeCast/Compose` are the transforms of
MindSpore's tutorials, on numpy arrays.
"""
from __future__ import annotations

import importlib.machinery
import numbers
import sys
import types

import numpy as np

from ..dialects import dtypes as _dt
from .tensor import Tensor

# ------------------------------------------------------------------ config (seed)
config = types.ModuleType("config", "ms.dataset.config: the dataset seed")
config._seed = None


def _set_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an int in [0, 2^32), got {seed!r}")
    config._seed = seed


def _get_seed():
    if config._seed is not None:
        return config._seed
    from .nn import init
    return init.global_seed()


config.set_seed, config.get_seed = _set_seed, _get_seed


def _unsupported(who, **given):
    """MindSpore arguments mscc does not implement: an error naming them, never ignored."""
    bad = sorted(k for k, v in given.items() if v is not None)
    if bad:
        raise NotImplementedError(f"{who}: {', '.join(bad)} not supported by mscc")


# ------------------------------------------------------------------ the pipeline
class Dataset:
    """A node of the pipeline: `_epoch(n)` yields the rows (tuples of numpy arrays) of pass
    n; `columns` names them."""

    def __init__(self, columns):
        self.columns = list(columns)
        self._passes = 0

    def _epoch(self, n):
        raise NotImplementedError

    def _rng(self, n, salt):
        return np.random.default_rng([_get_seed(), n, salt])

    # -- chaining
    def shuffle(self, buffer_size):
        return _Shuffle(self, buffer_size)

    def batch(self, batch_size, drop_remainder=False, num_parallel_workers=None,
              per_batch_map=None, input_columns=None, output_columns=None):
        _unsupported("batch", per_batch_map=per_batch_map, input_columns=input_columns,
                     output_columns=output_columns)
        return _Batch(self, batch_size, drop_remainder)

    def map(self, operations, input_columns=None, output_columns=None,
            num_parallel_workers=None, python_multiprocessing=False, column_order=None):
        _unsupported("map", column_order=column_order)
        return _Map(self, operations, input_columns, output_columns)

    def repeat(self, count=None):
        return _Repeat(self, count)

    # -- reading
    def get_col_names(self):
        return list(self.columns)

    def get_dataset_size(self):
        """The number of rows (batches after .batch) one pass yields."""
        return sum(1 for _ in self._epoch(0))

    def get_batch_size(self):
        return 1

    def create_tuple_iterator(self, columns=None, num_epochs=-1, output_numpy=False,
                              do_copy=True):
        return _Iterator(self, num_epochs, output_numpy, columns, as_dict=False)

    def create_dict_iterator(self, num_epochs=-1, output_numpy=False, do_copy=True):
        return _Iterator(self, num_epochs, output_numpy, None, as_dict=True)

    def __iter__(self):
        return iter(self.create_tuple_iterator(num_epochs=1))

    def _next_pass(self):
        self._passes += 1
        return self._passes - 1


class _Iterator:
    """One for-loop over it is one epoch; num_epochs (-1: no limit) bounds the loops."""

    def __init__(self, dataset, num_epochs, output_numpy, columns, as_dict):
        if isinstance(num_epochs, bool) or not isinstance(num_epochs, int) or num_epochs == 0 \
                or num_epochs < -1:
            raise ValueError(f"num_epochs must be -1 or a positive int, got {num_epochs!r}")
        names = dataset.columns if columns is None else list(columns)
        missing = [c for c in names if c not in dataset.columns]
        if missing:
            raise ValueError(f"columns {missing} are not in the dataset's {dataset.columns}")
        self._dataset, self._left, self._numpy = dataset, num_epochs, output_numpy
        self._pick = [dataset.columns.index(c) for c in names]
        self._names, self._dict, self._rows = names, as_dict, None

    def __iter__(self):
        return self

    def __next__(self):
        if self._rows is None:
            if self._left == 0:
                raise StopIteration
            self._left -= 1 if self._left > 0 else 0
            self._rows = self._dataset._epoch(self._dataset._next_pass())
        try:
            row = next(self._rows)
        except StopIteration:
            self._rows = None
            raise
        values = [row[i] if self._numpy else Tensor(row[i]) for i in self._pick]
        return dict(zip(self._names, values)) if self._dict else values


def _as_column(values):
    arr = np.asarray(values)
    if arr.dtype == object:
        raise TypeError("dataset columns must be numbers or arrays of one shape")
    return arr


class NumpySlicesDataset(Dataset):
    """Rows sliced along the first axis of `data`: a dict (a column per key), a tuple (a
    column per element), or a list / array (one column)."""

    def __init__(self, data, column_names=None, num_samples=None, num_parallel_workers=1,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None):
        _unsupported("NumpySlicesDataset", sampler=sampler)
        if isinstance(data, dict):
            names, cols = list(data), [_as_column(v) for v in data.values()]
        elif isinstance(data, tuple):
            names, cols = None, [_as_column(v) for v in data]
        else:
            names, cols = None, [_as_column(data)]
        if column_names is not None:
            names = [column_names] if isinstance(column_names, str) else list(column_names)
        names = names or [f"column_{i}" for i in range(len(cols))]
        if len(names) != len(cols):
            raise ValueError(f"{len(names)} column_names for {len(cols)} columns")
        if any(c.ndim == 0 for c in cols) or len({len(c) for c in cols}) != 1:
            raise ValueError("every column of NumpySlicesDataset needs the same first "
                             f"dimension, got shapes {[c.shape for c in cols]}")
        super().__init__(names)
        self._cols, self._shuffle = cols, shuffle is None or bool(shuffle)
        self._shards = _shards(num_shards, shard_id)
        count = -(-len(cols[0]) // self._shards[0])  # (each shard's rows: the ceiling)
        self._n = count if num_samples is None else min(int(num_samples), count)

    def _epoch(self, n):
        count = len(self._cols[0])
        order = self._rng(n, 0).permutation(count) if self._shuffle else np.arange(count)
        for i in _shard_of(order, *self._shards)[:self._n]:
            yield tuple(c[i] for c in self._cols)

    def get_dataset_size(self):
        return self._n


def _shards(num_shards, shard_id):
    """(num_shards, shard_id), both given or neither (one shard), checked as MindSpore's."""
    if (num_shards is None) != (shard_id is None):
        raise RuntimeError("num_shards and shard_id need to be passed in together")
    if num_shards is None:
        return 1, 0
    for name, v in (("num_shards", num_shards), ("shard_id", shard_id)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if num_shards < 1:
        raise ValueError(f"num_shards {num_shards} must be a positive int")
    if not 0 <= shard_id < num_shards:
        raise ValueError(f"shard_id {shard_id} must be in [0, {num_shards})")
    return int(num_shards), int(shard_id)


def _shard_of(order, num_shards, shard_id):
    """MindSpore's DistributedSampler: the (shuffled) row order, padded from its start to a
    multiple of num_shards so every shard has as many rows, then rows shard_id,
    shard_id + num_shards, ... Every process shuffles with the same seed, so the shards are
    disjoint but for the padding."""
    if num_shards == 1:
        return order
    total = -(-len(order) // num_shards) * num_shards
    padded = np.concatenate([order, np.resize(order, total - len(order))]) \
        if total > len(order) else order
    return padded[shard_id::num_shards]


def _row(item, width):
    row = item if isinstance(item, tuple) else (item,)
    row = tuple(np.asarray(v) for v in row)
    if width is not None and len(row) != width:
        raise ValueError(f"the source gave a row of {len(row)} columns, but column_names "
                         f"names {width}")
    return row


class GeneratorDataset(Dataset):
    """Rows from a Python source: a random-accessible object (__getitem__ and __len__;
    shuffled unless shuffle=False), an iterable, or a callable returning an iterable (read in
    order; shuffle=True on those is an error, as MindSpore's)."""

    def __init__(self, source, column_names=None, column_types=None, schema=None,
                 num_samples=None, num_parallel_workers=1, shuffle=None, sampler=None,
                 num_shards=None, shard_id=None, python_multiprocessing=True):
        _unsupported("GeneratorDataset", column_types=column_types, schema=schema,
                     sampler=sampler, num_shards=num_shards, shard_id=shard_id)
        self._random_access = hasattr(source, "__getitem__") and hasattr(source, "__len__")
        if not (self._random_access or callable(source) or hasattr(source, "__iter__")):
            raise TypeError(f"GeneratorDataset's source must be callable, iterable or random "
                            f"accessible, got {type(source).__name__}")
        if shuffle and not self._random_access:
            raise ValueError("GeneratorDataset: shuffle needs a random-accessible source "
                             "(__getitem__ and __len__)")
        names = [column_names] if isinstance(column_names, str) else column_names
        self._width = None if names is None else len(names)
        if names is None:
            first = next(iter(self._items(0, False)))
            names = [f"column_{i}" for i in range(len(_row(first, None)))]
        super().__init__(names)
        self._source, self._num_samples = source, num_samples
        self._shuffle = self._random_access and shuffle is not False

    def _items(self, n, shuffle):
        source = self._source
        if self._random_access:
            count = len(source)
            order = self._rng(n, 0).permutation(count) if shuffle else range(count)
            return (source[int(i)] for i in order)
        return iter(source() if callable(source) and not hasattr(source, "__iter__") else source)

    def _epoch(self, n):
        for k, item in enumerate(self._items(n, self._shuffle)):
            if self._num_samples is not None and k >= self._num_samples:
                return
            yield _row(item, self._width)


class _Shuffle(Dataset):
    """MindSpore's buffer shuffle: a buffer of buffer_size rows, each output a random pick
    from it, refilled from the input."""

    def __init__(self, parent, buffer_size):
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 2:
            raise ValueError(f"buffer_size must be an int greater than 1, got {buffer_size!r}")
        super().__init__(parent.columns)
        self._parent, self._size = parent, buffer_size

    def _epoch(self, n):
        rng, buffer = self._rng(n, 1), []
        for row in self._parent._epoch(n):
            buffer.append(row)
            if len(buffer) == self._size:
                i = int(rng.integers(len(buffer)))
                buffer[i], buffer[-1] = buffer[-1], buffer[i]
                yield buffer.pop()
        for i in rng.permutation(len(buffer)):
            yield buffer[i]

    def get_dataset_size(self):
        return self._parent.get_dataset_size()


class _Batch(Dataset):
    def __init__(self, parent, batch_size, drop_remainder):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        super().__init__(parent.columns)
        self._parent, self._size, self._drop = parent, batch_size, bool(drop_remainder)

    def _stack(self, rows):
        out = []
        for name, values in zip(self.columns, zip(*rows)):
            shapes = {v.shape for v in values}
            if len(shapes) != 1:
                raise RuntimeError(f"batch: inconsistent shapes in column '{name}': "
                                   f"{sorted(shapes)}")
            out.append(np.stack(values))
        return tuple(out)

    def _epoch(self, n):
        rows = []
        for row in self._parent._epoch(n):
            rows.append(row)
            if len(rows) == self._size:
                yield self._stack(rows)
                rows = []
        if rows and not self._drop:
            yield self._stack(rows)

    def get_dataset_size(self):
        full, rest = divmod(self._parent.get_dataset_size(), self._size)
        return full + (1 if rest and not self._drop else 0)

    def get_batch_size(self):
        return self._size


class _Map(Dataset):
    """operations (a callable or a list, applied in turn) on input_columns (default: the
    first column); their outputs replace those columns, named output_columns."""

    def __init__(self, parent, operations, input_columns, output_columns):
        ops_ = list(operations) if isinstance(operations, (list, tuple)) else [operations]
        if not ops_ or not all(callable(op) for op in ops_):
            raise TypeError("map's operations must be a callable or a list of callables")
        names = lambda c: [c] if isinstance(c, str) else list(c)  # noqa: E731
        inputs = parent.columns[:1] if input_columns is None else names(input_columns)
        missing = [c for c in inputs if c not in parent.columns]
        if missing:
            raise ValueError(f"map: input_columns {missing} are not in {parent.columns}")
        outputs = inputs if output_columns is None else names(output_columns)
        first = parent.columns.index(inputs[0])
        kept = [c for c in parent.columns if c not in inputs]
        columns = kept[:first] + outputs + kept[first:]
        super().__init__(columns)
        self._parent, self._ops, self._inputs, self._outputs = parent, ops_, inputs, outputs

    def _apply(self, row):
        named = dict(zip(self._parent.columns, row))
        values = tuple(named[c] for c in self._inputs)
        for op in self._ops:
            out = op(*values)
            values = tuple(out) if isinstance(out, tuple) else (out,)
        if len(values) != len(self._outputs):
            raise RuntimeError(f"map: the operations gave {len(values)} columns for "
                               f"output_columns {self._outputs}")
        named.update(zip(self._outputs, (np.asarray(v) for v in values)))
        return tuple(named[c] for c in self.columns)

    def _epoch(self, n):
        return (self._apply(row) for row in self._parent._epoch(n))

    def get_dataset_size(self):
        return self._parent.get_dataset_size()

    def get_batch_size(self):
        return self._parent.get_batch_size()


class _Repeat(Dataset):
    def __init__(self, parent, count):
        if count is not None and count != -1 and (not isinstance(count, int) or count < 1):
            raise ValueError(f"repeat count must be a positive int or -1, got {count!r}")
        super().__init__(parent.columns)
        self._parent, self._count = parent, None if count in (None, -1) else count

    def _epoch(self, n):
        k = 0
        while self._count is None or k < self._count:
            yield from self._parent._epoch(n * (self._count or 1) + k)
            k += 1

    def get_dataset_size(self):
        if self._count is None:
            raise RuntimeError("the size of an endlessly repeated dataset is not defined")
        return self._parent.get_dataset_size() * self._count

    def get_batch_size(self):
        return self._parent.get_batch_size()


# ------------------------------------------------------------------ transforms
def _np_dtype(data_type):
    if isinstance(data_type, _dt.DType):
        return data_type.np
    return np.dtype(data_type)


class TypeCast:
    """Cast a column to `data_type` (an mscc or numpy dtype)."""

    def __init__(self, data_type):
        self.data_type = _np_dtype(data_type)

    def __call__(self, x):
        return np.asarray(x).astype(self.data_type)


class Compose:
    """Apply `transforms` in turn."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, *values):
        for t in self.transforms:
            out = t(*values)
            values = out if isinstance(out, tuple) else (out,)
        return values if len(values) > 1 else values[0]


class Rescale:
    """x * rescale + shift, as float32."""

    def __init__(self, rescale, shift):
        for name, v in (("rescale", rescale), ("shift", shift)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"Rescale's {name} must be a number, got {v!r}")
        self.rescale, self.shift = float(rescale), float(shift)

    def __call__(self, x):
        return (np.asarray(x, np.float32) * np.float32(self.rescale)
                + np.float32(self.shift)).astype(np.float32)


class Normalize:
    """(x - mean) / std per channel (the last axis when is_hwc, else the first), float32."""

    def __init__(self, mean, std, is_hwc=True):
        self.mean, self.std = np.asarray(mean, np.float32), np.asarray(std, np.float32)
        if self.mean.shape != self.std.shape or self.mean.ndim != 1:
            raise ValueError("Normalize's mean and std must be sequences of one length")
        if (self.std <= 0).any():
            raise ValueError("Normalize's std values must be positive")
        self.is_hwc = bool(is_hwc)

    def __call__(self, x):
        x = np.asarray(x, np.float32)
        channels = x.shape[-1] if self.is_hwc else x.shape[0]
        if len(self.mean) not in (1, channels):
            raise ValueError(f"Normalize has {len(self.mean)} means for {channels} channels")
        shape = (-1,) if self.is_hwc else (-1,) + (1,) * (x.ndim - 1)
        return ((x - self.mean.reshape(shape)) / self.std.reshape(shape)).astype(np.float32)


class HWC2CHW:
    """(H, W, C) -> (C, H, W)."""

    def __call__(self, x):
        x = np.asarray(x)
        if x.ndim != 3:
            raise ValueError(f"HWC2CHW needs an (H, W, C) image, got shape {x.shape}")
        return np.ascontiguousarray(x.transpose(2, 0, 1))


transforms = types.ModuleType("transforms", "ms.dataset.transforms")
transforms.TypeCast, transforms.Compose = TypeCast, Compose
vision = types.ModuleType("vision", "ms.dataset.vision")
vision.Rescale, vision.Normalize, vision.HWC2CHW = Rescale, Normalize, HWC2CHW


def _register_submodules():
    """`import mscc.dataset.vision as vision` (MindSpore's import line) as well as
    `from mscc.dataset import vision`: the two namespaces become importable submodules of
    this module, which mscc's alias finder resolves."""
    globals()["__path__"] = []  # submodules make this a package (found in sys.modules only)
    for name, module in (("transforms", transforms), ("vision", vision)):
        module.__name__ = f"{__name__}.{name}"
        module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)
        sys.modules[module.__name__] = module


_register_submodules()

__all__ = ["Dataset", "NumpySlicesDataset", "GeneratorDataset", "config", "transforms",
           "vision"]
