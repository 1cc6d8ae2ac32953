"""A compiled yardstick for routing publications on a small-world overlay: the lab's reading of
BeaConvey (docs/readings/beaconvey.md#routing, docs/concepts/small-world.md) written once more,
in numba, one thread, independent of `overlay/`, `routing/` and `pipelines/` (the simulation
imports none of them; only `main` reads its inputs through the lab).

Everything is in ring positions 0..n-1. Fingers are a CSR by position (sorted clockwise
distances, the successor's 1 first; a latency per finger link, or none); subscribers a CSR by
topic (sorted positions). One publication at a time, as `tests/routing_oracle.py` routes them:

* Po, Pa1, Pie: a FIFO of range messages (at, low, high). Away from low a message takes the
  finger nearest to low without passing it; at low, the next hops are the nearest subscriber
  clockwise and, since no subscriber is nearer, the subscribed fingers beyond it inside the
  range; Pa1 and Pie add a pivot when the last is short of the distant half [ceil(span / 2),
  span) (the nearest finger there; Pa1 without one, the half's first position).
* Scribe: the publisher's greedy route to RP(t), then the tree of the subscribers' routes to
  RP(t), grown as parent pointers (a walk stops where it meets the tree) and numbered top-down
  chain by chain. The tree's down-link latency is the child's finger link towards its parent:
  latencies are taken as symmetric, as the lab's model (a distance) makes them.
* iScribe: the route to RP(t), then the trie of RP(t)'s routes to the subscribers without a
  map: from one node the finger greedy routing takes grows with the remaining distance, so with
  the subscribers in clockwise order from RP(t) every trie node's subscribers split into runs,
  one per child, found by binary search.

Each arrival is (at, hops, addressed there, latency, sender); per publication the kernel also
counts what `routing.outcome` reports (messages received, pure forwards, deliveries, and who was
not delivered exactly once) and every node's received and sent messages.

Usage (reads the design run's ring and fingers, the instance's subscriptions and coordinates,
draws the route job's publications, and prints the seconds and the peak RSS as JSON):
  .venv/bin/python benchmarks/routing_yardstick.py --lakehouse LAKEHOUSE --instance tw-10k \
      --run tw-10k.swico.gswico-gswico.s1 [--protocol pie] [--publications 10000] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numba as nb
import numpy as np

PROTOCOLS = ("po", "pa1", "pie", "scribe", "iscribe")
PO, PA1, PIE, SCRIBE, ISCRIBE = range(5)
KNUTH = 2654435761
TARGET, DELIVERED, PURE = 1, 2, 4  # the flags of an arrival


@nb.njit(cache=True)
def finger_to(f_start, f_dist, at, distance):
    """Index into f_dist of the largest finger of `at` not past `distance` (>= 1)."""
    lo, hi = f_start[at], f_start[at + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if f_dist[mid] <= distance:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@nb.njit(cache=True)
def grow(a, need):
    if need <= a.shape[0]:
        return a
    bigger = np.empty((max(need, 2 * a.shape[0]),) + a.shape[1:], a.dtype)
    bigger[: a.shape[0]] = a
    return bigger


@nb.njit(cache=True)
def emit(rows, ms, count, at, hops, sender, target, latency):
    rows, ms = grow(rows, count + 1), grow(ms, count + 1)
    rows[count, 0], rows[count, 1], rows[count, 2], rows[count, 3] = at, hops, sender, target
    ms[count] = latency
    return rows, ms, count + 1


@nb.njit(cache=True)
def next_hops(code, n, v, span, f_start, f_dist, subs, member, stamp, out):
    """Protocol 5 at v = low of a range of `span` positions: the sorted offsets into `out`; their count."""
    count = 0
    m = len(subs)
    if m > 0:
        lo, hi = 0, m  # the first subscriber past v, clockwise (wrapping to the first)
        while lo < hi:
            mid = (lo + hi) // 2
            if subs[mid] <= v:
                lo = mid + 1
            else:
                hi = mid
        near = ((subs[lo] if lo < m else subs[0]) - v) % n
        if 0 < near < span:
            out[0] = near
            count = 1
            for k in range(f_start[v], f_start[v + 1]):
                d = f_dist[k]
                if d >= span:
                    break
                if d > near and d != out[count - 1] and member[(v + d) % n] == stamp:
                    out[count] = d
                    count += 1
    if code == PO or count == 0:
        return count
    middle = (span + 1) // 2
    if out[count - 1] < middle:
        pivot = -1
        for k in range(f_start[v], f_start[v + 1]):
            if f_dist[k] >= middle:
                if f_dist[k] < span:
                    pivot = f_dist[k]
                break
        if pivot < 0 and code == PA1:
            pivot = middle
        if pivot >= 0:
            out[count] = pivot
            count += 1
    return count


@nb.njit(cache=True)
def run(code, n, f_start, f_dist, f_lat, start_ms, t_start, t_subs, pub_topic, pub_from, pub_rp):
    """Route every publication (dense topic, publisher, RP(t)). Returns the arrivals' CSR by
    publication (offsets; rows at, hops, sender, flags; latencies), per publication [received,
    pure forwards, deliveries, expected, missing, duplicates], per node [received, sent]."""
    pubs = len(pub_topic)
    limit = 4 * n + 64
    p_start = np.zeros(pubs + 1, np.int64)
    rows = np.empty((1024, 4), np.int64)
    ms = np.empty(1024, np.float64)
    count = 0
    per_pub = np.zeros((pubs, 6), np.int64)
    load = np.zeros((n, 2), np.int64)
    member = np.zeros(n, np.int64)  # == stamp: subscribes to the publication's topic
    hit = np.zeros(n, np.int64)
    hit_stamp = np.zeros(n, np.int64)
    width = 2
    for v in range(n):
        width = max(width, f_start[v + 1] - f_start[v] + 2)
    offs = np.empty(width, np.int64)
    queue = np.empty((256, 4), np.int64)  # at, low, high, hops / node, lo, hi, consumed
    q_ms = np.empty(256, np.float64)
    q_hops = np.empty(256, np.int64)
    on_tree = np.zeros(n, np.int64)
    parent = np.zeros(n, np.int64)
    up_lat = np.zeros(n, np.float64)
    depth = np.zeros(n, np.int64)
    cum = np.zeros(n, np.float64)
    chain = np.empty(n, np.int64)
    dd = np.empty(n, np.int64)
    for p in range(pubs):
        stamp = p + 1
        topic, publisher = pub_topic[p], pub_from[p]
        subs = t_subs[t_start[topic] : t_start[topic + 1]] if topic >= 0 else t_subs[:0]
        for s in subs:
            member[s] = stamp
        if code < SCRIBE:
            head, tail, span = 0, 1, n
            queue[0, 0], queue[0, 1], queue[0, 2], q_hops[0], q_ms[0] = publisher, publisher, publisher, 0, start_ms
            while head < tail:
                at, low, high, hops, lat = queue[head, 0], queue[head, 1], queue[head, 2], q_hops[head], q_ms[head]
                head += 1
                if hops >= limit:
                    raise RuntimeError("a message is still moving after 4n + 64 hops: the fingers do not route")
                if at != low:
                    k = 1
                    offs[0] = (low - at) % n
                else:
                    span = (high - low) % n
                    if span == 0:
                        span = n
                    k = next_hops(code, n, at, span, f_start, f_dist, subs, member, stamp, offs)
                for j in range(k):
                    if at != low:
                        new_low, new_high = low, high
                    else:
                        new_low = (at + offs[j]) % n
                        new_high = (at + (offs[j + 1] if j + 1 < k else span)) % n
                    i = finger_to(f_start, f_dist, at, (new_low - at) % n)
                    nxt = (at + f_dist[i]) % n
                    after = lat + f_lat[i]
                    rows, ms, count = emit(rows, ms, count, nxt, hops + 1, at, nxt == new_low, after)
                    queue, q_ms, q_hops = (
                        grow(queue, tail + 1),
                        grow(q_ms, tail + 1),
                        grow(q_hops, tail + 1),
                    )
                    queue[tail, 0], queue[tail, 1], queue[tail, 2], q_hops[tail], q_ms[tail] = (
                        nxt,
                        new_low,
                        new_high,
                        hops + 1,
                        after,
                    )
                    tail += 1
        else:
            rp = pub_rp[p]
            at, hops, lat = publisher, 0, start_ms
            while at != rp:  # the unicast to RP(t)
                i = finger_to(f_start, f_dist, at, (rp - at) % n)
                nxt = (at + f_dist[i]) % n
                lat = lat + f_lat[i]
                hops += 1
                if hops > limit:
                    raise RuntimeError("the route to RP(t) is still moving after 4n + 64 hops")
                rows, ms, count = emit(rows, ms, count, nxt, hops, at, nxt == rp, lat)
                at = nxt
            if code == SCRIBE:
                on_tree[rp], depth[rp], cum[rp] = stamp, hops, lat
                for s in subs:
                    x, size = s, 0
                    while on_tree[x] != stamp:  # walk to RP(t) until the tree
                        i = finger_to(f_start, f_dist, x, (rp - x) % n)
                        on_tree[x] = stamp
                        parent[x], up_lat[x] = (x + f_dist[i]) % n, f_lat[i]
                        chain[size] = x
                        size += 1
                        x = parent[x]
                    for j in range(size - 1, -1, -1):  # then number the chain down from where it met it
                        y = chain[j]
                        depth[y], cum[y] = depth[parent[y]] + 1, cum[parent[y]] + up_lat[y]
                        rows, ms, count = emit(rows, ms, count, y, depth[y], parent[y], True, cum[y])
            else:
                m = len(subs)
                first = 0
                while first < m and subs[first] < rp:
                    first += 1
                for j in range(m):  # subscribers clockwise from RP(t)
                    dd[j] = (subs[(first + j) % m] - rp) % n
                lo = 1 if m > 0 and dd[0] == 0 else 0  # RP(t) itself: its route has no hop
                head, tail = 0, 0
                if lo < m:
                    queue[0, 0], queue[0, 1], queue[0, 2], queue[0, 3], q_hops[0], q_ms[0] = rp, lo, m, 0, hops, lat
                    tail = 1
                while head < tail:
                    x, lo, hi, used, hops, lat = (
                        queue[head, 0],
                        queue[head, 1],
                        queue[head, 2],
                        queue[head, 3],
                        q_hops[head],
                        q_ms[head],
                    )
                    head += 1
                    if hops >= limit:
                        raise RuntimeError("an iScribe route is still moving after 4n + 64 hops")
                    j = lo
                    while j < hi:  # one child per run of subscribers taking the same finger
                        i = finger_to(f_start, f_dist, x, dd[j] - used)
                        d = f_dist[i]
                        end = hi
                        if i + 1 < f_start[x + 1]:
                            bound = used + f_dist[i + 1]  # the run: remaining distance below the next finger
                            a, b = j + 1, hi
                            while a < b:
                                mid = (a + b) // 2
                                if dd[mid] < bound:
                                    a = mid + 1
                                else:
                                    b = mid
                            end = a
                        y = (x + d) % n
                        ends = dd[j] - used == d
                        rows, ms, count = emit(rows, ms, count, y, hops + 1, x, ends, lat + f_lat[i])
                        rest = j + 1 if ends else j
                        if rest < end:
                            queue, q_ms = grow(queue, tail + 1), grow(q_ms, tail + 1)
                            q_hops = grow(q_hops, tail + 1)
                            queue[tail, 0], queue[tail, 1], queue[tail, 2], queue[tail, 3] = y, rest, end, used + d
                            q_hops[tail], q_ms[tail] = hops + 1, lat + f_lat[i]
                            tail += 1
                        j = end
        # what the outcome counts: loads, pure forwards, deliveries, exactly once
        p_start[p + 1] = count
        out = per_pub[p]
        for r in range(p_start[p], count):
            at = rows[r, 0]
            load[at, 0] += 1
            load[rows[r, 2], 1] += 1
            out[0] += 1
            if member[at] != stamp:
                rows[r, 3] |= PURE
                out[1] += 1
            elif rows[r, 3] & TARGET and at != publisher:
                rows[r, 3] |= DELIVERED
                out[2] += 1
                if hit_stamp[at] != stamp:
                    hit_stamp[at], hit[at] = stamp, 0
                hit[at] += 1
        for s in subs:
            if s != publisher:
                out[3] += 1
                times = hit[s] if hit_stamp[s] == stamp else 0
                if times == 0:
                    out[4] += 1
                elif times > 1:
                    out[5] += times - 1
    return p_start, rows[:count], ms[:count], per_pub, load


@dataclass
class Routing:
    """`run`'s result, arrivals in ring positions; latency NaN without link latencies."""

    p_start: np.ndarray
    rows: np.ndarray  # at, hops, sender, flags (TARGET, DELIVERED, PURE)
    ms: np.ndarray
    per_pub: np.ndarray  # received, pure forwards, deliveries, expected, missing, duplicates
    load: np.ndarray  # received, sent per position

    def flagged(self, p: int) -> list[tuple[int, int, int, float | None, int]]:
        """Publication p's arrivals (at, hops, flags, latency, sender)."""
        lo, hi = self.p_start[p], self.p_start[p + 1]
        return [
            (at, hops, flags, None if np.isnan(ms) else ms, sender)
            for (at, hops, sender, flags), ms in zip(self.rows[lo:hi].tolist(), self.ms[lo:hi].tolist())
        ]

    def arrivals(self, p: int) -> list[tuple[int, int, bool, float | None, int]]:
        """As the oracle's `Routed.arrivals` holds them (in another order)."""
        return [(at, hops, bool(flags & TARGET), ms, sender) for at, hops, flags, ms, sender in self.flagged(p)]

    def deliveries(self, p: int) -> list[tuple[int, int]]:
        """(at, hops) of publication p's deliveries, sorted (`Routed.deliveries`)."""
        return sorted((at, hops) for at, hops, flags, _, _ in self.flagged(p) if flags & DELIVERED)

    def latencies(self, p: int) -> dict[int, float | None]:
        """{subscriber: its delivery's latency} (`Routed.latencies`)."""
        return {at: ms for at, _, flags, ms, _ in self.flagged(p) if flags & DELIVERED}


