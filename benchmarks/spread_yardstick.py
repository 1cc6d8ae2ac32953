"""A compiled yardstick for gossipsub's spread of publications: the lab's reading
(docs/readings/gossipsub.md#spread) written once more, in numba, one thread, independent of
`overlay/`, `routing/` and `pipelines/` (the simulation imports none of them; only `main` reads its
inputs through the lab). `tests/gossipsub_oracle.py`'s `spread_oracle` is its specification, and
`tests/test_spread_yardstick.py` checks it against that oracle publication by publication.

The rules, as the oracle replays them (one publication at a time, in whole microseconds):

* the publisher's message goes to its mesh peers of the topic (to every member it is connected to
  with flood publishing); a member's first copy is its delivery, and it forwards it at once to its
  mesh peers but the one it came from and the publisher; later copies are duplicates;
* a member with the message gossips it at its next `mcache_gossip` heartbeats (heartbeat j at
  phase + j x interval, phase = draw(PHASE, node) mod interval; the first one strictly after its
  copy): an IHAVE to the max(D_lazy, int(factor x eligible)) eligible peers (up, connected, not
  itself, outside its mesh) of smallest (draw(IHAVE_PICK, pub, node, j, peer), peer), all of them
  if fewer; a member without the message answers every IHAVE with an IWANT, and the announcer
  sends it the copy;
* IDONTWANT (a message of at least `idontwant_bytes`): a member's first copy is announced at once
  to its mesh peers but the sender (the publisher announces to all of its mesh peers), before it
  forwards; a peer so told sends it no copy from then on (push or IWANT);
* an uplink limit makes a member's copies leave one after another, each taking
  round(8 x bytes / mbps) us, in the order they were sent; control messages go at once;
* members down take no part: nobody sends them anything, nobody gossips to them; the publisher
  is always up;
* events run in (time, kind, node, other, hops) order, kind -1 IDONTWANT, 0 copy, 1 heartbeat
  (other: its number), 2 IHAVE, 3 IWANT.

Structure, unlike the lab's one kernel call per publication on Spark's executors: one compiled
call for every publication of the workload. The instance is arrays: the members of each topic as
a CSR (sorted node ids), each subscription's mesh row as a CSR of peer node ids (sorted), the
connections (optional) as a CSR over node ids, the positions of the latency model per node id.
Per-publication state lives in arrays over node ids, reset by stamps (no clearing); events are
rows of one binary heap, (time, kind, node, other, hops) packed in three int64 keys; whether a
peer told IDONTWANT is a stamp on the teller's mesh entry; a heartbeat folds its IHAVE draws' key
prefix once. Every IHAVE is queued, as in the oracle and the lab (`--skip-held-ihave` drops those
to members already holding the message, whose arrival does nothing: the same results, less work).

Usage (prints one JSON line: the publications, the deliveries, the seconds, the peak RSS):
  .venv/bin/python benchmarks/spread_yardstick.py --lakehouse LAKEHOUSE --instance tw-10k \
      [--publications 1000] [--heartbeats 120] [--seed 1] [--mass-share 0] [--message-bytes 256] \
      [--run-id RUN] [--build-meshes] [--skip-held-ihave] [--compare ROUTING_RUN_ID]

The meshes: the stored gossipsub run's `gossipsub_mesh` rows (`--run-id`, or the complete
`go-libp2p` run of the instance for `--heartbeats` and `--seed`, `INSTANCE.gossipsub.go-libp2p.hH.sS`
first), with that run's spread settings (heartbeat, D_lazy, factor, mcache_gossip, flood
publishing, IDONTWANT threshold); with `--build-meshes`, or when no such run is stored, built by
`benchmarks/gossipsub_yardstick.py`'s simulate for `--heartbeats` heartbeats (go-libp2p's profile,
meshes_s in the JSON). Publications are chosen as the lab's `disseminate` chooses them: the
`--publications` topics of two or more subscribers of smallest draw(seed, PUBLISHER, -1, topic)
(publication k on the k-th), the publisher the member of smallest draw(seed, PUBLISHER, topic,
node), the nodes down those of draw(seed, CHURN, 0, node) < share x 2^64 (the publisher spared),
positions from the latency model of `--model-seed` (Rappel's, through the lab). `--compare` checks
every publication against a stored `gossipsub-spread` routing run of the lab (its deliveries with
their hops and latency, its counts) and adds the matches to the JSON.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script too
from benchmarks.yardstick_draws import fold, mix, rnd1

PUBLISHER, CHURN, PHASE, IHAVE_PICK = 11, 12, 29, 30  # the draws' purposes (as the oracle keys them)
IDONTWANT, COPY, BEAT, IHAVE, IWANT = -1, 0, 1, 2, 3  # event kinds, in their order at one instant
COUNTS = ("messages", "duplicates", "ihave", "iwant", "idontwant", "bytes")
ID_BYTES = 46  # an IHAVE, IWANT or IDONTWANT entry: go-libp2p's default message id
_M64 = (1 << 64) - 1


@dataclass(frozen=True)
class Settings:
    """The spread's settings, field for field the oracle's `Spread` (either may be passed)."""

    heartbeat_us: int = 1_000_000
    d_lazy: int = 6
    gossip_factor: float = 0.25
    mcache_gossip: int = 3
    gossip: bool = True
    flood_publish: bool = False
    message_bytes: int = 256
    idontwant_bytes: int = 0
    upload_mbps: float = 0.0


# -- draws: splitmix64 folded over the key ---------------------------------------------------------


def draws(seed: int, purpose: int, *keys) -> np.ndarray:
    """The same draws over numpy arrays (uint64, wrapping), for choosing publications in `main`."""
    with np.errstate(over="ignore"):

        def mixed(z):
            z = z + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            return z ^ (z >> np.uint64(31))

        x = mixed(mixed(np.uint64(seed & _M64)) ^ np.uint64(purpose))
        for key in keys:
            x = mixed(x ^ np.asarray(key, dtype=np.int64).view(np.uint64))
    return x


# -- the event heap: (time, kind, node, other, hops) packed in three keys, compared in order -------
# k0 = time x 8 + kind + 1, k1 = node x 2^32 + other + 1, k2 = hops x 2 + via (via: 1 for a copy
# answering an IWANT; it orders only events otherwise equal, which act alike).
@nb.njit(cache=True)
def less(a0, a1, a2, b0, b1, b2):
    if a0 != b0:
        return a0 < b0
    if a1 != b1:
        return a1 < b1
    return a2 < b2


@nb.njit(cache=True)
def push(ev, n, at, kind, node, other, hops, via):
    """The heap (grown if full) with the event added; the caller counts it."""
    if n == ev.shape[0]:
        bigger = np.empty((2 * n, 3), np.int64)
        bigger[:n] = ev
        ev = bigger
    k0, k1, k2 = at * 8 + kind + 1, (node << 32) + other + 1, hops * 2 + via
    i = n
    while i > 0:
        up = (i - 1) >> 1
        if not less(k0, k1, k2, ev[up, 0], ev[up, 1], ev[up, 2]):
            break
        ev[i, 0], ev[i, 1], ev[i, 2] = ev[up, 0], ev[up, 1], ev[up, 2]
        i = up
    ev[i, 0], ev[i, 1], ev[i, 2] = k0, k1, k2
    return ev


@nb.njit(cache=True)
def pop(ev, n, top):
    """The first event, unpacked into `top` (time, kind, node, other, hops, via); the heap keeps
    n - 1."""
    top[0], top[1] = ev[0, 0] >> 3, (ev[0, 0] & 7) - 1
    top[2], top[3] = ev[0, 1] >> 32, (ev[0, 1] & 0xFFFFFFFF) - 1
    top[4], top[5] = ev[0, 2] >> 1, ev[0, 2] & 1
    n -= 1
    k0, k1, k2 = ev[n, 0], ev[n, 1], ev[n, 2]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and less(ev[c + 1, 0], ev[c + 1, 1], ev[c + 1, 2], ev[c, 0], ev[c, 1], ev[c, 2]):
            c += 1
        if not less(ev[c, 0], ev[c, 1], ev[c, 2], k0, k1, k2):
            break
        ev[i, 0], ev[i, 1], ev[i, 2] = ev[c, 0], ev[c, 1], ev[c, 2]
        i = c
    ev[i, 0], ev[i, 1], ev[i, 2] = k0, k1, k2


@nb.njit(cache=True)
def lat(x, y, a, b):
    """The latency between nodes a and b (positions in ms), whole us, halves to even."""
    return np.int64(np.rint(1000.0 * np.hypot(x[a] - x[b], y[a] - y[b])))


@nb.njit(cache=True)
def entry(m_start, m_peer, s, v):
    """The index of v in slot s's mesh row (sorted), -1 if not there."""
    lo, hi = m_start[s], m_start[s + 1]
    i = lo + np.searchsorted(m_peer[lo:hi], v)
    if i < hi and m_peer[i] == v:
        return i
    return -1


