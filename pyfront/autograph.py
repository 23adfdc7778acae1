"""Python `if`/`while`/`for i in range(...)` on Tensors inside compiled functions.

MindSpore's graph mode parses a function's source and turns `if x.sum() > 0:` into control
flow; JAX's AutoGraph rewrites the AST. mscc does the latter: `convert(fn)` parses the
source of a function traced by ms.jit (or a Cell's construct in graph mode), rewrites only
the statements that may branch or loop on a Tensor into calls of the helpers below (with
branch and body functions over the variables they assign), and compiles the result with the
user's file and line numbers, globals, closure cells and defaults. The helpers keep Python's
semantics whenever the condition is a Python value (or a concrete Tensor): the Python
statement runs, as before. Only a traced Tensor condition becomes an scf.if (an ops.cond),
scf.while (ops.WhileLoop) or scf.for (ops.ForiLoop).

`break` and `continue` become flags (AutoGraph's lowering): `break` sets one the loop's
test reads (a `for` skips its remaining iterations, so it stays differentiable), `continue`
one reset every iteration, and the statements after each jump are guarded by the flags; a
loop's `else` runs after it unless it broke. `for i in range(a, b, step)` over Tensor
bounds is one ForiLoop over the trip count (the step a Python int); `for x in t` over a
traced Tensor is one loop over its rows (a Scan). Loops with Python bounds follow
`ms.jit(loops=...)`: "unrolled" keeps them Python loops, "rolled" compiles them into one
loop, and "auto" (the default) rolls a Tensor's rows, and an int range whose unrolled trace
would exceed AUTO_ROLL_NODES (trip count x AST nodes of the body; MSCC_AUTO_ROLL_NODES,
20,000), when the body only binds local names (_rollable) and carries only Tensors: small
loops and loops with side effects (`outs.append(...)`) unroll as before.

A function without such statements, mscc's own code and a function whose source cannot be
read (a lambda, the REPL) are traced as they are; in the last case a Tensor condition gets
the usual error of Tensor.__bool__ plus the reason the source was not converted. A statement
that cannot be converted (a jump inside `try`, `return` inside a loop, `global` in a
branch...) stays Python: on a Python condition it runs, on a Tensor one it is an error
saying why; under `ms.jit(fullgraph=True)` (MindSpore's jit_syntax_level STRICT) it is an
error at its line either way. `MSCC_SHOW_CONVERTED=1` prints the converted source.
"""
from __future__ import annotations

import ast
import builtins
import dis
import inspect
import os
import re
import sys
import textwrap
import types
import weakref
from typing import NamedTuple

import numpy as np

from ..dialects import dtypes as dt
from .location import is_internal, located, located_error, user_api, user_location
from .state import active_traces, jit_options
from .tensor import Tensor

_PREFIX = "_mscc_"
_AG = "_mscc_ag"
_FLAG = "_mscc_flag_"  # break/continue flags: carried by loops like the user's variables


# ---------------------------------------------------------------------- Undefined

class Undefined:
    """The value of a variable that has none at this point (not assigned before a statement,
    or assigned in only one branch of a compiled `if`). Using it raises UnboundLocalError
    with the reason, as using an unbound local does in Python."""

    def __init__(self, name, why=""):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_why", why)

    def _fail(self, *args, **kwargs):
        why = object.__getattribute__(self, "_why")
        name = object.__getattribute__(self, "_name")
        raise UnboundLocalError(why or f"local variable '{name}' referenced before assignment")

    def __getattr__(self, attr):
        self._fail()

    def __repr__(self):
        return f"<undefined variable '{object.__getattribute__(self, '_name')}'>"


for _m in ("__bool__", "__array__", "__call__", "__getitem__", "__iter__", "__len__",
           "__index__", "__int__", "__float__", "__neg__", "__pos__", "__abs__", "__invert__",
           *[f"__{p}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod",
                                      "pow", "matmul", "and", "or", "xor", "lshift", "rshift")
             for p in ("", "r")],
           "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Undefined, _m, Undefined._fail)


def is_undefined(x):
    return type(x) is Undefined


def check_defined(x, what):
    """A clear error where a compiled function returns or carries an Undefined."""
    if type(x) is Undefined:
        x._fail()


# ---------------------------------------------------------------------- conversion

_converted: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def convert(fn):
    """`fn` with its Tensor-dependent statements rewritten, or `fn` itself (nothing to
    rewrite, mscc's own code, or no source: then `unconverted_reason(fn)` says why). Under
    ms.jit(fullgraph=True) a function that cannot be converted whole is an error."""
    target = getattr(fn, "__func__", fn)  # a bound method: convert its function
    if not isinstance(target, types.FunctionType):
        return fn
    try:
        new = _converted[target]
    except KeyError:
        new = _converted[target] = _convert_function(target)
    if jit_options.items and jit_options[-1].fullgraph:
        _check_strict(target)
    if new is target:
        return fn
    return types.MethodType(new, fn.__self__) if target is not fn else new


_reasons: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_refused: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _check_strict(fn):
    """MindSpore's jit_syntax_level STRICT (ms.jit(fullgraph=True)): every if/while/for of
    the function must compile as written; the first that stays Python is a SyntaxError at
    its line, a TypeError (the default, LAX, leaves such statements to Python)."""
    code = fn.__code__
    if fn in _reasons:
        raise located_error(TypeError, f"ms.jit(fullgraph=True): {_reasons[fn]}",
                            (code.co_filename, code.co_firstlineno, 0))
    for line, col, kind, reason in _refused.get(fn, ()):
        raise located_error(TypeError, f"ms.jit(fullgraph=True) cannot compile this `{kind}` "
                            f"of '{fn.__qualname__}': {reason}",
                            (code.co_filename, line, col))


