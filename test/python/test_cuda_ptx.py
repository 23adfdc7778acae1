"""Every op family through the CUDA pipeline to PTX that `ptxas -arch=sm_90` accepts.

One module per family (several outputs, so one ptxas run checks many kernels). Running the
kernels needs a GPU: test_cuda_gpu.py and bench/gpu_check.py do that."""
import re

import numpy as np
import pytest

from mscc.dialects import dtypes as dt
from mscc.dialects.builders import constant
from mscc.dialects.ops.collective import COLLECTIVES
from mscc.dialects.registry import OPS, plain_elementwise_ops
from mscc.passes.artifact import build_artifact, find_ptxas, ptxas
from mstest import module_of, op, spec

# Every plain elementwise op of the registry, by arity (a new op is compiled here unasked).
UNARY = [d.name for d in plain_elementwise_ops() if len(d.data_operands) == 1]
BINARY = [d.name for d in plain_elementwise_ops() if len(d.data_operands) == 2]
ALL = [dt.float32, dt.float16, dt.bfloat16, dt.float64, dt.int32, dt.int64, dt.int16, dt.int8,
       dt.uint8, dt.uint16, dt.uint32, dt.uint64, dt.bool_]


def elementwise(d):
    def body(x, y):
        outs = [op(n, x) for n in UNARY if d in OPS[n].dtypes]
        return outs + [op(n, x, y) for n in BINARY if d in OPS[n].dtypes]
    return [spec((7, 33), d), spec((33,), d)], body


def reductions(d):
    def body(x):
        names = ["ms.reduce_sum", "ms.reduce_max", "ms.reduce_min"] + (
            [] if d.is_bool else ["ms.reduce_mean"])
        args = [] if d.is_bool else [op(n, x, axis=a, keep_dims=False)
                                     for n in ("ms.argmax", "ms.argmin") for a in (2, 0)]
        # products and running sums (cumsum: one masked reduction per line on CUDA)
        args += [] if d.is_bool else [op("ms.reduce_prod", x, axis=(2,), keep_dims=False),
                                      op("ms.reduce_prod", x, axis=(), keep_dims=True),
                                      op("ms.cumsum", x, axis=1, exclusive=False, reverse=False),
                                      op("ms.cumsum", x, axis=2, exclusive=True, reverse=True)]
        return [op(n, x, axis=axis, keep_dims=False)
                for n in names for axis in [(2,), (0,), (0, 2), ()]] + args
    return [spec((6, 30, 400), d)], body


def softmax(d):
    return [spec((4, 64, 512), d)], lambda x: [
        op("ms.softmax", x, axis=-1), op("ms.log_softmax", x, axis=1), op("ms.softmax", x, axis=0)]


def matmul(d, shape=(128, 64, 256)):
    m, k, n = shape
    return [spec((m, k), d), spec((k, n), d)], lambda a, b: [
        op("ms.matmul", a, b, transpose_a=False, transpose_b=False),
        op("ms.matmul", b, a, transpose_a=True, transpose_b=True)]


def data_movement():
    def body(x, y, idx):
        return [op("ms.reshape", x, shape=(4, -1)), op("ms.transpose", x, perm=(2, 0, 1)),
                op("ms.broadcast_to", y, shape=(2, 3, 4)), op("ms.expand_dims", x, axis=1),
                op("ms.concat", x, x, axis=1), op("ms.tile", x, multiples=(1, 2, 1)),
                op("ms.slice", x, begin=(0, 1, 0), size=(2, 2, -1)),
                op("ms.strided_slice", x, begin=(0, 0, 1), end=(2, 3, 4), strides=(1, 2, 2)),
                op("ms.strided_slice_grad",
                   op("ms.strided_slice", x, begin=(0, 0, 1), end=(2, 3, 4), strides=(1, 2, 2)),
                   shape=(2, 3, 4), begin=(0, 0, 1), end=(2, 3, 4), strides=(1, 2, 2)),
                op("ms.gather", x, idx, axis=2),
                op("ms.one_hot", idx, constant(np.array(1.0, np.float32)),
                   constant(np.array(0.0, np.float32)), depth=5, axis=-1),
                op("ms.unsorted_segment_sum", op("ms.transpose", x, perm=(2, 0, 1)), op(
                    "ms.reshape", op("ms.tile", idx, multiples=(2,)), shape=(4,)),
                   num_segments=3),
                op("ms.random_uniform", constant(np.array(5, np.int64)), shape=(3, 7), seed=1)]
    return [spec((2, 3, 4), "float32"), spec((3, 1), "float32"), spec((2,), "int32")], body


