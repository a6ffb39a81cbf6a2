"""Helpers shared by the benchmark modules (not discovered as a problem module: its name starts with ``_``)."""

from __future__ import annotations


def peak_mb(fn) -> float:
    """Peak memory allocated by ``fn()`` as traced by ``tracemalloc`` (numpy's buffers included), in MiB.

    Parameters
    ----------
    fn : callable
        Called once, without arguments.

    Returns
    -------
    float
    """
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def available_mb() -> float | None:
    """The memory the operating system reports as available (``MemAvailable`` of ``/proc/meminfo``), in MiB.

    Returns
    -------
    float or None
        None where that is unknown (not Linux).
    """
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