def unconverted_reason(fn):
    return _reasons.get(getattr(fn, "__func__", fn))


def _convert_function(fn):
    code = fn.__code__
    if is_internal(code.co_filename) or code.co_flags & (inspect.CO_GENERATOR |
                                                         inspect.CO_COROUTINE |
                                                         inspect.CO_ASYNC_GENERATOR):
        return fn
    if not _may_branch(code):
        return fn  # (its source is not read: nothing in it could be rewritten)
    try:
        node, first_line = _parse(fn)
    except (OSError, TypeError, SyntaxError, IndexError) as e:
        _reasons[fn] = (f"mscc could not read the source of '{fn.__qualname__}' to convert its "
                        f"if/while/for statements ({type(e).__name__}: {e}); define it with "
                        "`def` in a file, or use ops.cond / ops.WhileLoop / ops.ForiLoop")
        return fn
    if node is None or not _has_control_flow(node) or _uses_mangled_names(node, fn):
        return fn
    node.decorator_list = []
    converter = _Converter()
    converter.convert_function(node)
    if converter.refused:
        _refused[fn] = converter.refused
    return _build(fn, node)


# Every if/while/for/conditional expression compiles to a jump (or FOR_ITER, a jump too).
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _may_branch(code) -> bool:
    """Whether the bytecode of `code` or of a function, lambda or comprehension defined in
    it has a jump: without one it has no statement to rewrite, and its source need not be
    read (inspect.getsourcelines tokenizes it: ~7 ms of a process's first jit compile, most
    of it compiling tokenize's patterns)."""
    if not _JUMPS.isdisjoint(code.co_code[::2]):  # (opcodes; CACHE entries are 0)
        return True
    return any(isinstance(c, types.CodeType) and _may_branch(c) for c in code.co_consts)


def _parse(fn):
    """The FunctionDef of `fn` with the user's line numbers and columns."""
    lines, first = inspect.getsourcelines(fn)
    source = "".join(lines)
    indented = source[:1].isspace()
    # An indented def (a method, a nested function) parses under an `if 1:`, which keeps
    # the columns (dedenting would shift them).
    tree = ast.parse("if 1:\n" + source if indented else source)
    ast.increment_lineno(tree, first - 1 - (1 if indented else 0))
    body = tree.body[0].body if indented else tree.body
    node = body[0] if body else None
    if not isinstance(node, ast.FunctionDef) or node.name != fn.__name__:
        return None, first  # (a lambda, or a def the source lines do not start with)
    return node, first


def _has_control_flow(node):
    return any(isinstance(n, (ast.If, ast.While, ast.For, ast.IfExp)) for n in ast.walk(node))


def _uses_mangled_names(node, fn):
    """Private names (`self.__x`) in a method are mangled by its class: compiled outside
    it, they would not be. Such methods stay as they are."""
    if "." not in fn.__qualname__:
        return False
    for n in ast.walk(node):
        name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else ""
        if name.startswith("__") and not name.endswith("__"):
            return True
    return False


