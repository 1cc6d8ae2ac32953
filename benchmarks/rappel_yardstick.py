"""A compiled yardstick for Rappel's rounds: the lab's reading (docs/readings/rappel.md) written once
more, in numba, one thread, independent of `overlay/`, `routing/` and `pipelines/` (the simulation
imports none of them; only `main` reads its inputs through the lab).

A round is what `simulate rappel` runs per 30 s (`overlay/rappel/simulation.py`): the friendship
round (votes heard from the previous round's join walks, pings with F, Alg. 1's audits with Fig. 3's
set utility, requests taken first come, first served up to 2 alpha fans, acks and answers), then every
feed's tree round on the friends it left (presence, six ticks of orphans, staggered join plans,
periodic rejoins, publications pushed down the tree, Alg. 2's walks with evictions, pulls), the
nodes met on the walks going back as votes, and the round's measures (friend coverage,
deliveries and their latency).

Structure, like the tests' oracles (`tests/rappel_oracle.py`, `tests/rappel_trees_oracle.py`) and
unlike the lab's per-node and per-feed rows: the whole network at once, in arrays. Subscription
filters are rows of uint64 words (1024 bits, or one bit per feed in `exact` mode), and each node's
set bits a list, over which an audit counts what Fig. 3 needs for all its candidate sets at once; a
node's candidate book is a row of (id, votes, audited, heard) with room for one message's ids,
worked on in place with an id -> position index while the node hears (the nodes it met, of any
number, through a scratch row); every feed's members are slots of one CSR (members in id order),
each slot one row of integer state (`ON` .. `ROFF`), its children a sorted row of slots and its
cached updates a ring of 10. Every choice the oracles make is made the same way, float for float:
the same sums in the same order, distances as CPython's `math.hypot` (its 3.11 algorithm, checked
bit for bit by the tests), the lab's splitmix draws (`mix`, `rnd1` .. `rnd3`).

Usage (prints the seconds, a few end-state measures and the peak RSS as JSON):
  .venv/bin/python benchmarks/rappel_yardstick.py --lakehouse LAKEHOUSE --instance tw-10k \
      [--rounds 120] [--seed 1] [--friends 6] [--children 5] [--delta 0.01] \
      [--feed-summary bloom|exact] [--utility interest-distance|interest] [--model-seed 1] \
      [--churn ON/OFF] [--proper-leaves SHARE]
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
from numba import types
from numba.typed import List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script too
from benchmarks.yardstick_draws import rnd1, rnd2, rnd3

small = nb.njit(cache=True, inline="always")  # a helper inlined into its callers (numba IR)

BLOOM_HASH, FCFS, ORDER, PHASE, REJOIN, UPDATE = 15, 17, 19, 20, 21, 22
BLOOM_BITS, BLOOM_HASHES = 1024, 3
TICKS, TICK_MS, STEP, PERIOD, PUBLISH_EVERY, CACHE, LAST_PUBLISHER_STEP, TIMEOUT = 6, 5000, 4, 120, 12, 10, 12, 3
DATA, JOIN, JOINS_IN, REJOINS_IN, PINGS = 0, 1, 2, 3, 4  # a member's traffic, per feed and round
ON, PAR, SINCE, PLAN, DIRECT, REJ, SKIP, DET, AOFF, ALEN, NK, PSTEP, PPHASE, ROFF = range(14)  # member columns
LO, HI, PUB, UPH, NPUB = range(5)  # feed columns: slots lo..hi, publisher slot, update phase, updates so far
OK, FORWARD = 0, 1
T27, DBL_MIN, SPAN = 134217729.0, 2.2250738585072014e-308, 18446744073709551616.0
PATHS = (  # the branches taken, counted (the tests check that each was reached)
    "evicted", "bulk_evicted", "refused", "swapped", "lost", "fan_dropped", "pick_tie", "utility_tie",  # friendship
    "forward_up", "forward_down", "change_parent", "false_positive", "unattached", "self_walk", "dead_end",
    "offline_entry", "orphan", "fallback", "periodic_rejoin", "deep_rejoin", "skipped_rejoin", "fail", "leave",
    "leave_failed", "pull",
)  # fmt: skip
(EVICTED, BULK_EVICTED, REFUSED, SWAPPED, LOST, FAN_DROPPED, PICK_TIE, UTILITY_TIE, FORWARD_UP, FORWARD_DOWN,
 CHANGE_PARENT, FALSE_POSITIVE, UNATTACHED, SELF_WALK, DEAD_END, OFFLINE_ENTRY, ORPHAN, FALLBACK,
 PERIODIC_REJOIN, DEEP_REJOIN, SKIPPED_REJOIN, FAIL, LEAVE, LEAVE_FAILED, PULL) = range(len(PATHS))  # fmt: skip
TALLY = ("deliveries", "latency_ms_sum", "tree_joins", "tree_pings", "data", "friend_messages")


# -- draws and distances ----------------------------------------------------------------------------


@small
def popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@small
def _norm(a, b, scale):
    """CPython 3.11's vector_norm of (a, b) (Modules/mathmodule.c), scaled by `scale`."""
    csum, frac1, frac2, frac3 = 1.0, 0.0, 0.0, 0.0
    for x in (a * scale, b * scale):
        t = x * T27
        hi = t - (t - x)
        lo = x - hi
        s = hi * hi
        old = csum
        csum += s
        frac1 += (old - csum) + s
        s = 2.0 * hi * lo
        old = csum
        csum += s
        frac2 += (old - csum) + s
        frac3 += lo * lo
    h = math.sqrt(csum - 1.0 + (frac1 + frac2 + frac3))
    t = h * T27
    hi = t - (t - h)
    lo = h - hi
    s = -hi * hi
    old = csum
    csum += s
    frac1 += (old - csum) + s
    s = -2.0 * hi * lo
    old = csum
    csum += s
    frac2 += (old - csum) + s
    s = -lo * lo
    old = csum
    csum += s
    frac3 += (old - csum) + s
    s = csum - 1.0 + (frac1 + frac2 + frac3)
    return (h + s / (2.0 * h)) / scale


@nb.njit(cache=True)
def norm(dx, dy):
    """math.hypot(dx, dy), bit for bit (finite inputs)."""
    a, b = abs(dx), abs(dy)
    top = a if a >= b else b
    if top == 0.0:
        return 0.0
    e = math.frexp(top)[1]
    if e >= -1023:
        return _norm(a, b, math.ldexp(1.0, -e))
    a, b = a / DBL_MIN, b / DBL_MIN  # subnormals
    return DBL_MIN * _norm(a, b, math.ldexp(1.0, -math.frexp(top / DBL_MIN)[1]))


@small
def lat(x, y, a, b):
    """The latency of nodes a and b in ms (their coordinates' distance)."""
    return norm(x[a] - x[b], y[a] - y[b])


# -- the friendship round ---------------------------------------------------------------------------
@small
def find(row, size, q):
    for k in range(size):
        if row[k] == q:
            return k
    return -1


@small
def open_book(book, nbook, v, sc, mark, where, stamp):
    """v's candidates into the scratch sc [4, width] (ids, votes, audited, heard), indexed."""
    m = nbook[v]
    for k in range(m):
        q = book[v, 0, k]
        sc[0, k], sc[1, k], sc[2, k], sc[3, k] = q, book[v, 1, k], book[v, 2, k], book[v, 3, k]
        mark[q], where[q] = stamp, k
    return m


@small
def index_book(bk, m, mark, where, stamp):
    """Indexes a book worked on in place (its row has room for one hearing of at most alpha + 1 ids)."""
    for k in range(m):
        mark[bk[0, k]] = stamp
        where[bk[0, k]] = k


@small
def close_book(book, nbook, v, sc, m):
    for k in range(m):
        book[v, 0, k], book[v, 1, k], book[v, 2, k], book[v, 3, k] = sc[0, k], sc[1, k], sc[2, k], sc[3, k]
    nbook[v] = m


