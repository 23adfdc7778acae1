"""ms.set_context: execution mode and device target, as in MindSpore.

MindSpore's device names ("CPU", "GPU") are the API; inside mscc a target is the compiler's
name ("cpu", "cuda"), kept beside it so the jit fast path reads it without a mapping.
"""
from __future__ import annotations

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_DEVICE_TARGETS = {"CPU": "cpu", "GPU": "cuda"}
_context = {"mode": PYNATIVE_MODE, "device_target": "CPU", "target": "cpu"}


def set_context(mode=None, device_target=None, **unsupported):
    if unsupported:
        raise TypeError(f"set_context() got unsupported options: {', '.join(unsupported)}")
    if mode is not None:
        if mode not in (GRAPH_MODE, PYNATIVE_MODE):
            raise ValueError("mode must be ms.GRAPH_MODE or ms.PYNATIVE_MODE")
        _context["mode"] = mode
    if device_target is not None:
        if device_target not in _DEVICE_TARGETS:
            raise ValueError(f"device_target must be one of {', '.join(_DEVICE_TARGETS)}")
        _context["device_target"] = device_target
        _context["target"] = _DEVICE_TARGETS[device_target]


def get_context(key):
    return _context[key]


def default_target() -> str:
    """The compiler target for the current device_target ("cpu" or "cuda")."""
    return _context["target"]
