"""ms.train: MindSpore's high-level training API on mscc.

`Model(network, loss_fn=None, optimizer=None, metrics=None, eval_network=None,
eval_indexes=None)` builds the training step as MindSpore does (WithLossCell, then
TrainOneStepCell: value_and_grad and the optimizer, in GRAPH_MODE one compiled executable);
`train(epoch, train_dataset, callbacks=None, dataset_sink_mode=False)` runs it over the
dataset's batches, calling the callbacks' hooks; `eval(valid_dataset)` returns
{metric name: value}; `predict(*data)` runs the network in inference mode.

dataset_sink_mode=True is accepted and behaves as False: mscc has no device-side data
queue, so the batches always come from the host, one compiled step call each (the
callbacks see every step, where MindSpore's sink mode reports once per sink).
"""
from __future__ import annotations

import math
import time

import numpy as np

from . import nn
from .tensor import Tensor

# ------------------------------------------------------------------ metrics


def _np(x):
    return x.asnumpy() if isinstance(x, Tensor) else np.asarray(x)


class Metric:
    """clear(), update(*inputs), eval(): MindSpore's metric protocol."""

    def __init__(self):
        self.clear()

    def clear(self):
        raise NotImplementedError

    def update(self, *inputs):
        raise NotImplementedError

    def eval(self):
        raise NotImplementedError


class Accuracy(Metric):
    """The fraction of samples whose largest logit is the label (an index, or one-hot)."""

    def __init__(self, eval_type="classification"):
        if eval_type not in ("classification", "multilabel"):
            raise ValueError(f"For 'Accuracy', eval_type must be 'classification' or "
                             f"'multilabel', got {eval_type!r}")
        self.eval_type = eval_type
        super().__init__()

    def clear(self):
        self._correct, self._total = 0, 0

    def update(self, *inputs):
        if len(inputs) != 2:
            raise ValueError(f"For 'Accuracy.update', it needs 2 inputs (predicted value, "
                             f"true value), but got {len(inputs)}.")
        y_pred, y = _np(inputs[0]), _np(inputs[1])
        if self.eval_type == "multilabel":
            hit = np.all(np.round(y_pred) == y, axis=tuple(range(1, y.ndim)))
        else:
            if y.ndim == y_pred.ndim:  # one-hot labels
                y = y.argmax(-1)
            hit = y_pred.argmax(-1) == y.reshape(y_pred.shape[:-1])
        self._correct += int(hit.sum())
        self._total += hit.size

    def eval(self):
        if self._total == 0:
            raise RuntimeError("The 'Accuracy' can not be calculated, because the number of "
                               "samples is 0, please check whether your inputs(predicted "
                               "value, true value) are empty, or has called update method "
                               "before calling eval method.")
        return self._correct / self._total


class Loss(Metric):
    """The mean of the losses given to update."""

    def clear(self):
        self._sum, self._count = 0.0, 0

    def update(self, *inputs):
        if len(inputs) != 1:
            raise ValueError(f"For 'Loss.update', it needs 1 input (loss), but got "
                             f"{len(inputs)}")
        loss = _np(inputs[0])
        if loss.ndim > 1 or (loss.ndim == 1 and loss.size != 1):
            raise ValueError(f"For 'Loss.update', the loss must be a scalar, got shape "
                             f"{loss.shape}")
        self._sum += float(loss.reshape(()))
        self._count += 1

    def eval(self):
        if self._count == 0:
            raise RuntimeError("The 'Loss' can not be calculated, because the number of "
                               "samples is 0.")
        return self._sum / self._count


class _ErrorMetric(Metric):
    """The summed (per-element) error over every update, divided by the number of samples
    (the first dimension), as MindSpore's MAE and MSE."""

    def clear(self):
        self._sum, self._samples = 0.0, 0

    def update(self, *inputs):
        if len(inputs) != 2:
            raise ValueError(f"For '{type(self).__name__}.update', it needs 2 inputs "
                             f"(predicted value, true value), but got {len(inputs)}.")
        y_pred, y = _np(inputs[0]).astype(np.float64), _np(inputs[1]).astype(np.float64)
        self._sum += float(self._error(y.reshape(y_pred.shape) - y_pred).sum())
        self._samples += y.shape[0] if y.ndim else 1

    def eval(self):
        if self._samples == 0:
            raise RuntimeError(f"The '{type(self).__name__}' can not be calculated, because "
                               "the number of samples is 0.")
        return self._sum / self._samples


