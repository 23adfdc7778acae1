"""One rank of the multi-process tests (test_distributed.py launches it with mpirun):

    mpirun -n N python test/python/distributed_worker.py CASE OUTDIR

Every rank knows every rank's inputs (they come from seeds), so each checks its own results
against numpy and raises on a difference (the abort hook then ends the job non-zero, with
the traceback on stderr). Each rank writes OUTDIR/<case>-<rank>.json with what it checked,
and the training case its final weights and the compiled step's IR.
"""
import json
import os
import sys

import numpy as np

import mscc as ms
from mscc import communication, nn, ops
from mscc.communication import get_group_size, get_rank, init
from mscc.dialects import dtypes as dt

RANK, SIZE = 0, 1  # this process's, once main() ran init()
CHECKS = []


def data(rank, shape, dtype, seed=0):
    """Rank `rank`'s input: small values exactly representable in every dtype."""
    rng = np.random.default_rng(seed * 1000 + rank)
    d = dt.as_dtype(dtype)
    if d.is_float:
        return (rng.integers(-8, 9, shape) / 4).astype(d.np)
    if d.is_bool:
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(d.np)
    return rng.integers(max(info.min, -100), min(info.max, 100) + 1, shape).astype(d.np)


def check(name, got, want, exact=False):
    got = got.asnumpy() if isinstance(got, ms.Tensor) else np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, want {want.dtype}"
    assert got.shape == want.shape, f"{name}: shape {got.shape}, want {want.shape}"
    if exact or not np.issubdtype(want.dtype, np.floating):
        assert got.tobytes() == want.tobytes(), f"{name}: {got} != {want} (bitwise)"
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=2e-3 if want.dtype.itemsize <= 2 else 1e-6,
                                   err_msg=name)
    CHECKS.append(name)


def everyone(shape, dtype, seed=0):
    return [data(r, shape, dtype, seed) for r in range(SIZE)]


_NP_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def reduce_ref(xs, op, dtype):
    d = dt.as_dtype(dtype)
    acc = np.float32 if d in dt.HALF_FLOATS else d.np  # MPI reduces half floats in float32
    out = xs[0].astype(acc)
    for x in xs[1:]:
        out = _NP_REDUCE[op](out, x.astype(acc))
    return out.astype(d.np)


def run(fn, *args):
    """fn in both modes: under jit, and op by op (PyNative)."""
    return ms.jit(lambda *a: fn(*a))(*args), fn(*args)


def all_reduce_cases():
    cases = [(d, op) for d in ("float32", "int32") for op in ("sum", "max", "min", "prod")]
    cases += [("float64", "sum"), ("float16", "sum"), ("bfloat16", "max"), ("int64", "sum"),
              ("int8", "min"), ("uint8", "max"), ("uint8", "min"), ("uint16", "sum"),
              ("uint64", "max")]
    for dtype, op in cases:
        if dtype not in [d.name for d in dt.ALL]:
            continue
        xs = everyone((3, 5), dtype)
        want = reduce_ref(xs, op, dtype)
        for mode, got in zip(("jit", "pynative"), run(ops.AllReduce(op), ms.Tensor(xs[RANK]))):
            check(f"AllReduce({op}) {dtype} {mode}", got, want)


