"""One publication's spread, compiled: the rules of `overlay.gossip.spread` (its module doc) over
columnar state. Members are positions in the topic's sorted node ids; events are rows (time,
kind, node, other, hops) of a binary heap, popped in that lexicographic order; `unwanted[v,
:usize[v]]` are the peers that told v IDONTWANT."""

from __future__ import annotations

import numba as nb
import numpy as np

from overlay.draws import GOSSIPSUB_IHAVE, GOSSIPSUB_PHASE
from overlay.draws_compiled import fold, key
from overlay.gossip.event_rows import find, grown, latency_us, pop, push

IDONTWANT, COPY, HEARTBEAT, IHAVE, IWANT = -1, 0, 1, 2, 3
_EVENT = 5
# the counts a spread returns, in this order
MESSAGES, DUPLICATES, IHAVES, IWANTS, IDONTWANTS = range(5)


@nb.njit(cache=True, nogil=True)
def _queue(events, count, row, at, kind, node, other, hops):
    """The heap with the event (at, kind, node, other, hops) added, `row` its scratch."""
    row[0] = at
    row[1] = kind
    row[2] = node
    row[3] = other
    row[4] = hops
    return push(events, count, row)


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
    queued = np.empty(_EVENT, dtype=np.int64)
    everyone = np.arange(n)
    first_us[publisher], hops[publisher] = 0, 0
    phase_key = key(seed, GOSSIPSUB_PHASE)

    # `hold` of the publisher, then of each member at its first copy: IDONTWANT to its push peers,
    # the copy on to its targets, its gossip heartbeats queued
    v, at, came_from, now_hops = publisher, np.int64(0), np.int64(-1), np.int64(0)
    while True:
        peers = indices[indptr[v] : indptr[v + 1]]
        if idontwant:  # the publisher too, as it publishes (go-libp2p's Publish preprocesses it)
            for w in peers:
                if w != came_from and up[w]:
                    counts[IDONTWANTS] += 1
                    events = _queue(events, count, queued, at + latency_us(px, py, v, w), IDONTWANT, w, v, 0)
                    count += 1
        if v == publisher and flood:
            sends = targets[offsets[v] : offsets[v + 1]] if has_links else everyone
        else:
            sends = peers
        for w in sends:
            if w == came_from or w == publisher or not up[w]:
                continue
            if find(unwanted[v], usize[v], w) >= 0:
                continue
            counts[MESSAGES] += 1
            uplink_free[v] = max(at, uplink_free[v]) + transmit
            events = _queue(events, count, queued, uplink_free[v] + latency_us(px, py, v, w), COPY, w, v, now_hops + 1)
            count += 1
        if gossip:
            phase = np.int64(fold(phase_key, nodes[v]) % np.uint64(beat))
            after = (at - phase) // beat + 1
            for j in range(after, after + windows):
                events = _queue(events, count, queued, phase + j * beat, HEARTBEAT, v, j, 0)
                count += 1

        # the next event that makes a member hold a copy; the others handled on the way
        v = -1
        while count > 0:
            pop(events, count, event)
            count -= 1
            time, kind, node, other = event[0], event[1], event[2], event[3]
            if kind == IDONTWANT:
                unwanted = grown(unwanted, usize[node])
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
                    events = _queue(events, count, queued, time + latency_us(px, py, node, w), IHAVE, w, node, 0)
                    count += 1
            elif kind == IHAVE:
                if first_us[node] < 0:
                    counts[IWANTS] += 1
                    events = _queue(
                        events, count, queued, time + latency_us(px, py, node, other), IWANT, other, node, 0
                    )
                    count += 1
            elif find(unwanted[node], usize[node], other) < 0:  # IWANT: the copy, unless unwanted
                counts[MESSAGES] += 1
                uplink_free[node] = max(time, uplink_free[node]) + transmit
                arrive = uplink_free[node] + latency_us(px, py, node, other)
                events = _queue(events, count, queued, arrive, COPY, other, node, np.int64(hops[node]) + 1)
                count += 1
        if v < 0:
            return first_us, hops, counts
