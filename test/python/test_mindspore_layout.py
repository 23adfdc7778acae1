"""MindSpore's module layout: a MindSpore 2.x program's import lines work with `mindspore`
renamed to `mscc`, each name is one module object (no copies), and none of it imports mlir."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mscc as ms

MINDSPORE_IMPORTS = textwrap.dedent("""
    import mscc as ms
    import mscc.nn as nn
    from mscc import nn, ops, Tensor, Parameter, ParameterTuple, context
    from mscc.ops import operations as P
    from mscc.ops import functional as F
    from mscc.ops import composite as C
    import mscc.ops.operations
    import mscc.ops.functional as F2
    import mscc.ops.function
    import mscc.context as context
    from mscc.context import set_context, get_context, GRAPH_MODE, PYNATIVE_MODE
    from mscc.common import dtype as mstype
    import mscc.common.dtype as mstype2
    from mscc.common.initializer import initializer, Normal, Uniform
    from mscc.common.parameter import Parameter, ParameterTuple
    from mscc.common.tensor import Tensor
    from mscc.common.api import jit, ms_function
    import mscc.common.api
    import mscc.amp
    from mscc.amp import auto_mixed_precision
    from mscc.nn.optim import Adam
""")

from nomlir import BLOCK_MLIR as _BLOCK_MLIR


def _real_exists(alias):
    import importlib.util
    return importlib.util.find_spec("mscc." + ms._MODULE_ALIASES[alias][0]) is not None


def test_mindspore_import_lines_work_without_mlir():
    program = _BLOCK_MLIR + MINDSPORE_IMPORTS + textwrap.dedent("""
        assert P.MatMul is ops.MatMul and F is F2 and mstype is mstype2
        assert not [m for m in sys.modules if m.split(".")[0] == "mlir"]
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("line", ["from mscc.train import Model",
                                  "from mscc.dataset import GeneratorDataset"])
def test_train_and_dataset_import_lines(line):
    """mscc.train and mscc.dataset are lazy rows: their modules come from other parts."""
    name = line.split()[1].split(".")[1]
    if not _real_exists(name):
        pytest.skip(f"pyfront/{name}.py does not exist yet")
    namespace = {}
    exec(line, namespace)
    assert sys.modules[f"mscc.{name}"] is sys.modules[f"mscc.pyfront.{name}"]


def test_train_names_are_top_level_names_as_in_mindspore():
    if not _real_exists("train"):
        pytest.skip("pyfront/train.py does not exist yet")
    import mscc.train
    for name in mscc.train.__all__:
        assert getattr(ms, name) is getattr(mscc.train, name), name
    assert not hasattr(ms, "no_such_name")


def test_each_mindspore_name_is_the_one_module_that_provides_it():
    import mscc.common.api
    import mscc.context as context
    import mscc.nn.optim
    from mscc.common import dtype as mstype
    from mscc.ops import composite as C
    from mscc.ops import functional as F
    from mscc.ops import operations as P
    from mscc.pyfront import context as real_context
    from mscc.pyfront.nn import optim as real_optim
    assert context is real_context and ms.context is real_context
    assert mscc.nn.optim is real_optim and sys.modules["mscc.nn.optim"] is real_optim
    assert real_optim.__spec__.name == "mscc.pyfront.nn.optim"  # (not the alias's spec)
    assert ms.ops.operations is P and ms.ops.functional is F and ms.ops.composite is C
    assert mscc.common.api.jit is ms.jit and ms.common.dtype is mstype and ms.dtype is mstype
    for alias, (real, when) in ms._MODULE_ALIASES.items():
        if when == "eager":
            assert sys.modules[f"mscc.{alias}"] is sys.modules[f"mscc.{real}"], alias