class MAE(_ErrorMetric):
    _error = staticmethod(np.abs)


class MSE(_ErrorMetric):
    _error = staticmethod(np.square)


_METRICS = {"acc": Accuracy, "accuracy": Accuracy, "loss": Loss, "mae": MAE, "mse": MSE}


def _metrics(metrics):
    """{name: Metric} from a set/list of names, a dict of Metrics, or None."""
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        bad = [k for k, v in metrics.items() if not isinstance(v, Metric)]
        if bad:
            raise TypeError(f"metrics {bad} are not Metric instances")
        return dict(metrics)
    if isinstance(metrics, str) or not hasattr(metrics, "__iter__"):
        raise TypeError(f"metrics must be a set or list of names or a dict of Metrics, got "
                        f"{type(metrics).__name__}")
    out = {}
    for name in metrics:
        if name not in _METRICS:
            raise KeyError(f"unknown metric {name!r}; use one of {', '.join(_METRICS)}, or a "
                           "dict of Metric instances")
        out[name] = _METRICS[name]()
    return out


# ------------------------------------------------------------------ callbacks


class CallbackParams(dict):
    """cb_params: a dict whose keys are also attributes (cur_epoch_num, cur_step_num,
    batch_num, epoch_num, net_outputs, train_network, optimizer, ...)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


class RunContext:
    def __init__(self, original_args):
        self._original_args = original_args
        self._stop_requested = False

    def original_args(self):
        return self._original_args

    def request_stop(self):
        self._stop_requested = True

    def get_stop_requested(self):
        return self._stop_requested


class Callback:
    """MindSpore's hooks; the on_train_* hooks call the older names (begin, epoch_begin,
    step_begin, step_end, epoch_end, end) by default, as MindSpore's do."""

    def begin(self, run_context): pass
    def epoch_begin(self, run_context): pass
    def epoch_end(self, run_context): pass
    def step_begin(self, run_context): pass
    def step_end(self, run_context): pass
    def end(self, run_context): pass

    def on_train_begin(self, run_context): self.begin(run_context)
    def on_train_epoch_begin(self, run_context): self.epoch_begin(run_context)
    def on_train_epoch_end(self, run_context): self.epoch_end(run_context)
    def on_train_step_begin(self, run_context): self.step_begin(run_context)
    def on_train_step_end(self, run_context): self.step_end(run_context)
    def on_train_end(self, run_context): self.end(run_context)

    def on_eval_begin(self, run_context): pass
    def on_eval_epoch_begin(self, run_context): pass
    def on_eval_epoch_end(self, run_context): pass
    def on_eval_step_begin(self, run_context): pass
    def on_eval_step_end(self, run_context): pass
    def on_eval_end(self, run_context): pass

    def __enter__(self):
        return self

    def __exit__(self, *err):
        return None


def _loss_value(outputs):
    """The loss among a step's outputs (a Tensor, or the first Tensor of a tuple)."""
    if isinstance(outputs, (tuple, list)) and outputs:
        outputs = outputs[0]
    if isinstance(outputs, Tensor):
        return float(np.mean(outputs.asnumpy()))
    return float(outputs) if isinstance(outputs, (int, float)) else None


class LossMonitor(Callback):
    """Prints "epoch: E step: S, loss is L" every per_print_times steps (0: never); a NaN or
    infinite loss stops training with a ValueError, as MindSpore's."""

    def __init__(self, per_print_times=1):
        if isinstance(per_print_times, bool) or not isinstance(per_print_times, int) \
                or per_print_times < 0:
            raise ValueError(f"The argument 'per_print_times' must be int and >= 0, but got "
                             f"{per_print_times!r}")
        self._per_print_times = per_print_times

    def on_train_step_end(self, run_context):
        cb = run_context.original_args()
        loss = _loss_value(cb.net_outputs)
        step = (cb.cur_step_num - 1) % cb.batch_num + 1
        if loss is not None and (math.isnan(loss) or math.isinf(loss)):
            raise ValueError(f"epoch: {cb.cur_epoch_num} step: {step}. Invalid loss, "
                             "terminating training.")
        if self._per_print_times and cb.cur_step_num % self._per_print_times == 0:
            print(f"epoch: {cb.cur_epoch_num} step: {step}, loss is {loss}", flush=True)