def gather_broadcast_cases():
    for dtype in ("float32", "float16", "int64", "uint8", "bool"):
        xs = everyone((2, 3), dtype)
        for mode, got in zip(("jit", "pynative"), run(ops.AllGather(), ms.Tensor(xs[RANK]))):
            check(f"AllGather {dtype} {mode}", got, np.concatenate(xs), exact=True)
        root = SIZE - 1
        for mode, got in zip(("jit", "pynative"),
                             run(lambda t: ops.Broadcast(root)((t,))[0], ms.Tensor(xs[RANK]))):
            check(f"Broadcast({root}) {dtype} {mode}", got, xs[root], exact=True)
    # bit patterns survive: -0.0, NaN with a payload, infinities
    special = np.array([-0.0, np.inf, -np.inf, 1e-45], np.float32)
    special = np.append(special, np.frombuffer(np.uint32(0x7fc01234).tobytes(), np.float32))
    mine = special if RANK == 0 else np.zeros_like(special)
    check("Broadcast(0) special floats", ops.Broadcast(0)(ms.Tensor(mine)), special, exact=True)
    for dtype in ("float32", "int32", "float16"):
        xs = everyone((SIZE * 2, 3), dtype)
        total = reduce_ref(xs, "sum", dtype)
        for mode, got in zip(("jit", "pynative"), run(ops.ReduceScatter(), ms.Tensor(xs[RANK]))):
            check(f"ReduceScatter {dtype} {mode}", got, total[2 * RANK:2 * RANK + 2])
    check("comm_rank", ms.jit(lambda: ms.pyfront.parallel.comm_rank())(), np.int32(RANK))


def grad_of(fn, x, c):
    """d sum(c * fn(x)) / dx on this rank, under jit."""
    def loss(t, w):
        return ops.reduce_sum(ops.mul(fn(t), w))
    return ms.jit(ms.grad(loss))(ms.Tensor(x), ms.Tensor(c))


def gradient_cases():
    """Each rank's loss L_r = sum(c_r * y_r); the job's loss is the sum over ranks, and
    rank r's gradient is d(sum_r L_r)/dx_r."""
    xs = [np.abs(x) + 0.5 for x in everyone((2, 3), "float32", seed=1)]
    cs = everyone((2, 3), "float32", seed=2)
    c_all = sum(cs)
    y = reduce_ref(xs, "sum", "float32")
    check("grad AllReduce(sum)", grad_of(ops.AllReduce(), xs[RANK], cs[RANK]), c_all)
    y = reduce_ref(xs, "max", "float32")
    check("grad AllReduce(max)", grad_of(ops.AllReduce("max"), xs[RANK], cs[RANK]),
          np.where(xs[RANK] == y, c_all, 0).astype(np.float32))
    y = reduce_ref(xs, "prod", "float32")
    check("grad AllReduce(prod)", grad_of(ops.AllReduce("prod"), xs[RANK], cs[RANK]),
          (c_all * y / xs[RANK]).astype(np.float32))
    gathered_c = everyone((2 * SIZE, 3), "float32", seed=3)
    check("grad AllGather", grad_of(ops.AllGather(), xs[RANK], gathered_c[RANK]),
          sum(gathered_c)[2 * RANK:2 * RANK + 2])
    big = everyone((2 * SIZE, 3), "float32", seed=4)
    check("grad ReduceScatter", grad_of(ops.ReduceScatter(), big[RANK], cs[RANK]),
          np.concatenate(cs))
    root = SIZE - 1
    check("grad Broadcast", grad_of(lambda t: ops.Broadcast(root)(t), xs[RANK], cs[RANK]),
          c_all if RANK == root else np.zeros_like(c_all))


