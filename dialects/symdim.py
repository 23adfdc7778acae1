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
"""
from __future__ import annotations

import contextlib
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
        return {a for mono in self.terms for a in mono}

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
        """`self op other` where every size decides it alike: the difference is an int,
        or a polynomial whose non-constant terms are positive (it is at least its
        constant term for every size)."""
        diff = self - other
        if not isinstance(diff, Dim):
            return op(diff, 0)
        low = diff.terms.get((), 0)
        if all(c > 0 for m, c in diff.terms.items() if m):
            if low > 0:
                return op(1, 0)
            if low == 0 and op(0, 0) == op(1, 0):
                return op(0, 0)
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
                v *= sizes[a]
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