class TimeMonitor(Callback):
    """Prints each epoch's time and the time per step."""

    def __init__(self, data_size=None):
        if data_size is not None and (not isinstance(data_size, int) or data_size < 1):
            raise ValueError(f"data_size must be a positive int or None, got {data_size!r}")
        self.data_size = data_size
        self._start = None

    def on_train_epoch_begin(self, run_context):
        self._start = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        ms_ = (time.perf_counter() - self._start) * 1000
        steps = self.data_size or run_context.original_args().batch_num
        print(f"epoch time: {ms_:5.3f} ms, per step time: {ms_ / steps:5.3f} ms", flush=True)


class LambdaCallback(Callback):
    """Callback hooks given as functions (on_train_step_end=fn, ...)."""

    def __init__(self, **hooks):
        for name, fn in hooks.items():
            if not name.startswith("on_") or not hasattr(Callback, name):
                raise ValueError(f"LambdaCallback: unknown hook {name!r}")
            setattr(self, name, fn)


def _callbacks(callbacks):
    if callbacks is None:
        return []
    items = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    bad = [type(c).__name__ for c in items if not isinstance(c, Callback)]
    if bad:
        raise TypeError(f"callbacks must be Callback instances, got {bad}")
    return items


def _call(callbacks, hook, context):
    for cb in callbacks:
        getattr(cb, hook)(context)


# ------------------------------------------------------------------ Model


