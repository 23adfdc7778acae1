"""MindSpore's quick-start tutorial (docs: "Quick Start": a Dense network on 28x28 MNIST
images) with `mindspore` renamed to `mscc`, on synthetic MNIST-shaped data instead of the
download: each class is a noisy copy of its own random 28x28 pattern, so the accuracy means
something. Both the functional loop (value_and_grad, the tutorial's train/test) and the
`Model` API (Model.train with LossMonitor, Model.eval with Accuracy) run, in either mode:

    python examples/quick_start.py --mode graph       # or --mode pynative
"""
import argparse
import time

import numpy as np

import mscc
from mscc import nn
from mscc.dataset import NumpySlicesDataset, transforms, vision
from mscc.train import Accuracy, LossMonitor, Model


def synthetic_mnist(n, seed):
    """n (28, 28, 1) uint8 images and int labels: class pattern + noise, as MnistDataset
    would give them (HWC, uint8)."""
    rng = np.random.default_rng(1234)  # the class patterns: the same for train and test
    patterns = rng.uniform(0, 255, (10, 28, 28, 1))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    images = 0.35 * patterns[labels] + rng.uniform(0, 165, (n, 28, 28, 1))
    return {"image": images.astype(np.uint8), "label": labels.astype(np.uint32)}


def datapipe(dataset, batch_size):
    image_transforms = [
        vision.Rescale(1.0 / 255.0, 0),
        vision.Normalize(mean=(0.1307,), std=(0.3081,)),
        vision.HWC2CHW()
    ]
    label_transform = transforms.TypeCast(mscc.int32)

    dataset = dataset.map(image_transforms, 'image')
    dataset = dataset.map(label_transform, 'label')
    dataset = dataset.batch(batch_size)
    return dataset


class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(28*28, 512),
            nn.ReLU(),
            nn.Dense(512, 512),
            nn.ReLU(),
            nn.Dense(512, 10)
        )

    def construct(self, x):
        x = self.flatten(x)
        logits = self.dense_relu_sequential(x)
        return logits


def functional_loop(train_dataset, test_dataset, epochs):
    model = Network()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.SGD(model.trainable_params(), 1e-2)

    def forward_fn(data, label):
        logits = model(data)
        loss = loss_fn(logits, label)
        return loss, logits

    grad_fn = mscc.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)

    def train_step(data, label):
        (loss, _), grads = grad_fn(data, label)
        optimizer(grads)
        return loss

    if mscc.get_context("mode") == mscc.GRAPH_MODE:
        train_step = mscc.jit(train_step)  # the whole step: one executable

    def train(model, dataset):
        size = dataset.get_dataset_size()
        model.set_train()
        for batch, (data, label) in enumerate(dataset.create_tuple_iterator()):
            loss = train_step(data, label)

            if batch % 10 == 0:
                loss, current = loss.asnumpy(), batch
                print(f"loss: {loss:>7f}  [{current:>3d}/{size:>3d}]")

    def test(model, dataset, loss_fn):
        num_batches = dataset.get_dataset_size()
        model.set_train(False)
        total, test_loss, correct = 0, 0, 0
        for data, label in dataset.create_tuple_iterator():
            pred = model(data)
            total += len(data)
            test_loss += loss_fn(pred, label).asnumpy()
            correct += (pred.argmax(1) == label).asnumpy().sum()
        test_loss /= num_batches
        correct /= total
        print(f"Test: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
        return correct

    for t in range(epochs):
        print(f"Epoch {t+1}\n-------------------------------")
        train(model, train_dataset)
        accuracy = test(model, test_dataset, loss_fn)
    print("Done!")
    return accuracy


def model_api(train_dataset, test_dataset, epochs):
    net = Network()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=1e-2, momentum=0.9)
    model = Model(net, loss_fn=loss_fn, optimizer=optimizer, metrics={"accuracy": Accuracy()})
    model.train(epochs, train_dataset, callbacks=[LossMonitor(per_print_times=10)],
                dataset_sink_mode=False)
    result = model.eval(test_dataset)
    print(f"Model.eval: {result}")
    return result["accuracy"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["graph", "pynative"], default="graph")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--train-size", type=int, default=1280)
    args = ap.parse_args(argv)
    mscc.set_context(mode=mscc.GRAPH_MODE if args.mode == "graph" else mscc.PYNATIVE_MODE)
    mscc.set_seed(0)
    start = time.perf_counter()
    train_dataset = datapipe(NumpySlicesDataset(synthetic_mnist(args.train_size, 1)), 64)
    test_dataset = datapipe(NumpySlicesDataset(synthetic_mnist(320, 2), shuffle=False), 64)
    functional = functional_loop(train_dataset, test_dataset, args.epochs)
    high_level = model_api(train_dataset, test_dataset, args.epochs)
    print(f"{args.mode} mode: functional loop accuracy {functional:.3f}, Model accuracy "
          f"{high_level:.3f} ({time.perf_counter() - start:.1f} s)")
    return functional, high_level


if __name__ == "__main__":
    main()