def _build(fn, node):
    """Compile the converted def inside a factory whose locals are `fn`'s free variables
    (so the new code reads them as closure cells), then give it `fn`'s own cells."""
    free = list(fn.__code__.co_freevars)
    if "__class__" in free:  # zero-argument super(): keep the cell referenced
        node.body.insert(0, ast.Expr(ast.Name("__class__", ast.Load())))
    factory = ast.FunctionDef(
        name=f"{_PREFIX}factory", args=ast.arguments(
            posonlyargs=[], args=[ast.arg(n) for n in free + [_AG]], kwonlyargs=[],
            kw_defaults=[], defaults=[]),
        body=[node, ast.Return(ast.Name(node.name, ast.Load()))], decorator_list=[],
        returns=None, **_TYPE_PARAMS)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    if os.environ.get("MSCC_SHOW_CONVERTED"):
        print(f"# mscc: converted {fn.__qualname__} ({fn.__code__.co_filename})\n"
              f"{ast.unparse(node)}", file=sys.stderr)
    namespace: dict = {}
    exec(compile(module, fn.__code__.co_filename, "exec"), fn.__globals__, namespace)
    inner = namespace[f"{_PREFIX}factory"](*([None] * len(free)), _helpers)
    cells = dict(zip(free, fn.__closure__ or ()))
    cells[_AG] = types.CellType(_helpers)
    closure = tuple(cells[n] for n in inner.__code__.co_freevars)
    new = types.FunctionType(inner.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                             closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__, new.__module__, new.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    new.__dict__.update(fn.__dict__)
    new.__wrapped__ = fn
    return new


# ---------------------------------------------------------------------- the AST rewrite

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def _walk_scope(nodes):
    """The nodes of `nodes` without descending into nested functions, lambdas, classes."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, _SCOPES):
            stack.extend(ast.iter_child_nodes(n))
        elif not isinstance(n, ast.Lambda):
            stack.extend(n.decorator_list)


def _assigned(stmts):
    """Names the statements bind in this scope (in first-seen order), without ours."""
    out = []
    for n in _walk_scope(stmts):
        names = []
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names = [n.id]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [n.name]
        elif isinstance(n, ast.alias):
            names = [(n.asname or n.name).split(".")[0]]
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names = [n.name]
        out += [m for m in names if (not m.startswith(_PREFIX) or m.startswith(_FLAG))
                and m not in out]
    return sorted(out)


def _jumps(stmts, kinds):
    """Whether the statements hold a statement of `kinds` that leaves them (a break or
    continue inside a nested loop stays in it)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, _SCOPES):
            continue
        if isinstance(n, _LOOPS) and kinds != (ast.Return,):
            stack.extend(n.orelse)  # (a loop's own break/continue stay inside it)
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _always_returns(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and \
        _always_returns(last.orelse)


def _returns_only_at_tail(stmts):
    """Every return in `stmts` ends it, or ends a branch of a last `if` of that form."""
    for k, s in enumerate(stmts):
        tail = k == len(stmts) - 1
        if isinstance(s, ast.Return) and tail:
            continue
        if isinstance(s, ast.If) and tail:
            if _returns_only_at_tail(s.body) and _returns_only_at_tail(s.orelse):
                continue
            return False
        if _jumps([s], (ast.Return,)):
            return False
    return True


def _tail_returns(stmts):
    """`if c: ...; return a` followed by more statements: those statements become the
    else branch (AutoGraph does the same), so both branches return. Marks the ifs whose
    returns all end a branch of the function's last statement (`_mscc_tail`)."""
    for k, s in enumerate(stmts):
        if not (isinstance(s, ast.If) and _jumps([s], (ast.Return,))):
            continue
        rest = stmts[k + 1:]
        if _always_returns(s.body) and not _jumps(s.orelse, (ast.Return,)):
            s.orelse, rest = s.orelse + rest, []
        elif _always_returns(s.orelse) and not _jumps(s.body, (ast.Return,)):
            s.body, rest = s.body + rest, []
        s.body, s.orelse = _tail_returns(s.body), _tail_returns(s.orelse)
        s._mscc_tail = not rest and _returns_only_at_tail(s.body) and \
            _returns_only_at_tail(s.orelse)
        return stmts[:k] + [s] + rest
    return stmts


def _set_flag(name, node):
    return ast.copy_location(ast.Assign([_name(name, store=True)], ast.Constant(True)), node)


def _not_jumped(flags, node):
    """`not (brk or cont)` over the loop's flags."""
    names = [_name(f) for f in flags]
    test = names[0] if len(names) == 1 else ast.BoolOp(ast.Or(), names)
    return ast.copy_location(ast.UnaryOp(ast.Not(), test), node)


def _guarded(stmts, brk, cont):
    """`stmts` with this loop's `break`/`continue` replaced by setting a flag and the
    statements after each guarded by `if not (flags)` (AutoGraph's lowering of jumps). None
    when a jump sits in a statement other than an `if` (try, with, match): not rewritten."""
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, (ast.Break, ast.Continue)):
            return out + [_set_flag(brk if isinstance(s, ast.Break) else cont, s)]
        if not _jumps([s], (ast.Break, ast.Continue)):
            out.append(s)
            continue
        if not isinstance(s, ast.If):
            return None
        flags = [f for f, kind in ((brk, ast.Break), (cont, ast.Continue))
                 if f and _jumps([s], (kind,))]  # (before the rewrite removes the jumps)
        body, orelse = _guarded(s.body, brk, cont), _guarded(s.orelse, brk, cont)
        rest = _guarded(stmts[k + 1:], brk, cont)
        if body is None or orelse is None or rest is None:
            return None
        s.body, s.orelse = body or [ast.Pass()], orelse
        out.append(s)
        if rest:
            out.append(ast.copy_location(ast.If(_not_jumped(flags, rest[0]), rest, []),
                                         rest[0]))
        return out
    return out


def _lower_jumps(s, count):
    """A loop whose body breaks or continues, as (statements before it, the loop, statements
    after it) without jumps: `break` sets a flag the loop's test reads (a `for` skips the
    rest of its iterations), `continue` one reset at each iteration; a loop's `else` runs
    after it unless it broke. None when the jumps cannot be rewritten."""
    has_break, has_cont = _jumps(s.body, (ast.Break,)), _jumps(s.body, (ast.Continue,))
    if not (has_break or has_cont):
        after, s.orelse = s.orelse, []  # (no break: a loop's `else` always runs after it)
        return [], s, after
    brk = f"{_FLAG}break_{s.lineno}_{count}" if has_break else None
    cont = f"{_FLAG}continue_{s.lineno}_{count}" if has_cont else None
    body = _guarded(s.body, brk, cont)
    if body is None:
        return None
    reset = ([ast.copy_location(ast.Assign([_name(cont, store=True)], ast.Constant(False)), s)]
             if cont else [])
    before = [ast.copy_location(ast.Assign([_name(brk, store=True)], ast.Constant(False)), s)
              ] if brk else []
    after = s.orelse
    if brk and s.orelse:
        after = [ast.copy_location(ast.If(_not_jumped([brk], s), s.orelse, []), s)]
    s.orelse = []
    if isinstance(s, ast.While):
        s.body = reset + body
        if brk:
            s.test = ast.copy_location(ast.BoolOp(ast.And(), [_not_jumped([brk], s.test),
                                                               s.test]), s.test)
    else:
        s.body = [ast.copy_location(ast.If(_not_jumped([brk], s), reset + body, []), s)] \
            if brk else reset + body
        s._mscc_break = brk
    return before, s, after


