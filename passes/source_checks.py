"""Checks on MLIR source text before the MLIR parser sees it.

MLIR's parser recurses once per nesting level and its build has assertions on: some inputs
do not get a diagnostic but overflow the stack (SIGSEGV) or abort the process. Each check here
finds one such input class lexically (outside string literals and comments) and reports it
as a located Diagnostic, so the tools keep their contract (DESIGN.md, CLI: file:line:col on
stderr, exit code 1):

- nesting deeper than MAX_NESTING levels of ( [ { < (attribute and type aliases count with
  the depth of their definition): a 10,000-deep array attribute or 3,000 nested regions
  overflow the parser's (and later the passes' and mlir-translate's) stack;
- a generic op name that is not `dialect.op` ("ms.", "func.", "ms": LLVM ERROR "created with
  unregistered dialect");
- `array<index ...>` (an assertion: dense arrays hold integers and floats of fixed width)
  and dense arrays of other element types (ui32, i128, f16: the bindings cannot read them
  back, and reading one could abort the process);
- `permutation = ` / `dimensions = ` (linalg.transpose, broadcast, reduce in custom form)
  followed by anything but a list of 64-bit integers (an assertion: "attributes may never be
  null"; an integer that overflows int64 makes the same null attribute);
- a tensor, memref or vector type literal with more elements than int64 counts (parsing
  `dense<0.5> : tensor<99999999999x99999999xf32>` asserts "integer overflow in element
  count"; byte sizes are the verifier's, after parsing);
- an ms op written in custom form (`%0 = ms.add %a ...`): ms ops have only the generic form,
  and the parser fails on them without any diagnostic;
- an `llvm.extractvalue` / `llvm.insertvalue` position of 2**32 or more (the parser's bounds
  check sees it truncated to 32 bits, and the type lookup then asserts "Invalid index!");
- `iterator_types` of linalg.generic in custom form holding anything but strings (the parser
  casts each element to a string attribute: an assertion);
- an `@` not starting a symbol name (a lexer error, which after a dialect type, `!llvm.ptr@)`,
  aborted the process in the bindings' parse);
- a string literal whose escapes make bytes that are not UTF-8 (`"ms.broad\\cast_to"`: \\ca is
  the byte 0xCA): the bindings cannot turn a name, attribute or diagnostic holding them into
  a Python string (IR fuzzing, seed 48 with --own-passes).
"""
from __future__ import annotations

import re

from .diagnostics import Diagnostic

# Real programs nest a few tens of levels (a rank-8 dense literal inside a region inside a
# function is ~15); 256 leaves room for them while staying far from the ~4,000 nested regions
# that overflow an 8 MiB stack (each level is several C++ frames in the parser, verifier,
# printer and passes, and Python frames in mscc's region walks).
MAX_NESTING = 256

_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*')
_NEST_TOKEN = re.compile(r"->|>=|<=|[(\[{<]|[)\]}>]|[#!][A-Za-z_][\w$.-]*|\n")
# A dense array's element type other than those the bindings can read back (`array<index`
# asserted in the parser; `array<ui32: ...>`, `array<i128: ...>`, `array<f16: ...>` parse,
# then reading the attribute raised in the bindings, or aborted the process through a C++
# exception: fuzz seeds 29 and 31).
# (`array<2 x i64>` in an LLVM struct type is an array type: its count comes first)
_ARRAY_ELEMENT = re.compile(r"(?<![\w.!$#@%-])array\s*<\s*(?![\d?])"
                            r"(?!(?:i1|i8|i16|i32|i64|f32|f64)\s*[:>])([^\s:>]*)")
# An ms op in custom form: at the start of a line or after `=`, not an attribute name (those
# are followed by `=`, `,` or `}`) nor part of a longer name (`%x.ms.y`, `#ms.z`).
_CUSTOM_MS_OP = re.compile(r"(?:^|=)[ \t]*(?<![\w$.%#!@^])(ms\.[\w$.]+)(?![\w$.]*[ \t]*[=,}])",
                           re.M)
# The value of a linalg integer list: in the custom form of linalg.transpose, broadcast and
# reduce (the key on the op's line) it must be a list; elsewhere (attribute dictionaries,
# where array<...> and aliases are values too) wherever it starts like no attribute can (not
# a name, an alias, a type, a string, a dictionary or a symbol): `. [1, 0]` and `x [1, 0]`
# asserted like `[1,, 0]` did.
_INT_LIST_KEY = re.compile(r"\b(?:permutation|dimensions)\s*=\s*(?=[^\w#!\"{@\s])")
_CUSTOM_LIST_KEY = re.compile(r"\blinalg\.(?:transpose|broadcast|reduce)\b[^\n]*?"
                              r"\b(?:permutation|dimensions)\s*=\s*")
