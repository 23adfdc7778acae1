"""ms-cpu-huge-pages at run time: the first call of compiled code whose intermediate buffer
is large maps that buffer in 2 MiB pages (a few faults), not 4 KiB ones (one per page).

Each side runs in a fresh process (this one's heap holds pages that earlier tests faulted in
already, which a new buffer may reuse) and counts the minor page faults of the executable's
first call alone (the compile is done before). The IR the pass makes is checked by
test/Transforms/cpu-huge-pages.mlir."""
import os
import subprocess
import sys

import pytest

THP = "/sys/kernel/mm/transparent_hugepage/enabled"

# A 2048x256 @ 256x2048 product: its 16 MiB result is an intermediate buffer (4,096 pages of
# 4 KiB) that the sum reads.
PROBE = r"""
import resource, sys
import numpy as np
from mlir import ir
import mscc as ms
from mscc import ops
from mscc.dialects.builders import mlir_context
from mscc.passes.compiler import compile_module
if sys.argv[1] == "without":
    from mscc.passes import cpu_huge_pages
    cpu_huge_pages.HugePages.run = lambda self, module: None
a = np.full((2048, 256), 1e-3, np.float32)
b = np.full((256, 2048), 1e-3, np.float32)
f = ms.jit(lambda x, y: ops.reduce_sum(ops.exp(ops.matmul(x, y))))
text = f.lower(ms.Tensor(a), ms.Tensor(b)).as_text("ms")
with mlir_context():
    exe = compile_module(ir.Module.parse(text))
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
(total,) = exe(a, b)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
expected = np.exp(np.float64(256e-6)) * 2048 * 2048
assert abs(float(total) - expected) < 1e-4 * expected, (float(total), expected)
print(faults)
"""


def _huge_pages_on_request() -> bool:
    try:
        with open(THP) as f:
            setting = f.read()
    except OSError:
        return False
    return "[never]" not in setting


def _first_call_faults(side: str) -> int:
    env = {**os.environ, "MSCC_CACHE_DIR": "", "MSCC_TIERED": "0"}
    out = subprocess.run([sys.executable, "-c", PROBE, side], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _huge_pages_on_request(),
                    reason="transparent huge pages are off (or not Linux)")
def test_large_buffer_faults_in_huge_pages():
    without, advised = _first_call_faults("without"), _first_call_faults("with")
    # 4,096 faults for the buffer in 4 KiB pages; a handful in 2 MiB ones (the pages at
    # its unaligned ends stay small).
    assert without - advised > 2500, (without, advised)