def fused():
    """Regions ms-fuse forms: an elementwise chain, a reduction with its prologue and
    epilogue (layernorm), a matmul with a bias/activation epilogue."""
    def body(x, w, b):
        chain = op("ms.mul", op("ms.tanh", op("ms.add", op("ms.mul", x, x), x)), op("ms.sigmoid", x))
        mean = op("ms.reduce_mean", x, axis=(1,), keep_dims=True)
        centered = op("ms.sub", x, mean)
        var = op("ms.reduce_mean", op("ms.mul", centered, centered), axis=(1,), keep_dims=True)
        norm = op("ms.mul", centered, op("ms.rsqrt", var))
        dense = op("ms.relu", op("ms.add", op("ms.matmul", x, w, transpose_a=False,
                                               transpose_b=False), b))
        return [chain, norm, dense]
    return [spec((64, 128), "float32"), spec((128, 32), "float32"), spec((32,), "float32")], body


def convolution(d, groups, xs=(2, 4, 7, 6), ws=None):
    """ms.conv and both gradient ops (one group: the implicit-GEMM kernel for the forward and
    input gradient, a matmul kernel for the filter gradient; several: the batched generic),
    strided, dilated and asymmetrically padded."""
    geom = dict(stride=(2, 1), dilation=(1, 2), pad_lo=(1, 0), pad_hi=(0, 2), groups=groups)
    ws = ws or (6, 4 // groups, 3, 2)
    ys = (xs[0], ws[0]) + tuple((n + a + b - (k - 1) * dl - 1) // s + 1 for n, k, s, dl, a, b in
                                zip(xs[2:], ws[2:], geom["stride"], geom["dilation"],
                                    geom["pad_lo"], geom["pad_hi"]))
    return ([spec(xs, d.name), spec(ws, d.name), spec(ys, d.name)],
            lambda x, w, dy: [op("ms.conv", x, w, **geom),
                              op("ms.conv_input_grad", dy, w, input_shape=xs, **geom),
                              op("ms.conv_filter_grad", x, dy, kernel_shape=ws, **geom)])


def convolution_3d():
    geom = dict(stride=(1, 2, 1), dilation=(2, 1, 1), pad_lo=(1, 1, 0), pad_hi=(1, 0, 1),
                groups=1)
    xs, ws, ys = (2, 3, 6, 7, 5), (5, 3, 2, 3, 2), (2, 5, 6, 3, 5)
    return ([spec(xs, "float32"), spec(ws, "float32"), spec(ys, "float32")],
            lambda x, w, dy: [op("ms.conv", x, w, **geom),
                              op("ms.conv_input_grad", dy, w, input_shape=xs, **geom)])


def pooling(d):
    """Max and avg pooling and their gradient ops: padded, ceil_mode, overlapping windows."""
    geom = dict(kernel=(3, 3), stride=(2, 2), pad_lo=(1, 1), pad_hi=(1, 0), ceil_mode=True)
    mx, avg = dict(geom, dilation=(1, 1)), dict(geom, count_include_pad=False,
                                                divisor_override=0)
    xs, ys = (2, 3, 9, 8), (2, 3, 5, 4)

    def body(x, dy):
        y = op("ms.max_pool", x, **mx)
        return [y, op("ms.max_pool_grad", x, y, dy, **mx), op("ms.max_pool_gather", x, y, x, **mx),
                op("ms.avg_pool", x, **avg), op("ms.avg_pool_grad", dy, input_shape=xs, **avg)]
    return [spec(xs, d.name), spec(ys, d.name)], body


FAMILIES = (
    [pytest.param(*elementwise(d), id=f"elementwise-{d.name}") for d in ALL]
    + [pytest.param([spec((5, 6), "float32"), spec((5, 6), "int8"), spec((5, 6), "bool")],
                    lambda a, b, c: [op("ms.cast", x, dtype=t) for x in (a, b, c) for t in ALL],
                    id="cast"),
       pytest.param([spec((5, 6), "bool"), spec((5, 6), "float32"), spec((6,), "float32")],
                    lambda c, a, b: op("ms.select", c, a, b), id="select")]
    + [pytest.param(*reductions(d), id=f"reductions-{d.name}")
       for d in (dt.float32, dt.float16, dt.bfloat16, dt.float64, dt.int32, dt.int8, dt.uint8,
                 dt.uint16, dt.uint64, dt.bool_)]
    + [pytest.param(*softmax(d), id=f"softmax-{d.name}") for d in dt.FLOATS]
    + [pytest.param(*matmul(d), id=f"matmul-{d.name}")
       for d in (dt.float32, dt.float16, dt.bfloat16, dt.float64, dt.int32, dt.int8,
                 dt.uint32)]
    + [pytest.param(*matmul(dt.float32, (50, 70, 30)), id="matmul-untiled"),
       pytest.param([spec((3, 32, 16), "float32"), spec((1, 16, 8), "float32")],
                    lambda a, b: op("ms.batch_matmul", a, b, transpose_a=False,
                                    transpose_b=False), id="batch_matmul"),
       pytest.param(*data_movement(), id="data-movement"),
       pytest.param(*fused(), id="fused")]
    + [pytest.param(*convolution(d, groups), id=f"conv-{d.name}-groups{groups}")
       for d, groups in ((dt.float32, 1), (dt.float32, 2), (dt.float16, 1), (dt.float64, 1),
                         (dt.bfloat16, 1))]
    + [pytest.param(*convolution_3d(), id="conv3d-float32"),
       pytest.param(*convolution(dt.float32, 1, (64, 16, 28, 28), (64, 16, 3, 3)),
                    id="conv-float32-large-tiles")]
    + [pytest.param(*pooling(d), id=f"pooling-{d.name}") for d in (dt.float32, dt.float16)]
)


def test_families_cover_every_lowered_op():
    covered = set(UNARY) | set(BINARY) | {
        "ms.cast", "ms.select", "ms.reduce_sum", "ms.reduce_max", "ms.reduce_min",
        "ms.reduce_mean", "ms.softmax", "ms.log_softmax", "ms.matmul", "ms.batch_matmul",
        "ms.reshape", "ms.transpose", "ms.broadcast_to", "ms.expand_dims", "ms.concat",
        "ms.tile", "ms.slice", "ms.strided_slice", "ms.strided_slice_grad", "ms.gather",
        "ms.one_hot", "ms.unsorted_segment_sum", "ms.argmax", "ms.argmin", "ms.random_uniform",
        "ms.reduce_prod", "ms.cumsum", "ms.constant", "ms.fused", "ms.conv",
        "ms.conv_input_grad", "ms.conv_filter_grad"} | {
        "ms.max_pool", "ms.avg_pool", "ms.max_pool_grad", "ms.avg_pool_grad", "ms.max_pool_gather"}
    # Ops that lower to views or copies only (no kernel of their own), and the run-time row
    # access of loops (kernels inside loop bodies: test_cuda_control_flow.py).
    # ms.barrier is a call of an identity function (test_custom_grad_training_step_... below).
    views = {"ms.squeeze", "ms.assign", "ms.dynamic_index", "ms.dynamic_update_index",
             "ms.barrier"}
    # Collectives run on the CPU over MPI; the CUDA target refuses them (test below).
    views |= set(COLLECTIVES)
    # ms.print calls the CPU runtime's printer; the CUDA target refuses it (test_ops_last.py)
    views |= {"ms.print"}
    # ms.dim_size reads a dynamic size (ms-autodiff's count of a mean): the CUDA target does
    # not compile dynamic dimensions yet (test_dynamic_shapes.py)
    views |= {"ms.dim_size", "ms.broadcast_like", "ms.random_uniform_like"}
    lowered = {n for n, d in OPS.items() if d.lower is not None}
    assert lowered <= covered | views, lowered - covered - views


needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas (CUDA toolkit) not found")


@needs_ptxas
@pytest.mark.parametrize("in_specs,body", FAMILIES)
def test_ptx_is_accepted_by_ptxas(in_specs, body):
    art = build_artifact(module_of(in_specs, body), "f", "cuda")
    assert art.manifest["cuda"]["cubin"], "ptxas produced no cubin"
    ptx = art.blobs["kernels.ptx"].decode()
    entries = re.findall(r"\.entry (\w+)\(", ptx)
    assert sorted(entries) == sorted(art.plan().kernels())
    # Every kernel states its block size (launch bounds).
    assert ptx.count(".maxntid") == len(entries)


@needs_ptxas
@pytest.mark.parametrize("d", [dt.float32, dt.float16, dt.bfloat16, dt.float64, dt.int32,
                               dt.int64, dt.int8, dt.uint8, dt.uint16, dt.uint64],
                         ids=lambda d: d.name)
def test_scatter_add_is_one_atomic_kernel(d):
    """unsorted_segment_sum (gather's gradient) on CUDA: a zero fill and one kernel adding
    atomically (a CAS loop for 8-bit types), accepted by ptxas for every element type."""
    art = build_artifact(module_of([spec((64, 8), d), spec((64,), "int32")], lambda x, i: op(
        "ms.unsorted_segment_sum", x, i, num_segments=10)), "f", "cuda")
    assert art.manifest["cuda"]["cubin"], "ptxas produced no cubin"
    ptx = art.blobs["kernels.ptx"].decode()
    assert len(art.plan().kernels()) == 2
    assert re.search(r"\batom\.[\w.]*\b(add|cas)\.", ptx), ptx[-2000:]


def test_ptx_is_produced_without_ptxas():
    in_specs, body = elementwise(dt.float32)
    art = build_artifact(module_of(in_specs, body), "f", "cuda")
    assert b".target sm_90" in art.blobs["kernels.ptx"]


@needs_ptxas
def test_ptxas_rejects_bad_ptx_as_a_compile_error():
    from mscc.passes.diagnostics import CompileError
    with pytest.raises(CompileError, match="ptxas failed"):
        ptxas(".version 8.0\n.target sm_90\n.address_size 64\nnonsense\n")


def test_fma_contraction_survives_to_ptx():
    art = build_artifact(module_of(*matmul(dt.float32, (64, 32, 64))), "f", "cuda")
    ptx = art.blobs["kernels.ptx"].decode()
    assert "fma.rn.f32" in ptx and "mul.rn.f32" not in ptx
    chain = build_artifact(module_of([spec((1024,), "float32")] * 2,
                                     lambda x, y: op("ms.add", op("ms.mul", x, y), x)), "f", "cuda")
    assert "fma.rn.f32" in chain.blobs["kernels.ptx"].decode()


@needs_ptxas
def test_a_small_cnn_training_gradient_compiles_to_a_cubin():
    """A small CNN's training step (ms.conv, the bias and ReLU, ms.max_pool, a
    Dense layer) and its gradients (conv_filter_grad, max_pool_grad, ...) through the CUDA
    pipeline to a cubin."""
    import mscc as ms
    from mscc import nn
    net = nn.SequentialCell([nn.Conv2d(1, 4, 3, has_bias=True), nn.ReLU(), nn.MaxPool2d(2, 2),
                             nn.Flatten(), nn.Dense(64, 10)])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, net.trainable_params())
    lowered = ms.jit(lambda x, y: grad_fn(x, y), target="cuda").lower(
        ms.Tensor(np.zeros((8, 1, 8, 8), np.float32)), ms.Tensor(np.zeros(8, np.int32)))
    assert lowered.as_bytes("obj")[:4] == b"\x7fELF"


