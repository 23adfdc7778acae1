"""`mscc FILE.py`: run the file, trace its jit functions into one ms module.

Every failure becomes a CompileError with a location in the user's file (a syntax error, an
exception while the file runs, a shape mistake while tracing), so the CLI prints
`file:line:col: error: ...` and exits 1.
"""
from __future__ import annotations

import traceback

from ..passes.diagnostics import CompileError, Diagnostic
from .jit import JitFunction, jit
from .tensor import Tensor


def _error(path, line, col, message):
    return CompileError([Diagnostic("error", path, line or 0, col or 0, message)])


def _from_exception(path, e: BaseException) -> CompileError:
    location = getattr(e, "location", None)
    if location is not None:
        file, line, col = location
        message = str(e).rsplit(" (at ", 1)[0]
        return _error(file, line, col, message)
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == path]
    line = frames[-1].lineno if frames else 0
    col = (frames[-1].colno or 0) + 1 if frames and getattr(frames[-1], "colno", None) is not None else 0
    return _error(path, line, col, f"{type(e).__name__}: {e}")


def _run_file(path, text) -> dict:
    try:
        code = compile(text, path, "exec")
    except SyntaxError as e:
        raise _error(path, e.lineno, e.offset, f"invalid Python syntax: {e.msg}") from None
    namespace = {"__name__": "__mscc_main__", "__file__": path}
    try:
        exec(code, namespace)
    except Exception as e:  # noqa: BLE001  (any failure of user code is reported, located)
        raise _from_exception(path, e) from None
    return namespace


def _entries(path, namespace, entry, signature):
    if entry is not None:
        obj = namespace.get(entry)
        if not callable(obj):
            names = [n for n, v in namespace.items() if callable(v) and not n.startswith("_")
                     and getattr(v, "__module__", None) in (None, "__mscc_main__")]
            raise _error(path, 0, 0, f"no function '{entry}' in the file (functions: "
                                     f"{', '.join(names) or 'none'})")
        fn = obj if isinstance(obj, JitFunction) else JitFunction(obj)
        sig = signature if signature is not None else fn.input_signature
        if sig is None:
            raise _error(path, 0, 0, f"'{entry}' has no input_signature; pass "
                                     "--input-signature, e.g. \"f32[8,16],f32[16]\"")
        return [(entry, fn, tuple(sig))]
    found = [(name, obj, obj.input_signature) for name, obj in namespace.items()
             if isinstance(obj, JitFunction) and obj.input_signature is not None]
    if not found:
        raise _error(path, 0, 0, "no @ms.jit(input_signature=...) function in the file; "
                                 "name one with --entry NAME --input-signature ...")
    return found


def trace_python_file(path, text, entry=None, input_signature=None):
    """(module, parameters): the ms module (stage `ms`) with one function per jit entry of
    the file, and per function the current values of the Parameters it reads (its trailing
    arguments), so that `--run` uses them instead of random data."""
    namespace = _run_file(path, text)
    module, parameters = None, {}
    for name, fn, sig in _entries(path, namespace, entry, input_signature):
        placeholders = [Tensor(shape=s.shape, dtype=s.dtype) for s in sig]
        try:
            tr = fn.trace(tuple(placeholders))[0]
        except CompileError:
            raise
        except Exception as e:  # noqa: BLE001  (user code failed while tracing)
            raise _from_exception(path, e) from None
        parameters[tr.name] = [p.asnumpy() for p in tr.param_order]
        if module is None:
            module = tr.module
            continue
        with module.context:
            for op in list(tr.module.body.operations):
                op.detach_from_parent()
                module.body.append(op)
    return module, parameters
