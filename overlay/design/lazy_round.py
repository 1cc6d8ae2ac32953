"""A round's sample from one partition's rows, refreshing only the gains that can matter.

The sample of a partition (`overlay.design.candidates`) is defined on the key-ordered stream of
its eligible rows with a positive gain (gain desc, u, v; gains fresh at the start of the round):
the first `top` rows, the first `per_node` rows of every node, each node's next row (its tail)
and the first row left out (`kernels.sample_in_key_order`). Computing every gain to build that
stream costs a topic-list intersection per row per round, which is what made rounds slow.

Here the rows carry bounds (gains computed in an earlier round: gains never grow) and are visited
in bound order (bound desc, u, v), as a lazy greedy does: a visited row's fresh gain goes into a
heap, and a heap row is emitted into the stream once it ranks before the next unvisited row's
bound key (every unvisited row ranks at or after its bound key). A row whose two ends already
have their tails, once the first `top` rows and the first row left out are known, cannot change
the sample: it is passed without computing its gain. Visited rows keep their fresh gains as
bounds, so the next round starts closer. The stream, and so the sample, is the same as with every
gain computed (`tests/test_lazy_round.py` checks it against a pure-Python oracle).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from overlay.design.kernels import flat_pair_gain, sample_row


@nb.njit(cache=True, nogil=True)
def _before(g1, u1, v1, g2, u2, v2):
    """Key order: gain desc, then (u, v)."""
    return g1 > g2 or (g1 == g2 and (u1 < u2 or (u1 == u2 and v1 < v2)))


@nb.njit(cache=True, nogil=True)
def _swap(hg, hu, hv, hr, a, b):
    hg[a], hg[b] = hg[b], hg[a]
    hu[a], hu[b] = hu[b], hu[a]
    hv[a], hv[b] = hv[b], hv[a]
    hr[a], hr[b] = hr[b], hr[a]


@nb.njit(cache=True, nogil=True)
def _sift_down(hg, hu, hv, hr, size, at):
    while True:
        best, left = at, 2 * at + 1
        if left < size and _before(hg[left], hu[left], hv[left], hg[best], hu[best], hv[best]):
            best = left
        right = left + 1
        if right < size and _before(hg[right], hu[right], hv[right], hg[best], hu[best], hv[best]):
            best = right
        if best == at:
            return
        _swap(hg, hu, hv, hr, at, best)
        at = best


@nb.njit(cache=True, nogil=True)
def _sift_up(hg, hu, hv, hr, at):
    while at > 0:
        parent = (at - 1) // 2
        if not _before(hg[at], hu[at], hv[at], hg[parent], hu[parent], hv[parent]):
            return
        _swap(hg, hu, hv, hr, at, parent)
        at = parent


@nb.njit(cache=True, nogil=True)
def lazy_sample(offsets, topics, label, head, us, vs, bounds, order, eligible, nodes, per_node, top):
    """The partition's sample (`kernels.sample_in_key_order` on the stream of fresh gains).

    `order`: the rows by bound key (bound desc, u, v); `eligible`: the round's row filter.
    Rows with a bound of 0 are dead and skipped. Writes each visited row's fresh gain into
    `bounds` (so the gains of the rows returned are their bounds). Returns the sampled rows in
    key order, per node the row of its tail (-1: none), the first row left out (-1: none), and
    the rows visited."""
    count = np.zeros(nodes, dtype=np.int64)
    tail = np.full(nodes, -1, dtype=np.int64)
    capacity = 1024
    taken = np.empty(capacity, dtype=np.int64)
    n_taken = 0
    heap_capacity = 1024
    hg = np.empty(heap_capacity, dtype=np.int64)
    hu = np.empty(heap_capacity, dtype=np.int64)
    hv = np.empty(heap_capacity, dtype=np.int64)
    hr = np.empty(heap_capacity, dtype=np.int64)
    size = 0
    emitted = 0
    first_left = -1
    visited = 0
    n = len(order)
    for k in range(n + 1):
        i, b, u, v = -1, 0, -1, -1
        end = k == n
        if not end:
            i = order[k]
            b, u, v = bounds[i], us[i], vs[i]
            end = b <= 0  # the rest are dead too (bound order)
        # Emit the heap rows that rank before every unvisited row (all of them at the end).
        while size > 0 and (end or _before(hg[0], hu[0], hv[0], b, u, v)):
            a, c, r = hu[0], hv[0], hr[0]
            size -= 1
            if size > 0:
                hg[0], hu[0], hv[0], hr[0] = hg[size], hu[size], hv[size], hr[size]
                _sift_down(hg, hu, hv, hr, size, 0)
            if sample_row(count, tail, a, c, emitted, r, per_node, top):
                if n_taken == capacity:
                    capacity *= 2
                    taken = np.concatenate((taken, np.empty(capacity - n_taken, dtype=np.int64)))
                taken[n_taken] = r
                n_taken += 1
            elif first_left < 0:
                first_left = r
            emitted += 1
        if end:
            break
        if not eligible[i]:
            continue
        if emitted >= top and first_left >= 0 and count[u] > per_node and count[v] > per_node:
            continue  # both ends have their tails: this row cannot change the sample
        g = flat_pair_gain(offsets, topics, label, head, u, v)
        visited += 1
        bounds[i] = g
        if g > 0:
            if size == heap_capacity:
                heap_capacity *= 2
                hg = np.concatenate((hg, np.empty(heap_capacity - size, dtype=np.int64)))
                hu = np.concatenate((hu, np.empty(heap_capacity - size, dtype=np.int64)))
                hv = np.concatenate((hv, np.empty(heap_capacity - size, dtype=np.int64)))
                hr = np.concatenate((hr, np.empty(heap_capacity - size, dtype=np.int64)))
            hg[size], hu[size], hv[size], hr[size] = g, u, v, i
            size += 1
            _sift_up(hg, hu, hv, hr, size - 1)
    return taken[:n_taken], tail, first_left, visited
