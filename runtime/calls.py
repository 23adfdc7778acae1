"""Argument checking shared by every executable (in-process CPU, CPU library, CUDA)."""
from __future__ import annotations

import numpy as np


class CallError(ValueError):
    """A call with the wrong number, shapes or dtypes of inputs."""


def check_inputs(entry: str, specs, arrays, accept=()):
    """Inputs as C-contiguous numpy arrays of the declared dtypes (converted if needed);
    CallError naming the input on a count or shape mismatch. Objects of the `accept` types
    (device arrays) pass through unchanged when their shape and dtype match exactly."""
    if len(arrays) != len(specs):
        raise CallError(f"'{entry}' takes {len(specs)} inputs, got {len(arrays)}")
    out = []
    for i, (a, spec) in enumerate(zip(arrays, specs)):
        if accept and isinstance(a, accept):
            if tuple(a.shape) != tuple(spec.shape) or np.dtype(a.dtype) != spec.dtype.np:
                raise CallError(f"input #{i} of '{entry}' is {np.dtype(a.dtype).name}"
                                f"{list(a.shape)}, expected {spec}")
            out.append(a)
            continue
        a = np.asarray(a)
        if a.shape != tuple(spec.shape):
            raise CallError(f"input #{i} of '{entry}' has shape {a.shape}, expected "
                            f"{tuple(spec.shape)}")
        if a.dtype != spec.dtype.np or not a.flags.c_contiguous:
            a = np.asarray(a, dtype=spec.dtype.np, order="C")
        out.append(a)
    return out


def check_dtypes(entry: str, specs, arrays, accept=()):
    """Inputs as C-contiguous arrays of the declared dtypes, their shapes left to the caller
    (an entry with dynamic sizes checks them: runtime/dynamic.py). Objects of the `accept`
    types (device arrays) pass through unchanged when their dtype matches."""
    if len(arrays) != len(specs):
        raise CallError(f"'{entry}' takes {len(specs)} inputs, got {len(arrays)}")
    out = []
    for i, (a, spec) in enumerate(zip(arrays, specs)):
        if accept and isinstance(a, accept):
            if np.dtype(a.dtype) != spec.dtype.np:
                raise CallError(f"input #{i} of '{entry}' is {np.dtype(a.dtype).name}"
                                f"{list(a.shape)}, expected {spec}")
            out.append(a)
            continue
        a = np.asarray(a)
        if a.dtype != spec.dtype.np or not a.flags.c_contiguous:
            a = np.asarray(a, dtype=spec.dtype.np, order="C")
        out.append(a)
    return out
