"""What the compiled simulations share (numba): a binary heap of events as int64 rows, popped in
lexicographic order of their columns; tables of rows that grow as needed (one row per node, a
count of used columns per row), buffers that grow as they fill; the latency model's delay between
two positions."""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def _before(events, i, j):
    for c in range(events.shape[1]):
        if events[i, c] != events[j, c]:
            return events[i, c] < events[j, c]
    return False


@nb.njit(cache=True, nogil=True)
def _swap(events, i, j):
    for c in range(events.shape[1]):
        events[i, c], events[j, c] = events[j, c], events[i, c]


@nb.njit(cache=True, nogil=True)
def push(events, count, row):
    """The heap of `count` events with `row` added (the array grown when full)."""
    if count == events.shape[0]:
        grown = np.empty((2 * events.shape[0], events.shape[1]), dtype=np.int64)
        grown[:count] = events[:count]
        events = grown
    events[count] = row
    i = count
    while i > 0:
        parent = (i - 1) // 2
        if not _before(events, i, parent):
            break
        _swap(events, i, parent)
        i = parent
    return events


@nb.njit(cache=True, nogil=True)
def pop(events, count, into):
    """Copies the first of `count` events into `into` and restores the heap over count - 1."""
    into[:] = events[0]
    count -= 1
    events[0] = events[count]
    i = 0
    while True:
        smallest, left, right = i, 2 * i + 1, 2 * i + 2
        if left < count and _before(events, left, smallest):
            smallest = left
        if right < count and _before(events, right, smallest):
            smallest = right
        if smallest == i:
            return
        _swap(events, i, smallest)
        i = smallest


@nb.njit(cache=True, nogil=True)
def grown(table, used):
    """`table`, or a copy with twice its columns when a row's `used` columns fill it."""
    if used < table.shape[1]:
        return table
    wider = np.empty((table.shape[0], 2 * table.shape[1]), dtype=table.dtype)
    wider[:, : table.shape[1]] = table
    return wider


@nb.njit(cache=True, nogil=True)
def longer(array, size):
    """`array`, or a copy at least twice as long when it holds fewer than `size` items."""
    if size <= len(array):
        return array
    bigger = np.empty(max(2 * len(array), size, 8), dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger


@nb.njit(cache=True, nogil=True)
def taller(rows, size):
    """`rows`, or a copy with at least twice its rows when it has fewer than `size`."""
    if size <= rows.shape[0]:
        return rows
    bigger = np.empty((max(2 * rows.shape[0], size, 64), rows.shape[1]), dtype=rows.dtype)
    bigger[: rows.shape[0]] = rows
    return bigger


@nb.njit(cache=True, nogil=True)
def find(row, used, value):
    """Where `value` is among the first `used` entries of `row`; -1: absent."""
    for i in range(used):
        if row[i] == value:
            return i
    return -1


@nb.njit(cache=True, nogil=True)
def latency_us(px, py, a, b):
    """The latency between positions a and b (ms), in whole microseconds (halves to even)."""
    return np.int64(np.rint(1000.0 * np.hypot(px[a] - px[b], py[a] - py[b])))


@nb.njit(cache=True, nogil=True)
def latencies_us(px, py, a, others):
    """`latency_us` from a to each of `others`."""
    out = np.empty(others.shape[0], dtype=np.int64)
    for i in range(others.shape[0]):
        out[i] = latency_us(px, py, a, others[i])
    return out
