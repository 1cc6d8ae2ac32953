"""A compiled yardstick for gossipsub's heartbeats: the lab's reading (docs/readings/gossipsub.md)
written once more, in numba, one thread, independent of `overlay/`, `routing/` and `pipelines/`
(the simulation imports none of them; only `main` reads its inputs through the lab).

Structure, unlike the lab's topic-by-topic kernel: the whole network at once, as
`tests/gossipsub_oracle.py` runs it. Subscriptions are slots in a CSR by topic (members sorted);
each slot holds its mesh and its backoffs as rows of member positions; one event heap for every
node and topic, rows (time, kind, receiver, sender, topic, receiver's epoch, sender's epoch),
heartbeats among them (kind 2), so one instant runs PRUNEs, GRAFTs, heartbeats. A node's heartbeat
visits its topics in ascending order. Every pair sharing a topic is connected; nobody fails.

Usage (prints the seconds, the last heartbeat's measures and the peak RSS as JSON):
  .venv/bin/python benchmarks/gossipsub_yardstick.py --lakehouse LAKEHOUSE --instance fb-1k \
      [--heartbeats 120] [--seed 1] [--profile go-libp2p|spec]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script too
from benchmarks.yardstick_draws import rnd2, rnd4

DIRECTION, GRAFT_PICK, KEEP, OUTBOUND_PICK, PHASE = 25, 26, 27, 28, 29
PRUNE, GRAFT, BEAT = 0, 1, 2
COLUMNS = ("grafts", "prunes", "refused", "meshes", "mesh_links", "mesh_min", "mesh_max", "below_low", "above_high", "backoffs")  # fmt: skip
PROFILES = {  # d, d_low, d_high, d_out, high, backoff us, sweep, slack us, heartbeat us
    "go-libp2p": (6, 5, 12, 2, 12, 60_000_000, 15, 2_000_000, 1_000_000),
    "spec": (6, 4, 12, 2, 13, 60_000_000, 1, 0, 1_000_000),
}


@nb.njit(cache=True)
def out(seed, p, q):
    low, high = min(p, q), max(p, q)
    return ((rnd2(seed, DIRECTION, low, high) & np.uint64(1)) == np.uint64(0)) == (p == low)


@nb.njit(cache=True)
def earlier(ev, i, j):
    for c in range(7):
        if ev[i, c] != ev[j, c]:
            return ev[i, c] < ev[j, c]
    return False


@nb.njit(cache=True)
def push(ev, n, row):
    if n == ev.shape[0]:
        bigger = np.empty((2 * n, 7), np.int64)
        bigger[:n] = ev
        ev = bigger
    ev[n] = row
    i = n
    while i > 0 and earlier(ev, i, (i - 1) // 2):
        tmp = ev[i].copy()
        ev[i] = ev[(i - 1) // 2]
        ev[(i - 1) // 2] = tmp
        i = (i - 1) // 2
    return ev


@nb.njit(cache=True)
def pop(ev, n):
    top = ev[0].copy()
    n -= 1
    ev[0] = ev[n]
    i = 0
    while True:
        c = i
        for k in (2 * i + 1, 2 * i + 2):
            if k < n and earlier(ev, k, c):
                c = k
        if c == i:
            return top
        tmp = ev[i].copy()
        ev[i] = ev[c]
        ev[c] = tmp
        i = c


@nb.njit(cache=True)
def slot_of(t_start, t_node, t, node):
    lo, hi = t_start[t], t_start[t + 1]
    return lo + np.searchsorted(t_node[lo:hi], node)


@nb.njit(cache=True)
def index_of(row, size, x):
    for i in range(size):
        if row[i] == x:
            return i
    return -1


@nb.njit(cache=True)
def send(ev, n, row, at, kind, q, p, t):
    """The heap with a GRAFT or PRUNE from p to q about topic t, arriving at `at`, added."""
    row[0], row[1], row[2], row[3], row[4], row[5], row[6] = at, kind, q, p, t, 0, 0
    return push(ev, n, row)


@nb.njit(cache=True)
def hold(held, held_end, hsize, s, r, end):
    """Slot s backs r off until `end` at least."""
    j = index_of(held[s], hsize[s], r)
    if j >= 0:
        held_end[s, j] = max(held_end[s, j], end)
        return
    if hsize[s] == held.shape[1]:
        raise ValueError("a slot's backoffs outgrew the yardstick's rows")
    held[s, hsize[s]], held_end[s, hsize[s]] = r, end
    hsize[s] += 1


@nb.njit(cache=True)
def run(t_start, t_node, n_start, n_slot, slot_topic, x, y, phase, seed, prm, heartbeats):
    """prm: the PROFILES tuple. Returns measures [heartbeats, 10] and the mesh rows (slot, peer slot)."""
    d, d_low, d_high, d_out, high, backoff, sweep, slack, beat = prm
    nodes, slots = n_start.shape[0] - 1, t_node.shape[0]
    width = 4 * d_high
    mesh = np.empty((slots, width), np.int64)  # peer slots
    size = np.zeros(slots, np.int64)
    held = np.empty((slots, width), np.int64)
    held_end = np.empty((slots, width), np.int64)
    hsize = np.zeros(slots, np.int64)
    ticks = np.zeros(nodes, np.int64)
    ev = np.empty((1024, 7), np.int64)
    n = 0
    counts = np.zeros(3, np.int64)
    measures = np.zeros((heartbeats, 10), np.int64)
    keys = np.empty(slots, np.uint64)
    cand = np.empty(slots, np.int64)
    seen = np.zeros(slots, np.int64)
    stamp = 0
    row = np.zeros(7, np.int64)

    for h in range(1, heartbeats + 1):
        counts[:] = 0
        for p in range(nodes):
            if n_start[p + 1] > n_start[p]:
                row[0], row[1], row[2], row[3], row[4], row[5], row[6] = (
                    (h - 1) * beat + phase[p],
                    BEAT,
                    p,
                    -1,
                    -1,
                    0,
                    0,
                )
                ev = push(ev, n, row)
                n += 1
        while n > 0 and ev[0, 0] < h * beat:
            e = pop(ev, n)
            n -= 1
            now, kind, p = e[0], e[1], e[2]
            if kind != BEAT:
                q, t = e[3], e[4]
                s, r = slot_of(t_start, t_node, t, p), slot_of(t_start, t_node, t, q)
                i = index_of(mesh[s], size[s], r)
                j = index_of(held[s], hsize[s], r)
                if kind == GRAFT and i >= 0:
                    continue
                refuse = kind == GRAFT and (
                    (j >= 0 and now < held_end[s, j]) or (size[s] >= d_high and not out(seed, p, q))
                )
                if kind == GRAFT and not refuse:
                    if size[s] == width:
                        raise ValueError("a mesh outgrew the yardstick's rows")
                    mesh[s, size[s]] = r
                    size[s] += 1
                    continue
                if i >= 0:
                    size[s] -= 1
                    mesh[s, i] = mesh[s, size[s]]
                hold(held, held_end, hsize, s, r, now + backoff)
                if refuse:
                    counts[2] += 1
                    counts[1] += 1
                    ev = send(ev, n, row, now + lat(x, y, p, q), PRUNE, q, p, t)
                    n += 1
                continue
            ticks[p] += 1
            for k in range(n_start[p], n_start[p + 1]):
                s = n_slot[k]
                t = slot_topic[s]
                lo, hi = t_start[t], t_start[t + 1]
                if ticks[p] % sweep == 0:
                    kept = 0
                    for j in range(hsize[s]):
                        if held_end[s, j] + slack >= now:
                            held[s, kept], held_end[s, kept] = held[s, j], held_end[s, j]
                            kept += 1
                    hsize[s] = kept
                for step in range(3):  # graft below D_low, prune at `high`, outbound quota
                    if step == 1:
                        if size[s] < high:
                            continue
                        m = size[s]
                        for i in range(m):
                            keys[i], cand[i] = rnd4(seed, KEEP, h, p, t, t_node[mesh[s, i]]), mesh[s, i]
                        order = np.argsort(keys[:m], kind="mergesort")
                        ranked = sort_ties(keys[:m][order], cand[:m][order])  # equal draws: node order
                        keep = np.zeros(m, np.bool_)
                        keep[:d] = True
                        outs = np.zeros(m, np.bool_)
                        for i in range(m):
                            outs[i] = out(seed, p, t_node[ranked[i]])
                        short = d_out - outs[:d].sum()
                        extra = 0
                        if short > 0:
                            for i in range(d, m):
                                if extra < short and outs[i]:
                                    keep[i] = True
                                    extra += 1
                            for i in range(d - 1, -1, -1):
                                if extra > 0 and not outs[i]:
                                    keep[i] = False
                                    extra -= 1
                        for i in range(m):
                            if not keep[i]:
                                r = ranked[i]
                                at = index_of(mesh[s], size[s], r)
                                size[s] -= 1
                                mesh[s, at] = mesh[s, size[s]]
                                hold(held, held_end, hsize, s, r, now + backoff)
                                counts[1] += 1
                                q = t_node[r]
                                ev = send(ev, n, row, now + lat(x, y, p, q), PRUNE, q, p, t)
                                n += 1
                        continue
                    if step == 0:
                        if size[s] >= d_low:
                            continue
                        want, purpose = d - size[s], GRAFT_PICK
                    else:
                        if size[s] < d_low:
                            continue
                        have = 0
                        for i in range(size[s]):
                            have += out(seed, p, t_node[mesh[s, i]])
                        if have >= d_out:
                            continue
                        want, purpose = d_out - have, OUTBOUND_PICK
                    stamp += 1
                    for i in range(size[s]):
                        seen[mesh[s, i]] = stamp
                    for i in range(hsize[s]):
                        seen[held[s, i]] = stamp
                    m = 0
                    for r in range(lo, hi):
                        q = t_node[r]
                        if q == p or seen[r] == stamp or (purpose == OUTBOUND_PICK and not out(seed, p, q)):
                            continue
                        keys[m], cand[m] = rnd4(seed, purpose, h, p, t, q), r
                        m += 1
                    order = np.argsort(keys[:m], kind="mergesort")  # candidates in node order: ties by node
                    for i in range(min(want, m)):
                        r = cand[order[i]]
                        if size[s] == width:
                            raise ValueError("a mesh outgrew the yardstick's rows")
                        mesh[s, size[s]] = r
                        size[s] += 1
                        counts[0] += 1
                        q = t_node[r]
                        ev = send(ev, n, row, now + lat(x, y, p, q), GRAFT, q, p, t)
                        n += 1
        out_row = measures[h - 1]
        out_row[0], out_row[1], out_row[2] = counts[0], counts[1], counts[2]
        out_row[5], out_row[6] = -1, -1
        out_row[9] = hsize.sum()
        for s in range(slots):
            t = slot_topic[s]
            if t_start[t + 1] - t_start[t] <= d_low:
                continue
            m = size[s]
            out_row[3] += 1
            out_row[4] += m
            out_row[5] = m if out_row[5] < 0 else min(out_row[5], m)
            out_row[6] = max(out_row[6], m)
            out_row[7] += m < d_low
            out_row[8] += m > d_high
    return measures, mesh, size


@nb.njit(cache=True)
def sort_ties(keys, ranked):
    """Insertion pass: equal keys ordered by slot (slots of one topic are in node order)."""
    for i in range(1, len(ranked)):
        j = i
        while j > 0 and keys[j - 1] == keys[j] and ranked[j - 1] > ranked[j]:
            ranked[j - 1], ranked[j] = ranked[j], ranked[j - 1]
            j -= 1
    return ranked


@nb.njit(cache=True)
def lat(x, y, p, q):
    return np.int64(np.rint(1000.0 * np.hypot(x[p] - x[q], y[p] - y[q])))


def layout(subscriptions: np.ndarray, nodes: int):
    """Slots: the subscriptions sorted by (topic, node); each node's slots in topic order."""
    order = np.lexsort((subscriptions[:, 0], subscriptions[:, 1]))
    node, topic = subscriptions[order, 0], subscriptions[order, 1]
    topics = int(topic.max()) + 1 if len(topic) else 0
    t_start = np.searchsorted(topic, np.arange(topics + 1)).astype(np.int64)
    by_node = np.lexsort((topic, node))
    n_start = np.searchsorted(node[by_node], np.arange(nodes + 1)).astype(np.int64)
    return t_start, node.astype(np.int64), n_start, by_node.astype(np.int64), topic.astype(np.int64)