_INT_LIST = re.compile(r"\[\s*(?:-?\d+(?:\s*,\s*-?\d+)*)?\s*\]")
# iterator_types in linalg.generic's custom form: a list of strings ("parallel", ...); the
# parser casts each element to a string attribute without checking (a type there, `f16`,
# asserted: IR fuzzing, seed 62 with --own-passes). (The generic form's elements are
# #linalg.iterator_type<...> attributes, which the verifier checks.)
_CUSTOM_ITERATORS = re.compile(r"\blinalg\.generic\s*\{[^\n]*?\biterator_types\s*=\s*")
_STRING_LIST = re.compile(r'\[\s*(?:"_*"(?:\s*,\s*"_*")*)?\s*\]')
# The static dimensions at the start of a shaped type literal (`[4]` is a scalable one).
_SHAPED_DIMS = re.compile(r"\b(?:tensor|memref|vector)\s*<\s*((?:(?:\d+|\?|\[\d+\])\s*x\s*)+)")
_INT64_MAX = 2 ** 63 - 1
# The position list of llvm.extractvalue / llvm.insertvalue in custom form.
_VALUE_POSITION = re.compile(r"\bllvm\.(?:extract|insert)value\b[^\[\n]*\[([^\]\n]*)\]")
_INT32_LIMIT = 2 ** 31
_HEX_ESCAPE = re.compile(r"\\([0-9a-fA-F]{2})|\\(.)")
# `@` starts a symbol reference only before a letter, `_` or a string; any other is a lexer
# error, which right after a dialect type (`!llvm.ptr@)`) the bindings' parse turned into an
# abort ("unhandled captured errors": IR fuzzing, seed 90 with --own-passes).
_LONE_AT = re.compile(r'@(?![A-Za-z_"])')


def check_source(text: str, filename: str) -> list[Diagnostic]:
    """Located errors for input the MLIR parser would crash on (empty if none)."""
    masked, strings = _mask(text)

    def error(pos, message):
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        return Diagnostic("error", filename, line, col, message)

    problems = []
    found = _nesting_problem(masked)
    if found:
        problems.append(error(*found))
    m = _ARRAY_ELEMENT.search(masked)
    if m:
        problems.append(error(m.start(), "dense array elements must be integers or floats "
                              f"(i1, i8, i16, i32, i64, f32, f64), not '{m.group(1)}'"))
    for m in _SHAPED_DIMS.finditer(masked):
        count = 1
        for d in re.findall(r"\d+", m.group(1)):
            count *= int(d)
        if count > _INT64_MAX:
            problems.append(error(m.start(), f"type with {count} elements: more than int64 "
                                  "can count (2**63-1)"))
    starts = sorted({m.end() for m in _INT_LIST_KEY.finditer(masked)}
                    | {m.end() for m in _CUSTOM_LIST_KEY.finditer(masked)})
    for start in starts:
        items = _INT_LIST.match(masked, start)
        if not items:
            problems.append(error(start, "expected a list of integers, like [1, 0]"))
            continue
        for v in re.finditer(r"-?\d+", items.group(0)):
            if not -_INT64_MAX - 1 <= int(v.group(0)) <= _INT64_MAX:
                problems.append(error(items.start() + v.start(), f"integer {v.group(0)} does "
                                      "not fit in 64 bits"))
    m = _LONE_AT.search(masked)
    if m:
        problems.append(error(m.start(), "@ identifier expected to start with letter or '_'"))
    for m in _CUSTOM_ITERATORS.finditer(masked):
        if not _STRING_LIST.match(masked, m.end()):
            problems.append(error(m.end(), "iterator_types must be a list of strings, like "
                                  '["parallel", "reduction"]'))
    for m in _VALUE_POSITION.finditer(masked):
        for v in re.finditer(r"-?\d+", m.group(1)):
            if abs(int(v.group(0))) >= _INT32_LIMIT:
                problems.append(error(m.start(1) + v.start(), f"position {v.group(0)} is out "
                                      "of range for an LLVM struct or array (32 bits)"))
    for m in _CUSTOM_MS_OP.finditer(masked):
        name = m.group(1)
        problems.append(error(m.start(1), f"'{name}' has no custom assembly format: write ms "
                              f"ops in the generic form, \"{name}\"(...) : (...) -> ..."))
    problems += _string_problems(text, masked, strings, error)
    return sorted(problems, key=lambda d: (d.line, d.col))


def _string_problems(text, masked, strings, error) -> list[Diagnostic]:
    """String literals that are no UTF-8 text, and generic op names that are not
    `dialect.operation`."""
    problems = []
    for start, end in strings:
        if _unescaped(text[start + 1:end - 1]) is None:
            problems.append(error(start, "string literal is not UTF-8 text: its \\XX escapes "
                                  "form bytes that are no UTF-8 character"))
            continue
        name = _op_name_at(text, masked, start, end)
        if name is not None and not _valid_op_name(name):
            problems.append(error(start, f"invalid operation name \"{name}\": expected "
                                  "'dialect.operation'"))
    return problems


