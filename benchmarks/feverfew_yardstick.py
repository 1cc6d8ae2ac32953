"""A compiled yardstick for Feverfew's gossip cycles: the lab's reading (docs/readings/feverfew.md,
the cycle of `tests/feverfew_oracle.py`) written once more, in numba, one thread, independent of
`overlay/`, `routing/` and `pipelines/` (the simulation imports none of them; only `main` reads
its inputs through the lab).

Structure, unlike the lab's kernel (which writes every message as a row and sorts the rows by
destination between its three steps): the whole network at once, phase by phase, as the oracle
walks it, with no message rows. Each cycle: the random views aged (or drawn afresh), the Cyclon
targets and sent entries, the GossipSample peers; BubbleSample's emissions and copies (counted,
then written once), the agents' matches applied where they land (MB, the origin's diffusion); the
Cyclon requests served and merged in requester order; the copies grouped by receiver (a stable
counting sort) into the agent views and the held copies; then per node the answer merged, the
similar view ranked over the pooled buffers (u2, u1 exact as integer cross-products), and Alg. 3
run with each candidate's shared topics indexed both ways, so a pick updates only the candidates
that share the topics it covers (shared topics: the candidate's walked against the node's marked
ones, or the node's looked up among a candidate with over 8 times as many). Subscriptions are a CSR by node (topics ascending, dense ids),
restSub a flag per subscription, a diffusion four numbers per subscription, the ln-covered view a
row per node of its largest possible length (sum of need over its topics), MB a sorted array of
node * N + other keys, the reported pairs an open-addressing hash set of (agent, origin, other)
keys, the held copies a CSR rebuilt every cycle. Nobody fails.

Usage (prints the seconds, a few end-state measures and the peak RSS as JSON):
  .venv/bin/python benchmarks/feverfew_yardstick.py --lakehouse LAKEHOUSE --instance tw-10k \
      [--cycles 40] [--seed 1] [--random-view 20] [--shuffle 10] [--similar-view 40] \
      [--agent-view 40] [--bubble-start 30] [--delta 1] [--clear-similar] [--pss cyclon|uniform] \
      [--no-bubble]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script too
from benchmarks.yardstick_draws import mix, rnd2, rnd3, rnd4

BOOT, SEND, ANSWER, PEER, UNIFORM = 5, 6, 7, 8, 9  # the draws' purposes
DEFAULTS = {  # the paper's settings and the lab's readings (FeverfewParams)
    "random_view": 20,
    "shuffle": 10,
    "similar_view": 40,
    "agent_view": 40,
    "bubble_start": 30,
    "delta": 1,
    "clear_similar": False,
    "pss": "cyclon",
    "bubble": True,
}
# prm, the settings as one int64 row:
R_VIEW, SHUFFLE, S_VIEW, A_VIEW, B_START, DELTA, CLEAR, UNIFORM_PSS, BUBBLE, SEED = range(10)


@nb.njit(cache=True)
def below(x, n):
    """A draw reduced mod n, as an int."""
    return np.int64(x % np.uint64(n))


@nb.njit(cache=True)
def index_of(row, size, x):
    for i in range(size):
        if row[i] == x:
            return i
    return -1


@nb.njit(cache=True)
def slot_of(n_off, n_top, v, t):
    """Where topic t is among v's subscriptions; -1: v does not subscribe to it."""
    lo, hi = n_off[v], n_off[v + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if n_top[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < n_off[v + 1] and n_top[lo] == t else -1


@nb.njit(cache=True)
def by_draw(keys, ids, ages, m):
    """Insertion sort of the first m entries by (draw, id): views hold a few tens of ids."""
    for i in range(1, m):
        j = i
        while j > 0 and (keys[j - 1] > keys[j] or (keys[j - 1] == keys[j] and ids[j - 1] > ids[j])):
            keys[j - 1], keys[j] = keys[j], keys[j - 1]
            ids[j - 1], ids[j] = ids[j], ids[j - 1]
            ages[j - 1], ages[j] = ages[j], ages[j - 1]
            j -= 1


@nb.njit(cache=True)
def merge(ids, ages, m, in_id, in_age, k_in, spare, k_spare, me, cap):
    """Cyclon's merge into a view row of m entries: entries for `me` and entries held are dropped;
    free slots fill first, then the spare entries still held are replaced in order. The new size."""
    k = 0
    for j in range(k_in):
        q = in_id[j]
        if q == me or index_of(ids, m, q) >= 0:
            continue
        if m >= cap:
            while k < k_spare and index_of(ids, m, spare[k]) < 0:
                k += 1
            if k == k_spare:
                continue
            i = index_of(ids, m, spare[k])
            m -= 1
            ids[i], ages[i] = ids[m], ages[m]
            k += 1
        ids[m], ages[m] = q, in_age[j]
        m += 1
    return m


@nb.njit(cache=True)
def start(n, prm, n_off, s_need, lv_cap):
    """The cycle 0 state: random views of distinct draws, ages 0; all else empty."""
    width = max(prm[R_VIEW], prm[SHUFFLE])
    rv_id = np.empty((n, width), np.int64)
    rv_age = np.zeros((n, width), np.int64)
    rv_n = np.zeros(n, np.int64)
    for v in range(n):
        want, m, k = min(prm[R_VIEW], n - 1), 0, 0
        while m < want:
            q = below(rnd2(prm[SEED], BOOT, v, k), n)
            k += 1
            if q != v and index_of(rv_id[v], m, q) < 0:
                rv_id[v, m] = q
                m += 1
        rv_n[v] = m
    subs = n_off[n]
    rest = np.empty(subs, np.bool_)
    for s in range(subs):
        rest[s] = s_need[s] > 0
    own = np.full((subs, 4), -1, np.int64)  # started, ttl, first match, matches
    lv_off = np.zeros(n + 1, np.int64)
    lv_off[1:] = np.cumsum(lv_cap)
    return (
        rv_id, rv_age, rv_n,
        np.empty((n, max(prm[S_VIEW], 1)), np.int64), np.zeros(n, np.int64),  # sv
        np.empty(lv_off[n], np.int64), lv_off, np.zeros(n, np.int64),  # lv
        rest, own,
        np.empty((n, max(prm[A_VIEW], 1)), np.int64), np.empty((n, max(prm[A_VIEW], 1)), np.int64),
        np.zeros(n, np.int64),  # av
        np.empty(0, np.int64),  # mb keys, sorted
        np.full(1024, -1, np.int64), np.zeros(1, np.int64),  # reported: hash set, count
        np.zeros(n + 1, np.int64), np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64),  # held
        np.zeros((n, 4), np.int64),  # sent
    )  # fmt: skip


@nb.njit(cache=True)
def seen_slot(table, key):
    """The slot of `key` in the open-addressing table, or of the empty slot where it would go."""
    mask = table.shape[0] - 1
    i = np.int64(mix(np.uint64(key)) & np.uint64(mask))
    while table[i] != -1 and table[i] != key:
        i = (i + 1) & mask
    return i


@nb.njit(cache=True)
def remember(table, count, key):
    """`key` added (absent before); the table doubles at half full."""
    if 2 * (count[0] + 1) > table.shape[0]:
        bigger = np.full(2 * table.shape[0], -1, np.int64)
        for x in table:
            if x != -1:
                bigger[seen_slot(bigger, x)] = x
        table = bigger
    table[seen_slot(table, key)] = key
    count[0] += 1
    return table


@nb.njit(cache=True)
def appended(buf, n, x):
    if n == buf.shape[0]:
        bigger = np.empty(max(16, 2 * n), np.int64)
        bigger[:n] = buf[:n]
        buf = bigger
    buf[n] = x
    return buf


@nb.njit(cache=True)
def sample(c, prm, rv_id, rv_age, rv_n, target, s_id, s_age, s_n, sent):
    """Random views at the start of cycle c: aged, each node's Cyclon target and the entries it
    sends (smallest draws, ties by id); or, uniform, `shuffle` fresh nodes, the first the target."""
    n, seed, shuffle = rv_n.shape[0], prm[SEED], prm[SHUFFLE]
    keys = np.empty(rv_id.shape[1], np.uint64)
    ids = np.empty(rv_id.shape[1], np.int64)
    ages = np.empty(rv_id.shape[1], np.int64)
    for v in range(n):
        s_n[v] = 0
        if prm[UNIFORM_PSS]:
            want, m, k = min(shuffle, n - 1), 0, 0
            while m < want:
                q = below(rnd3(seed, UNIFORM, c, v, k), n)
                k += 1
                if q != v and index_of(rv_id[v], m, q) < 0:
                    rv_id[v, m], rv_age[v, m] = q, 0
                    m += 1
            rv_n[v] = m
            target[v] = rv_id[v, 0] if m > 0 else -1
            continue
        m = rv_n[v]
        best = -1
        for i in range(m):
            rv_age[v, i] += 1
            if best < 0 or rv_age[v, i] > rv_age[v, best] or (rv_age[v, i] == rv_age[v, best] and rv_id[v, i] < rv_id[v, best]):  # fmt: skip
                best = i
        if best < 0:
            target[v] = -1
            continue
        target[v] = rv_id[v, best]
        k = 0
        for i in range(m):
            if i != best:
                keys[k], ids[k], ages[k] = rnd3(seed, SEND, c, v, rv_id[v, i]), rv_id[v, i], rv_age[v, i]
                k += 1
        by_draw(keys, ids, ages, k)
        s_n[v] = min(shuffle - 1, k)
        s_id[v, : s_n[v]] = ids[: s_n[v]]
        s_age[v, : s_n[v]] = ages[: s_n[v]]
        sent[v, 0] += 1


@nb.njit(cache=True)
def peers(c, prm, sv, sv_n, lv, lv_off, lv_n, rv_id, rv_n, peer, sent):
    """GossipSample's peer: a draw into the sorted similar view, else ln-covered view, else random view."""
    for v in range(rv_n.shape[0]):
        if sv_n[v] > 0:
            pool = np.sort(sv[v, : sv_n[v]])
        elif lv_n[v] > 0:
            pool = np.sort(lv[lv_off[v] : lv_off[v] + lv_n[v]])
        elif rv_n[v] > 0:
            pool = np.sort(rv_id[v, : rv_n[v]])
        else:
            peer[v] = -1
            continue
        peer[v] = pool[below(rnd2(prm[SEED], PEER, c, v), pool.shape[0])]
        sent[v, 1] += 1


@nb.njit(cache=True)
def diffuse(c, prm, n_off, n_top, t_ttl, rest, own, target, h_off, h_o, h_t, h_ttl, sent):
    """BubbleSample's emissions (every uncovered topic without a live diffusion, from bubble_start
    on) and every held copy's send to the Cyclon target: the copies sent (target, origin, topic,
    ttl) in sender order, and what each node still holds (a CSR)."""
    n = n_off.shape[0] - 1
    emit = np.zeros(n_off[n], np.bool_)
    if c >= prm[B_START]:
        for s in range(n_off[n]):
            if rest[s] and (own[s, 0] < 0 or c >= own[s, 0] + own[s, 1]):
                own[s, 0], own[s, 1], own[s, 2], own[s, 3] = c, t_ttl[n_top[s]], -1, 0
                emit[s] = True
    copies = 0
    st_off = np.zeros(n + 1, np.int64)
    for v in range(n):
        items, keep = 0, 0
        for i in range(h_off[v], h_off[v + 1]):
            items += 1
            keep += h_ttl[i] > 1
        for s in range(n_off[v], n_off[v + 1]):
            if emit[s]:
                items += 1
                keep += t_ttl[n_top[s]] > 1
        if target[v] >= 0:
            copies += items
        st_off[v + 1] = st_off[v] + keep
    cp_dst, cp_o, cp_t, cp_ttl = np.empty(copies, np.int64), np.empty(copies, np.int64), np.empty(copies, np.int64), np.empty(copies, np.int64)  # fmt: skip
    st_o, st_t, st_ttl = np.empty(st_off[n], np.int64), np.empty(st_off[n], np.int64), np.empty(st_off[n], np.int64)
    k = 0
    for v in range(n):
        j = st_off[v]
        tv = target[v]
        last = h_off[v + 1] - h_off[v]
        for s in range(n_off[v], n_off[v + 1]):
            last += emit[s]
        i, s = h_off[v], n_off[v]
        for _ in range(last):  # the held copies, then the new diffusions (topics ascending)
            if i < h_off[v + 1]:
                o, t, ttl = h_o[i], h_t[i], h_ttl[i]
                i += 1
            else:
                while not emit[s]:
                    s += 1
                o, t, ttl = v, n_top[s], t_ttl[n_top[s]]
                s += 1
            if tv >= 0:
                cp_dst[k], cp_o[k], cp_t[k], cp_ttl[k] = tv, o, t, ttl - 1
                k += 1
                sent[v, 2] += 1
            if ttl > 1:
                st_o[j], st_t[j], st_ttl[j] = o, t, ttl - 1
                j += 1
    return cp_dst, cp_o, cp_t, cp_ttl, st_off, st_o, st_t, st_ttl


@nb.njit(cache=True)
def agents(c, n_off, n_top, av_o, av_t, av_n, rv_id, rv_n, told, told_n, own, mb, sent):
    """Alg. 5 at every agent: for each (origin, topic) of its agent view, oldest first, and each r of
    its random view, ascending, a subscriber of the topic other than the origin in a pair never
    reported: both ends get the other into MB, the origin's latest diffusion of the topic counts it
    (not in the cycle it started). Returns the reported set and MB (sorted keys, unique)."""
    n = rv_n.shape[0]
    buf = np.empty(max(16, 2 * mb.shape[0]), np.int64)
    buf[: mb.shape[0]] = mb
    m = mb.shape[0]
    for h in range(n):
        if av_n[h] == 0 or rv_n[h] == 0:
            continue
        rs = np.sort(rv_id[h, : rv_n[h]])
        for i in range(av_n[h]):
            o, t = av_o[h, i], av_t[h, i]
            for r in rs:
                if r == o or slot_of(n_off, n_top, r, t) < 0:
                    continue
                key = (h * n + o) * n + r
                if told[seen_slot(told, key)] == key:
                    continue
                told = remember(told, told_n, key)
                buf = appended(buf, m, o * n + r)
                buf = appended(buf, m + 1, r * n + o)
                m += 2
                sent[h, 3] += 2
                s = slot_of(n_off, n_top, o, t)
                if s >= 0 and own[s, 0] >= 0 and own[s, 0] < c:
                    own[s, 3] += 1
                    if own[s, 2] == -1:
                        own[s, 2] = c
    return told, np.unique(buf[:m])


@nb.njit(cache=True)
def serve(c, prm, rv_id, rv_age, rv_n, st_id, st_age, st_n, target, s_id, s_age, s_n, a_id, a_age, a_n, sent):
    """Every Cyclon request answered from the start-of-cycle view (smallest draws) and merged, in
    requester order, at each target."""
    n, seed, shuffle, cap = rv_n.shape[0], prm[SEED], prm[SHUFFLE], prm[R_VIEW]
    count = np.zeros(n + 1, np.int64)
    for v in range(n):
        if target[v] >= 0:
            count[target[v] + 1] += 1
    off = np.cumsum(count)
    order = np.empty(off[n], np.int64)
    fill = off[:n].copy()
    for v in range(n):
        if target[v] >= 0:
            order[fill[target[v]]] = v
            fill[target[v]] += 1
    keys = np.empty(st_id.shape[1], np.uint64)
    in_id = np.empty(shuffle, np.int64)
    in_age = np.empty(shuffle, np.int64)
    for q in range(n):
        for j in range(off[q], off[q + 1]):
            r = order[j]
            m = st_n[q]
            for i in range(m):
                keys[i], a_id[r, i], a_age[r, i] = rnd4(seed, ANSWER, c, q, r, st_id[q, i]), st_id[q, i], st_age[q, i]
            by_draw(keys, a_id[r], a_age[r], m)
            a_n[r] = min(shuffle, m)
            sent[q, 0] += 1
            in_id[0], in_age[0] = r, 0
            in_id[1 : 1 + s_n[r]] = s_id[r, : s_n[r]]
            in_age[1 : 1 + s_n[r]] = s_age[r, : s_n[r]]
            rv_n[q] = merge(rv_id[q], rv_age[q], rv_n[q], in_id, in_age, 1 + s_n[r], a_id[r], a_n[r], q, cap)


@nb.njit(cache=True)
def deliver(n, av_size, av_o, av_t, av_n, cp_dst, cp_o, cp_t, cp_ttl, st_off, st_o, st_t, st_ttl):
    """Copies received, in sender order: (origin, topic) into the agent view (first in, first out;
    not one's own, not twice), held while their TTL is above 0, after what the node still held."""
    count = np.zeros(n + 1, np.int64)
    keep = np.zeros(n + 1, np.int64)
    for k in range(cp_dst.shape[0]):
        count[cp_dst[k] + 1] += 1
        keep[cp_dst[k] + 1] += cp_ttl[k] > 0
    off = np.cumsum(count)
    order = np.empty(off[n], np.int64)
    fill = off[:n].copy()
    for k in range(cp_dst.shape[0]):
        order[fill[cp_dst[k]]] = k
        fill[cp_dst[k]] += 1
    h_off = np.zeros(n + 1, np.int64)
    for h in range(n):
        h_off[h + 1] = h_off[h] + (st_off[h + 1] - st_off[h]) + keep[h + 1]
    h_o, h_t, h_ttl = np.empty(h_off[n], np.int64), np.empty(h_off[n], np.int64), np.empty(h_off[n], np.int64)
    for h in range(n):
        j = h_off[h]
        for i in range(st_off[h], st_off[h + 1]):
            h_o[j], h_t[j], h_ttl[j] = st_o[i], st_t[i], st_ttl[i]
            j += 1
        for x in range(off[h], off[h + 1]):
            k = order[x]
            o, t = cp_o[k], cp_t[k]
            if o != h:
                here = False
                for i in range(av_n[h]):
                    if av_o[h, i] == o and av_t[h, i] == t:
                        here = True
                        break
                if not here:
                    if av_n[h] == av_size:
                        for i in range(1, av_size):
                            av_o[h, i - 1], av_t[h, i - 1] = av_o[h, i], av_t[h, i]
                        av_n[h] -= 1
                    av_o[h, av_n[h]], av_t[h, av_n[h]] = o, t
                    av_n[h] += 1
            if cp_ttl[k] > 0:
                h_o[j], h_t[j], h_ttl[j] = o, t, cp_ttl[k]
                j += 1
    return h_off, h_o, h_t, h_ttl


@nb.njit(cache=True)
def overlap(n_off, n_top, q, lo, hi, tmark, tpos, v, flag, out, j):
    """The topics v (slots lo..hi, marked in tmark) shares with q: how many, how many of them
    `flag`ged; with `out`, their local slots written from j on. Walks q's topics, or looks v's up
    among q's when q has many more."""
    shared, flagged = 0, 0
    dq = n_off[q + 1] - n_off[q]
    if dq > 8 * (hi - lo):
        for s in range(lo, hi):
            if slot_of(n_off, n_top, q, n_top[s]) >= 0:
                shared += 1
                if flag[s]:
                    flagged += 1
                    if out.shape[0] > 0:
                        out[j] = s - lo
                        j += 1
        return shared, flagged, j
    for y in range(n_off[q], n_off[q + 1]):
        t = n_top[y]
        if tmark[t] == v:
            shared += 1
            if flag[tpos[t]]:
                flagged += 1
                if out.shape[0] > 0:
                    out[j] = tpos[t] - lo
                    j += 1
    return shared, flagged, j


@nb.njit(cache=True)
def better(a2, b2, a1, b1, q, c2, d2, c1, d1, r):
    """(a2/b2, a1/b1, q) ranks before (c2/d2, c1/d1, r): u2 desc, u1 desc, id asc, exactly."""
    if a2 * d2 != c2 * b2:
        return a2 * d2 > c2 * b2
    if a1 * d1 != c1 * b1:
        return a1 * d1 > c1 * b1
    return q < r


@nb.njit(cache=True)
def finish(c, prm, n_off, n_top, s_need, rest, sv, sv_n, sv0, sv0_n, st_id, st_n, peer, lv, lv_off, lv_n, mb, rv_id, rv_age, rv_n, target, s_id, s_n, a_id, a_age, a_n):  # fmt: skip
    """Per node: the answer to its Cyclon request merged; SV ranked over its pooled buffers (its own,
    its peer's, its requesters'); every delta cycles Alg. 3 over SV | LV | MB."""
    n = rv_n.shape[0]
    n_topics = 0
    for s in range(n_top.shape[0]):
        n_topics = max(n_topics, n_top[s] + 1)
    tmark = np.full(n_topics, -1, np.int64)
    tpos = np.zeros(n_topics, np.int64)
    seen = np.full(n, -1, np.int64)
    stamp = 0
    count = np.zeros(n + 1, np.int64)
    for u in range(n):
        if peer[u] >= 0:
            count[peer[u] + 1] += 1
    g_off = np.cumsum(count)
    g_src = np.empty(g_off[n], np.int64)
    fill = g_off[:n].copy()
    for u in range(n):
        if peer[u] >= 0:
            g_src[fill[peer[u]]] = u
            fill[peer[u]] += 1
    width = max(prm[S_VIEW], 1)
    top_q, top_a2, top_b2 = np.empty(width, np.int64), np.empty(width, np.int64), np.empty(width, np.int64)
    top_a1, top_b1 = np.empty(width, np.int64), np.empty(width, np.int64)
    cand = np.empty(n, np.int64)
    srcs = np.empty(n + 2, np.int64)
    nothing = np.empty(0, np.int64)
    needy = s_need > 0
    widest = 1
    for u in range(n):
        widest = max(widest, n_off[u + 1] - n_off[u])
    ci, slot_cand = np.empty(16 * widest, np.int64), np.empty(16 * widest, np.int64)  # grown as needed
    ci_off, gain, alive = np.empty(n + 1, np.int64), np.empty(n, np.int64), np.empty(n, np.bool_)
    by_slot, at = np.empty(widest + 1, np.int64), np.empty(widest, np.int64)
    cov, left = np.empty(widest, np.int64), np.empty(widest, np.bool_)
    rebuild = c % prm[DELTA] == 0
    for v in range(n):
        if not prm[UNIFORM_PSS] and target[v] >= 0:
            i = index_of(rv_id[v], rv_n[v], target[v])
            if i >= 0:
                rv_n[v] -= 1
                rv_id[v, i], rv_age[v, i] = rv_id[v, rv_n[v]], rv_age[v, rv_n[v]]
            rv_n[v] = merge(rv_id[v], rv_age[v], rv_n[v], a_id[v], a_age[v], a_n[v], s_id[v], s_n[v], v, prm[R_VIEW])
        lo, hi = n_off[v], n_off[v + 1]
        dv = hi - lo
        nrest = 0
        for s in range(lo, hi):
            tmark[n_top[s]], tpos[n_top[s]] = v, s
            nrest += rest[s]
        # GossipSample: the pooled buffers (its own, its peer's, its requesters') ranked by
        # (u2 desc, u1 desc, id asc), u2 > 0; the ranking is total, so the pooling order is free.
        stamp += 1
        seen[v] = stamp
        srcs[0], ns = v, 1
        if peer[v] >= 0:
            srcs[1], ns = peer[v], 2
        for j in range(g_off[v], g_off[v + 1]):
            srcs[ns] = g_src[j]
            ns += 1
        kept = 0
        for w in range(ns if nrest > 0 else 0):
            x = srcs[w]
            for i in range(st_n[x] + sv0_n[x]):
                q = st_id[x, i] if i < st_n[x] else sv0[x, i - st_n[x]]
                if seen[q] == stamp:
                    continue
                seen[q] = stamp
                a1, a2, _ = overlap(n_off, n_top, q, lo, hi, tmark, tpos, v, rest, nothing, 0)
                if a2 == 0:
                    continue
                b2, b1 = nrest + n_off[q + 1] - n_off[q] - a2, dv + n_off[q + 1] - n_off[q] - a1
                if kept == prm[S_VIEW]:
                    z = kept - 1
                    if not better(a2, b2, a1, b1, q, top_a2[z], top_b2[z], top_a1[z], top_b1[z], top_q[z]):
                        continue
                else:
                    kept += 1
                z = kept - 1
                while z > 0 and better(a2, b2, a1, b1, q, top_a2[z - 1], top_b2[z - 1], top_a1[z - 1], top_b1[z - 1], top_q[z - 1]):  # fmt: skip
                    top_q[z], top_a2[z], top_b2[z] = top_q[z - 1], top_a2[z - 1], top_b2[z - 1]
                    top_a1[z], top_b1[z] = top_a1[z - 1], top_b1[z - 1]
                    z -= 1
                top_q[z], top_a2[z], top_b2[z], top_a1[z], top_b1[z] = q, a2, b2, a1, b1
        sv_n[v] = kept
        sv[v, :kept] = top_q[:kept]
        if not rebuild:
            continue
        # Alg. 3 over SV | LV | MB: the candidates sharing a topic still needed.
        stamp += 1
        seen[v] = stamp
        m, total = 0, 0
        mb_lo = np.searchsorted(mb, v * n)
        mb_hi = np.searchsorted(mb, (v + 1) * n)
        for i in range(kept + lv_n[v] + mb_hi - mb_lo):
            if i < kept:
                q = sv[v, i]
            elif i < kept + lv_n[v]:
                q = lv[lv_off[v] + i - kept]
            else:
                q = mb[mb_lo + i - kept - lv_n[v]] - v * n
            if seen[q] == stamp:
                continue
            seen[q] = stamp
            if total + dv > ci.shape[0]:
                bigger = np.empty(2 * (total + dv), np.int64)
                bigger[:total] = ci[:total]
                ci, slot_cand = bigger, np.empty(bigger.shape[0], np.int64)
            _, shared, end = overlap(n_off, n_top, q, lo, hi, tmark, tpos, v, needy, ci, total)
            if shared > 0:  # a candidate sharing no topic still needed is never taken
                cand[m], gain[m], alive[m] = q, shared, True
                ci_off[m], total = total, end
                m += 1
        ci_off[m] = total
        by_slot[: dv + 1] = 0  # each local slot's candidates, a CSR
        for j in range(total):
            by_slot[ci[j] + 1] += 1
        for j in range(dv):
            by_slot[j + 1] += by_slot[j]
            at[j] = by_slot[j]
        for i in range(m):
            for j in range(ci_off[i], ci_off[i + 1]):
                slot_cand[at[ci[j]]] = i
                at[ci[j]] += 1
        nrest = 0
        for j in range(dv):
            cov[j] = 0
            left[j] = needy[lo + j]
            nrest += left[j]
        k, base = 0, lv_off[v]
        while nrest > 0:
            best = -1
            for i in range(m):
                if not alive[i]:
                    continue
                if best < 0:
                    best = i
                    continue
                qi, qb = cand[i], cand[best]
                x = gain[i] * (nrest + n_off[qb + 1] - n_off[qb] - gain[best])
                y = gain[best] * (nrest + n_off[qi + 1] - n_off[qi] - gain[i])
                if x > y or (x == y and (gain[i] > gain[best] or (gain[i] == gain[best] and qi < qb))):
                    best = i
            if best < 0 or gain[best] == 0:
                break
            alive[best] = False
            lv[base + k] = cand[best]
            k += 1
            for j in ci[ci_off[best] : ci_off[best + 1]]:
                cov[j] += 1
                if left[j] and cov[j] >= s_need[lo + j]:
                    left[j] = False
                    nrest -= 1
                    for i in slot_cand[by_slot[j] : by_slot[j + 1]]:
                        gain[i] -= 1
        lv_n[v] = k
        rest[lo:hi] = left[:dv]
        if prm[CLEAR]:
            sv_n[v] = 0


@nb.njit(cache=True)
def cycle(c, prm, n_off, n_top, s_need, t_ttl, state):
    """Cycle c over the whole network: the state after it (a tuple as `start` makes)."""
    (rv_id, rv_age, rv_n, sv, sv_n, lv, lv_off, lv_n, rest, own, av_o, av_t, av_n, mb, told, told_n,
     h_off, h_o, h_t, h_ttl, sent) = state  # fmt: skip
    n = rv_n.shape[0]
    sent[:] = 0
    target = np.empty(n, np.int64)
    peer = np.empty(n, np.int64)
    width = max(prm[SHUFFLE] - 1, 1)
    s_id, s_age = np.empty((n, width), np.int64), np.empty((n, width), np.int64)
    s_n = np.zeros(n, np.int64)
    sample(c, prm, rv_id, rv_age, rv_n, target, s_id, s_age, s_n, sent)
    st_id, st_age, st_n = rv_id.copy(), rv_age.copy(), rv_n.copy()
    sv0, sv0_n = sv.copy(), sv_n.copy()
    peers(c, prm, sv, sv_n, lv, lv_off, lv_n, rv_id, rv_n, peer, sent)
    cp_dst = cp_o = cp_t = cp_ttl = st_off = st_o = st_t = st_ttl = np.empty(0, np.int64)
    if prm[BUBBLE]:
        cp_dst, cp_o, cp_t, cp_ttl, st_off, st_o, st_t, st_ttl = diffuse(
            c, prm, n_off, n_top, t_ttl, rest, own, target, h_off, h_o, h_t, h_ttl, sent
        )
        told, mb = agents(c, n_off, n_top, av_o, av_t, av_n, rv_id, rv_n, told, told_n, own, mb, sent)
    a_id, a_age = np.empty(rv_id.shape, np.int64), np.empty(rv_id.shape, np.int64)
    a_n = np.zeros(n, np.int64)
    if not prm[UNIFORM_PSS]:
        serve(c, prm, rv_id, rv_age, rv_n, st_id, st_age, st_n, target, s_id, s_age, s_n, a_id, a_age, a_n, sent)
    for v in range(n):
        if peer[v] >= 0:
            sent[peer[v], 1] += 1
    if prm[BUBBLE]:
        h_off, h_o, h_t, h_ttl = deliver(
            n, prm[A_VIEW], av_o, av_t, av_n, cp_dst, cp_o, cp_t, cp_ttl, st_off, st_o, st_t, st_ttl
        )
    finish(c, prm, n_off, n_top, s_need, rest, sv, sv_n, sv0, sv0_n, st_id, st_n, peer, lv, lv_off, lv_n, mb,
           rv_id, rv_age, rv_n, target, s_id, s_n, a_id, a_age, a_n)  # fmt: skip
    if c % prm[DELTA] == 0:
        mb = np.empty(0, np.int64)
    return (rv_id, rv_age, rv_n, sv, sv_n, lv, lv_off, lv_n, rest, own, av_o, av_t, av_n, mb, told, told_n,
            h_off, h_o, h_t, h_ttl, sent)  # fmt: skip


def ttl0(network: int, size: int, c: int) -> int:
    """Thm 2's first matching time (docs/readings/feverfew.md#theory), m = n_t - 1, with the
    paper's fallback; at least 1."""
    value = None
    m = size - 1
    if m >= 1:
        inner = 1 - math.log(network) / (network * (1 - math.exp(-c * m / network)))
        if inner > 0:
            big = -(network / c) * math.log(inner)
            if big < network:
                value = math.log2(-network * math.log(1 - big / network))
    if value is None:
        value = math.log2(network * math.log(network))
    return max(1, math.ceil(value))


def prepare(pairs, nodes: int, params: dict, seed: int):
    """The inputs as `cycle` takes them: settings row, CSR by node (dense topics ascending), need
    and TTL0 per subscription and per topic, and the ids of the dense topics."""
    p = {**DEFAULTS, **(params or {})}
    pairs = np.unique(np.asarray(pairs, np.int64).reshape(-1, 2), axis=0)  # by (node, topic)
    topic_ids, dense = np.unique(pairs[:, 1], return_inverse=True)
    dense = dense.reshape(-1).astype(np.int64)
    n_off = np.searchsorted(pairs[:, 0], np.arange(nodes + 1)).astype(np.int64)
    sizes = np.bincount(dense, minlength=len(topic_ids))
    t_need = np.array([math.ceil(math.log(k)) if k > 1 else 0 for k in sizes.tolist()], np.int64)
    by_size = {k: ttl0(nodes, k, p["shuffle"]) for k in set(sizes.tolist()) if k > 1}
    t_ttl = np.array([by_size.get(k, 0) for k in sizes.tolist()], np.int64)
    s_need = t_need[dense]
    total = np.concatenate([[0], np.cumsum(s_need)])
    lv_cap = np.minimum(total[n_off[1:]] - total[n_off[:-1]], max(nodes - 1, 0))
    prm = np.array(
        [p["random_view"], p["shuffle"], p["similar_view"], p["agent_view"], p["bubble_start"], p["delta"],
         int(p["clear_similar"]), int(p["pss"] == "uniform"), int(p["bubble"]), seed],
        np.int64,
    )  # fmt: skip
    return prm, n_off, dense, s_need, t_ttl, lv_cap.astype(np.int64), topic_ids


class Yardstick:
    """One simulation: made in its cycle 0 state; `cycle(c)` runs cycle c, `rows()` gives the states."""

    def __init__(self, pairs, nodes: int, params: dict | None = None, seed: int = 1) -> None:
        self.nodes = nodes
        self.prm, self.n_off, self.n_top, self.s_need, self.t_ttl, lv_cap, self.topic_ids = prepare(
            pairs, nodes, params, seed
        )
        self.state = start(nodes, self.prm, self.n_off, self.s_need, lv_cap)

    def cycle(self, c: int) -> None:
        self.state = cycle(c, self.prm, self.n_off, self.n_top, self.s_need, self.t_ttl, self.state)

    def rows(self) -> dict[int, dict]:
        """node -> its state as the oracle's `state(v)` has it, with `covered` and `sent`."""
        (rv_id, rv_age, rv_n, sv, sv_n, lv, lv_off, lv_n, rest, own, av_o, av_t, av_n, mb, told, _,
         h_off, h_o, h_t, h_ttl, sent) = self.state  # fmt: skip
        n, topic = self.nodes, self.topic_ids
        keys = np.sort(told[told >= 0])
        told_h, told_rest = keys // (n * n), keys % (n * n)
        rows = {}
        for v in range(n):
            order = np.argsort(rv_id[v, : rv_n[v]])
            lo, hi = self.n_off[v], self.n_off[v + 1]
            mine = np.arange(lo, hi)
            own_slots = mine[own[lo:hi, 0] >= 0]
            told_v = told_rest[np.searchsorted(told_h, v) : np.searchsorted(told_h, v + 1)]
            mb_v = mb[np.searchsorted(mb, v * n) : np.searchsorted(mb, (v + 1) * n)] - v * n
            held = slice(h_off[v], h_off[v + 1])
            rows[v] = {
                "node_id": v,
                "rv": rv_id[v, : rv_n[v]][order].tolist(),
                "rv_age": rv_age[v, : rv_n[v]][order].tolist(),
                "sv": sv[v, : sv_n[v]].tolist(),
                "lv": lv[lv_off[v] : lv_off[v] + lv_n[v]].tolist(),
                "mb": mb_v.tolist(),
                "av_origin": av_o[v, : av_n[v]].tolist(),
                "av_topic": topic[av_t[v, : av_n[v]]].tolist(),
                "reported_origin": (told_v // n).tolist(),
                "reported_other": (told_v % n).tolist(),
                "held_origin": h_o[held].tolist(),
                "held_topic": topic[h_t[held]].tolist(),
                "held_ttl": h_ttl[held].tolist(),
                "own_topic": topic[self.n_top[own_slots]].tolist(),
                "own_started": own[own_slots, 0].tolist(),
                "own_ttl": own[own_slots, 1].tolist(),
                "own_first_match": own[own_slots, 2].tolist(),
                "own_matches": own[own_slots, 3].tolist(),
                "covered": topic[self.n_top[mine[(self.s_need[lo:hi] > 0) & ~rest[lo:hi]]]].tolist(),
                "sent": sent[v].tolist(),
            }
        return rows

    def measures(self) -> dict:
        """A few end-state measures: covered share, mean |LV|, undirected links, copies held,
        pairs reported, diffusions started and matched."""
        (_, _, _, _, _, lv, lv_off, lv_n, rest, own, _, _, _, _, _, told_n, h_off, _, _, _, sent) = self.state
        needy = self.s_need > 0
        src = np.repeat(np.arange(self.nodes), lv_n)
        dst = np.concatenate([lv[lv_off[v] : lv_off[v] + lv_n[v]] for v in range(self.nodes)] + [np.empty(0, np.int64)])  # fmt: skip
        links = np.unique(np.minimum(src, dst) * self.nodes + np.maximum(src, dst)).shape[0]
        return {
            "covered_share": round(float((needy & ~rest).sum() / max(needy.sum(), 1)), 4),
            "lv_mean": round(float(lv_n.mean()), 3),
            "links": int(links),
            "copies_held": int(h_off[-1]),
            "copies_sent_last": int(sent[:, 2].sum()),
            "pairs_reported": int(told_n[0]),
            "diffusions": int((own[:, 0] >= 0).sum()),
            "matched": int((own[:, 2] >= 0).sum()),
        }


def simulate(pairs, nodes: int, params: dict | None = None, seed: int = 1, cycles: int = 40, every: bool = False):
    """Every node's state after `cycles` cycles (`Yardstick.rows`), or with `every` the list of
    them for cycles 0..cycles. `pairs`: (node, topic); `params`: names as in DEFAULTS."""
    run = Yardstick(pairs, nodes, params, seed)
    states = [run.rows()] if every else []
    for c in range(1, cycles + 1):
        run.cycle(c)
        if every:
            states.append(run.rows())
    return states if every else run.rows()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", required=True)
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    for name in ("random_view", "shuffle", "similar_view", "agent_view", "bubble_start", "delta"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=DEFAULTS[name])
    parser.add_argument("--clear-similar", action="store_true")
    parser.add_argument("--pss", choices=("cyclon", "uniform"), default=DEFAULTS["pss"])
    parser.add_argument("--no-bubble", action="store_true")
    args = parser.parse_args()
    params = {name: getattr(args, name) for name in DEFAULTS if name != "bubble"}
    params["bubble"] = not args.no_bubble
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from benchmarks.design_greedy import current_subscriptions  # the inputs, through the lab

    clock = time.monotonic()
    subs = np.asarray(current_subscriptions(args.lakehouse, args.instance), np.int64)
    nodes = int(subs[:, 0].max()) + 1
    read = time.monotonic() - clock
    tiny = subs[subs[:, 0] < 40]
    simulate(tiny, 40, {**params, "bubble_start": 1}, args.seed, 3)  # compiled (or loaded)
    run = Yardstick(subs, nodes, params, args.seed)
    seconds = []
    for c in range(1, args.cycles + 1):
        clock = time.monotonic()
        run.cycle(c)
        seconds.append(time.monotonic() - clock)
    total = sum(seconds)
    print(json.dumps({
        "instance": args.instance, "nodes": nodes, "subscriptions": len(subs), "cycles": args.cycles,
        "read_s": round(read, 2), "simulate_s": round(total, 3), "s_per_cycle": round(total / args.cycles, 4),
        "first_cycle_s": round(seconds[0], 4), "last_cycle_s": round(seconds[-1], 4),
        "end": run.measures(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
