"""mscc.communication: MindSpore's communication API on MPI (MPICH or Open MPI).

    from mscc.communication import init, get_rank, get_group_size
    init()                     # under `mpirun -n N python train.py`, or alone: one process

init() starts MPI through mpi4py (`pip install 'mscc[distributed]'` brings mpi4py and the
`mpich` wheel, so no system package is needed), makes the MPI library's symbols global (the
compiled collectives call MPI_Allreduce directly: dialects/ops/collective.py), tells the
lowering which ABI to emit, and makes an uncaught exception on any rank end the whole job
(MPI_Abort after the traceback) instead of leaving the other ranks waiting in a collective.
Without a launcher MPI starts as a singleton: one process, rank 0, group size 1.

Only the world group exists: `group` arguments take GlobalComm.WORLD_COMM_GROUP (or
MindSpore's HCCL/NCCL world group names, which mean the same here).

`shard(data)` gives this rank its part of an array data set (see there).

This module does not import mlir; it imports mpi4py only in init().
"""
from __future__ import annotations

import ctypes
import os
import sys
import time
import traceback

HCCL_WORLD_COMM_GROUP = "hccl_world_group"
NCCL_WORLD_COMM_GROUP = "nccl_world_group"
MPI_WORLD_COMM_GROUP = "mpi_world_group"
_WORLD_NAMES = (MPI_WORLD_COMM_GROUP, HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP)
_BACKENDS = (None, "mpi", "hccl", "nccl", "mccl")


class GlobalComm:
    """MindSpore's GlobalComm: the backend and the world group's name, and whether init()
    ran."""
    BACKEND = "mpi"
    WORLD_COMM_GROUP = MPI_WORLD_COMM_GROUP
    INITED = False


class _State:
    mpi = None         # the mpi4py.MPI module once init() ran
    library = None     # path of the MPI library the compiled code calls
    vendor = None      # ("MPICH", (5, 0, 2)), ...
    hook_installed = False


def _check_group(group, who):
    if group not in _WORLD_NAMES:
        raise ValueError(f"For '{who}', group {group!r} is not supported: mscc has only the "
                         f"world group ({GlobalComm.WORLD_COMM_GROUP})")


def _loaded_mpi_library() -> str | None:
    """The path of the MPI library this process has loaded (mpi4py's), from the loader's
    map of this process."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "/libmpi" in line}
    except OSError:
        return None
    for name in ("libmpi.so", "libmpi_abi.so"):
        for p in sorted(paths):
            if os.path.basename(p).startswith(name):
                return p
    return min(paths) if paths else None


def init(backend_name=None):
    """Start MPI (idempotent). `backend_name`: None or "mpi"; MindSpore's "hccl"/"nccl"
    are accepted as names of the job's world and mean MPI here (mscc's collectives run on
    the CPU over MPI)."""
    if backend_name not in _BACKENDS:
        raise ValueError(f"init(backend_name={backend_name!r}): mscc's collectives run on MPI "
                         f"(backend_name None or 'mpi')")
    if _State.mpi is not None:
        return
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("mscc.communication.init() needs MPI and mpi4py: pip install "
                           "'mscc[distributed]' (mpi4py and the mpich wheel)") from e
    path = _loaded_mpi_library()
    if path is None:
        raise RuntimeError("mscc.communication.init(): mpi4py started MPI but no MPI library "
                           "(libmpi) is mapped into this process")
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # the compiled code's MPI_* resolve here
    _State.mpi, _State.library = MPI, path
    _State.vendor = MPI.get_vendor()
    from ..dialects.ops import collective
    collective.MPI_IMPLEMENTATION = "OpenMPI" if _State.vendor[0] == "Open MPI" else "MPICH"
    GlobalComm.INITED = True
    if MPI.COMM_WORLD.Get_size() > 1:
        _install_abort_hook()


def _install_abort_hook():
    """An uncaught exception on one rank aborts the job (MPI_Abort), as `python -m mpi4py`
    does: the other ranks would otherwise wait in their next collective for ever."""
    if _State.hook_installed:
        return
    previous = sys.excepthook

    def abort_on_exception(kind, value, tb):
        try:
            previous(kind, value, tb)
        except Exception:  # noqa: BLE001  (the traceback is printed below then)
            traceback.print_exception(kind, value, tb)
        rank = _State.mpi.COMM_WORLD.Get_rank()
        sys.stderr.write(f"mscc: rank {rank} raised {kind.__name__}; aborting the job\n")
        sys.stderr.flush()
        sys.stdout.flush()
        # MPI_Abort has the launcher kill every rank at once, and mpiexec (hydra) drops the
        # output it has not forwarded yet: a test saw the traceback cut after its first
        # lines. A moment's pause lets it forward what was flushed.
        time.sleep(0.2)
        _State.mpi.COMM_WORLD.Abort(1)
    sys.excepthook = abort_on_exception
    _State.hook_installed = True


def is_initialized() -> bool:
    return _State.mpi is not None


def require_init(who: str):
    """Raise unless init() ran: a collective needs MPI running in this process."""
    if _State.mpi is None:
        raise RuntimeError(f"For '{who}', call mscc.communication.init() first (collectives "
                           "run on MPI)")


def _world(who):
    require_init(who)
    return _State.mpi.COMM_WORLD


def get_rank(group=GlobalComm.WORLD_COMM_GROUP) -> int:
    """This process's rank in the job."""
    _check_group(group, "get_rank")
    return _world("get_rank").Get_rank()


