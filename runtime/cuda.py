"""CUDA executables: a launch plan (runtime/plan.py) run with the driver API.

    dev = mscc.runtime.cuda.device()          # driver, primary context, memory pool
    x = dev.to_device(np_array)               # DeviceArray; stays on the device
    exe = mscc.runtime.load("f.msx")          # CudaExecutable: module loaded, kernels found
    y, = exe(x, np_array)                     # inputs: DeviceArray or numpy; outputs: DeviceArray
    z, = other_exe(y)                         # no round trip: y is already on the device
    y.asnumpy()                               # copies back

Each executable has its own stream; an output carries the event recorded after the call
that produced it, and a consumer on another stream waits on that event before using it.
Temporaries come from the pool and go back to it at the end of the call (reused by the
next call on the same stream). Constants are uploaded once, when the executable loads.

CUDA errors raise CudaError naming the executable, the kernel and the launch. Kernel
faults are reported asynchronously by the driver at the next synchronization; set
MSCC_CUDA_LAUNCH_BLOCKING=1 to synchronize after every launch and name the faulting kernel.

Imports no MLIR; cuda-bindings only when a device is first used.
"""
from __future__ import annotations

import ctypes
import logging
import os

import numpy as np

from .calls import check_dtypes, check_inputs
from .cuda_driver import CudaError, CudaUnavailable, Driver  # noqa: F401  (re-exported)
from .dynamic import DynamicCalls
from .plan import Copy, For, Launch, LaunchPlan, PlanError, While, evaluate, nbytes_of
from .pool import DevicePool

_DEVICES: dict = {}
_log = logging.getLogger("mscc")
_cubin_refused: set = set()  # architectures whose cubin fallback was reported


def device(ordinal: int = 0, driver=None) -> "Device":
    """The process-wide Device for a GPU ordinal (created on first use)."""
    dev = _DEVICES.get(ordinal)
    if dev is None:
        dev = _DEVICES[ordinal] = Device(driver or Driver(ordinal))
    return dev


def is_available() -> bool:
    """Whether a CUDA device can be used (cuda-bindings installed, a driver and a GPU)."""
    try:
        device()
        return True
    except CudaError:
        return False


class Device:
    """A GPU: its driver, memory pool and a default stream for copies."""

    def __init__(self, driver):
        self.driver = driver
        self.pool = DevicePool(driver)
        self.stream = driver.stream_create()

    @property
    def name(self):
        return getattr(self.driver, "name", "cuda")

    def memory_stats(self) -> dict:
        return self.pool.stats()

    def empty_cache(self):
        self.pool.empty_cache()

    def synchronize(self):
        self.driver.synchronize()

    def empty(self, shape, dtype, stream=None) -> "DeviceArray":
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        block = self.pool.allocate(nbytes, stream if stream is not None else self.stream)
        return DeviceArray(self, block, tuple(shape), dtype)

    def to_device(self, array, stream=None) -> "DeviceArray":
        """Copy a numpy array to a new DeviceArray (asynchronous on `stream`)."""
        array = np.asarray(array, order="C")
        out = self.empty(array.shape, array.dtype, stream)
        if out.nbytes:
            self.driver.memcpy_htod(out.ptr, array.ctypes.data, out.nbytes, out.stream)
            # Pageable host memory: the driver has staged the bytes when the call returns.
        out.mark_ready()
        return out


class DeviceArray:
    """An array in device memory: shape, dtype, `ptr`, `asnumpy()`. Handed to executables
    as an input without copying; freed back to the pool when collected."""

    __array_priority__ = 100

    def __init__(self, dev: Device, block, shape, dtype):
        self.device = dev
        self.block = block
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = block.requested
        self._event = None
        self.producer = None   # the executable whose call computed it (for error messages)

    @property
    def ptr(self) -> int:
        return self.block.ptr

    @property
    def stream(self):
        return self.block.stream

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def mark_ready(self):
        """Record that the work producing this array has been queued on its stream."""
        drv = self.device.driver
        if self._event is None:
            self._event = drv.event_create()
        drv.event_record(self._event, self.stream)

    def wait_on(self, stream):
        """Make `stream` wait until this array is ready (no-op on its own stream)."""
        if stream is self.stream or self._event is None:
            return
        self.device.driver.stream_wait_event(stream, self._event)
        self.block.record_stream(stream)

    def asnumpy(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            drv = self.device.driver
            try:
                drv.memcpy_dtoh(out.ctypes.data, self.ptr, self.nbytes, self.stream)
                drv.stream_synchronize(self.stream)
            except CudaError as e:
                # Kernel faults surface here, at the first synchronization after them.
                where = (f" computed by '{self.producer.entry}' "
                         f"({len(self.producer.plan.launches)} launches; set "
                         "MSCC_CUDA_LAUNCH_BLOCKING=1 to find the kernel)"
                         if self.producer is not None else "")
                raise CudaError(f"copying an array{where} back to the host failed: {e}",
                                e.code) from None
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype.name}, ptr=0x{self.ptr:x})"

    def __del__(self):
        try:
            drv = self.device.driver
            if self._event is not None:
                drv.event_destroy(self._event)
            self.device.pool.free(self.block)
        except Exception:  # noqa: BLE001  (interpreter shutdown: the context is gone)
            pass