def test_lazy_rows_import_on_first_use_and_are_absent_while_their_module_is():
    import importlib
    table = ms._MODULE_ALIASES
    table["lazy_probe"] = ("pyfront.pytree", "lazy")
    table["lazy_missing"] = ("pyfront.no_such_module", "lazy")
    try:
        assert "mscc.lazy_probe" not in sys.modules
        assert ms.lazy_probe is sys.modules["mscc.pyfront.pytree"]  # an attribute read
        sys.modules.pop("mscc.lazy_probe", None)
        assert importlib.import_module("mscc.lazy_probe") is sys.modules["mscc.pyfront.pytree"]
        assert not hasattr(ms, "lazy_missing")
        with pytest.raises(ImportError, match="mscc.lazy_missing"):
            importlib.import_module("mscc.lazy_missing")
    finally:
        del table["lazy_probe"], table["lazy_missing"]
        sys.modules.pop("mscc.lazy_probe", None)
        ms.__dict__.pop("lazy_probe", None)
    for name in ("train", "dataset"):
        assert table[name][1] == "lazy"
        assert hasattr(ms, name) == _real_exists(name)


def test_context_options():
    import mscc.context as context
    context.set_context(mode=context.GRAPH_MODE, device_target="CPU", device_id=0,
                        save_graphs=False)
    try:
        assert context.get_context("mode") == ms.GRAPH_MODE
        assert ms.get_context("device_id") == 0
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    with pytest.raises(ValueError, match="device_id must be 0"):
        ms.set_context(device_id=1)
    with pytest.raises(ValueError, match="dump-dir"):
        ms.set_context(save_graphs=True)
    with pytest.raises(ValueError, match="the key must be one of"):
        ms.get_context("no_such_key")
    with pytest.raises(TypeError, match="unsupported options: max_call_depth"):
        ms.set_context(max_call_depth=10)
    ms.set_device("CPU")
    assert ms.get_context("device_target") == "CPU"
    with pytest.raises(ValueError, match="device_target"):
        ms.set_device("Ascend")


def test_mstype_names_and_helpers():
    from mscc.common import dtype as mstype
    assert mstype.float32 is ms.float32 and mstype.single is ms.float32 and ms.half is ms.float16
    assert (mstype.double, mstype.intc, mstype.intp, mstype.byte, mstype.ubyte) == (
        ms.float64, ms.int32, ms.int64, ms.int8, ms.uint8)
    assert ms.float32 in mstype.float_ and ms.int32 not in mstype.float_
    assert ms.int8 in mstype.int_ and ms.uint8 in mstype.uint and ms.bool_ in mstype.number
    assert mstype.float_type == (ms.float16, ms.float32, ms.float64, ms.bfloat16)
    assert set(mstype.number_type) == {ms.int8, ms.int16, ms.int32, ms.int64, ms.uint8,
                                       ms.uint16, ms.uint32, ms.uint64, ms.float16,
                                       ms.bfloat16, ms.float32, ms.float64}
    assert mstype.dtype_to_nptype(mstype.float16) is np.float16
    assert mstype.pytype_to_dtype(int) is ms.int64 and mstype.pytype_to_dtype(float) is ms.float64
    assert mstype.pytype_to_dtype(np.int32) is ms.int32
    assert mstype.dtype_to_pytype(mstype.float_) is float
    assert mstype.dtype_to_pytype(ms.int16) is int
    with pytest.raises(NotImplementedError):
        mstype.pytype_to_dtype(str)
    assert not hasattr(mstype, "complex64")
    assert (mstype.ushort, mstype.uintc, mstype.uintp) == (ms.uint16, ms.uint32, ms.uint64)
    assert mstype.bfloat16 is ms.bfloat16 and ms.bfloat16 in mstype.float_
    assert ms.uint32 in mstype.uint and ms.uint64 in mstype.uint_type
    assert mstype.dtype_to_nptype(ms.uint16) is np.uint16
    assert mstype.pytype_to_dtype(np.uint64) is ms.uint64
    assert ms.Tensor([1, 2], mstype.float32).dtype is ms.float32