def _mask(text):
    """The text with string contents replaced by '_' and comments by spaces (same offsets),
    and the (start, end) spans of the string literals."""
    strings = []

    def blank(m):
        s = m.group(0)
        if s.startswith("//"):
            return " " * len(s)
        strings.append(m.span())
        return '"' + "_" * (len(s) - 2) + '"'
    return _STRING_OR_COMMENT.sub(blank, text), strings


def _nesting_problem(masked):
    """(offset, message) where nesting first exceeds MAX_NESTING, else None. An alias
    definition (`#name = ...` or `!name = ...` at the top level) is as deep as its body, and
    using it nests that deep again."""
    depth, aliases, defining, def_depth = 0, {}, None, 0
    for m in _NEST_TOKEN.finditer(masked):
        tok = m.group(0)
        if tok in ("->", ">=", "<="):
            continue
        if tok == "\n":
            if depth == 0 and defining is not None:
                aliases[defining], defining = def_depth, None
            continue
        if tok[0] in "#!":
            if depth == 0 and masked[m.end():m.end() + 64].lstrip(" \t").startswith("="):
                if defining is not None:
                    aliases[defining] = def_depth
                defining, def_depth = tok, 0
                continue
            reached = depth + aliases.get(tok, 0)
            if reached > MAX_NESTING:
                return m.start(), (f"nesting deeper than {MAX_NESTING} levels (through the "
                                   f"alias {tok}); mscc's limit for brackets, braces, "
                                   "parentheses and angle brackets")
            def_depth = max(def_depth, reached)
        elif tok in "([{<":
            depth += 1
            if depth > MAX_NESTING:
                return m.start(), (f"nesting deeper than {MAX_NESTING} levels; mscc's limit "
                                   "for brackets, braces, parentheses and angle brackets")
            def_depth = max(def_depth, depth)
        else:
            depth = max(0, depth - 1)
    return None


def _op_name_at(text, masked, start, end):
    """The unescaped contents of the string literal at [start, end) if it stands where a
    generic op name does: followed by `(` and at the start of a line or after `=`, `{`, `}`
    (a named location, `loc("name"(...))`, follows `(` and is not one)."""
    after = masked[end:end + 64].lstrip()
    if not after.startswith("("):
        return None
    before = masked[max(0, start - 64):start].rstrip(" \t")
    if before and before[-1] not in "\n={}":
        return None
    return _unescaped(text[start + 1:end - 1])


def _unescaped(body: str) -> str | None:
    """A string literal's contents with MLIR's escapes (\\XX a byte, \\c the character c)
    replaced, as text; None if the bytes are not UTF-8 (the bindings cannot make a Python
    string of them: a diagnostic naming such an op name was a RuntimeError in nanobind)."""
    out, at = bytearray(), 0
    for m in _HEX_ESCAPE.finditer(body):
        out += body[at:m.start()].encode("utf-8", "surrogatepass")
        out += bytes([int(m.group(1), 16)]) if m.group(1) else m.group(2).encode(
            "utf-8", "surrogatepass")
        at = m.end()
    out += body[at:].encode("utf-8", "surrogatepass")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _valid_op_name(name):
    dialect, dot, op = name.partition(".")
    return bool(dialect and dot and op) and not name.endswith(".")


# ------------------------------------------------------------------ after parsing

def check_parsed(module) -> list[Diagnostic]:
    """Located errors for parsed, verified IR that an upstream pattern or mscc's passes
    would fail on: `memref.dim` / `tensor.dim` of a ranked value at a constant index outside
    its rank (MLIR lets it through as undefined behaviour; a canonicalization pattern of a
    dialect mscc loads then asserted "invalid index for shaped type": IR fuzzing, seed 64
    with --own-passes); a terminator at the end of the module's body (`llvm.return` there
    verifies; adding a function after it was an IndexError: seed 97)."""
    from mlir import ir

    from ..dialects.ir_helpers import constant_int, ops_of_kind
    from .diagnostics import file_location
    problems = []
    body = module.body
    try:  # (the bindings' own test for a block's terminator: ValueError where it has none)
        ir.InsertionPoint.at_block_terminator(body)
        last = body.operations[len(body.operations) - 1]
        file, line, col = file_location(last.location)
        problems.append(Diagnostic("error", file, line, col, f"'{last.name}' op is a "
                                   "terminator: it cannot end a module's body (passes add "
                                   "functions there)"))
    except ValueError:
        pass
    for op in ops_of_kind(module.operation, "memref.dim", "tensor.dim"):
        source, index = op.operands[0].type, constant_int(op.operands[1])
        if index is None or not isinstance(source, ir.ShapedType) or not source.has_rank:
            continue
        if not 0 <= index < source.rank:
            file, line, col = file_location(op.location)
            problems.append(Diagnostic("error", file, line, col, f"'{op.name}' op index "
                                       f"{index} is out of range for a value of rank "
                                       f"{source.rank}"))
    return problems
