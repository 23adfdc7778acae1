"""CUDA executables run against a fake driver: module loading, buffer binding in the
kernels' parameter layout, copies, device arrays handed between executables, pooling of
temporaries and error reports. Kernels themselves do not run here (no GPU); plans made only
of copies do, so their results are checked."""
import numpy as np
import pytest

from fake_cuda import FakeDriver
from mscc.dialects import dtypes as dt
from mscc.dialects.builders import constant
from mscc.passes.artifact import build_artifact
from mscc.runtime.calls import CallError
from mscc.runtime.cuda import CudaError, CudaExecutable, DeviceArray, Device
from mstest import module_of, op, spec


def cuda_artifact(in_specs, body, name="f"):
    return build_artifact(module_of(in_specs, body, name), name, "cuda")


def load(artifact, **driver_options):
    drv = FakeDriver(**driver_options)
    return CudaExecutable.from_artifact(artifact, Device(drv)), drv


@pytest.fixture(scope="module")
def mlp_like():
    """matmul (shared-memory schedule) + bias + relu, then a row softmax."""
    def body(x, w, b):
        h = op("ms.relu", op("ms.add", op("ms.matmul", x, w, transpose_a=False,
                                          transpose_b=False), b))
        return op("ms.softmax", h, axis=-1)
    return cuda_artifact([spec((64, 32), "float32"), spec((32, 128), "float32"),
                          spec((128,), "float32")], body)


def test_launches_follow_the_plan(mlp_like):
    exe, drv = load(mlp_like)
    x, w, b = (np.ones(s.shape, np.float32) for s in mlp_like.inputs)
    out, = exe(x, w, b)
    plan = mlp_like.plan()
    assert [l["kernel"] for l in drv.launches] == [s.kernel for s in plan.launches]
    assert [l["grid"] for l in drv.launches] == [s.grid for s in plan.launches]
    assert [l["block"] for l in drv.launches] == [s.block for s in plan.launches]
    assert isinstance(out, DeviceArray) and out.shape == (64, 128)


def test_parameters_bind_each_buffer_to_its_own_memory(mlp_like):
    exe, drv = load(mlp_like)
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    w, b = np.ones((32, 128), np.float32), np.zeros(128, np.float32)
    out, = exe(x, w, b)
    plan = mlp_like.plan()
    where = {}
    for launch, rec in zip(plan.launches, drv.launches):
        values = drv.read_params(rec["params"], len(launch.params))
        for p, v in zip(launch.params, values):
            assert where.setdefault(p.buffer, v) == v, f"{p.buffer} bound to two addresses"
    assert len(set(where.values())) == len(where), "two buffers share memory"
    for name, ptr in where.items():
        buf = plan.buffer(name)
        base = next(a for a in drv.buffers if a <= ptr < a + len(drv.buffers[a]))
        assert ptr + buf.nbytes <= base + len(drv.buffers[base]), f"{name} does not fit"
    assert where["out0"] == out.ptr
    # The input really was copied to the device.
    got = np.frombuffer((np.ctypeslib.as_array(
        (np.ctypeslib.ctypes.c_char * x.nbytes).from_address(where["in0"]))).tobytes(),
        np.float32).reshape(x.shape)
    np.testing.assert_array_equal(got, x)


def test_temporaries_come_back_from_the_pool(mlp_like):
    exe, drv = load(mlp_like)
    args = [np.ones(s.shape, np.float32) for s in mlp_like.inputs]
    exe(*args)
    allocs = sum(c[0] == "mem_alloc" for c in drv.calls)
    for _ in range(3):
        exe(*args)
    assert sum(c[0] == "mem_alloc" for c in drv.calls) == allocs
    assert exe.device.memory_stats()["cache_hits"] > 0


def test_copy_only_plan_runs_and_returns_the_data():
    art = cuda_artifact([spec((3, 5), "int64")], lambda x: op("ms.stop_gradient", x))
    assert [s.op for s in art.plan().steps] == ["copy"]
    exe, _ = load(art)
    x = np.arange(15).reshape(3, 5)
    out, = exe(x)
    np.testing.assert_array_equal(out.asnumpy(), x)
    np.testing.assert_array_equal(np.asarray(out), x)