def rendezvous(topic: int, n: int) -> int:
    return ((topic * KNUTH) % (1 << 32)) * n >> 32


def prepare(f_start, f_dist, subscriptions, publications, protocol, n, f_lat=None, roots=None) -> tuple:
    """`run`'s arguments. subscriptions: (position, topic) rows; publications: (publisher
    position, topic) rows; roots: {topic: position} to root Scribe's and iScribe's trees at
    instead of the hashed RP(t)."""
    f_start, f_dist = np.ascontiguousarray(f_start, np.int64), np.ascontiguousarray(f_dist, np.int64)
    inner = np.ones(max(len(f_dist) - 1, 0), bool)
    inner[f_start[1:-1] - 1] = False
    if len(f_start) != n + 1 or np.any(np.diff(f_start) < 1) or np.any(f_dist[f_start[:-1]] != 1):
        raise ValueError("every position needs its fingers, the successor (distance 1) first")
    if np.any(np.diff(f_dist)[inner] < 0) or np.any(f_dist >= n):
        raise ValueError("a position's finger distances must be sorted and below n")
    subscriptions = np.unique(np.asarray(subscriptions, np.int64).reshape(-1, 2), axis=0)
    publications = np.asarray(publications, np.int64).reshape(-1, 2)
    ids = np.unique(subscriptions[:, 1])
    order = np.lexsort((subscriptions[:, 0], subscriptions[:, 1]))
    t_subs = np.ascontiguousarray(subscriptions[order, 0])
    t_start = np.searchsorted(subscriptions[order, 1], ids).astype(np.int64)
    t_start = np.append(t_start, len(t_subs)).astype(np.int64)
    index = np.searchsorted(ids, publications[:, 1])
    known = index < len(ids)
    known[known] = ids[index[known]] == publications[known, 1]
    pub_topic = np.where(known, index, -1).astype(np.int64)  # -1: a topic nobody subscribes to
    roots = roots or {}
    root_of = {int(t): int(roots[int(t)]) if int(t) in roots else rendezvous(int(t), n) for t in np.unique(publications[:, 1])}  # fmt: skip
    pub_rp = np.array([root_of[int(t)] for t in publications[:, 1]], np.int64)
    has_latency = f_lat is not None
    lat = np.ascontiguousarray(f_lat, np.float64) if has_latency else np.full(len(f_dist), np.nan)
    start = 0.0 if has_latency else np.nan
    code = PROTOCOLS.index(protocol)
    return code, n, f_start, f_dist, lat, start, t_start, t_subs, pub_topic, np.ascontiguousarray(publications[:, 0]), pub_rp  # fmt: skip


