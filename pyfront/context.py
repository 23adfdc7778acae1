"""ms.set_context: execution mode and device target, as in MindSpore."""
from __future__ import annotations

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_DEVICE_TARGETS = {"CPU": "cpu", "GPU": "cuda"}
_context = {"mode": PYNATIVE_MODE, "device_target": "CPU"}


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


def get_context(key):
    return _context[key]


def default_target() -> str:
    """The compiler target for the current device_target ("cpu" or "cuda")."""
    return _DEVICE_TARGETS[_context["device_target"]]
