"""A forked process compiles: MLIR's thread pool is stopped before os.fork() and started
again on both sides (dialects/builders.py). Before, the child's first compile of a module with
two functions waited for ever on the parent's pool threads, which a child does not have (a
data loader's forked worker that called an op it had not compiled hung)."""
import os
import subprocess
import sys
import textwrap

# Each program runs in its own interpreter: a hang is a timeout, not a stalled test run.
PROGRAM = textwrap.dedent("""
    import os, sys, numpy as np, mscc as ms
    from mscc import nn, ops

    def step(width):
        net = nn.SequentialCell([nn.Dense(64, width), nn.ReLU(), nn.Dense(width, 10)])
        loss = lambda x: ops.reduce_sum(net(x) ** 2)
        f = ms.jit(ms.value_and_grad(loss, None, net.trainable_params()))
        return lambda x: float(f(x)[0].asnumpy())

    x = ms.Tensor(np.linspace(-1, 1, 32 * 64, dtype=np.float32).reshape(32, 64))
    ms.set_seed(1)
    first = step(128)(x)  # the parent's pool threads run (parallel verification)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            ms.set_seed(2)
            os.write(write, repr(step(96)(x)).encode())  # a new compile in the child
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    child = float(os.read(read, 100).decode())
    ms.set_seed(2)
    again = step(96)(x)  # the parent compiles after the fork too
    print(first, child, again, status)
""")


def test_a_forked_child_compiles_and_so_does_its_parent(tmp_path):
    env = dict(os.environ, MSCC_CACHE_DIR=str(tmp_path))  # (nothing from a disk cache)
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    first, child, again, status = done.stdout.split()
    assert status == "0"
    assert abs(float(child) - float(again)) <= 1e-5 * abs(float(again))  # the same program
    assert float(first) > 0
