"""The CPU the code is compiled for: its LLVM name, vector width, registers and caches.

Every CPU schedule reads its sizes from here instead of constants tuned on one machine:
the matmul register tile from the vector width and register count, whether to pack a
matmul's B from the L1 data cache's geometry (the row tiles of passes/cpu_rows.py are still a
constant). By default the target is the host: LLVM's name for it (`llc --version`), its
instruction sets from /proc/cpuinfo (what the hypervisor really enables, which a CPU name
alone does not tell) and its caches from sysfs. `MSCC_CPU=<LLVM CPU name>` compiles for
another CPU instead (`MSCC_CPU=haswell`: AVX2 code on an AVX-512 machine, so that both paths
are tested on one machine); its vector width is then read from what llc makes of that name.

Vector width: LLVM's tuning for several AVX-512 CPUs (Skylake-SP through Sapphire Rapids)
prefers 256-bit vectors, so its vectorizer never uses zmm registers there. Where the target
has AVX-512 the code asks for 512-bit vectors (the `prefer-vector-width` function
attribute, ms-cpu-target-attributes). Measured on an Intel Xeon (family 6, model 207), 512
against 256 bits: the elementwise chain 1.3x faster, softmax 1.2x, matmul 512 1.1-1.4x.
`MSCC_VECTOR_BITS=256` (or 128) caps the width, for measuring.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import math
import os
import tempfile
from dataclasses import dataclass

from mlir import ir

from .base import ModulePass, register
from .outline import kernel_kind
from ..dialects.ir_helpers import passthrough, top_level_ops
from ..runtime.cpu_aot import host_cpu_flags

CPU_ENV = "MSCC_CPU"
VECTOR_BITS_ENV = "MSCC_VECTOR_BITS"


class CpuTargetError(ValueError):
    """A CPU name or vector width LLVM cannot compile for (MSCC_CPU, MSCC_VECTOR_BITS)."""


@dataclass(frozen=True)
class CpuTarget:
    cpu: str                 # LLVM CPU name (llc -mcpu)
    vector_bits: int         # widest vectors the code uses: 512, 256 or 128
    vector_registers: int    # architectural vector registers (32 with AVX-512, else 16)
    l1d_bytes: int           # per core
    l2_bytes: int            # per core
    l1d_ways: int = 8        # associativity of the L1 data cache
    named: bool = False      # chosen by MSCC_CPU rather than read off the host
    isa_bits: int = 0        # the widest vectors its instruction sets have (0: vector_bits);
    #                          MSCC_VECTOR_BITS caps vector_bits, not what LLVM may emit

    @property
    def vector_bytes(self) -> int:
        return self.vector_bits // 8

    def rows_conflict(self, row_bytes: int, rows: int) -> bool:
        """Whether `rows` rows `row_bytes` apart (a K-panel of a matmul's B, read a column
        strip at a time) evict each other from the L1 data cache: their starts fall into
        way_bytes / gcd(row_bytes, way_bytes) sets, which hold that many lines per way, and
        the panel should have at most half of the cache (the rest is A's and C's)."""
        way_bytes = max(_LINE, self.l1d_bytes // max(1, self.l1d_ways))
        sets = way_bytes // math.gcd(row_bytes, way_bytes)
        if sets * _LINE >= way_bytes:
            return False  # every set: a packed copy would fit no better
        return rows > sets * self.l1d_ways // 2

    @property
    def features(self) -> tuple:
        """The instruction sets code for this target may use beyond x86-64's baseline, as
        /proc/cpuinfo names them (an artifact records them; loading checks the host has
        them)."""
        bits = self.isa_bits or self.vector_bits
        return {512: ("avx512f", "avx2", "fma"), 256: ("avx2", "fma")}.get(bits, ())

    def key(self) -> str:
        """What the compiled code depends on (part of the executable cache's key)."""
        return (f"cpu={self.cpu};vector={self.vector_bits};regs={self.vector_registers};"
                f"l1d={self.l1d_bytes}/{self.l1d_ways};l2={self.l2_bytes};named={self.named};"
                f"isa={self.isa_bits}")


# Options of the passes whose schedule depends on the target: 0 takes the current target's
# value; lit tests pin them, so that their output is the same on every machine.
TARGET_OPTIONS = {"vector-bits": 0, "l1d-bytes": 0, "l1d-ways": 0}
TARGET_CHOICES = {"vector-bits": (0, 128, 256, 512)}


def from_options(opts: dict) -> CpuTarget:
    """The current target with what a pass's TARGET_OPTIONS set."""
    target = current()
    bits = opts.get("vector-bits") or target.vector_bits
    return dataclasses.replace(
        target, vector_bits=bits,
        vector_registers=target.vector_registers if bits == target.vector_bits
        else (32 if bits == 512 else 16),
        l1d_bytes=opts.get("l1d-bytes") or target.l1d_bytes,
        l1d_ways=opts.get("l1d-ways") or target.l1d_ways)


# The target a thread compiles for whatever the environment says (pinned_target): the
# background compile of passes/tiering.py, for the target of the compile it finishes.
_pinned: contextvars.ContextVar = contextvars.ContextVar("mscc_cpu_target", default=None)


def current() -> CpuTarget:
    """The target of compiles in this process now (the environment may change it), or in
    this thread the one pinned_target names."""
    pinned = _pinned.get()
    if pinned is not None:
        return pinned
    return _target(os.environ.get(CPU_ENV, "").strip(),
                   os.environ.get(VECTOR_BITS_ENV, "").strip())


@contextlib.contextmanager
def pinned_target(target: CpuTarget):
    """current() is `target` in this thread meanwhile."""
    token = _pinned.set(target)
    try:
        yield target
    finally:
        _pinned.reset(token)


@functools.lru_cache(maxsize=None)
def _target(cpu_name: str, bits_cap: str) -> CpuTarget:
    (l1d, ways), l2 = cache_sizes()
    if cpu_name and cpu_name != "native":
        bits, named = probe_vector_bits(cpu_name), True
    else:
        from .artifact import host_cpu
        cpu_name, bits, named = host_cpu(), _host_vector_bits(host_cpu_flags()), False
    isa_bits = bits
    if bits_cap:
        if bits_cap not in ("128", "256", "512"):
            raise CpuTargetError(f"{VECTOR_BITS_ENV}={bits_cap!r}: expected 128, 256 or 512")
        bits = min(bits, int(bits_cap))
    # AVX-512 doubles the register file; the narrower widths keep 16 (x86-64, AVX2)
    registers = 32 if bits == 512 else 16
    return CpuTarget(cpu_name, bits, registers, l1d, l2, ways, named, isa_bits)


def _host_vector_bits(flags) -> int:
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return 512
    if {"avx2", "fma"} <= flags:
        return 256
    return 128


_KB = 1024
_LINE = 64
# where sysfs says nothing: a common x86-64 core's L1 data cache (bytes, ways) and L2
_DEFAULT_CACHES = ((32 * _KB, 8), 1024 * _KB)


def cache_sizes() -> tuple:
    """((L1 data bytes, its ways), L2 bytes) per core, from sysfs."""
    found = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = os.listdir(base)
    except OSError:
        return _DEFAULT_CACHES
    for entry in entries:
        folder = os.path.join(base, entry)
        try:
            level, kind = int(_read(folder, "level")), _read(folder, "type")
            size = _parse_size(_read(folder, "size"))
            ways = int(_read(folder, "ways_of_associativity") or 0)
        except (OSError, ValueError):
            continue
        if (level, kind) in ((1, "Data"), (2, "Unified")):
            found[level] = (size, ways)
    (l1d, l1_ways), l2 = found.get(1, _DEFAULT_CACHES[0]), found.get(2, (_DEFAULT_CACHES[1], 0))
    return (l1d, l1_ways or _DEFAULT_CACHES[0][1]), l2[0]


def _read(folder, name) -> str:
    with open(os.path.join(folder, name)) as f:
        return f.read().strip()


def _parse_size(text: str) -> int:
    units = {"K": _KB, "M": _KB * _KB, "G": _KB ** 3}
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


_PROBE = """define <16 x float> @probe(<16 x float> %a, <16 x float> %b) #0 {
  %c = fmul <16 x float> %a, %b
  ret <16 x float> %c
}
attributes #0 = { "prefer-vector-width"="512" "min-legal-vector-width"="512" }
"""


@functools.lru_cache(maxsize=None)
def probe_vector_bits(cpu_name: str) -> int:
    """The widest vector registers llc uses for `cpu_name` (a product of 16 floats in zmm,
    ymm or xmm registers); CpuTargetError for a name LLVM does not know."""
    import subprocess  # (only for a named CPU: not imported by every first compile)
    from .artifact import host_triple, llvm_tool
    with tempfile.TemporaryDirectory(prefix="mscc-probe-") as d:
        path = os.path.join(d, "probe.ll")
        with open(path, "w") as f:
            f.write(_PROBE)
        proc = subprocess.run([llvm_tool("llc"), f"-mtriple={host_triple()}",
                               f"-mcpu={cpu_name}", path, "-o", "-"],
                              capture_output=True, text=True)
    if proc.returncode != 0 or "not a recognized processor" in proc.stderr:
        raise CpuTargetError(f"{CPU_ENV}={cpu_name!r} is not a CPU LLVM knows (see "
                             "`llc -mcpu=help`)")
    for bits, register in ((512, "%zmm"), (256, "%ymm")):
        if register in proc.stdout:
            return bits
    return 128



# ------------------------------------------------------------------ the pass

# The function attribute that asks cpu_codegen for LLVM's loop strength reduction (which its
# code generation otherwise leaves out): on the matmul kernels, whose register-tile loops
# over k read nine address streams.
STRENGTH_REDUCE_ATTR = "mscc-loop-strength-reduction"


@register
class CpuTargetAttributes(ModulePass):
    name = "ms-cpu-target-attributes"
    summary = ("the target CPU on every defined llvm.func: prefer-vector-width (the target's "
               "width), and target-cpu/target-features for a named CPU (MSCC_CPU), which then "
               "replace the host's in the ExecutionEngine and in llc; "
               f"\"{STRENGTH_REDUCE_ATTR}\" on the matmul kernels")
    options = {"cpu": "", "vector-bits": 0}  # defaults: the current target's
    choices = {"vector-bits": TARGET_CHOICES["vector-bits"]}

    def run(self, module):
        target = current()
        cpu = self.opts["cpu"] or (target.cpu if target.named else "")
        bits = self.opts["vector-bits"] or target.vector_bits
        width = ir.ArrayAttr.get([ir.StringAttr.get("prefer-vector-width"),
                                  ir.StringAttr.get(str(bits))])
        reduce = ir.StringAttr.get(STRENGTH_REDUCE_ATTR)
        for fn in top_level_ops(module, "llvm.func"):
            if not fn.regions[0].blocks:
                continue  # a declaration
            kept = [a for a in passthrough(fn) if not _is_width(a) and a != reduce]
            marks = [reduce] if kernel_kind(fn) == "matmul" else []
            fn.attributes["passthrough"] = ir.ArrayAttr.get(kept + [width] + marks)
            if cpu:
                # a feature list of its own, so that the host's (avx512f, ...) is not used
                fn.attributes["target_cpu"] = ir.StringAttr.get(cpu)
                fn.attributes["target_features"] = ir.Attribute.parse(
                    '#llvm.target_features<["+sse2"]>')


def _is_width(attr) -> bool:
    return (isinstance(attr, ir.ArrayAttr) and len(attr) == 2 and
            ir.StringAttr(attr[0]).value == "prefer-vector-width")