def _name(id_, store=False):
    return ast.Name(id_, ast.Store() if store else ast.Load())


def _helper(attr, *args):
    return ast.Call(ast.Attribute(_name(_AG), attr, ast.Load()), list(args), [])


def _strs(names):
    return ast.Tuple([ast.Constant(n) for n in names], ast.Load())


def _load(names):
    """_mscc_ag.load(locals(), names): the current values (Undefined where unbound)."""
    return _helper("load", ast.Call(_name("locals"), [], []), _strs(names))


_TYPE_PARAMS = {"type_params": []} if sys.version_info >= (3, 12) else {}


def _def(name, params, body, returns):
    body = list(body) + ([] if returns is None else [ast.Return(returns)])
    return ast.FunctionDef(
        name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params],
                                      kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body or [ast.Pass()], decorator_list=[], returns=None, **_TYPE_PARAMS)


def _located(nodes, where):
    """Our nodes at the statement's first line (one line: CPython places a method call of a
    multi-line node at its last line, and errors must name the `if`/`while`/`for`)."""
    for n in nodes:
        for m in ast.walk(n):
            if not hasattr(m, "lineno") and "lineno" in m._attributes:
                m.lineno, m.col_offset = where.lineno, where.col_offset
                m.end_lineno, m.end_col_offset = where.lineno, where.col_offset + 2
    return nodes


def _thunk(expr):
    return ast.copy_location(ast.Lambda(ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                      kw_defaults=[], defaults=[]), expr), expr)


class _IfExps(ast.NodeTransformer):
    """`a if c else b` -> _mscc_ag.if_exp(c, lambda: a, lambda: b) (nested defs are already
    converted by their own converter; what is left here is converted once)."""

    def visit_IfExp(self, node):
        self.generic_visit(node)
        call = _helper("if_exp", node.test, _thunk(node.body), _thunk(node.orelse))
        return _located([call], node)[0]