def simulate(f_start, f_dist, subscriptions, publications, protocol, n, f_lat=None, roots=None) -> Routing:
    """Route the publications (see `prepare`) with `protocol` on a ring of n positions."""
    return Routing(*run(*prepare(f_start, f_dist, subscriptions, publications, protocol, n, f_lat, roots)))


# The route job's workload (routing/workload.py), drawn as Spark draws it: xxhash64 (seed 42) of
# (seed as an int, what, pub_id), its low 53 bits over 2^53; topic = floor(u * topics) among the
# sorted topic ids, publisher = floor(u * size) among the topic's subscribers in node order.
_P1, _P2, _P3, _P4, _P5 = (
    0x9E3779B185EBCA87,
    0xC2B2AE3D27D4EB4F,
    0x165667B19E3779F9,
    0x85EBCA77C2B2AE63,
    0x27D4EB2F165667C5,
)
_M64 = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def xxh64(data: bytes, seed: int) -> int:
    """XXH64 of the bytes (Spark's XXH64 is the reference one)."""
    seed &= _M64
    n, i = len(data), 0
    if n >= 32:
        acc = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed, (seed - _P1) & _M64]
        while i + 32 <= n:
            acc = [_round(a, int.from_bytes(data[i + 8 * k : i + 8 * k + 8], "little")) for k, a in enumerate(acc)]
            i += 32
        h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _M64
        for a in acc:
            h = ((h ^ _round(0, a)) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h = (_rotl(h ^ _round(0, int.from_bytes(data[i : i + 8], "little")), 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ (int.from_bytes(data[i : i + 4], "little") * _P1 & _M64), 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h = (_rotl(h ^ (data[i] * _P5 & _M64), 11) * _P1) & _M64
        i += 1
    h = ((h ^ (h >> 33)) * _P2) & _M64
    h = ((h ^ (h >> 29)) * _P3) & _M64
    return h ^ (h >> 32)


def _xxh64_longs(values: np.ndarray, seed: int) -> np.ndarray:
    """XXH64 of each int64 as 8 little-endian bytes, vectorised."""
    u = np.uint64
    with np.errstate(over="ignore"):
        k = values.astype(np.int64).view(np.uint64) * u(_P2)
        k = ((k << u(31)) | (k >> u(33))) * u(_P1)
        h = np.full(len(values), u((seed + _P5 + 8) & _M64)) ^ k
        h = ((h << u(27)) | (h >> u(37))) * u(_P1) + u(_P4)
        h = (h ^ (h >> u(33))) * u(_P2)
        h = (h ^ (h >> u(29))) * u(_P3)
    return h ^ (h >> u(32))


def _uniform(seed: int, what: str, pub_ids: np.ndarray) -> np.ndarray:
    first = seed.to_bytes(4, "little", signed=True) if -(1 << 31) <= seed < 1 << 31 else seed.to_bytes(8, "little", signed=True)  # fmt: skip
    h = xxh64(what.encode(), xxh64(first, 42))
    return (_xxh64_longs(pub_ids, h) & np.uint64((1 << 53) - 1)).astype(np.float64) / float(1 << 53)


def lab_publications(subscriptions: np.ndarray, count: int, seed: int) -> np.ndarray:
    """(topic, publisher node) of pub_id 0..count-1, as `route --publications count --seed seed` picks them."""
    subs = np.unique(np.asarray(subscriptions, np.int64).reshape(-1, 2), axis=0)
    order = np.lexsort((subs[:, 0], subs[:, 1]))
    node, topic = subs[order, 0], subs[order, 1]
    ids, starts, sizes = np.unique(topic, return_index=True, return_counts=True)
    pub_ids = np.arange(count, dtype=np.int64)
    t = np.floor(_uniform(seed, "topic", pub_ids) * float(len(ids))).astype(np.int64)
    m = np.floor(_uniform(seed, "publisher", pub_ids) * sizes[t].astype(np.float64)).astype(np.int64)
    return np.stack([ids[t], node[starts[t] + m]], axis=1)


def read_inputs(lakehouse: str, instance: str, run_id: str, publications: int, seed: int) -> dict:
    """The design run's fingers (CSR by position, link latencies of the instance's coordinates,
    model seed 1, as the route job's), the subscriptions and the route job's publications placed
    on its ring; `position` maps node ids to ring positions."""
    from benchmarks.design_greedy import current_subscriptions, table  # the inputs, through the lab

    runs = table(lakehouse, "overlay_runs")
    run_row = runs[runs.run_id == run_id]
    if run_row.empty or run_row.iloc[0].status != "complete" or run_row.iloc[0].instance != instance:
        raise SystemExit(f"{run_id}: not a complete run on {instance}")
    ingest_id = run_row.iloc[0].ingest_id
    instances = table(lakehouse, "instances")
    current = instances[instances.instance == instance].iloc[0]
    if current.ingest_id != ingest_id:
        raise SystemExit(f"{run_id} was designed on another version of {instance} than the current one")
    n = int(current.nodes)
    ring = table(lakehouse, "ring")
    ring = ring[ring.run_id == run_id]
    position = np.full(n, -1, np.int64)
    position[ring.node_id.to_numpy()] = ring.position.to_numpy()
    if len(ring) != n or (position < 0).any():
        raise SystemExit(f"{run_id}: the ring does not place all {n} nodes (not a small-world run?)")
    fingers = table(lakehouse, "fingers")
    fingers = fingers[fingers.run_id == run_id]
    at = position[fingers.node_id.to_numpy()]
    links = np.unique(np.stack([at, (position[fingers.finger.to_numpy()] - at) % n], axis=1), axis=0)  # once each
    subs = np.asarray(current_subscriptions(lakehouse, instance), np.int64)
    coordinates = table(lakehouse, "node_coordinates")
    coordinates = coordinates[
        (coordinates.instance == instance) & (coordinates.ingest_id == ingest_id) & (coordinates.model_seed == 1)
    ]
    xy = np.empty((n, 2))
    if len(coordinates) == n:
        xy[position[coordinates.node_id.to_numpy()]] = coordinates[["x_ms", "y_ms"]].to_numpy()
    else:  # not stored yet: the model the route job stores
        from overlay.rappel.coordinates import LatencyModel

        xy[position] = LatencyModel().coordinates(1, np.arange(n, dtype=np.int64))
    to = (links[:, 0] + links[:, 1]) % n
    picked = lab_publications(subs, publications, seed)
    return {
        "n": n,
        "position": position,
        "f_start": np.searchsorted(links[:, 0], np.arange(n + 1)).astype(np.int64),
        "f_dist": links[:, 1],
        "f_lat": np.sqrt((xy[links[:, 0], 0] - xy[to, 0]) ** 2 + (xy[links[:, 0], 1] - xy[to, 1]) ** 2),
        "subscriptions": np.stack([position[subs[:, 0]], subs[:, 1]], axis=1),
        "publications": np.stack([position[picked[:, 1]], picked[:, 0]], axis=1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", default="tw-10k")
    parser.add_argument("--run", required=True, help="a complete small-world design run (design --algorithm swico)")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="pie")
    parser.add_argument("--publications", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    clock = time.monotonic()
    got = read_inputs(args.lakehouse, args.instance, args.run, args.publications, args.seed)
    read = time.monotonic() - clock
    arguments = prepare(
        got["f_start"], got["f_dist"], got["subscriptions"], got["publications"], args.protocol, got["n"], got["f_lat"]
    )
    chord = np.tile([1, 2, 4], 8)  # compiled (or loaded) on a tiny ring
    simulate(np.arange(0, 25, 3), chord, [(1, 0), (5, 0)], [(1, 0)], args.protocol, 8, np.ones(24))
    clock = time.monotonic()
    p_start, rows, ms, per_pub, load = run(*arguments)
    seconds = time.monotonic() - clock
    print(json.dumps({
        "instance": args.instance, "run": args.run, "protocol": args.protocol, "publications": args.publications,
        "deliveries": int(per_pub[:, 2].sum()), "messages": len(rows), "pure_forwards": int(per_pub[:, 1].sum()),
        "not_exactly_once": int((per_pub[:, 4] + per_pub[:, 5]).sum()),
        "read_s": round(read, 2), "simulate_s": round(seconds, 3),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
