"""ms-cpu-math-approx: exp, log, tanh and erf on float32 (and float16) as polynomials.

On the CPU, math.exp/log/tanh become libm calls that LLVM cannot vectorize, which leaves a
fused elementwise loop at ~1 GB/s. These rewrites (the Cephes/Eigen approximations that
upstream MLIR's PolynomialApproximation uses, which the Python wheels do not expose) turn them
into arithmetic that vectorizes; accuracy is within a few ulp of float32. float64 keeps libm:
LLVM has intrinsics for exp, log and tanh, and erf (which has none) becomes a call of libm's
erf here. The GPU path keeps math ops (libdevice implements them).
"""
from mlir import ir
from mlir.dialects import arith, func, vector
from mlir.dialects import math as mmath

from .base import PatternPass, register
from ..dialects.ir_helpers import enclosing_module

_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_LOG2E = 1.44269504088896341
_EXP_MAX, _EXP_MIN = 88.7228391116729996, -104.0  # beyond: inf, and 0 (below denormals)
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
             1.6666665459e-1, 5.0000001201e-1)
_TANH_CLAMP, _TANH_TINY = 7.90531110763549805, 0.0004
_TANH_ONE = 9.02  # float32 tanh rounds to 1.0 from about 9.01 (1 - tanh(x) = 2 e^-2x < 2**-25)
_TANH_NUM = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
             5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
             4.89352455891786e-03)
_TANH_DEN = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
             4.89352518554385e-03)
_LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
             1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
             3.3333331174e-1)
_SQRT_HALF = 0.707106781186547524
_ERF_CLAMP = 4.0  # |x| >= 4: erf is +-1 in float32
_ERF_NUM = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
            -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
            -1.60960333262415e-02)
_ERF_DEN = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
            -7.37332916720468e-03, -1.42647390514189e-02)


class _F32:
    """float32 arithmetic on scalars or vectors of the value's shape."""

    def __init__(self, t: ir.Type):
        self.t = t
        shape = ir.VectorType(t).shape if isinstance(t, ir.VectorType) else None
        self.fm = ir.Attribute.parse("#arith.fastmath<contract>")
        self.i32 = ir.IntegerType.get_signless(32)
        self.it = ir.VectorType.get(shape, self.i32) if shape else self.i32
        self.shape = shape

    def c(self, v):
        return self._const(self.t, ir.FloatAttr.get(ir.F32Type.get(), v))

    def ci(self, v):
        return self._const(self.it, ir.IntegerAttr.get(self.i32, v))

    def _const(self, t, scalar_attr):
        if self.shape:
            return arith.constant(t, ir.DenseElementsAttr.get_splat(t, scalar_attr))
        return arith.constant(t, scalar_attr)

    # contract: a multiply and the add of its product become one FMA where the CPU has
    # them (LLVM fuses them; without FMA they stay two ops, never a libm call as math.fma
    # would be): Horner steps and the argument reductions are multiply-adds.
    def mul(self, x, y):
        return arith.mulf(x, y, fastmath=self.fm)

    def add(self, x, y):
        return arith.addf(x, y, fastmath=self.fm)

    def sub(self, x, y):
        return arith.subf(x, y, fastmath=self.fm)

    def horner(self, x, coeffs):
        y = self.c(coeffs[0])
        for k in coeffs[1:]:
            y = self.add(self.mul(y, x), self.c(k))
        return y

    def clamp(self, x, lo, hi):
        return arith.minimumf(arith.maximumf(x, self.c(lo)), self.c(hi))


def exp_f32(f: _F32, x):
    """Cephes expf: x = k ln2 + r, exp(r) by a degree-6 polynomial, 2^k from exponent bits
    (as 2^(k/2) * 2^(k - k/2), so that k in [-150, 128] reaches denormals and FLT_MAX)."""
    too_big = arith.cmpf(arith.CmpFPredicate.OGT, x, f.c(_EXP_MAX))
    # nan in, nan out, stated: fptosi of nan is poison in LLVM, which spread through 2^k into
    # the result once LLVM folded a nan it could see (exp(x * nan) gave garbage under jit:
    # API fuzzing, bench/fuzz_api.py, ops.softplus(x, beta=nan)).
    given, is_nan = x, arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    x = f.clamp(x, _EXP_MIN, _EXP_MAX)
    k = mmath.floor(f.add(f.mul(x, f.c(_LOG2E)), f.c(0.5)))
    r = f.sub(f.sub(x, f.mul(k, f.c(_LN2_HI))), f.mul(k, f.c(_LN2_LO)))
    y = f.horner(r, _EXP_POLY)
    y = f.add(f.add(f.mul(f.mul(y, r), r), r), f.c(1.0))
    ki = arith.fptosi(f.it, k)
    half = arith.shrsi(ki, f.ci(1))
    for part in (half, arith.subi(ki, half)):
        y = f.mul(y, arith.bitcast(f.t, arith.shli(arith.addi(part, f.ci(127)), f.ci(23))))
    return arith.select(is_nan, given, arith.select(too_big, f.c(float("inf")), y))


