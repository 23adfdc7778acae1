"""Dimensions known only at run time (`?` in `tensor<?x784xf32>`): symbolic sizes.

A `Dim` is an integer polynomial over named sizes (atoms): `a0.0` is dimension 0 of a
function's argument #0, `?` an unknown size read from an IR type. Shape rules compute with
Dims as they do with ints (products, exact quotients, sums), so a reshape to -1 of a
(?, 784) tensor is still (?, 784)-sized and a flatten of (?, 4, 5) is (20 * ?): nothing in a
rule needs to know about dynamic shapes until it needs a number, and then the Dim refuses
(DynamicDimError, a TypeError) instead of guessing: that op has no dynamic form yet.

Two dynamic sizes a rule needs to be equal (the rows of two operands of an add) are unified:
`unify(a, b)` returns the one to use and tells the innermost `recording_constraints()`
context, which is how the compiler learns the checks a call must pass (runtime/dynamic.py
checks them against the arrays before any code runs). Sizes 0 and 1 need no special case:
a dynamic size never broadcasts (as in JAX), so every dynamic dimension of a call may be any
size, including 0 and 1, as long as the sizes that must agree do.

A slice's bounds clamp like Python's (`x[2:5]` of ? rows has min(5, ?) - min(2, ?)), and an
axis split in equal parts has ? // parts rows: `dim_min`, `dim_max` and `floor_div` make such
sizes, each an atom of its own whose name spells it (`min(5,a0.0)`), so that the polynomials
above stay polynomials and equal expressions stay equal; `evaluate` computes them from the
arguments' sizes and comparisons see through them (`min(5,a0.0) <= 5` for every size).
"""
from __future__ import annotations

import contextlib
import math
import operator
import re
import threading


class DynamicDimError(TypeError):
    """A computation needed the value of a dimension known only at run time."""


class Dim:
    """An integer polynomial over atoms: `terms` maps a sorted tuple of atom names (a
    monomial) to its coefficient; no constant-only Dim exists (they are ints)."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms):
        self.terms = terms
        self._hash = hash(tuple(sorted(terms.items())))

    @staticmethod
    def atom(name: str) -> "Dim":
        return Dim({(name,): 1})

    @property
    def atoms(self) -> set:
        """The sizes this one is computed from (those inside a clamp or quotient too)."""
        return {leaf for mono in self.terms for a in mono for leaf in atom_leaves(a)}

    # -- arithmetic
    def __add__(self, other):
        return _poly(_add(self.terms, _terms(other)))

    __radd__ = __add__

    def __sub__(self, other):
        return _poly(_add(self.terms, {m: -c for m, c in _terms(other).items()}))

    def __rsub__(self, other):
        return _poly(_add(_terms(other), {m: -c for m, c in self.terms.items()}))

    def __neg__(self):
        return _poly({m: -c for m, c in self.terms.items()})

    def __mul__(self, other):
        out: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in _terms(other).items():
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return _poly(out)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        """Exact quotients only: by an int dividing every coefficient, or by a monomial
        dividing every term."""
        q = exact_quotient(self, other)
        if q is None:
            raise DynamicDimError(f"{self} // {other} is not known before run time")
        return q

    def __rfloordiv__(self, other):
        raise DynamicDimError(f"{other} // {self} is not known before run time")

    def __mod__(self, other):
        if isinstance(other, int) and other and all(c % other == 0 for c in self.terms.values()):
            return 0
        raise DynamicDimError(f"{self} % {other} is not known before run time")

    # -- comparisons: structural equality; order only where any size decides it
    def __eq__(self, other):
        return isinstance(other, Dim) and other.terms == self.terms

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._hash

    def _order(self, other, op):
        """`self op other` where every size decides it alike (symdim.sign of the
        difference, for the integers a < b and a - b + 1 <= 0 alike)."""
        diff = self - other
        if not isinstance(diff, Dim):
            return op(diff, 0)
        if op(0, 0) == op(1, 0):      # >= or <: decided by the sign of diff
            known = sign(diff)
            if known is not None:
                return op(0, 0) if known else op(-1, 0)
        else:                         # > or <=: by the sign of diff - 1
            known = sign(diff - 1)
            if known is not None:
                return op(1, 0) if known else op(0, 0)
        raise DynamicDimError(f"whether {self} compares with {other} is not known before "
                              "run time")

    @property
    def nonnegative(self):
        return all(c > 0 for c in self.terms.values())

    def __lt__(self, other):
        return self._order(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._order(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._order(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._order(other, lambda a, b: a >= b)

    def __bool__(self):
        raise DynamicDimError(f"whether {self} is zero is not known before run time")

    def __index__(self):
        raise DynamicDimError(f"the size {self} is known only at run time")

    __int__ = __index__

    def __repr__(self):
        """With the atoms' names (`4*a0.0`: four times dimension 0 of argument #0)."""
        return self._text(lambda a: a)

    def __str__(self):
        """As users see it: `?` for a size known at run time (`4*?`: four times one)."""
        return self._text(lambda a: "?")

    def _text(self, name):
        name = _derived_text(name)
        parts = []
        for mono, c in sorted(self.terms.items()):
            factor = "*".join(name(a) for a in mono) if mono else ""
            parts.append(str(c) if not mono else factor if c == 1 else f"{c}*{factor}")
        return "+".join(parts)

    def evaluate(self, sizes: dict) -> int:
        """The value for the atoms' run-time sizes."""
        total = 0
        for mono, c in self.terms.items():
            v = c
            for a in mono:
                v *= sizes[a] if a in sizes else _derived_value(a, sizes)
            total += v
        return total


