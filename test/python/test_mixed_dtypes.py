"""Mixed-dtype programs, written as MindSpore's frontend emits them (tensors of different
dtypes, Python scalars as ms.constant marked is_scalar, const inputs as constant operands),
compiled through the whole CPU pipeline and run.

Each row states the dtype MindSpore's implicit type promotion gives the result and computes
the expected values with numpy on the inputs converted the way MindSpore converts them; the
test checks both. Rows cover every promotion rule: the highest-priority tensor dtype wins,
int8 with uint8 gives int16, Python scalars do not raise a tensor's dtype except that a bool
group becomes int64 with a Python int and float32 with a Python float, and any non-float group
becomes float32 with a Python float. uint16/32/64 and bfloat16 follow MindSpore 2.x's pair table
(tensor_tensor_convert_map in mindspore/ccsrc, transcribed in MINDSPORE_PAIRS below): float16
with bfloat16 gives float32, bfloat16 outranks every integer, and uint16/32/64 meet only bool
and themselves (a TypeError otherwise, Python ints and floats included).
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from mlir import ir

from mscc.dialects import dtypes as dt
from mscc.dialects.builders import PARAM_ATTR, build_function, constant, mlir_context
from mscc.passes.compiler import compile_module
from mscc.passes.diagnostics import CompileError
from mstest import assert_matches, compile_fn, op, spec

f16, f32, f64 = np.float16, np.float32, np.float64
i8, i16, i32, i64 = np.int8, np.int16, np.int32, np.int64
bf16 = dt.bfloat16.np
u16, u32, u64 = np.uint16, np.uint32, np.uint64


def py(value):
    """A Python scalar as the frontend emits it (int -> int64, float -> float64, bool)."""
    return constant(value, scalar=True)


def ints(axes):
    """A const input (axis, shape, ...) as a constant operand, before ms-const-input-to-attr."""
    return constant(np.array(axes, dtype=np.int64))


@dataclass
class Program:
    name: str
    inputs: tuple           # (shape, dtype) of each tensor argument
    build: Callable         # ms values of the arguments -> result value
    result: dt.DType        # dtype implicit cast must give the result
    ref: Callable           # numpy on the arguments -> expected values
    domain: str = "any"     # "positive": inputs >= 1 (divisors); "full": the dtype's range


def T(*shape_and_dtype):
    *shape, dtype = shape_and_dtype
    return tuple(shape), dtype


PROGRAMS = [
    # -- tensors only: the highest priority wins
    Program("f32+f16", (T(2, 3, dt.float32), T(3, dt.float16)),
            lambda x, y: op("ms.add", x, y), dt.float32, lambda x, y: x + y.astype(f32)),
    Program("i32-i64", (T(4, dt.int32), T(4, dt.int64)),
            lambda x, y: op("ms.sub", x, y), dt.int64, lambda x, y: x.astype(i64) - y),
    Program("max(bool,u8)", (T(4, dt.bool_), T(4, dt.uint8)),
            lambda x, y: op("ms.maximum", x, y), dt.uint8,
            lambda x, y: np.maximum(x.astype(np.uint8), y)),
    Program("min(i16,u8)", (T(4, dt.int16), T(4, dt.uint8)),
            lambda x, y: op("ms.minimum", x, y), dt.int16,
            lambda x, y: np.minimum(x, y.astype(i16))),
    Program("i64*f16", (T(2, 3, dt.int64), T(2, 3, dt.float16)),
            lambda x, y: op("ms.mul", x, y), dt.float16, lambda x, y: x.astype(f16) * y),
    Program("f64/f16", (T(3, dt.float64), T(3, dt.float16)),
            lambda x, y: op("ms.div", x, y), dt.float64, lambda x, y: x / y.astype(f64),
            domain="positive"),
    Program("matmul(f16,f32)", (T(3, 4, dt.float16), T(4, 2, dt.float32)),
            lambda a, b: op("ms.matmul", a, b, transpose_a=False, transpose_b=False), dt.float32,
            lambda a, b: a.astype(f64) @ b.astype(f64)),
    Program("concat(i32,f32)", (T(2, 3, dt.int32), T(1, 3, dt.float32)),
            lambda a, b: op("ms.concat", a, b, axis=0), dt.float32,
            lambda a, b: np.concatenate([a.astype(f32), b])),
    Program("select(bool,i32,f32)", (T(2, 3, dt.bool_), T(2, 3, dt.int32), T(3, dt.float32)),
            lambda c, x, y: op("ms.select", c, x, y), dt.float32,
            lambda c, x, y: np.where(c, x.astype(f32), y)),

    # -- int8 with uint8: int16
    Program("i8*u8", (T(2, 3, dt.int8), T(2, 3, dt.uint8)),
            lambda x, y: op("ms.mul", x, y), dt.int16, lambda x, y: x.astype(i16) * y.astype(i16)),
    Program("u8>i8", (T(64, dt.uint8), T(64, dt.int8)),
            lambda x, y: op("ms.greater", x, y), dt.bool_, lambda x, y: x.astype(i16) > y,
            domain="full"),
    Program("sum(u8-i8)", (T(2, 3, dt.uint8), T(3, dt.int8)),
            lambda x, y: op("ms.reduce_sum", op("ms.sub", x, y), ints([-1]), keep_dims=True),
            dt.int16, lambda x, y: np.sum(x.astype(i16) - y, axis=-1, keepdims=True)),

    # -- bool group with Python scalars
    Program("bool+2", (T(2, 3, dt.bool_),),
            lambda x: op("ms.add", x, py(2)), dt.int64, lambda x: x.astype(i64) + 2),
    Program("bool*2.5", (T(2, 3, dt.bool_),),
            lambda x: op("ms.mul", py(2.5), x), dt.float32, lambda x: f32(2.5) * x.astype(f32)),
    Program("bool+True", (T(4, dt.bool_),),
            lambda x: op("ms.add", x, py(True)), dt.bool_, lambda x: np.logical_or(x, True)),
    Program("select(bool,bool,0)", (T(4, dt.bool_), T(4, dt.bool_)),
            lambda c, x: op("ms.select", c, x, py(0)), dt.int64,
            lambda c, x: np.where(c, x.astype(i64), 0)),

    # -- non-float groups with a Python float: float32
    Program("i32*0.5", (T(2, 3, dt.int32),),
            lambda x: op("ms.mul", x, py(0.5)), dt.float32, lambda x: x.astype(f32) * f32(0.5)),
    Program("u8-0.5", (T(4, dt.uint8),),
            lambda x: op("ms.sub", x, py(0.5)), dt.float32, lambda x: x.astype(f32) - f32(0.5)),
    Program("i64<1.5", (T(4, dt.int64),),
            lambda x: op("ms.less", x, py(1.5)), dt.bool_, lambda x: x.astype(f32) < f32(1.5)),
    Program("max(i8,0.25)", (T(4, dt.int8),),
            lambda x: op("ms.maximum", x, py(0.25)), dt.float32,
            lambda x: np.maximum(x.astype(f32), f32(0.25))),

    # -- Python scalars that do not raise the tensor's dtype
    Program("f16*0.25", (T(2, 3, dt.float16),),
            lambda x: op("ms.mul", x, py(0.25)), dt.float16, lambda x: x * f16(0.25)),
    Program("i8+3", (T(4, dt.int8),),
            lambda x: op("ms.add", x, py(3)), dt.int8, lambda x: x + i8(3)),
    Program("u8*2", (T(4, dt.uint8),),
            lambda x: op("ms.mul", x, py(2)), dt.uint8, lambda x: x * np.uint8(2)),
    Program("f64+1", (T(4, dt.float64),),
            lambda x: op("ms.add", x, py(1)), dt.float64, lambda x: x + 1.0),
    Program("f32**2", (T(4, dt.float32),),
            lambda x: op("ms.pow", x, py(2)), dt.float32, lambda x: x.astype(f64) ** 2),
    Program("i32/2", (T(4, dt.int32),),
            lambda x: op("ms.div", x, py(2)), dt.float32, lambda x: x.astype(f64) / 2),
    Program("select(bool,f16,0.5)", (T(4, dt.bool_), T(4, dt.float16)),
            lambda c, x: op("ms.select", c, x, py(0.5)), dt.float16,
            lambda c, x: np.where(c, x, f16(0.5))),

    # -- Python scalars only
    Program("3+0.25", (), lambda: op("ms.add", py(3), py(0.25)), dt.float32,
            lambda: np.array(3.25, f32)),
    Program("True*2", (), lambda: op("ms.mul", py(True), py(2)), dt.int64,
            lambda: np.array(2, i64)),
    Program("s*s, s=1.5", (), lambda: (lambda s: op("ms.mul", s, s))(py(1.5)), dt.float32,
            lambda: np.array(2.25, f32)),

    # -- uint16/32/64: with bool and themselves only; a Python bool does not raise them
    Program("u16+u16", (T(2, 3, dt.uint16), T(3, dt.uint16)),
            lambda x, y: op("ms.add", x, y), dt.uint16, lambda x, y: x + y),
    Program("max(bool,u32)", (T(4, dt.bool_), T(4, dt.uint32)),
            lambda x, y: op("ms.maximum", x, y), dt.uint32,
            lambda x, y: np.maximum(x.astype(u32), y)),
    Program("u64*bool", (T(2, 3, dt.uint64), T(3, dt.bool_)),
            lambda x, y: op("ms.mul", x, y), dt.uint64, lambda x, y: x * y.astype(u64)),
    Program("u16+True", (T(4, dt.uint16),),
            lambda x: op("ms.add", x, py(True)), dt.uint16, lambda x: x + u16(1)),
    Program("u32>u32", (T(64, dt.uint32), T(64, dt.uint32)),
            lambda x, y: op("ms.greater", x, y), dt.bool_, lambda x, y: x > y, domain="full"),
    Program("sum(u64-u64)", (T(2, 3, dt.uint64), T(3, dt.uint64)),
            lambda x, y: op("ms.reduce_sum", op("ms.sub", x, y), ints([-1]), keep_dims=False),
            dt.uint64, lambda x, y: np.sum(x - y, axis=-1), domain="full"),

    # -- bfloat16: float16 with it gives float32; it outranks every integer
    Program("bf16*f16", (T(2, 3, dt.bfloat16), T(3, dt.float16)),
            lambda x, y: op("ms.mul", x, y), dt.float32,
            lambda x, y: x.astype(f64) * y.astype(f64)),
    Program("bf16+i64", (T(4, dt.bfloat16), T(4, dt.int64)),
            lambda x, y: op("ms.add", x, y), dt.bfloat16, lambda x, y: x + y.astype(bf16)),
    Program("i8-bf16", (T(2, 3, dt.int8), T(3, dt.bfloat16)),
            lambda x, y: op("ms.sub", x, y), dt.bfloat16, lambda x, y: x.astype(bf16) - y),
    Program("max(u8,bf16)", (T(4, dt.uint8), T(4, dt.bfloat16)),
            lambda x, y: op("ms.maximum", x, y), dt.bfloat16,
            lambda x, y: np.maximum(x.astype(bf16), y)),
    Program("bool+bf16", (T(4, dt.bool_), T(4, dt.bfloat16)),
            lambda x, y: op("ms.add", x, y), dt.bfloat16, lambda x, y: x.astype(bf16) + y),
    Program("bf16+f32", (T(2, 3, dt.bfloat16), T(2, 3, dt.float32)),
            lambda x, y: op("ms.add", x, y), dt.float32, lambda x, y: x.astype(f32) + y),
    Program("f64/bf16", (T(3, dt.float64), T(3, dt.bfloat16)),
            lambda x, y: op("ms.div", x, y), dt.float64, lambda x, y: x / y.astype(f64),
            domain="positive"),
    Program("bf16*0.25", (T(2, 3, dt.bfloat16),),
            lambda x: op("ms.mul", x, py(0.25)), dt.bfloat16, lambda x: x.astype(f64) * 0.25),
    Program("bf16+2", (T(4, dt.bfloat16),),
            lambda x: op("ms.add", x, py(2)), dt.bfloat16, lambda x: x.astype(f64) + 2),
    Program("matmul(bf16,f32)", (T(3, 4, dt.bfloat16), T(4, 2, dt.float32)),
            lambda a, b: op("ms.matmul", a, b, transpose_a=False, transpose_b=False), dt.float32,
            lambda a, b: a.astype(f64) @ b.astype(f64)),
    Program("softmax(bf16)*2.0", (T(2, 3, dt.bfloat16),),
            lambda x: op("ms.mul", op("ms.softmax", x, axis=-1), py(2.0)), dt.bfloat16,
            lambda x: np.exp(x.astype(f64)) / np.exp(x.astype(f64)).sum(-1, keepdims=True) * 2),
    Program("select(bool,bf16,f16)", (T(4, dt.bool_), T(4, dt.bfloat16), T(4, dt.float16)),
            lambda c, x, y: op("ms.select", c, x, y), dt.float32,
            lambda c, x, y: np.where(c, x.astype(f32), y.astype(f32))),

    # -- programs: several ops, promotion flowing through, const inputs folded on the way
    Program("relu(x16*w32+1)", (T(2, 3, dt.float16), T(3, dt.float32)),
            lambda x, w: op("ms.relu", op("ms.add", op("ms.mul", x, w), py(1))), dt.float32,
            lambda x, w: np.maximum(x.astype(f32) * w + f32(1), 0)),
    Program("mean((i32+1)*0.5)", (T(2, 4, dt.int32),),
            lambda x: op("ms.reduce_mean", op("ms.mul", op("ms.add", x, py(1)), py(0.5)),
                         ints(0), keep_dims=False),
            dt.float32, lambda x: np.mean((x + 1).astype(f64) * 0.5, axis=0)),
    Program("reshape(b8+u8)*2.0", (T(2, 3, dt.bool_), T(3, dt.uint8)),
            lambda b, u: op("ms.mul", op("ms.reshape", op("ms.add", b, u), ints([3, -1])),
                            py(2.0)),
            dt.float32, lambda b, u: (b.astype(np.uint8) + u).reshape(3, -1).astype(f32) * 2),
    Program("softmax(x16)*2.0", (T(2, 3, dt.float16),),
            lambda x: op("ms.mul", op("ms.softmax", x, axis=-1), py(2.0)), dt.float16,
            lambda x: np.exp(x.astype(f64)) / np.exp(x.astype(f64)).sum(-1, keepdims=True) * 2),
    Program("one_hot(i, 1, 0.0)", (T(3, dt.int32),),
            lambda i: op("ms.one_hot", i, ints(4), py(1), py(0.0), axis=-1), dt.float32,
            lambda i: (i[:, None] == np.arange(4)).astype(f32)),
]


def sample(shape, dtype: dt.DType, domain, seed):
    """Small values, exact in every dtype; non-negative for unsigned, >= 1 for divisors."""
    rng = np.random.default_rng(seed)
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    if domain == "full":
        info = np.iinfo(dtype.np)
        return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype.np)
    lo = 1 if domain == "positive" else (0 if dtype.kind == "uint" else -3)
    if dtype.is_float:
        return rng.uniform(lo, 3, shape).astype(dtype.np)
    return rng.integers(lo, 4, shape).astype(dtype.np)


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.name)
def test_mixed_dtype_program(prog):
    args = [sample(shape, d, prog.domain, seed) for seed, (shape, d) in enumerate(prog.inputs)]
    exe = compile_fn([spec(shape, d) for shape, d in prog.inputs], prog.build)
    got, = exe(*args)
    assert_matches(got, prog.ref(*args), prog.result)


def test_parameter_in_write_position_is_not_cast():
    """assign(Parameter float16, float32 value): the group is float32, the Parameter cannot
    follow; compiling fails with MindSpore's message at the assign's location."""
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        where = ir.Location.file("train.py", 12, 5)
        param = {PARAM_ATTR: ir.StringAttr.get("w")}
        build_function(module, "step", [spec((3,), dt.float16), spec((3,), dt.float32)],
                       lambda w, v: op("ms.assign", w, v), arg_attrs=[param, {}], loc=where)
        with pytest.raises(CompileError) as info:
            compile_module(module, "step")
    diag, = info.value.diagnostics
    assert (diag.file, diag.line, diag.col) == ("train.py", 12, 5)
    assert diag.message == ("For 'ms.assign', the 0th input is a Parameter of dtype float16 "
                            "that cannot be converted to float32")


# MindSpore 2.x's tensor-with-tensor promotion (tensor_tensor_convert_map in mindspore/ccsrc),
# transcribed pair by pair; a pair it lacks is a TypeError there and here.
_B, _U8, _I8, _I16, _I32, _I64 = dt.bool_, dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64
_U16, _U32, _U64 = dt.uint16, dt.uint32, dt.uint64
_F16, _BF16, _F32, _F64 = dt.float16, dt.bfloat16, dt.float32, dt.float64
MINDSPORE_PAIRS = {
    (_B, _B): _B, (_B, _I8): _I8, (_B, _I16): _I16, (_B, _I32): _I32, (_B, _I64): _I64,
    (_B, _U8): _U8, (_B, _U16): _U16, (_B, _U32): _U32, (_B, _U64): _U64, (_B, _F16): _F16,
    (_B, _BF16): _BF16, (_B, _F32): _F32, (_B, _F64): _F64,
    (_I8, _I8): _I8, (_I8, _I16): _I16, (_I8, _I32): _I32, (_I8, _I64): _I64, (_I8, _U8): _I16,
    (_I8, _F16): _F16, (_I8, _BF16): _BF16, (_I8, _F32): _F32, (_I8, _F64): _F64,
    (_I16, _I16): _I16, (_I16, _I32): _I32, (_I16, _I64): _I64, (_I16, _U8): _I16,
    (_I16, _F16): _F16, (_I16, _BF16): _BF16, (_I16, _F32): _F32, (_I16, _F64): _F64,
    (_I32, _I32): _I32, (_I32, _I64): _I64, (_I32, _U8): _I32, (_I32, _F16): _F16,
    (_I32, _BF16): _BF16, (_I32, _F32): _F32, (_I32, _F64): _F64,
    (_I64, _I64): _I64, (_I64, _U8): _I64, (_I64, _F16): _F16, (_I64, _BF16): _BF16,
    (_I64, _F32): _F32, (_I64, _F64): _F64,
    (_U8, _U8): _U8, (_U8, _F16): _F16, (_U8, _BF16): _BF16, (_U8, _F32): _F32,
    (_U8, _F64): _F64,
    (_U16, _U16): _U16, (_U32, _U32): _U32, (_U64, _U64): _U64,
    (_F16, _F16): _F16, (_F16, _BF16): _F32, (_F16, _F32): _F32, (_F16, _F64): _F64,
    (_BF16, _BF16): _BF16, (_BF16, _F32): _F32, (_BF16, _F64): _F64,
    (_F32, _F32): _F32, (_F32, _F64): _F64, (_F64, _F64): _F64,
}


@pytest.mark.parametrize("a", dt.ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("b", dt.ALL, ids=lambda d: d.name)
def test_promotion_is_mindspores_table(a, b):
    want = MINDSPORE_PAIRS.get((a, b)) or MINDSPORE_PAIRS.get((b, a))
    if want is None:
        with pytest.raises(TypeError, match="Type implicit conversion between"):
            dt.promote([a, b])
    else:
        assert dt.promote([a, b]) is want


# MindSpore's scalar_tensor_convert_map: a Python int or float with a uint16/32/64 tensor
# has no entry; a Python bool takes the tensor's dtype.
@pytest.mark.parametrize("tensor", [dt.uint16, dt.uint32, dt.uint64], ids=lambda d: d.name)
def test_wide_unsigned_with_python_numbers_is_a_type_error(tensor):
    assert dt.promote([tensor], ["bool"]) is tensor
    for kind in ("int", "float"):
        with pytest.raises(TypeError, match=f"Tensor\\[{tensor.name}\\] and a Python {kind}"):
            dt.promote([tensor], [kind])


@pytest.mark.parametrize("inputs,build,message", [
    ((dt.uint16, dt.int32), lambda x, y: op("ms.add", x, y),
     "between uint16 and int32 is not supported"),
    ((dt.uint8, dt.uint32), lambda x, y: op("ms.mul", x, y),
     "between uint8 and uint32 is not supported"),
    ((dt.uint64, dt.float32), lambda x, y: op("ms.maximum", x, y),
     "between uint64 and float32 is not supported"),
    ((dt.bfloat16, dt.uint16), lambda x, y: op("ms.sub", x, y),
     "between bfloat16 and uint16 is not supported"),
    ((dt.uint32,), lambda x: op("ms.add", x, py(1)),
     "between Tensor[uint32] and a Python int is not supported"),
], ids=["u16+i32", "u8*u32", "max(u64,f32)", "bf16-u16", "u32+1"])
def test_unpromotable_dtypes_are_a_diagnostic_at_the_op(inputs, build, message):
    """Parsed IR (as ms-opt and the CLI read it) with such an op: a diagnostic at its
    location naming the op, not a traceback."""
    names = ", ".join(f"%a{i}: {t}" for i, t in enumerate(f"tensor<3x{d.ir_name}>" for d in inputs))
    types = ", ".join(f"tensor<3x{d.ir_name}>" for d in inputs)
    text = (f"func.func @f({names}) -> tensor<3x{inputs[0].ir_name}> {{\n"
            f"  %0 = \"{{op}}\"({', '.join(f'%a{i}' for i in range(len(inputs)))}) : ({types}) "
            f"-> tensor<3x{inputs[0].ir_name}> loc(\"prog.py\":7:3)\n"
            f"  return %0 : tensor<3x{inputs[0].ir_name}>\n}}")
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        build_function(module, "f", [spec((3,), d) for d in inputs], lambda *a: a[0])
        name = build.__code__.co_consts  # (the op's name is the lambda's first string)
        opname = next(c for c in name if isinstance(c, str) and c.startswith("ms."))
        module = ir.Module.parse(text.replace("{op}", opname) if len(inputs) == 2 else
                                 _with_scalar(text, opname, inputs[0]))
        with pytest.raises(CompileError) as info:
            compile_module(module, "f")
    diag, = info.value.diagnostics
    assert (diag.file, diag.line, diag.col) == ("prog.py", 7, 3)
    assert opname in diag.message and message in diag.message


def _with_scalar(text, opname, dtype):
    """The one-input program with a Python-int scalar constant as the op's second operand."""
    t = f"tensor<3x{dtype.ir_name}>"
    return (f"func.func @f(%a0: {t}) -> {t} {{\n"
            f"  %s = \"ms.constant\"() {{value = dense<1> : tensor<i64>, is_scalar}} : () -> tensor<i64>\n"
            f"  %0 = \"{opname}\"(%a0, %s) : ({t}, tensor<i64>) -> {t} loc(\"prog.py\":7:3)\n"
            f"  return %0 : {t}\n}}")


