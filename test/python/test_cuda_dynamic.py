"""Dynamic dimensions on the CUDA target (issue 16): one launch plan serves every size.

A module traced with `None` sizes goes through the cuda stages: kernels take the dynamic
sizes as parameters, the plan's grids, temporaries and scalar parameters are size expressions
of the inputs' sizes (runtime/plan.py), evaluated per call. Each program of
test_dynamic_shapes.PROGRAMS (and gradients, CNN layers, a training step) runs through ONE
executable for every size: the CUDA runtime interpreting the plan on a fake driver whose
kernels run on the CPU (gpu_emulation.emulated_plan_executable), against numpy; the PTX passes
ptxas; the plan names its expressions (also FileChecked in test/Target/CUDA/dynamic.mlir)."""
import numpy as np
import pytest

import mscc as ms
from mscc import nn
from mscc.passes.artifact import build_artifact, find_ptxas
from mscc.passes.compiler import clone_module
from mscc.runtime.calls import CallError
from mscc.runtime.plan import LaunchPlan, PlanError

from gpu_emulation import EmulatedKernels, emulated_plan_executable, emulating_driver
from test_dynamic_shapes import (I32, PROGRAMS, T, arrays, batch, cnn_layers, make_mlp,
                                 train_grad_fn, training_step)

SIZES = (1, 2, 7, 64, 1000, 0)


def _trace(fn, sig):
    return ms.jit(fn, target="cuda").lower(*sig)._trace


def _executable(trace):
    return emulated_plan_executable(clone_module(trace.module), trace.name)


def _signature(prog):
    return tuple(T(*shape, dtype=dtype) for shape, dtype, _ in prog.sig)


def _params(trace):
    return [p.asnumpy() for p in trace.param_order]


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.name)
def test_one_plan_serves_every_size(prog):
    trace = _trace(prog.fn, _signature(prog))
    exe = _executable(trace)
    assert exe.plan.dynamic and exe.dynamic is not None
    for n in (s for s in SIZES if s or prog.zero):
        args = arrays(prog.sig, n, seed=n)
        got = exe(*args, *_params(trace))[0].asnumpy()
        want = np.asarray(prog.ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a
                                     for a in args]))
        assert got.shape == want.shape, (n, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=prog.atol, err_msg=f"n={n}")