def api_cases():
    assert communication.GlobalComm.INITED
    check("get_rank", np.int64(get_rank()), np.int64(RANK))
    assert get_group_size() == SIZE == int(os.environ.get("PMI_SIZE", SIZE))
    samples = np.arange(10 * SIZE + 1)
    mine = communication.shard(samples)
    check("shard", mine, samples[RANK::SIZE][:len(samples) // SIZE])
    xs, ys = communication.shard((samples, -samples))
    check("shard tuple", ys, -xs)


def collectives(outdir):
    api_cases()
    all_reduce_cases()
    gather_broadcast_cases()
    gradient_cases()
    return {"checks": CHECKS}


# ------------------------------------------------------------------ training

BATCH, STEPS = 8, 5


def dataset(size):
    """The training set of a job of `size` processes (BATCH samples per rank and step)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH * STEPS * size, 16)).astype(np.float32)
    y = rng.integers(0, 4, len(x)).astype(np.int32)
    return x, y


def make_model():
    ms.set_seed(0)
    net = nn.SequentialCell([nn.Dense(16, 32, activation="relu"), nn.Dense(32, 4)])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    return net, loss_fn, optimizer


def train(outdir, mode):
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL,
                                 gradients_mean=True)
    net, loss_fn, optimizer = make_model()
    reducer = nn.DistributedGradReducer(optimizer.parameters)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, optimizer.parameters)

    def step(x, y):
        loss, grads = grad_fn(x, y)
        optimizer(reducer(grads))
        return loss

    if mode == "graph":
        step = ms.jit(step)
    x, y = communication.shard(dataset(SIZE))
    for k in range(STEPS):
        batch = slice(k * BATCH, (k + 1) * BATCH)
        step(ms.Tensor(x[batch]), ms.Tensor(y[batch]))
    weights = {p.name: p.asnumpy() for p in net.trainable_params()}
    np.savez(os.path.join(outdir, f"weights-{mode}-{RANK}.npz"), **weights)
    info = {"buckets": len(reducer.buckets)}
    if mode == "graph" and RANK == 0:
        args = (ms.Tensor(x[:BATCH]), ms.Tensor(y[:BATCH]))
        for stage in ("ms-opt", "llvm"):
            info[stage] = step.lower(*args).as_text(stage)
    ms.reset_auto_parallel_context()
    return info


def training(outdir):
    return {mode: train(outdir, mode) for mode in ("graph", "pynative")}


def train_one_step(outdir):
    """MindSpore's TrainOneStepCell(WithLossCell(net, loss), optimizer) in DATA_PARALLEL
    (GRAPH_MODE): no reducer written by hand; the cell adds it, as MindSpore's does."""
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL,
                                 gradients_mean=True)
    net, loss_fn, optimizer = make_model()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    x, y = communication.shard(dataset(SIZE))
    for k in range(STEPS):
        batch = slice(k * BATCH, (k + 1) * BATCH)
        step(ms.Tensor(x[batch]), ms.Tensor(y[batch]))
    weights = {p.name: p.asnumpy() for p in net.trainable_params()}
    np.savez(os.path.join(outdir, f"weights-cell-{RANK}.npz"), **weights)
    ms.reset_auto_parallel_context()
    return {"reducer": type(step.grad_reducer).__name__}


# ------------------------------------------------------------------ failures

def stderr_to_file(case, outdir):
    """This rank's stderr (fd 2, where mscc's abort messages go) into a file: MPI_Abort can
    end the launcher before it forwards the ranks' last lines (seen once in CI under load:
    rc 1, nothing printed), and those lines are what the tests check."""
    stderr = os.open(os.path.join(outdir, f"{case}-stderr-{RANK}.txt"),
                     os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(stderr, 2)


def failing(outdir):
    """Rank 1 raises after two steps; the others go on into the next all-reduce."""
    stderr_to_file("failing", outdir)
    f = ms.jit(lambda t: ops.AllReduce()(t))
    for k in range(1000):
        if RANK == 1 and k == 2:
            raise RuntimeError("rank 1 fails on purpose")
        f(ms.Tensor(np.ones(4, np.float32)))
    return {}


def mismatched(outdir):
    """The ranks all-reduce tensors of different shapes."""
    stderr_to_file("mismatched", outdir)
    ops.AllReduce()(ms.Tensor(np.ones((3 + RANK, 2), np.float32)))  # MISMATCH-LINE
    return {}


CASES = {"collectives": collectives, "training": training, "failing": failing,
         "mismatched": mismatched, "train_one_step": train_one_step}

if __name__ == "__main__":
    init()
    RANK, SIZE = get_rank(), get_group_size()
    case, outdir = sys.argv[1], sys.argv[2]
    result = CASES[case](outdir)
    result.update(rank=RANK, size=SIZE)
    with open(os.path.join(outdir, f"{case}-{RANK}.json"), "w") as f:
        json.dump(result, f)