@needs_ptxas
def test_custom_grad_training_step_compiles_to_a_cubin():
    """A recomputed block (its backward reads the inputs through ms.barrier calls) and a
    Cell with a bprop, differentiated, through the CUDA pipeline to a cubin."""
    import mscc as ms
    from mscc import nn, ops

    class HalfTanhGrad(nn.Cell):
        def construct(self, x):
            return ops.tanh(x)

        def bprop(self, x, out, dout):
            return (dout * (1 - out * out) * 0.5,)
    block = nn.SequentialCell([nn.Dense(8, 16, activation="relu"), nn.Dense(16, 8)])
    block.recompute()
    act = HalfTanhGrad()
    grad_fn = ms.value_and_grad(lambda x: (act(block(x)) ** 2).sum(), None,
                                block.trainable_params())
    lowered = ms.jit(lambda x: grad_fn(x), target="cuda").lower(
        ms.Tensor(np.zeros((4, 8), np.float32)))
    assert "ms.barrier" in lowered.as_text("ms-opt")
    assert lowered.as_bytes("obj")[:4] == b"\x7fELF"


@pytest.mark.parametrize("d", [dt.bfloat16, dt.uint16, dt.uint64, dt.float16],
                         ids=lambda d: d.name)
def test_constants_of_every_width_reach_the_plan_exactly(d):
    """A non-splat constant becomes a plan blob of its element bytes (bfloat16's are read from
    the printed attribute: the bindings give bf16 no buffer)."""
    c = np.arange(33).astype(d.np)
    art = build_artifact(module_of([spec((7, 33), d)], lambda x: op(
        "ms.mul", x, constant(c, d))), "f", "cuda")
    blobs = [v for k, v in art.blobs.items() if k.startswith("consts/")]
    assert len(blobs) == 1 and np.frombuffer(blobs[0], dtype=d.np).tobytes() == c.tobytes()


