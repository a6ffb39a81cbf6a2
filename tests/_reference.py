"""Independent reference implementations the tests compare the package against."""

from __future__ import annotations

import numpy as np


def bisection_projection(v, y, C, level=0.0):
    """Euclidean projection onto ``{0 <= a <= C, y'a = level}`` (``C`` a number or one bound per coordinate):
    ``clip(v - lam y, 0, C)`` with the root ``lam`` of the decreasing ``y'clip(v - lam y, 0, C) - level`` found by
    bisection to the last bit (no sums of C-sized breakpoint steps, so exact for any C)."""
    v, y = np.asarray(v, dtype=float), np.asarray(y, dtype=float)

    def phi(lam):
        return float(y @ np.clip(v - lam * y, 0.0, C)) - level

    hi = float(np.max(np.abs(v))) + float(np.max(C)) + abs(level) + 1.0
    lo = -hi
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if phi(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    lam = lo if abs(phi(lo)) <= abs(phi(hi)) else hi
    return np.clip(v - lam * y, 0.0, C)