def test_initializers_by_mindspore_names():
    from mscc.common import initializer as init_module
    from mscc.common.initializer import initializer
    for name in init_module.__all__:
        assert getattr(init_module, name) is getattr(ms.nn.init, name)
    w = ms.Parameter(initializer("zeros", (2, 3), ms.float32), name="w")
    np.testing.assert_array_equal(w.asnumpy(), np.zeros((2, 3)))
    if "Normal" in init_module.__all__:
        v = initializer(init_module.Normal(0.5), (200, 50), ms.float32)
        v = v.asnumpy() if hasattr(v, "asnumpy") else v
        assert v.shape == (200, 50) and 0.4 < v.std() < 0.6


def test_ms_function_is_jit():
    from mscc.common.api import ms_function

    @ms_function
    def f(x):
        return x * 2

    @ms_function(input_signature=(ms.Tensor(shape=(2,), dtype=ms.float32),))
    def g(x):
        return x + 1

    np.testing.assert_array_equal(f(np.ones(2, np.float32)).asnumpy(), [2, 2])
    np.testing.assert_array_equal(g(np.ones(2, np.float32)).asnumpy(), [2, 2])
    assert "ms.mul" in f.lower(np.ones(2, np.float32)).as_text("ms")
    assert ms.ms_function is ms_function
    with pytest.raises(TypeError, match="obj"):
        ms_function(lambda x: x, obj=object())


def test_parameter_tuple():
    a = ms.Parameter(np.ones((2, 2), np.float32), name="a")
    b = ms.Parameter(np.arange(3, dtype=np.int32), name="b", requires_grad=False)
    params = ms.ParameterTuple([a, b])
    assert isinstance(params, tuple) and params == (a, b)
    moments = params.clone(prefix="moments", init="zeros")
    assert [p.name for p in moments] == ["moments.a", "moments.b"]
    assert moments[1].dtype is ms.int32 and not moments[1].requires_grad
    np.testing.assert_array_equal(moments[0].asnumpy(), np.zeros((2, 2)))
    same = params.clone("copy")
    np.testing.assert_array_equal(same[1].asnumpy(), [0, 1, 2])
    same[1].set_data(np.zeros(3, np.int32))
    np.testing.assert_array_equal(b.asnumpy(), [0, 1, 2])  # a copy
    with pytest.raises(TypeError, match="must be Parameter"):
        ms.ParameterTuple([a, ms.Tensor([1.0])])
    with pytest.raises(ValueError, match="unique"):
        ms.ParameterTuple([a, a])


def test_tensor_function_and_mutable():
    t = ms.tensor([1, 2, 3], ms.float32)
    assert isinstance(t, ms.Tensor) and t.dtype is ms.float32
    assert ms.tensor(shape=(2, 3), dtype=ms.int32).shape == (2, 3)
    z = ms.tensor(init="zeros", shape=(2,), dtype=ms.float16)
    assert z.dtype is ms.float16 and z.asnumpy().tolist() == [0, 0]
    with pytest.raises(TypeError, match="const_arg"):
        ms.tensor([1.0], const_arg=True)
    x = ms.Tensor(np.ones(2, np.float32))
    assert ms.mutable(x) is x
    pair = (x, 2.0)
    assert ms.mutable(pair) is pair and ms.mutable([x], dynamic_len=True) == [x]
    with pytest.raises(TypeError, match="mutable"):
        ms.mutable("text")
    with pytest.raises(TypeError, match="dynamic_len"):
        ms.mutable(x, dynamic_len=True)


def test_ops_grad_and_value_and_grad_are_mindspores_functional_forms():
    def f(x, y):
        return ms.ops.reduce_sum(x * x * y)

    x, y = np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)
    gx = ms.ops.grad(f)(ms.Tensor(x), ms.Tensor(y))
    np.testing.assert_allclose(gx.asnumpy(), 2 * x * y)
    value, (gx, gy) = ms.ops.value_and_grad(f, grad_position=(0, 1))(ms.Tensor(x), ms.Tensor(y))
    np.testing.assert_allclose(value.asnumpy(), (x * x * y).sum())
    np.testing.assert_allclose(gy.asnumpy(), x * x)


