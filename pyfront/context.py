"""ms.set_context: execution mode and device target, as in MindSpore.

MindSpore's device names ("CPU", "GPU") are the API; inside mscc a target is the compiler's
name ("cpu", "cuda"), kept beside it so the jit fast path reads it without a mapping.
"""
from __future__ import annotations

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_DEVICE_TARGETS = {"CPU": "cpu", "GPU": "cuda"}
_context = {"mode": PYNATIVE_MODE, "device_target": "CPU", "target": "cpu", "device_id": 0,
            "save_graphs": False}


def set_context(mode=None, device_target=None, device_id=None, save_graphs=None,
                **unsupported):
    """MindSpore's set_context for the options mscc has: mode, device_target, device_id
    (mscc uses device 0 only: select a GPU with CUDA_VISIBLE_DEVICES) and save_graphs (False
    only: IR dumps come from `mscc --dump-dir` or `jit(f).lower(...).as_text(stage)`)."""
    if unsupported:
        raise TypeError(f"set_context() got unsupported options: {', '.join(unsupported)}")
    if device_id is not None:
        _check_device_id(device_id)
    if save_graphs is not None and save_graphs not in (False, 0):
        raise ValueError("set_context(save_graphs=...) is not supported by mscc: use "
                         "`mscc FILE.py --dump-dir DIR` or jit(f).lower(...).as_text(stage)")
    if mode is not None:
        if mode not in (GRAPH_MODE, PYNATIVE_MODE):
            raise ValueError("mode must be ms.GRAPH_MODE or ms.PYNATIVE_MODE")
        _context["mode"] = mode
    if device_target is not None:
        if device_target not in _DEVICE_TARGETS:
            raise ValueError(f"device_target must be one of {', '.join(_DEVICE_TARGETS)}")
        _context["device_target"] = device_target
        _context["target"] = _DEVICE_TARGETS[device_target]


def _check_device_id(device_id):
    if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id != 0:
        raise ValueError(f"device_id must be 0 (mscc runs on the first device; choose a GPU "
                         f"with CUDA_VISIBLE_DEVICES), got {device_id!r}")


def set_device(device_target, device_id=None):
    """MindSpore 2.5's ms.set_device: set_context(device_target=..., device_id=...)."""
    set_context(device_target=device_target, device_id=device_id)


def get_context(key):
    if key not in _context:
        raise ValueError(f"For 'get_context', the key must be one of "
                         f"{', '.join(sorted(_context))}, got {key!r}")
    return _context[key]


def default_target() -> str:
    """The compiler target for the current device_target ("cpu" or "cuda")."""
    return _context["target"]
