"""One topic's gossipsub mesh maintenance, compiled: the rules of `overlay.gossip.gossipsub` (its
module doc) over columnar state, so a topic of a million members runs in the same process as a
topic of ten. Members are positions in the topic's sorted node ids (so position order is node
order); the state:

* meshes: `mesh[v, :msize[v]]` (unordered), `outbound_in[v]` of them outbound at v;
* backoffs: `held[v, :hsize[v]]` with their ends `held_end` (us);
* events in flight: a binary heap of rows (at, kind, receiver, sender, receiver's epoch, sender's
  epoch), popped in that lexicographic order (PRUNE before GRAFT at one instant);
* a connection's direction from its keyed draw (every pair connected) or from the topic's
  links in CSR form (`offsets`, `targets` ascending, `dialled`: whether the row's node opened it).

Latencies are the latency model's, rounded to whole microseconds, computed per message from the
positions (no n x n matrix)."""

from __future__ import annotations

import numba as nb
import numpy as np

from overlay.draws import GOSSIPSUB_DIRECTION, GOSSIPSUB_GRAFT, GOSSIPSUB_KEEP, GOSSIPSUB_OUTBOUND
from overlay.draws_compiled import fold, key
from overlay.gossip.event_rows import find, grown, latency_us, pop, push

# The measures' columns: overlay.gossip.gossipsub.MEASURES, in its order.
_GRAFTS, _PRUNES, _REFUSED, _MESHES, _LINKS, _MIN, _MAX, _BELOW, _ABOVE, _BACKOFFS = range(10)
_PRUNE, _GRAFT = 0, 1
_EVENT = 6  # an event row's columns


@nb.njit(cache=True, nogil=True)
def _queue(events, count, row, at, kind, receiver, sender, receiver_epoch, sender_epoch):
    """The heap with the event (at, kind, receiver, sender, receiver_epoch, sender_epoch) added, `row` its scratch."""
    row[0] = at
    row[1] = kind
    row[2] = receiver
    row[3] = sender
    row[4] = receiver_epoch
    row[5] = sender_epoch
    return push(events, count, row)


@nb.njit(cache=True, nogil=True)
def _outbound(v, q, members, seed, has_links, offsets, targets, dialled):
    """Whether v's connection to q is outbound at v (False where there is none)."""
    if has_links:
        lo, hi = offsets[v], offsets[v + 1]
        at = lo + np.searchsorted(targets[lo:hi], q)
        return at < hi and targets[at] == q and dialled[at]
    a, b = members[v], members[q]
    low, high = min(a, b), max(a, b)
    opened_by_low = (fold(fold(key(seed, GOSSIPSUB_DIRECTION), low), high) & np.uint64(1)) == np.uint64(0)
    return opened_by_low == (a == low)


@nb.njit(cache=True, nogil=True)
def _insert(best_key, best_at, size, k, draw_key, q):
    """Keeps the k smallest (draw, position) pairs, ascending; the new size."""
    if size == k and not (draw_key < best_key[k - 1] or (draw_key == best_key[k - 1] and q < best_at[k - 1])):
        return size
    i = size if size < k else k - 1
    while i > 0 and (draw_key < best_key[i - 1] or (draw_key == best_key[i - 1] and q < best_at[i - 1])):
        best_key[i], best_at[i] = best_key[i - 1], best_at[i - 1]
        i -= 1
    best_key[i], best_at[i] = draw_key, q
    return min(size + 1, k)


@nb.njit(cache=True, nogil=True)
def _back_off(held, held_end, hsize, v, q, end):
    """v holds q off until `end` at least (a backoff is never shortened); the tables, grown if full."""
    j = find(held[v], hsize[v], q)
    if j < 0:
        held = grown(held, hsize[v])
        held_end = grown(held_end, hsize[v])
        held[v, hsize[v]], held_end[v, hsize[v]] = q, end
        hsize[v] += 1
    elif held_end[v, j] < end:
        held_end[v, j] = end
    return held, held_end


@nb.njit(cache=True, nogil=True)
def _join(mesh, msize, outbound_in, v, q, outbound):
    """q joins v's mesh (not in it); the table, grown if full."""
    mesh = grown(mesh, msize[v])
    mesh[v, msize[v]] = q
    msize[v] += 1
    if outbound:
        outbound_in[v] += 1
    return mesh


@nb.njit(cache=True, nogil=True)
def _leave(mesh, msize, outbound_in, v, at, outbound):
    """The peer at `at` of v's mesh leaves it."""
    msize[v] -= 1
    mesh[v, at] = mesh[v, msize[v]]
    if outbound:
        outbound_in[v] -= 1


