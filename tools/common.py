"""Shared by the command-line tools: printing diagnostics and never showing a traceback."""
from __future__ import annotations

import functools
import os
import sys
import traceback


class UsageError(Exception):
    """A bad command line or input file: reported as `tool: error: message`, exit code 1."""


def read_input(path: str) -> str:
    """The text of an input file ('-': stdin)."""
    try:
        if path == "-":  # as bytes: a text stdin would smuggle bad bytes in as surrogates
            return sys.stdin.buffer.read().decode("utf-8")
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise UsageError(f"could not open input file '{path}': {e.strerror}") from None
    except UnicodeDecodeError as e:
        where = "<stdin>" if path == "-" else path
        raise UsageError(f"{where} is not UTF-8 text (byte {e.start}): expected MLIR or "
                         "Python source") from None


def format_diagnostic(d, sources=None) -> str:
    """mlir-opt style: `file:line:col: error: message`, then the source line and a caret."""
    text = d.format() if not d.notes else d._replace(notes=()).format()
    src = (sources or {}).get(d.file)
    if src is not None and d.line > 0:
        lines = src.split("\n")
        if d.line <= len(lines):
            line = lines[d.line - 1]
            text += "\n" + line + "\n" + " " * max(0, d.col - 1) + "^"
    for n in d.notes:
        text += "\n" + format_diagnostic(n, sources)
    return text


def print_diagnostics(diags, sources=None, stream=None):
    stream = stream or sys.stderr
    for d in diags:
        print(format_diagnostic(d, sources), file=stream)


def guarded_main(tool: str):
    """Decorator for a CLI entry: turns any unexpected exception into one error line and exit
    code 1 (a traceback only with MSCC_DEBUG=1)."""
    def wrap(fn):
        @functools.wraps(fn)
        def main(argv=None):
            try:
                return fn(sys.argv[1:] if argv is None else argv)
            except KeyboardInterrupt:
                return 130
            except BrokenPipeError:
                return 1
            except SystemExit:
                raise
            except BaseException as e:  # noqa: BLE001  (the one place that catches all)
                if os.environ.get("MSCC_DEBUG"):
                    traceback.print_exc()
                print(f"{tool}: error: internal compiler error: {type(e).__name__}: {e}"
                      " (set MSCC_DEBUG=1 for a traceback)", file=sys.stderr)
                return 1
        return main
    return wrap
