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
# The right operand of an affine floordiv, ceildiv or mod, where it is a constant: an integer
# or a parenthesized sum or product of integers (the parser folds those). MLIR requires a
# positive one; zero (and a negative modulus) parsed, then linalg.generic's verifier asserted
# folding the map (`cast<AffineConstantExpr>`: IR fuzzing of indexing maps, session 29).
_AFFINE_MAP_START = re.compile(r"(?<![\w#!.])affine_map\s*<")
_MAP_ALIAS = re.compile(r"^(#[\w$.-]+)\s*=\s*(?=affine_map\s*<)", re.M)
_MATMUL_MAPS = re.compile(r'"?(linalg\.(?:batch_)?(?:reduce_)?matmul)\b[^\n]*?\bindexing_maps\s*=\s*\[')
_AFFINE_DIVISION = re.compile(r"\b(floordiv|ceildiv|mod)\s*")
_CONSTANT_TERM = re.compile(r"-?\s*\d+")


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
    for m in _AFFINE_DIVISION.finditer(masked):
        value = _integer_expression(_divisor_text(masked, m.end()))
        if value is not None and value <= 0:
            problems.append(error(m.start(), f"'{m.group(1)}' by {value}: the right operand "
                                  "of floordiv, ceildiv and mod must be a positive constant"))
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
    problems += _affine_map_problems(text, masked, error)
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


def _divisor_text(masked: str, start: int) -> str:
    """The operand starting at `start`: an integer, or a parenthesized group."""
    if not masked.startswith("(", start):
        term = _CONSTANT_TERM.match(masked, start)
        return term.group(0) if term else ""
    depth = 0
    for end in range(start, len(masked)):
        depth += {"(": 1, ")": -1}.get(masked[end], 0)
        if depth == 0:
            return masked[start:end + 1]
    return ""


def _integer_expression(text: str) -> int | None:
    """The value of `text` if it is an integer expression of +, - and *; else None."""
    if not text or not set(text) <= set("0123456789 \t\n+-*()"):
        return None
    import ast

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            left, right = value(node.left), value(node.right)
            return {ast.Add: left + right, ast.Sub: left - right,
                    ast.Mult: left * right}[type(node.op)]
        raise ValueError
    try:
        return value(ast.parse(text, mode="eval").body)
    except (ValueError, SyntaxError, RecursionError):
        return None


def _affine_map_problems(text, masked, error) -> list[Diagnostic]:
    """Affine maps whose values can exceed 64 bits at the input's largest static size, and
    matmul-family indexing maps without results: linalg's verifiers, which run inside the
    parser, asserted on both (folding a map whose product overflowed: `d0 *
    9223372036854775807` over a size of 8; MatmulOp::isValidLhsRhsBroadcastMap on `-> ()`:
    IR fuzzing of indexing maps, session 29)."""
    extent = max((int(d) for m in _SHAPED_DIMS.finditer(masked)
                  for d in re.findall(r"\d+", m.group(1))), default=1)
    maps = {m.start(): _parse_map(_balanced_map(masked, m.start()))
            for m in _AFFINE_MAP_START.finditer(masked)}  # (each parsed once)
    problems = []
    for start, parsed in maps.items():
        try:
            largest = max((_magnitude(e, extent) for e in parsed.results), default=0) if parsed else 0
        except RecursionError:
            continue
        if largest >= 2**63:
            problems.append(error(start, f"affine map values reach {largest} with sizes up to "
                                  f"{extent}: more than 64 bits"))
    aliases = {m.group(1): m.end() for m in _MAP_ALIAS.finditer(masked)}
    for m in _MATMUL_MAPS.finditer(text):
        if masked[m.start()] != text[m.start()] or not masked.startswith("[", m.end() - 1):
            continue  # (in a comment or string)
        for k, item in enumerate(_list_items(masked, m.end())):
            position, word = item
            start = aliases.get(word, position) if word.startswith("#") else position
            parsed = maps.get(start)
            if parsed is not None and not parsed.results:
                problems.append(error(position, f"indexing map #{k} of '{m.group(1)}' has no "
                                      "results: a matmul indexes each operand by dimensions"))
    return problems


def _balanced_map(masked: str, start: int) -> str:
    """The `affine_map<...>` starting at `start` (`->`, `>=` and `<=` are no brackets)."""
    depth = 0
    for token in _NEST_TOKEN.finditer(masked, masked.index("<", start)):
        if token.group(0) in ("<", ">"):
            depth += 1 if token.group(0) == "<" else -1
            if depth == 0:
                return masked[start:token.end()]
    return ""


def _parse_map(map_text: str):
    from mlir import ir

    from ..dialects.builders import mlir_context
    if not map_text:
        return None
    with mlir_context():
        try:
            return ir.AffineMapAttr(ir.Attribute.parse(map_text)).value
        except (ir.MLIRError, ValueError):
            return None  # (the parse of the whole input reports it)


def _magnitude(expr, extent: int) -> int:
    """A bound on |expr| where every dimension and symbol is at most `extent`."""
    from mlir import ir
    if isinstance(expr, ir.AffineConstantExpr):
        return abs(expr.value)
    if isinstance(expr, (ir.AffineDimExpr, ir.AffineSymbolExpr)):
        return extent
    lhs, rhs = _magnitude(expr.lhs, extent), _magnitude(expr.rhs, extent)
    if isinstance(expr, ir.AffineAddExpr):
        return lhs + rhs
    if isinstance(expr, ir.AffineMulExpr):
        return lhs * rhs
    if isinstance(expr, ir.AffineModExpr):
        return min(lhs, rhs)
    return lhs + 1  # floordiv, ceildiv (by a positive constant or a symbol)


def _list_items(masked: str, start: int) -> list[tuple[int, str]]:
    """(position, first word) of each item of the bracketed list opening at `start` - 1."""
    items, depth, item_start = [], 0, start
    for i in range(start, len(masked)):
        c = masked[i]
        if c in "(<{[":
            depth += 1
        elif c in ")>}]" and not masked.startswith("->", i - 1):
            if depth == 0:
                break
            depth -= 1
        if depth == 0 and c in ",]":
            items.append(item_start)
            item_start = i + 1
    items.append(item_start)
    found = []
    for position in items:
        word = re.match(r"\s*(#[\w$.-]+|affine_map)", masked[position:])
        if word:
            found.append((position + word.start(1), word.group(1)))
    return found


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
