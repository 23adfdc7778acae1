"""Data parallel on MPI (issue 20): the collectives per rank against numpy, k data-parallel
training steps (the same weights bitwise on every rank, and those of one process training on
the concatenated batch), the all-reduce in the compiled step's IR, a failing rank and
mismatched shapes ending the job. The multi-process tests launch distributed_worker.py with
the mpiexec of the `mpich` wheel (pip install 'mscc[distributed]') and skip without one."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import mscc as ms
from mscc import communication, nn
from mscc.dialects import dtypes as dt
from mscc.pyfront import parallel
from mstest import op, spec

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "distributed_worker.py")
_BIN = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
MPIEXEC = shutil.which("mpiexec", path=_BIN)
HAVE_MPI = MPIEXEC is not None and importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="no MPI: pip install 'mscc[distributed]'")
LAUNCH_TIMEOUT = 600  # seconds; 3 processes compiling on 2 cores take ~20 s here


def launch(case, n, outdir, launcher=True):
    """Run the worker's `case` on n processes (n=1 without a launcher: an MPI singleton);
    (return code, stdout + stderr, seconds)."""
    cmd = [sys.executable, WORKER, case, str(outdir)]
    if launcher:
        cmd = [MPIEXEC, "-n", str(n)] + cmd
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT,
                       env={**os.environ, "PATH": _BIN})
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


def results(case, n, outdir):
    out = []
    for r in range(n):
        with open(os.path.join(outdir, f"{case}-{r}.json")) as f:
            out.append(json.load(f))
    return out


def ranks_stderr(case, n, outdir):
    """What the ranks of a case that aborts printed to stderr (the worker writes it to files:
    MPI_Abort may end mpiexec before it forwards them)."""
    paths = [os.path.join(outdir, f"{case}-stderr-{r}.txt") for r in range(n)]
    return "".join(open(p).read() for p in paths if os.path.exists(p))


def worker_module():
    spec_ = importlib.util.spec_from_file_location("distributed_worker", WORKER)
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)  # (it runs init() only as a script)
    return module


# ------------------------------------------------------------------ multi-process

@needs_mpi
@pytest.mark.parametrize("n", [1, 2, 3])
def test_collectives_match_numpy_on_every_rank(n, tmp_path):
    rc, out, _ = launch("collectives", n, tmp_path, launcher=n > 1)
    assert rc == 0, out
    per_rank = results("collectives", n, tmp_path)
    assert [r["rank"] for r in per_rank] == list(range(n))
    assert all(r["size"] == n for r in per_rank)
    checks = per_rank[0]["checks"]
    assert all(r["checks"] == checks for r in per_rank)
    for name in ("AllReduce(prod) int32 jit", "AllReduce(max) uint8 pynative",
                 "AllGather bool jit", "Broadcast(0) special floats", "ReduceScatter float16 jit",
                 "grad AllReduce(max)", "grad Broadcast", "grad ReduceScatter", "comm_rank"):
        assert name in checks
    assert len(checks) >= 70


def reference_weights(w, size):
    """One process training on the concatenation of the ranks' batches (the mean
    gradient over the global batch)."""
    x, y = w.dataset(size)
    shards = [communication.shard((x, y), size, r) for r in range(size)]
    net, loss_fn, optimizer = w.make_model()
    grad_fn = ms.value_and_grad(lambda a, b: loss_fn(net(a), b), None, optimizer.parameters)

    @ms.jit
    def step(a, b):
        loss, grads = grad_fn(a, b)
        optimizer(grads)
        return loss

    for k in range(w.STEPS):
        part = slice(k * w.BATCH, (k + 1) * w.BATCH)
        step(ms.Tensor(np.concatenate([s[0][part] for s in shards])),
             ms.Tensor(np.concatenate([s[1][part] for s in shards])))
    return {p.name: p.asnumpy() for p in net.trainable_params()}


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_data_parallel_training_gives_every_rank_the_weights_of_one_big_batch(n, tmp_path):
    rc, out, _ = launch("training", n, tmp_path)
    assert rc == 0, out
    info = results("training", n, tmp_path)[0]
    want = reference_weights(worker_module(), n)
    for mode in ("graph", "pynative"):
        ranks = [np.load(tmp_path / f"weights-{mode}-{r}.npz") for r in range(n)]
        assert sorted(ranks[0].files) == sorted(want)
        for name, w in want.items():
            for r in range(1, n):
                assert ranks[r][name].tobytes() == ranks[0][name].tobytes(), (mode, name, r)
            np.testing.assert_allclose(ranks[0][name], w, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{mode} {name}")
    # the compiled step: one all-reduce for the one bucket of gradients, an MPI call
    assert info["graph"]["buckets"] == 1
    assert info["graph"]["ms-opt"].count('"ms.all_reduce"') == 1
    assert "llvm.call @MPI_Allreduce" in info["graph"]["llvm"]


@needs_mpi
def test_train_one_step_cell_reduces_the_gradients_itself_in_data_parallel(tmp_path):
    """As MindSpore's TrainOneStepCell: under DATA_PARALLEL it all-reduces the gradients
    (gradients_mean from the context), so Model.train trains data parallel unchanged."""
    n = 2
    rc, out, _ = launch("train_one_step", n, tmp_path)
    assert rc == 0, out
    assert results("train_one_step", n, tmp_path)[0]["reducer"] == "DistributedGradReducer"
    want = reference_weights(worker_module(), n)
    ranks = [np.load(tmp_path / f"weights-cell-{r}.npz") for r in range(n)]
    for name, w in want.items():
        assert ranks[1][name].tobytes() == ranks[0][name].tobytes(), name
        np.testing.assert_allclose(ranks[0][name], w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_train_one_step_cell_has_no_reducer_stand_alone():
    net = nn.Dense(3, 2)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                               nn.SGD(net.trainable_params(), learning_rate=0.1))
    assert step.grad_reducer is None


@needs_mpi
def test_the_digits_example_trains_data_parallel():
    example = os.path.join(HERE, "..", "..", "examples", "train_digits.py")
    p = subprocess.run([MPIEXEC, "-n", "2", sys.executable, example, "--data-parallel",
                        "--mode", "graph", "--epochs", "4"], capture_output=True, text=True,
                       timeout=LAUNCH_TIMEOUT, env={**os.environ, "PATH": _BIN})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "data parallel on 2 processes" in p.stdout
    final = [line for line in p.stdout.splitlines() if "final test accuracy" in line]
    assert len(final) == 1, p.stdout  # rank 0 prints, rank 1 does not
    assert float(final[0].split("accuracy")[1].split(",")[0]) > 0.85, final


@needs_mpi
def test_a_rank_that_raises_ends_the_job_non_zero(tmp_path):
    rc, out, seconds = launch("failing", 2, tmp_path)
    assert rc != 0
    out += ranks_stderr("failing", 2, tmp_path)
    assert "rank 1 fails on purpose" in out and "aborting the job" in out
    assert seconds < 30, seconds


@needs_mpi
def test_ranks_with_different_shapes_get_an_error_at_the_collective(tmp_path):
    rc, out, seconds = launch("mismatched", 3, tmp_path)
    assert rc != 0
    out += ranks_stderr("mismatched", 3, tmp_path)
    with open(WORKER) as f:
        line = next(i for i, text in enumerate(f, 1) if "MISMATCH-LINE" in text)
    assert f"distributed_worker.py:{line}: the processes do not run the same collective" in out
    assert "(their counts range from 6 to 10)" in out
    assert seconds < 30, seconds


# ------------------------------------------------------------------ in this process

def test_buckets_group_consecutive_gradients_of_one_dtype_up_to_a_size():
    f32, f16 = dt.float32, dt.float16
    specs = [((4, 4), f32), ((4,), f32), ((3,), f16), ((2,), f16), ((8,), f32)]
    assert parallel.buckets(specs) == ((0, 1), (2, 3), (4,))
    assert parallel.buckets(specs, bucket_bytes=64) == ((0,), (1,), (2, 3), (4,))
    assert parallel.buckets([((10 ** 7,), f32)] * 3) == ((0,), (1,), (2,))


def test_auto_parallel_context():
    try:
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL,
                                     gradients_mean=True)
        assert ms.get_auto_parallel_context("parallel_mode") == "data_parallel"
        assert ms.context.get_auto_parallel_context("gradients_mean") is True
        with pytest.raises(NotImplementedError, match="data_parallel only"):
            ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL)
        with pytest.raises(ValueError, match="unsupported options: pipeline_stages"):
            ms.set_auto_parallel_context(pipeline_stages=2)
    finally:
        ms.reset_auto_parallel_context()
    assert ms.get_auto_parallel_context("parallel_mode") == "stand_alone"
    assert ms.get_auto_parallel_context("gradients_mean") is False


def test_the_mindspore_names_are_there():
    import mscc.communication.management as management
    assert management is communication is ms.communication
    assert ms.ops.AllReduce is ms.ops.operations.AllReduce
    assert ms.ops.ReduceOp.SUM == "sum" and ms.nn.DistributedGradReducer
    assert ms.ops.AllReduce(ms.ops.ReduceOp.MAX).attrs["op"] == "max"
    assert ms.ops.Broadcast(1).attrs["root_rank"] == 1


def test_shard_gives_each_rank_an_equal_part():
    x = np.arange(11)
    parts = [communication.shard(x, 3, r) for r in range(3)]
    assert [p.tolist() for p in parts] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert communication.shard(x, 3, 1, drop_remainder=False).tolist() == [1, 4, 7, 10]
    with pytest.raises(ValueError, match="same length"):
        communication.shard((x, x[:5]), 2, 0)
    with pytest.raises(ValueError, match="shard_id 3"):
        communication.shard(x, 3, 3)


@pytest.mark.skipif(communication.is_initialized(), reason="MPI was started in this process")
def test_collectives_before_init_are_an_error():
    with pytest.raises(RuntimeError, match="call mscc.communication.init"):
        ms.ops.AllReduce()(ms.Tensor(np.ones(2, np.float32)))
    with pytest.raises(RuntimeError, match="call mscc.communication.init"):
        nn.DistributedGradReducer([])
    with pytest.raises(RuntimeError, match="call mscc.communication.init"):
        communication.get_rank()


def test_shape_rules_and_the_lowered_mpi_calls():
    from mscc.dialects.registry import lookup
    from mscc.passes import pipeline
    from mstest import module_of
    gather = lookup("ms.all_gather").infer_specs([spec((2, 3), "float32")], {"group_size": 4})
    assert gather == [spec((8, 3), "float32")]
    with pytest.raises(ValueError, match="divide into group_size=4"):
        lookup("ms.reduce_scatter").infer_specs([spec((6, 3), "float32")],
                                                {"group_size": 4, "reduce_op": "sum"})
    with pytest.raises(ValueError, match="reduce_op must be one of"):
        lookup("ms.all_reduce").infer_specs([spec((2,), "float32")], {"reduce_op": "mean"})
    module = module_of([spec((2, 3), "float16")],
                       lambda a: op("ms.all_reduce", a, reduce_op="sum"))
    pipeline.run_pipeline(module, "cpu", stop_after="llvm")
    text = str(module)
    # float16 is summed in float32 (MPICH's MPI_FLOAT handle), with the agreement header first
    assert text.count("llvm.call @MPI_Allreduce") == 2
    assert "llvm.mlir.constant(1275069450 : i32)" in text and "ms.mpi" in text
