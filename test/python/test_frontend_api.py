"""The frontend's contract: Tensor, the jit cache, user-facing errors with the user's line,
source locations in the IR, and lower().as_text at every stage."""
import inspect
import subprocess
import sys

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.pyfront import dispatch

import mstest  # noqa: E402

HERE = __file__


def line_of(marker):
    return mstest.line_of(HERE, marker)


# ------------------------------------------------------------------ Tensor

def test_tensor_construction_and_properties():
    t = ms.Tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.dtype is ms.float32  # Python floats default to float32, as in MindSpore
    assert t.shape == (2, 2) and t.ndim == 2 and len(t) == 2 and t.size == 4
    assert ms.Tensor(3).dtype is ms.int64
    assert ms.Tensor(True).dtype is ms.bool_
    assert ms.Tensor(np.zeros(3, np.float64)).dtype is ms.float64  # numpy keeps its dtype
    assert ms.Tensor([1, 2], dtype=ms.float16).asnumpy().dtype == np.float16
    assert "shape=[2, 2]" in repr(t) and "float32" in repr(t)
    placeholder = ms.Tensor(shape=(2, 3), dtype=ms.int32)
    assert placeholder.shape == (2, 3) and placeholder.dtype is ms.int32
    with pytest.raises(RuntimeError, match="placeholder"):
        placeholder.asnumpy()
    with pytest.raises(TypeError, match="cannot make a Tensor"):
        ms.Tensor("abc")


def test_numpy_arrays_are_accepted_wherever_a_tensor_is():
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(ops.add(x, x).asnumpy(), x * 2)
    np.testing.assert_allclose((ms.Tensor(x) + x).asnumpy(), x * 2)
    np.testing.assert_allclose((x + ms.Tensor(x)).asnumpy(), x * 2)  # ndarray defers to Tensor
    np.testing.assert_allclose(ms.jit(lambda a: a * 2)(x).asnumpy(), x * 2)


# ------------------------------------------------------------------ jit cache

def test_jit_cache_reuses_and_respecializes():
    @ms.jit
    def f(x, y, scale):
        return x * y * scale

    a, b = ms.Tensor(np.ones((2, 3), np.float32)), ms.Tensor(np.ones((2, 3), np.float32))
    f(a, b, 2.0)
    f(a, b, 2.0)
    f(ms.Tensor(np.ones((2, 3), np.float32)), b, 2.0)  # another Tensor, same key
    assert f.cache_info() == {"entries": 1, "compiles": 1, "traces": 1, "evictions": 0,
                              "max_entries": 64}
    f(ms.Tensor(np.ones((4, 3), np.float32)), ms.Tensor(np.ones((4, 3), np.float32)), 2.0)
    assert f.cache_info()["compiles"] == 2  # new shape
    f(a, b, 3.0)
    assert f.cache_info()["compiles"] == 3  # new static value
    f(ms.Tensor(np.ones((2, 3), np.float64)), b, 3.0)
    assert f.cache_info()["compiles"] == 4  # new dtype
    np.testing.assert_allclose(f(a, b, 3.0).asnumpy(), np.full((2, 3), 3.0))
    assert f.cache_info()["compiles"] == 4


def test_keyword_arguments_and_none_results():
    @ms.jit
    def f(x, scale=2.0):
        return x * scale

    x = ms.Tensor([1.0, 2.0])
    np.testing.assert_allclose(f(x, scale=3.0).asnumpy(), [3.0, 6.0])
    np.testing.assert_allclose(f(x).asnumpy(), [2.0, 4.0])
    assert f.cache_info()["compiles"] == 2  # scale is a static value of the key
    p = ms.Parameter(np.zeros(2, np.float32), name="p_none")

    @ms.jit
    def write(v):
        ops.assign(p, v)  # returns nothing

    assert write(x) is None
    np.testing.assert_allclose(p.asnumpy(), [1.0, 2.0])


