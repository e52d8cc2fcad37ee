"""The CUDA caching allocator's Python face: statistics, cache control, the per-process cap.

The allocator itself is C++ (csrc/cuda/caching_allocator.cpp); these are torch.cuda's functions
of the same names, over the same statistics keys (``"allocated_bytes.all.current"``, ...).
"""

from __future__ import annotations

import collections
from typing import Any

from ember import _C
from ember.cuda._device import _get_device_index, is_available


def memory_stats(device: Any = None) -> dict[str, Any]:
    """The allocator's counters for a device, as an ordered dict sorted by key.

    Each counter (allocation, segment, active, inactive_split, allocated_bytes, reserved_bytes,
    active_bytes, inactive_split_bytes, requested_bytes) has ``current``, ``peak``,
    ``allocated`` and ``freed`` values for the ``all``, ``small_pool`` and ``large_pool`` pools,
    e.g. ``"reserved_bytes.all.peak"``; then ``num_alloc_retries``, ``num_ooms``,
    ``num_sync_all_streams``, ``num_device_alloc``, ``num_device_free``, ``oversize_*`` and
    ``max_split_size``. Empty where CUDA is not available (as torch's before CUDA is initialised).
    """
    if not is_available():
        return collections.OrderedDict()
    stats = _C._cuda_memory_stats(_get_device_index(device))
    return collections.OrderedDict(sorted(stats.items()))


def _stat(key: str, device: Any) -> int:
    return int(memory_stats(device).get(key, 0))


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live allocations (block sizes, 512-byte rounded) on a device."""
    return _stat("allocated_bytes.all.current", device)


def max_memory_allocated(device: Any = None) -> int:
    """Peak of memory_allocated since the start or the last reset_peak_memory_stats."""
    return _stat("allocated_bytes.all.peak", device)


def memory_reserved(device: Any = None) -> int:
    """Bytes in segments obtained from the device (allocated plus cached)."""
    return _stat("reserved_bytes.all.current", device)


def max_memory_reserved(device: Any = None) -> int:
    """Peak of memory_reserved since the start or the last reset_peak_memory_stats."""
    return _stat("reserved_bytes.all.peak", device)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Sets every ``peak`` counter of a device to its ``current`` value."""
    _C._cuda_reset_peak_memory_stats(_get_device_index(device))


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Sets the ``allocated``/``freed`` counters and the event counts of a device to zero."""
    _C._cuda_reset_accumulated_memory_stats(_get_device_index(device))


def empty_cache() -> None:
    """Returns every cached segment in which no block is in use to the device, so that other
    processes (and other libraries) can have it. Live allocations are untouched. Does nothing
    where CUDA is not available."""
    if is_available():
        _C._cuda_empty_cache()


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Caps the memory the allocator may reserve on a device at `fraction` of its total; a
    request beyond the cap raises OutOfMemoryError (after the cache is freed and retried)."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _C._cuda_set_memory_fraction(fraction, _get_device_index(device))


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of a device, as the driver reports them (cudaMemGetInfo)."""
    return tuple(_C._cuda_mem_get_info(_get_device_index(device)))


def memory_snapshot() -> list[dict[str, Any]]:
    """Every segment of every device: address, total/allocated/active/requested size, stream,
    segment_type ("small"/"large") and its blocks (address, size, requested_size, state)."""
    return list(_C._cuda_memory_snapshot())


def caching_allocator_alloc(size: int, device: Any = None, stream: Any = None) -> int:
    """Device memory from the caching allocator, as an integer address (freed with
    caching_allocator_delete). `stream` defaults to the device's current stream."""
    from ember.cuda.streams import current_stream

    idx = _get_device_index(device)
    handle = current_stream(idx).cuda_stream if stream is None else _stream_handle(stream)
    return int(_C._cuda_caching_allocator_alloc(int(size), idx, handle))


def caching_allocator_delete(mem_ptr: int) -> None:
    """Returns memory from caching_allocator_alloc to the allocator's cache."""
    _C._cuda_caching_allocator_delete(int(mem_ptr))


def _stream_handle(stream: Any) -> int:
    return int(getattr(stream, "cuda_stream", stream))


# ---- memory_summary ------------------------------------------------------------------------

_BYTE_METRICS = [
    ("allocated_bytes", "Allocated memory"),
    ("active_bytes", "Active memory"),
    ("requested_bytes", "Requested memory"),
    ("reserved_bytes", "GPU reserved memory"),
    ("inactive_split_bytes", "Non-releasable memory"),
]
_COUNT_METRICS = [
    ("allocation", "Allocations"),
    ("active", "Active allocs"),
    ("segment", "GPU reserved segments"),
    ("inactive_split", "Non-releasable allocs"),
]


def _fmt_size(value: int, scale_by: int) -> str:
    # The unit is chosen from the first column of the row's group, so a group reads alike.
    units = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"]
    unit = 0
    while unit + 1 < len(units) and scale_by >= 768 * 1024:
        value //= 1024
        scale_by /= 1024
        unit += 1
    return f"{value:6d} {units[unit]}"


def _fmt_count(value: int, scale_by: int) -> str:
    units = [" ", "K", "M"]
    unit = 0
    while unit + 1 < len(units) and scale_by >= 750 * 1000:
        value //= 1000
        scale_by /= 1000
        unit += 1
    return f"{value:7d} {units[unit]} "


def _format_summary(stats: dict[str, Any], device: int, abbreviated: bool = False) -> str:
    """torch.cuda.memory_summary's table, from a memory_stats dict."""
    rule, double = "-" * 75, "=" * 75
    lines = [
        double,
        f" {'ember CUDA memory summary, device ID ' + str(device):^73} ",
        rule,
        f" {'CUDA OOMs: ' + str(stats.get('num_ooms', 0)):^35}|"
        f"{'cudaMalloc retries: ' + str(stats.get('num_alloc_retries', 0)):^38}",
        double,
        "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ",
    ]
    pools = [("all", None)] + ([] if abbreviated else [("large_pool", "      from large pool"),
                                                       ("small_pool", "      from small pool")])
    for metrics, fmt in ((_BYTE_METRICS, _fmt_size), (_COUNT_METRICS, _fmt_count)):
        for key, title in metrics:
            lines.append(rule)
            first = None
            for pool, label in pools:
                vals = [int(stats.get(f"{key}.{pool}.{f}", 0))
                        for f in ("current", "peak", "allocated", "freed")]
                first = first or vals
                cells = " | ".join(fmt(v, s) for v, s in zip(vals, first))
                lines.append(f" {label or title:<21} | {cells} ")
    lines.append(rule)
    for key, title in (("oversize_allocations", "Oversize allocations"),
                       ("oversize_segments", "Oversize GPU segments")):
        vals = [int(stats.get(f"{key}.{f}", 0)) for f in ("current", "peak", "allocated", "freed")]
        lines.append(f" {title:<21} | " + " | ".join(_fmt_count(v, v) for v in vals) + " ")
    lines.append(double)
    return "|" + "|\n|".join(lines) + "|\n"


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A printable table of the allocator's statistics for a device (torch's layout)."""
    idx = _get_device_index(device)
    return _format_summary(_C._cuda_memory_stats(idx), idx, abbreviated)