@small
def add(v, q, r, m, fr, nf, sc, mark, where, stamp):
    """v hears of q in round r (not itself, nor a friend): a vote, refreshed (sc: v's book)."""
    if q == v or find(fr[v], nf[v], q) >= 0:
        return m
    if mark[q] == stamp:
        k = where[q]
        sc[1, k] += 1
        sc[3, k] = r
        return m
    sc[0, m], sc[1, m], sc[2, m], sc[3, m] = q, 1, 0, r
    mark[q], where[q] = stamp, m
    return m + 1


@nb.njit(cache=True)
def trim(m, cap, sc, mark, where, stamp, paths):
    """After one hearing: the least recently heard of leave (ties: the smaller id) down to cap."""
    excess = m - cap
    if excess <= 0:
        return m
    paths[EVICTED] += excess
    n = mark.shape[0]
    if excess <= 8:
        for _ in range(excess):
            b = 0
            for k in range(1, m):
                if sc[3, k] < sc[3, b] or (sc[3, k] == sc[3, b] and sc[0, k] < sc[0, b]):
                    b = k
            mark[sc[0, b]] = -1
            m -= 1
            if b != m:
                sc[0, b], sc[1, b], sc[2, b], sc[3, b] = sc[0, m], sc[1, m], sc[2, m], sc[3, m]
                where[sc[0, b]] = b
        return m
    paths[BULK_EVICTED] += 1
    keys = np.empty(m, np.int64)
    for k in range(m):
        keys[k] = sc[3, k] * n + sc[0, k]
    keys.sort()
    for a in range(excess):
        mark[keys[a] % n] = -1
    kept = 0
    for k in range(m):
        q = sc[0, k]
        if mark[q] == stamp:
            sc[0, kept], sc[1, kept], sc[2, kept], sc[3, kept] = q, sc[1, k], sc[2, k], sc[3, k]
            where[q] = kept
            kept += 1
    return kept


@nb.njit(cache=True)
def pick(book, nbook, v, paths):
    """The next audit: the open candidate of most votes, then most recently heard of, then smaller id."""
    bk = book[v]
    b, tie = -1, False
    for k in range(nbook[v]):
        if bk[2, k]:
            continue
        if b < 0:
            b = k
            continue
        same = bk[1, k] == bk[1, b] and bk[3, k] == bk[3, b]
        if bk[1, k] > bk[1, b] or (bk[1, k] == bk[1, b] and bk[3, k] > bk[3, b]):
            b, tie = k, False
        elif same:
            tie = True
            if bk[0, k] < bk[0, b]:
                b = k
    if b < 0:
        return -1
    paths[PICK_TIE] += tie
    bk[2, b] = 1
    return bk[0, b]


@small
def group_value(jac, dist, alone, e, order, size, mine):
    """Fig. 3's U(v, G), G the members `order[:size]` (in that order, the oracle's), with member e
    left out: sum over j in G of (J(v, j) + |bits only j covers in G| / |B_v|) / d(v, j)."""
    total = 0.0
    for a in range(size):
        j = order[a]
        total += (jac[j] + alone[e, j] / mine) / dist[j]
    return total


@nb.njit(cache=True)
def audit(env, v, c, fr, nf, delta, interest_only, paths):
    """Alg. 1 with F full: the friend c replaces (ties: the smaller id), or -1 if no swap raises
    U(v, F) by more than delta. Members 0 .. |F| - 1 are the friends (ascending), |F| is c; each
    of v's set bits gets the mask of members covering it, from which every count follows."""
    x, y, bits, pc, b_start, b_pos = env[0], env[1], env[2], env[3], env[7], env[8]
    size = nf[v]
    m = size + 1
    group = np.empty(m, np.int64)
    group[:size] = fr[v, :size]
    group[size] = c
    mine = pc[v]
    inter = np.zeros(m, np.int64)
    alone = np.zeros((m, m), np.int64)  # alone[e, j]: bits of v only j covers once e is left out
    for t in range(b_start[v], b_start[v + 1]):
        b = b_pos[t]
        word, shift = b >> 6, np.uint64(b & 63)
        first, second, held = -1, -1, 0
        for a in range(m):
            if (bits[group[a], word] >> shift) & np.uint64(1):
                inter[a] += 1
                held += 1
                if first < 0:
                    first = a
                else:
                    second = a
        if held == 1:
            for e in range(m):
                if e != first:
                    alone[e, first] += 1
        elif held == 2:
            alone[second, first] += 1
            alone[first, second] += 1
    jac = np.empty(m, np.float64)
    dist = np.empty(m, np.float64)
    for a in range(m):
        j = group[a]
        jac[a] = inter[a] / (mine + pc[j] - inter[a]) if mine else 0.0
        dist[a] = 1.0 if interest_only else max(lat(x, y, v, j) / 1000.0, 1e-4)
    order = np.arange(m)
    base = group_value(jac, dist, alone, size, order, size, mine) if mine else 0.0
    top, victim = -np.inf, -1
    for a in range(size):
        t = 0
        for b in range(size):  # the friends but a, then c
            if b != a:
                order[t] = b
                t += 1
        order[t] = size
        score = group_value(jac, dist, alone, a, order, size, mine) if mine else 0.0
        if score > top:
            top, victim = score, fr[v, a]
        elif score == top:
            paths[UTILITY_TIE] += 1
    return victim if top > (1.0 + delta) * base else -1


@small
def welcome(fans, fan_seen, nfan, j, i, r, limit):
    """i pings j, or asks it: kept (or taken) as a fan when known or j has room."""
    k = find(fans[j], nfan[j], i)
    if k >= 0:
        fan_seen[j, k] = r
        return True
    if nfan[j] < limit:
        fans[j, nfan[j]], fan_seen[j, nfan[j]] = i, r
        nfan[j] += 1
        return True
    return False


@small
def by_draw(draws, ids, lo, hi):
    """Insertion sort of ids[lo:hi] by (draw, id)."""
    for a in range(lo + 1, hi):
        d, q = draws[a], ids[a]
        b = a
        while b > lo and (draws[b - 1] > d or (draws[b - 1] == d and ids[b - 1] > q)):
            draws[b], ids[b] = draws[b - 1], ids[b - 1]
            b -= 1
        draws[b], ids[b] = d, q