def prepare(subscriptions, nodes, positions, phases, seed, profile, heartbeats) -> tuple:
    """`run`'s arguments (the layout, the positions' columns) for the subscriptions."""
    t_start, t_node, n_start, n_slot, slot_topic = layout(np.asarray(subscriptions, np.int64).reshape(-1, 2), nodes)
    x, y = np.ascontiguousarray(positions[:, 0], np.float64), np.ascontiguousarray(positions[:, 1], np.float64)
    prm = tuple(int(v) for v in profile)
    return t_start, t_node, n_start, n_slot, slot_topic, x, y, np.asarray(phases, np.int64), seed, prm, heartbeats


def rows_of(arguments: tuple, mesh: np.ndarray, size: np.ndarray) -> set[tuple[int, int, int]]:
    """The final meshes as (topic, node, peer) rows."""
    t_node, slot_topic = arguments[1], arguments[4]
    return {
        (int(slot_topic[s]), int(t_node[s]), int(t_node[r])) for s in range(len(t_node)) for r in mesh[s, : size[s]]
    }


def simulate(subscriptions, nodes, positions, phases, seed, profile, heartbeats):
    """(measures [heartbeats, 10], mesh rows as a set of (topic, node, peer))."""
    arguments = prepare(subscriptions, nodes, positions, phases, seed, profile, heartbeats)
    measures, mesh, size = run(*arguments)
    return measures, rows_of(arguments, mesh, size)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", default="fb-1k")
    parser.add_argument("--heartbeats", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="go-libp2p")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from benchmarks.design_greedy import current_subscriptions  # the inputs, through the lab
    from overlay.draws import GOSSIPSUB_PHASE, draw
    from overlay.rappel.coordinates import LatencyModel

    clock = time.monotonic()
    subs = np.asarray(current_subscriptions(args.lakehouse, args.instance), np.int64)
    nodes = int(subs[:, 0].max()) + 1
    beat = PROFILES[args.profile][-1]
    positions = LatencyModel().coordinates(1, np.arange(nodes))
    phases = (draw(args.seed, GOSSIPSUB_PHASE, np.arange(nodes, dtype=np.int64)) % np.uint64(beat)).astype(np.int64)
    read = time.monotonic() - clock
    arguments = prepare(subs, nodes, positions, phases, args.seed, PROFILES[args.profile], args.heartbeats)
    simulate(subs[:50], nodes, positions, phases, args.seed, PROFILES[args.profile], 2)  # compiled (or loaded)
    clock = time.monotonic()
    measures, mesh, size = run(*arguments)
    seconds = time.monotonic() - clock
    rows = rows_of(arguments, mesh, size)
    print(json.dumps({
        "instance": args.instance, "subscriptions": len(subs), "heartbeats": args.heartbeats,
        "read_s": round(read, 2), "simulate_s": round(seconds, 3), "mesh_rows": len(rows),
        "last": dict(zip(COLUMNS, measures[-1].tolist())),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