class _Converter:
    """Rewrites one function's body (nested defs get their own converter)."""

    def __init__(self):
        self.count = 0
        self.declared = set()  # global/nonlocal names: a branch cannot rebind them
        self.refused = []      # (line, column, statement kind, why it stays Python)

    def convert_function(self, node):
        self.declared = {name for n in _walk_scope(node.body)
                         if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
        node.body = self.block(_tail_returns(node.body))
        node.body = [_IfExps().visit(s) for s in node.body]

    def block(self, stmts):
        out = []
        for s in stmts:
            out += self.stmt(s)
        return out

    def stmt(self, s):
        if isinstance(s, ast.FunctionDef):
            if _has_control_flow(s):
                inner = _Converter()
                inner.convert_function(s)
                self.refused += inner.refused
            return [s]
        if isinstance(s, ast.If):
            return self.if_stmt(s)
        if isinstance(s, ast.While):
            return self.while_stmt(s)
        if isinstance(s, ast.For):
            return self.for_stmt(s)
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list) and not isinstance(s, _SCOPES):
                setattr(s, field, self.block(getattr(s, field)))
        for h in getattr(s, "handlers", []):
            h.body = self.block(h.body)
        return [s]

    def _unsupported(self, s, stmts, loop):
        """Why `s` (its statements `stmts`) cannot become a branch or a loop body."""
        if _jumps(stmts, (ast.Break, ast.Continue)):
            return f"`break`/`continue` inside the {'loop' if loop else 'branch'}"
        if _jumps(stmts, (ast.Return,)) and (loop or not getattr(s, "_mscc_tail", False)):
            return ("`return` inside the loop" if loop else
                    "`return` in a branch that does not end the function (both branches "
                    "must end in return, or the if must be followed only by the else part)")
        if any(isinstance(n, (ast.Global, ast.Nonlocal, ast.Delete, ast.Yield, ast.YieldFrom,
                              ast.Await)) for n in _walk_scope(stmts)):
            return "`global`/`nonlocal`/`del`/`yield` inside it"
        if self.declared & set(_assigned(stmts)):
            return "it assigns a global or nonlocal variable"
        return None

    def _static(self, s, test, kind, reason):
        """The statement stays Python; a traced Tensor test is an error saying why."""
        s.test = _located([_helper("static_test", test, ast.Constant(kind),
                                   ast.Constant(reason))], test)[0]
        return [s]

    def _bool_test(self, test):
        """`and`/`or`/`not` in a condition: on Tensors they become logical ops."""
        if isinstance(test, ast.BoolOp):
            fn = "and_" if isinstance(test.op, ast.And) else "or_"
            lambdas = [ast.Lambda(ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                kw_defaults=[], defaults=[]),
                                  self._bool_test(v)) for v in test.values]
            return ast.copy_location(_helper(fn, *lambdas), test)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return ast.copy_location(_helper("not_", self._bool_test(test.operand)), test)
        return test

    def if_stmt(self, s):
        reason = self._unsupported(s, s.body + s.orelse, loop=False)
        s.body, s.orelse = self.block(s.body), self.block(s.orelse)
        if reason:
            self._refuse(s, "if", reason)
            return self._static(s, s.test, "if", reason)
        self.count += 1
        names = _assigned(s.body + s.orelse)
        t, f = f"{_PREFIX}true_{s.lineno}_{self.count}", f"{_PREFIX}false_{s.lineno}_{self.count}"
        test = self._bool_test(s.test)
        if getattr(s, "_mscc_tail", False):
            none = [ast.Return(ast.Constant(None))]
            defs = _located([_def(t, names, s.body + ([] if _always_returns(s.body) else none), None),
                             _def(f, names, s.orelse + ([] if _always_returns(s.orelse) else none),
                                  None)], s)
            call = _helper("if_stmt", test, _name(t), _name(f), _load(names), _strs(names),
                           ast.Constant(True))
            return defs + _located([ast.Return(call)], s)
        out = ast.Tuple([_name(n) for n in names], ast.Load())
        defs = _located([_def(t, names, s.body, out), _def(f, names, s.orelse, out)], s)
        call = _helper("if_stmt", test, _name(t), _name(f), _load(names), _strs(names),
                       ast.Constant(False))
        target = ast.Tuple([_name(n, store=True) for n in names], ast.Store())
        return defs + _located([ast.Assign([target], call)], s)

    def _refuse(self, s, kind, reason):
        """Remember a statement left to Python (ms.jit(fullgraph=True) refuses them)."""
        self.refused.append((s.lineno, s.col_offset, kind, reason))

    def _loop(self, s, kind):
        """The jumps of loop `s` lowered: (statements before, the loop, statements after, why
        it cannot be converted or None); its body and what follows converted."""
        self.count += 1
        lowered = _lower_jumps(s, self.count)
        if lowered is None:
            reason = "`break`/`continue` inside a `try`, `with` or `match` of the loop"
            before, after = [], []
        else:
            before, s, after = lowered
            reason = self._unsupported(s, s.body, loop=True)
        rollable, size = _rollable(s.body), sum(1 for _ in _walk_scope(s.body))
        s.body, after = self.block(s.body), self.block(after)
        if reason:
            self._refuse(s, kind, reason)
        return before, s, after, reason, (rollable, size)

    def while_stmt(self, s):
        before, s, after, reason, _ = self._loop(s, "while")
        if reason:
            return before + self._static(s, s.test, "while", reason) + after
        names = _assigned(s.body)
        c, b = f"{_PREFIX}cond_{s.lineno}_{self.count}", f"{_PREFIX}body_{s.lineno}_{self.count}"
        out = ast.Tuple([_name(n) for n in names], ast.Load())
        defs = _located([_def(c, names, [], self._bool_test(s.test)), _def(b, names, s.body, out)], s)
        call = _helper("while_stmt", _name(c), _name(b), _load(names), _strs(names))
        target = ast.Tuple([_name(n, store=True) for n in names], ast.Store())
        return before + defs + _located([ast.Assign([target], call)], s) + after

    def for_stmt(self, s):
        it = s.iter
        is_range = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                    and it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3
                    and not any(isinstance(a, ast.Starred) for a in it.args))
        before, s, after, reason, (rollable, size) = self._loop(s, "for")
        if not isinstance(s.target, ast.Name) and not reason:
            reason = "a loop target that is not a single name"
            if is_range:
                self._refuse(s, "for", reason)
        if reason:
            if is_range:  # (a `for` over anything else stays Python's loop, unrolled)
                args = ast.Tuple(list(it.args), ast.Load())
                it.args = [ast.Starred(_located([_helper("static_range", args, ast.Constant(
                    reason))], it)[0], ast.Load())]
            return before + [s] + after
        i = s.target.id
        names = [i] + [n for n in _assigned(s.body) if n != i]
        b = f"{_PREFIX}body_{s.lineno}_{self.count}"
        out = ast.Tuple([_name(n) for n in names], ast.Load())
        defs = _located([_def(b, names, s.body, out)], s)
        how = [ast.Constant(getattr(s, "_mscc_break", None)), ast.Constant(rollable),
               ast.Constant(size)]
        call = (_helper("for_range", it.func, ast.Tuple(list(it.args), ast.Load()), _name(b),
                        _load(names), _strs(names), *how) if is_range else
                _helper("for_iter", it, _name(b), _load(names), _strs(names), *how))
        target = ast.Tuple([_name(n, store=True) for n in names], ast.Store())
        return before + defs + _located([ast.Assign([target], call)], s) + after


def _rollable(stmts):
    """Whether a loop body could run as a compiled loop without changing what Python sees:
    it only binds local names (no `xs.append(...)`, `print(...)` or other call statements,
    no attribute or item assignments, no nested functions or classes)."""
    for n in _walk_scope(stmts):
        if isinstance(n, ast.Expr) and isinstance(n.value, (ast.Call, ast.Await, ast.Yield)):
            return False
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store,
                                                                              ast.Del)):
            return False
        if isinstance(n, _SCOPES) and not isinstance(n, ast.Lambda):
            return False
    return True


# ---------------------------------------------------------------------- runtime helpers
# The converted code calls these. A Python (or concrete Tensor) condition runs the Python
# statement; a traced Tensor one builds the scf op. Errors name the user's line (the
# converted code keeps the statement's line numbers).

def _traced(x):
    return isinstance(x, Tensor) and x._trace is not None


def load(locs, names):
    """The values of `names` in the caller's locals(); Undefined where unbound."""
    return tuple(locs[n] if n in locs else Undefined(n) for n in names)


def static_test(test, kind, reason):
    if _traced(test):
        raise located_error(TypeError, f"mscc cannot compile this `{kind}` on a Tensor: "
                            f"{reason}. Rewrite it, or use ops.cond / ops.WhileLoop / "
                            "ops.ForiLoop")
    return test