def test_keywords_bind_as_signature_bind_does():
    """The direct placement of keyword arguments (plain parameters) and inspect's binding
    (defaults, *args, keyword-only) give the same positional arguments."""
    @ms.jit
    def plain(x, y, scale):
        return x * scale + y

    @ms.jit
    def rich(x, *rest, scale=2.0):
        return x * scale + sum(rest)

    @ms.jit
    def defaults(x, y, scale=2.0):
        return x * scale + y

    x, y = ms.Tensor([1.0, 2.0]), ms.Tensor([3.0, 4.0])
    want = np.array([5.0, 8.0])
    for call in (lambda: plain(x, y, scale=2.0), lambda: plain(x, y=y, scale=2.0),
                 lambda: plain(scale=2.0, y=y, x=x), lambda: plain(x, y, 2.0)):
        np.testing.assert_allclose(call().asnumpy(), want)
    assert plain.cache_info()["compiles"] == 1
    np.testing.assert_allclose(defaults(x, y=y).asnumpy(), want)
    np.testing.assert_allclose(defaults(x, y, scale=3.0).asnumpy(), [6.0, 10.0])
    np.testing.assert_allclose(rich(x, y).asnumpy(), want)
    # a keyword-only argument cannot be passed by position: an error, not a dropped value
    with pytest.raises(TypeError, match="takes keyword-only arguments \\(scale\\)"):
        rich(x, y, scale=3.0)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        plain(x, y, x=x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        plain(x, y, 2.0, z=1.0)


def test_numpy_arguments_share_the_tensor_compile_and_read_current_data():
    f = ms.jit(lambda a, b: a * 2 + b)
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)
    np.testing.assert_allclose(f(a, b).asnumpy(), a * 2 + 1)
    np.testing.assert_allclose(f(ms.Tensor(a), ms.Tensor(b)).asnumpy(), a * 2 + 1)
    a[0, 0] = 100.0  # the arrays are read at each call, not copied once
    np.testing.assert_allclose(f(a, b).asnumpy(), a * 2 + 1)
    strided = np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]  # not C-contiguous
    np.testing.assert_allclose(f(strided, b).asnumpy(), strided * 2 + 1)
    np.testing.assert_allclose(f(a.astype(np.float64), b).asnumpy(), a * 2 + 1)
    assert f.cache_info()["compiles"] == 2  # float32 (arrays and Tensors alike), float64


def test_cache_hit_does_not_retrace():
    calls = []

    @ms.jit
    def f(x):
        calls.append(1)  # runs only while tracing
        return x + 1

    x = ms.Tensor(np.zeros(3, np.float32))
    for _ in range(5):
        f(x)
    assert len(calls) == 1


def test_input_signature_fixes_the_key():
    @ms.jit(input_signature=(ms.Tensor(shape=(2, 2), dtype=ms.float32),))
    def f(x):
        return x * 2

    np.testing.assert_allclose(f(ms.Tensor(np.ones((2, 2), np.float32))).asnumpy(), 2)
    with pytest.raises(ValueError, match=r"argument #0 of 'f' is f32\[3,2\], but its "
                                         r"input_signature says f32\[2,2\]"):
        f(ms.Tensor(np.ones((3, 2), np.float32)))


def test_jit_as_a_plain_call_and_nested():
    inner = ms.jit(lambda x: x * 3)

    @ms.jit
    def outer(x):
        return inner(x) + 1  # traced inline into outer

    np.testing.assert_allclose(outer(ms.Tensor([1.0, 2.0])).asnumpy(), [4.0, 7.0])
    assert "ms.mul" in outer.lower(ms.Tensor([1.0, 2.0])).as_text("ms")


