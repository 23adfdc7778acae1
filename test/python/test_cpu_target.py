"""The CPU target (passes/cpu_target.py): the code's vector width and register tiles follow
the CPU compiled for, and the results are the same for every width.

Each kernel family (elementwise with the approximated transcendentals, row reductions,
matmuls with ragged edges and epilogues, a training step) is compiled for the host and for
AVX2-only and SSE-only CPUs named by MSCC_CPU, and compared with numpy in float64. (An
AVX2 or SSE program runs on any x86-64 machine that has AVX-512.)
"""
import platform

import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.passes import cpu_target
from mscc.runtime.cpu_aot import host_cpu_flags

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="the CPU names are x86-64's")

# (MSCC_CPU, MSCC_VECTOR_BITS): the host as it is, AVX2, SSE (x86-64's baseline), and an
# AVX-512 host's code at 256 bits
TARGETS = [("", ""), ("haswell", ""), ("x86-64", ""), ("", "256")]


def _rng():
    return np.random.default_rng(7)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layernorm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b


# name: (mscc function, numpy float64 function, input shapes, rtol)
KERNELS = {
    "chain": (lambda x, a: ops.tanh(x * a + 1.0) * ops.sigmoid(x) + 0.5 * x,
              lambda x, a: np.tanh(x * a + 1) / (1 + np.exp(-x)) + 0.5 * x,
              [(1000, 37), (1000, 37)], 1e-5),
    "gelu": (lambda x: 0.5 * x * (1.0 + ops.tanh(0.7978845608 * (x + 0.044715 * x * x * x))),
             _gelu, [(4099,)], 1e-5),
    "exp_log": (lambda x: ops.log(ops.exp(x) + 1.0), lambda x: np.log(np.exp(x) + 1),
                [(513, 7)], 1e-5),
    "softmax": (lambda x: ops.softmax(x, -1), _softmax, [(67, 1024)], 1e-5),
    "layernorm": (lambda x, g, b: ms.nn.LayerNorm((768,), epsilon=1e-5)(x) * g + b,
                  _layernorm, [(45, 768), (768,), (768,)], 1e-4),
    "matmul_ragged": (lambda a, b: ops.matmul(a, b), np.matmul, [(131, 97), (97, 75)], 1e-5),
    "matmul_512_relu": (lambda a, b, c: ops.relu(ops.matmul(a, b) + c),
                        lambda a, b, c: np.maximum(a @ b + c, 0),
                        [(512, 512), (512, 512), (512,)], 1e-4),
    "matmul_transposed": (lambda a, b: ops.matmul(a, b.T), lambda a, b: a @ b.T,
                          [(64, 200), (48, 200)], 1e-5),
    "row_sum": (lambda x: x.sum(1), lambda x: x.sum(1), [(300, 777)], 1e-5),
    # register blocks (8x8 by AVX2 on the host, haswell and 256-bit targets; 16x16 shuffles
    # on x86-64), rows of blocks over the threads for the large one
    "transpose_blocks": (lambda x: x.T, lambda x: x.T, [(144, 784)], 0),
    "transpose_large": (lambda x: x.T, lambda x: x.T, [(256, 512)], 0),
    # ragged static sizes: the blocked aligned part and the rows and columns beyond it
    "transpose_ragged": (lambda x: x.T, lambda x: x.T, [(120, 400)], 0),
    "transpose_ragged_both": (lambda x: x.T, lambda x: x.T, [(17, 33)], 0),
}


@pytest.fixture(params=TARGETS, ids=lambda t: f"{t[0] or 'host'}{'-' + t[1] if t[1] else ''}")
def target(request, monkeypatch):
    cpu, bits = request.param
    if cpu:
        monkeypatch.setenv(cpu_target.CPU_ENV, cpu)
    else:
        monkeypatch.delenv(cpu_target.CPU_ENV, raising=False)
    if bits:
        monkeypatch.setenv(cpu_target.VECTOR_BITS_ENV, bits)
    else:
        monkeypatch.delenv(cpu_target.VECTOR_BITS_ENV, raising=False)
    return cpu_target.current()


