"""MindSpore's training API (Model, callbacks, metrics), the dataset pipeline and
examples/quick_start.py, in both modes."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mscc as ms
from mscc import nn
from mscc.dataset import GeneratorDataset, NumpySlicesDataset, config, transforms, vision
from mscc.train import MAE, MSE, Accuracy, Callback, LossMonitor, Loss, Model, TimeMonitor

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "quick_start.py")


def blobs(n, seed, classes=3, dim=4):
    """Separable classes: each a Gaussian blob around its own centre."""
    centres = np.random.default_rng(99).normal(0, 3, (classes, dim))
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    x = centres[y] + rng.normal(0, 0.5, (n, dim))
    return x.astype(np.float32), y.astype(np.int32)


class Recorder(Callback):
    def __init__(self):
        self.events = []

    def _hook(name):
        def hook(self, run_context):
            cb = run_context.original_args()
            self.events.append((name, cb.cur_epoch_num, cb.cur_step_num))
        return hook

    for _name in ("on_train_begin", "on_train_epoch_begin", "on_train_step_begin",
                  "on_train_step_end", "on_train_epoch_end", "on_train_end"):
        locals()[_name] = _hook(_name)


def test_model_trains_evaluates_and_calls_back_in_order(mode, capsys):
    ms.set_seed(1)
    x, y = blobs(96, 0)
    train = NumpySlicesDataset((x, y), column_names=["data", "label"]).batch(32)
    net = nn.SequentialCell([nn.Dense(4, 16, activation="relu"), nn.Dense(16, 3)])
    model = Model(net, nn.CrossEntropyLoss(), nn.Adam(net.trainable_params(), 0.05),
                  metrics={"acc", "loss"})
    rec = Recorder()
    model.train(4, train, callbacks=[rec, LossMonitor(per_print_times=3), TimeMonitor()],
                dataset_sink_mode=True)
    names = [e[0] for e in rec.events]
    assert names[0] == "on_train_begin" and names[-1] == "on_train_end"
    assert names[1:6] == ["on_train_epoch_begin", "on_train_step_begin", "on_train_step_end",
                          "on_train_step_begin", "on_train_step_end"]
    steps = [e for e in rec.events if e[0] == "on_train_step_end"]
    assert [s[1:] for s in steps] == [(e, 3 * (e - 1) + k) for e in range(1, 5) for k in (1, 2, 3)]
    out = capsys.readouterr().out
    assert out.count("loss is") == 4 and "epoch: 1 step: 3, loss is" in out
    assert out.count("epoch time:") == 4 and "per step time:" in out
    tx, ty = blobs(60, 1)
    result = model.eval(NumpySlicesDataset({"data": tx, "label": ty}, shuffle=False).batch(20))
    assert set(result) == {"acc", "loss"} and result["acc"] > 0.95 and result["loss"] < 0.3
    pred = model.predict(ms.Tensor(tx))
    assert pred.shape == (60, 3)
    assert (pred.asnumpy().argmax(1) == ty).mean() == pytest.approx(result["acc"])


def test_model_train_step_is_one_executable_in_graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        x, y = blobs(40, 2)
        net = nn.Dense(4, 3)
        model = Model(net, nn.CrossEntropyLoss(), nn.SGD(net.trainable_params(), 0.1))
        model.train(2, NumpySlicesDataset((x, y)).batch(10, drop_remainder=True))
        step = model.train_network
        assert isinstance(step, nn.TrainOneStepCell)
        assert step._graph_fn.cache_info()["compiles"] == 1  # 8 steps, one compile
        text = step._graph_fn.lower(step._static_state(), ms.Tensor(x[:10]),
                                    ms.Tensor(y[:10])).as_text("ms-opt")
        assert text.count("func.func") == 1 and '"ms.assign"' in text
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_train_one_step_cell_matches_the_functional_loop(mode):
    x, y = blobs(16, 3)
    results = []
    for use_cell in (True, False):
        ms.set_seed(4)
        net = nn.Dense(4, 3, dtype=ms.float64)
        loss_fn = nn.CrossEntropyLoss()
        opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
        if use_cell:
            step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt, sens=2.0)
        else:
            grad_fn = ms.value_and_grad(lambda a, b: loss_fn(net(a), b), None, opt.parameters)

            def step(a, b):
                loss, grads = grad_fn(a, b)
                opt(tuple(g * 2.0 for g in grads))
                return loss
        losses = [float(step(ms.Tensor(x.astype(np.float64)), ms.Tensor(y)).asnumpy())
                  for _ in range(3)]
        results.append((losses, net.weight.asnumpy().copy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_request_stop_and_model_errors():
    class StopAfter2(Callback):
        def on_train_step_end(self, run_context):
            if run_context.original_args().cur_step_num == 2:
                run_context.request_stop()

    x, y = blobs(40, 4)
    net = nn.Dense(4, 3)
    rec = Recorder()
    model = Model(net, nn.CrossEntropyLoss(), nn.SGD(net.trainable_params(), 0.1))
    model.train(3, NumpySlicesDataset((x, y)).batch(10), callbacks=[StopAfter2(), rec])
    assert sum(e[0] == "on_train_step_end" for e in rec.events) == 2
    with pytest.raises(ValueError, match="'metrics' can not be None"):
        model.eval(NumpySlicesDataset((x, y)).batch(10))
    with pytest.raises(KeyError, match="unknown metric"):
        Model(net, nn.CrossEntropyLoss(), nn.SGD(net.trainable_params(), 0.1), metrics={"f1"})
    with pytest.raises(ValueError, match="per_print_times"):
        LossMonitor(-1)

    class Diverge(nn.Cell):
        def construct(self, a, b):
            return ms.ops.log(ms.ops.zeros_like(ms.ops.reduce_sum(a))) * 0.0
    with pytest.raises(ValueError, match="Invalid loss"):
        Model(Diverge()).train(1, NumpySlicesDataset((x, y)).batch(10), callbacks=LossMonitor())


def test_metrics_match_numpy():
    logits = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    labels = np.array([1, 0, 0, 1])
    acc = Accuracy()
    acc.update(ms.Tensor(logits[:2]), ms.Tensor(labels[:2]))
    acc.update(logits[2:], np.eye(3)[labels[2:]])  # one-hot labels too
    assert acc.eval() == 0.5
    acc.clear()
    with pytest.raises(RuntimeError, match="number of samples is 0"):
        acc.eval()
    pred, true = np.array([[1.0, 2.0], [3.0, 5.0]]), np.array([[1.5, 2.0], [2.0, 3.0]])
    for metric, want in ((MAE(), (0.5 + 1 + 2) / 2), (MSE(), (0.25 + 1 + 4) / 2)):
        metric.update(ms.Tensor(pred), ms.Tensor(true))
        assert metric.eval() == pytest.approx(want)  # summed error / number of samples
    loss = Loss()
    for v in (1.0, 2.0, 6.0):
        loss.update(ms.Tensor(np.array(v)))
    assert loss.eval() == 3.0


# ------------------------------------------------------------------ datasets
def _rows(ds, **kw):
    return [tuple(np.asarray(c).tolist() for c in row)
            for row in ds.create_tuple_iterator(output_numpy=True, **kw)]


def test_numpy_slices_batching_and_columns():
    data = {"a": np.arange(10), "b": np.arange(10) * 10.0}
    ds = NumpySlicesDataset(data, shuffle=False)
    assert ds.get_col_names() == ["a", "b"] and ds.get_dataset_size() == 10
    batched = ds.batch(4)
    assert batched.get_dataset_size() == 3 and batched.get_batch_size() == 4
    rows = _rows(batched)
    assert rows[0] == ([0, 1, 2, 3], [0.0, 10.0, 20.0, 30.0]) and rows[2] == ([8, 9], [80.0, 90.0])
    assert ds.batch(4, drop_remainder=True).get_dataset_size() == 2
    assert len(_rows(ds.batch(4, drop_remainder=True))) == 2
    first = next(iter(ds.create_dict_iterator()))
    assert set(first) == {"a", "b"} and isinstance(first["a"], ms.Tensor)
    assert NumpySlicesDataset([1, 2, 3]).get_col_names() == ["column_0"]
    assert NumpySlicesDataset((np.ones(3), np.zeros(3))).get_col_names() == ["column_0",
                                                                            "column_1"]
    with pytest.raises(ValueError, match="same first dimension"):
        NumpySlicesDataset((np.ones(3), np.zeros(4)))
    with pytest.raises(NotImplementedError, match="sampler"):
        NumpySlicesDataset([1, 2], sampler=object())


def test_numpy_slices_shards_as_mindsporess_distributed_sampler():
    """num_shards/shard_id: rows shard_id, shard_id + n, ... of the (shuffled) order, padded
    from its start so every shard has ceil(N / n) rows; every shard shuffles alike."""
    x = np.arange(10)
    shards = [NumpySlicesDataset(x, num_shards=3, shard_id=r, shuffle=False) for r in range(3)]
    rows = [[int(r[0]) for r in _rows(s)] for s in shards]
    assert rows == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    assert [s.get_dataset_size() for s in shards] == [4, 4, 4]
    config.set_seed(7)
    mixed = [[int(r[0]) for r in _rows(NumpySlicesDataset(x, num_shards=2, shard_id=k))]
             for k in range(2)]
    assert sorted(mixed[0] + mixed[1]) == list(range(10)) and mixed[0] != [0, 2, 4, 6, 8]
    assert len(_rows(NumpySlicesDataset(x, num_shards=3, shard_id=0).batch(2))) == 2
    with pytest.raises(RuntimeError, match="passed in together"):
        NumpySlicesDataset(x, num_shards=2)
    with pytest.raises(ValueError, match="shard_id 2 must be in"):
        NumpySlicesDataset(x, num_shards=2, shard_id=2)


def test_shuffle_is_seeded_and_differs_per_epoch():
    def order(seed, epochs=2):
        config.set_seed(seed)
        it = NumpySlicesDataset(np.arange(20)).create_tuple_iterator(output_numpy=True)
        return [[int(r[0]) for r in it] for _ in range(epochs)]
    try:
        a, b = order(5), order(5)
        assert a == b and a[0] != a[1] and sorted(a[0]) == list(range(20))
        assert order(6)[0] != a[0]
        config.set_seed(5)
        buffered = NumpySlicesDataset(np.arange(20), shuffle=False).shuffle(4)
        got = [int(r[0]) for r in buffered.create_tuple_iterator(output_numpy=True)]
        assert sorted(got) == list(range(20)) and got != list(range(20))
        # a buffer of 4 moves no element earlier than 3 places ahead of its turn
        assert all(v <= i + 3 for i, v in enumerate(got))
        with pytest.raises(ValueError, match="buffer_size"):
            buffered.shuffle(1)
    finally:
        config._seed = None


def test_map_generator_and_transforms():
    def gen():
        for i in range(5):
            yield np.full((2, 2, 1), i * 51, np.uint8), np.array(i, np.uint32)
    ds = GeneratorDataset(gen, column_names=["image", "label"])
    ds = ds.map([vision.Rescale(1 / 255.0, 0), vision.Normalize((0.5,), (0.25,)),
                 vision.HWC2CHW()], "image")
    ds = ds.map(transforms.TypeCast(ms.int32), input_columns="label")
    image, label = next(iter(ds.batch(5).create_tuple_iterator()))
    assert image.shape == (5, 1, 2, 2) and image.dtype is ms.float32
    assert label.dtype is ms.int32 and label.asnumpy().tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(image.asnumpy()[:, 0, 0, 0], (np.arange(5) * 0.2 - 0.5) / 0.25,
                               rtol=1e-6)
    pairs = NumpySlicesDataset({"x": np.arange(4)}, shuffle=False).map(
        lambda v: (v, v * v), "x", output_columns=["x", "x2"])
    assert pairs.get_col_names() == ["x", "x2"] and _rows(pairs)[3] == (3, 9)

    class Source:
        def __getitem__(self, i):
            return np.array(i),

        def __len__(self):
            return 6
    assert sorted(r[0] for r in _rows(GeneratorDataset(Source(), ["v"]))) == list(range(6))
    assert [r[0] for r in _rows(GeneratorDataset(Source(), ["v"], shuffle=False))] == \
        list(range(6))
    with pytest.raises(ValueError, match="random-accessible"):
        GeneratorDataset(gen, ["image", "label"], shuffle=True)
    with pytest.raises(RuntimeError, match="output_columns"):
        _rows(NumpySlicesDataset({"x": np.arange(2)}).map(lambda v: (v, v), "x"))
    with pytest.raises(RuntimeError, match="inconsistent shapes"):
        _rows(GeneratorDataset(lambda: iter([np.ones(2), np.ones(3)]), ["v"]).batch(2))


def test_dataset_epochs_through_one_iterator():
    ds = NumpySlicesDataset(np.arange(3), shuffle=False)
    it = ds.create_tuple_iterator(num_epochs=2, output_numpy=True)
    assert [[int(r[0]) for r in it] for _ in range(3)] == [[0, 1, 2], [0, 1, 2], []]
    assert ds.repeat(2).get_dataset_size() == 6 and len(_rows(ds.repeat(2))) == 6


@pytest.mark.parametrize("mode_name", ["graph", "pynative"])
def test_quick_start_example_runs(mode_name):
    out = subprocess.run([sys.executable, EXAMPLE, "--mode", mode_name], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "MSCC_CACHE_DIR": ""})
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    functional = float(last.split("functional loop accuracy ")[1].split(",")[0])
    high_level = float(last.split("Model accuracy ")[1].split(" ")[0])
    assert functional > 0.9 and high_level > 0.9, out.stdout
    assert "Model.eval: {'accuracy':" in out.stdout and "loss is" in out.stdout


def test_mindspores_dataset_submodule_import_lines():
    import mscc.dataset.transforms as transforms
    import mscc.dataset.vision as vision
    from mscc.dataset import vision as same_vision
    from mscc.dataset.vision import HWC2CHW
    assert vision is same_vision and HWC2CHW is vision.HWC2CHW
    image = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    pipeline = transforms.Compose([vision.Rescale(0.5, 1.0), HWC2CHW()])
    np.testing.assert_array_equal(pipeline(image), (image * 0.5 + 1.0).transpose(2, 0, 1))
