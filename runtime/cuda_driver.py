"""The CUDA driver API (cuda-bindings) behind a small interface the runtime is written
against, so that the pool and executables can be tested with a fake driver (no GPU).

Every failing call raises CudaError naming the call and the driver's error name; an
allocation that fails for lack of memory raises OutOfMemory. cuda-bindings is imported on
first use (`mscc[cuda]` extra), never at import time.
"""
from __future__ import annotations


class CudaError(RuntimeError):
    """A CUDA driver call failed. `code` is the driver's error name."""

    def __init__(self, message: str, code: str = ""):
        super().__init__(message)
        self.code = code


class OutOfMemory(CudaError):
    pass


class CudaUnavailable(CudaError):
    """No CUDA: cuda-bindings missing, no driver, or no device."""


def _import_bindings():
    try:
        from cuda.bindings import driver  # cuda-bindings >= 12.6
        return driver
    except ImportError:
        pass
    try:
        from cuda import cuda as driver  # older cuda-python
        return driver
    except ImportError:
        raise CudaUnavailable("cuda-bindings is not installed (pip install 'mscc[cuda]')",
                              "NOT_INSTALLED") from None


class Driver:
    """One device's primary context through cuda-bindings. Handles are the bindings' own
    objects; device pointers are ints."""

    def __init__(self, ordinal: int = 0):
        self._d = d = _import_bindings()
        self._success = d.CUresult.CUDA_SUCCESS
        self._oom = d.CUresult.CUDA_ERROR_OUT_OF_MEMORY
        try:
            init = d.cuInit(0)
        except Exception as e:  # noqa: BLE001  (the bindings raise when libcuda is absent)
            raise CudaUnavailable(f"the NVIDIA driver could not be loaded: {e}",
                                  "NO_DRIVER") from None
        if init[0] == d.CUresult.CUDA_ERROR_NO_DEVICE:
            raise CudaUnavailable("no CUDA device", "CUDA_ERROR_NO_DEVICE")
        self._check("cuInit", init)
        count, = self._check("cuDeviceGetCount", d.cuDeviceGetCount())
        if count <= ordinal:
            raise CudaUnavailable(f"no CUDA device #{ordinal} ({count} found)", "NO_DEVICE")
        self.device, = self._check("cuDeviceGet", d.cuDeviceGet(ordinal))
        self.context, = self._check("cuDevicePrimaryCtxRetain",
                                    d.cuDevicePrimaryCtxRetain(self.device))
        self.make_current()
        attr = d.CUdevice_attribute
        major, = self._check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device))
        minor, = self._check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device))
        self.compute_capability = (int(major), int(minor))
        name, = self._check("cuDeviceGetName", d.cuDeviceGetName(256, self.device))
        self.name = bytes(name).split(b"\0")[0].decode(errors="replace")

    # -------------------------------------------------------------- errors

    def error_name(self, err) -> str:
        try:
            res, name = self._d.cuGetErrorName(err)
            return name.decode() if res == self._success else str(err)
        except Exception:  # noqa: BLE001  (a name for a message; never mask the error)
            return str(err)

    def _check(self, call: str, result, context: str = ""):
        err, rest = result[0], result[1:]
        if err != self._success:
            name = self.error_name(err)
            cls = OutOfMemory if err == self._oom else CudaError
            raise cls(f"{call} failed: {name}{': ' + context if context else ''}", name)
        return rest

    def make_current(self):
        self._check("cuCtxSetCurrent", self._d.cuCtxSetCurrent(self.context))

    # -------------------------------------------------------------- memory

    def mem_alloc(self, nbytes: int) -> int:
        ptr, = self._check("cuMemAlloc", self._d.cuMemAlloc(nbytes), f"{nbytes} bytes")
        return int(ptr)

    def mem_free(self, ptr: int):
        self._check("cuMemFree", self._d.cuMemFree(ptr))

    def mem_info(self) -> tuple[int, int]:
        free, total = self._check("cuMemGetInfo", self._d.cuMemGetInfo())
        return int(free), int(total)

    def memcpy_htod(self, dst: int, src_host: int, nbytes: int, stream):
        self._check("cuMemcpyHtoDAsync", self._d.cuMemcpyHtoDAsync(dst, src_host, nbytes,
                                                                    stream))

    def memcpy_dtoh(self, dst_host: int, src: int, nbytes: int, stream):
        self._check("cuMemcpyDtoHAsync", self._d.cuMemcpyDtoHAsync(dst_host, src, nbytes,
                                                                    stream))

    def memcpy_dtod(self, dst: int, src: int, nbytes: int, stream):
        self._check("cuMemcpyDtoDAsync", self._d.cuMemcpyDtoDAsync(dst, src, nbytes, stream))

    # -------------------------------------------------------------- streams, events

    def stream_create(self):
        flags = int(self._d.CUstream_flags.CU_STREAM_NON_BLOCKING)
        stream, = self._check("cuStreamCreate", self._d.cuStreamCreate(flags))
        return stream

    def stream_destroy(self, stream):
        self._check("cuStreamDestroy", self._d.cuStreamDestroy(stream))

    def stream_synchronize(self, stream, context: str = ""):
        self._check("cuStreamSynchronize", self._d.cuStreamSynchronize(stream), context)

    def event_create(self, timing: bool = False):
        flags = 0 if timing else int(self._d.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        event, = self._check("cuEventCreate", self._d.cuEventCreate(flags))
        return event

    def event_destroy(self, event):
        self._check("cuEventDestroy", self._d.cuEventDestroy(event))

    def event_record(self, event, stream):
        self._check("cuEventRecord", self._d.cuEventRecord(event, stream))

    def event_synchronize(self, event, context: str = ""):
        self._check("cuEventSynchronize", self._d.cuEventSynchronize(event), context)

    def event_elapsed_ms(self, start, end) -> float:
        # CUDA 12.8 added a _v2 (same result for events on one device); 13 may keep only it.
        fn = getattr(self._d, "cuEventElapsedTime", None) or self._d.cuEventElapsedTime_v2
        ms, = self._check("cuEventElapsedTime", fn(start, end))
        return float(ms)

    def stream_wait_event(self, stream, event):
        self._check("cuStreamWaitEvent", self._d.cuStreamWaitEvent(stream, event, 0))

    def synchronize(self, context: str = ""):
        self._check("cuCtxSynchronize", self._d.cuCtxSynchronize(), context)

    # -------------------------------------------------------------- code

    def module_load(self, image: bytes, what: str = "module"):
        if not image.startswith(b"\x7fELF") and not image.endswith(b"\0"):
            image += b"\0"  # PTX is read as a C string
        module, = self._check("cuModuleLoadData", self._d.cuModuleLoadData(image), what)
        return module

    def module_unload(self, module):
        self._check("cuModuleUnload", self._d.cuModuleUnload(module))

    def module_get_function(self, module, name: str):
        fn, = self._check("cuModuleGetFunction",
                          self._d.cuModuleGetFunction(module, name.encode()), f"kernel '{name}'")
        return fn

    def launch(self, fn, grid, block, smem: int, stream, params_address: int,
               context: str = ""):
        self._check("cuLaunchKernel", self._d.cuLaunchKernel(
            fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem, stream,
            params_address, 0), context)