# ------------------------------------------------------------------ the Python API

def test_tensors_of_the_new_dtypes_from_numpy_and_lists():
    import mscc as ms
    for d, name in ((ms.uint16, "uint16"), (ms.uint32, "uint32"), (ms.uint64, "uint64")):
        x = ms.Tensor(np.array([0, 7, np.iinfo(name).max], dtype=name))
        assert x.dtype is d and x.asnumpy().dtype == np.dtype(name)
        assert ms.Tensor([1, 2], d).asnumpy().dtype == np.dtype(name)
    b = ms.Tensor([1.5, -2.25, 3.0], ms.bfloat16)
    assert b.dtype is ms.bfloat16 and b.asnumpy().dtype == bf16
    assert ms.Tensor(np.ones(3, bf16)).dtype is ms.bfloat16
    assert ms.Tensor(np.ones(3, np.float32)).bfloat16().dtype is ms.bfloat16


@pytest.mark.parametrize("mode", ["pynative", "jit"])
def test_promotion_of_the_new_dtypes_through_the_python_api(mode):
    """The same rules eagerly and compiled: bf16 * f16 -> f32, bf16 + Python float -> bf16,
    u16 + u16 -> u16 (wrapping), u32 with a bool tensor -> u32."""
    import mscc as ms
    run = (lambda f: f) if mode == "pynative" else ms.jit
    h = np.array([0.5, 1.5, -2.0], np.float16)
    b = np.array([1.25, -3.0, 8.0], bf16)
    u = np.array([65535, 3, 40000], u16)
    w, t = np.array([5, 0, 9], u32), np.array([True, False, True])
    got = run(lambda x, y: x * y)(ms.Tensor(b), ms.Tensor(h))
    assert_matches(got.asnumpy(), b.astype(f64) * h.astype(f64), dt.float32)
    got = run(lambda x: x + 0.5)(ms.Tensor(b))
    assert_matches(got.asnumpy(), b.astype(f64) + 0.5, dt.bfloat16)
    got = run(lambda x, y: x + y)(ms.Tensor(u), ms.Tensor(u))
    assert_matches(got.asnumpy(), u + u, dt.uint16)
    got = run(lambda x, y: ms.ops.maximum(x, y))(ms.Tensor(w), ms.Tensor(t))
    assert_matches(got.asnumpy(), np.maximum(w, t.astype(u32)), dt.uint32)


