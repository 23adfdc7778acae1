"""Train an MLP (or a small CNN) on scikit-learn's bundled digits (8x8 images, 10 classes; no
download), with MindSpore 2.x's functional training loop, in graph mode and in PyNative mode.

    python examples/train_digits.py                      # both modes, float32
    python examples/train_digits.py --mode graph --amp O2 # mixed precision, float32 masters
    python examples/train_digits.py --model cnn          # Conv2d, BatchNorm2d, MaxPool2d, Dropout
    mpirun -n 2 python examples/train_digits.py --data-parallel  # each rank on its shard

The step is the one MindSpore users write:
    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)
    loss, grads = grad_fn(x, y); optimizer(grads)
In graph mode the whole step (forward, loss, gradients, Adam update) is one jit function;
in PyNative mode the ops run eagerly and the gradient is recorded, compiled once and reused.
With --data-parallel (MindSpore's data parallel: init(), DATA_PARALLEL with gradients_mean,
nn.DistributedGradReducer) every rank trains on its shard of the training set and the
gradients are averaged over the ranks by one all-reduce inside the compiled step, so every
rank ends with the same weights; only rank 0 prints.
"""
import argparse
import sys
import time

import numpy as np

import mscc as ms
from mscc import nn, ops


def load_digits(seed=0, test_fraction=0.2):
    from sklearn.datasets import load_digits as sk_digits
    data = sk_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(len(x) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


class DigitsCNN(nn.Cell):
    """conv 3x3 (16) - batch norm - relu - 2x2 max pool - dropout - dense, on 8x8 images."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3, has_bias=True)
        self.norm = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2, 2)
        self.drop = nn.Dropout(p=0.1)
        self.fc = nn.Dense(16 * 4 * 4, 10)

    def construct(self, x):
        x = ops.reshape(x, (x.shape[0], 1, 8, 8))
        x = self.pool(ops.relu(self.norm(self.conv(x))))
        return self.fc(self.drop(ops.reshape(x, (x.shape[0], -1))))


def build(amp_level, seed, model="mlp"):
    ms.set_seed(seed)
    if model == "cnn":
        net = DigitsCNN()
    else:
        net = nn.SequentialCell([nn.Dense(64, 128, activation="relu"), nn.Dense(128, 10)])
    params = net.trainable_params()  # the float32 master weights
    net = ms.amp.auto_mixed_precision(net, amp_level)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Adam(params, learning_rate=3e-3)
    return net, loss_fn, optimizer


def progress(epoch, epochs, step, steps, loss, width=24):
    done = int(width * step / steps)
    sys.stdout.write(f"\repoch {epoch + 1:2d}/{epochs} [{'#' * done}{'.' * (width - done)}] "
                     f"loss {loss:.4f}")
    sys.stdout.flush()


def data_parallel_setup():
    """MPI, the data-parallel context, and this rank's part of the data (Returns (rank,
    shard function))."""
    from mscc.communication import get_rank, init, shard
    init()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL,
                                 gradients_mean=True)
    return get_rank(), shard


def train(mode="graph", amp_level="O0", epochs=20, batch=64, seed=0, verbose=True, model="mlp",
          data_parallel=False):
    """Returns (test accuracy, per-epoch losses, seconds per epoch, network, optimizer)."""
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    (x_train, y_train), (x_test, y_test) = load_digits(seed)
    if data_parallel:
        rank, shard = data_parallel_setup()
        x_train, y_train = shard((x_train, y_train))
        verbose = verbose and rank == 0
    net, loss_fn, optimizer = build(amp_level, seed, model)
    reducer = nn.DistributedGradReducer(optimizer.parameters) if data_parallel else None
    scaler = ms.amp.StaticLossScaler(1024.0) if amp_level != "O0" else None

    def forward_fn(x, y):
        loss = loss_fn(net(x), y)
        return scaler.scale(loss) if scaler else loss

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

    def train_step(x, y):
        loss, grads = grad_fn(x, y)
        if scaler:
            loss, grads = scaler.unscale(loss), scaler.unscale(grads)
        if reducer:  # the mean over the ranks: one all-reduce in the compiled step
            grads = reducer(grads)
        optimizer(grads)
        return loss

    if mode == "graph":  # the partial last batch: one more compile, with a dynamic batch
        train_step = ms.jit(train_step, dynamic=1)
    # In graph mode a Cell compiles its construct on its own, keyed by its training flag too
    net.set_train()

    losses, times = run_epochs(train_step, x_train, y_train,
                               lambda: accuracy(net, x_test, y_test), epochs, batch, seed,
                               verbose, drop_remainder=False)
    return accuracy(net, x_test, y_test), losses, times, net, optimizer


def run_epochs(train_step, x_train, y_train, evaluate, epochs, batch, seed, verbose,
               drop_remainder=True):
    """The loop the examples share: each epoch a seeded shuffle, batches through
    `train_step(x, y) -> loss` (the last, partial one too unless `drop_remainder`, as
    MindSpore's Dataset.batch), a progress bar and `evaluate()` (the test accuracy) when
    verbose. Returns (mean loss per epoch, seconds per epoch)."""
    rng = np.random.default_rng(seed)
    steps = len(x_train) // batch if drop_remainder else -(-len(x_train) // batch)
    losses, times = [], []
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        start, total = time.perf_counter(), 0.0
        for step in range(steps):
            idx = order[step * batch:(step + 1) * batch]
            loss = float(train_step(ms.Tensor(x_train[idx]), ms.Tensor(y_train[idx])).asnumpy())
            total += loss
            if verbose:
                progress(epoch, epochs, step + 1, steps, total / (step + 1))
        times.append(time.perf_counter() - start)
        losses.append(total / steps)
        if verbose:
            print(f"  test accuracy {evaluate():.3f}  ({times[-1]:.2f} s)")
    return losses, times


def accuracy(net, x, y):
    """Test accuracy with the network in inference mode (BatchNorm's moving statistics, no
    dropout), the class chosen by ops.argmax."""
    net.set_train(False)
    try:
        return float((ops.argmax(net(ms.Tensor(x)), 1).asnumpy() == y).mean())
    finally:
        net.set_train(True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["graph", "pynative", "both"], default="both")
    ap.add_argument("--amp", choices=["O0", "O2", "O3"], default="O0")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--data-parallel", action="store_true",
                    help="train on this rank's shard, gradients averaged over the ranks "
                         "(launch with mpirun -n N)")
    args = ap.parse_args()
    modes = ["graph", "pynative"] if args.mode == "both" else [args.mode]
    rank = data_parallel_setup()[0] if args.data_parallel else 0
    say = print if rank == 0 else (lambda *a, **k: None)
    for mode in modes:
        say(f"== {mode} mode, {args.model}, amp {args.amp}"
            + (f", data parallel on {ms.communication.get_group_size()} processes"
               if args.data_parallel else ""))
        acc, _, times, _, _ = train(mode, args.amp, args.epochs, model=args.model,
                                    data_parallel=args.data_parallel)
        say(f"== {mode}: final test accuracy {acc:.3f}, {np.median(times):.3f} s/epoch")


if __name__ == "__main__":
    main()