def test_eager_ops_compile_once_per_key_then_once_for_every_size():
    """An eager op compiles once per (op, attributes, shapes, dtypes); a second size compiles
    one kernel with the sizes that changed dynamic, which serves every later size."""
    def x(n):  # (a rank and dtype no other test gives ops.exp: its compiles are this test's)
        return np.arange(n * 6, dtype=np.float64).reshape(n, 3, 2, 1) / 10
    before = dispatch.eager_compiles
    for _ in range(3):
        y = ops.exp(ms.Tensor(x(5)))
    assert dispatch.eager_compiles - before == 1
    np.testing.assert_allclose(y.asnumpy(), np.exp(x(5)), rtol=1e-12)
    for n in (6, 9, 2, 40, 0, 1):
        np.testing.assert_allclose(ops.exp(ms.Tensor(x(n))).asnumpy(), np.exp(x(n)),
                                   rtol=1e-12)
    assert dispatch.eager_compiles - before == 2


def test_parameters_are_implicit_inputs_and_assign_writes_back():
    w = ms.Parameter(np.ones(3, np.float32), name="w")

    @ms.jit
    def step(x):
        new = w - 0.5 * x
        ops.assign(w, new)
        return (w * 2).sum()

    out = step(ms.Tensor(np.ones(3, np.float32)))
    np.testing.assert_allclose(w.asnumpy(), [0.5, 0.5, 0.5])
    np.testing.assert_allclose(out.asnumpy(), 3.0)
    step(ms.Tensor(np.ones(3, np.float32)))
    np.testing.assert_allclose(w.asnumpy(), [0.0, 0.0, 0.0])
    text = step.lower(ms.Tensor(np.ones(3, np.float32))).as_text("ms")
    assert 'ms.parameter = "w"' in text and "ms.assign" in text


def test_assign_to_a_parameter_of_lower_precision_is_an_error():
    w = ms.Parameter(np.ones(3, np.float16), name="w16")
    with pytest.raises(TypeError, match="For 'ms.assign', the 0th input is a Parameter of dtype "
                                        "float16 that cannot be converted to float32"):
        ms.jit(lambda x: ops.assign(w, x))(ms.Tensor(np.ones(3, np.float32)))


# ------------------------------------------------------------------ errors

def test_matmul_shape_error_names_op_and_user_line():
    with pytest.raises(ValueError) as e:
        ms.jit(lambda a, b: a @ b)(ms.Tensor(np.ones((3, 4), np.float32)),  # MATMUL-LINE
                                   ms.Tensor(np.ones((5, 6), np.float32)))
    msg = str(e.value)
    assert "'ms.matmul'" in msg and "(3, 4) @ (5, 6)" in msg
    assert msg.endswith(f"{HERE}:{line_of('MATMUL-LINE')})")


def test_eager_shape_error_names_user_line():
    with pytest.raises(ValueError) as e:
        ops.add(ms.Tensor(np.ones(3)), ms.Tensor(np.ones(4)))  # EAGER-LINE
    assert "'ms.add'" in str(e.value) and "cannot be broadcast" in str(e.value)
    assert str(e.value).endswith(f"{HERE}:{line_of('EAGER-LINE')})")


def test_reduce_over_missing_axis():
    @ms.jit
    def f(x):
        return ops.reduce_sum(x, 3)  # AXIS-LINE

    with pytest.raises(ValueError) as e:
        f(ms.Tensor(np.ones((2, 2), np.float32)))
    assert "'ms.reduce_sum'" in str(e.value) and "axis 3 is out of range" in str(e.value)
    assert str(e.value).endswith(f"{HERE}:{line_of('AXIS-LINE')})")


def test_unsupported_operand_type():
    with pytest.raises(TypeError) as e:
        ms.jit(lambda x: x + "one")(ms.Tensor([1.0]))  # STR-LINE
    assert "'ms.add'" in str(e.value) and "unsupported type str" in str(e.value)
    assert str(e.value).endswith(f"{HERE}:{line_of('STR-LINE')})")


def test_dtype_error():
    with pytest.raises(TypeError) as e:
        ops.softmax(ms.Tensor([1, 2, 3]))  # DTYPE-LINE
    assert "'ms.softmax'" in str(e.value) and "element type i64" in str(e.value)
    assert str(e.value).endswith(f"{HERE}:{line_of('DTYPE-LINE')})")