def static_range(args, reason):
    if any(_traced(a) for a in args):
        raise located_error(TypeError, "mscc cannot compile this `for` over range() of a "
                            f"Tensor: {reason}. Rewrite it, or use ops.ForiLoop")
    return args


def _as_bool(x):
    from . import ops
    if not isinstance(x, Tensor):
        return bool(x)
    return x if x.dtype.name == "bool" else ops.not_equal(x, 0)


def and_(*fns):
    """`a and b and ...`: short-circuits on Python values, logical_and on a traced Tensor."""
    from . import ops
    x = fns[0]()
    for f in fns[1:]:
        if _traced(x):
            x = ops.logical_and(_as_bool(x), _as_bool(f()))
        elif not x:
            return x
        else:
            x = f()
    return x


def or_(*fns):
    from . import ops
    x = fns[0]()
    for f in fns[1:]:
        if _traced(x):
            x = ops.logical_or(_as_bool(x), _as_bool(f()))
        elif x:
            return x
        else:
            x = f()
    return x


def not_(x):
    from . import ops
    return ops.logical_not(_as_bool(x)) if _traced(x) else not x


@user_api("if")
def if_stmt(test, true_fn, false_fn, inputs, names, returns):
    """An `if`: branch functions over the variables the branches assign; they return the
    new values (or, `returns`, the function's return value)."""
    if not _traced(test):
        return true_fn(*inputs) if test else false_fn(*inputs)
    return _traced_if(active_traces[-1], test, (true_fn, false_fn), inputs, names, returns,
                      user_location())


@user_api("conditional expression")
def if_exp(test, true_fn, false_fn):
    """`a if test else b`: Python's when test is not a traced Tensor, else one scf.if."""
    if not _traced(test):
        return true_fn() if test else false_fn()
    return _traced_if(active_traces[-1], test, (true_fn, false_fn), (), (), True,
                      user_location())


@user_api("while")
def while_stmt(cond, body, inputs, names):
    """A `while`: Python iterations while the condition is a Python value (or concrete);
    from the first traced Tensor condition on, one WhileLoop runs the rest."""
    values = tuple(inputs)
    while True:
        test = cond(*values)
        if _traced(test):
            return _traced_while(active_traces[-1], cond, body, values, names,
                                 user_location())
        if not test:
            return values
        values = tuple(body(*values))


@user_api("for")
def for_range(range_fn, args, body, inputs, names, brk=None, rollable=False, size=0):
    """`for i in range(...)`: a Python loop (unrolled while tracing) unless a bound is a
    traced Tensor or the loop is to be rolled (`_rolls`), then one ForiLoop. names[0] is the
    loop variable; `brk` names the flag a `break` sets (the Python loop stops there)."""
    if range_fn is builtins.range and active_traces.items and (
            any(_traced(a) for a in args) or _rolls(len(range(*args)) * size, rollable,
                                                    inputs[1:])):
        return _traced_for(active_traces[-1], args, body, inputs, names, user_location())
    return _python_loop(range_fn(*args), body, inputs, names, brk)


@user_api("for")
def for_iter(iterable, body, inputs, names, brk=None, rollable=False, size=0):
    """`for x in iterable`: over a traced Tensor, one loop over its first axis (the Scan of
    ops.Scan) when the body can be rolled (`_rolls`); otherwise Python's loop."""
    if _traced(iterable) and iterable.ndim and _rolls(None, rollable, inputs[1:]):
        return _traced_iter(active_traces[-1], iterable, body, inputs, names, user_location())
    return _python_loop(iterable, body, inputs, names, brk)


def _python_loop(iterable, body, inputs, names, brk):
    values = tuple(inputs)
    stop = names.index(brk) if brk else None
    for x in iterable:
        values = tuple(body(x, *values[1:]))
        if stop is not None and values[stop] is True:  # (a traced flag: the guards skip)
            break
    return values


class JitOptions(NamedTuple):
    """What ms.jit(loops=..., fullgraph=...) asks of the conversion (state.jit_options)."""
    loops: str = "auto"
    fullgraph: bool = False


LOOP_MODES = ("auto", "rolled", "unrolled")
# loops="auto": a `for` over an int range is rolled into one compiled loop when unrolling
# it would trace more than this many AST nodes (trip count x the body's nodes) and its body
# can be rolled; smaller loops unroll as before (their straight-line code is fastest).
AUTO_ROLL_NODES = int(os.environ.get("MSCC_AUTO_ROLL_NODES", "20000"))


def _rolls(unrolled_nodes, rollable, carried):
    """Whether a Python-bounded loop (an int range: unrolled_nodes; a Tensor's rows: None)
    becomes a compiled loop: always with loops="rolled", never with "unrolled"; with "auto"
    (the default) when its body can be rolled (_rollable), every variable it carries is a
    Tensor (a Python number would become a Tensor, changing its type), and, for a range,
    unrolling it would be large."""
    mode = jit_options[-1].loops if jit_options.items else "auto"
    if mode != "auto":
        return mode == "rolled"
    if not rollable or not all(isinstance(v, Tensor) or is_undefined(v) for v in carried):
        return False
    return unrolled_nodes is None or unrolled_nodes > AUTO_ROLL_NODES


def _where(where):
    return f"{where[0]}:{where[1]}"


