"""Spark's `xxhash64` in compiled form (`org.apache.spark.sql.catalyst.expressions.XXH64`, seed
42), for kernels that must break ties or pick samples as the DataFrame form of the same rule does:
`xxhash64(a, b, ...)` folds each argument into the running hash, an int with `hash_int` and a long
with `hash_long`, starting from `SPARK_SEED`; Spark's column is the result read as a signed long."""

from __future__ import annotations

import numba as nb
import numpy as np

_PRIME1 = np.uint64(0x9E3779B185EBCA87)
_PRIME2 = np.uint64(0xC2B2AE3D27D4EB4F)
_PRIME3 = np.uint64(0x165667B19E3779F9)
_PRIME4 = np.uint64(0x85EBCA77C2B2AE63)
_PRIME5 = np.uint64(0x27D4EB2F165667C5)
_LOW32 = np.uint64(0xFFFFFFFF)
SPARK_SEED = np.uint64(42)


@nb.njit(cache=True, nogil=True)
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@nb.njit(cache=True, nogil=True)
def _fmix(h):
    h ^= h >> np.uint64(33)
    h *= _PRIME2
    h ^= h >> np.uint64(29)
    h *= _PRIME3
    return h ^ (h >> np.uint64(32))


@nb.njit(cache=True, nogil=True)
def hash_int(value, seed):
    """Fold a 32-bit int (an int literal of the expression) into `seed`."""
    h = seed + _PRIME5 + np.uint64(4)
    h ^= (np.uint64(value) & _LOW32) * _PRIME1
    return _fmix(_rotl(h, 23) * _PRIME2 + _PRIME3)


@nb.njit(cache=True, nogil=True)
def hash_long(value, seed):
    """Fold a 64-bit long (a long column) into `seed`."""
    h = seed + _PRIME5 + np.uint64(8)
    h ^= _rotl(np.uint64(value) * _PRIME2, 31) * _PRIME1
    return _fmix(_rotl(h, 27) * _PRIME1 + _PRIME4)
