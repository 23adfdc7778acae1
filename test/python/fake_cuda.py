"""A fake CUDA driver with the interface of mscc.runtime.cuda_driver.Driver, for tests on
machines without a GPU.

"Device memory" is host memory (ctypes buffers), so copies really move bytes and tests can
read results back; kernels do not run: each launch is recorded with its parameters read
from the argument array exactly as cuLaunchKernel would read them. `capacity` limits the
bytes that can be allocated, to exercise out-of-memory handling.
"""
import ctypes

from mscc.runtime.cuda_driver import CudaError, OutOfMemory


class FakeDriver:
    def __init__(self, capacity=1 << 30, compute_capability=(9, 0), fail_launch=None,
                 refuse_cubin=False):
        self.capacity = capacity
        self.compute_capability = compute_capability
        self.name = "FakeGPU"
        self.buffers = {}          # ptr -> ctypes buffer
        self.used = 0
        self.calls = []            # (name, args) of every call, in order
        self.launches = []         # dicts: kernel, grid, block, smem, stream, params
        self.modules = {}
        self.fail_launch = fail_launch  # kernel name whose launch fails
        self.refuse_cubin = refuse_cubin  # as a driver older than the toolkit does
        self.fail_sync = False            # a kernel fault, reported at synchronization
        self._next = 1

    def _handle(self, kind):
        self._next += 1
        return f"{kind}{self._next}"

    def make_current(self):
        pass

    # memory
    def mem_alloc(self, nbytes):
        self.calls.append(("mem_alloc", nbytes))
        if self.used + nbytes > self.capacity:
            raise OutOfMemory(f"cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY: {nbytes} bytes",
                              "CUDA_ERROR_OUT_OF_MEMORY")
        buf = ctypes.create_string_buffer(nbytes)
        ptr = ctypes.addressof(buf)
        self.buffers[ptr] = buf
        self.used += nbytes
        return ptr

    def mem_free(self, ptr):
        self.calls.append(("mem_free", ptr))
        buf = self.buffers.pop(ptr)
        self.used -= len(buf)

    def mem_info(self):
        return self.capacity - self.used, self.capacity

    def _check_device(self, ptr, nbytes):
        for base, buf in self.buffers.items():
            if base <= ptr and ptr + nbytes <= base + len(buf):
                return
        raise CudaError(f"invalid device range 0x{ptr:x}+{nbytes}", "CUDA_ERROR_INVALID_VALUE")

    def memcpy_htod(self, dst, src_host, nbytes, stream):
        self._check_device(dst, nbytes)
        self.calls.append(("htod", dst, nbytes, stream))
        ctypes.memmove(dst, src_host, nbytes)

    def memcpy_dtoh(self, dst_host, src, nbytes, stream):
        self._check_device(src, nbytes)
        self.calls.append(("dtoh", src, nbytes, stream))
        ctypes.memmove(dst_host, src, nbytes)

    def memcpy_dtod(self, dst, src, nbytes, stream):
        self._check_device(src, nbytes)
        self._check_device(dst, nbytes)
        self.calls.append(("dtod", dst, src, nbytes, stream))
        ctypes.memmove(dst, src, nbytes)

    # streams and events
    def stream_create(self):
        return self._handle("stream")

    def stream_destroy(self, stream):
        pass

    def stream_synchronize(self, stream, context=""):
        self.calls.append(("stream_synchronize", stream))
        if self.fail_sync:
            raise CudaError("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS",
                            "CUDA_ERROR_ILLEGAL_ADDRESS")

    def event_create(self, timing=False):
        return self._handle("event")

    def event_destroy(self, event):
        pass

    def event_record(self, event, stream):
        self.calls.append(("event_record", event, stream))

    def event_synchronize(self, event, context=""):
        pass

    def event_elapsed_ms(self, start, end):
        return 1.0

    def stream_wait_event(self, stream, event):
        self.calls.append(("stream_wait_event", stream, event))

    def synchronize(self, context=""):
        self.calls.append(("synchronize",))

    # code
    def module_load(self, image, what="module"):
        if self.refuse_cubin and image.startswith(b"\x7fELF"):
            raise CudaError("cuModuleLoadData failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
                            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
        handle = self._handle("module")
        self.modules[handle] = (what, bytes(image))
        return handle

    def module_unload(self, module):
        pass

    def module_get_function(self, module, name):
        _, image = self.modules[module]
        if b".entry " + name.encode() + b"(" not in image and not image.startswith(b"\x7fELF"):
            raise CudaError(f"cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND: kernel '{name}'",
                            "CUDA_ERROR_NOT_FOUND")
        return ("function", name)

    def launch(self, fn, grid, block, smem, stream, params_address, context=""):
        name = fn[1]
        if name == self.fail_launch:
            raise CudaError("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE",
                            "CUDA_ERROR_INVALID_VALUE")
        self.launches.append({"kernel": name, "grid": tuple(grid), "block": tuple(block),
                              "smem": smem, "stream": stream, "params": params_address})

    def read_params(self, address, count):
        """The 8-byte values a kernel with `count` parameters would receive."""
        pointers = (ctypes.c_void_p * count).from_address(address)
        return [ctypes.c_uint64.from_address(p).value for p in pointers]
