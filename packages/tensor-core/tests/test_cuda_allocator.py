"""The CUDA caching allocator's bookkeeping, driven over its host-memory backend.

`ember._C._cuda_host_allocator_testing(capacity, conf)` is one allocator of the C++ core over
simulated device memory of `capacity` bytes, with simulated streams whose recorded events stay
pending until the stream is synchronized. Every machine runs these (no GPU needed). The expected
values are computed here from the rules the allocator implements (PyTorch's), not read back from
it: 512-byte rounding, 2 MiB small segments, 20 MiB / 2 MiB-rounded large ones, best fit per
stream, splitting thresholds.
"""

from __future__ import annotations

import random

import pytest

import ember
from ember.cuda.memory import _format_summary

KiB, MiB = 1 << 10, 1 << 20
Allocator = ember._C._cuda_host_allocator_testing


def round_size(n):
    return max(512, -(-n // 512) * 512)


def segment_size(n):
    n = round_size(n)
    if n <= MiB:
        return 2 * MiB
    if n < 10 * MiB:
        return 20 * MiB
    return -(-n // (2 * MiB)) * (2 * MiB)


def block_size(n):
    """The block a fresh segment gives a request: the rest is split off when at least 512 bytes
    (small pool) or more than 1 MiB (large pool) would remain."""
    size, rest = round_size(n), segment_size(n) - round_size(n)
    split = rest >= 512 if size <= MiB else rest > MiB
    return size if split else size + rest


def blocks(alloc):
    """[(segment address, [(offset, size, state), ...]), ...] sorted by address."""
    return [
        (seg["address"], [(b["address"] - seg["address"], b["size"], b["state"])
                          for b in seg["blocks"]])
        for seg in alloc.snapshot()
    ]


# ---- sizes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n", [1, 511, 512, 513, 1000, 4096, MiB - 1, MiB, MiB + 1, 5 * MiB, 10 * MiB - 1,
          10 * MiB, 10 * MiB + 1, 33 * MiB + 7]
)
def test_size_rounding_and_segment_sizes(n):
    a = Allocator()
    p = a.malloc(n)
    assert p % 512 == 0
    assert a.allocated_size(p) == block_size(n)
    s = a.memory_stats()
    assert s["reserved_bytes.all.current"] == segment_size(n) == a.backend_bytes_in_use
    pool = "small_pool" if round_size(n) <= MiB else "large_pool"
    other = "large_pool" if pool == "small_pool" else "small_pool"
    assert s[f"segment.{pool}.current"] == 1 and s[f"segment.{other}.current"] == 0
    assert s["allocated_bytes.all.current"] == block_size(n)
    assert s["requested_bytes.all.current"] == n
    a.free(p)


def test_zero_bytes_is_a_null_pointer():
    a = Allocator()
    assert a.malloc(0) == 0
    a.free(0)
    assert a.memory_stats()["allocation.all.allocated"] == 0


# ---- splitting, merging, reuse ------------------------------------------------------------------


def test_small_requests_split_one_segment_and_merge_back():
    a = Allocator()
    ptrs = [a.malloc(1000) for _ in range(3)]
    base = ptrs[0]
    assert [p - base for p in ptrs] == [0, 1024, 2048]  # consecutive blocks of one segment
    assert a.backend_live_allocations == 1
    ((seg, bl),) = blocks(a)
    assert bl == [(0, 1024, "active_allocated"), (1024, 1024, "active_allocated"),
                  (2048, 1024, "active_allocated"), (3072, 2 * MiB - 3072, "inactive")]
    a.free(ptrs[1])  # a hole between two live blocks: no merge possible
    assert [b[2] for b in blocks(a)[0][1]] == ["active_allocated", "inactive",
                                              "active_allocated", "inactive"]
    assert a.memory_stats()["inactive_split.all.current"] == 2
    a.free(ptrs[2])  # merges with both neighbours
    assert blocks(a)[0][1] == [(0, 1024, "active_allocated"), (1024, 2 * MiB - 1024, "inactive")]
    a.free(ptrs[0])
    assert blocks(a)[0][1] == [(0, 2 * MiB, "inactive")]
    s = a.memory_stats()
    assert s["inactive_split.all.current"] == 0 and s["inactive_split_bytes.all.current"] == 0


def test_freed_block_is_reused_at_once_without_a_device_call():
    a = Allocator()
    p = a.malloc(300 * KiB)
    a.free(p)
    q = a.malloc(200 * KiB)
    assert q == p
    assert a.memory_stats()["num_device_alloc"] == 1


def test_large_pool_split_threshold():
    # Large pool: a block splits only when more than 1 MiB would remain.
    a = Allocator()
    p = a.malloc(19 * MiB)  # a 20 MiB segment, 1 MiB left: not split, the block is 20 MiB
    assert a.allocated_size(p) == 20 * MiB
    assert len(blocks(a)[0][1]) == 1
    a.free(p)
    q = a.malloc(18 * MiB)  # takes the same 20 MiB block, 2 MiB remain: split
    assert q == p
    assert blocks(a)[0][1] == [(0, 18 * MiB, "active_allocated"), (18 * MiB, 2 * MiB, "inactive")]
    a.free(q)


def test_small_pool_splits_off_any_rest_of_512_bytes():
    a = Allocator()
    p = a.malloc(MiB)
    q = a.malloc(MiB - 512)
    ((_, bl),) = blocks(a)
    assert bl == [(0, MiB, "active_allocated"), (MiB, MiB - 512, "active_allocated"),
                  (2 * MiB - 512, 512, "inactive")]
    assert a.malloc(1) == p + 2 * MiB - 512  # the 512-byte rest serves the next tiny request
    a.free(q)


def test_small_and_large_pools_do_not_share_blocks():
    a = Allocator()
    big = a.malloc(5 * MiB)
    a.free(big)  # a free 20 MiB large-pool block
    small = a.malloc(100 * KiB)
    assert not (big <= small < big + 20 * MiB)
    s = a.memory_stats()
    assert s["segment.small_pool.current"] == 1 and s["segment.large_pool.current"] == 1
    a.free(small)


def test_best_fit_takes_the_smallest_block_that_fits():
    a = Allocator()
    # Three separate large segments of different sizes, all freed.
    sizes = [30 * MiB, 12 * MiB, 16 * MiB]
    ptrs = {n: a.malloc(n) for n in sizes}
    for p in ptrs.values():
        a.free(p)
    assert a.malloc(13 * MiB) == ptrs[16 * MiB]
    assert a.malloc(11 * MiB) == ptrs[12 * MiB]
    assert a.malloc(14 * MiB) == ptrs[30 * MiB]  # the only one left that fits
    assert a.memory_stats()["num_device_alloc"] == 3


def test_streams_do_not_share_cached_blocks():
    a = Allocator()
    s1, s2 = a.stream_create(), a.stream_create()
    p = a.malloc(4 * KiB, s1)
    a.free(p)
    q = a.malloc(4 * KiB, s2)  # the cached block belongs to s1: a new segment for s2
    assert not (p <= q < p + 2 * MiB)
    assert a.memory_stats()["segment.all.current"] == 2
    assert a.malloc(4 * KiB, s1) == p  # s1 gets its own block back
    assert {seg["stream"] for seg in a.snapshot()} == {s1, s2}


# ---- record_stream --------------------------------------------------------------------------


def test_record_stream_defers_reuse_until_the_stream_is_done():
    a = Allocator()
    side = a.stream_create()
    p = a.malloc(MiB)
    a.record_stream(p, side)
    a.free(p)
    assert [b[2] for b in blocks(a)[0][1]][0] == "active_pending_free"
    s = a.memory_stats()
    assert s["allocated_bytes.all.current"] == 0 and s["active_bytes.all.current"] == MiB
    q = a.malloc(MiB)
    assert q != p  # the side stream may still be using p
    a.synchronize(side)  # its event completes; p returns at the next malloc
    a.free(q)
    assert a.malloc(MiB) in (p, q)
    assert a.memory_stats()["active_bytes.all.current"] == MiB


def test_record_stream_on_the_own_stream_is_a_no_op():
    a = Allocator()
    p = a.malloc(MiB)
    a.record_stream(p, 0)
    a.free(p)
    assert a.malloc(MiB) == p
    assert a.backend_live_events == 0


def test_empty_cache_waits_for_pending_events():
    a = Allocator()
    side = a.stream_create()
    p = a.malloc(MiB)
    a.record_stream(p, side)
    a.free(p)
    a.empty_cache()  # synchronizes the outstanding events, then frees the segment
    s = a.memory_stats()
    assert s["reserved_bytes.all.current"] == 0 and s["num_sync_all_streams"] == 1
    assert a.backend_bytes_in_use == 0


def test_invalid_pointers_raise():
    a = Allocator()
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        a.free(12345)
    p = a.malloc(100)
    a.free(p)
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        a.free(p)  # double free
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        a.record_stream(p, 0)


# ---- statistics -------------------------------------------------------------------------------


def test_stats_current_peak_allocated_freed():
    a = Allocator()
    p = a.malloc(3000)  # 3072
    q = a.malloc(2 * MiB)  # large pool, 20 MiB segment
    a.free(p)
    s = a.memory_stats()
    assert s["allocated_bytes.all.current"] == 2 * MiB
    assert s["allocated_bytes.all.peak"] == 2 * MiB + 3072
    assert s["allocated_bytes.all.allocated"] == 2 * MiB + 3072
    assert s["allocated_bytes.all.freed"] == 3072
    assert s["allocated_bytes.small_pool.peak"] == 3072
    assert s["allocated_bytes.large_pool.current"] == 2 * MiB
    assert s["reserved_bytes.all.current"] == 22 * MiB
    assert s["allocation.all.current"] == 1 and s["allocation.all.allocated"] == 2
    assert s["requested_bytes.all.current"] == 2 * MiB
    a.reset_peak_memory_stats()
    s = a.memory_stats()
    assert s["allocated_bytes.all.peak"] == 2 * MiB
    assert s["reserved_bytes.all.peak"] == 22 * MiB
    a.free(q)
    a.empty_cache()
    s = a.memory_stats()
    assert s["reserved_bytes.all.current"] == 0 and s["reserved_bytes.all.peak"] == 22 * MiB
    assert s["num_device_free"] == 2
    a.reset_accumulated_memory_stats()
    s = a.memory_stats()
    assert s["allocated_bytes.all.allocated"] == 0 and s["allocated_bytes.all.freed"] == 0
    assert s["num_device_alloc"] == 0


def test_stats_keys_are_torchs():
    # torch.cuda.memory_stats' documented keys, less those of features ember does not have
    # (private pools, expandable segments, allocation history).
    pooled = ["allocation", "segment", "active", "inactive_split", "allocated_bytes",
              "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"]
    metrics = ["current", "peak", "allocated", "freed"]
    expected = {f"{k}.{p}.{m}" for k in pooled for p in ("all", "small_pool", "large_pool")
                for m in metrics}
    expected |= {f"{k}.{m}" for k in ("oversize_allocations", "oversize_segments") for m in metrics}
    expected |= {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
                 "num_device_free", "max_split_size"}
    assert set(Allocator().memory_stats()) == expected


def test_random_sequence_keeps_stats_consistent_with_snapshot():
    a = Allocator(capacity=256 * MiB, conf="max_split_size_mb:40")
    streams = [0, a.stream_create(), a.stream_create()]
    rng = random.Random(7)
    live = {}
    for _ in range(800):
        if rng.random() < 0.55 or not live:
            n = rng.choice([1, 700, 4096, 70_000, MiB, MiB + 1, 3 * MiB, 12 * MiB, 50 * MiB])
            try:
                live[a.malloc(n, rng.choice(streams))] = n
            except ember.cuda.OutOfMemoryError:
                pass
        else:
            p = rng.choice(list(live))
            if rng.random() < 0.2:
                a.record_stream(p, rng.choice(streams))
            a.free(p)
            del live[p]
            if rng.random() < 0.1:
                a.synchronize()
        s = a.memory_stats()
        segs = a.snapshot()
        allocated = sum(b["size"] for g in segs for b in g["blocks"]
                        if b["state"] == "active_allocated")
        assert allocated == s["allocated_bytes.all.current"]
        assert all(a.allocated_size(p) >= round_size(n) for p, n in live.items())
        assert sum(g["total_size"] for g in segs) == s["reserved_bytes.all.current"] == a.backend_bytes_in_use
        assert s["requested_bytes.all.current"] == sum(live.values())
        assert s["reserved_bytes.all.current"] <= 256 * MiB
        for k in ("allocated_bytes", "reserved_bytes", "active_bytes"):
            assert s[f"{k}.all.current"] == s[f"{k}.small_pool.current"] + s[f"{k}.large_pool.current"]
            assert s[f"{k}.all.peak"] >= s[f"{k}.all.current"]
            assert s[f"{k}.all.allocated"] - s[f"{k}.all.freed"] == s[f"{k}.all.current"]


def test_memory_summary_table():
    a = Allocator()
    p = a.malloc(5 * MiB)
    text = _format_summary(a.memory_stats(), 0)
    lines = text.splitlines()
    assert all(len(line) == 77 for line in lines)  # 75 columns between the bars
    assert "ember CUDA memory summary, device ID 0" in text
    row = next(line for line in lines if line.startswith("| Allocated memory"))
    assert row.split("|")[2].strip() == "5120 KiB"  # current: 5 MiB
    row = next(line for line in lines if line.startswith("| GPU reserved memory"))
    assert row.split("|")[2].strip() == "20480 KiB"  # torch's unit choice: below 768 of the next
    short = _format_summary(a.memory_stats(), 0, abbreviated=True)
    assert "from large pool" in text and "from large pool" not in short
    a.free(p)


# ---- configuration ----------------------------------------------------------------------------


def test_max_split_size_keeps_large_blocks_whole():
    a = Allocator(conf="max_split_size_mb:32")
    p = a.malloc(40 * MiB)  # oversize: a 40 MiB segment
    a.free(p)
    q = a.malloc(12 * MiB)  # below max_split_size: must not carve the 40 MiB block
    assert not (p <= q < p + 40 * MiB)
    r = a.malloc(41 * MiB)  # oversize, within 20 MiB of a cached block? no: 40 < 41, new one
    a.free(r)
    t = a.malloc(34 * MiB)  # oversize request: the 40 MiB block fits within 20 MiB of slack
    assert t == p and a.allocated_size(t) == 40 * MiB  # taken whole, not split
    s = a.memory_stats()
    assert s["max_split_size"] == 32 * MiB
    assert s["oversize_allocations.current"] == 1
    assert s["oversize_segments.current"] == 2
    a.free(q)
    a.free(t)


def test_without_max_split_size_large_blocks_are_split():
    a = Allocator()
    p = a.malloc(40 * MiB)
    a.free(p)
    assert a.malloc(12 * MiB) == p  # best fit carves the cached block
    assert a.memory_stats()["max_split_size"] == 2**63 - 1


def test_max_split_size_frees_oversize_blocks_before_failing():
    a = Allocator(capacity=100 * MiB, conf="max_split_size_mb:24")
    p = a.malloc(60 * MiB)
    a.free(p)  # cached, 60 MiB of 100 reserved
    q = a.malloc(50 * MiB)  # 60 MiB block is > 50 + 20? no: 60 < 70, so it is reused
    assert q == p
    a.free(q)
    r = a.malloc(30 * MiB)  # 60 >= 30 + 20: not reused; device has 40 MiB: allocated fresh
    s = a.memory_stats()
    assert s["num_alloc_retries"] == 0 and s["reserved_bytes.all.current"] == 90 * MiB
    a.free(r)
    # 35 MiB: the 30 MiB block is too small, the 60 MiB one too large (>= 35 + 20), and the
    # device has 10 MiB left: the smallest cached oversize block that covers it is freed first.
    t = a.malloc(35 * MiB)
    s = a.memory_stats()
    assert s["num_alloc_retries"] == 0  # released without the full flush of the cache
    assert s["num_device_free"] == 1
    assert s["reserved_bytes.all.current"] == (30 + 36) * MiB
    a.free(t)


@pytest.mark.parametrize(
    "conf, message",
    [
        ("max_split_size_mb:20", "max_split_size_mb too small, must be > 20"),
        ("max_split_size_mb:abc", "max_split_size_mb must be a whole number"),
        ("max_split_size_mb:-5", "max_split_size_mb must be a whole number"),
        ("garbage_collection_threshold:0", "too small"),
        ("garbage_collection_threshold:1.0", "too big"),
        ("garbage_collection_threshold:half", "must be a number"),
        ("max_split_size_mb", "expected key:value"),
        ("expandable_segments:True", "ember does not implement"),
        ("backend:cudaMallocAsync", "not supported"),
        ("frobnicate:3", "unrecognized option 'frobnicate'"),
    ],
)
def test_alloc_conf_errors(conf, message):
    with pytest.raises(RuntimeError, match="EMBER_CUDA_ALLOC_CONF: .*" + message):
        Allocator(conf=conf)


def test_alloc_conf_accepts_torch_syntax():
    assert ember._C._cuda_alloc_conf_check(" max_split_size_mb:64 ,garbage_collection_threshold:0.6,") \
        == (64 * MiB, 0.6)
    assert ember._C._cuda_alloc_conf_check("backend:native")[1] == 0.0


def test_garbage_collection_threshold_frees_old_cached_blocks():
    a = Allocator(capacity=100 * MiB, conf="garbage_collection_threshold:0.5")
    a.set_memory_fraction(1.0)  # GC applies under a cap (PyTorch's rule)
    ptrs = [a.malloc(20 * MiB) for _ in range(3)]  # three 20 MiB segments
    for p in ptrs:
        a.free(p)
    assert a.memory_stats()["reserved_bytes.all.current"] == 60 * MiB
    a.malloc(20 * MiB)  # reuses one (no device call); the other two age by one request
    # Reserved memory (60 MiB) is above the threshold (0.5 x 100 MiB): a request that needs a
    # new segment first frees the cached segments that were not reused for the longest (here
    # both) although the device could have served it.
    a.malloc(30 * MiB)
    s = a.memory_stats()
    assert s["num_device_free"] == 2 and s["num_alloc_retries"] == 0
    assert s["reserved_bytes.all.current"] == 50 * MiB


def test_garbage_collection_needs_a_memory_fraction():
    a = Allocator(capacity=100 * MiB, conf="garbage_collection_threshold:0.5")
    for p in [a.malloc(20 * MiB) for _ in range(3)]:
        a.free(p)
    a.malloc(30 * MiB)
    assert a.memory_stats()["num_device_free"] == 0


# ---- out of memory ----------------------------------------------------------------------------


def test_cached_blocks_are_freed_and_the_allocation_retried():
    a = Allocator(capacity=64 * MiB)
    p = a.malloc(40 * MiB)
    a.free(p)  # cached: 40 of 64 MiB reserved
    q = a.malloc(50 * MiB)  # cannot fit next to the cache: free it, retry
    s = a.memory_stats()
    assert s["num_alloc_retries"] == 1 and s["num_ooms"] == 0
    assert s["reserved_bytes.all.current"] == 50 * MiB
    a.free(q)


def test_out_of_memory_error_says_what_was_asked_allocated_and_cached():
    a = Allocator(capacity=100 * MiB)
    live = a.malloc(60 * MiB)
    cached = a.malloc(3 * MiB)  # a 20 MiB segment, 17 MiB of it cached
    with pytest.raises(ember.cuda.OutOfMemoryError) as info:
        a.malloc(30 * MiB)
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "CUDA out of memory. Tried to allocate 30.00 MiB" in msg
    assert "total capacity of 100.00 MiB of which 20.00 MiB is free" in msg
    assert "63.00 MiB is allocated by ember" in msg
    assert "17.00 MiB is reserved by ember but unallocated" in msg
    assert "EMBER_CUDA_ALLOC_CONF=max_split_size_mb" in msg and "empty_cache" in msg
    s = a.memory_stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 1
    a.free(live)
    a.free(cached)
    assert a.malloc(30 * MiB)  # memory is back: the same request now succeeds


def test_memory_fraction_caps_reservations():
    a = Allocator(capacity=100 * MiB)
    a.set_memory_fraction(0.25)
    p = a.malloc(20 * MiB)
    with pytest.raises(ember.cuda.OutOfMemoryError, match="limited to 25.00 MiB by ember.cuda.set_per_process_memory_fraction"):
        a.malloc(6 * MiB)  # would need another 20 MiB segment
    a.free(p)
    a.set_memory_fraction(1.0)
    assert a.malloc(60 * MiB)
    with pytest.raises(ValueError, match="Invalid fraction value"):
        a.set_memory_fraction(1.5)


def test_huge_request_is_an_oom_not_an_overflow():
    a = Allocator()
    with pytest.raises(ember.cuda.OutOfMemoryError, match="Tried to allocate"):
        a.malloc(2**63)
    assert a.memory_stats()["reserved_bytes.all.current"] == 0


def test_empty_cache_releases_only_free_segments():
    a = Allocator()
    keep = a.malloc(100)  # pins its 2 MiB segment
    drop = a.malloc(200)
    big = a.malloc(15 * MiB)
    a.free(drop)
    a.free(big)
    a.empty_cache()
    (seg,) = a.snapshot()
    assert seg["total_size"] == 2 * MiB and seg["segment_type"] == "small"
    assert a.backend_bytes_in_use == 2 * MiB
    assert a.memory_stats()["reserved_bytes.all.current"] == 2 * MiB
    a.free(keep)
    a.empty_cache()
    assert a.snapshot() == [] and a.backend_bytes_in_use == 0


def test_destroying_the_allocator_returns_everything():
    a = Allocator()
    a.malloc(100)
    a.malloc(30 * MiB)
    del a  # no leak under ASan, no crash