@pytest.mark.parametrize("index, message", [
    ((7,), "index 7 is out of bounds for axis 0 with size 3"),
    ((0, 0, 0), "too many indices (3) for a tensor of rank 2"),
    ((Ellipsis, Ellipsis), "a single ellipsis"),
    ((1.5,), "only integers, slices"),
])
def test_indexing_error_names_op_and_user_line(index, message):
    x = ms.Tensor(np.ones((3, 4), np.float32))
    with pytest.raises(IndexError) as e:
        ms.jit(lambda t: t[index])(x)  # INDEX-LINE
    assert str(e.value).startswith("For 'ms.strided_slice' (x[...]), ") and message in str(e.value)
    assert str(e.value).endswith(f"{HERE}:{line_of('INDEX-LINE')})")


def test_python_if_on_a_traced_tensor_says_what_to_do():
    # (`if x.sum() > 0:` itself compiles to an scf.if: test_python_syntax.py; bool() on a
    # traced Tensor cannot be compiled.)
    @ms.jit
    def f(x):
        if bool(x.sum() > 0):  # IF-LINE
            return x
        return -x

    with pytest.raises(TypeError) as e:
        f(ms.Tensor([1.0, 2.0]))
    assert f"{HERE}:{line_of('IF-LINE')}" in str(e.value)
    assert "ms.ops.select" in str(e.value)


def test_python_control_flow_over_python_values_is_unrolled():
    @ms.jit
    def f(x, n):
        for i in range(n):
            x = x * 2 if i % 2 == 0 else x + 1
        return x

    np.testing.assert_allclose(f(ms.Tensor([1.0]), 3).asnumpy(), [6.0])  # ((1*2)+1)*2
    assert f.lower(ms.Tensor([1.0]), 3).as_text("ms").count('"ms.mul"') == 2


def test_asnumpy_inside_jit_is_an_error():
    with pytest.raises(RuntimeError, match="traced Tensor"):
        ms.jit(lambda x: x.asnumpy())(ms.Tensor([1.0]))


# ------------------------------------------------------------------ IR and stages

def test_ops_carry_the_user_source_location():
    def program(x):
        y = ops.exp(x)  # LOC-EXP
        return y * 2  # LOC-MUL

    text = ms.jit(program).lower(ms.Tensor([1.0])).as_text("ms", debug_info=True)
    exp_line, mul_line = line_of("LOC-EXP"), line_of("LOC-MUL")
    assert f'"ms.exp"(%arg0) : (tensor<1xf32>) -> tensor<1xf32> loc(#loc' in text
    assert f'"{HERE}":{exp_line}:' in text and f'"{HERE}":{mul_line}:' in text
    assert "pyfront" not in text  # no location inside mscc itself


def test_traced_ir_is_in_mindspore_form():
    text = ms.jit(lambda x: ops.reshape(x, (3, 2)) + 1).lower(ms.Tensor(np.ones((2, 3), np.int32))).as_text("ms")
    # the shape is a constant operand and 1 a scalar constant, left to the front-end passes
    assert '"ms.reshape"(%arg0, %0) : (tensor<2x3xi32>, tensor<2xi64>) -> tensor<3x2xi32>' in text
    assert '{is_scalar, value = dense<1> : tensor<i64>}' in text
    after = ms.jit(lambda x: ops.reshape(x, (3, 2)) + 1).lower(ms.Tensor(np.ones((2, 3), np.int32))).as_text("ms-opt")
    assert "shape = array<i64: 3, 2>" in after and "dense<1> : tensor<i32>" in after


@pytest.mark.parametrize("stage,marker", [("ms", '"ms.matmul"'), ("ms-opt", '"ms.matmul"'),
                                          ("linalg", "linalg.matmul"),
                                          ("bufferized", "memref<4x3xf32>"),
                                          ("llvm", "llvm.func @_mlir_ciface_f"),
                                          ("llvm-ir", "define void @_mlir_ciface_f(")])