@pytest.mark.parametrize("mode", ["pynative", "jit"])
def test_unpromotable_operands_name_the_op_and_line(mode):
    import mscc as ms
    run = (lambda f: f) if mode == "pynative" else ms.jit
    u, i = ms.Tensor(np.ones(3, u16)), ms.Tensor(np.ones(3, np.int32))

    def f(x, y):
        return x + y  # the line the error names
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match="between uint16 and int32 is not supported") as info:
        run(f)(u, i)
    assert "ms.add" in str(info.value) and f"test_mixed_dtypes.py:{line}" in str(info.value)
    with pytest.raises(TypeError, match=r"Tensor\[uint16\] and a Python int"):
        run(lambda x: x * 2)(u)


def test_gradient_in_bfloat16():
    """d/dx sum(x * x + 3 x) = 2 x + 3, computed in bfloat16 (within its tolerance)."""
    import mscc as ms
    x = np.array([0.5, -1.25, 2.0, 3.5], bf16)
    g = ms.grad(lambda v: ms.ops.reduce_sum(v * v + 3.0 * v))(ms.Tensor(x))
    assert_matches(g.asnumpy(), 2 * x.astype(f64) + 3, dt.bfloat16)


@pytest.mark.parametrize("fill", [True, False])
@pytest.mark.parametrize("shape", [(3,), (3, 4), (2, 9), (1, 65)])
def test_a_uniform_bool_constant_keeps_every_element(shape, fill):
    """A bool constant whose elements are all the same is a splat i1 attribute; the bindings
    read its one stored byte as 8 elements and the rest as false, so an all-true mask of
    more than 8 elements selected wrong rows under jit (API fuzzing, bench/fuzz_api.py:
    ops.triu(x, diagonal=-3) is such a select)."""
    import mscc as ms
    from mscc import ops
    from mscc.dialects.builders import dense_to_numpy, numpy_to_dense
    with mlir_context(), ir.Location.unknown():
        np.testing.assert_array_equal(dense_to_numpy(numpy_to_dense(np.full(shape, fill))),
                                      np.full(shape, fill))
    x = np.arange(1.0, 1 + np.prod(shape), dtype=np.float32).reshape(shape)
    mask = ms.Tensor(np.full(shape, fill))
    want = x if fill else np.zeros_like(x)
    for mode in (ms.GRAPH_MODE, ms.PYNATIVE_MODE):
        ms.set_context(mode=mode)
        f = ms.jit(lambda a: ops.select(mask, a, a * 0)) if mode == ms.GRAPH_MODE else (
            lambda a: ops.select(mask, a, a * 0))
        np.testing.assert_array_equal(f(ms.Tensor(x)).asnumpy(), want)
    if len(shape) == 2:
        np.testing.assert_array_equal(
            ms.jit(lambda a: ops.triu(a, -3))(ms.Tensor(x)).asnumpy(), np.triu(x, -3))


