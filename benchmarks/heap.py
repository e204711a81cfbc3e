"""What the server process's memory is made of, for the subscription benchmark (SIGUSR2).

RSS alone cannot tell a leak of Python objects from memory the allocators keep after use. This
report separates them, after a full garbage collection:

- `gc_objects`: objects the garbage collector tracks (containers: dicts, lists, instances,
  frames...), excluding those frozen at start-up (`gc.freeze()` in the app's lifespan); a leak
  of Python objects grows it.
- `allocated_blocks`: `sys.getallocatedblocks()`, every live block of Python's allocator
  (strings and numbers too), whatever their size.
- `malloc_in_use_kib` / `malloc_free_kib`: glibc's `mallinfo2()`: bytes malloc has handed out
  and bytes it holds free in its heaps (not returned to the OS: RSS that is no object).
- `rss_kib`, and with `trim`, `rss_after_trim_kib` after `malloc_trim(0)` (glibc returns the
  free pages of every arena to the OS): if RSS then falls to the level of before, the growth
  was allocator retention, not objects.
- `top_types`: the most numerous object types, so a round-to-round diff names what grew.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import json
import sys
import tracemalloc
from pathlib import Path


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):  # not glibc (musl, macOS): no such figures
        return None
    return libc


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def report(trim: bool = False, top: int = 25) -> dict[str, object]:
    gc.collect()
    objects = gc.get_objects()
    types = collections.Counter(type(o).__qualname__ for o in objects)
    figures: dict[str, object] = {
        "gc_objects": len(objects),
        "allocated_blocks": sys.getallocatedblocks(),
        "rss_kib": rss_kib(),
    }
    del objects
    libc = _libc()
    if libc is not None:
        info = libc.mallinfo2()
        figures["malloc_in_use_kib"] = (info.uordblks + info.hblkhd) // 1024
        figures["malloc_free_kib"] = info.fordblks // 1024
        if trim:
            libc.malloc_trim(0)
            figures["rss_after_trim_kib"] = rss_kib()
    figures["top_types"] = dict(types.most_common(top))
    if tracemalloc.is_tracing():
        global _last_snapshot
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        figures["traced_kib"] = tracemalloc.get_traced_memory()[0] // 1024
        if _last_snapshot is not None:
            figures["traced_growth"] = [
                f"{stat.size_diff / 1024:+.0f} KiB {stat.count_diff:+d} blocks {stat.traceback}"
                for stat in snapshot.compare_to(_last_snapshot, "lineno")[:top]
            ]
        _last_snapshot = snapshot
    return figures


_last_snapshot: tracemalloc.Snapshot | None = None


def write_report(path: str, trim: bool) -> None:
    Path(path).write_text(json.dumps(report(trim)))


def install(path: str, trim: bool) -> None:
    """SIGUSR2 writes `report(trim)` as JSON to `path`."""
    import signal

    def on_signal(*_: object) -> None:
        write_report(path, trim)

    signal.signal(signal.SIGUSR2, on_signal)