class Model:
    def __init__(self, network, loss_fn=None, optimizer=None, metrics=None, eval_network=None,
                 eval_indexes=None, amp_level="O0", boost_level="O0", **kwargs):
        if kwargs:
            raise TypeError(f"Model got arguments mscc does not support: {sorted(kwargs)}")
        if boost_level != "O0":
            raise ValueError(f"Model: boost_level={boost_level!r} is not supported by mscc")
        if not isinstance(network, nn.Cell):
            raise TypeError(f"Model's network must be a Cell, got {type(network).__name__}")
        if optimizer is not None and not isinstance(optimizer, nn.Optimizer):
            raise TypeError(f"Model's optimizer must be an nn.Optimizer, got "
                            f"{type(optimizer).__name__}")
        if eval_indexes is not None and (len(eval_indexes) != 3 or eval_network is None):
            raise ValueError("eval_indexes must be 3 indexes (loss, outputs, label), and "
                             "needs eval_network")
        if amp_level != "O0":
            from . import amp
            network = amp.auto_mixed_precision(network, amp_level)
        self._network, self._loss_fn, self._optimizer = network, loss_fn, optimizer
        self._metric_fns = _metrics(metrics)
        self._eval_network, self._eval_indexes = eval_network, eval_indexes
        if eval_network is None and loss_fn is not None:
            self._eval_network = nn.WithEvalCell(network, loss_fn, amp_level != "O0")
            self._eval_indexes = (0, 1, 2)
        self._train_network = self._build_train_network()

    def _build_train_network(self):
        """WithLossCell + TrainOneStepCell, as MindSpore's Model; without an optimizer the
        network is trained as given (it must perform its own update and return the loss)."""
        if self._optimizer is None:
            if self._loss_fn is not None:
                raise ValueError("Model: a loss_fn needs an optimizer to train with")
            return self._network
        net = self._network
        if self._loss_fn is not None:
            net = nn.WithLossCell(net, self._loss_fn)
        return nn.TrainOneStepCell(net, self._optimizer)

    @property
    def train_network(self):
        return self._train_network

    @property
    def predict_network(self):
        return self._network

    @property
    def eval_network(self):
        return self._eval_network

    def _params(self, epoch, dataset, callbacks, mode, sink):
        return CallbackParams(
            train_network=self._train_network, network=self._network, epoch_num=epoch,
            batch_num=dataset.get_dataset_size(), cur_epoch_num=0, cur_step_num=0,
            net_outputs=None, optimizer=self._optimizer, loss_fn=self._loss_fn,
            train_dataset=dataset if mode == "train" else None,
            valid_dataset=dataset if mode == "eval" else None, dataset_sink_mode=sink,
            mode=mode, list_callback=callbacks)

    def train(self, epoch, train_dataset, callbacks=None, dataset_sink_mode=False,
              sink_size=-1, initial_epoch=0):
        """Train for `epoch` epochs (from initial_epoch) over train_dataset's batches."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise ValueError(f"For 'Model.train', 'epoch' must be a positive int, got {epoch!r}")
        if not 0 <= initial_epoch < epoch:
            raise ValueError(f"For 'Model.train', 'initial_epoch' must be in [0, {epoch}), got "
                             f"{initial_epoch}")
        if sink_size != -1:
            raise ValueError("For 'Model.train', sink_size is only -1 in mscc (no data sink)")
        cbs = _callbacks(callbacks)
        cb = self._params(epoch, train_dataset, cbs, "train", bool(dataset_sink_mode))
        context = RunContext(cb)
        iterator = train_dataset.create_tuple_iterator(num_epochs=epoch - initial_epoch)
        self._train_network.set_train()
        _call(cbs, "on_train_begin", context)
        for e in range(initial_epoch, epoch):
            cb.cur_epoch_num = e + 1
            _call(cbs, "on_train_epoch_begin", context)
            for data in iterator:
                cb.cur_step_num += 1
                _call(cbs, "on_train_step_begin", context)
                cb.net_outputs = self._train_network(*data)
                _call(cbs, "on_train_step_end", context)
                if context.get_stop_requested():
                    break
            _call(cbs, "on_train_epoch_end", context)
            if context.get_stop_requested():
                break
        _call(cbs, "on_train_end", context)
        self._network.set_train(False)

    def _update_metrics(self, outputs):
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        for metric in self._metric_fns.values():
            if self._eval_indexes is None:
                metric.update(*outputs)
            elif isinstance(metric, Loss):
                metric.update(outputs[self._eval_indexes[0]])
            else:
                metric.update(outputs[self._eval_indexes[1]], outputs[self._eval_indexes[2]])

    def eval(self, valid_dataset, callbacks=None, dataset_sink_mode=False):
        """{name: value} of the metrics over valid_dataset, the network in inference mode."""
        if not self._metric_fns:
            raise ValueError("For Model.eval, the model argument 'metrics' can not be None or "
                             "empty, you should set the argument 'metrics' for model.")
        if self._eval_network is None:
            raise ValueError("For Model.eval, a loss_fn or an eval_network is needed to "
                             "evaluate the metrics")
        cbs = _callbacks(callbacks)
        cb = self._params(1, valid_dataset, cbs, "eval", bool(dataset_sink_mode))
        context = RunContext(cb)
        for metric in self._metric_fns.values():
            metric.clear()
        self._eval_network.set_train(False)
        _call(cbs, "on_eval_begin", context)
        _call(cbs, "on_eval_epoch_begin", context)
        for data in valid_dataset.create_tuple_iterator(num_epochs=1):
            cb.cur_step_num += 1
            _call(cbs, "on_eval_step_begin", context)
            cb.net_outputs = self._eval_network(*data)
            self._update_metrics(cb.net_outputs)
            _call(cbs, "on_eval_step_end", context)
        _call(cbs, "on_eval_epoch_end", context)
        cb.metrics = {name: m.eval() for name, m in self._metric_fns.items()}
        _call(cbs, "on_eval_end", context)
        return cb.metrics

    def predict(self, *predict_data):
        self._network.set_train(False)
        data = [d if isinstance(d, Tensor) else Tensor(d) for d in predict_data]
        return self._network(*data)


__all__ = ["Model", "Callback", "RunContext", "LossMonitor", "TimeMonitor", "LambdaCallback",
           "Metric", "Accuracy", "Loss", "MAE", "MSE"]