@nb.njit(cache=True)
def send_copy(ev, n, v, w, at, hops, via, stamp, slot_of, m_start, m_peer, told, free, free_at, busy, x, y, counts):
    """v sends w a copy at `at` unless w told v IDONTWANT; the heap and its size."""
    s = slot_of[w]
    if s >= 0:
        i = entry(m_start, m_peer, s, v)
        if i >= 0 and told[i] == stamp:
            return ev, n
    counts[0] += 1
    leaves = at if free[v] != stamp else max(at, free_at[v])
    leaves += busy
    free[v], free_at[v] = stamp, leaves
    ev = push(ev, n, leaves + lat(x, y, v, w), COPY, w, v, hops, via)
    return ev, n + 1


@nb.njit(cache=True)
def run(t_start, t_node, m_start, m_peer, c_start, c_peer, has_links, x, y, up, pub_id, pub_topic, pub_node, seed, settings, gossip_factor, skip_held):  # fmt: skip
    """Every publication p (id pub_id[p], topic pub_topic[p], publisher pub_node[p]).
    settings: heartbeat us, D_lazy, mcache_gossip, gossip, flood publishing, message bytes,
    IDONTWANT threshold (0: never), us a copy holds its sender's uplink. Returns the counts
    [P, 6] (COUNTS), and per publication, aligned with its topic's members
    t_node[t_start[t]:t_start[t + 1]] from o_start[p] on: the first copy's time (us, -1: none),
    hops and whether it came by IWANT (1) or by push (0). `skip_held`: an IHAVE to a member
    holding the message already is counted but not queued (its arrival would do nothing; the
    results are the same, the oracle and the lab queue it)."""
    beat, d_lazy, windows, gossip, flood, size, threshold, busy = (
        settings[0], settings[1], settings[2], settings[3], settings[4], settings[5], settings[6], settings[7],
    )  # fmt: skip
    large = 0 < threshold <= size
    nodes, pubs = x.shape[0], pub_id.shape[0]
    widest = 1
    o_start = np.zeros(pubs + 1, np.int64)
    for p in range(pubs):
        t = pub_topic[p]
        o_start[p + 1] = o_start[p] + t_start[t + 1] - t_start[t]
        widest = max(widest, t_start[t + 1] - t_start[t])
    first_us = np.full(o_start[pubs], -1, np.int64)
    hops_of = np.full(o_start[pubs], -1, np.int64)
    via_of = np.full(o_start[pubs], -1, np.int64)
    counts = np.zeros((pubs, 6), np.int64)
    got = np.zeros(nodes, np.int64)  # == stamp: the node has its first copy
    got_at = np.zeros(nodes, np.int64)
    got_hops = np.zeros(nodes, np.int64)
    got_via = np.zeros(nodes, np.int64)
    free = np.zeros(nodes, np.int64)  # == stamp: free_at is when its uplink is free
    free_at = np.zeros(nodes, np.int64)
    slot_of = np.full(nodes, -1, np.int64)  # the members' slots in the publication's topic
    mark = np.zeros(nodes, np.int64)  # == marked: in the gossiping node's mesh
    marked = 0
    told = np.zeros(m_peer.shape[0], np.int64)  # == stamp: the row's owner was told IDONTWANT by the peer
    keys = np.empty(widest, np.uint64)
    cand = np.empty(widest, np.int64)
    ev = np.empty((1024, 3), np.int64)
    top = np.empty(6, np.int64)
    pick = mix(mix(np.uint64(seed)) ^ np.uint64(IHAVE_PICK))
    for p in range(pubs):
        stamp, pub, t, publisher = p + 1, pub_id[p], pub_topic[p], pub_node[p]
        lo, hi = t_start[t], t_start[t + 1]
        c = counts[p]
        for i in range(lo, hi):
            slot_of[t_node[i]] = i
        ev = push(ev, 0, 0, COPY, publisher, -1, 0, 0)  # the publisher's own copy: no message sent
        n = 1
        while n > 0:
            pop(ev, n, top)
            n -= 1
            now, kind, v, other, hops = top[0], top[1], top[2], top[3], top[4]
            if kind == IDONTWANT:  # v is told by `other`, whose mesh it is in
                told[entry(m_start, m_peer, slot_of[other], v)] = stamp
            elif kind == COPY:
                if got[v] == stamp:
                    c[1] += 1
                    continue
                got[v], got_at[v], got_hops[v], got_via[v] = stamp, now, hops, top[5]
                s = slot_of[v]  # -1: a publisher outside the topic, no mesh
                a, b = (m_start[s], m_start[s + 1]) if s >= 0 else (0, 0)
                if large:
                    for i in range(a, b):
                        w = m_peer[i]
                        if w != other and (up[w] or w == publisher):
                            c[4] += 1
                            ev = push(ev, n, now + lat(x, y, v, w), IDONTWANT, w, v, 0, 0)
                            n += 1
                everyone = flood != 0 and other == -1  # flood publishing: to every member it is connected to
                if everyone:
                    a, b = (c_start[v], c_start[v + 1]) if has_links else (lo, hi)
                for i in range(a, b):
                    if everyone:
                        w = c_peer[i] if has_links else t_node[i]
                    else:
                        w = m_peer[i]
                    if w == other or w == publisher or not up[w] or slot_of[w] < 0:
                        continue
                    ev, n = send_copy(ev, n, v, w, now, hops + 1, 0, stamp, slot_of, m_start, m_peer, told, free, free_at, busy, x, y, c)  # fmt: skip
                if gossip != 0:
                    phase = np.int64(rnd1(seed, PHASE, v) % np.uint64(beat))
                    k = (now - phase) // beat + 1
                    for j in range(k, k + windows):
                        ev = push(ev, n, phase + j * beat, BEAT, v, j, 0, 0)
                        n += 1
            elif kind == BEAT:  # v's heartbeat number `other`: IHAVE to eligible peers
                marked += 1
                s = slot_of[v]
                if s >= 0:
                    for i in range(m_start[s], m_start[s + 1]):
                        mark[m_peer[i]] = marked
                a, b = (c_start[v], c_start[v + 1]) if has_links else (lo, hi)
                base = fold(fold(fold(pick, pub), v), other)  # draw(IHAVE_PICK, pub, v, j, w): w to come
                m = 0
                for i in range(a, b):
                    w = c_peer[i] if has_links else t_node[i]
                    if w == v or slot_of[w] < 0 or not (up[w] or w == publisher) or mark[w] == marked:
                        continue
                    keys[m], cand[m] = fold(base, w), w
                    m += 1
                want = min(m, max(d_lazy, np.int64(gossip_factor * m)))
                if want <= 0:
                    continue
                cut = np.partition(keys[:m], want - 1)[want - 1] if want < m else ~np.uint64(0)
                below = 0
                for i in range(m):
                    if keys[i] < cut:
                        below += 1
                ties = want - below  # of the draws equal to the cut, the smallest ids (candidates ascend)
                for i in range(m):
                    if keys[i] > cut:
                        continue
                    if keys[i] == cut:
                        if ties == 0:
                            continue
                        ties -= 1
                    w = cand[i]
                    c[2] += 1
                    if skip_held and got[w] == stamp:  # it would arrive at a holder: nothing to do
                        continue
                    ev = push(ev, n, now + lat(x, y, v, w), IHAVE, w, v, 0, 0)
                    n += 1
            elif kind == IHAVE:
                if got[v] != stamp:
                    c[3] += 1
                    ev = push(ev, n, now + lat(x, y, v, other), IWANT, other, v, 0, 0)
                    n += 1
            else:  # an IWANT from `other`: the copy
                ev, n = send_copy(ev, n, v, other, now, got_hops[v] + 1, 1, stamp, slot_of, m_start, m_peer, told, free, free_at, busy, x, y, c)  # fmt: skip
        c[5] = c[0] * size + ID_BYTES * (c[2] + c[3] + c[4])
        for i in range(lo, hi):
            w = t_node[i]
            if got[w] == stamp:
                o = o_start[p] + i - lo
                first_us[o], hops_of[o], via_of[o] = got_at[w], got_hops[w], got_via[w]
            slot_of[w] = -1
    return counts, o_start, first_us, hops_of, via_of


