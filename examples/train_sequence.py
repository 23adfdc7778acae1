"""Train an LSTM classifier on scikit-learn's digits read as sequences: each 8x8 image is 8
time steps of 8 pixels (no download), in graph mode and in PyNative mode.

    python examples/train_sequence.py                 # both modes
    python examples/train_sequence.py --mode graph --epochs 10

The LSTM (nn.LSTM, built on ops.Scan) runs its 8 steps as one loop in the compiled step and
is differentiated through it (ms-autodiff's loop rule); in PyNative mode the loop runs
eagerly and its steps are recorded for the gradient. The classifier reads the last hidden
state. Both modes reach about 97% test accuracy.
"""
import argparse
import os
import sys

import numpy as np

import mscc as ms
from mscc import nn, ops

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_digits import load_digits, run_epochs  # noqa: E402


class SequenceClassifier(nn.Cell):
    """LSTM over the rows of the image, then a dense layer on the last hidden state."""

    def __init__(self, hidden=64):
        super().__init__()
        self.lstm = nn.LSTM(8, hidden, batch_first=True)
        self.fc = nn.Dense(hidden, 10)

    def construct(self, x):
        _, (h, _) = self.lstm(ops.reshape(x, (x.shape[0], 8, 8)))
        return self.fc(h[0])


def train(mode="graph", epochs=15, batch=64, seed=0, verbose=True):
    """Returns (test accuracy, per-epoch losses, seconds per epoch)."""
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    (x_train, y_train), (x_test, y_test) = load_digits(seed)
    ms.set_seed(seed)
    net = SequenceClassifier()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-2)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, optimizer.parameters)

    def train_step(x, y):
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        return loss

    if mode == "graph":
        train_step = ms.jit(train_step)
    losses, times = run_epochs(train_step, x_train, y_train,
                               lambda: accuracy(net, x_test, y_test), epochs, batch, seed,
                               verbose)
    return accuracy(net, x_test, y_test), losses, times


def accuracy(net, x, y):
    return float((ops.argmax(net(ms.Tensor(x)), 1).asnumpy() == y).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["graph", "pynative", "both"], default="both")
    ap.add_argument("--epochs", type=int, default=15)
    args = ap.parse_args()
    for mode in ["graph", "pynative"] if args.mode == "both" else [args.mode]:
        print(f"== {mode} mode, LSTM over 8 rows of 8 pixels")
        acc, _, times = train(mode, args.epochs)
        print(f"== {mode}: final test accuracy {acc:.3f}, {np.median(times):.3f} s/epoch")


if __name__ == "__main__":
    main()