class _LaunchArgs:
    """A launch's kernel parameters as cuLaunchKernel wants them: an array of pointers to
    8-byte slots. Constant scalar slots are filled once; buffer slots, and scalars computed
    from the call's sizes (dynamic shapes), are patched every call."""

    def __init__(self, launch: Launch):
        n = max(1, len(launch.params))
        self.slots = (ctypes.c_uint64 * n)()
        self.pointers = (ctypes.c_void_p * n)(
            *[ctypes.addressof(self.slots) + 8 * i for i in range(n)])
        self.address = ctypes.addressof(self.pointers)
        self.buffer_slots = []           # (slot index, buffer name)
        self.size_slots = []             # (slot index, size expression, dtype)
        for i, p in enumerate(launch.params):
            if p.buffer is not None:
                self.buffer_slots.append((i, p.buffer))
            elif isinstance(p.scalar, list):
                self.size_slots.append((i, p.scalar, p.dtype))
            else:
                self.set_scalar(i, p.scalar, p.dtype)

    def set_scalar(self, i, value, dtype):
        raw = np.array(value, dtype=dtype).tobytes()
        ctypes.memmove(ctypes.addressof(self.slots) + 8 * i, raw, len(raw))


class CudaExecutable(DynamicCalls):
    """Runs one entry's launch plan. `exe(*inputs) -> list of DeviceArray`."""

    def __init__(self, plan: LaunchPlan, in_specs, out_specs, images: dict, constants: dict,
                 dev: Device | None = None, arch: str = "sm_90", dynamic=None):
        self.plan = plan
        self.entry = plan.entry
        self.in_specs, self.out_specs = list(in_specs), list(out_specs)
        self._setup_dynamic(dynamic)
        self.device = dev = dev or device()
        drv = dev.driver
        self.image = None  # which image the driver loaded: "cubin" or "ptx"
        self.module = self._load_module(drv, images, arch) if plan.all_launches() else None
        self.functions = {k: drv.module_get_function(self.module, k) for k in plan.kernels()}
        self.stream = drv.stream_create()
        self.blocking = os.environ.get("MSCC_CUDA_LAUNCH_BLOCKING", "") not in ("", "0")
        # Per plan (the entry's, and the sub-plans its loops and conditionals run): launch
        # arguments, the launch ordinal of each step, temporaries, constants on the device.
        self._plans = {None: plan, **plan.functions}
        self._args, self._ordinal, self._temps, self._constants = {}, {}, {}, {}
        n = 0
        for key, p in self._plans.items():
            self._args[key] = [_LaunchArgs(s) if isinstance(s, Launch) else None
                               for s in p.steps]
            for i, step in enumerate(p.steps):
                if isinstance(step, Launch):
                    self._ordinal[key, i] = n
                    n += 1
            self._temps[key] = [b for b in p.buffers if b.kind == "temp"]
            consts = {}
            for b in p.buffers:
                if b.kind == "const":
                    data = np.frombuffer(constants[b.data], dtype=b.dtype).reshape(b.shape)
                    consts[b.name] = dev.to_device(data, self.stream)
            self._constants[key] = consts
        self._inputs = sorted((b for b in plan.buffers if b.kind == "input"),
                              key=lambda b: b.index)
        self._outputs = sorted((b for b in plan.buffers if b.kind == "output"),
                               key=lambda b: b.index)
        self._host_byte = np.zeros(1, np.int64)   # predicates and bounds copied back

    def _load_module(self, drv, images, arch):
        """The cubin when it was built for this GPU's architecture and the driver takes it
        (a cubin from a newer toolkit than the driver is refused), else the PTX, which the
        driver JIT-compiles (PTX for sm_90 runs on sm_90 and later)."""
        cc = getattr(drv, "compute_capability", None)
        if images.get("cubin") and cc is not None and f"sm_{cc[0]}{cc[1]}" == arch:
            try:
                module = drv.module_load(images["cubin"], "cubin")
                self.image = "cubin"
                return module
            except CudaError as e:
                # Slower to load (the driver compiles the PTX), so say it, once per process.
                if arch not in _cubin_refused:
                    _cubin_refused.add(arch)
                    _log.warning("mscc: the driver refused the %s cubin of '%s' (%s); using "
                                 "the PTX (JIT-compiled by the driver) instead", arch,
                                 self.entry, e)
        self.image = "ptx"
        return drv.module_load(images["ptx"], f"PTX for {arch}")

    def _setup_dynamic(self, description):
        """An entry with dynamic sizes: its description (runtime/dynamic.py) checks each
        call's sizes and sizes the outputs; the plan's size expressions read them."""
        if (description is None) != (not self.plan.dynamic):
            raise PlanError(f"the launch plan of '{self.entry}' has "
                            f"{'dynamic' if self.plan.dynamic else 'static'} sizes, but the "
                            f"entry {'has no' if description is None else 'has a'} "
                            "description of dynamic sizes")
        super()._setup_dynamic(description)

    @classmethod
    def from_artifact(cls, artifact, dev: Device | None = None):
        cuda = artifact.manifest["cuda"]
        images = {"ptx": artifact.blobs.get(cuda.get("ptx") or ""),
                  "cubin": artifact.blobs.get(cuda.get("cubin") or "")}
        plan = artifact.plan()
        constants = {b.data: artifact.blobs[b.data]
                     for p in [plan, *plan.functions.values()] for b in p.buffers
                     if b.kind == "const"}
        return cls(plan, artifact.inputs, artifact.outputs, images, constants, dev,
                   cuda.get("arch", "sm_90"), artifact.manifest.get("dynamic"))

    def run(self, arrays):
        """The same call as `exe(*arrays)` (the interface jit and eager ops use)."""
        return self(*arrays)

    def __call__(self, *inputs):
        dev, drv, stream = self.device, self.device.driver, self.stream
        if self.dynamic is None:
            inputs = check_inputs(self.entry, self.in_specs, inputs, accept=(DeviceArray,))
            out_shapes, shapes = [b.shape for b in self._outputs], None
        else:
            inputs, out_shapes, shapes = self._sized_call(inputs)
        drv.make_current()  # the context is per thread
        ptrs = {}
        staged = []
        for buf, x in zip(self._inputs, inputs):
            if isinstance(x, DeviceArray):
                x.wait_on(stream)
            else:
                x = dev.to_device(x, stream)
                staged.append(x)
            ptrs[buf.name] = x.ptr
        outputs = [dev.empty(shape, b.dtype, stream)
                   for b, shape in zip(self._outputs, out_shapes)]
        for buf, out in zip(self._outputs, outputs):
            ptrs[buf.name] = out.ptr
        try:
            self._run(None, ptrs, shapes)
        finally:
            del staged
        for out in outputs:
            out.producer = self
            out.mark_ready()
        return outputs

    def _sized_call(self, inputs):
        """(inputs, output shapes, every input's and output's shape by buffer name) of a
        call of an entry with dynamic sizes; CallError for sizes the program refuses."""
        checked = check_dtypes(self.entry, self.in_specs, inputs, accept=(DeviceArray,))
        out_shapes = self.dynamic.output_shapes(self.dynamic.sizes(checked))
        shapes = {b.name: tuple(x.shape) for b, x in zip(self._inputs, checked)}
        shapes.update((b.name, s) for b, s in zip(self._outputs, out_shapes))
        return checked, out_shapes, shapes

    # -------------------------------------------------------------- interpreting plans

    def _run(self, key, ptrs, shapes=None):
        """Run plan `key` (None: the entry's) with `ptrs` holding its inputs' and outputs'
        device addresses (`shapes`: their shapes, for a plan with dynamic sizes); its
        temporaries come from the pool and go back at the end (stream order makes them
        reusable by the next work on this stream)."""
        dev, drv, stream = self.device, self.device.driver, self.stream
        plan = self._plans[key]
        ptrs = {**ptrs, **{n: a.ptr for n, a in self._constants[key].items()}}
        temps = []
        try:
            for buf in self._temps[key]:
                temps.append(dev.pool.allocate(nbytes_of(buf.shape, buf.dtype, shapes), stream))
                ptrs[buf.name] = temps[-1].ptr
            for i, step in enumerate(plan.steps):
                if isinstance(step, Copy):
                    nbytes = evaluate(step.nbytes, shapes)
                    if nbytes:
                        drv.memcpy_dtod(ptrs[step.dst], ptrs[step.src], nbytes, stream)
                elif isinstance(step, Launch):
                    self._launch(key, i, step, ptrs, shapes)
                elif isinstance(step, For):
                    self._for(plan, step, ptrs)
                elif isinstance(step, While):
                    self._while(plan, step, ptrs)
                else:
                    self._if(plan, step, ptrs)
        finally:
            for block in temps:
                dev.pool.free(block)

    def _launch(self, key, i, step, ptrs, shapes=None):
        drv = self.device.driver
        args = self._args[key][i]
        grid = step.grid
        if shapes is not None:
            grid = tuple(evaluate(g, shapes) for g in grid)
            if 0 in grid:
                return  # no blocks: a dynamic size of 0 (CUDA refuses an empty grid)
            for slot, size, dtype in args.size_slots:
                args.set_scalar(slot, evaluate(size, shapes), dtype)
        for slot, name in args.buffer_slots:
            args.slots[slot] = ptrs[name]
        try:
            drv.launch(self.functions[step.kernel], grid, step.block,
                       step.dynamic_smem, self.stream, args.address)
            if self.blocking:
                drv.stream_synchronize(self.stream)
        except CudaError as e:
            raise CudaError(f"'{self.entry}': launch #{self._ordinal[key, i]} of kernel "
                            f"'{step.kernel}' "
                            f"(grid {list(grid)}, block {list(step.block)}"
                            f"{', ' + step.loc if step.loc else ''}) failed: {e}",
                            e.code) from None

    def _scalar(self, ptr, dtype):
        """A 0-d device value on the host (waits for the stream: one small copy)."""
        drv = self.device.driver
        dtype = np.dtype(dtype)
        drv.memcpy_dtoh(self._host_byte.ctypes.data, ptr, dtype.itemsize, self.stream)
        drv.stream_synchronize(self.stream)
        return self._host_byte.view(np.uint8)[:dtype.itemsize].view(dtype)[0]

    def _call_sub(self, name, inputs, outputs):
        sub = self._plans[name]
        ptrs = {}
        for buf in sub.buffers:
            if buf.kind == "input":
                ptrs[buf.name] = inputs[buf.index]
            elif buf.kind == "output":
                ptrs[buf.name] = outputs[buf.index]
        self._run(name, ptrs)

    def _iterate(self, plan, step, ptrs, body, before=None):
        """The carries through a loop: each iteration's outputs are fresh pool blocks, the
        previous ones go back to the pool; the last carries are copied to the results."""
        dev, drv, stream = self.device, self.device.driver, self.stream
        outs = [b for b in self._plans[body].buffers if b.kind == "output"]
        outs.sort(key=lambda b: b.index)
        carries = [ptrs[n] for n in step.inits]
        captured = [ptrs[n] for n in step.captured]
        owned = []
        try:
            while True:
                extra = before(carries, captured) if before else None
                if extra is False:
                    break
                new = [dev.pool.allocate(b.nbytes, stream) for b in outs]
                self._call_sub(body, (extra or []) + carries + captured, [n.ptr for n in new])
                for block in owned:
                    dev.pool.free(block)
                owned, carries = new, [n.ptr for n in new]
            for name, src, b in zip(step.results, carries, outs):
                if b.nbytes:
                    drv.memcpy_dtod(ptrs[name], src, b.nbytes, stream)
        finally:
            for block in owned:
                dev.pool.free(block)

    def _for(self, plan, step, ptrs):
        bufs = list(step.bounds)

        def bound(v):  # a Tensor bound is read once, at the loop's start
            if v is not None:
                return v
            n = bufs.pop(0)
            return int(self._scalar(ptrs[n], plan.buffer(n).dtype))
        lower = bound(step.lower)
        upper = bound(step.upper)
        index = self.device.pool.allocate(8, self.stream)
        host = np.zeros(1, np.int64)
        it = iter(range(lower, upper, step.step))
        drv = self.device.driver

        def before(carries, captured):
            i = next(it, None)
            if i is None:
                return False
            host[0] = i  # pageable memory: staged by the driver when the call returns
            drv.memcpy_htod(index.ptr, host.ctypes.data, 8, self.stream)
            return [index.ptr]
        try:
            self._iterate(plan, step, ptrs, step.body, before)
        finally:
            self.device.pool.free(index)

    def _while(self, plan, step, ptrs):
        dev = self.device
        pred = dev.pool.allocate(8, self.stream)
        cond = self._plans[step.cond]
        dtype = next(b.dtype for b in cond.buffers if b.kind == "output")

        def before(carries, captured):
            self._call_sub(step.cond, carries + captured, [pred.ptr])
            return None if self._scalar(pred.ptr, dtype) else False
        try:
            self._iterate(plan, step, ptrs, step.body, before)
        finally:
            dev.pool.free(pred)

    def _if(self, plan, step, ptrs):
        taken = self._scalar(ptrs[step.pred], plan.buffer(step.pred).dtype)
        name = step.then if taken else step.orelse
        self._call_sub(name, [ptrs[n] for n in step.captured],
                       [ptrs[n] for n in step.results])

    def synchronize(self):
        """Wait for this executable's queued work; errors name the entry."""
        try:
            self.device.driver.stream_synchronize(self.stream)
        except CudaError as e:
            raise CudaError(f"'{self.entry}' failed while running ({len(self.plan.launches)} "
                            f"launches; set MSCC_CUDA_LAUNCH_BLOCKING=1 to find the kernel): "
                            f"{e}", e.code) from None