# -- plain numpy inputs in, per-publication results out -------------------------------------------
@dataclass(frozen=True)
class Instance:
    """`run`'s instance arrays: topic members (CSR, sorted ids), mesh rows per subscription slot
    (CSR of sorted peer ids), connections per node id (CSR, sorted; has_links False: every pair of
    members is connected), positions per node id (ms)."""

    t_start: np.ndarray
    t_node: np.ndarray
    m_start: np.ndarray
    m_peer: np.ndarray
    c_start: np.ndarray
    c_peer: np.ndarray
    has_links: bool
    x: np.ndarray
    y: np.ndarray


def layout(subscriptions, meshes, positions, connections=None) -> Instance:
    """subscriptions: (node, topic) pairs; meshes: (topic, node, peer) rows, node pushing to peer,
    both members of the topic; positions: [nodes, 2] in ms by node id; connections: (a, b) pairs
    (either direction, any topic), None: every pair of members of a topic is connected."""
    positions = np.asarray(positions, np.float64).reshape(-1, 2)
    nodes = len(positions)
    subs = np.unique(np.asarray(subscriptions, np.int64).reshape(-1, 2), axis=0)
    if len(subs) and (subs.min() < 0 or subs[:, 0].max() >= nodes):
        raise ValueError("a subscription's node has no position (or an id is negative)")
    order = np.lexsort((subs[:, 0], subs[:, 1]))
    node, topic = subs[order, 0], subs[order, 1]
    topics = int(topic.max()) + 1 if len(topic) else 0
    t_start = np.searchsorted(topic, np.arange(topics + 1)).astype(np.int64)
    key = topic * nodes + node  # ascending: the slots
    rows = np.unique(np.asarray(meshes, np.int64).reshape(-1, 3), axis=0)  # sorted by (topic, node, peer)
    slot = np.searchsorted(key, rows[:, 0] * nodes + rows[:, 1])
    at_peer = np.searchsorted(key, rows[:, 0] * nodes + rows[:, 2])
    inside = (slot < len(key)) & (at_peer < len(key))
    if not (inside.all() and (key[slot] == rows[:, 0] * nodes + rows[:, 1]).all()):
        raise ValueError("a mesh row's node does not subscribe to its topic")
    if not (key[at_peer] == rows[:, 0] * nodes + rows[:, 2]).all() or (rows[:, 1] == rows[:, 2]).any():
        raise ValueError("a mesh row's peer does not subscribe to its topic (or is the node itself)")
    m_start = np.searchsorted(slot, np.arange(len(key) + 1)).astype(np.int64)
    if connections is None:
        c_start, c_peer, has_links = np.zeros(1, np.int64), np.zeros(0, np.int64), False
    else:
        pairs = np.asarray(connections, np.int64).reshape(-1, 2)
        both = np.unique(np.concatenate([pairs, pairs[:, ::-1]]), axis=0)
        both = both[both[:, 0] != both[:, 1]]
        c_start = np.searchsorted(both[:, 0], np.arange(nodes + 1)).astype(np.int64)
        c_peer, has_links = np.ascontiguousarray(both[:, 1]), True
    x, y = np.ascontiguousarray(positions[:, 0]), np.ascontiguousarray(positions[:, 1])
    return Instance(t_start, node.copy(), m_start, np.ascontiguousarray(rows[:, 2]), c_start, c_peer, has_links, x, y)