@pytest.mark.parametrize("name", KERNELS)
def test_kernels_equal_numpy_on_every_vector_width(target, name):
    fn, reference, shapes, rtol = KERNELS[name]
    inputs = [_rng().uniform(-2, 2, s).astype(np.float32) for s in shapes]
    got = ms.jit(fn)(*[ms.Tensor(a) for a in inputs]).asnumpy()
    want = reference(*[a.astype(np.float64) for a in inputs])
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_training_step_gradients_equal_on_every_vector_width(target):
    """An MLP's gradients (matmuls with transposed operands, the reductions of the bias
    gradients) for each target against numpy's."""
    rng = _rng()
    x = rng.normal(size=(64, 100)).astype(np.float32)
    w1 = rng.normal(size=(100, 72)).astype(np.float32) * 0.1
    w2 = rng.normal(size=(72, 10)).astype(np.float32) * 0.1

    def loss(x, w1, w2):
        return (ops.relu(ops.matmul(x, w1)).matmul(w2) ** 2).mean()

    g1, g2 = ms.jit(ms.grad(loss, grad_position=(1, 2)))(*map(ms.Tensor, (x, w1, w2)))
    x64, w164, w264 = (a.astype(np.float64) for a in (x, w1, w2))
    h = np.maximum(x64 @ w164, 0)
    dy = 2 * (h @ w264) / (64 * 10)
    want2 = h.T @ dy
    want1 = x64.T @ ((dy @ w264.T) * (h > 0))
    np.testing.assert_allclose(g2.asnumpy(), want2, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(g1.asnumpy(), want1, rtol=1e-4, atol=1e-6)


def test_register_tile_follows_the_registers(target):
    from mscc.passes.cpu import register_tile
    mr, nr_bytes = register_tile(target)
    assert nr_bytes == 2 * target.vector_bytes
    # accumulators plus A's broadcasts and B's loads fit the register file
    assert mr * 2 + 4 <= target.vector_registers


def _assembly(fn, *shapes):
    return ms.jit(fn).lower(*[ms.Tensor(np.zeros(s, np.float32)) for s in shapes]).as_text("asm")


@pytest.mark.skipif("avx512f" not in host_cpu_flags(), reason="the host has no AVX-512")
def test_host_code_uses_512_bit_registers_where_the_cpu_has_avx512(monkeypatch):
    monkeypatch.delenv(cpu_target.CPU_ENV, raising=False)
    monkeypatch.delenv(cpu_target.VECTOR_BITS_ENV, raising=False)
    assert cpu_target.current().vector_bits == 512
    asm = _assembly(lambda x, y: ops.tanh(x) * y + x, (4096,), (4096,))
    assert "%zmm" in asm
    monkeypatch.setenv(cpu_target.CPU_ENV, "haswell")
    asm = _assembly(lambda x, y: ops.tanh(x) * y + x, (4096,), (4096,))
    assert "%zmm" not in asm and "%ymm" in asm


def test_host_target_reads_the_cpu(monkeypatch):
    monkeypatch.delenv(cpu_target.CPU_ENV, raising=False)
    monkeypatch.delenv(cpu_target.VECTOR_BITS_ENV, raising=False)
    t = cpu_target.current()
    flags = host_cpu_flags()
    if flags:
        assert (t.vector_bits == 512) == ("avx512f" in flags and "avx512vl" in flags)
        assert set(t.features) <= flags
    assert t.l1d_bytes >= 8 * 1024 and t.l2_bytes >= t.l1d_bytes
    assert not t.named


def test_named_cpus_and_their_widths(monkeypatch):
    for cpu, bits in (("haswell", 256), ("skylake-avx512", 512), ("x86-64", 128)):
        monkeypatch.setenv(cpu_target.CPU_ENV, cpu)
        t = cpu_target.current()
        assert (t.cpu, t.vector_bits, t.named) == (cpu, bits, True)
    monkeypatch.setenv(cpu_target.VECTOR_BITS_ENV, "256")
    assert cpu_target.current().vector_bits == 128  # a cap, never a widening
    monkeypatch.setenv(cpu_target.CPU_ENV, "skylake-avx512")
    capped = cpu_target.current()
    # the code may still use AVX-512 instructions (at 256 bits): the artifact says so
    assert capped.vector_bits == 256 and "avx512f" in capped.features


@pytest.mark.parametrize("env, value, message", [
    (cpu_target.CPU_ENV, "pentium-9000", "is not a CPU LLVM knows"),
    (cpu_target.VECTOR_BITS_ENV, "384", "expected 128, 256 or 512"),
])
def test_a_bad_target_is_a_clear_error(monkeypatch, env, value, message):
    monkeypatch.setenv(env, value)
    with pytest.raises(ValueError, match=message):  # located at the call
        ms.jit(lambda x: x + 1.0)(ms.Tensor(np.ones(3, np.float32)))


def test_the_cache_key_follows_the_target(monkeypatch):
    from mlir import ir
    from mscc.dialects.builders import mlir_context
    from mscc.passes.exe_cache import key_for
    with mlir_context():
        module = ir.Module.parse("func.func @f() { return }")
        monkeypatch.delenv(cpu_target.CPU_ENV, raising=False)
        host = key_for(module, "f", "cpu")
        monkeypatch.setenv(cpu_target.CPU_ENV, "haswell")
        assert key_for(module, "f", "cpu") != host
