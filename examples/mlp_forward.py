"""A two-layer MLP classifier's forward pass, compiled ahead of time by the mscc CLI.

    mscc examples/mlp_forward.py --run            # compile and run on random inputs
    mscc examples/mlp_forward.py --emit=ms-opt    # the ms IR after the front-end passes
    python examples/mlp_forward.py                # the same through the Python API
"""
import numpy as np

import mscc as ms
from mscc import ops

rng = np.random.default_rng(0)
w1 = ms.Parameter(rng.standard_normal((64, 32)).astype(np.float32) * 0.1, name="w1")
b1 = ms.Parameter(np.zeros(32, np.float32), name="b1")
w2 = ms.Parameter(rng.standard_normal((32, 10)).astype(np.float32) * 0.1, name="w2")
b2 = ms.Parameter(np.zeros(10, np.float32), name="b2")


@ms.jit(input_signature=(ms.Tensor(shape=(16, 64), dtype=ms.float32),))
def predict(x):
    hidden = ops.relu(x @ w1 + b1)
    return ops.softmax(hidden @ w2 + b2, axis=-1)


if __name__ == "__main__":
    x = ms.Tensor(rng.standard_normal((16, 64)).astype(np.float32))
    probs = predict(x).asnumpy()
    print("class probabilities sum to", probs.sum(axis=1)[:4], "...; predicted", probs.argmax(1))