def tanh_f32(f: _F32, x):
    """Eigen's rational approximation on [-7.9, 7.9]; tanh(x) = x for tiny |x|."""
    tiny = arith.cmpf(arith.CmpFPredicate.OLT, mmath.absf(x), f.c(_TANH_TINY))
    xc = f.clamp(x, -_TANH_CLAMP, _TANH_CLAMP)
    x2 = f.mul(xc, xc)
    p = f.mul(xc, f.horner(x2, _TANH_NUM))
    q = f.horner(x2, _TANH_DEN)
    # Beyond _TANH_ONE float32's tanh is +-1 exactly; the clamped polynomial stops at
    # 0.99999976, so 1 + tanh(x) of a large negative x was not 0 and GELU's tanh form gave
    # -238 for -2e9 (API fuzzing: the two modes rounded the difference differently).
    one = mmath.copysign(f.c(1.0), x)
    saturated = arith.cmpf(arith.CmpFPredicate.OGE, mmath.absf(x), f.c(_TANH_ONE))
    return arith.select(saturated, one, arith.select(tiny, x, arith.divf(p, q)))


def erf_f32(f: _F32, x):
    """Eigen's rational approximation x P(x^2) / Q(x^2) on [-4, 4] (max error 4e-7)."""
    xc = f.clamp(x, -_ERF_CLAMP, _ERF_CLAMP)
    x2 = f.mul(xc, xc)
    return arith.divf(f.mul(xc, f.horner(x2, _ERF_NUM)), f.horner(x2, _ERF_DEN))


def log_f32(f: _F32, x):
    """Cephes logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by a polynomial."""
    # Denormals are scaled by 2^23 first, so that frexp by bit manipulation works.
    denormal = arith.cmpf(arith.CmpFPredicate.OLT, x, f.c(1.17549435e-38))
    scaled = arith.select(denormal, f.mul(x, f.c(8388608.0)), x)
    bits = arith.bitcast(f.it, scaled)
    e = arith.subi(arith.andi(arith.shrui(bits, f.ci(23)), f.ci(0xFF)), f.ci(126))
    m = arith.bitcast(f.t, arith.ori(arith.andi(bits, f.ci(0x807FFFFF)), f.ci(0x3F000000)))
    small = arith.cmpf(arith.CmpFPredicate.OLT, m, f.c(_SQRT_HALF))
    e = arith.sitofp(f.t, e)
    e = arith.select(denormal, f.sub(e, f.c(23.0)), e)
    e = arith.select(small, f.sub(e, f.c(1.0)), e)
    m = f.sub(arith.select(small, f.add(m, m), m), f.c(1.0))
    m2 = f.mul(m, m)
    y = f.mul(f.mul(f.horner(m, _LOG_POLY), m2), m)
    y = f.add(y, f.mul(e, f.c(_LN2_LO)))
    y = f.sub(y, f.mul(m2, f.c(0.5)))
    y = f.add(f.add(m, y), f.mul(e, f.c(_LN2_HI)))
    # log(0) = -inf, log(inf) = inf, log(x < 0) = nan; nan stays nan.
    y = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, x, f.c(0.0)), f.c(float("-inf")), y)
    y = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, x, f.c(float("inf"))), x, y)
    return arith.select(arith.cmpf(arith.CmpFPredicate.ULT, x, f.c(0.0)), f.c(float("nan")), y)


def _approximate(expand, libm=None):
    """A pattern for a float32/float16 math op; float64 is left to LLVM, or with `libm` (a
    function without an LLVM intrinsic) becomes a call of that C function, lane by lane."""
    def pattern(op, rewriter):
        t = op.result.type
        elem = ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
        if libm is not None and isinstance(elem, ir.F64Type):
            with rewriter.ip, op.location:
                y = _call_per_lane(libm, op.operands[0], op.operation)
            rewriter.replace_op(op, [y])
            return None
        if not isinstance(elem, (ir.F32Type, ir.F16Type)):
            return True  # did not match: float64 keeps libm
        with rewriter.ip, op.location:
            x = op.operands[0]
            if isinstance(elem, ir.F16Type):  # compute in float32
                wide = ir.VectorType.get(ir.VectorType(t).shape, ir.F32Type.get()) \
                    if isinstance(t, ir.VectorType) else ir.F32Type.get()
                y = arith.truncf(t, expand(_F32(wide), arith.extf(wide, x)))
            else:
                y = expand(_F32(t), x)
        rewriter.replace_op(op, [y])
    return pattern


def _call_per_lane(name, x, op):
    """`name(x)` for a float64 scalar or each lane of a float64 vector, declaring the C
    function in the module once."""
    f64 = ir.F64Type.get()
    module = enclosing_module(op)
    table = ir.SymbolTable(module)
    if name not in table:
        with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]):
            decl = func.FuncOp(name, ir.FunctionType.get([f64], [f64]))
            decl.attributes["sym_visibility"] = ir.StringAttr.get("private")
    if not isinstance(x.type, ir.VectorType):
        return func.CallOp([f64], name, [x]).result
    out = arith.constant(x.type, ir.DenseElementsAttr.get_splat(x.type, ir.FloatAttr.get(f64, 0)))
    for lane in range(ir.VectorType(x.type).shape[0]):
        y = func.CallOp([f64], name, [vector.extract(x, [], [lane])]).result
        out = vector.insert(y, out, [], [lane])
    return out


@register
class CpuMathApproximation(PatternPass):
    name = "ms-cpu-math-approx"
    summary = "exp, log, tanh, erf on float32/float16 as vectorizable polynomials (CPU)"
    patterns = {"math.exp": _approximate(exp_f32), "math.tanh": _approximate(tanh_f32),
                "math.log": _approximate(log_f32), "math.erf": _approximate(erf_f32, "erf")}