def settings_of(spread) -> tuple[np.ndarray, float]:
    """`run`'s settings from a `Settings` (or the oracle's `Spread`)."""
    busy = round(8 * spread.message_bytes / spread.upload_mbps) if spread.upload_mbps else 0
    values = [spread.heartbeat_us, spread.d_lazy, spread.mcache_gossip, bool(spread.gossip),
              bool(spread.flood_publish), spread.message_bytes, spread.idontwant_bytes, busy]  # fmt: skip
    return np.asarray(values, np.int64), float(spread.gossip_factor)


@dataclass
class Result:
    """Per publication p: counts[p] (COUNTS), and for the members of its topic
    (members(p), ascending) from o_start[p] on: the first copy's time (us, -1: none), its hops,
    whether it came by IWANT (via 1) or pushed (0)."""

    instance: Instance
    publications: np.ndarray  # (publisher, topic)
    pub_ids: np.ndarray
    counts: np.ndarray
    o_start: np.ndarray
    first_us: np.ndarray
    hops: np.ndarray
    via: np.ndarray

    def members(self, p: int) -> np.ndarray:
        t = self.publications[p, 1]
        return self.instance.t_node[self.instance.t_start[t] : self.instance.t_start[t + 1]]

    def _got(self, p: int) -> tuple[np.ndarray, slice]:
        span = slice(self.o_start[p], self.o_start[p + 1])
        return self.members(p), span

    def first(self, p: int) -> dict[int, tuple[int, int]]:
        """As the oracle's `first`: node -> (time us, hops), the publisher's (0, 0) included."""
        members, span = self._got(p)
        times, hops = self.first_us[span], self.hops[span]
        out = {int(members[i]): (int(times[i]), int(hops[i])) for i in np.flatnonzero(times >= 0)}
        out[int(self.publications[p, 0])] = (0, 0)
        return out

    def by_iwant(self, p: int) -> set[int]:
        """The members whose first copy came in answer to an IWANT."""
        members, span = self._got(p)
        return {int(v) for v in members[self.via[span] == 1]}

    def count(self, p: int) -> dict[str, int]:
        return dict(zip(COUNTS, (int(c) for c in self.counts[p])))

    def deliveries(self) -> int:
        """First copies of members other than their publication's publisher."""
        reached = 0
        for p in range(len(self.pub_ids)):
            members, span = self._got(p)
            got = members[self.first_us[span] >= 0]
            reached += len(got) - int(np.isin(self.publications[p, 0], got))
        return reached


