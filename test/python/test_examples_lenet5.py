"""examples/lenet5.py: MindSpore's model-zoo LeNet5 (Conv2d, MaxPool2d, Dense through Model.train
and Model.eval) on scikit-learn's digits reaches 97% in graph mode as the script runs it, a
shortened PyNative run learns, and both modes train the same network."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mscc as ms

pytest.importorskip("sklearn")
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
sys.path.insert(0, EXAMPLES)
import lenet5  # noqa: E402


def test_the_script_reaches_97_percent_in_graph_mode():
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "lenet5.py"), "--mode",
                          "graph"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "MSCC_CACHE_DIR": ""})
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    acc = float(last.split("test accuracy ")[1].split(" ")[0])
    assert acc >= 0.97, out.stdout
    assert "loss is" in out.stdout and "per step time" in out.stdout   # the zoo's callbacks


def test_a_shortened_pynative_run_learns():
    try:
        acc, _, _ = lenet5.train_and_eval("pynative", epochs=6, verbose=False)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert acc >= 0.9, acc


def test_graph_and_pynative_train_the_same_network():
    nets = []
    try:
        for mode in ("graph", "pynative"):
            nets.append(lenet5.train_and_eval(mode, epochs=1, train_size=256, verbose=False)[2])
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    pa, pb = nets[0].trainable_params(), nets[1].trainable_params()
    assert [p.name for p in pa] == [p.name for p in pb] and len(pa) == 8  # (the convs have no bias)
    for p, q in zip(pa, pb):
        np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=p.name)