def get_group_size(group=GlobalComm.WORLD_COMM_GROUP) -> int:
    """The number of processes in the job."""
    _check_group(group, "get_group_size")
    return _world("get_group_size").Get_size()


def _node_comm():
    world = _world("get_local_rank")
    return world.Split_type(_State.mpi.COMM_TYPE_SHARED)


def get_local_rank(group=GlobalComm.WORLD_COMM_GROUP) -> int:
    """This process's rank among the processes on its machine."""
    _check_group(group, "get_local_rank")
    comm = _node_comm()
    try:
        return comm.Get_rank()
    finally:
        comm.Free()


def get_local_rank_size(group=GlobalComm.WORLD_COMM_GROUP) -> int:
    """The number of processes of the job on this machine."""
    _check_group(group, "get_local_rank_size")
    comm = _node_comm()
    try:
        return comm.Get_size()
    finally:
        comm.Free()


def get_world_rank_from_group_rank(group, group_rank_id) -> int:
    _check_group(group, "get_world_rank_from_group_rank")
    return int(group_rank_id)


def get_group_rank_from_world_rank(world_rank_id, group) -> int:
    _check_group(group, "get_group_rank_from_world_rank")
    return int(world_rank_id)


def create_group(group, rank_ids):
    raise NotImplementedError(f"create_group({group!r}, ...): mscc has only the world group")


def release():
    """MindSpore's release(): MPI is finalized when the process exits (mpi4py), so this only
    checks that init() ran."""
    require_init("release")


def barrier():
    """Wait until every process gets here."""
    _world("barrier").Barrier()


def library_path() -> str | None:
    """The MPI library the compiled collectives call (None before init())."""
    return _State.library


def shard(data, num_shards=None, shard_id=None, drop_remainder=True):
    """This rank's part of an array data set (an array, or a tuple/list of arrays with the
    same first dim): samples shard_id, shard_id + num_shards, ... (MindSpore's
    DistributedSampler order, without shuffling). With drop_remainder (the default) every
    shard has len // num_shards samples, so that every rank runs the same number of steps
    (one rank running a step more would wait in its all-reduce for ever); without it the
    first len % num_shards shards have one more. num_shards and shard_id default to the
    job's group size and this rank."""
    if num_shards is None:
        num_shards = get_group_size()
    if shard_id is None:
        shard_id = get_rank()
    if not 0 <= shard_id < num_shards:
        raise ValueError(f"shard_id {shard_id} must be in [0, {num_shards})")
    arrays = list(data) if isinstance(data, (tuple, list)) else [data]
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:
        raise ValueError(f"the arrays of a data set must have the same length, got "
                         f"{sorted(lengths)}")
    n = lengths.pop()
    per = n // num_shards
    if drop_remainder and per == 0:
        raise ValueError(f"{n} samples cannot give each of {num_shards} shards one")
    parts = [a[shard_id::num_shards][:per] if drop_remainder else a[shard_id::num_shards]
             for a in arrays]
    return tuple(parts) if isinstance(data, (tuple, list)) else parts[0]


__all__ = ["GlobalComm", "HCCL_WORLD_COMM_GROUP", "NCCL_WORLD_COMM_GROUP",
           "MPI_WORLD_COMM_GROUP", "init", "release", "get_rank", "get_group_size",
           "get_local_rank", "get_local_rank_size", "get_world_rank_from_group_rank",
           "get_group_rank_from_world_rank", "create_group", "barrier", "shard",
           "is_initialized"]

# MindSpore's functions live in mindspore.communication.management too: the same module.
management = sys.modules[__name__]


def mpi_library() -> str | None:
    """The MPI library compiled collectives link against (artifacts, the disk cache): the one
    init() loaded, else the mpich wheel's beside this interpreter, else the system's."""
    if _State.library:
        return _State.library
    import ctypes.util
    for name in ("libmpi.so.12", "libmpi.so"):
        path = os.path.join(sys.prefix, "lib", name)
        if os.path.exists(path):
            return path
    found = ctypes.util.find_library("mpi")
    return found