def test_lower_as_text_every_stage(stage, marker):
    def f(a, b):
        return ops.relu(a @ b)
    lowered = ms.jit(f).lower(ms.Tensor(np.ones((4, 5), np.float32)),
                              ms.Tensor(np.ones((5, 3), np.float32)))
    assert marker in lowered.as_text(stage)


def test_lower_as_bytes_gives_the_object_code():
    lowered = ms.jit(lambda a: ops.exp(a) + 1).lower(ms.Tensor(np.ones(8, np.float32)))
    obj = lowered.as_bytes("obj")
    assert obj[:4] == b"\x7fELF" and b"_mlir_ciface_" in obj  # a relocatable ELF object
    with pytest.raises(ValueError, match="as_bytes"):
        lowered.as_text("obj")
    with pytest.raises(ValueError, match="unknown stage 'bogus'"):
        lowered.as_text("bogus")


def test_argmax_argmin_like_numpy(mode):
    """MindSpore's Argmax: int32 indices; axis=None searches the flattened tensor."""
    x = np.array([[3.0, 7.0, 7.0], [9.0, -1.0, 9.0]], np.float32)
    t = ms.Tensor(x)
    assert t.argmax().dtype == ms.int32 and int(t.argmax().asnumpy()) == np.argmax(x)
    np.testing.assert_array_equal(t.argmax(1).asnumpy(), np.argmax(x, 1))
    np.testing.assert_array_equal(ops.argmin(t, 0, keep_dims=True).asnumpy(),
                                  np.argmin(x, 0)[None])
    assert ops.argmax(t, None, keep_dims=True).shape == (1, 1)
    jitted = ms.jit(lambda a: (a.argmax(-1), ops.argmin(a)))
    got = [r.asnumpy() for r in jitted(t)]
    np.testing.assert_array_equal(got[0], np.argmax(x, -1))
    assert int(got[1]) == np.argmin(x)


def test_lowered_compile_runs():
    exe = ms.jit(lambda a: a * 2).lower(ms.Tensor(np.ones(3, np.float32))).compile()
    np.testing.assert_allclose(exe(np.arange(3, dtype=np.float32))[0], [0, 2, 4])


def test_import_mscc_does_not_import_mlir():
    code = "import sys, mscc; assert not [m for m in sys.modules if m.split('.')[0] == 'mlir']"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_mindspore2_functional_names(mode):
    """ops.square/sum/mean/zeros/ones/cat/stack with MindSpore 2.x's arguments."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = ms.Tensor(x)
    np.testing.assert_array_equal(ops.square(t).asnumpy(), x * x)
    assert float(ops.sum(t).asnumpy()) == x.sum()
    np.testing.assert_array_equal(ops.sum(t, 1, keepdim=True).asnumpy(), x.sum(1, keepdims=True))
    assert ops.sum(t, dtype=ms.float64).dtype is ms.float64
    np.testing.assert_allclose(ops.mean(t, (0, 2)).asnumpy(), x.mean((0, 2)))
    zeros, ones = ops.zeros((2, 3)), ops.ones(4, ms.int32)
    assert zeros.dtype is ms.float32 and not zeros.asnumpy().any()
    assert ones.dtype is ms.int32 and ones.asnumpy().tolist() == [1, 1, 1, 1]
    np.testing.assert_array_equal(ops.cat([t, t], 1).asnumpy(), np.concatenate([x, x], 1))
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(ops.stack([t, t + 1], axis).asnumpy(),
                                      np.stack([x, x + 1], axis))
    jitted = ms.jit(lambda a: ops.sum(ops.stack([ops.square(a), ops.ones(a.shape)])))
    assert float(jitted(t).asnumpy()) == (x * x).sum() + x.size
    np.testing.assert_array_equal(t[1, ..., ::2].asnumpy(), x[1, ..., ::2])  # builtin sum intact
