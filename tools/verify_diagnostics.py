"""`--verify-diagnostics` as in mlir-opt: `// expected-error@+1 {{text}}` comments name the
diagnostics a chunk must produce (substring match on the message); anything unexpected or
missing is reported as an error at its location."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..passes.diagnostics import Diagnostic

_EXPECTED = re.compile(
    r"expected-(error|warning|note|remark)(?:@([+-]\d+|above|below))?\s*\{\{(.*?)\}\}")


@dataclass
class Expectation:
    severity: str
    line: int      # line the diagnostic must be reported on
    text: str
    comment_line: int
    col: int
    matched: bool = False


def parse_expectations(text: str, first_line: int = 1) -> list[Expectation]:
    """Expectations in a chunk whose first line is `first_line` of the file."""
    out = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        lineno = first_line + i
        for m in _EXPECTED.finditer(line):
            severity, where, msg = m.groups()
            if where is None:
                target = lineno
            elif where == "above":
                target = lineno - 1
            elif where == "below":
                target = lineno + 1
            else:
                target = lineno + int(where)
            out.append(Expectation(severity, target, msg, lineno, m.start() + 1))
    return out


def _flatten(diags):
    for d in diags:
        yield d
        yield from _flatten(d.notes)


def check(diagnostics, expectations, filename: str) -> list[Diagnostic]:
    """Errors describing every mismatch; empty when all expectations are met exactly."""
    problems = []
    check_notes = any(e.severity == "note" for e in expectations)
    for d in _flatten(diagnostics):
        if d.severity == "note" and not check_notes:
            continue
        match = next((e for e in expectations if not e.matched and e.severity == d.severity
                      and e.line == d.line and e.text in d.message), None)
        if match is None:
            match = next((e for e in expectations if e.severity == d.severity
                          and e.line == d.line and e.text in d.message), None)
        if match is not None:
            match.matched = True
            continue
        problems.append(Diagnostic("error", d.file or filename, d.line, d.col,
                                   f"unexpected {d.severity}: {d.message}"))
    for e in expectations:
        if not e.matched:
            problems.append(Diagnostic("error", filename, e.comment_line, e.col,
                                       f'expected {e.severity} "{e.text}" was not produced'))
    return problems