def _carry(values, names, role, where):
    """The defined variables as a loop carry whose errors name them; the others (first
    assigned in the body) are not carried."""
    from . import control_flow as cf
    init = {n: v for n, v in zip(names, values) if not is_undefined(v)}
    carry = cf.Carry("vars", init)
    carry.paths = [re.sub(r"^vars\[('[^']*')\]", r"variable \1", p) for p in carry.paths]
    gone = {n: Undefined(n, f"variable '{n}' is first assigned inside the {role} on a Tensor "
                            f"at {_where(where)}: a compiled loop carries only the variables "
                            "defined before it; assign it before the loop")
            for n, v in zip(names, values) if is_undefined(v)}
    return carry, gone


def _unpack(carry, gone, names, leaves):
    d = carry.value(list(leaves))
    return tuple(d[n] if n in d else gone[n] for n in names)


def _traced_while(trace, cond, body, values, names, where):
    from . import control_flow as cf
    carry, gone = _carry(values, names, "while loop", where)
    if not carry.tensors:
        raise located_error(ValueError, "a `while` on a Tensor must assign a variable defined "
                            "before it (the loop's carry)", where)
    from . import pytree

    def loop_func(d):
        new = body(*_unpack(carry, gone, names, pytree.flatten(d)[0]))
        return carry.value(carry.check("the body of the while loop", _pick(carry, names, new)))
    leaves = cf.traced_while(
        trace, lambda d: cond(*_unpack(carry, gone, names, pytree.flatten(d)[0])),
        loop_func, carry, where)
    return _unpack(carry, gone, names, leaves)


def _pick(carry, names, values):
    """The carried variables out of all a body assigns (a dict, the carry's structure)."""
    keep = set(carry.value(carry.tensors))
    return {n: v for n, v in zip(names, values) if n in keep}


def _traced_for(trace, args, body, inputs, names, where):
    """One ForiLoop for `for i in range(*args)`: over 0..trips when the step is not 1
    (i = start + j * step; the step must be a Python int)."""
    from . import control_flow as cf
    step = args[2] if len(args) == 3 else 1
    if isinstance(step, (bool, np.bool_)) or not isinstance(step, (int, np.integer)):
        raise located_error(TypeError, "range() over a Tensor bound needs a Python int step, "
                            f"got {type(step).__name__}", where)
    if step == 0:
        raise located_error(ValueError, "range() arg 3 must not be zero", where)
    lower, upper = (0, args[0]) if len(args) == 1 else args[:2]
    lower, upper = cf._bound(lower, "range's start"), cf._bound(upper, "range's stop")
    dtype = cf._index_dtype(lower, upper)
    start = lower
    if step != 1:
        lower, upper = 0, cf._bound(_trip_count(lower, upper, int(step)), "the trip count")
    i_name = names[0]
    carry, gone = _carry(inputs[1:], names[1:], "for loop", where)
    gone[i_name] = Undefined(i_name, f"the loop variable '{i_name}' of the for loop compiled "
                             f"at {_where(where)} has no value after the loop")

    def step_fn(region, j, leaves):
        i = j if step == 1 else _scalar(start, dtype) + j * int(step)
        new = body(i, *_unpack(carry, gone, names[1:], leaves))
        return carry.check("the body of the for loop", _pick(carry, names[1:], new[1:])), []
    op, _, _ = cf.traced_for(trace, "ForiLoop", (lower, upper, dtype), step_fn, carry, where)
    out = _unpack(carry, gone, names[1:], cf._traced_leaves(trace, op.results, carry.specs))
    return (gone[i_name],) + out


def _trip_count(lower, upper, step):
    """len(range(lower, upper, step)) for int or one-element integer Tensor bounds."""
    from . import ops
    if not isinstance(lower, Tensor) and not isinstance(upper, Tensor):
        return len(range(lower, upper, step))
    span = ops.reshape((upper - lower) if step > 0 else (lower - upper), ())
    # ceil(span / |step|), in float64 (exact below 2**53; ms.div of ints is a float32 division)
    trips = ops.ceil(ops.cast(span, dt.float64) / abs(step))
    return ops.maximum(ops.cast(trips, span.dtype), 0)


def _scalar(x, dtype):
    """A range bound as a 0-d Tensor of the loop's index dtype."""
    from . import ops
    if not isinstance(x, Tensor):
        return Tensor(np.array(x, dtype.np))
    return ops.cast(ops.reshape(x, ()), dtype)


def _traced_iter(trace, xs, body, inputs, names, where):
    """One loop over the rows of a traced Tensor (`for x in t`), each read with
    ms.dynamic_index: the Scan of ops.Scan (a static trip count, so it is differentiable)."""
    from . import control_flow as cf
    from .dispatch import call
    carry, gone = _carry(inputs[1:], names[1:], "for loop", where)
    gone[names[0]] = Undefined(names[0], f"the loop variable '{names[0]}' of the for loop "
                               f"over a Tensor at {_where(where)} has no value after the loop")

    def step_fn(region, i, leaves):
        x = call("ms.dynamic_index", (xs, i))
        new = body(x, *_unpack(carry, gone, names[1:], leaves))
        return carry.check("the body of the for loop", _pick(carry, names[1:], new[1:])), []
    op, _, _ = cf.traced_for(trace, "Scan", (0, xs.shape[0], dt.int64), step_fn, carry,
                             where)
    out = _unpack(carry, gone, names[1:], cf._traced_leaves(trace, op.results, carry.specs))
    return (gone[names[0]],) + out