@nb.njit(cache=True)
def buckets(n, up, rows, sizes):
    """Messages by receiver: rows[v, :sizes[v]] are v's receivers; each bucket's senders ascend."""
    start = np.zeros(n + 1, np.int64)
    for v in range(n):
        if up[v]:
            for k in range(sizes[v]):
                start[rows[v, k] + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    senders = np.empty(start[n], np.int64)
    for v in range(n):
        if up[v]:
            for k in range(sizes[v]):
                q = rows[v, k]
                senders[fill[q]] = v
                fill[q] += 1
    return start, senders


@nb.njit(cache=True)
def friendship(r, up, prm, delta, fs, env, scratch, met_start, met_ids, paths):
    """Friendship round r over every node up (act, serve, finish)."""
    fr, nf, fans, fan_seen, nfan, book, nbook, sent = fs[:8]
    sc, mark, where, stamps = scratch[0], scratch[1], scratch[2], scratch[3]
    seed, alpha, interest_only = prm[0], prm[1], prm[3] != 0
    n, cap = fr.shape[0], 3 * alpha * alpha + 2 * alpha
    stamp = stamps[0]
    sent[:] = 0
    asked = np.empty((n, alpha), np.int64)
    victims = np.empty((n, alpha), np.int64)
    nask = np.zeros(n, np.int64)
    for v in range(n):  # act
        if not up[v]:
            continue
        if met_start[v + 1] > met_start[v]:
            stamp += 1
            m = open_book(book, nbook, v, sc, mark, where, stamp)
            for t in range(met_start[v], met_start[v + 1]):
                m = add(v, met_ids[t], r, m, fr, nf, sc, mark, where, stamp)
            close_book(book, nbook, v, sc, trim(m, cap, sc, mark, where, stamp, paths))
        sent[v, 0] = nf[v]
        room = alpha - nf[v]
        if room > 0:
            for _ in range(room):
                c = pick(book, nbook, v, paths)
                if c < 0:
                    break
                asked[v, nask[v]], victims[v, nask[v]] = c, -1
                nask[v] += 1
        else:
            c = pick(book, nbook, v, paths)
            if c >= 0:
                victim = audit(env, v, c, fr, nf, delta, interest_only, paths)
                if victim >= 0:
                    asked[v, 0], victims[v, 0], nask[v] = c, victim, 1
                    paths[SWAPPED] += 1
        sent[v, 2] = nask[v]
    p_start, pingers = buckets(n, up, fr, nf)
    q_start, askers = buckets(n, up, asked, nask)
    draws = np.empty(askers.shape[0], np.uint64)
    sf, snf = fr.copy(), nf.copy()
    acks = np.empty((n, alpha), np.int64)
    nack = np.zeros(n, np.int64)
    answers = np.empty((n, alpha), np.int64)
    accepted = np.empty((n, alpha), np.bool_)
    nans = np.zeros(n, np.int64)
    for j in range(n):  # serve
        if not up[j]:
            continue
        if p_start[j + 1] > p_start[j]:
            stamp += 1
            bk, m = book[j], nbook[j]
            index_book(bk, m, mark, where, stamp)
            for t in range(p_start[j], p_start[j + 1]):
                i = pingers[t]
                welcome(fans, fan_seen, nfan, j, i, r, 2 * alpha)
                m = add(j, i, r, m, fr, nf, bk, mark, where, stamp)
                for k in range(snf[i]):
                    m = add(j, sf[i, k], r, m, fr, nf, bk, mark, where, stamp)
                m = trim(m, cap, bk, mark, where, stamp, paths)
                acks[i, nack[i]] = j
                nack[i] += 1
                sent[j, 1] += 1
            nbook[j] = m
        lo, hi = q_start[j], q_start[j + 1]
        if hi > lo:
            for t in range(lo, hi):
                draws[t] = rnd3(seed, FCFS, r, j, askers[t])
            by_draw(draws, askers, lo, hi)
            for t in range(lo, hi):
                i = askers[t]
                answers[i, nans[i]] = j
                accepted[i, nans[i]] = welcome(fans, fan_seen, nfan, j, i, r, 2 * alpha)
                nans[i] += 1
                sent[j, 3] += 1
    before = np.empty(alpha, np.int64)
    for v in range(n):  # finish
        if not up[v]:
            continue
        had = nf[v]
        before[:had] = fr[v, :had]
        stamp += 1
        bk, m = book[v], nbook[v]
        index_book(bk, m, mark, where, stamp)
        for a in range(nack[v]):
            j = acks[v, a]
            for k in range(snf[j]):
                m = add(v, sf[j, k], r, m, fr, nf, bk, mark, where, stamp)
            m = trim(m, cap, bk, mark, where, stamp, paths)
        kept = 0
        for k in range(nf[v]):
            if find(acks[v], nack[v], fr[v, k]) >= 0:
                fr[v, kept] = fr[v, k]
                kept += 1
        paths[LOST] += nf[v] - kept
        nf[v] = kept
        for a in range(nans[v]):
            c = answers[v, a]
            for k in range(snf[c]):
                m = add(v, sf[c, k], r, m, fr, nf, bk, mark, where, stamp)
            m = trim(m, cap, bk, mark, where, stamp, paths)
            if not accepted[v, a]:
                paths[REFUSED] += 1
                continue
            victim = victims[v, find(asked[v], nask[v], c)]
            at = find(fr[v], nf[v], victim) if victim >= 0 else -1
            if at >= 0:
                for k in range(at, nf[v] - 1):
                    fr[v, k] = fr[v, k + 1]
                nf[v] -= 1
            if find(fr[v], nf[v], c) < 0 and nf[v] < alpha:
                at = nf[v]
                while at > 0 and fr[v, at - 1] > c:
                    fr[v, at] = fr[v, at - 1]
                    at -= 1
                fr[v, at] = c
                nf[v] += 1
        nbook[v] = m
        changed = nf[v] != had
        for k in range(min(had, nf[v])):
            changed |= fr[v, k] != before[k]
        if changed:
            for k in range(nbook[v]):
                book[v, 1, k], book[v, 2, k] = 0, 0
        for k in range(nf[v]):
            at = find(book[v, 0], nbook[v], fr[v, k])
            if at >= 0:
                nbook[v] -= 1
                e = nbook[v]
                book[v, 0, at], book[v, 1, at], book[v, 2, at], book[v, 3, at] = (
                    book[v, 0, e],
                    book[v, 1, e],
                    book[v, 2, e],
                    book[v, 3, e],
                )
        kept = 0
        for k in range(nfan[v]):
            if fan_seen[v, k] >= r - 1:
                fans[v, kept], fan_seen[v, kept] = fans[v, k], fan_seen[v, k]
                kept += 1
        paths[FAN_DROPPED] += nfan[v] - kept
        nfan[v] = kept
    stamps[0] = stamp


# -- the trees' round -------------------------------------------------------------------------------
@small
def slot_of(t_node, lo, hi, node):
    k = lo + np.searchsorted(t_node[lo:hi], node)
    return k if k < hi and t_node[k] == node else -1


@small
def below(keyd, a, b):
    """key(a) < key(b) for slots of one feed (their slots ascend with their ids)."""
    return keyd[a] < keyd[b] or (keyd[a] == keyd[b] and a < b)


@small
def drop_child(mm, kids, p, c):
    k = find(kids[p], mm[p, NK], c)
    if k >= 0:
        for a in range(k, mm[p, NK] - 1):
            kids[p, a] = kids[p, a + 1]
        mm[p, NK] -= 1


@small
def attached(mm, pub, s):
    return mm[s, ON] == 1 if s == pub else mm[s, PAR] >= 0


@small
def fresh(mm, gu, s):
    mm[s, ON], mm[s, PAR], mm[s, NK], mm[s, SINCE], mm[s, PLAN], mm[s, DIRECT] = 0, -1, 0, -1, -1, 0
    mm[s, REJ], mm[s, SKIP], mm[s, DET], mm[s, ALEN] = -1, 0, -1, 0
    for c in range(CACHE):
        gu[s, c] = -1


@small
def fallback(mm, s, k, paths):
    mm[s, PLAN], mm[s, DIRECT] = k + STEP, 1
    paths[FALLBACK] += 1


@small
def chain(mm, pub, s, size, buf):
    """s's ancestors nearest first into buf (their count), or -1 when the chain is broken."""
    m, at = 0, s
    while at != pub:
        p = mm[at, PAR]
        if p < 0 or m >= size:
            return -1
        if mm[p, ON] == 0 or (p != pub and mm[p, PAR] < 0):
            return -1
        buf[m] = p
        m += 1
        at = p
    return m


@small
def holders(env, f, node, out, dist, m):
    """node's friends whose filter holds f, nearest first (ties: smaller id), written from out[m]."""
    x, y, bits, hpos, fr, nf = env[0], env[1], env[2], env[4], env[7], env[8]
    start = m
    for k in range(nf[node]):
        q = fr[node, k]
        held = True
        for h in range(BLOOM_HASHES):
            b = hpos[f, h]
            held &= (bits[q, b >> 6] >> np.uint64(b & 63)) & np.uint64(1) == np.uint64(1)
        if not held:
            continue
        d = lat(x, y, node, q) / 1000.0
        at = m
        while at > start and (dist[at - 1] > d or (dist[at - 1] == d and out[at - 1] > q)):
            out[at], dist[at] = out[at - 1], dist[at - 1]
            at -= 1
        out[at], dist[at] = q, d
        m += 1
    return m


@small
def deliver(ts, out, f, s, u, arrival, hops):
    gu, gt, gh, fe, t_node = ts[3], ts[4], ts[5], ts[7], ts[8]
    c = u % CACHE
    gu[s, c], gt[s, c], gh[s, c] = u, arrival, hops
    published = TICK_MS * (fe[f, UPH] + PUBLISH_EVERY * u)
    tally = out[6]
    tally[0] += 1
    tally[1] += arrival - published
    if out[7][0]:
        dl = out[2]
        dl.append(f)
        dl.append(t_node[s])
        dl.append(u)
        dl.append(published)
        dl.append(hops)
        out[3].append(arrival)


@nb.njit(cache=True)
def push(ts, env, out, f, s0, u):
    """s0 just got u: down its subtree (children in id order), to members lacking u that were
    attached by its publication."""
    mm, kids, gu, gt, gh, traf, fe, t_node = ts[0], ts[1], ts[3], ts[4], ts[5], ts[6], ts[7], ts[8]
    x, y = env[0], env[1]
    stack_s, stack_i = out[9], out[10]
    c_ = u % CACHE
    published = fe[f, UPH] + PUBLISH_EVERY * u
    sp = 0
    stack_s[0], stack_i[0] = s0, 0
    while sp >= 0:
        s, a = stack_s[sp], stack_i[sp]
        if a >= mm[s, NK]:
            sp -= 1
            continue
        stack_i[sp] = a + 1
        c = kids[s, a]
        if gu[c, c_] == u or mm[c, SINCE] < 0 or mm[c, SINCE] > published:
            continue
        traf[s, DATA] += 1
        h = gh[s, c_]
        deliver(ts, out, f, c, u, gt[s, c_] + lat(x, y, t_node[s], t_node[c]), h + 1 if h >= 0 else -1)
        sp += 1
        stack_s[sp], stack_i[sp] = c, 0


@nb.njit(cache=True)
def attach(ts, env, out, f, js, si, k):
    """js under si (nothing if it is there): it leaves its old parent, ends its plan, orphan state
    and fallback, sets `since` and its first periodic rejoin on its first attachment, then pulls
    from si the cached updates published since."""
    mm, kids, gu, gt, traf, fe, t_node = ts[0], ts[1], ts[3], ts[4], ts[6], ts[7], ts[8]
    x, y = env[0], env[1]
    if mm[js, PAR] == si:
        return
    if mm[js, PAR] >= 0:
        drop_child(mm, kids, mm[js, PAR], js)
    mm[js, PAR] = si
    k_ = mm[si, NK]
    if k_ == kids.shape[1]:
        raise ValueError("a member's children outgrew the yardstick's rows")
    while k_ > 0 and kids[si, k_ - 1] > js:
        kids[si, k_] = kids[si, k_ - 1]
        k_ -= 1
    kids[si, k_] = js
    mm[si, NK] += 1
    mm[js, PLAN], mm[js, DIRECT], mm[js, DET], mm[js, ALEN] = -1, 0, -1, 0
    if mm[js, SINCE] < 0:
        mm[js, SINCE], mm[js, REJ] = k, k + 1 + mm[js, ROFF]
    depth = chain(mm, fe[f, PUB], js, fe[f, HI] - fe[f, LO], out[8])
    now = float(TICK_MS * k)
    npub = fe[f, NPUB]
    for u in range(max(0, npub - CACHE), npub):
        c_ = u % CACHE
        if fe[f, UPH] + PUBLISH_EVERY * u < mm[js, SINCE] or gu[si, c_] != u or gu[js, c_] == u:
            continue
        traf[si, DATA] += 1
        out[5][PULL] += 1
        got = gt[si, c_]
        deliver(ts, out, f, js, u, (got if got > now else now) + lat(x, y, t_node[si], t_node[js]), depth)
        push(ts, env, out, f, js, u)


@small
def receive_join(ts, env, si, js, beta):
    """Alg. 2 at member si for js (js left out of si's children): (OK or FORWARD, to, evicted, rejoin at)."""
    mm, kids, keyd, t_node = ts[0], ts[1], ts[2], ts[8]
    x, y = env[0], env[1]
    if below(keyd, js, si):
        return FORWARD, mm[si, PAR], -1, -1
    count, all_below = 0, True
    for a in range(mm[si, NK]):
        c = kids[si, a]
        if c != js:
            count += 1
            all_below &= below(keyd, c, js)
    if count < beta:
        return OK, -1, -1, -1
    jn = t_node[js]
    if all_below:
        best, bd = -1, 0.0
        for a in range(mm[si, NK]):
            c = kids[si, a]
            if c != js:
                d = lat(x, y, t_node[c], jn) / 1000.0
                if best < 0 or d < bd:
                    best, bd = c, d
        return FORWARD, best, -1, -1
    ev = -1
    for a in range(mm[si, NK]):
        c = kids[si, a]
        if c != js and (ev < 0 or below(keyd, ev, c)):
            ev = c
    en = t_node[ev]
    best, bd = -1, 0.0
    for a in range(mm[si, NK]):
        c = kids[si, a]
        if c != js and c != ev:
            d = lat(x, y, t_node[c], en) / 1000.0
            if best < 0 or d < bd:
                best, bd = c, d
    d = lat(x, y, jn, en) / 1000.0
    if best < 0 or d < bd or (d == bd and js < best):
        best = js
    return OK, -1, ev, best


@small
def count(traf, nm, f, s, node, what):
    """Traffic of a member (its slot) or of a non-member (a Bloom false positive, by id)."""
    if s >= 0:
        traf[s, what] += 1
    else:
        nm.append(f)
        nm.append(node)
        nm.append(what)


@nb.njit(cache=True)
def join(ts, env, out, f, js, ents, ne, k, rejoin):
    """A join of js: a walk from each entry in turn (Alg. 2) until one attaches it. An eviction
    (ChangeParent) sends the evicted member to join at once (entries: the child it was told, the
    publisher), and so on down; one that cannot attach starts a fallback plan."""
    mm, kids, traf, fe, t_node = ts[0], ts[1], ts[6], ts[7], ts[8]
    up, prm = env[5], env[6]
    met, nm, paths, told = out[0], out[1], out[5], out[11]
    lo, hi, pub = fe[f, LO], fe[f, HI], fe[f, PUB]
    limit = 10 * up.shape[0] + 10
    first = True
    while True:
        jn = t_node[js]
        done, ev, host, at = False, -1, -1, -1
        for a in range(ne):
            e = ents[a]
            if e == jn:
                continue
            es = slot_of(t_node, lo, hi, e)
            if not (mm[es, ON] == 1 if es >= 0 else up[e] != 0):
                paths[OFFLINE_ENTRY] += 1
                continue
            sender, i, si, hops = js, e, es, 0
            while True:
                hops += 1
                if hops > limit:
                    raise RuntimeError("a join walk does not end")
                traf[sender, JOIN] += 1
                if i == jn:
                    paths[SELF_WALK] += 1
                    break
                met.append(jn)
                met.append(i)
                if not (mm[si, ON] == 1 if si >= 0 else up[i] != 0):
                    paths[DEAD_END] += 1
                    break
                count(traf, nm, f, si, i, JOINS_IN)
                if rejoin:
                    count(traf, nm, f, si, i, REJOINS_IN)
                if si < 0 or not attached(mm, pub, si):
                    count(traf, nm, f, si, i, JOIN)
                    paths[FALSE_POSITIVE if si < 0 else UNATTACHED] += 1
                    break
                kind, to, evicted, rejoin_at = receive_join(ts, env, si, js, prm[2])
                if kind == FORWARD:
                    paths[FORWARD_UP if to == mm[si, PAR] else FORWARD_DOWN] += 1
                    sender, si = si, to
                    i = t_node[si]
                    continue
                traf[si, JOIN] += 1 + (evicted >= 0)
                attach(ts, env, out, f, js, si, k)
                done, ev, host, at = True, evicted, si, rejoin_at
                break
            if done:
                break
        if not done:
            if first:
                return False
            fallback(mm, js, k, paths)
            return True
        if ev < 0:
            return True
        first = False
        paths[CHANGE_PARENT] += 1
        drop_child(mm, kids, host, ev)
        mm[ev, PAR], mm[ev, SKIP] = -1, 1
        told[0], told[1] = t_node[at], t_node[pub]
        js, ents, ne, rejoin = ev, told, 2, 0


@small
def fail(ts, out, f, s, start):
    """s fails: it leaves its parent; its children will notice at their next ping + the timeout,
    keeping its chain as their ancestors; it forgets everything."""
    mm, kids, gu, fe = ts[0], ts[1], ts[3], ts[7]
    pool, buf = out[4], out[8]
    size = max(chain(mm, fe[f, PUB], s, fe[f, HI] - fe[f, LO], buf), 0)
    if mm[s, PAR] >= 0:
        drop_child(mm, kids, mm[s, PAR], s)
    if mm[s, NK] > 0:
        off = len(pool)
        for a in range(size):
            pool.append(buf[a])
        for a in range(mm[s, NK]):
            c = kids[s, a]
            mm[c, DET] = start + (mm[c, PPHASE] - start) % TICKS + TIMEOUT
            mm[c, AOFF], mm[c, ALEN] = off, size
    fresh(mm, gu, s)
    out[5][FAIL] += 1


@small
def leave(ts, env, out, f, s, start):
    """§4.4: the parent adopts the heir (least key), the other children join at it, then s goes;
    without children, or without an online parent having it as a child, s fails."""
    mm, kids, keyd, gu, traf, fe, t_node = ts[0], ts[1], ts[2], ts[3], ts[6], ts[7], ts[8]
    p = mm[s, PAR]
    if mm[s, NK] == 0 or p < 0 or mm[p, ON] == 0 or find(kids[p], mm[p, NK], s) < 0:
        out[5][LEAVE_FAILED] += 1
        fail(ts, out, f, s, start)
        return
    out[5][LEAVE] += 1
    heir = kids[s, 0]
    for a in range(1, mm[s, NK]):
        if below(keyd, kids[s, a], heir):
            heir = kids[s, a]
    traf[s, JOIN] += 1
    traf[p, JOIN] += 1
    attach(ts, env, out, f, heir, p, start)
    traf[heir, JOIN] += 1
    drop_child(mm, kids, p, s)
    mm[s, PAR] = -1
    others, entries = out[12], out[13]
    m = mm[s, NK]
    for a in range(m):
        others[a] = kids[s, a]
    for a in range(m):
        c = others[a]
        traf[s, JOIN] += 1
        entries[0], entries[1] = t_node[heir], t_node[fe[f, PUB]]
        if join(ts, env, out, f, c, entries, np.int64(2), start, np.int64(0)):
            traf[c, JOIN] += 1
        else:
            mm[c, PAR] = -1
            fallback(mm, c, start, out[5])
    traf[s, JOIN] += 1
    fresh(mm, gu, s)


@nb.njit(cache=True)
def met_csr(met, n):
    """The (joiner, met) pairs of the round as CSR by joiner, each row ascending."""
    m = len(met) // 2
    keys = np.empty(m, np.int64)
    for t in range(m):
        keys[t] = met[2 * t] * n + met[2 * t + 1]
    keys.sort()
    start = np.zeros(n + 1, np.int64)
    ids = np.empty(m, np.int64)
    for t in range(m):
        start[keys[t] // n + 1] += 1
        ids[t] = keys[t] % n
    for v in range(n):
        start[v + 1] += start[v]
    return start, ids


@nb.njit(cache=True)
def coverage(r, fr, nf, n_start, n_feed, mark, covered):
    """Each node's feeds that some friend subscribes to (the round's friend coverage)."""
    n = fr.shape[0]
    for v in range(n):
        stamp = r * n + v
        for k in range(nf[v]):
            j = fr[v, k]
            for t in range(n_start[j], n_start[j + 1]):
                mark[n_feed[t]] = stamp
        c = 0
        for t in range(n_start[v], n_start[v + 1]):
            c += mark[n_feed[t]] == stamp
        covered[v] = c


@nb.njit(cache=True)
def trees(r, up, proper, prm, record, fs, ts, env, pool, paths, tally, scratch):
    """Every feed's round r on the friends the friendship round left: presence at its start, six
    ticks (orphans, join plans, periodic rejoins, publication), then every child's ping. Returns
    the nodes met (CSR by joiner), and when `record` the deliveries (feed, node, update,
    published ms, hops; arrival ms) and the traffic of non-members (feed, node, kind)."""
    fr, nf = fs[0], fs[1]
    x, y, bits, pc, hpos = env[0], env[1], env[2], env[3], env[4]
    mm, kids, gu, gt, gh, traf, fe, t_node = ts[0], ts[1], ts[3], ts[4], ts[5], ts[6], ts[7], ts[8]
    met, nm, dl = List.empty_list(types.int64), List.empty_list(types.int64), List.empty_list(types.int64)
    da = List.empty_list(types.float64)
    tally[:] = 0.0
    traf[:] = 0
    tree_env = (x, y, bits, pc, hpos, up, prm, fr, nf, proper)
    out = (met, nm, dl, da, pool, paths, tally, np.array([record])) + scratch[4:12]
    buf, ents, dist = scratch[4], scratch[10], scratch[11]
    seed, beta = prm[0], prm[2]
    start = TICKS * (r - 1)
    for f in range(fe.shape[0]):
        lo, hi, pub = fe[f, LO], fe[f, HI], fe[f, PUB]
        pubn = t_node[pub]
        for s in range(lo, hi):
            node = t_node[s]
            if mm[s, ON] and not up[node]:
                if proper[node]:
                    leave(ts, tree_env, out, f, s, start)
                else:
                    fail(ts, out, f, s, start)
            elif not mm[s, ON] and up[node]:
                mm[s, ON] = 1
                if s == pub:
                    mm[s, SINCE] = start
                else:
                    mm[s, PLAN], mm[s, DIRECT] = start, 0
        for k in range(start, start + TICKS):
            for s in range(lo, hi):  # 1. orphans
                if not (mm[s, ON] and mm[s, DET] == k):
                    continue
                paths[ORPHAN] += 1
                if mm[s, PAR] >= 0:
                    drop_child(mm, kids, mm[s, PAR], s)
                mm[s, PAR] = -1
                ne = 0
                for a in range(mm[s, AOFF], mm[s, AOFF] + mm[s, ALEN]):
                    anc = pool[a]
                    if mm[anc, ON] and attached(mm, pub, anc):
                        ents[ne] = t_node[anc]
                        ne += 1
                mm[s, DET], mm[s, ALEN] = -1, 0
                ne = holders(tree_env, f, t_node[s], ents, dist, ne)
                ents[ne] = pubn
                if not join(ts, tree_env, out, f, s, ents, ne + 1, k, np.int64(0)):
                    fallback(mm, s, k, paths)
            for s in range(lo, hi):  # 2. join plans
                if not mm[s, ON] or mm[s, PLAN] < 0 or k < mm[s, PLAN] or (k - mm[s, PLAN]) % STEP:
                    continue
                ne = holders(tree_env, f, t_node[s], ents, dist, 0)
                if ne == 0 and not (mm[s, DIRECT] or (k - mm[s, PLAN]) // STEP >= mm[s, PSTEP]):
                    continue
                ents[ne] = pubn
                join(ts, tree_env, out, f, s, ents, ne + 1, k, np.int64(0))
            for s in range(lo, hi):  # 3. periodic rejoins
                if not mm[s, ON] or mm[s, REJ] != k:
                    continue
                mm[s, REJ] = k + PERIOD
                if mm[s, SKIP]:
                    mm[s, SKIP] = 0
                    paths[SKIPPED_REJOIN] += 1
                    continue
                h = chain(mm, pub, s, hi - lo, buf)
                if h < 2:
                    continue
                paths[PERIODIC_REJOIN] += 1
                paths[DEEP_REJOIN] += h > 2
                u = float(rnd3(seed, REJOIN, t_node[s], f, k)) / SPAN
                total = 0.0
                for q in range(2, h + 1):
                    total += math.pow(float(beta), float(-q))
                acc, p = 0.0, h
                for q in range(2, h + 1):
                    acc += math.pow(float(beta), float(-q)) / total
                    if u < acc:
                        p = q
                        break
                ents[0] = t_node[buf[p - 1]]
                join(ts, tree_env, out, f, s, ents, np.int64(1), k, np.int64(1))
            if k % PUBLISH_EVERY == fe[f, UPH]:  # 4. publication, pushed down from the root
                u = fe[f, NPUB]
                fe[f, NPUB] += 1
                if mm[pub, ON]:
                    gu[pub, u % CACHE], gt[pub, u % CACHE], gh[pub, u % CACHE] = u, float(TICK_MS * k), 0
                    push(ts, tree_env, out, f, pub, u)
                old = u - CACHE
                if old >= 0:
                    for s in range(lo, hi):
                        if gu[s, old % CACHE] == old:
                            gu[s, old % CACHE] = -1
        for s in range(lo, hi):  # every child's ping to its parent
            p = mm[s, PAR]
            if mm[s, ON] and p >= 0 and mm[p, ON] and find(kids[p], mm[p, NK], s) >= 0:
                traf[s, PINGS] += 1
                traf[p, PINGS] += 1
    for s in range(traf.shape[0]):
        tally[2] += traf[s, JOIN]
        tally[3] += traf[s, PINGS]
        tally[4] += traf[s, DATA]
    begin, ids = met_csr(met, fr.shape[0])
    ints, arrivals, others = as_arrays(dl, da, nm)
    return begin, ids, ints, arrivals, others


@nb.njit(cache=True)
def as_arrays(dl, da, nm):
    """The recorded deliveries and non-member traffic as arrays."""
    ints = np.empty((len(dl) // 5, 5), np.int64)
    for t in range(ints.shape[0]):
        for c in range(5):
            ints[t, c] = dl[5 * t + c]
    arrivals = np.empty(len(da), np.float64)
    for t in range(len(da)):
        arrivals[t] = da[t]
    others = np.empty((len(nm) // 3, 3), np.int64)
    for t in range(others.shape[0]):
        for c in range(3):
            others[t, c] = nm[3 * t + c]
    return ints, arrivals, others


# -- inputs ----------------------------------------------------------------------------------------
@nb.njit(cache=True)
def filters(n_start, n_feed, feeds, exact):
    """Each node's subscription filter as uint64 words, its popcount, and each feed's bit positions."""
    hpos = np.empty((max(feeds, 1), BLOOM_HASHES), np.int64)
    for f in range(feeds):
        for h in range(BLOOM_HASHES):
            hpos[f, h] = f if exact else np.int64(rnd2(0, BLOOM_HASH, h, f) % np.uint64(BLOOM_BITS))
    words = (feeds + 63) // 64 if exact else BLOOM_BITS // 64
    n = n_start.shape[0] - 1
    bits = np.zeros((n, max(words, 1)), np.uint64)
    pc = np.zeros(n, np.int64)
    for v in range(n):
        for t in range(n_start[v], n_start[v + 1]):
            for h in range(BLOOM_HASHES):
                b = hpos[n_feed[t], h]
                bits[v, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
        for w in range(bits.shape[1]):
            pc[v] += popcount(bits[v, w])
    b_start = np.zeros(n + 1, np.int64)
    b_start[1:] = np.cumsum(pc)
    b_pos = np.empty(b_start[n], np.int64)
    for v in range(n):
        t = b_start[v]
        for w in range(bits.shape[1]):
            for b in range(64):
                if (bits[v, w] >> np.uint64(b)) & np.uint64(1):
                    b_pos[t] = 64 * w + b
                    t += 1
    return bits, pc, hpos, b_start, b_pos


@nb.njit(cache=True)
def members(t_start, t_node, publishers, n_start, n_feed, x, y, seed, beta):
    """Every feed's members (slots): state columns, keys (s to the publisher; -1 for it), feed rows."""
    feeds, slots = publishers.shape[0], t_node.shape[0]
    mm = np.zeros((slots, ROFF + 1), np.int64)
    fe = np.zeros((feeds, NPUB + 1), np.int64)
    keyd = np.empty(slots, np.float64)
    for f in range(feeds):
        lo, hi = t_start[f], t_start[f + 1]
        pub = slot_of(t_node, lo, hi, publishers[f])
        fe[f, LO], fe[f, HI], fe[f, PUB] = lo, hi, pub
        fe[f, UPH] = np.int64(rnd1(seed, UPDATE, f) % np.uint64(PUBLISH_EVERY))
        for s in range(lo, hi):
            v = t_node[s]
            mm[s, PAR], mm[s, SINCE], mm[s, PLAN], mm[s, REJ], mm[s, DET] = -1, -1, -1, -1, -1
            mm[s, PSTEP] = LAST_PUBLISHER_STEP
            mm[s, PPHASE] = np.int64(rnd2(seed, PHASE, v, f) % np.uint64(TICKS))
            mm[s, ROFF] = np.int64(rnd3(seed, REJOIN, v, f, 0) % np.uint64(PERIOD))
            keyd[s] = -1.0 if s == pub else lat(x, y, v, publishers[f]) / 1000.0
    for v in range(n_start.shape[0] - 1):  # the staggered joins: v's place in its own feeds' order
        lo, hi = n_start[v], n_start[v + 1]
        draws = np.empty(hi - lo, np.uint64)
        for t in range(lo, hi):
            draws[t - lo] = rnd2(seed, ORDER, v, n_feed[t])
        order = n_feed[lo:hi].copy()
        by_draw(draws, order, 0, hi - lo)
        for q in range(hi - lo):
            f = order[q]
            mm[slot_of(t_node, t_start[f], t_start[f + 1], v), PSTEP] = min(q, LAST_PUBLISHER_STEP)
    kids = np.empty((slots, beta + 2), np.int64)
    gu = np.full((slots, CACHE), -1, np.int64)
    gt = np.zeros((slots, CACHE), np.float64)
    gh = np.zeros((slots, CACHE), np.int64)
    return mm, kids, keyd, gu, gt, gh, fe


class Rappel:
    """The whole network's state between rounds, and `round(r)`. Inputs: subscriptions as (node,
    feed) pairs (feeds 0 .. len(publishers) - 1), coordinates float [nodes, 2] in ms, each feed's
    publisher; `intro`: node -> the nodes it starts having met (heard of in its first round)."""

    def __init__(self, subscriptions, nodes, coordinates, publishers, seed=1, alpha=6, beta=5, delta=0.01,
                 mode="bloom", utility="interest-distance", intro=None):  # fmt: skip
        if mode not in ("bloom", "exact") or utility not in ("interest-distance", "interest"):
            raise ValueError(f"unknown mode {mode!r} or utility {utility!r}")
        subs = np.unique(np.asarray(subscriptions, np.int64).reshape(-1, 2), axis=0)  # by node, then feed
        publishers = np.asarray(publishers, np.int64)
        n, feeds = int(nodes), len(publishers)
        if len(subs) and (subs[:, 1].max() >= feeds or subs[:, 0].max() >= n or subs.min() < 0):
            raise ValueError("subscriptions must name nodes below `nodes` and feeds below len(publishers)")
        self.nodes, self.feeds = n, feeds
        self.n_start = np.searchsorted(subs[:, 0], np.arange(n + 1)).astype(np.int64)
        self.n_feed = np.ascontiguousarray(subs[:, 1])
        keys = np.unique(np.concatenate([subs[:, 1] * n + subs[:, 0], np.arange(feeds) * n + publishers]))
        self.t_start = np.searchsorted(keys // n, np.arange(feeds + 1)).astype(np.int64)
        self.t_node = np.ascontiguousarray(keys % n)
        coordinates = np.asarray(coordinates, np.float64)
        self.x, self.y = np.ascontiguousarray(coordinates[:, 0]), np.ascontiguousarray(coordinates[:, 1])
        if not 1 <= alpha <= 62 or beta < 1:
            raise ValueError(f"alpha must be in 1..62 and beta at least 1, got {alpha} and {beta}")
        self.bits, self.pc, self.hpos, b_start, b_pos = filters(self.n_start, self.n_feed, feeds, mode == "exact")
        mm, kids, keyd, gu, gt, gh, fe = members(
            self.t_start, self.t_node, publishers, self.n_start, self.n_feed, self.x, self.y, seed, beta
        )
        traffic = np.zeros((len(keys), 5), np.int64)  # per member and round: DATA .. PINGS
        self.trees = (mm, kids, keyd, gu, gt, gh, traffic, fe, self.t_node)
        cap = 3 * alpha * alpha + 2 * alpha
        self.friends = (
            np.empty((n, alpha), np.int64), np.zeros(n, np.int64),  # friends (ascending), how many
            np.empty((n, 2 * alpha), np.int64), np.empty((n, 2 * alpha), np.int64), np.zeros(n, np.int64),  # fans
            np.empty((n, 4, cap + alpha + 2), np.int32), np.zeros(n, np.int64),  # candidates: id, votes, audited, heard
            np.zeros((n, 4), np.int64), np.zeros(n, np.int64),  # sent this round; covered feeds
        )  # fmt: skip
        largest = int(np.diff(self.t_start).max()) if feeds else 1
        self.scratch = (
            np.empty((4, cap + n + 1), np.int32), np.zeros(n, np.int64), np.zeros(n, np.int64),  # a book, indexed
            np.zeros(1, np.int64),  # the index's stamp
            np.empty(largest + 1, np.int64),  # a chain
            np.empty(largest + 1, np.int64), np.empty(largest + 1, np.int64),  # a push's stack
            np.empty(2, np.int64),  # ChangeParent's entries
            np.empty(beta + 2, np.int64), np.empty(2, np.int64),  # a leaver's children, their entries
            np.empty(largest + alpha + 2, np.int64), np.empty(largest + alpha + 2, np.float64),  # entries
            np.full(max(feeds, 1), -1, np.int64),  # coverage's marks
        )  # fmt: skip
        self.env = (self.x, self.y, self.bits, self.pc, self.hpos, self.n_start, self.n_feed, b_start, b_pos)
        self.prm = np.array([seed, alpha, beta, utility == "interest"], np.int64)
        self.delta = float(delta)
        self.pool = List.empty_list(types.int64)  # orphans' ancestors
        self.paths = np.zeros(len(PATHS), np.int64)
        self.tally = np.zeros(len(TALLY), np.float64)
        intro = intro or {}
        rows = [sorted(int(q) for q in intro.get(v, ())) for v in range(n)]
        self.met_start = np.concatenate([[0], np.cumsum([len(row) for row in rows])]).astype(np.int64)
        self.met_ids = np.array([q for row in rows for q in row], np.int64)

    def round(self, r, up=None, proper=None, record=False):
        """Round r; `up`, `proper`: [nodes] (who is online; who, going offline, leaves properly).
        Returns the recorded deliveries and non-member traffic (empty unless `record`)."""
        up = np.ones(self.nodes, np.uint8) if up is None else np.ascontiguousarray(up, np.uint8)
        proper = np.zeros(self.nodes, np.uint8) if proper is None else np.ascontiguousarray(proper, np.uint8)
        friendship(
            r, up, self.prm, self.delta, self.friends, self.env, self.scratch, self.met_start, self.met_ids, self.paths
        )
        start, ids, ints, arrivals, others = trees(
            r, up, proper, self.prm, record, self.friends, self.trees, self.env, self.pool, self.paths, self.tally,
            self.scratch,
        )  # fmt: skip
        self.met_start, self.met_ids = start, ids
        coverage(r, self.friends[0], self.friends[1], self.n_start, self.n_feed, self.scratch[12], self.friends[8])
        self.tally[5] = self.friends[7].sum()
        return ints, arrivals, others


def node_state(rappel: Rappel, v: int) -> dict:
    """Node v's friendship state, as `tests/rappel_oracle.FriendshipOracle.state` lists it."""
    fr, nf, fans, fan_seen, nfan, book, nbook = rappel.friends[:7]
    fan_order = np.argsort(fans[v, : nfan[v]], kind="stable")
    cand = book[v, :, : nbook[v]][:, np.argsort(book[v, 0, : nbook[v]], kind="stable")]
    return {
        "friends": fr[v, : nf[v]].tolist(),
        "fans": fans[v, : nfan[v]][fan_order].tolist(),
        "fan_seen": fan_seen[v, : nfan[v]][fan_order].tolist(),
        "cand": cand[0].tolist(),
        "cand_votes": cand[1].tolist(),
        "cand_audited": cand[2].tolist(),
        "cand_heard": cand[3].tolist(),
        "met": rappel.met_ids[rappel.met_start[v] : rappel.met_start[v + 1]].tolist(),
    }


def tree_state(rappel: Rappel, feed: int) -> dict:
    """Feed f's members as `tests/rappel_trees_oracle.TreesOracle.tree` lists them: node ->
    (online, parent, children, since, plan, rejoin, skip, detect), -1 for none."""
    mm, kids, t_node = rappel.trees[0], rappel.trees[1], rappel.t_node
    out = {}
    for s in range(rappel.t_start[feed], rappel.t_start[feed + 1]):
        m = mm[s]
        out[int(t_node[s])] = (
            bool(m[ON]), int(t_node[m[PAR]]) if m[PAR] >= 0 else -1, t_node[kids[s, : m[NK]]].tolist(),
            int(m[SINCE]), int(m[PLAN]), int(m[REJ]), bool(m[SKIP]), int(m[DET]),
        )  # fmt: skip
    return out


def round_rows(rappel: Rappel, recorded) -> tuple[list, dict, dict]:
    """A recorded round's deliveries (feed, node, update, published ms, arrival ms, hops) in the
    order they happened, traffic {(feed, node): [data, join, joins in, rejoins in, pings]} and the
    nodes met {joiner: ascending ids}."""
    ints, arrivals, others = recorded
    deliveries = [(f, v, u, p, float(a), h) for (f, v, u, p, h), a in zip(ints.tolist(), arrivals.tolist())]
    traffic = {}
    rows = rappel.trees[6]
    for s in np.flatnonzero(rows.any(axis=1)):
        f = int(np.searchsorted(rappel.t_start, s, side="right") - 1)
        traffic[(f, int(rappel.t_node[s]))] = rows[s].tolist()
    for f, v, what in others.tolist():
        traffic.setdefault((f, v), [0, 0, 0, 0, 0])[what] += 1
    met = {
        v: rappel.met_ids[rappel.met_start[v] : rappel.met_start[v + 1]].tolist()
        for v in range(rappel.nodes)
        if rappel.met_start[v + 1] > rappel.met_start[v]
    }
    return deliveries, traffic, met


def simulate(subscriptions, nodes, coordinates, publishers, rounds, seed=1, alpha=6, beta=5, delta=0.01,
             mode="bloom", utility="interest-distance", down=None, proper=None, intro=None, every_round=False):  # fmt: skip
    """Rounds 1..rounds. `down`, `proper`: bool [rounds + 1, nodes] (row r: who is offline in round
    r; who, going offline in r, leaves properly), None for nobody. Returns, for the last round (or
    each, `every_round`): {"round", "nodes": [node_state], "sent": [[pings, acks, requests,
    answers]], "trees": [tree_state], "deliveries", "traffic", "met", "paths"}."""
    rappel = Rappel(subscriptions, nodes, coordinates, publishers, seed, alpha, beta, delta, mode, utility, intro)
    results = []
    for r in range(1, rounds + 1):
        up = None if down is None else ~np.asarray(down[r], bool)
        leaves = None if proper is None else np.asarray(proper[r], bool)
        recorded = rappel.round(r, up, leaves, record=every_round or r == rounds)
        if every_round or r == rounds:
            deliveries, traffic, met = round_rows(rappel, recorded)
            results.append({
                "round": r,
                "nodes": [node_state(rappel, v) for v in range(rappel.nodes)],
                "sent": rappel.friends[7].tolist(),
                "trees": [tree_state(rappel, f) for f in range(rappel.feeds)],
                "deliveries": deliveries, "traffic": traffic, "met": met,
                "paths": dict(zip(PATHS, rappel.paths.tolist())),
            })  # fmt: skip
    return results if every_round else results[-1]


def publishers_of(lakehouse: str, instance: str, pairs: np.ndarray, seed: int) -> np.ndarray:
    """Each topic's publisher as `simulate rappel` picks it: on a social instance the node with the
    topic's key, else (and for a topic no node has the key of) the subscriber of least
    draw(RAPPEL_PUBLISHER, topic, node)."""
    from benchmarks.design_greedy import table
    from overlay.draws import RAPPEL_PUBLISHER, draw

    instances = table(lakehouse, "instances")
    row = instances[instances.instance == instance].iloc[0]
    topics = int(pairs[:, 1].max()) + 1 if len(pairs) else 0
    by_key = {}
    if topics and row.source == "social":
        keys = {}
        for name in ("node_keys", "topic_keys"):
            rows = table(lakehouse, name)
            keys[name] = rows[(rows.instance == instance) & (rows.ingest_id == row.ingest_id)][["key", "id"]]
        joined = keys["topic_keys"].merge(keys["node_keys"], on="key", suffixes=("_topic", "_node"))
        by_key = dict(zip(joined.id_topic.astype(int), joined.id_node.astype(int)))
    owners, feeds = pairs[:, 0], pairs[:, 1]
    order = np.lexsort((owners, draw(seed, RAPPEL_PUBLISHER, feeds, owners), feeds))
    first = np.searchsorted(feeds[order], np.arange(topics))
    seeded = owners[order][np.minimum(first, max(len(order) - 1, 0))]
    return np.array([by_key.get(t, seeded[t]) for t in range(topics)], np.int64)


def presence_masks(nodes, rounds, seed, publishers, churn, proper_leaves, arrivals):
    """(down, proper) bool [rounds + 1, nodes] from the lab's presence (`overlay.rappel.presence`),
    as `simulate rappel --churn ON/OFF --proper-leaves S --arrivals M` sets it; None if everyone is
    up throughout."""
    if churn is None and not arrivals:
        return None, None
    from overlay.rappel.presence import Presence

    per_minute = 2  # 30 s rounds
    online, offline = churn or (0.0, 0.0)
    presence = Presence(
        seed=seed, spared=frozenset(publishers.tolist()), arrival_rounds=math.ceil(arrivals * per_minute),
        mean_online=online * per_minute, mean_offline=offline * per_minute, proper_leaves=proper_leaves,
    )  # fmt: skip
    down = np.zeros((rounds + 1, nodes), bool)
    proper = np.zeros((rounds + 1, nodes), bool)
    for v in range(nodes):
        for r in range(1, rounds + 1):
            down[r, v] = not presence.up(v, r)
            proper[r, v] = down[r, v] and not down[r - 1, v] and r > 1 and presence.leaves_properly(v, r)
    return down, proper


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", required=True)
    parser.add_argument("--rounds", type=int, default=120, help="30 s rounds (default 120: one simulated hour)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--friends", type=int, default=6, help="alpha (default 6)")
    parser.add_argument("--children", type=int, default=5, help="beta (default 5)")
    parser.add_argument("--delta", type=float, default=0.01)
    parser.add_argument("--feed-summary", choices=("bloom", "exact"), default="bloom")
    parser.add_argument("--utility", choices=("interest-distance", "interest"), default="interest-distance")
    parser.add_argument("--model-seed", type=int, default=1, help="the latency model's seed (default 1)")
    parser.add_argument("--churn", metavar="ON/OFF", help="exponential sessions, mean minutes online/offline")
    parser.add_argument("--proper-leaves", type=float, default=0.0)
    parser.add_argument("--arrivals", type=float, default=0.0, metavar="MINUTES")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from benchmarks.design_greedy import current_subscriptions, table  # the inputs, through the lab
    from overlay.rappel.coordinates import LatencyModel

    clock = time.monotonic()
    pairs = np.asarray(current_subscriptions(args.lakehouse, args.instance), np.int64).reshape(-1, 2)
    instances = table(args.lakehouse, "instances")
    nodes = int(instances[instances.instance == args.instance].iloc[0].nodes)
    coordinates = LatencyModel().coordinates(args.model_seed, np.arange(nodes, dtype=np.int64))
    publishers = publishers_of(args.lakehouse, args.instance, pairs, args.seed)
    churn = tuple(float(v) for v in args.churn.split("/")) if args.churn else None
    down, proper = presence_masks(nodes, args.rounds, args.seed, publishers, churn, args.proper_leaves, args.arrivals)
    read = time.monotonic() - clock
    params = dict(seed=args.seed, alpha=args.friends, beta=args.children, delta=args.delta,
                  mode=args.feed_summary, utility=args.utility)  # fmt: skip
    small_nodes = 40  # compiled (or loaded) on a tiny input first
    small = pairs[(pairs[:, 0] < small_nodes) & (pairs[:, 1] < 20)]
    simulate(small, small_nodes, coordinates[:small_nodes], np.arange(20) % small_nodes, 2, **params)
    clock = time.monotonic()
    rappel = Rappel(pairs, nodes, coordinates, publishers, **params)
    setup = time.monotonic() - clock
    deliveries, latency = 0, 0.0
    clock = time.monotonic()
    for r in range(1, args.rounds + 1):
        up = None if down is None else ~down[r]
        rappel.round(r, up, None if proper is None else proper[r])
        deliveries += int(rappel.tally[0])
        latency += rappel.tally[1]
    seconds = time.monotonic() - clock
    nf, covered = rappel.friends[1], rappel.friends[8]
    feeds_of = np.diff(rappel.n_start)
    mm = rappel.trees[0]
    subscribed = np.ones(len(mm), bool)
    subscribed[rappel.trees[7][:, PUB]] = False
    print(json.dumps({
        "instance": args.instance, "nodes": nodes, "feeds": len(publishers), "subscriptions": len(pairs),
        "rounds": args.rounds, "read_s": round(read, 2), "setup_s": round(setup, 3),
        "simulate_s": round(seconds, 3), "s_per_round": round(seconds / args.rounds, 4),
        "friends_avg": round(float(nf.mean()), 3),
        "covered_share": round(float(covered.sum() / max(feeds_of.sum(), 1)), 4),
        "full_coverage_nodes": int(((covered == feeds_of) & (feeds_of > 0)).sum()),
        "attached_share": round(float((mm[subscribed, PAR] >= 0).mean()), 4),
        "deliveries_last_round": int(rappel.tally[0]), "deliveries": deliveries,
        "latency_mean_ms": round(latency / max(deliveries, 1), 1),
        "last_round": dict(zip(TALLY[2:], rappel.tally[2:].astype(int).tolist())),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