def _terms(x) -> dict:
    if isinstance(x, Dim):
        return x.terms
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"a dimension cannot combine with {type(x).__name__}")
    return {(): x} if x else {}


def _add(a: dict, b: dict) -> dict:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + c
    return out


def _poly(terms: dict):
    terms = {m: c for m, c in terms.items() if c}
    if not terms:
        return 0
    if set(terms) == {()}:
        return terms[()]
    return Dim(terms)


def exact_quotient(x, y):
    """x / y when it is exact for every size (ints and Dims alike), else None."""
    if isinstance(y, Dim) and isinstance(x, Dim) and x == y:
        return 1
    if not isinstance(x, Dim):
        if isinstance(y, Dim):
            return None
        return x // y if y and x % y == 0 else None
    if isinstance(y, int):
        if y and all(c % y == 0 for c in x.terms.values()):
            return _poly({m: c // y for m, c in x.terms.items()})
        return None
    if len(y.terms) != 1:
        return None
    (ym, yc), = y.terms.items()
    out = {}
    for m, c in x.terms.items():
        rest = list(m)
        for a in ym:
            if a not in rest:
                return None
            rest.remove(a)
        if c % yc:
            return None
        out[tuple(rest)] = c // yc
    return _poly(out)


# ------------------------------------------------------------------ clamps and quotients

SIZE_LIMIT = 2 ** 62  # no dimension is this large: a slice bound beyond it means "to the end"

_DERIVED: dict = {}   # the name of a clamp's or quotient's atom -> (op, args)
_EVALUATE = {"min": min, "max": max, "fdiv": operator.floordiv}


def _derived(op: str, *args) -> Dim:
    """The atom standing for op(*args); its name spells it (`max(0,-1+a0.0)`), so that it
    reads back from a description (derived_parts) and equal expressions are one atom."""
    name = f"{op}({','.join(map(repr, args))})"
    _DERIVED.setdefault(name, (op, args))
    return Dim.atom(name)


def dim_max(a, b):
    """max(a, b) of two sizes (ints or Dims): one of them where every size decides it."""
    return _extreme("max", a, b)


def dim_min(a, b):
    """min(a, b) of two sizes (ints or Dims)."""
    return _extreme("min", a, b)


def _extreme(op: str, a, b):
    """op ("max" or "min") of a and b: the one that wins for every size, else a clamp."""
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return _EVALUATE[op](a, b)
    a_wins = sign(a - b) if op == "max" else sign(b - a)
    b_wins = sign(b - a) if op == "max" else sign(a - b)
    if a_wins:
        return _pushed_in(a)
    if b_wins:
        return _pushed_in(b)
    return _derived(op, *sorted((a, b), key=repr))


def _pushed_in(p):
    """p with the rest of it taken into its one clamp: ? - min(1, ?) is max(? - 1, 0), the
    form another slice's bounds give for the same size (so that x[1:] * x[:-1] needs no
    run-time check that the two sizes agree)."""
    if not isinstance(p, Dim):
        return p
    derived = [(m, c) for m, c in p.terms.items() if any(derived_parts(a) for a in m)]
    if len(derived) != 1:
        return p
    (mono, c), = derived
    if len(mono) != 1 or c not in (1, -1) or derived_parts(mono[0])[0] not in ("min", "max"):
        return p
    parts = derived_parts(mono[0])
    rest = p - c * Dim.atom(mono[0])
    if rest == 0:
        return p
    op, (x, y) = parts
    keep = (op == "max") == (c > 0)   # -max(x, y) is min(-x, -y)
    return (dim_max if keep else dim_min)(rest + c * x, rest + c * y)


def floor_div(a, k: int):
    """a // k (Python's floor) for a positive int k: the whole multiples of k taken out
    (`(3*? + 5) // 2` is `? + 2 + (? + 1) // 2`), the rest an atom (with the common factor
    of the rest and k cancelled: `(4*? + 2) // 8` is `(2*? + 1) // 4`)."""
    if not isinstance(a, Dim):
        return a // k
    whole, rest = {}, {}
    for mono, c in a.terms.items():
        whole[mono], rest[mono] = divmod(c, k)
    rest = _poly(rest)
    if not isinstance(rest, Dim):
        return _poly(whole) + rest // k
    common = math.gcd(k, *rest.terms.values())
    rest = _poly({m: c // common for m, c in rest.terms.items()})
    return _poly(whole) + _derived("fdiv", rest, k // common)


def ceil_div(a, k: int):
    """-(-a // k): the number of k-sized steps covering a."""
    return floor_div(a + (k - 1), k)


def derived_parts(atom: str):
    """(op, args) of a clamp's or quotient's atom (read back from its name when it came from
    a description), None for a size of an argument; ValueError for a name that is neither."""
    if atom in _DERIVED:
        return _DERIVED[atom]
    if "(" not in atom:
        if not re.fullmatch(r"[A-Za-z?][\w.]*", atom):
            raise ValueError(f"{atom!r} is not the name of a size")
        return None
    if parse_size(atom) != Dim.atom(atom):  # (parsing registers it: a name spelled alike)
        raise ValueError(f"{atom!r} is not the name of a size")
    return _DERIVED[atom]


def atom_leaves(atom: str) -> set:
    """The arguments' sizes an atom is computed from (itself for one of them)."""
    parts = derived_parts(atom)
    if parts is None:
        return {atom}
    return set().union(*(a.atoms for a in parts[1] if isinstance(a, Dim)))


def _derived_value(atom: str, sizes: dict) -> int:
    parts = derived_parts(atom)
    if parts is None:
        raise KeyError(atom)
    op, args = parts
    return _EVALUATE[op](*(a.evaluate(sizes) if isinstance(a, Dim) else a for a in args))


def _derived_text(name):
    """Atom names for Dim._text: a derived atom spelled with its arguments in the same
    names (`max(0,-1+?)` for users)."""
    def text(atom):
        parts = derived_parts(atom)
        if parts is None:
            return name(atom)
        op, args = parts
        return f"{op}({','.join(a._text(name) if isinstance(a, Dim) else str(a) for a in args)})"
    return text


_TOKEN = re.compile(r"-?\d+|[A-Za-z?][\w.]*|[()+*,]")


def parse_size(text: str):
    """The size a Dim's repr spells (`1+2*a0.0`, `max(0,-1+a0.0)`); ValueError if none."""
    tokens = _TOKEN.findall(text)
    if "".join(tokens) != text:
        raise ValueError(f"{text!r} is not a size")
    at = [0]

    def take(want=None):
        if at[0] >= len(tokens) or (want is not None and tokens[at[0]] != want):
            raise ValueError(f"{text!r} is not a size")
        at[0] += 1
        return tokens[at[0] - 1]

    def peek():
        return tokens[at[0]] if at[0] < len(tokens) else None

    def total():
        value = term()
        while peek() == "+":
            take()
            value = value + term()
        return value

    def term():
        value = 1
        while True:
            value = value * factor()
            if peek() != "*":
                return value
            take()

    def factor():
        tok = take()
        if tok.lstrip("-").isdigit():
            return int(tok)
        if tok in _EVALUATE and peek() == "(":
            take("(")
            args = [total()]
            while peek() == ",":
                take()
                args.append(total())
            take(")")
            if len(args) != 2:
                raise ValueError(f"{text!r} is not a size")
            return _derived(tok, *args)
        if tok in ("(", ")", "+", "*", ","):
            raise ValueError(f"{text!r} is not a size")
        return Dim.atom(tok)
    value = total()
    if at[0] != len(tokens):
        raise ValueError(f"{text!r} is not a size")
    return value


def sign(p):
    """True when the size expression p is >= 0 for every size, False when it is < 0 for
    every size, None when that depends on the sizes. Sizes are in [0, SIZE_LIMIT); a clamp
    or quotient is seen through (p >= 0 with max(x, y) in it: with x or with y in its place)."""
    if not isinstance(p, Dim):
        return p >= 0
    linear = [(m[0], c) for m, c in p.terms.items() if len(m) == 1 and derived_parts(m[0])]
    if not linear:
        return _polynomial_sign(p)
    atom, c = linear[0]
    op, args = derived_parts(atom)
    rest = p - c * Dim.atom(atom)
    return _SEE_THROUGH[op](rest, c, *args)


def _polynomial_sign(p: Dim):
    """sign() of a polynomial of the arguments' sizes (any clamp inside a product: None)."""
    if any(derived_parts(a) for m in p.terms for a in m):
        return None
    top = SIZE_LIMIT - 1
    const = p.terms.get((), 0)
    low = const + sum(c * top ** len(m) for m, c in p.terms.items() if m and c < 0)
    high = const + sum(c * top ** len(m) for m, c in p.terms.items() if m and c > 0)
    return True if low >= 0 else False if high < 0 else None


def _any_of(a, b):
    """The sign of max(a, b) from those of a and b."""
    return True if True in (a, b) else False if a is False and b is False else None


def _all_of(a, b):
    """The sign of min(a, b)."""
    return False if False in (a, b) else True if a is True and b is True else None


def _max_sign(rest, c, x, y):
    """sign(rest + c*max(x, y)): c*max is max(c*x, c*y) for c > 0, min(c*x, c*y) else."""
    both = (sign(rest + c * x), sign(rest + c * y))
    return _any_of(*both) if c > 0 else _all_of(*both)


def _min_sign(rest, c, x, y):
    both = (sign(rest + c * x), sign(rest + c * y))
    return _all_of(*both) if c > 0 else _any_of(*both)


def _fdiv_sign(rest, c, x, k):
    """sign(rest + c*(x // k)) from k*(x // k) lying in [x - k + 1, x]: k times the
    expression lies between k*rest + c times either end."""
    ends = (k * rest + c * (x - k + 1), k * rest + c * x)
    low, high = ends if c > 0 else ends[::-1]
    if sign(low + (k - 1)) is True:     # k*p > -k, so p >= 0
        return True
    if sign(high) is False:             # k*p < 0, so p < 0
        return False
    return None


_SEE_THROUGH = {"max": _max_sign, "min": _min_sign, "fdiv": _fdiv_sign}


def estimate(n, guess: int = 256) -> int:
    """A number for heuristics (fusion's costs, schedules' choices) where a size is dynamic:
    each run-time size counted as `guess`."""
    if not isinstance(n, Dim):
        return n
    return n.evaluate({a: guess for a in n.atoms})


def estimated_numel(shape, guess: int = 256) -> int:
    n = 1
    for d in shape:
        n *= estimate(d, guess)
    return n


def is_dynamic(d) -> bool:
    return isinstance(d, Dim)


def has_dynamic(shape) -> bool:
    return any(isinstance(d, Dim) for d in shape)


ANY = Dim.atom("?")  # a `?` read from an IR type: some run-time size


def arg_atom(arg: int, axis: int) -> Dim:
    """Dimension `axis` of argument #arg of the function being compiled."""
    return Dim.atom(f"a{arg}.{axis}")


# ------------------------------------------------------------------ unification

class Constraint:
    """Two sizes a call's arrays must make equal, and where the program needed it."""

    __slots__ = ("a", "b", "what", "location")

    def __init__(self, a, b, what, location):
        self.a, self.b, self.what, self.location = a, b, what, location

    def __repr__(self):
        return f"Constraint({self.a} == {self.b}, {self.what!r})"


_local = threading.local()


def _recorders() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


@contextlib.contextmanager
def recording_constraints(into: list, where=None):
    """Collect the Constraints of every unification inside; `where()` gives the location
    (the op being lowered) to store with each."""
    stack = _recorders()
    stack.append((into, where))
    try:
        yield into
    finally:
        stack.pop()


def unify(a, b, what="sizes"):
    """The size to use where `a` and `b` must agree (`what` says why, for the run-time
    error). Two ints must be equal (None if not: the caller raises its ShapeError); with a
    Dim the static size wins and the equality becomes a run-time check."""
    if a == b:
        return a
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return None
    stack = _recorders()
    if stack and ANY not in (a, b):
        into, where = stack[-1]
        into.append(Constraint(a, b, what, where() if where else None))
    return b if isinstance(a, Dim) and not isinstance(b, Dim) else a
