"""Shared by the fuzz tests: a stable hash of an input (arrays, parameters), to count distinct inputs."""

import hashlib

import numpy as np


def digest(*objs) -> str:
    """SHA-1 over arrays (dtype, shape, bytes), nested lists/tuples and ``repr`` of anything else."""
    h = hashlib.sha1()
    for o in objs:
        if isinstance(o, np.ndarray):
            h.update(str((o.dtype, o.shape)).encode())
            h.update(np.ascontiguousarray(o).tobytes())
        elif isinstance(o, (list, tuple)):
            h.update(b"(" + digest(*o).encode() + b")")
        else:
            h.update(repr(o).encode())
        h.update(b"|")
    return h.hexdigest()