def test_grids_follow_the_call_and_an_empty_batch_launches_nothing():
    prog = next(p for p in PROGRAMS if p.name == "softmax")
    exe = _executable(_trace(prog.fn, _signature(prog)))
    launches = exe.device.driver.launches
    for n in (3, 700, 0):
        before = len(launches)
        exe(np.ones((n, 10), np.float32))
        ran = launches[before:]
        if n == 0:
            assert not ran  # every grid is 0 blocks: nothing is launched
            continue
        # rows of 10 (too short for a block each): a thread per row, and a thread per
        # element for the normalization, in blocks of 256, as this call's rows need
        assert {launch["grid"] for launch in ran} == {(-(-n // 256), 1, 1),
                                                      (-(-10 * n // 256), 1, 1)}


def test_mismatched_dynamic_sizes_are_refused_before_any_launch():
    prog = next(p for p in PROGRAMS if p.name == "concat_two_inputs")
    exe = _executable(_trace(prog.fn, _signature(prog)))
    launches = exe.device.driver.launches
    before = len(launches)
    with pytest.raises(CallError, match="must be equal, got 3 and 4"):
        exe(np.ones((3, 3), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(CallError, match=r"input #0 .*dimension 1 is static"):
        exe(np.ones((3, 4), np.float32), np.ones((3, 5), np.float32))
    assert len(launches) == before


def test_dynamic_batch_gradients_equal_the_cpu_ones():
    net = make_mlp()
    step = train_grad_fn(net)
    sig = (T(None, 16), T(None, dtype=I32))
    trace = _trace(step, sig)
    exe = _executable(trace)
    cpu = ms.jit(step, input_signature=sig)
    for n in (1, 5, 64):
        x, y = batch(n, seed=n)
        got = [o.asnumpy() for o in exe(x, y, *_params(trace))]
        loss, grads = cpu(ms.Tensor(x), ms.Tensor(y))
        want = [loss.asnumpy()] + [g.asnumpy() for g in grads]
        assert len(got) == len(want) == 5
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["conv2d", "conv2d_stride", "max_pool", "avg_pool",
                                  "flatten", "batch_norm_train"])
def test_cnn_layer_with_a_dynamic_batch_equals_the_cpu(name):
    layer = dict(cnn_layers())[name]
    trace = _trace(lambda x: layer(x), (T(None, 3, 8, 8),))
    exe = _executable(trace)
    cpu = ms.jit(lambda x: layer(x))
    for n in (1, 5, 2):
        x = np.random.default_rng(n).standard_normal((n, 3, 8, 8)).astype(np.float32)
        state = [p.asnumpy().copy() for p in layer.get_parameters()]
        got = exe(x, *_params(trace))[0].asnumpy()
        want = cpu(ms.Tensor(x)).asnumpy()  # (BatchNorm's statistics: reset below)
        for p, v in zip(layer.get_parameters(), state):
            p.set_data(v)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_training_step_with_a_dynamic_batch_writes_the_cpu_parameters():
    """A Momentum step over a dynamic batch: the loss and the new parameters and moments the
    plan computes (its outputs) equal the CPU step's, for several batch sizes."""
    def make():
        net = make_mlp(seed=4)
        opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
        return net, opt, training_step(net, opt)[0]
    net_g, opt_g, step_g = make()
    net_c, opt_c, step_c = make()
    sig = (T(None, 16), T(None, dtype=I32))
    trace = _trace(step_g, sig)
    exe = _executable(trace)
    cpu = ms.jit(step_c, input_signature=sig)
    params = _params(trace)
    for n in (3, 8, 5):
        x, y = batch(n, seed=20 + n)
        outs = [o.asnumpy() for o in exe(x, y, *params)]
        loss = cpu(ms.Tensor(x), ms.Tensor(y)).asnumpy()
        np.testing.assert_allclose(outs[0], loss, rtol=1e-5)
        new = {id(p): v for p, v in zip(trace.assigned_params, outs[1:])}
        params = [new.get(id(p), v) for p, v in zip(trace.param_order, params)]
        want = {id(p): p.asnumpy() for p in opt_c.parameters}
        for p_g, p_c in zip(opt_g.parameters, opt_c.parameters):
            np.testing.assert_allclose(new[id(p_g)], want[id(p_c)], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("prog", [p for p in PROGRAMS if p.name in
                                  ("softmax", "mlp", "mean_dynamic_axis", "concat_two_inputs",
                                   "gather_rows", "layer_norm")], ids=lambda p: p.name)
def test_dynamic_kernels_pass_ptxas_and_the_artifact_reloads(prog, tmp_path):
    if find_ptxas() is None:
        pytest.skip("ptxas is not installed")
    import mscc.runtime.artifact as artifact_io
    from mscc.runtime.cuda import CudaExecutable, Device
    trace = _trace(prog.fn, _signature(prog))
    art = build_artifact(clone_module(trace.module), trace.name, "cuda")
    assert art.manifest["cuda"]["cubin"]  # ptxas compiled every kernel
    assert any(None in i["shape"] for i in art.manifest["inputs"])
    assert "dynamic" in art.manifest
    path = art.save(str(tmp_path / "dyn.msx"))
    module = clone_module(trace.module)
    from mscc.passes import pipeline
    pipeline.run_pipeline(module, "cuda", stop_after="gpu")
    exe = CudaExecutable.from_artifact(artifact_io.read(path),
                                       Device(emulating_driver(EmulatedKernels(module))))
    for n in (3, 40):
        args = arrays(prog.sig, n, seed=n)
        got = exe(*args, *_params(trace))[0].asnumpy()
        want = np.asarray(prog.ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a
                                     for a in args]))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=prog.atol)


def test_plan_text_names_the_size_expressions():
    prog = next(p for p in PROGRAMS if p.name == "softmax")
    exe = _executable(_trace(prog.fn, _signature(prog)))
    text = exe.plan.describe()
    assert "in0: input float32[?, 10]" in text
    assert "grid [ceildiv(dim(in0, 0), 256), 1, 1]" in text  # a thread per row
    assert "temp float32[dim(in0, 0)]" in text          # per-row temporaries
    again = LaunchPlan.from_json(exe.plan.to_json())
    assert again.describe() == text


BAD_SIZES = [  # (a damaged size in a plan's first launch grid, message)
    (["dim", "tmp0", 0], "is not a dimension of an input or output"),
    (["dim", "in0", 5], "is not a dimension of an input or output"),
    (["pow", 2, 3], "is not a size expression"),
    (["float"], "is not a size expression"),
    ("7", "is not a number or an expression"),
]


@pytest.mark.parametrize("size,message", BAD_SIZES)
def test_damaged_size_expressions_are_refused(size, message):
    prog = next(p for p in PROGRAMS if p.name == "softmax")
    plan = _executable(_trace(prog.fn, _signature(prog))).plan.to_json()
    launch = next(s for s in plan["steps"] if s["op"] == "launch")
    launch["grid"][0] = size
    with pytest.raises(PlanError, match=message):
        LaunchPlan.from_json(plan)


def test_a_plan_with_dynamic_sizes_needs_their_description():
    from mscc.runtime.cuda import CudaExecutable
    prog = next(p for p in PROGRAMS if p.name == "exp")
    trace = _trace(prog.fn, _signature(prog))
    exe = _executable(trace)
    with pytest.raises(PlanError, match="no description of dynamic sizes"):
        CudaExecutable(exe.plan, exe.in_specs, exe.out_specs, {"ptx": b"emulated"}, {},
                       exe.device, dynamic=None)


@pytest.fixture
def emulated_gpu():
    """Installs a device whose kernels are those of `install(fn, sig)`'s trace, run on the
    CPU: the jit's own compile for the CUDA target then runs on it (the kernel names of a
    function traced alike are the same)."""
    from mscc.passes import pipeline
    from mscc.runtime import cuda
    saved = dict(cuda._DEVICES)

    def install(fn, sig):
        module = clone_module(_trace(fn, sig).module)
        pipeline.run_pipeline(module, "cuda", stop_after="gpu")
        cuda._DEVICES.clear()
        cuda._DEVICES[0] = cuda.Device(emulating_driver(EmulatedKernels(module)))
    yield install
    cuda._DEVICES.clear()
    cuda._DEVICES.update(saved)


def test_jit_on_the_cuda_target_compiles_once_for_every_batch(emulated_gpu):
    def head(x, w):
        return ms.ops.softmax(ms.ops.matmul(x, w), -1)
    sig = (T(None, 16), T(16, 8))
    emulated_gpu(head, sig)
    jitted = ms.jit(head, input_signature=sig, target="cuda")
    w = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)
    for n in (1, 7, 64, 0):
        x = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
        out = jitted(ms.Tensor(x), ms.Tensor(w))
        assert out.shape == (n, 8) and out.device == "GPU:0"
        z = x.astype(np.float64) @ w
        want = np.exp(z - z.max(-1, keepdims=True))
        want /= want.sum(-1, keepdims=True)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert jitted.cache_info()["compiles"] == 1


def test_a_loop_with_dynamic_sizes_is_a_located_error_and_jit_compiles_per_shape():
    from mscc.passes.diagnostics import CompileError

    def f(x):
        return ms.ops.WhileLoop()(lambda a: a.sum() < 100.0, lambda a: a * 2 + 1, x)
    trace = _trace(f, (T(None, 4),))
    with pytest.raises(CompileError, match="'WhileLoop' with dynamic sizes: loops and "
                                           "conditionals on the CUDA target run with static"):
        build_artifact(clone_module(trace.module), trace.name, "cuda")


SLICES = [  # slices along the dynamic axis: clamped sizes the plan computes per call
    ("drop_first", lambda x: x[1:] * 2),
    ("every_other", lambda x: x[::2] + 1),
    ("reversed_every_other", lambda x: x[-2::-2] * 3),
    ("window", lambda x: x[2:5]),
]


@pytest.mark.parametrize("name,fn", SLICES, ids=[n for n, _ in SLICES])
def test_slices_of_a_dynamic_axis_run_from_one_plan(name, fn):
    exe = _executable(_trace(fn, (T(None, 6),)))
    for n in (0, 1, 4, 9):
        x = np.random.default_rng(n).standard_normal((n, 6)).astype(np.float32)
        got = exe(x)[0].asnumpy()
        want = np.asarray(fn(x.astype(np.float64)))
        assert got.shape == want.shape, (n, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_lenet_like_step_gradients_with_a_dynamic_batch_equal_the_cpu():
    """Convolution, pooling, flatten and dense layers and their gradients over a dynamic
    batch on the CUDA target (grouped convolution too): one plan, the CPU's values."""
    ms.set_seed(2)
    net = nn.SequentialCell([nn.Conv2d(2, 4, 3, pad_mode="valid", group=2), nn.ReLU(),
                             nn.MaxPool2d(2, 2), nn.Flatten(), nn.Dense(4 * 3 * 3, 3)])
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    grads = ms.value_and_grad(lambda x, y: loss(net(x), y), None, net.trainable_params())
    sig = (T(None, 2, 8, 8), T(None, dtype=I32))
    trace = _trace(grads, sig)
    exe = _executable(trace)
    cpu = ms.jit(grads, input_signature=sig)
    for n in (4, 1, 9):
        rng = np.random.default_rng(n)
        x = rng.standard_normal((n, 2, 8, 8)).astype(np.float32)
        y = rng.integers(0, 3, n).astype(np.int32)
        got = [o.asnumpy() for o in exe(x, y, *_params(trace))]
        value, gs = cpu(ms.Tensor(x), ms.Tensor(y))
        want = [value.asnumpy()] + [g.asnumpy() for g in gs]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("stride,pad", [(1, 1), (2, 0)])
def test_convolution_input_gradient_with_a_dynamic_batch_equals_the_cpu(stride, pad):
    ms.set_seed(3)
    conv = nn.Conv2d(3, 4, 3, stride=stride, pad_mode="pad" if pad else "valid", padding=pad)
    grad = ms.grad(lambda x: (conv(x) * conv(x)).sum(), 0)
    sig = (T(None, 3, 8, 8),)
    trace = _trace(grad, sig)
    exe = _executable(trace)
    cpu = ms.jit(grad, input_signature=sig)
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, 3, 8, 8)).astype(np.float32)
        got = exe(x, *_params(trace))[0].asnumpy()
        np.testing.assert_allclose(got, cpu(ms.Tensor(x)).asnumpy(), rtol=1e-4, atol=1e-5)