def test_implicit_gemm_convolution_allocates_no_im2col_matrix():
    """At the gpu stage a one-group convolution and its input gradient are kernels with
    workgroup memory and barriers: no buffer of the im2col matrix's M*K elements (nor larger)
    is allocated on the host, the forward's input is read by its kernel directly."""
    xs, ws = (8, 16, 28, 28), (32, 16, 3, 3)
    geom = dict(stride=(1, 1), dilation=(1, 1), pad_lo=(1, 1), pad_hi=(1, 1), groups=1)
    module = module_of([spec(xs, "float32"), spec(ws, "float32"), spec((8, 32, 28, 28),
                                                                      "float32")],
                       lambda x, w, dy: [op("ms.conv", x, w, **geom),
                                         op("ms.conv_input_grad", dy, w, input_shape=xs,
                                            **geom)])
    from mscc.passes import pipeline
    from mscc.dialects.ir_helpers import ops_of_kind
    pipeline.run_pipeline(module, "cuda", stop_after="gpu")
    im2col = min(8 * 28 * 28 * 16 * 9, 8 * 28 * 28 * 32 * 9)  # M*K of either product
    for alloc in ops_of_kind(module.operation, "memref.alloc"):
        assert np.prod(alloc.results[0].type.shape) < im2col, alloc
    kernels = [f for f in ops_of_kind(module.operation, "gpu.func")
               if ops_of_kind(f, "gpu.barrier")]
    assert len(kernels) == 2
    from mlir import ir
    with module.context:
        shared = ir.Attribute.parse("#gpu.address_space<workgroup>")
    for kernel in kernels:
        n = ir.IntegerAttr(kernel.attributes["workgroup_attributions"]).value
        args = kernel.regions[0].blocks[0].arguments
        tiles = [a for a in args if isinstance(a.type, ir.MemRefType)
                 and a.type.memory_space is not None and a.type.memory_space == shared]
        assert n == 2 and len(tiles) == 2 and not ops_of_kind(kernel, "linalg.generic")
