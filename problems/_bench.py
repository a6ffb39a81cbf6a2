"""Helpers shared by the benchmark modules (not discovered as a problem module: its name starts with ``_``)."""

from __future__ import annotations


def peak_mb(fn) -> float:
    """Peak memory allocated by ``fn()`` as traced by ``tracemalloc`` (numpy's buffers included), in MiB."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
