"""The user's source location of the current call: the innermost frame outside mscc."""
from __future__ import annotations

import itertools
import os
import sys

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# mscc's own code; the repository's examples/, bench/ and test/ count as user code.
_INTERNAL = tuple(os.path.join(_PACKAGE_ROOT, d) + os.sep
                  for d in ("pyfront", "dialects", "passes", "runtime", "tools"))
_INTERNAL_FILES = (os.path.join(_PACKAGE_ROOT, "__init__.py"),)


def is_internal(filename: str) -> bool:
    return filename.startswith(_INTERNAL) or filename in _INTERNAL_FILES


def user_frame():
    frame = sys._getframe(1)
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_location():
    """(file, line, column) of the innermost user frame; column is 1-based (0 if unknown)."""
    frame = user_frame()
    if frame is None:
        return "<unknown>", 0, 0
    code = frame.f_code
    line, col = frame.f_lineno, 0
    positions = getattr(code, "co_positions", None)
    if positions is not None:
        pos = next(itertools.islice(positions(), frame.f_lasti // 2, None), None)
        if pos is not None and pos[0] is not None and pos[2] is not None:
            line, col = pos[0], pos[2] + 1
    return code.co_filename, line or 0, col
