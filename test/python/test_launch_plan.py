"""Launch plans read from the gpu stage: grids cover iteration spaces, buffers are sized from
shapes, host code a plan cannot express is a located error."""
import numpy as np
import pytest

from mscc.dialects import dtypes as dt
from mscc.dialects.builders import constant
from mscc.passes import pipeline
from mscc.passes.compiler import parse_module, select_entry
from mscc.passes.diagnostics import CompileError
from mscc.passes.launch_plan import read_launch_plan
from mscc.runtime.plan import Copy, LaunchPlan
from mstest import module_of, op, spec


PLANNED = {}  # kernel name -> its gpu.func text, for the last plan_of


def plan_of(in_specs, body):
    module = module_of(in_specs, body)
    sig = select_entry(module, "f")
    pipeline.run_pipeline(module, "cuda", stop_after="gpu")
    plan, blobs = read_launch_plan(module, "f", sig.inputs, sig.outputs)
    assert LaunchPlan.from_json(plan.to_json()) == plan  # JSON round trip
    PLANNED.clear()
    for top in module.body.operations:
        if top.operation.name == "gpu.module":
            for fn in top.regions[0].blocks[0].operations:
                PLANNED[str(fn.attributes["sym_name"]).strip('"')] = str(fn)
    return plan, blobs


def threads(launch):
    return int(np.prod(launch.grid)) * int(np.prod(launch.block))


def points(launch):
    """Points of the iteration space the launch covers: vectorized kernels take 4 each."""
    return threads(launch) * (4 if "vector<4x" in PLANNED[launch.kernel] else 1)


@pytest.mark.parametrize("shape", [(1000, 37), (256,), (3, 1, 5, 7), ()])
def test_elementwise_grid_covers_the_output_once(shape):
    plan, _ = plan_of([spec(shape, "float32"), spec(shape, "float32")],
                      lambda x, y: op("ms.add", x, y))
    launch, = plan.launches
    n = int(np.prod(shape))
    per_thread = points(launch) // threads(launch)
    assert per_thread == (4 if shape and shape[-1] % 4 == 0 else 1)
    assert points(launch) >= n
    assert points(launch) - n < launch.block[0] * per_thread, "a whole block of idle threads"
    assert launch.block[0] % 32 == 0 and launch.block[0] <= 256


def test_buffers_are_sized_from_shapes_and_dtypes():
    plan, _ = plan_of([spec((6, 300), "float16"), spec((6, 300), "bool")],
                      lambda x, c: op("ms.select", c, op("ms.softmax", x, axis=-1), x))
    by_kind = {}
    for b in plan.buffers:
        by_kind.setdefault(b.kind, []).append(b)
        assert b.nbytes == int(np.prod(b.shape)) * np.dtype(b.dtype).itemsize
    assert [(b.shape, b.dtype) for b in by_kind["input"]] == [((6, 300), "float16"),
                                                             ((6, 300), "bool")]
    assert [(b.shape, b.dtype) for b in by_kind["output"]] == [((6, 300), "float16")]
    # Softmax of float16 computes in float32: its row temporaries are float32 vectors.
    assert {(b.shape, b.dtype) for b in by_kind["temp"]} >= {((6,), "float32")}


def test_row_reduction_is_a_block_per_row_and_column_reduction_a_thread_per_column():
    plan, _ = plan_of([spec((64, 1000), "float32")],
                      lambda x: [op("ms.reduce_sum", x, axis=(1,), keep_dims=False),
                                 op("ms.reduce_max", x, axis=(0,), keep_dims=False)])
    fills = [l for l in plan.launches if len(l.params) == 1]
    rows, cols = [l for l in plan.launches if len(l.params) == 2]
    assert len(fills) == 2
    assert rows.grid == (64, 1, 1) and rows.block == (256, 1, 1)
    assert points(cols) >= 1000 and points(cols) - 1000 < cols.block[0]


