"""The draws every compiled yardstick shares: the tests' oracles' splitmix64 folded over a key
(`tests/gossipsub_oracle.py`'s `mix` and `rnd`), in numba. `rndK(seed, purpose, k keys)` mixes
the seed, then the purpose, then each key in turn; `fold` mixes one more key into a draw state."""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def mix(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True)
def fold(x, a):
    """The draw state x with the key value a mixed in."""
    return mix(x ^ np.uint64(a))


@nb.njit(cache=True)
def rnd1(seed, purpose, a):
    return fold(mix(mix(np.uint64(seed)) ^ np.uint64(purpose)), a)


@nb.njit(cache=True)
def rnd2(seed, purpose, a, b):
    return fold(rnd1(seed, purpose, a), b)


@nb.njit(cache=True)
def rnd3(seed, purpose, a, b, c):
    return fold(rnd2(seed, purpose, a, b), c)


@nb.njit(cache=True)
def rnd4(seed, purpose, a, b, c, d):
    return fold(rnd3(seed, purpose, a, b, c), d)
