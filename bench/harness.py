"""What bench/conv.py and bench/compile_time.py share: the machine's description, one worker
process per measurement with an empty compile cache, markdown tables."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# This machine's environment sets them, which keeps OpenBLAS off its fastest kernel (run.py).
SCRUBBED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def cpu_description() -> str:
    """'<model name> (<n> cores)' from /proc/cpuinfo and the cores this process may use."""
    name = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name")), name)
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{name} ({cores} cores)"


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def peer_version(module: str) -> str | None:
    """The installed version of a peer framework, without importing it (torch takes seconds)."""
    from importlib import metadata
    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        return None


def run_worker(script, args, timeout, extra_env=None):
    """Run `script --worker ARGS` in a fresh process with a new, empty MSCC_CACHE_DIR (a
    compile is timed as a first-time user meets it, and a crash only loses its own row).
    Returns (the JSON object the worker printed last on stdout, or {"error": ...}, stderr)."""
    cache = tempfile.mkdtemp(prefix="mscc-bench-cache-")
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(MSCC_CACHE_DIR=cache, PYTHONFAULTHANDLER="1", **(extra_env or {}))
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(script), "--worker", *args],
                              capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}, ""
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 0 and lines:
        return json.loads(lines[-1]), proc.stderr
    return {"error": brief_error(proc.stderr, proc.returncode)}, proc.stderr


def brief_error(stderr: str, returncode: int) -> str:
    """The cause in one short line: a Python exception's last line, or for a crash the
    assertion's message and the innermost Python frame (workers run with faulthandler)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    frames = [ln for ln in lines if ln.startswith("File ")]
    current = next((i for i, ln in enumerate(lines) if ln.startswith("Current thread")), 0)
    crashed = [ln for ln in lines[current:] if ln.startswith("File ")]  # the crashing thread
    own = [ln for ln in crashed if "site-packages" not in ln]  # its innermost frame of ours
    asserts = [m for m in map(_ASSERT.search, lines) if m]
    if asserts:
        where, cond = asserts[-1].groups()
        message = re.findall(r'"([^"]+)"', cond)
        where = "/".join(where.split("/")[-3:])
        line = f"assertion in {where}: {message[-1] if message else cond}"
    else:
        plain = [ln for ln in lines if not ln.startswith(_NOISE) and ln not in frames]
        line = (plain or [f"exit status {returncode}"])[-1]
    if returncode < 0:
        frame = re.sub(r'^File "(?:.*/)?([^"/]+)", line (\d+) in (\S+)', r"\1:\2 \3",
                       (own or crashed or frames)[0]) if frames else ""
        line = f"killed by signal {-returncode}" + (f" in {frame}" if frame else "") + f": {line}"
    return line if len(line) <= 200 else line[:197] + "..."


_ASSERT = re.compile(r"([\w/.+-]+\.(?:cpp|h|c)):\d+: .*Assertion `(.*)' failed")
_NOISE = ("mscc: ", "Fatal Python error", "Current thread", "Extension modules",
          "Thread 0x", "Finished ", "Compiling ")


def markdown_table(head, rows) -> str:
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def save_json(path, data):
    with open(path, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def timings(call, repeat, after_first=lambda: None):
    """(first call's seconds, best of `repeat` after a second warm-up call, the first two
    results)."""
    t0 = time.perf_counter()
    results = [call()]
    first = time.perf_counter() - t0
    after_first()
    results.append(call())
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        # Assigned, as in a user's loop (`y = net(x)`): the previous result lives until this
        # call returns. Dropped at once, glibc hands a large freed block back to the system
        # and the next call pays the page faults again (torch's 3x3 conv: 2.9 -> 7 ms).
        out = call()
        times.append(time.perf_counter() - t0)
    del out
    return first, min(times), results
