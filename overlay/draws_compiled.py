"""`overlay.draws` for numba kernels: the same keyed SplitMix64 draws, one key at a time, so a
compiled simulation draws exactly what the Python and Spark code draw (`tests/test_per_topic.py`
holds them equal)."""

from __future__ import annotations

import numba as nb
import numpy as np

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@nb.njit(cache=True, nogil=True, inline="always")
def splitmix64(z):
    z = np.uint64(z) + _GAMMA
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True, nogil=True, inline="always")
def key(seed, purpose):
    """The state after (seed, purpose): `fold` the values into it."""
    return splitmix64(splitmix64(np.uint64(seed)) ^ np.uint64(purpose))


@nb.njit(cache=True, nogil=True, inline="always")
def fold(state, value):
    """The state after one more value (an int64, negative as its two's complement)."""
    return splitmix64(state ^ np.uint64(np.int64(value)))