def test_matmul_tiles_cover_c_and_declare_shared_memory():
    m, n, k = 256, 512, 128
    plan, _ = plan_of([spec((m, k), "float32"), spec((k, n), "float32")],
                      lambda a, b: op("ms.matmul", a, b, transpose_a=False, transpose_b=False))
    fill, mm = plan.launches
    assert points(fill) >= m * n
    bn, bm = n // mm.grid[0], m // mm.grid[1]
    assert (bm * mm.grid[1], bn * mm.grid[0]) == (m, n) and mm.grid[2] == 1
    assert mm.block == (16, 16, 1)
    assert mm.static_smem == (bm + bn) * 16 * 4       # A and B tiles, BK = 16
    assert [p.buffer for p in mm.params] == ["out0", "in0", "in1"]


def test_constants_become_constant_buffers_with_their_bytes():
    value = np.arange(12, dtype=np.int32).reshape(3, 4)
    plan, blobs = plan_of([spec((3, 4), "int32")],
                          lambda x: op("ms.add", x, constant(value)))
    const, = [b for b in plan.buffers if b.kind == "const"]
    assert np.array_equal(np.frombuffer(blobs[const.data], np.int32).reshape(3, 4), value)
    splat = np.full((2, 2), 7, np.float64)
    plan, blobs = plan_of([], lambda: constant(splat))
    const, = [b for b in plan.buffers if b.kind == "const"]
    assert np.array_equal(np.frombuffer(blobs[const.data], np.float64), splat.ravel())


def test_returning_an_input_is_a_device_copy():
    plan, _ = plan_of([spec((5, 5), "int8")], lambda x: op("ms.reshape", x, shape=(25,)))
    step, = plan.steps
    assert isinstance(step, Copy) and (step.src, step.dst, step.nbytes) == ("in0", "out0", 25)


def test_reshapes_and_slices_pass_views_of_their_buffer():
    plan, _ = plan_of([spec((4, 6), "float32")],
                      lambda x: op("ms.exp", op("ms.slice", op("ms.reshape", x, shape=(6, 4)),
                                                begin=(1, 1), size=(2, 2))))
    launch, = plan.launches
    assert {p.buffer for p in launch.params} == {"in0", "out0"}


HOST_LOAD = """
module attributes {gpu.container_module} {
  func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %x = memref.load %a[%c0] : memref<4xf32>
    return
  }
}
"""

SCALAR_ARG = """
module attributes {gpu.container_module} {
  func.func @f(%a: memref<4xf32>, %b: memref<4xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%a : memref<4xf32>, %c4 : index, %b : memref<4xf32>)
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%a : memref<4xf32>, %n : index, %b : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    gpu.func @k(%x: memref<4xf32>, %i: index, %y: memref<4xf32>) kernel {
      gpu.return
    }
  }
}
"""

F32_4 = [dt.TensorSpec((4,), dt.float32)]


def test_host_code_the_plan_cannot_express_is_a_located_error():
    module = parse_module(HOST_LOAD, "host.mlir")
    with pytest.raises(CompileError) as e:
        read_launch_plan(module, "f", F32_4, F32_4)
    d, = e.value.diagnostics
    assert (d.file, d.line) == ("host.mlir", 5)
    assert "cannot express host operation 'memref.load'" in d.message


def test_scalar_kernel_arguments_must_be_constants():
    module = parse_module(SCALAR_ARG, "scalar.mlir")
    with pytest.raises(CompileError) as e:
        read_launch_plan(module, "f", F32_4 * 2 + [dt.TensorSpec((), dt.int64)], [])
    d, = e.value.diagnostics
    assert d.line == 8 and ("scalar kernel argument is neither a constant nor computed from the inputs' "
                                "sizes") in d.message


def test_scalar_constants_are_passed_by_value():
    first_launch_only = "\n".join(SCALAR_ARG.splitlines()[:7] + SCALAR_ARG.splitlines()[9:])
    module = parse_module(first_launch_only, "scalar.mlir")
    plan, _ = read_launch_plan(module, "f", F32_4 * 2 + [dt.TensorSpec((), dt.int64)], [])
    launch, = plan.launches
    assert [(p.buffer, p.scalar, p.dtype) for p in launch.params] == [
        ("in0", None, None), (None, 4, "int64"), ("in1", None, None)]