def test_constants_are_uploaded_once():
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    art = cuda_artifact([], lambda: constant(value))
    consts = [b for b in art.plan().buffers if b.kind == "const"]
    assert len(consts) == 1 and consts[0].nbytes == value.nbytes
    exe, drv = load(art)
    uploads = sum(c[0] == "htod" for c in drv.calls)
    out, = exe()
    exe()
    assert sum(c[0] == "htod" for c in drv.calls) == uploads
    np.testing.assert_array_equal(out.asnumpy(), value)


def test_device_arrays_pass_between_executables_without_a_round_trip():
    art = cuda_artifact([spec((4, 4), "float32")], lambda x: op("ms.stop_gradient", x))
    dev = Device(FakeDriver())
    first = CudaExecutable.from_artifact(art, dev)
    second = CudaExecutable.from_artifact(art, dev)
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    y, = first(x)
    copies_in = sum(c[0] == "htod" for c in dev.driver.calls)
    z, = second(y)
    assert sum(c[0] == "htod" for c in dev.driver.calls) == copies_in
    waits = [c for c in dev.driver.calls if c[0] == "stream_wait_event"]
    assert waits and waits[-1][1] == second.stream
    np.testing.assert_array_equal(z.asnumpy(), x)


def test_wrong_inputs_are_rejected_before_anything_runs(mlp_like):
    exe, drv = load(mlp_like)
    with pytest.raises(CallError, match=r"input #1 of 'f' has shape \(3, 3\)"):
        exe(np.ones((64, 32), np.float32), np.ones((3, 3), np.float32),
            np.ones(128, np.float32))
    with pytest.raises(CallError, match="takes 3 inputs, got 1"):
        exe(np.ones((64, 32), np.float32))
    dev_in = exe.device.to_device(np.ones((64, 32), np.float64))
    with pytest.raises(CallError, match="input #0 of 'f' is float64"):
        exe(dev_in, np.ones((32, 128), np.float32), np.ones(128, np.float32))
    assert not drv.launches


def test_a_failing_launch_names_the_kernel_and_the_launch(mlp_like):
    kernel = mlp_like.plan().launches[1].kernel
    exe, _ = load(mlp_like, fail_launch=kernel)
    with pytest.raises(CudaError) as e:
        exe(*[np.ones(s.shape, np.float32) for s in mlp_like.inputs])
    msg = str(e.value)
    assert f"launch #1 of kernel '{kernel}'" in msg and "'f'" in msg
    assert "CUDA_ERROR_INVALID_VALUE" in msg and e.value.code == "CUDA_ERROR_INVALID_VALUE"


def test_a_kernel_fault_found_at_copy_back_names_the_executable(mlp_like):
    exe, drv = load(mlp_like)
    out, = exe(*[np.ones(s.shape, np.float32) for s in mlp_like.inputs])
    drv.fail_sync = True
    with pytest.raises(CudaError) as e:
        out.asnumpy()
    assert "computed by 'f'" in str(e.value) and "MSCC_CUDA_LAUNCH_BLOCKING" in str(e.value)
    assert e.value.code == "CUDA_ERROR_ILLEGAL_ADDRESS"


@pytest.mark.parametrize("cc,refuse,image", [((9, 0), False, "cubin"),
                                             ((10, 0), False, "ptx"), ((9, 0), True, "ptx")])
def test_cubin_for_its_architecture_else_ptx(mlp_like, cc, refuse, image):
    if mlp_like.manifest["cuda"]["cubin"] is None:
        pytest.skip("ptxas is not installed: the artifact has no cubin")
    exe, drv = load(mlp_like, compute_capability=cc, refuse_cubin=refuse)
    assert exe.image == image
    assert [what for what, _ in drv.modules.values()] == [
        "cubin" if image == "cubin" else "PTX for sm_90"]


def test_out_of_memory_during_a_call_is_a_memory_error(mlp_like):
    exe, _ = load(mlp_like, capacity=64 * 1024)
    try:
        exe(*[np.ones(s.shape, np.float32) for s in mlp_like.inputs])
    except MemoryError as e:
        assert "bytes requested" in str(e)
    else:
        raise AssertionError("no MemoryError")
    # Everything the failed call took went back to the pool.
    assert exe.device.memory_stats()["allocated"] == 0


def test_bool_and_uint8_buffers_keep_their_dtypes():
    art = cuda_artifact([spec((5,), "bool")], lambda x: op("ms.cast", x, dtype=dt.uint8))
    out = art.plan().buffer("out0")
    assert (out.dtype, out.nbytes) == ("uint8", 5)
    assert art.plan().buffer("in0").dtype == "bool"