def simulate(subscriptions, meshes, positions, up, publications, seed, spread=None, connections=None, pub_ids=None, instance=None, skip_held=False):  # fmt: skip
    """Every publication (publisher, topic) spread over the meshes (see `layout` for the
    instance's inputs; `instance`: one laid out already); `up[node]`: whether it is up, None: all
    (a publisher is always); `pub_ids`: the publications' ids (keys of their IHAVE draws), None:
    0, 1, ... in order; `skip_held`: see `run`. Returns a `Result`."""
    inst = instance if instance is not None else layout(subscriptions, meshes, positions, connections)
    nodes = len(inst.x)
    pubs = np.asarray(publications, np.int64).reshape(-1, 2)
    ids = np.arange(len(pubs), dtype=np.int64) if pub_ids is None else np.asarray(pub_ids, np.int64)
    if len(pubs) and (pubs[:, 1].min() < 0 or pubs[:, 1].max() >= len(inst.t_start) - 1 or pubs[:, 0].max() >= nodes):
        raise ValueError("a publication's topic has no subscriber, or its publisher no position")
    if nodes >= 1 << 31:
        raise ValueError("node ids must be below 2^31 (the event keys pack them)")
    alive = np.ones(nodes, np.bool_) if up is None else np.asarray(up, np.bool_)
    settings, factor = settings_of(spread if spread is not None else Settings())
    out = run(inst.t_start, inst.t_node, inst.m_start, inst.m_peer, inst.c_start, inst.c_peer, inst.has_links,
              inst.x, inst.y, alive, ids, np.ascontiguousarray(pubs[:, 1]), np.ascontiguousarray(pubs[:, 0]),
              np.int64(seed), settings, factor, bool(skip_held))  # fmt: skip
    return Result(inst, pubs, ids, *out)


