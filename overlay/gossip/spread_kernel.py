"""One publication's spread, compiled: the rules of `overlay.gossip.spread` (its module doc) over
columnar state. Members are positions in the topic's sorted node ids; events are rows (time,
kind, node, other, hops) of a binary heap, popped in that lexicographic order; `unwanted[v,
:usize[v]]` are the peers that told v IDONTWANT."""

from __future__ import annotations

import numba as nb
import numpy as np

from overlay.draws import GOSSIPSUB_IHAVE, GOSSIPSUB_PHASE
from overlay.draws_compiled import fold, key

IDONTWANT, COPY, HEARTBEAT, IHAVE, IWANT = -1, 0, 1, 2, 3
_EVENT = 5
# the counts a spread returns, in this order
MESSAGES, DUPLICATES, IHAVES, IWANTS, IDONTWANTS = range(5)


@nb.njit(cache=True, nogil=True)
def _before(events, i, j):
    for c in range(_EVENT):
        if events[i, c] != events[j, c]:
            return events[i, c] < events[j, c]
    return False


@nb.njit(cache=True, nogil=True)
def _swap(events, i, j):
    for c in range(_EVENT):
        events[i, c], events[j, c] = events[j, c], events[i, c]


@nb.njit(cache=True, nogil=True)
def _push(events, count, at, kind, node, other, hops):
    if count == events.shape[0]:
        grown = np.empty((2 * events.shape[0], _EVENT), dtype=np.int64)
        grown[:count] = events[:count]
        events = grown
    events[count, 0], events[count, 1], events[count, 2], events[count, 3], events[count, 4] = (
        at,
        kind,
        node,
        other,
        hops,
    )
    i = count
    while i > 0:
        parent = (i - 1) // 2
        if not _before(events, i, parent):
            break
        _swap(events, i, parent)
        i = parent
    return events


@nb.njit(cache=True, nogil=True)
def _pop(events, count, into):
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
def latency(px, py, a, b):
    """The latency between members a and b (positions in ms), in whole microseconds."""
    return np.int64(np.rint(1000.0 * np.hypot(px[a] - px[b], py[a] - py[b])))


