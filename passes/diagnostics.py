"""Diagnostics from the parser, upstream passes and mscc passes, in one form.

Every error the compiler reports is a Diagnostic with a source location; drivers print
`file:line:col: error: message` (mlir-opt's format) and the frontend turns them into Python
exceptions naming the user's line.
"""
from __future__ import annotations

from typing import NamedTuple

from mlir import ir


class Diagnostic(NamedTuple):
    severity: str   # "error" | "warning" | "note" | "remark"
    file: str
    line: int
    col: int
    message: str
    notes: tuple = ()

    def format(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}: " if self.file else ""
        text = f"{where}{self.severity}: {self.message}"
        for n in self.notes:
            text += "\n" + n.format()
        return text


class CompileError(Exception):
    """Compilation failed; `diagnostics` say where and why."""

    def __init__(self, diagnostics, stage=None):
        self.diagnostics = list(diagnostics)
        self.stage = stage
        super().__init__("\n".join(d.format() for d in self.diagnostics) or "compilation failed")


_SEVERITY = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.NOTE: "note",
    ir.DiagnosticSeverity.REMARK: "remark",
}


def file_location(loc: ir.Location):
    """(file, line, col) of the first file location inside `loc`, else ("", 0, 0)."""
    if loc.is_a_file():
        return loc.filename, loc.start_line, loc.start_col
    if loc.is_a_name():
        return file_location(loc.child_loc)
    if loc.is_a_callsite():
        return file_location(loc.callee)
    if loc.is_a_fused():
        for sub in loc.locations:
            found = file_location(sub)
            if found[0]:
                return found
    return "", 0, 0


def from_mlir(d) -> Diagnostic:
    """Convert an ir.Diagnostic or ir.DiagnosticInfo."""
    file, line, col = file_location(d.location)
    notes = tuple(from_mlir(n) for n in d.notes)
    return Diagnostic(_SEVERITY.get(d.severity, "error"), file, line, col, str(d.message), notes)


def from_mlir_error(e: ir.MLIRError) -> list:
    diags = [from_mlir(d) for d in e.error_diagnostics]
    return diags or [Diagnostic("error", "", 0, 0, str(e))]


class DiagnosticCapture:
    """Collects every diagnostic emitted in the context while active."""

    def __init__(self, context: ir.Context):
        self.context = context
        self.diagnostics: list[Diagnostic] = []
        self._handler = None

    def __enter__(self):
        def handle(d):
            self.diagnostics.append(from_mlir(d))
            return True  # handled: do not print to stderr
        self._handler = self.context.attach_diagnostic_handler(handle)
        return self

    def __exit__(self, *exc):
        self._handler.detach()
        return False

    def add_error(self, e: ir.MLIRError):
        self.diagnostics.extend(from_mlir_error(e))

    @property
    def errors(self):
        return [d for d in self.diagnostics if d.severity == "error"]