def choose(subscriptions, seed: int, count: int, mass_share: float, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The lab's publications (docs/readings/gossipsub.md#spread, as push-pull chooses them):
    (publisher, topic) rows, publication k on the topic of two or more subscribers of k-th
    smallest (draw(PUBLISHER, -1, topic), topic), its publisher the member of smallest
    (draw(PUBLISHER, topic, node), node); and who is up: not draw(CHURN, 0, node) < share x 2^64."""
    subs = np.unique(np.asarray(subscriptions, np.int64).reshape(-1, 2), axis=0)
    order = np.lexsort((subs[:, 0], subs[:, 1]))
    node, topic = subs[order, 0], subs[order, 1]
    sizes = np.bincount(topic)
    candidates = np.flatnonzero(sizes >= 2).astype(np.int64)
    rank = draws(seed, PUBLISHER, np.full(len(candidates), -1, np.int64), candidates)
    chosen = candidates[np.lexsort((candidates, rank))][:count]
    starts = np.searchsorted(topic, chosen)
    rows = []
    for t, lo in zip(chosen.tolist(), starts.tolist()):
        members = node[lo : lo + sizes[t]]
        rows.append((int(members[np.argmin(draws(seed, PUBLISHER, np.full(len(members), t), members))]), t))
    if mass_share <= 0:
        up = np.ones(nodes, np.bool_)
    elif mass_share >= 1:
        up = np.zeros(nodes, np.bool_)
    else:
        limit = np.uint64(int(mass_share * float(1 << 64)))
        up = draws(seed, CHURN, np.zeros(nodes, np.int64), np.arange(nodes, dtype=np.int64)) >= limit
    return np.asarray(rows, np.int64).reshape(-1, 2), up


def warm() -> None:
    """Compile `run` (or load it from numba's cache) on a tiny instance."""
    subs = [(0, 0), (1, 0), (2, 0), (3, 0)]
    meshes = [(0, 0, 1), (0, 1, 0), (0, 1, 2), (0, 2, 1)]
    positions = np.asarray([(0.0, 0.0), (3.0, 4.0), (6.0, 8.0), (1.0, 1.0)])
    simulate(subs, meshes, positions, None, [(0, 0)], 1, Settings(idontwant_bytes=1, upload_mbps=8.0))
    simulate(subs, meshes, positions, None, [(0, 0)], 1, Settings(flood_publish=True), connections=[(0, 3)])


# -- main: the lab's inputs, one timed spread -------------------------------------------------------
def _rows(lakehouse: str, name: str, column: str, value: str, columns: list[str]):
    """One run's rows of a large Delta table (filtered while read)."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    return DeltaTable(f"{lakehouse}/{name}").to_pyarrow_dataset().to_table(filter=ds.field(column) == value, columns=columns)  # fmt: skip


def _stored_run(runs, instance: str, heartbeats: int, seed: int, run_id: str | None):
    """The gossipsub run whose meshes to read: `run_id`, or the complete go-libp2p run of the
    instance for the heartbeats and seed (the canonical name first); None if there is none."""
    runs = runs[(runs.algorithm == "gossipsub") & (runs.status == "complete")]
    if run_id is not None:
        found = runs[runs.run_id == run_id]
        if found.empty:
            raise SystemExit(f"no complete gossipsub run '{run_id}' in the lakehouse")
        return found.iloc[0]
    canonical = f"{instance}.gossipsub.go-libp2p.h{heartbeats}.s{seed}"
    matching = []
    for _, row in runs[runs.instance == instance].iterrows():
        request = json.loads(row.params).get("request", {})
        if (request.get("heartbeats"), request.get("seed"), request.get("profile")) == (heartbeats, seed, "go-libp2p"):
            matching.append((row.run_id != canonical, row.run_id, row))
    return min(matching, key=lambda m: m[:2])[2] if matching else None


def _compare(lakehouse: str, routing_run_id: str, result: Result, up: np.ndarray) -> dict:
    """Each publication of the yardstick against the lab's stored spread `routing_run_id`."""
    pubs = _rows(lakehouse, "routing_publications", "routing_run_id", routing_run_id, None).to_pandas()
    got = _rows(lakehouse, "routing_deliveries", "routing_run_id", routing_run_id, None).to_pandas()
    by_pub = {pub: frame for pub, frame in got.groupby("pub_id")}
    equal = 0
    for p, pub in enumerate(result.pub_ids.tolist()):
        row = pubs[pubs.pub_id == pub]
        if row.empty:
            continue
        row = row.iloc[0]
        publisher, topic = (int(v) for v in result.publications[p])
        first = result.first(p)
        first.pop(publisher)
        c = result.count(p)
        frame = by_pub.get(pub)
        lab = {} if frame is None else {
            int(v): (round(ms * 1000), int(h)) for v, ms, h in zip(frame.node_id, frame.latency_ms, frame.hops)
        }  # fmt: skip
        expected = int(sum(up[v] or v == publisher for v in result.members(p).tolist())) - 1
        same = (int(row.topic_id), int(row.publisher)) == (topic, publisher) and lab == first
        same &= (int(row.received), int(row.duplicate_deliveries), int(row.ihave), int(row.iwant)) == (
            c["messages"], c["duplicates"], c["ihave"], c["iwant"],
        )  # fmt: skip
        same &= (int(row.idontwant), int(row.bytes_sent), int(row.expected_deliveries)) == (
            c["idontwant"], c["bytes"], expected,
        )  # fmt: skip
        equal += bool(same)
    return {"routing_run_id": routing_run_id, "lab_publications": len(pubs), "equal": equal}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", default="tw-10k")
    parser.add_argument("--publications", type=int, default=1000)
    parser.add_argument("--heartbeats", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model-seed", type=int, default=1)
    parser.add_argument("--mass-share", type=float, default=0.0)
    parser.add_argument("--message-bytes", type=int, default=256)
    parser.add_argument("--upload-mbps", type=float, default=0.0)
    parser.add_argument("--run-id", help="the gossipsub run whose stored meshes to read")
    parser.add_argument("--build-meshes", action="store_true", help="build the meshes (gossipsub_yardstick)")
    parser.add_argument("--skip-held-ihave", action="store_true", help="queue no IHAVE to a holder (same results)")
    parser.add_argument("--compare", metavar="ROUTING_RUN_ID", help="a stored gossipsub-spread to check against")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from benchmarks.design_greedy import current_subscriptions, table  # the inputs, through the lab
    from overlay.rappel.coordinates import LatencyModel

    clock = time.monotonic()
    subs = np.asarray(current_subscriptions(args.lakehouse, args.instance), np.int64)
    nodes = int(subs[:, 0].max()) + 1
    positions = LatencyModel().coordinates(args.model_seed, np.arange(nodes, dtype=np.int64))
    stored = None if args.build_meshes else _stored_run(table(args.lakehouse, "overlay_runs"), args.instance, args.heartbeats, args.seed, args.run_id)  # fmt: skip
    report: dict = {"instance": args.instance}
    if stored is not None:
        protocol = json.loads(stored.params)["protocol"]
        if protocol.get("peers"):
            raise SystemExit(f"run '{stored.run_id}' has peers as deployed: main reads no connections")
        rows = _rows(args.lakehouse, "gossipsub_mesh", "run_id", stored.run_id, ["topic_id", "node_id", "peer_id"])
        meshes = np.stack([rows.column(c).to_numpy() for c in ("topic_id", "node_id", "peer_id")], axis=1)
        report.update(run_id=stored.run_id, meshes="stored")
        read = time.monotonic() - clock
    else:
        from benchmarks import gossipsub_yardstick

        protocol = {"heartbeat_ms": 1000, "d_lazy": 6, "gossip_factor": 0.25, "mcache_gossip": 3,
                    "flood_publish": False, "idontwant_bytes": 1024}  # fmt: skip  # go-libp2p's
        read = time.monotonic() - clock
        profile = gossipsub_yardstick.PROFILES["go-libp2p"]
        phases = (draws(args.seed, PHASE, np.arange(nodes, dtype=np.int64)) % np.uint64(profile[-1])).astype(np.int64)
        gossipsub_yardstick.simulate(subs[:50], nodes, positions, phases, args.seed, profile, 2)  # compiled (or loaded)
        clock = time.monotonic()
        _, built = gossipsub_yardstick.simulate(subs, nodes, positions, phases, args.seed, profile, args.heartbeats)
        meshes = np.asarray(sorted(built), np.int64).reshape(-1, 3)
        report.update(meshes="built", heartbeats=args.heartbeats, meshes_s=round(time.monotonic() - clock, 3))
    spread = Settings(
        heartbeat_us=1000 * int(protocol["heartbeat_ms"]),
        d_lazy=int(protocol["d_lazy"]),
        gossip_factor=float(protocol["gossip_factor"]),
        mcache_gossip=int(protocol["mcache_gossip"]),
        flood_publish=bool(protocol["flood_publish"]),
        message_bytes=args.message_bytes,
        idontwant_bytes=int(protocol["idontwant_bytes"]),
        upload_mbps=args.upload_mbps,
    )
    clock = time.monotonic()
    publications, up = choose(subs, args.seed, args.publications, args.mass_share, nodes)
    instance = layout(subs, meshes, positions)
    prepare = time.monotonic() - clock
    warm()
    clock, cpu = time.monotonic(), time.process_time()
    result = simulate(None, None, None, up, publications, args.seed, spread, instance=instance, skip_held=args.skip_held_ihave)  # fmt: skip
    seconds, cpu = time.monotonic() - clock, time.process_time() - cpu
    expected = sum(int(np.sum(up[result.members(p)] | (result.members(p) == pub[0]))) - 1 for p, pub in enumerate(publications))  # fmt: skip
    totals = result.counts.sum(axis=0)
    report.update(
        publications=len(publications), deliveries=result.deliveries(), expected=expected,
        **{k: int(v) for k, v in zip(COUNTS, totals)},
        read_s=round(read, 2), prepare_s=round(prepare, 3), spread_s=round(seconds, 3), spread_cpu_s=round(cpu, 3),
        skip_held_ihave=args.skip_held_ihave,
    )  # fmt: skip
    if args.compare:
        report["compare"] = _compare(args.lakehouse, args.compare, result, up)
    report["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps(report))


if __name__ == "__main__":
    main()