@nb.njit(cache=True, nogil=True)
def spread(
    nodes,
    indptr,
    indices,
    px,
    py,
    up,
    publisher,
    pub,
    settings,
    gossip_factor,
    offsets,
    targets,
    has_links,
):
    """See `overlay.gossip.spread.spread`; settings = (heartbeat us, D_lazy, mcache_gossip,
    gossip, flood_publish, seed, IDONTWANT on, uplink us per copy). Returns each member's first
    copy's time (us, -1: none) and hops, and the counts (MESSAGES...)."""
    beat, d_lazy, windows, gossip, flood, seed = (
        settings[0],
        settings[1],
        settings[2],
        settings[3],
        settings[4],
        settings[5],
    )
    idontwant, transmit = settings[6], settings[7]
    n = nodes.shape[0]
    first_us = np.full(n, -1, dtype=np.int64)
    hops = np.full(n, -1, dtype=np.int32)
    counts = np.zeros(5, dtype=np.int64)
    unwanted = np.empty((n, 4), dtype=np.int64)
    usize = np.zeros(n, dtype=np.int64)
    uplink_free = np.zeros(n, dtype=np.int64)
    pushed = np.zeros(n, dtype=np.int64)  # == stamp: a push peer of the node gossiping
    stamp = 0
    events = np.empty((max(64, 2 * n), _EVENT), dtype=np.int64)
    count = 0
    event = np.empty(_EVENT, dtype=np.int64)
    everyone = np.arange(n)
    first_us[publisher], hops[publisher] = 0, 0
    phase_key = key(seed, GOSSIPSUB_PHASE)

    # `hold` of the publisher, then of each member at its first copy: IDONTWANT to its push peers,
    # the copy on to its targets, its gossip heartbeats queued
    v, at, came_from, now_hops = publisher, np.int64(0), np.int64(-1), np.int64(0)
    while True:
        peers = indices[indptr[v] : indptr[v + 1]]
        if idontwant and v != publisher:
            for w in peers:
                if w != came_from and up[w]:
                    counts[IDONTWANTS] += 1
                    events = _push(events, count, at + latency(px, py, v, w), IDONTWANT, w, v, 0)
                    count += 1
        if v == publisher and flood:
            sends = targets[offsets[v] : offsets[v + 1]] if has_links else everyone
        else:
            sends = peers
        for w in sends:
            if w == came_from or w == publisher or not up[w]:
                continue
            if _find(unwanted[v], usize[v], w) >= 0:
                continue
            counts[MESSAGES] += 1
            uplink_free[v] = max(at, uplink_free[v]) + transmit
            events = _push(events, count, uplink_free[v] + latency(px, py, v, w), COPY, w, v, now_hops + 1)
            count += 1
        if gossip:
            phase = np.int64(fold(phase_key, nodes[v]) % np.uint64(beat))
            after = (at - phase) // beat + 1
            for j in range(after, after + windows):
                events = _push(events, count, phase + j * beat, HEARTBEAT, v, j, 0)
                count += 1

        # the next event that makes a member hold a copy; the others handled on the way
        v = -1
        while count > 0:
            _pop(events, count, event)
            count -= 1
            time, kind, node, other = event[0], event[1], event[2], event[3]
            if kind == IDONTWANT:
                unwanted = _grown(unwanted, usize[node])
                unwanted[node, usize[node]] = other
                usize[node] += 1
            elif kind == COPY:
                if first_us[node] >= 0:
                    counts[DUPLICATES] += 1
                    continue
                first_us[node], hops[node] = time, event[4]
                v, at, came_from, now_hops = node, time, other, event[4]
                break
            elif kind == HEARTBEAT:
                stamp += 1
                for w in indices[indptr[node] : indptr[node + 1]]:
                    pushed[w] = stamp
                connected = targets[offsets[node] : offsets[node + 1]] if has_links else everyone
                eligible = 0
                for w in connected:
                    if w != node and up[w] and pushed[w] != stamp:
                        eligible += 1
                want = min(eligible, max(d_lazy, np.int64(gossip_factor * eligible)))
                if want == 0:
                    continue
                draws = np.empty(eligible, dtype=np.uint64)
                ids = np.empty(eligible, dtype=np.int64)
                base = fold(fold(fold(key(seed, GOSSIPSUB_IHAVE), pub), nodes[node]), other)
                i = 0
                for w in connected:
                    if w != node and up[w] and pushed[w] != stamp:
                        draws[i], ids[i] = fold(base, nodes[w]), w
                        i += 1
                order = np.argsort(draws, kind="mergesort")  # stable: ties by member position
                for i in range(want):
                    w = ids[order[i]]
                    counts[IHAVES] += 1
                    events = _push(events, count, time + latency(px, py, node, w), IHAVE, w, node, 0)
                    count += 1
            elif kind == IHAVE:
                if first_us[node] < 0:
                    counts[IWANTS] += 1
                    events = _push(events, count, time + latency(px, py, node, other), IWANT, other, node, 0)
                    count += 1
            elif _find(unwanted[node], usize[node], other) < 0:  # IWANT: the copy, unless unwanted
                counts[MESSAGES] += 1
                uplink_free[node] = max(time, uplink_free[node]) + transmit
                arrive = uplink_free[node] + latency(px, py, node, other)
                events = _push(events, count, arrive, COPY, other, node, np.int64(hops[node]) + 1)
                count += 1
        if v < 0:
            return first_us, hops, counts


@nb.njit(cache=True, nogil=True)
def _find(row, size, q):
    for i in range(size):
        if row[i] == q:
            return i
    return -1


@nb.njit(cache=True, nogil=True)
def _grown(table, rows):
    if rows < table.shape[1]:
        return table
    grown = np.empty((table.shape[0], 2 * table.shape[1]), dtype=table.dtype)
    grown[:, : table.shape[1]] = table
    return grown