def _is_static(x):
    """A value without Tensors (None, a string, a number, a tuple of them...)."""
    from . import pytree
    return not any(isinstance(v, Tensor) for v in pytree.flatten(x)[0])


def _same_static(a, b):
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # (a comparison that is not a bool: not the same)
        return False


def _branch_outputs(trace, pred, fns, inputs, returns, where):
    """Trace both branches into a draft scf.if; returns (draft, [(region, outputs)])."""
    from mlir import ir
    from mlir.dialects import scf
    from . import control_flow as cf
    p = cf._predicate(trace, pred, "the condition of the if", where)
    with trace.context, cf._loc(trace, where), ir.InsertionPoint(trace.block):
        draft = scf.IfOp(p, [], has_else=True)
    outs = []
    for block, fn, role in ((draft.then_block, fns[0], "true branch"),
                            (draft.else_block, fns[1], "false branch")):
        with cf._region(trace, block, "if", role, where) as region:
            with cf._body("if", role):
                out = fn(*inputs)
        outs.append((region, [out] if returns else list(out)))
    return p, draft, outs


def _classify(labels, names, a_outs, b_outs, where):
    """Per output: a static value (equal Python values, or Undefined), or None where it
    is a Tensor value the scf.if must return."""
    static = []
    for label, name, a, b in zip(labels, names, a_outs, b_outs):
        if is_undefined(a) and is_undefined(b):
            static.append(a)
        elif is_undefined(a) or is_undefined(b):
            side = "false" if is_undefined(a) else "true"
            static.append(Undefined(name, f"variable '{name}' is assigned only in the {side} "
                                    f"branch of the `if` on a Tensor at {_where(where)} (both "
                                    "branches are compiled): assign it before the if or in "
                                    "both branches"))
        elif a is b or (_is_static(a) and _is_static(b) and _same_static(a, b)):
            static.append(a)
        else:
            static.append(None)
    return static


def _matched(label, a, b, where):
    """The leaves of both branches' values of one output, with the same specs."""
    from . import control_flow as cf
    ca, cb = cf.Carry(label, a), cf.Carry(label, b)
    if ca.tree != cb.tree:
        raise located_error(ValueError, f"{label} is {cf._structure(a)} in the true branch of "
                            f"the `if` and {cf._structure(b)} in the false branch: both "
                            "branches must give it the same structure", where)
    for k, (x, y) in enumerate(zip(ca.tensors, cb.tensors)):
        # A Python number beside a Tensor takes the Tensor's dtype (`y = 0` vs `y = x.sum()`)
        scalars = x.ndim == 0 and y.ndim == 0 and x._spec != y._spec
        if scalars and not isinstance(pytree_leaf(b, k), Tensor):
            cb.tensors[k] = y = _const_like(pytree_leaf(b, k), x)
        elif scalars and not isinstance(pytree_leaf(a, k), Tensor):
            ca.tensors[k] = x = _const_like(pytree_leaf(a, k), y)
        if x._spec != y._spec:
            raise located_error(ValueError, f"{ca.paths[k]} is {cf._fmt(x._spec)} in the true "
                                f"branch of the `if` and {cf._fmt(y._spec)} in the false "
                                "branch: both branches must give it the same shape and dtype",
                                where)
    ca.specs = [t._spec for t in ca.tensors]
    return ca, cb


def pytree_leaf(x, k):
    from . import pytree
    return pytree.flatten(x)[0][k]


def _const_like(number, t):
    import numpy as np
    return Tensor(np.full(t.shape, number, dtype=t.dtype.np))


def _traced_if(trace, pred, fns, inputs, names, returns, where):
    """One scf.if (api "cond", so its gradient is ops.cond's) returning the outputs that are
    Tensors in either branch; outputs equal in both stay Python values."""
    from mlir import ir
    from mlir.dialects import scf
    from ..dialects.ops.control import set_api
    from . import control_flow as cf
    from . import pytree
    labels = ["the return value"] if returns else [f"variable '{n}'" for n in names]
    names = ["<return>"] if returns else list(names)
    p, draft, ((ra, a_outs), (rb, b_outs)) = _branch_outputs(trace, pred, fns, inputs,
                                                            returns, where)
    static = _classify(labels, names, a_outs, b_outs, where)
    pairs = {k: _matched(labels[k], a_outs[k], b_outs[k], where)
             for k, s in enumerate(static) if s is None}
    values = [[r.value_of(t) for k in pairs for t in pairs[k][side].tensors]
              for side, r in ((0, ra), (1, rb))]
    with trace.context, cf._loc(trace, where), ir.InsertionPoint(draft):
        op = scf.IfOp(p, [v.type for v in values[0]], has_else=True)
        set_api(op, "cond")
    for vals, old, new in zip(values, (draft.then_block, draft.else_block),
                              (op.then_block, op.else_block)):
        for inner in list(old.operations):
            new.append(inner)
        with trace.context, cf._loc(trace, where), ir.InsertionPoint(new):
            scf.YieldOp(vals)
    draft.erase()
    results = iter(list(op.results))
    out = list(static)
    for k, (ca, _) in pairs.items():
        leaves = [Tensor._traced(next(results), s, trace) for s in ca.specs]
        out[k] = pytree.unflatten(ca.tree, leaves)
    return out[0] if returns else tuple(out)


_helpers = sys.modules[__name__]
