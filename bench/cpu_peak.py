"""The host CPU's peak float32 multiply-add rate, measured: the roofline that matmul rows of
bench/run.py are read against (issue 17 asks what limits a row that does not lead).

A loop of independent fused multiply-adds on registers only (12 accumulators: more than the
FMA latency times the FMA ports of current x86 cores), in inline assembly so that no
compiler folds it, on zmm registers where the CPU has AVX-512 and ymm where it has AVX2+FMA,
run on 1 thread and on every core at once. Needs a C compiler (`cc`) and an x86-64 CPU.

    python bench/cpu_peak.py            # GFLOP/s on 1 thread and on all cores
    python bench/cpu_peak.py --json PATH
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ACCUMULATORS = 12
ITERATIONS = 50_000_000

_SOURCE = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *run(void *arg) {
    long n = (long)arg;
    __asm__ volatile(
%(zero)s
        "1:\n"
%(body)s
        "dec %%0\n"
        "jnz 1b\n" : "+r"(n) :: %(clobbers)s "cc");
    return 0;
}

int main(int argc, char **argv) {
    int threads = atoi(argv[1]);
    long n = atol(argv[2]);
    pthread_t t[256];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < threads; i++) pthread_create(&t[i], 0, run, (void *)n);
    for (int i = 0; i < threads; i++) pthread_join(t[i], 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%%.6f\n", (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec));
    return 0;
}
"""


def vector_isa() -> tuple[str, int] | None:
    """(register prefix, float32 lanes) of the widest FMA vectors the CPU has, from
    /proc/cpuinfo's flags; None without FMA or off x86-64 Linux."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return None
    if "avx512f" in flags:
        return "zmm", 16
    if "fma" in flags and "avx2" in flags:
        return "ymm", 8
    return None


def source(register: str) -> str:
    """The C program: ACCUMULATORS registers zeroed, then a loop of one FMA into each."""
    regs = [f"%%{register}{i}" for i in range(ACCUMULATORS)]
    a, b = f"%%{register}14", f"%%{register}15"
    zero = "\n".join(f'        "vxorps {r},{r},{r}\\n"' for r in regs)
    body = "\n".join(f'        "vfmadd231ps {a},{b},{r}\\n"' for r in regs)
    clobbers = "".join(f'"xmm{i}", ' for i in list(range(ACCUMULATORS)) + [14, 15])
    return _SOURCE % {"zero": zero, "body": body, "clobbers": clobbers}


def measure(threads: int, lanes: int, binary: str, iterations: int, repeats: int = 3) -> float:
    """The best GFLOP/s of `repeats` runs on `threads` threads."""
    best = 0.0
    for _ in range(repeats):
        out = subprocess.run([binary, str(threads), str(iterations)], check=True,
                             capture_output=True, text=True).stdout
        flops = threads * iterations * ACCUMULATORS * lanes * 2
        best = max(best, flops / float(out) / 1e9)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--iterations", type=int, default=ITERATIONS,
                        help="loop iterations per thread (each one FMA per accumulator)")
    args = parser.parse_args(argv)
    isa, compiler = vector_isa(), shutil.which("cc") or shutil.which("gcc")
    if isa is None or compiler is None:
        print("cpu_peak: needs an x86-64 CPU with FMA and a C compiler", file=sys.stderr)
        return 1
    register, lanes = isa
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        src, binary = os.path.join(tmp, "peak.c"), os.path.join(tmp, "peak")
        with open(src, "w") as f:
            f.write(source(register))
        subprocess.run([compiler, "-O2", "-pthread", "-o", binary, src], check=True)
        figures = {"registers": register, "lanes": lanes, "cores": cores,
                   "gflops_1_thread": measure(1, lanes, binary, args.iterations),
                   f"gflops_{cores}_threads": measure(cores, lanes, binary, args.iterations)}
    print(f"float32 FMA peak ({register}, {lanes} lanes): "
          f"{figures['gflops_1_thread']:.1f} GFLOP/s on 1 thread, "
          f"{figures[f'gflops_{cores}_threads']:.1f} on {cores}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
