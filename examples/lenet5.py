"""MindSpore's LeNet5 (the model zoo's official/cv/lenet: src/lenet.py, src/dataset.py, train.py
and eval.py) with `mindspore` renamed to `mscc`, trained on scikit-learn's bundled digits
instead of MNIST (no download): the 8x8 images become 32x32 uint8 images, HWC, as
MnistDataset gives them after its Resize, and go through the zoo's pipeline (Rescale, the
MNIST normalization, HWC2CHW, TypeCast, shuffle, batch) into Model.train with LossMonitor and
Model.eval with Accuracy, in either mode:

    python examples/lenet5.py --mode graph       # or --mode pynative
"""
import argparse
import time

import numpy as np

import mscc
import mscc.dataset as ds
import mscc.dataset.transforms as C
import mscc.dataset.vision as CV
import mscc.nn as nn
from mscc.common import dtype as mstype
from mscc.common.initializer import Normal
from mscc.train import Accuracy, LossMonitor, Model, TimeMonitor


class LeNet5(nn.Cell):
    """
    Lenet network

    Args:
        num_class (int): Number of classes. Default: 10.
        num_channel (int): Number of channels. Default: 1.

    Returns:
        Tensor, output tensor
    Examples:
        >>> LeNet(num_class=10)

    """
    def __init__(self, num_class=10, num_channel=1, include_top=True):
        super(LeNet5, self).__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode='valid')
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode='valid')
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.include_top = include_top
        if self.include_top:
            self.flatten = nn.Flatten()
            self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init=Normal(0.02))
            self.fc2 = nn.Dense(120, 84, weight_init=Normal(0.02))
            self.fc3 = nn.Dense(84, num_class, weight_init=Normal(0.02))

    def construct(self, x):
        x = self.conv1(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        x = self.conv2(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        if not self.include_top:
            return x
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def digits_as_mnist(seed=0, test_fraction=0.2, size=32):
    """scikit-learn's digits (as examples/train_digits.py splits them) as MnistDataset-like
    columns: "image" (size, size, 1) uint8, each 8x8 pixel a (size/8)^2 block (the zoo resizes
    MNIST's 28x28 to 32x32), "label" uint32."""
    from sklearn.datasets import load_digits
    data = load_digits()
    images = np.round(data.images * (255.0 / 16.0)).astype(np.uint8)   # 0..16 -> 0..255
    scale = size // 8
    images = np.kron(images, np.ones((1, scale, scale), np.uint8))[..., None]
    labels = data.target.astype(np.uint32)
    order = np.random.default_rng(seed).permutation(len(images))
    n_test = int(len(images) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return ({"image": images[train], "label": labels[train]},
            {"image": images[test], "label": labels[test]})


def create_dataset(columns, batch_size=32, repeat_size=1, training=True):
    """The zoo's src/dataset.py after its MnistDataset and Resize."""
    mnist_ds = ds.NumpySlicesDataset(columns, shuffle=False)

    rescale = 1.0 / 255.0
    shift = 0.0
    rescale_nml = 1 / 0.3081
    shift_nml = -1 * 0.1307 / 0.3081

    # define map operations
    rescale_nml_op = CV.Rescale(rescale_nml, shift_nml)
    rescale_op = CV.Rescale(rescale, shift)
    hwc2chw_op = CV.HWC2CHW()
    type_cast_op = C.TypeCast(mstype.int32)

    # apply map operations on images
    mnist_ds = mnist_ds.map(operations=type_cast_op, input_columns="label")
    mnist_ds = mnist_ds.map(operations=[rescale_op, rescale_nml_op, hwc2chw_op],
                            input_columns="image")

    # apply DatasetOps
    buffer_size = 10000
    if training:
        mnist_ds = mnist_ds.shuffle(buffer_size=buffer_size)  # 10000 as in LeNet train script
    mnist_ds = mnist_ds.batch(batch_size, drop_remainder=training)
    mnist_ds = mnist_ds.repeat(repeat_size)
    return mnist_ds


def train_and_eval(mode="graph", epochs=20, batch_size=32, lr=0.01, momentum=0.9,
                   train_size=None, seed=1, verbose=True):
    """The zoo's train.py then eval.py (train_size: the first that many training images);
    returns (test accuracy, seconds of training, the trained network)."""
    mscc.set_context(mode=mscc.GRAPH_MODE if mode == "graph" else mscc.PYNATIVE_MODE)
    mscc.set_seed(seed)
    train_columns, test_columns = digits_as_mnist()
    if train_size is not None:
        train_columns = {k: v[:train_size] for k, v in train_columns.items()}
    ds_train = create_dataset(train_columns, batch_size)
    ds_eval = create_dataset(test_columns, batch_size, training=False)

    network = LeNet5(10)
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), lr, momentum)
    time_cb = TimeMonitor(data_size=ds_train.get_dataset_size())
    model = Model(network, net_loss, net_opt, metrics={"Accuracy": Accuracy()})

    start = time.perf_counter()
    callbacks = [time_cb, LossMonitor(per_print_times=ds_train.get_dataset_size())] \
        if verbose else []
    model.train(epochs, ds_train, callbacks=callbacks, dataset_sink_mode=False)
    seconds = time.perf_counter() - start

    acc = model.eval(ds_eval, dataset_sink_mode=False)
    if verbose:
        print(f"============== {acc} ==============")
    return acc["Accuracy"], seconds, network


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["graph", "pynative"], default="graph")
    ap.add_argument("--epochs", type=int, default=20)
    args = ap.parse_args(argv)
    acc, seconds, _ = train_and_eval(args.mode, args.epochs)
    print(f"{args.mode} mode: LeNet5 test accuracy {acc:.4f} after {args.epochs} epochs "
          f"({seconds:.1f} s of training)")
    return acc


if __name__ == "__main__":
    main()
