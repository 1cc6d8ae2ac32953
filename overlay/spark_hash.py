"""Spark's `xxhash64` in compiled form (`org.apache.spark.sql.catalyst.expressions.XXH64`, seed
42), for kernels that must break ties or pick samples as the DataFrame form of the same rule does:
`xxhash64(a, b, ...)` folds each argument into the running hash, an int with `hash_int`, a long
with `hash_long` and a string with `hash_bytes` (its UTF-8 bytes), starting from `SPARK_SEED`; Spark's column is the result read as a signed long."""

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


@nb.njit(cache=True, nogil=True)
def _lane(data, at):
    """The 8 bytes of `data` from `at` as a little-endian word."""
    word = np.uint64(0)
    for i in range(8):
        word |= np.uint64(data[at + i]) << np.uint64(8 * i)
    return word


@nb.njit(cache=True, nogil=True)
def _accumulate(acc, lane):
    return _rotl(acc + lane * _PRIME2, 31) * _PRIME1


@nb.njit(cache=True, nogil=True)
def hash_bytes(data, seed):
    """Fold a byte string (uint8 array: a string's UTF-8 bytes) into `seed`: the reference XXH64."""
    n, at = len(data), 0
    if n >= 32:
        v1, v2, v3, v4 = seed + _PRIME1 + _PRIME2, seed + _PRIME2, seed, seed - _PRIME1
        while at + 32 <= n:
            v1 = _accumulate(v1, _lane(data, at))
            v2 = _accumulate(v2, _lane(data, at + 8))
            v3 = _accumulate(v3, _lane(data, at + 16))
            v4 = _accumulate(v4, _lane(data, at + 24))
            at += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for v in (v1, v2, v3, v4):
            h = (h ^ _accumulate(np.uint64(0), v)) * _PRIME1 + _PRIME4
    else:
        h = seed + _PRIME5
    h += np.uint64(n)
    while at + 8 <= n:
        h = _rotl(h ^ _accumulate(np.uint64(0), _lane(data, at)), 27) * _PRIME1 + _PRIME4
        at += 8
    if at + 4 <= n:
        word = np.uint64(0)
        for i in range(4):
            word |= np.uint64(data[at + i]) << np.uint64(8 * i)
        h = _rotl(h ^ (word * _PRIME1), 23) * _PRIME2 + _PRIME3
        at += 4
    while at < n:
        h = _rotl(h ^ (np.uint64(data[at]) * _PRIME5), 11) * _PRIME1
        at += 1
    return _fmix(h)
