"""How the ms.conv ops lower (dialects/ops/conv.py): both schedules of a batch (per image, whole
or in blocks of output rows, and batched) compute the same numbers, every indexing map can be tiled (no negative coefficient:
MLIR's tiling asserts on one, which aborted a grouped single-image gradient when the CPU
pipeline split it over threads), and that gradient runs."""
import os
import sys

import numpy as np
import pytest
from mlir import ir

from mstest import compile_fn, module_of, op, spec
from mscc.dialects.builders import mlir_context
from mscc.dialects.ir_helpers import ops_of_kind
from mscc.passes import pipeline

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from gpu_cases import conv_ref  # noqa: E402  (the direct float64 convolution)

GEOMETRIES = [  # (x shape, weight shape, stride, dilation, pad_lo, pad_hi, groups)
    ((3, 4, 9, 8), (6, 4, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1),
    # per image, 45 >= NARROW_COLUMNS columns: the weight gradient's transposed products
    ((2, 5, 12, 11), (4, 5, 3, 3), (2, 1), (1, 2), (1, 0), (0, 1), 1),
    ((2, 4, 9, 7), (6, 2, 3, 2), (2, 1), (1, 2), (1, 0), (2, 1), 2),
    ((4, 3, 10), (5, 3, 4), (3,), (2,), (3,), (0,), 1),
    ((1, 16, 64, 64), (32, 8, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 2),
    # grouped, several images: 2 channels per group, direct loop nests (conv_direct.py);
    # 6 channels per group: rows of 7 float64 positions fill half a vector up to 512 bits,
    # so direct too (products where they would not: one per group, an scf.for of
    # linalg.matmul)
    ((3, 8, 7, 7), (8, 2, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 4),
    ((3, 12, 7, 7), (8, 6, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 2),
    # 8 channels per group (72 terms): direct where its rows fill half a vector (9 float64
    # positions: any CPU vector), else products (3: test_wide_row_groups_...)
    ((2, 16, 5, 9), (8, 8, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 2),
    # depthwise (one input channel per group: the direct loop nests of conv_direct.py),
    # per image and for one image, strided (read by phases), dilated, multiplier 2, 1-D and
    # 3-D
    ((3, 4, 9, 8), (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 4),
    ((1, 3, 8, 7), (3, 1, 3, 2), (2, 2), (1, 1), (1, 0), (0, 1), 3),
    ((2, 4, 10, 9), (4, 1, 3, 2), (2, 3), (2, 1), (2, 0), (1, 2), 4),
    ((2, 3, 11, 10), (6, 1, 3, 3), (2, 2), (1, 1), (1, 1), (1, 0), 3),
    ((3, 2, 13), (2, 1, 5), (2,), (1,), (2,), (2,), 2),
    ((2, 2, 5, 6, 5), (2, 1, 3, 3, 2), (1, 2, 1), (1, 1, 1), (1, 1, 0), (1, 0, 1), 2),
]


def _geom(case):
    _, _, stride, dilation, lo, hi, groups = case
    return dict(stride=stride, dilation=dilation, pad_lo=lo, pad_hi=hi, groups=groups)


def _program(case):
    xs, ws = case[:2]
    g = _geom(case)
    ys = conv_ref(np.zeros(xs), np.zeros(ws), g).shape
    specs = [spec(xs, "float64"), spec(ws, "float64"), spec(ys, "float64")]

    def body(x, w, dy):
        return [op("ms.conv", x, w, **g), op("ms.conv_input_grad", dy, w, input_shape=xs, **g),
                op("ms.conv_filter_grad", x, dy, kernel_shape=ws, **g)]
    return specs, body


def _negative_coefficients(expr):
    if isinstance(expr, ir.AffineMulExpr):
        rhs = expr.rhs
        bad = isinstance(rhs, ir.AffineConstantExpr) and rhs.value <= 0
        return bad or _negative_coefficients(expr.lhs)
    if isinstance(expr, ir.AffineBinaryExpr):
        return _negative_coefficients(expr.lhs) or _negative_coefficients(expr.rhs)
    return False


@pytest.mark.parametrize("case", GEOMETRIES, ids=lambda c: f"{c[0]}x{c[1]}g{c[-1]}")
def test_indexing_maps_have_only_positive_coefficients(case):
    module = module_of(*_program(case))
    pipeline.run_pipeline(module, "cpu", stop_after="linalg")
    maps = []

    def collect(o):
        if o.name == "linalg.generic":
            maps.extend(ir.AffineMapAttr(m).value for m in o.attributes["indexing_maps"])
        return ir.WalkResult.ADVANCE
    module.operation.walk(collect)
    assert maps, "the convolutions lowered to no linalg.generic"
    bad = [str(m) for m in maps if any(_negative_coefficients(e) for e in m.results)]
    assert not bad, bad


# Groups of 5 to 8 channels: the direct nests where a row of the output fills more than
# half a vector of conv-vector-bits (here 3 float64 positions: 256 bits hold 4, 512 bits 8),
# the products otherwise; both compute the convolution and its gradients.
@pytest.mark.parametrize("bits,direct", [(256, True), (512, False)])
def test_wide_row_groups_run_direct_only_where_rows_fill_half_a_vector(bits, direct):
    case = ((2, 16, 4, 3), (8, 8, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 2)
    options = f"conv=per-image conv-vector-bits={bits}"
    specs, body = _program(case)
    module = module_of(specs, body)
    pipeline.run_pipeline(module, "cpu", stop_after="ms-opt")
    pipeline.run_steps(module, pipeline.parse_pipeline(f"convert-ms-to-linalg{{{options}}}"))
    kinds = set()
    module.operation.walk(lambda o: kinds.add(o.name) or ir.WalkResult.ADVANCE)
    assert ("linalg.matmul" not in kinds) == direct
    _check_convolution_and_gradients(case, options)


# Per image in blocks of output rows: a budget of 7,000 bytes makes the float64 im2col
# matrices of the 2-D one-group geometries run in blocks of 1 to 3 rows.
SCHEDULES = ["conv=per-image", "conv=per-image conv-block-bytes=7000", "conv=batched"]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", GEOMETRIES, ids=lambda c: f"{c[0]}x{c[1]}g{c[-1]}")
def test_both_schedules_compute_the_convolution_and_its_gradients(case, schedule):
    _check_convolution_and_gradients(case, schedule)


def _check_convolution_and_gradients(case, linalg_options):
    """The forward against the float64 direct convolution, both gradients by probes."""
    specs, body = _program(case)
    exe = compile_fn(specs, body, linalg_options=linalg_options)
    rng = np.random.default_rng(0)
    x, w, dy = (rng.standard_normal(s.shape) for s in specs)
    y, dx, dw = exe(x, w, dy)
    g = _geom(case)
    np.testing.assert_allclose(y, conv_ref(x, w, g), rtol=1e-12, atol=1e-12)
    # <conv(x, w), dy> is bilinear: its gradients are exact at any point, so compare them
    # with the forward applied to dx's and dw's own directions (one random probe each).
    u, v = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    np.testing.assert_allclose((dx * u).sum(), (conv_ref(u, w, g) * dy).sum(), rtol=1e-10)
    np.testing.assert_allclose((dw * v).sum(), (conv_ref(x, v, g) * dy).sum(), rtol=1e-10)


# ------------------------------------------------------------------ fused epilogues

def _epilogue_program(n, groups):
    """relu(conv(x, w) + bias) * 2 + residual, the bias (1, O, 1, 1) and the residual
    (N, O, H, W): a bias, an activation and a skip connection after the convolution. With 4
    groups (depthwise, multiplier 2: the direct loop nest) O is 8, else 6."""
    o = 8 if groups == 4 else 6
    xs, ws = (n, 4, 9, 9), (o, 4 // groups, 3, 3)
    g = dict(stride=(1, 1), dilation=(1, 1), pad_lo=(1, 1), pad_hi=(1, 1), groups=groups)
    specs = [spec(xs, "float64"), spec(ws, "float64"), spec((1, o, 1, 1), "float64"),
             spec((n, o, 9, 9), "float64")]

    def body(x, w, b, r):
        y = op("ms.relu", op("ms.add", op("ms.conv", x, w, **g), b))
        return op("ms.add", op("ms.mul", y, op("ms.constant", value=np.array(2.0))), r)

    def ref(x, w, b, r):
        return np.maximum(conv_ref(x, w, g) + b, 0) * 2 + r
    return specs, body, ref


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n,groups", [(4, 1), (1, 1), (3, 2), (3, 4), (1, 4)])
def test_fused_epilogues_compute_bias_activation_and_residual(n, groups, schedule):
    specs, body, ref = _epilogue_program(n, groups)
    exe = compile_fn(specs, body, linalg_options=schedule)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s.shape) for s in specs]
    (got,) = exe(*args)
    np.testing.assert_allclose(got, ref(*args), rtol=1e-12, atol=1e-12)


def _generics(region_holder):
    found = []

    def visit(o):
        if o.name == "linalg.generic":
            found.append(o)
        return ir.WalkResult.ADVANCE
    region_holder.operation.walk(visit)
    return found


def test_the_epilogue_runs_inside_the_loop_over_images():
    specs, body, _ = _epilogue_program(4, 1)
    module = module_of(specs, body)
    pipeline.run_pipeline(module, "cpu", stop_after="ms-opt")
    fused = []
    module.operation.walk(lambda o: (fused.append(o) if o.name == "ms.fused" else None)
                          or ir.WalkResult.ADVANCE)
    assert [ir.StringAttr(o.attributes["kind"]).value for o in fused] == ["conv"]
    pipeline.run_pipeline(module, "cpu", start_after="ms-opt", stop_after="linalg")
    loops = []
    module.operation.walk(lambda o: (loops.append(o) if o.name == "scf.forall" else None)
                          or ir.WalkResult.ADVANCE)
    assert len(loops) == 1
    # the im2col and the epilogue, both per image; nothing left after the loop
    assert len(_generics(loops[0])) == 2
    assert len(_generics(module)) == 2


# ------------------------------------------------------------------ shared image windows

def _windows_functions(module):
    from mscc.dialects.ops.conv import WINDOWS_ATTR
    return [o for o in module.body.operations if WINDOWS_ATTR in o.operation.attributes]


def _calls_of(module, name):
    found = []
    module.operation.walk(lambda o: (found.append(o) if o.name == "func.call" and
                                     ir.FlatSymbolRefAttr(o.attributes["callee"]).value == name
                                     else None) or ir.WalkResult.ADVANCE)
    return found


def _forward_and_filter_grad(filter_pads=(1, 1)):
    xs, ws, ys = (4, 3, 8, 8), (5, 3, 3, 3), (4, 5, 8, 8)
    g = dict(stride=(1, 1), dilation=(1, 1), pad_lo=(1, 1), pad_hi=(1, 1), groups=1)
    gw = dict(g, pad_lo=filter_pads, pad_hi=filter_pads)
    specs = [spec(xs, "float64"), spec(ws, "float64"), spec(ys, "float64")]

    def body(x, w, dy):
        return [op("ms.conv", x, w, **g), op("ms.conv_filter_grad", x, dy, kernel_shape=ws, **gw)]
    return specs, body


@pytest.mark.parametrize("pads,shared", [((1, 1), True), ((0, 0), False)])
def test_a_forward_and_its_weight_gradient_share_the_image_windows(pads, shared):
    """Per image, the forward and the weight gradient of one input gather the same padded
    windows: one function called from both loops over images, where the geometry agrees
    (the weight gradient of other padding takes its own)."""
    specs, body = _forward_and_filter_grad(pads)
    if pads != (1, 1):  # (the weight gradient's dy then has the unpadded output's size)
        specs[2] = spec((4, 5, 6, 6), "float64")
    module = module_of(specs, body)
    pipeline.run_pipeline(module, "cpu", stop_after="linalg")
    windows = _windows_functions(module)
    assert len(windows) == (1 if shared else 0)
    if shared:
        name = ir.StringAttr(windows[0].attributes["sym_name"]).value
        calls = _calls_of(module, name)
        assert len(calls) == 2 and all(c.parent.name == "scf.forall" for c in calls)


def test_a_forward_alone_gathers_its_windows_inline():
    g = dict(stride=(1, 1), dilation=(1, 1), pad_lo=(1, 1), pad_hi=(1, 1), groups=1)
    module = module_of([spec((4, 3, 8, 8), "float64"), spec((5, 3, 3, 3), "float64")],
                       lambda x, w: [op("ms.conv", x, w, **g)])
    pipeline.run_pipeline(module, "cpu", stop_after="linalg")
    assert not _windows_functions(module)


def test_shared_windows_stay_on_the_calling_thread(monkeypatch):
    """ms-cpu-parallelize leaves the windows function whole (its calls are in the loop over
    images, already split over the threads; here any loop nest would be split); it computes
    what numpy does."""
    from mscc.passes import cpu_loops
    monkeypatch.setattr(cpu_loops.ThreadedPass, "threads", lambda self: 2)
    monkeypatch.setattr(cpu_loops, "MIN_PARALLEL_ITERATIONS", 1)
    specs, body = _forward_and_filter_grad()
    module = module_of(specs, body)
    pipeline.run_pipeline(module, "cpu", stop_after="llvm")
    (windows,) = _windows_functions(module)
    inner = []
    windows.operation.walk(lambda o: inner.append(o.name) or ir.WalkResult.ADVANCE)
    assert "llvm.store" in inner and not any(n.startswith("omp.") for n in inner)
    exe = compile_fn(specs, body)
    rng = np.random.default_rng(2)
    x, w, dy = (rng.standard_normal(s.shape) for s in specs)
    y, dw = exe(x, w, dy)
    geometry = dict(stride=(1, 1), dilation=(1, 1), pad_lo=(1, 1), pad_hi=(1, 1), groups=1)
    np.testing.assert_allclose(y, conv_ref(x, w, geometry), rtol=1e-12, atol=1e-12)
    v = rng.standard_normal(w.shape)
    np.testing.assert_allclose((dw * v).sum(), (conv_ref(x, v, geometry) * dy).sum(),
                               rtol=1e-10)


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_gradients_take_a_dynamic_batch(stride):
    """The direct depthwise forms with a batch known only at run time (per image: the weight
    gradient's long dot products at stride 1, its partial rows at stride 2) give the static
    compile's numbers, for two batch sizes."""
    import mscc as ms
    from mscc import ops
    rng = np.random.default_rng(stride)
    x = rng.standard_normal((3, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)

    def loss(a, b):
        y = ops.conv2d(a, b, pad_mode="pad", padding=1, stride=stride, groups=4)
        return (y * y).sum()
    grad = ms.grad(loss, grad_position=(0, 1))
    dynamic = ms.jit(grad, input_signature=(ms.Tensor(shape=(None, 4, 9, 8), dtype=ms.float32),
                                            ms.Tensor(shape=(4, 1, 3, 3), dtype=ms.float32)))
    for n in (1, 3):
        want = [t.asnumpy() for t in ms.jit(grad)(ms.Tensor(x[:n]), ms.Tensor(w))]
        got = [t.asnumpy() for t in dynamic(ms.Tensor(x[:n]), ms.Tensor(w))]
        for g, v in zip(got, want):
            np.testing.assert_allclose(g, v, rtol=1e-5, atol=1e-4)


def test_a_forward_and_an_input_gradient_of_one_shape_are_one_loop_function():
    """Two 3x3 convolutions of C -> C channels (stride 1, pad 1) and their gradients: an
    input gradient (a transposed convolution) is the same windows product as a forward of
    those shapes, so its loop over images is the forward's function (the flipped weight as a
    (C, O, K) weight, the arguments in the order the nest uses them): the first forward and
    both input gradients are one function, called three times, that LLVM compiles once (five
    functions before). Gradients against central differences in float64."""
    import mscc as ms
    from mscc import ops

    def loss(x, w, v):
        h = ops.sin(ops.conv2d(x, w, pad_mode="pad", padding=1))
        return ops.reduce_sum(ops.conv2d(h, v, pad_mode="pad", padding=1) ** 2)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s) for s in ((8, 32, 28, 28), (32, 32, 3, 3), (32, 32, 3, 3))]
    step = ms.jit(ms.grad(loss, (0, 1, 2)))
    module = ir.Module.parse(step.lower(*map(ms.Tensor, args)).as_text("llvm"),
                             context=mlir_context())
    callees = {}  # function -> the functions it calls, once per call
    for fn in ops_of_kind(module, "llvm.func"):
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        callees[name] = [ir.FlatSymbolRefAttr(c.attributes["callee"]).value
                         for c in ops_of_kind(fn, "llvm.call") if "callee" in c.attributes]
    products = [name for name, called in callees.items()
                if "__loop" in name and any("__matmul" in c for c in called)]
    calls = sorted(sum(c.count(p) for c in callees.values()) for p in products)
    assert calls == [1, 2, 3]
    grads = [g.asnumpy() for g in step(*map(ms.Tensor, args))]
    value = ms.jit(loss)
    eps = 1e-5
    for k, g in enumerate(grads):
        u = rng.standard_normal(g.shape)
        plus, minus = ([a + sign * eps * u if i == k else a for i, a in enumerate(args)]
                       for sign in (1, -1))
        numeric = (float(value(*map(ms.Tensor, plus)).asnumpy())
                   - float(value(*map(ms.Tensor, minus)).asnumpy())) / (2 * eps)
        np.testing.assert_allclose((g * u).sum(), numeric, rtol=1e-6)
