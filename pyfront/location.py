"""The user's source location of the current call (the innermost frame outside mscc), and the
boundary where mistakes in user code become exceptions that name the op and end with that
location: `(at file:line)`, MindSpore-style ("For 'ms.reshape', ...").

This module imports neither mlir nor numpy: Tensor and ops use it at import time.
"""
from __future__ import annotations

import functools
import itertools
import os
import re
import sys
import sysconfig

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# mscc's own code; the repository's examples/, bench/ and test/ count as user code.
_INTERNAL = tuple(os.path.join(_PACKAGE_ROOT, d) + os.sep
                  for d in ("pyfront", "dialects", "passes", "runtime", "tools"))
_INTERNAL_FILES = (os.path.join(_PACKAGE_ROOT, "__init__.py"),)
# The standard library and installed packages (numpy, mlir): code mscc calls, not user code.
_LIBRARIES = tuple(sorted({os.path.join(p, "") for k, p in sysconfig.get_paths().items()
                           if k in ("stdlib", "platstdlib", "purelib", "platlib")}))


# Frames of compiled extensions name their Cython source relative to its package
# ("numpy/random/_generator.pyx"): library code too. (numpy's TypeError for a tuple where
# nn.Dense's initializer wanted a size passed as the user's own error, unlocated.)
_CYTHON = (".pyx", ".pxd", ".pxi")


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


# ---------------------------------------------------------------------- located errors

class LocatedValueError(ValueError):
    """A shape or value mistake in user code; `location` is (file, line, column)."""

    def __init__(self, message, location):
        super().__init__(message)
        self.location = location


class LocatedTypeError(TypeError):
    """A dtype or argument-type mistake in user code; `location` is (file, line, column)."""

    def __init__(self, message, location):
        super().__init__(message)
        self.location = location


class LocatedIndexError(IndexError):
    """An indexing mistake in user code; `location` is (file, line, column)."""

    def __init__(self, message, location):
        super().__init__(message)
        self.location = location


def located(message: str, where) -> str:
    file, line, _ = where
    return f"{message} (at {file}:{line})"


def located_error(kind: type, message: str, where=None):
    """A Located* error of `kind`'s family, pointing at `where` (default: the user's line)."""
    where = where or user_location()
    cls = (LocatedIndexError if issubclass(kind, IndexError) else
           LocatedValueError if issubclass(kind, (ValueError, ArithmeticError, KeyError)) else
           LocatedTypeError)
    return cls(located(message, where), where)


# ---------------------------------------------------------------------- the API boundary

# What internal code raises when a user's argument is wrong: int()/float()/operator.index on
# a float or a string, numpy conversions (an int out of range: OverflowError), attribute
# access on a None, and mscc's own ValueError/TypeError/IndexError without a location.
CONVERTED = (TypeError, ValueError, LookupError, ArithmeticError, AttributeError)
_ENDS_LOCATED = re.compile(r"\(at [^()]*:\d+\)$")


def user_api(name, note=""):
    """Decorator: `fn` is called by users; an exception its mscc code raises without a
    location is re-raised as the matching Located* error, "For '<name>' (<note>), <message>
    (at <user file>:<line>)". `name` is a string, or a function of the first argument (a
    Cell names itself). A successful call costs one try block and the call through this
    wrapper (~60 ns); nothing else happens until something fails."""
    def decorate(fn):
        @functools.wraps(fn)
        def boundary(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except CONVERTED as e:
                better = as_user_error(e, name if type(name) is str else name(args[0]), note)
                if better is e:
                    raise
                raise better  # (relocate set its cause: the context is not repeated)
        mark_boundary(boundary.__code__)  # one code object, shared by every wrapper
        boundary.__user_api__ = True
        return boundary
    return decorate


_BOUNDARY_CODE: set = set()


def mark_boundary(code):
    """Declare a function whose body catches CONVERTED and raises `as_user_error(...)` (the
    wrapper above, or a hot function that does it inline to save the wrapper's call)."""
    _BOUNDARY_CODE.add(code)


def as_user_error(e: BaseException, name: str, note: str = "") -> BaseException:
    """What a boundary called `name` raises for `e`, caught in the boundary's own frame (the
    caller of this function). When mscc called that boundary under another one (ops.ones calls
    ops.full), `e` goes on unchanged: the outer one, the function the user called, names it."""
    if _under_another_boundary(sys._getframe(2)):
        return e
    return relocate(e, name, note)


def _under_another_boundary(frame) -> bool:
    """Whether, between `frame` (a boundary's caller) and the user's code, mscc code runs
    inside another boundary."""
    while frame is not None and is_internal(frame.f_code.co_filename):
        if frame.f_code in _BOUNDARY_CODE:
            return True
        frame = frame.f_back
    return False


def relocate(e: BaseException, name: str, note: str = "") -> BaseException:
    """`e` as the user should see it from a call of `name`: `e` itself when it already says
    where it happened, or when it passed through user code (the user's own exception from a
    construct or a function given to grad/jit, or an mscc error located inside it)."""
    if getattr(e, "location", None) is not None or _ENDS_LOCATED.search(str(e)):
        return e
    if _passed_through_user_code(e.__traceback__):
        return e
    message = _describe(e)
    if not message.startswith("For '"):
        message = f"For '{name}'{f' ({note})' if note else ''}, {message}"
    better = located_error(type(e), message)
    # A check of the frontend or the op rules (a TypeError that stays a TypeError) says all
    # there is to say. Anything else (an OverflowError, AttributeError or KeyError, or an
    # error from the passes or the runtime, which may be a bug) stays visible as the cause.
    plain = type(better).__mro__[1] in type(e).__mro__ and _raised_in_frontend(e.__traceback__)
    better.__cause__ = None if plain else e
    better.__suppress_context__ = True
    return better


_FRONTEND = tuple(os.path.join(_PACKAGE_ROOT, d) + os.sep for d in ("pyfront", "dialects"))


def _raised_in_frontend(tb) -> bool:
    """Whether the innermost mscc frame of `tb` is frontend or op-rule code."""
    origin = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if is_internal(filename):
            origin = filename
        tb = tb.tb_next
    return origin is not None and origin.startswith(_FRONTEND)


def _describe(e) -> str:
    if isinstance(e, (TypeError, ValueError, IndexError)):
        return str(e)
    if isinstance(e, ArithmeticError):
        return f"a value is out of range ({type(e).__name__}: {e})"
    return f"an argument has an unsupported type or value ({type(e).__name__}: {e})"


def _passed_through_user_code(tb) -> bool:
    """Whether a frame below the boundary (the first entry of `tb`) is user code."""
    tb = tb.tb_next if tb is not None else None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not (is_internal(filename) or filename.startswith(_LIBRARIES)
                or filename.startswith("<frozen") or filename.endswith(_CYTHON)):
            return True
        tb = tb.tb_next
    return False