def test_composite_optimizer_pattern_in_both_modes(mode):
    """MindSpore optimizers' idiom: a MultitypeFuncGraph applied by HyperMap over the
    parameters, with F.partial binding the hyperparameters."""
    from mscc.ops import composite as C
    from mscc.ops import functional as F
    from mscc.ops import operations as P

    sgd = C.MultitypeFuncGraph("sgd")

    @sgd.register("Number", "Tensor", "Tensor")
    def _update(lr, grad, param):
        return F.depend(param, P.Assign()(param, param - lr * grad))

    params = ms.ParameterTuple([ms.Parameter(np.ones(2, np.float32), name="p"),
                                ms.Parameter(np.full((2, 2), 3.0, np.float32), name="q")])
    hyper_map = C.HyperMap()

    def loss(x):
        return ms.ops.reduce_sum(params[0] * x) + ms.ops.reduce_sum(params[1])

    grad_fn = C.GradOperation(get_by_list=True)(loss, params)

    def step(x):
        return hyper_map(F.partial(sgd, 0.5), grad_fn(x), params)

    (ms.jit(step) if mode == ms.GRAPH_MODE else step)(ms.Tensor([2.0, 4.0]))
    np.testing.assert_allclose(params[0].asnumpy(), [0.0, -1.0])
    np.testing.assert_allclose(params[1].asnumpy(), np.full((2, 2), 2.5))


def test_hypermap_map_and_multitype_dispatch():
    from mscc.ops import composite as C
    add = C.MultitypeFuncGraph("add")

    @add.register("Tensor", "Number")
    def _tensor_number(x, n):
        return x + n

    @add.register("Number", "Number")
    def _numbers(a, b):
        return ("numbers", a + b)

    assert add(1, 2.5) == ("numbers", 3.5)
    nested = C.HyperMap(add)((ms.Tensor([1.0]), (ms.Tensor([2.0]), 3)), (1, (2, 4)))
    assert nested[0].asnumpy().tolist() == [2.0] and nested[1][1] == ("numbers", 7)
    assert C.Map()(lambda a, b: a * b, (1, 2), (3, 4)) == (3, 8)
    with pytest.raises(TypeError, match="no registered function matches"):
        add("a", 1)
    with pytest.raises(ValueError, match="unknown type names"):
        add.register("Tensr")
    with pytest.raises(ValueError, match="one length"):
        C.HyperMap()(lambda a, b: a, (1, 2), (1,))
    with pytest.raises(ValueError, match="reduce_one"):
        C.HyperMap(reduce_one=True)


def test_functional_helpers():
    from mscc.ops import functional as F
    x = ms.Tensor(np.ones((2, 3), np.float32))
    assert F.shape(x) == (2, 3) and F.rank(x) == 2 and F.size(x) == 6
    assert F.dtype(x) is ms.float32 and ms.ops.shape(x) == (2, 3)
    np.testing.assert_array_equal(F.fill(ms.int32, (2,), 7).asnumpy(), [7, 7])
    assert F.relu is ms.ops.relu and F.matmul is ms.ops.matmul


def test_clip_by_global_norm_is_reached_through_ops_and_functional():
    import numpy as np
    from mscc.ops import functional as F
    grads = (ms.Tensor(np.full(3, 3.0, np.float32)), ms.Tensor(np.full(2, 4.0, np.float32)))
    clipped = ms.ops.clip_by_global_norm(grads, 1.0)
    norm = np.sqrt(3 * 9.0 + 2 * 16.0)
    np.testing.assert_allclose(clipped[0].asnumpy(), np.full(3, 3.0 / norm), rtol=1e-6)
    np.testing.assert_allclose(clipped[1].asnumpy(), np.full(2, 4.0 / norm), rtol=1e-6)
    assert F.clip_by_global_norm is ms.ops.clip_by_global_norm