SPECIAL_FLOATS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, 255.0, 256.0, -1.0,
                           3e9, -3e9, 1e19, 2.0**63, 1e30, 65504.0, -65504.0])


@pytest.mark.parametrize("src", ["float16", "float32", "float64"])
@pytest.mark.parametrize("dst", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                 "uint64"])
def test_float_to_int_casts_are_defined_and_the_same_everywhere(src, dst):
    """nan, infinities and out-of-range floats: LLVM's fptosi/fptoui are poison there, so a
    value LLVM could see (a constant under jit) converted differently from one it could not
    (API fuzzing). Every path now gives the same result, numpy's on x86 for the signed types
    and uint8 (the integer indefinite value, narrower types wrapping from it)."""
    import mscc as ms
    from mscc import ops
    x = SPECIAL_FLOATS.astype(src)
    to = getattr(ms, dst)
    c = ms.Tensor(x)
    eager = ops.cast(c, to).asnumpy()
    traced = ms.jit(lambda a: ops.cast(a, to))(c).asnumpy()
    folded = ms.jit(lambda: ops.cast(c * 1, to))().asnumpy()
    np.testing.assert_array_equal(traced, eager)
    np.testing.assert_array_equal(folded, eager)
    if dst in ("int8", "int16", "int32", "int64", "uint8") and src != "float16":
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(eager, x.astype(dst))
