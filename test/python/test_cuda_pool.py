"""The device-memory pool, through a fake driver (no GPU needed)."""
import pytest

from fake_cuda import FakeDriver
from mscc.runtime.pool import DevicePool, size_class

MiB = 1 << 20


@pytest.mark.parametrize("nbytes,expected", [
    (0, 0), (1, 512), (512, 512), (513, 1024), (MiB, MiB),
    (MiB + 1, MiB * 5 // 4), (3 * MiB, 3 * MiB), (3 * MiB + 1, 7 * MiB // 2),
    (7 * MiB + 1, 8 * MiB), (64 * MiB * 4, 256 * MiB),
])
def test_size_classes(nbytes, expected):
    assert size_class(nbytes) == expected


def test_classes_waste_at_most_a_quarter():
    for n in [MiB + 1, 5 * MiB + 3, 123456789, 2**33 + 1]:
        c = size_class(n)
        assert n <= c <= n * 1.25 + 512


def test_freed_block_is_reused_on_the_same_stream():
    drv = FakeDriver()
    pool = DevicePool(drv)
    a = pool.allocate(1000, "s1")
    ptr = a.ptr
    pool.free(a)
    b = pool.allocate(900, "s1")  # same class (1024)
    assert b.ptr == ptr
    assert pool.stats()["cache_hits"] == 1
    assert [c for c in drv.calls if c[0] == "mem_alloc"] == [("mem_alloc", 1024)]


def test_other_stream_or_class_gets_fresh_memory():
    drv = FakeDriver()
    pool = DevicePool(drv)
    a = pool.allocate(1000, "s1")
    pool.free(a)
    b = pool.allocate(1000, "s2")
    c = pool.allocate(5000, "s1")
    assert len({b.ptr, c.ptr}) == 2
    assert pool.stats()["cache_hits"] == 0


def test_statistics():
    pool = DevicePool(FakeDriver())
    a = pool.allocate(1000, "s")
    b = pool.allocate(3 * MiB, "s")
    assert pool.stats()["allocated"] == 1024 + 3 * MiB
    assert pool.stats()["peak"] == 1024 + 3 * MiB
    pool.free(b)
    st = pool.stats()
    assert st["allocated"] == 1024 and st["reserved"] == 1024 + 3 * MiB
    assert st["cached"] == 3 * MiB and st["peak"] == 1024 + 3 * MiB
    pool.free(a)
    assert pool.stats()["allocated"] == 0


def test_empty_cache_returns_cached_blocks_to_the_driver():
    drv = FakeDriver()
    pool = DevicePool(drv)
    keep = pool.allocate(2048, "s")
    for n in (1000, 50_000):
        pool.free(pool.allocate(n, "s"))
    pool.empty_cache()
    assert drv.used == 2048 and pool.stats()["reserved"] == 2048
    assert ("synchronize",) in drv.calls  # pending work may still use the blocks
    pool.free(keep)


def test_out_of_memory_releases_the_cache_and_retries():
    drv = FakeDriver(capacity=4 * MiB)
    pool = DevicePool(drv)
    pool.free(pool.allocate(3 * MiB, "s"))
    b = pool.allocate(2 * MiB, "s")       # does not fit next to the cached 3 MiB
    assert b.ptr and drv.used == 2 * MiB
    assert pool.stats()["reserved"] == 2 * MiB


def test_out_of_memory_after_retry_names_requested_and_free_bytes():
    drv = FakeDriver(capacity=4 * MiB)
    pool = DevicePool(drv)
    live = pool.allocate(3 * MiB, "s")
    with pytest.raises(MemoryError) as e:
        pool.allocate(2 * MiB, "s")
    msg = str(e.value)
    assert f"{2 * MiB} bytes requested" in msg and f"{MiB} bytes free of {4 * MiB}" in msg
    pool.free(live)


def test_block_used_on_another_stream_is_fenced_before_reuse():
    drv = FakeDriver()
    pool = DevicePool(drv)
    a = pool.allocate(1000, "producer")
    a.record_stream("consumer")
    pool.free(a)
    recorded = [c for c in drv.calls if c[0] == "event_record"]
    waits = [c for c in drv.calls if c[0] == "stream_wait_event"]
    assert recorded and recorded[0][2] == "consumer"
    assert waits and waits[0][1] == "producer" and waits[0][2] == recorded[0][1]


def test_zero_byte_allocations_need_no_memory():
    drv = FakeDriver()
    pool = DevicePool(drv)
    z = pool.allocate(0, "s")
    assert z.ptr == 0 and not drv.calls
    pool.free(z)
