import mscc as ms
from mscc import ops


@ms.jit(input_signature=(ms.Tensor(shape=(4, 8), dtype=ms.float32),
                         ms.Tensor(shape=(8,), dtype=ms.float32)))
def scaled(x, b):
    return ops.tanh(x + b) * 0.5


def undecorated(x, y):
    return ops.reduce_sum(x * y, axis=-1)


def broken(x):
    return x @ x  # a (4, 3) @ (4, 3) matmul cannot work
