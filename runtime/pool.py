"""A caching device-memory pool, written against the driver interface of cuda_driver.py
(`mem_alloc`, `mem_free`, `mem_info`, `synchronize`, events), so it is tested with a fake.

Requests are rounded up to size classes; a freed block goes back to a per-stream cache and
is reused by the next request of its class on the same stream (work on one stream runs in
order, so the block's old contents are dead before new work touches it). A block used on
another stream than its own is released only after that stream's work up to the release
(the owner stream waits on an event). On out-of-memory the pool synchronizes, returns every
cached block to the driver, retries once, and then raises MemoryError with the numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .cuda_driver import OutOfMemory

SMALL = 1 << 20          # below this, classes are multiples of 512 bytes
GRANULE = 512


def size_class(nbytes: int) -> int:
    """Bytes actually reserved for a request: 512-byte multiples below 1 MiB, above it the
    next of 2^k * (1, 1.25, 1.5, 1.75), so a class wastes at most a quarter."""
    if nbytes <= 0:
        return 0
    if nbytes <= SMALL:
        return (nbytes + GRANULE - 1) // GRANULE * GRANULE
    power = 1 << (nbytes - 1).bit_length() - 1      # largest power of two < nbytes
    for quarter in (4, 5, 6, 7, 8):
        size = power * quarter // 4
        if size >= nbytes:
            return size
    raise AssertionError("unreachable")


@dataclass(eq=False)
class Block:
    ptr: int
    size: int              # the size class (bytes reserved)
    requested: int         # bytes asked for
    stream: object         # the stream whose work orders the block's uses
    other_streams: set = field(default_factory=set)

    def record_stream(self, stream):
        """The block is also used by work on `stream` (an input of another executable)."""
        if stream is not self.stream:
            self.other_streams.add(stream)


class DevicePool:
    def __init__(self, driver):
        self.driver = driver
        self._cache: dict = {}       # (stream, size) -> [ptr]
        self.allocated = 0           # bytes in live blocks (size classes)
        self.reserved = 0            # bytes held from the driver (live + cached)
        self.peak = 0                # most bytes ever allocated at once
        self.allocations = 0         # driver allocations
        self.cache_hits = 0

    def stats(self) -> dict:
        return {"allocated": self.allocated, "reserved": self.reserved, "peak": self.peak,
                "cached": self.reserved - self.allocated, "allocations": self.allocations,
                "cache_hits": self.cache_hits}

    def allocate(self, nbytes: int, stream=None) -> Block:
        size = size_class(nbytes)
        if size == 0:
            return Block(0, 0, nbytes, stream)
        free = self._cache.get((stream, size))
        if free:
            ptr = free.pop()
            self.cache_hits += 1
        else:
            ptr = self._fresh(size, nbytes)
        self.allocated += size
        self.peak = max(self.peak, self.allocated)
        return Block(ptr, size, nbytes, stream)

    def _fresh(self, size: int, nbytes: int) -> int:
        try:
            ptr = self.driver.mem_alloc(size)
        except OutOfMemory:
            self.empty_cache()
            try:
                ptr = self.driver.mem_alloc(size)
            except OutOfMemory:
                free, total = self.driver.mem_info()
                raise MemoryError(
                    f"CUDA out of memory: {nbytes} bytes requested ({size} after rounding), "
                    f"{free} bytes free of {total} on the device; mscc holds {self.reserved} "
                    f"bytes ({self.allocated} in use, none cached)") from None
        self.allocations += 1
        self.reserved += size
        return ptr

    def free(self, block: Block):
        """Return a block to the cache of its stream (not to the driver)."""
        if block.size == 0 or block.ptr == 0:
            return
        if block.other_streams:
            # Later work on the owner stream must wait for the other streams' uses.
            for s in block.other_streams:
                event = self.driver.event_create()
                self.driver.event_record(event, s)
                self.driver.stream_wait_event(block.stream, event)
                self.driver.event_destroy(event)
            block.other_streams.clear()
        self._cache.setdefault((block.stream, block.size), []).append(block.ptr)
        self.allocated -= block.size
        block.ptr = 0

    def empty_cache(self):
        """Give every cached block back to the driver (after pending work finished)."""
        if not any(self._cache.values()):
            return
        self.driver.synchronize()
        for (_, size), ptrs in self._cache.items():
            for ptr in ptrs:
                self.driver.mem_free(ptr)
                self.reserved -= size
        self._cache.clear()