@nb.njit(cache=True, nogil=True)
def _candidates(
    v, peers, want, base, outbound_only, up, mesh, msize, held, hsize, mark, stamp, link, best_key, best_at
):
    """The `want` peers of smallest draw (keyed `base`, then the peer) that v may graft: connected,
    up, outside its mesh and its backoffs (and outbound at v, if asked), in `best_at`; how many.
    `link`: `_outbound`'s arguments past (v, q)."""
    for j in range(msize[v]):
        mark[mesh[v, j]] = stamp
    for j in range(hsize[v]):
        mark[held[v, j]] = stamp
    members, size = link[0], 0
    for q in peers:
        if q != v and up[q] and mark[q] != stamp:
            if not outbound_only or _outbound(v, q, *link):
                size = _insert(best_key, best_at, size, want, fold(base, members[q]), q)
    return size


@nb.njit(cache=True, nogil=True)
def simulate(
    topic,
    members,
    px,
    py,
    phase,
    by_phase,
    settings,
    heartbeats,
    presence,
    has_presence,
    offsets,
    targets,
    dialled,
    has_links,
):
    """`heartbeats` intervals of one topic (see `overlay.gossip.gossipsub.simulate_topic`):
    settings = (seed, D, D_low, D_high, D_out, the mesh size that prunes, heartbeat us, backoff
    us, backoff slack us, backoff sweep). Returns the measures [heartbeats, 10] and the final
    meshes as (node position, peer position) rows, node then peer ascending."""
    seed, d, d_low, d_high, d_out, high = settings[0], settings[1], settings[2], settings[3], settings[4], settings[5]
    beat_us, backoff_us, slack_us, sweep = settings[6], settings[7], settings[8], settings[9]
    n = members.shape[0]
    mesh = np.empty((n, 2 * d_high + 2), dtype=np.int64)
    msize = np.zeros(n, dtype=np.int64)
    outbound_in = np.zeros(n, dtype=np.int64)
    held = np.empty((n, 4), dtype=np.int64)
    held_end = np.empty((n, 4), dtype=np.int64)
    hsize = np.zeros(n, dtype=np.int64)
    ticks = np.zeros(n, dtype=np.int64)
    up = np.ones(n, dtype=np.bool_)
    epoch = np.zeros(n, dtype=np.int64)
    mark = np.zeros(n, dtype=np.int64)  # == stamp: in v's mesh or held by v (a scratch set)
    stamp = 0
    events = np.empty((max(64, 4 * n), _EVENT), dtype=np.int64)
    count = 0
    event = np.empty(_EVENT, dtype=np.int64)
    queued = np.empty(_EVENT, dtype=np.int64)
    best_key = np.empty(max(d, d_out, 1), dtype=np.uint64)
    best_at = np.empty(max(d, d_out, 1), dtype=np.int64)
    measures = np.zeros((heartbeats, 10), dtype=np.int64)
    everyone = np.arange(n)
    counts = np.zeros(3, dtype=np.int64)  # GRAFTs, PRUNEs, refusals sent in the interval (the first measures)
    link = (members, seed, has_links, offsets, targets, dialled)  # a connection's direction: `_outbound`

    for h in range(1, heartbeats + 1):
        start = (h - 1) * beat_us
        counts[:] = 0
        if has_presence:
            for v in range(n):
                now_up = presence[h - 1, v]
                if now_up == up[v]:
                    continue
                up[v] = now_up
                epoch[v] += 1
                if not now_up:
                    peers = targets[offsets[v] : offsets[v + 1]] if has_links else everyone
                    for q in peers:
                        at = find(mesh[q], msize[q], v)
                        if at >= 0:
                            out_q = _outbound(q, v, *link)
                            _leave(mesh, msize, outbound_in, q, at, out_q)
                    msize[v] = 0
                    outbound_in[v] = 0
                    hsize[v] = 0
                ticks[v] = 0
        for turn in range(n + 1):
            # the messages due before the next heartbeat (after the last one: by the interval's end)
            if turn < n:
                v = by_phase[turn]
                now = start + phase[v]
            else:
                now = h * beat_us - 1
            while count > 0 and events[0, 0] <= now:
                pop(events, count, event)
                count -= 1
                at, kind, r, s = event[0], event[1], event[2], event[3]
                if epoch[r] != event[4] or epoch[s] != event[5]:
                    continue
                i = find(mesh[r], msize[r], s)
                if kind == _PRUNE:
                    if i >= 0:
                        out_r = _outbound(r, s, *link)
                        _leave(mesh, msize, outbound_in, r, i, out_r)
                    held, held_end = _back_off(held, held_end, hsize, r, s, at + backoff_us)
                    continue
                if i >= 0:
                    continue
                j = find(held[r], hsize[r], s)
                out_r = _outbound(r, s, *link)
                if (j >= 0 and at < held_end[r, j]) or (msize[r] >= d_high and not out_r):
                    held, held_end = _back_off(held, held_end, hsize, r, s, at + backoff_us)
                    counts[_REFUSED] += 1
                    counts[_PRUNES] += 1
                    events = _queue(
                        events, count, queued, at + latency_us(px, py, r, s), _PRUNE, s, r, epoch[s], epoch[r]
                    )
                    count += 1
                else:
                    mesh = _join(mesh, msize, outbound_in, r, s, out_r)
            if turn == n or not up[v]:
                continue

            # v's heartbeat: sweep, graft below D_low, prune at `high`, outbound quota
            ticks[v] += 1
            if hsize[v] > 0 and ticks[v] % sweep == 0:
                kept = 0
                for j in range(hsize[v]):
                    if held_end[v, j] + slack_us >= now:
                        held[v, kept], held_end[v, kept] = held[v, j], held_end[v, j]
                        kept += 1
                hsize[v] = kept
            peers = targets[offsets[v] : offsets[v + 1]] if has_links else everyone
            if msize[v] < d_low:
                stamp += 1
                base = fold(fold(fold(key(seed, GOSSIPSUB_GRAFT), h), members[v]), topic)
                size = _candidates(v, peers, d - msize[v], base, False, up, mesh, msize, held, hsize, mark, stamp, link, best_key, best_at)  # fmt: skip
                for j in range(size):
                    q = best_at[j]
                    out_v = _outbound(v, q, *link)
                    mesh = _join(mesh, msize, outbound_in, v, q, out_v)
                    counts[_GRAFTS] += 1
                    events = _queue(
                        events, count, queued, now + latency_us(px, py, v, q), _GRAFT, q, v, epoch[q], epoch[v]
                    )
                    count += 1
            if msize[v] >= high:
                size = msize[v]
                ranked_key = np.empty(size, dtype=np.uint64)
                ranked = np.empty(size, dtype=np.int64)
                base = fold(fold(fold(key(seed, GOSSIPSUB_KEEP), h), members[v]), topic)
                ranked_size = 0
                for j in range(size):
                    q = mesh[v, j]
                    ranked_size = _insert(ranked_key, ranked, ranked_size, size, fold(base, members[q]), q)
                out = np.empty(size, dtype=np.bool_)
                for j in range(size):
                    out[j] = _outbound(v, ranked[j], *link)
                keep = np.zeros(size, dtype=np.bool_)
                keep[:d] = True
                short = d_out - np.sum(out[:d])
                if short > 0:
                    extra = 0
                    for j in range(d, size):
                        if extra < short and out[j]:
                            keep[j] = True
                            extra += 1
                    for j in range(d - 1, -1, -1):
                        if extra > 0 and not out[j]:
                            keep[j] = False
                            extra -= 1
                for j in range(size):
                    if keep[j]:
                        continue
                    q = ranked[j]
                    _leave(mesh, msize, outbound_in, v, find(mesh[v], msize[v], q), out[j])
                    held, held_end = _back_off(held, held_end, hsize, v, q, now + backoff_us)
                    counts[_PRUNES] += 1
                    events = _queue(
                        events, count, queued, now + latency_us(px, py, v, q), _PRUNE, q, v, epoch[q], epoch[v]
                    )
                    count += 1
            if msize[v] >= d_low and outbound_in[v] < d_out:
                stamp += 1
                base = fold(fold(fold(key(seed, GOSSIPSUB_OUTBOUND), h), members[v]), topic)
                want = d_out - outbound_in[v]
                size = _candidates(v, peers, want, base, True, up, mesh, msize, held, hsize, mark, stamp, link, best_key, best_at)  # fmt: skip
                for j in range(size):
                    q = best_at[j]
                    mesh = _join(mesh, msize, outbound_in, v, q, True)
                    counts[_GRAFTS] += 1
                    events = _queue(
                        events, count, queued, now + latency_us(px, py, v, q), _GRAFT, q, v, epoch[q], epoch[v]
                    )
                    count += 1

        row = measures[h - 1]
        row[_GRAFTS], row[_PRUNES], row[_REFUSED] = counts[_GRAFTS], counts[_PRUNES], counts[_REFUSED]
        row[_BACKOFFS] = np.sum(hsize)
        row[_MIN], row[_MAX] = -1, -1
        if n > d_low:
            for v in range(n):
                if not up[v]:
                    continue
                size = msize[v]
                row[_MESHES] += 1
                row[_LINKS] += size
                if row[_MIN] < 0 or size < row[_MIN]:
                    row[_MIN] = size
                if size > row[_MAX]:
                    row[_MAX] = size
                row[_BELOW] += size < d_low
                row[_ABOVE] += size > d_high

    total = 0
    for v in range(n):
        if up[v]:
            total += msize[v]
    nodes = np.empty(total, dtype=np.int64)
    peers_out = np.empty(total, dtype=np.int64)
    at = 0
    for v in range(n):
        if up[v]:
            size = msize[v]
            peers_out[at : at + size] = np.sort(mesh[v, :size])
            nodes[at : at + size] = v
            at += size
    return measures, nodes, peers_out
