"""bench/conv.py's and bench/compile_time.py's models without timing anything: each mscc model (MindSpore-style layers)
computes what its torch twin computes from the same weights, the two training steps take the
same first steps (their losses agree). Skipped without torch (`pip install -e '.[bench]'`)."""
import importlib.util
import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))

_spec = importlib.util.spec_from_file_location("bench_conv", os.path.join(REPO, "bench", "conv.py"))
conv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conv)


@pytest.mark.parametrize("name", ["depthwise3x3_forward", "grouped3x3_forward",
                                  "mobilenet_block_train_step"])
def test_the_mscc_model_computes_what_torch_computes(name):
    pytest.importorskip("torch")
    import mscc as ms
    title, kind, p, x, y, ms_model, torch_model, loss = conv.spec(name, small=True)
    if kind == "forward":
        x = x[:4]
    else:
        x, y = x[:4], y[:4]
    ms_call, ms_read = conv.mscc_call(kind, ms_model(p), x, y, loss)
    torch_call, torch_read = conv.torch_call(kind, torch_model(p), x, y, loss)
    mode = ms.get_context("mode")
    ms.set_context(mode=ms.GRAPH_MODE)  # (as bench/conv.py's worker runs it)
    try:
        got = [ms_read(ms_call()) for _ in range(2)]
    finally:
        ms.set_context(mode=mode)
    want = [torch_read(torch_call()) for _ in range(2)]
    # forward: the output; a step: the loss before each of two updates (the second one
    # checks the gradients and the update too)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


def _mscc_logits(p, x):
    import mscc as ms
    import nets
    net = nets.ms_mobilenet_v2(p)
    net.set_train(True)
    return ms.jit(lambda t: net(t))(ms.Tensor(x)).asnumpy()


def _torch_logits(p, x):
    torch = pytest.importorskip("torch")
    import nets
    net = nets.torch_mobilenet_v2(p)
    net.train()
    with torch.no_grad():
        return net(torch.from_numpy(x)).numpy()


@pytest.mark.parametrize("logits", [_mscc_logits, _torch_logits], ids=["mscc", "torch"])
def test_mobilenet_v2_computes_what_the_jax_function_computes(logits):
    """MobileNetV2 as bench/compile_time.py (mscc, MindSpore's layers) and bench/conv.py
    (mscc against torch.nn) build it: the same logits from the same weights as the jax
    function, BatchNorm in training mode. (At 64x64 the last stages are 2x2: BatchNorm's
    statistics over 2 images of 1x1 would amplify rounding differences without bound.)"""
    pytest.importorskip("jax")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax.numpy as jnp
    import nets
    rng = np.random.default_rng(0)
    p = nets.mobilenet_v2_params(rng)
    x, _ = nets.classifier_data(rng, (4, 3, 64, 64))
    want = np.asarray(nets.jax_mobilenet_v2({k: jnp.asarray(v) for k, v in p.items()},
                                            jnp.asarray(x)))
    np.testing.assert_allclose(logits(p, x), want, rtol=1e-3, atol=1e-3)
