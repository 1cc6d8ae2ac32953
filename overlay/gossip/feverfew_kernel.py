"""Feverfew's cycle compiled (numba) over columnar state: the protocol of `overlay.gossip.feverfew`
(our reading: docs/readings/feverfew.md), the whole network at once, for the memory regime.

A cycle is the engine's three steps with the same sort between them: `act` writes every node's
requests, copies and matches as message rows, the rows are sorted by (dst, kind, src, seq),
`serve` walks them destination by destination and writes the answers, the answers are sorted the
same way, and `finish` rebuilds each node's views. Every draw is the keyed SplitMix64 draw of
`overlay.draws` (`overlay.draws_compiled`), so a seed gives the Python protocol's rows exactly
(`tests/test_feverfew_kernel.py` holds them equal on random instances).

State, per node: the random view as fixed-width rows (`rv_id`, `rv_age`, `rv_n`: at most
`random_view` entries, in no order: the protocol reads it as a set), the similar view and the agent
view likewise (in their order), a diffusion's four numbers per subscription slot (`own_*`, aligned
with the subscriptions' CSR), and what grows without a bound as growable rows (`ragged`: the
ln-covered view, the matches received, the copies held as (origin, topic, ttl) triples, the
pairs reported as (origin, other) pairs).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba import types
from numba.typed import Dict, List

from overlay.draws import CYCLON_ANSWER, CYCLON_SEND, GOSSIP_BOOTSTRAP, GOSSIP_PEER, UNIFORM_SAMPLE
from overlay.draws_compiled import fold, key
from overlay.gossip.event_rows import find, longer, taller
from overlay.gossip.select import ln_covered_order

NONE = -1
# Message kinds, as `overlay.gossip.feverfew` numbers them (the sort's second key).
CYCLON_REQUEST, GOSSIP_REQUEST, COPY, MATCH_ORIGIN, MATCH_PEER, CYCLON_ANSWERED, GOSSIP_ANSWERED = 1, 2, 3, 4, 5, 6, 7
# Columns of a message row: dst, kind, src, seq, topic, ttl, other, payload start, payload length.
DST, KIND, SRC, SEQ, TOPIC, TTL, OTHER, AT, LEN = range(9)


@nb.njit(cache=True, nogil=True)
def _distinct(base, count, network, skip, out):
    """`feverfew.distinct_draws`: `count` distinct nodes other than `skip`, draw(key..., k) mod N
    for k = 0, 1, ... (`base`: the draw's state after its key); how many were written into
    `out`."""
    count = min(count, network - 1)
    chosen, k = 0, 0
    while chosen < count:
        q = np.int64(fold(base, k) % np.uint64(network))
        k += 1
        if q != skip and find(out, chosen, q) < 0:
            out[chosen] = q
            chosen += 1
    return chosen


@nb.njit(cache=True, nogil=True)
def _smallest(ids, n, count, base):
    """`feverfew.smallest_draws`: the `count` ids of smallest draw(base, id), ties by id, in that
    order."""
    draws = np.empty(n, np.uint64)
    for i in range(n):
        draws[i] = fold(base, ids[i])
    order = np.empty(n, np.int64)
    for i in range(n):  # insertion sort by (draw, id): a view holds a few tens of ids
        j = i
        while j > 0:
            a, b = order[j - 1], i
            if draws[a] < draws[b] or (draws[a] == draws[b] and ids[a] < ids[b]):
                break
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    m = min(count, n)
    out = np.empty(m, np.int64)
    for i in range(m):
        out[i] = ids[order[i]]
    return out


@nb.njit(cache=True, nogil=True)
def _slot(sub_off, sub_top, node, topic):
    """Where `topic` is among the node's subscriptions (their CSR, topics ascending); -1: not one."""
    lo, hi = sub_off[node], sub_off[node + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if sub_top[mid] < topic:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < sub_off[node + 1] and sub_top[lo] == topic else -1


@nb.njit(cache=True, nogil=True)
def _subscribes(sub_off, sub_top, node, topic):
    return _slot(sub_off, sub_top, node, topic) >= 0


@nb.njit(cache=True, nogil=True)
def _mark(sub_off, sub_top, node, mark, on):
    """mark[t] = 1 + the slot of topic t among the node's subscriptions (`on`), or back to 0: the
    node's topics looked up in one step while its neighbours' are walked."""
    first = sub_off[node]
    for s in range(first, sub_off[node + 1]):
        mark[sub_top[s]] = s - first + 1 if on else 0


@nb.njit(cache=True, nogil=True)
def _rest(sub_off, sub_top, need, node, view, n, mark):
    """restSub(node) by `view[:n]`: a flag per subscription slot of the node (`mark`: its topics
    marked)."""
    first, last = sub_off[node], sub_off[node + 1]
    counts = np.zeros(last - first, np.int64)
    for i in range(n):
        q = view[i]
        if sub_off[q + 1] - sub_off[q] > 8 * (last - first):  # a hub: search the node's topics in its
            for j in range(last - first):
                counts[j] += _subscribes(sub_off, sub_top, q, sub_top[first + j])
            continue
        for b in range(sub_off[q], sub_off[q + 1]):
            j = mark[sub_top[b]]
            if j:
                counts[j - 1] += 1
    rest = np.zeros(last - first, np.bool_)
    for j in range(last - first):
        rest[j] = counts[j] < need[sub_top[first + j]]
    return rest


@nb.njit(cache=True, nogil=True)
def _jaccards(sub_off, sub_top, node, rest, rest_count, q, mark):
    """(u2, u1) of q for `node`: Jaccard of restSub(node) and sub(q), of sub(node) and sub(q)
    (`mark`: the node's topics marked)."""
    both = 0
    both_rest = 0
    first, size_q = sub_off[node], sub_off[q + 1] - sub_off[q]
    if size_q > 8 * (sub_off[node + 1] - first):  # a hub: search the node's topics in its list
        for j in range(sub_off[node + 1] - first):
            if _subscribes(sub_off, sub_top, q, sub_top[first + j]):
                both += 1
                both_rest += rest[j]
    else:
        for b in range(sub_off[q], sub_off[q + 1]):
            j = mark[sub_top[b]]
            if j:
                both += 1
                both_rest += rest[j - 1]
    union_rest = rest_count + size_q - both_rest
    union = (sub_off[node + 1] - sub_off[node]) + size_q - both
    u2 = both_rest / union_rest if union_rest else 0.0
    u1 = both / union if union else 0.0
    return u2, u1


@nb.njit(cache=True, nogil=True)
def _push(lists, counts, node, value):
    n = counts[node]
    lists[node] = longer(lists[node], n + 1)
    lists[node][n] = value
    counts[node] = n + 1


@nb.njit(cache=True, nogil=True)
def bootstrap(seed, network, random_view, rv_id, rv_age, rv_n):
    """The cycle 0 random views (`feverfew.bootstrap`)."""
    scratch = np.empty(random_view, np.int64)
    for p in range(network):
        got = _distinct(fold(key(seed, GOSSIP_BOOTSTRAP), p), random_view, network, p, scratch)
        for i in range(got):
            rv_id[p, i] = scratch[i]
            rv_age[p, i] = 0
        rv_n[p] = got


@nb.njit(cache=True, nogil=True)
def act(c, seed, uniform, shuffle, bubble, bubble_start, sub_off, sub_top, need, ttl, state, work):
    """Step 1 of cycle c for every node: the messages (rows, payload ids and ages), the pooled
    buffers, and the BubbleSample copies sent: one COPY row per holder, for its whole held list,
    pointing at (origin, topic, ttl) rows of `copies` (a copy is 24 bytes, not a message row)."""
    rv_id, rv_age, rv_n, sv_id, sv_n, av_o, av_t, av_n, lv, lv_n, mb, mb_n, held, held_n, reported, rep_n, own, keys = (
        state
    )
    target, peer, sent_ids, sent_n, buf_off, sent = work
    network = len(rv_n)
    rows = np.empty((1024, 9), np.int64)
    pay_ids = np.empty(1024, np.int64)
    pay_ages = np.empty(1024, np.int64)
    m = 0
    pay = 0
    scratch = np.empty(max(shuffle, 1), np.int64)
    mark = np.zeros(len(need), np.int64)
    buf = np.empty(1024, np.int64)
    buf_n = 0
    copies = np.empty((1024, 3), np.int64)  # origin, topic, ttl of every copy sent, by holder
    copy_n = 0
    for p in range(network):
        target[p] = NONE
        sent_n[p] = 0
        sent[p, :] = 0
        if uniform:
            got = _distinct(fold(fold(key(seed, UNIFORM_SAMPLE), c), p), shuffle, network, p, scratch)
            for i in range(got):
                rv_id[p, i] = scratch[i]
                rv_age[p, i] = 0
            rv_n[p] = got
            if got:
                target[p] = scratch[0]
        else:
            n = rv_n[p]
            for i in range(n):
                rv_age[p, i] += 1
            if n:
                best = 0
                for i in range(1, n):
                    if rv_age[p, i] > rv_age[p, best] or (
                        rv_age[p, i] == rv_age[p, best] and rv_id[p, i] < rv_id[p, best]
                    ):
                        best = i
                t = rv_id[p, best]
                target[p] = t
                others = np.empty(n - 1, np.int64)
                k = 0
                for i in range(n):
                    if i != best:
                        others[k] = rv_id[p, i]
                        k += 1
                chosen = _smallest(others, n - 1, shuffle - 1, fold(fold(key(seed, CYCLON_SEND), c), p))
                for i in range(len(chosen)):
                    sent_ids[p, i] = chosen[i]
                sent_n[p] = len(chosen)
                rows = taller(rows, m + 1)
                pay_ids = longer(pay_ids, pay + 1 + len(chosen))
                pay_ages = longer(pay_ages, pay + 1 + len(chosen))
                rows[m, DST], rows[m, KIND], rows[m, SRC], rows[m, SEQ] = t, CYCLON_REQUEST, p, 0
                rows[m, TOPIC], rows[m, TTL], rows[m, OTHER] = NONE, 0, NONE
                rows[m, AT], rows[m, LEN] = pay, 1 + len(chosen)
                pay_ids[pay], pay_ages[pay] = p, 0
                for i in range(len(chosen)):
                    q = chosen[i]
                    pay_ids[pay + 1 + i], pay_ages[pay + 1 + i] = q, rv_age[p, find(rv_id[p], n, q)]
                pay += 1 + len(chosen)
                m += 1
                sent[p, 0] += 1
        # GossipSample's peer: of the similar view, else the ln-covered view, else the random view
        if sv_n[p]:
            pool = np.sort(sv_id[p, : sv_n[p]].copy())
        elif lv_n[p]:
            pool = np.sort(lv[p][: lv_n[p]].copy())
        else:
            pool = np.sort(rv_id[p, : rv_n[p]].copy())
        peer[p] = NONE
        if len(pool):
            peer[p] = pool[np.int64(fold(fold(key(seed, GOSSIP_PEER), c), p) % np.uint64(len(pool)))]
        both = np.concatenate((rv_id[p, : rv_n[p]], sv_id[p, : sv_n[p]]))
        mine = np.unique(both)
        buf = longer(buf, buf_n + len(mine))
        buf[buf_n : buf_n + len(mine)] = mine
        buf_off[p] = buf_n
        buf_n += len(mine)
        buf_off[p + 1] = buf_n
        if peer[p] != NONE:
            rows = taller(rows, m + 1)
            pay_ids = longer(pay_ids, pay + len(mine))
            pay_ages = longer(pay_ages, pay + len(mine))
            rows[m, DST], rows[m, KIND], rows[m, SRC], rows[m, SEQ] = peer[p], GOSSIP_REQUEST, p, 0
            rows[m, TOPIC], rows[m, TTL], rows[m, OTHER] = NONE, 0, NONE
            rows[m, AT], rows[m, LEN] = pay, len(mine)
            pay_ids[pay : pay + len(mine)] = mine
            pay_ages[pay : pay + len(mine)] = 0
            pay += len(mine)
            m += 1
            sent[p, 1] += 1
        if not bubble:
            continue
        seq = 0
        first = sub_off[p]
        if c >= bubble_start:
            _mark(sub_off, sub_top, p, mark, True)
            rest = _rest(sub_off, sub_top, need, p, lv[p], lv_n[p], mark)
            _mark(sub_off, sub_top, p, mark, False)
            for j in range(len(rest)):
                if not rest[j]:
                    continue
                s = first + j
                if own[s, 0] == NONE or c >= own[s, 0] + own[s, 1]:
                    t = sub_top[s]
                    own[s, 0], own[s, 1], own[s, 2], own[s, 3] = c, ttl[t], NONE, 0
                    _push(held, held_n, p, p)
                    _push(held, held_n, p, t)
                    _push(held, held_n, p, ttl[t])
        h = held[p]
        count = held_n[p] // 3
        if target[p] != NONE and count:
            rows = taller(rows, m + 1)
            rows[m, DST], rows[m, KIND], rows[m, SRC], rows[m, SEQ] = target[p], COPY, p, seq
            rows[m, TOPIC], rows[m, TTL], rows[m, OTHER] = NONE, 0, NONE
            rows[m, AT], rows[m, LEN] = copy_n, count
            m += 1
            seq += 1
            sent[p, 2] += count
            copies = taller(copies, copy_n + count)
            for i in range(count):
                copies[copy_n + i, 0], copies[copy_n + i, 1], copies[copy_n + i, 2] = h[3 * i], h[3 * i + 1], h[3 * i + 2] - 1  # fmt: skip
            copy_n += count
        kept = 0
        for i in range(count):
            origin, t, left = h[3 * i], h[3 * i + 1], h[3 * i + 2]
            if left - 1 > 0:
                h[3 * kept], h[3 * kept + 1], h[3 * kept + 2] = origin, t, left - 1
                kept += 1
        held_n[p] = 3 * kept
        order = np.sort(rv_id[p, : rv_n[p]].copy())
        for i in range(av_n[p]):
            origin, t = av_o[p, i], av_t[p, i]
            for r in order:
                if r == origin or not _subscribes(sub_off, sub_top, r, t):
                    continue
                packed = (p * network + origin) * network + r
                if packed in keys:
                    continue
                keys[packed] = np.int8(1)
                _push(reported, rep_n, p, origin)
                _push(reported, rep_n, p, r)
                rows = taller(rows, m + 2)
                rows[m, DST], rows[m, KIND], rows[m, SRC], rows[m, SEQ] = origin, MATCH_ORIGIN, p, seq
                rows[m, TOPIC], rows[m, TTL], rows[m, OTHER] = t, 0, r
                rows[m, AT], rows[m, LEN] = pay, 0
                rows[m + 1, DST], rows[m + 1, KIND], rows[m + 1, SRC], rows[m + 1, SEQ] = r, MATCH_PEER, p, seq + 1
                rows[m + 1, TOPIC], rows[m + 1, TTL], rows[m + 1, OTHER] = t, 0, origin
                rows[m + 1, AT], rows[m + 1, LEN] = pay, 0
                m += 2
                seq += 2
                sent[p, 3] += 2
    return rows[:m], pay_ids[:pay], pay_ages[:pay], buf[:buf_n], copies[:copy_n]


@nb.njit(cache=True, nogil=True)
def _merge(rv_id, rv_age, rv_n, node, ids, ages, replaceable, size):
    """`feverfew.merge_entries` on one node's random view, in place."""
    me = node
    spare = 0
    for k in range(len(ids)):
        q, age = ids[k], ages[k]
        n = rv_n[node]
        if q == me or find(rv_id[node], n, q) >= 0:
            continue
        if n < size:
            rv_id[node, n], rv_age[node, n] = q, age
            rv_n[node] = n + 1
            continue
        while spare < len(replaceable) and find(rv_id[node], n, replaceable[spare]) < 0:
            spare += 1
        if spare < len(replaceable):
            at = find(rv_id[node], n, replaceable[spare])
            spare += 1
            rv_id[node, at], rv_age[node, at] = q, age  # the slot of the entry let go: a view is a set


@nb.njit(cache=True, nogil=True)
def serve(c, seed, shuffle, random_view, agent_view, sub_off, sub_top, rows, order, pay_ids, pay_ages, buf, copies, state, work):  # fmt: skip
    """Step 2: each destination walks its rows in (dst, kind, src, seq) order (`order`, of
    `by_destination`); the answers."""
    rv_id, rv_age, rv_n, sv_id, sv_n, av_o, av_t, av_n, lv, lv_n, mb, mb_n, held, held_n, reported, rep_n, own, keys = (
        state
    )
    target, peer, sent_ids, sent_n, buf_off, sent = work
    out = np.empty((max(len(rows), 1), 9), np.int64)
    out_ids = np.empty(1024, np.int64)
    out_ages = np.empty(1024, np.int64)
    m = 0
    pay = 0
    at_row = 0
    while at_row < len(order):
        i = order[at_row]
        q = rows[i, DST]
        start_ids = rv_id[q, : rv_n[q]].copy()
        start_ages = rv_age[q, : rv_n[q]].copy()
        while at_row < len(order) and rows[order[at_row], DST] == q:
            i = order[at_row]
            kind, r = rows[i, KIND], rows[i, SRC]
            if kind == CYCLON_REQUEST:
                base = fold(fold(fold(key(seed, CYCLON_ANSWER), c), q), r)
                answer = _smallest(start_ids, len(start_ids), shuffle, base)
                out_ids = longer(out_ids, pay + len(answer))
                out_ages = longer(out_ages, pay + len(answer))
                for k in range(len(answer)):
                    out_ids[pay + k] = answer[k]
                    out_ages[pay + k] = start_ages[find(start_ids, len(start_ids), answer[k])]
                out[m, DST], out[m, KIND], out[m, SRC], out[m, SEQ] = r, CYCLON_ANSWERED, q, 0
                out[m, TOPIC], out[m, TTL], out[m, OTHER], out[m, AT], out[m, LEN] = NONE, 0, NONE, pay, len(answer)
                pay += len(answer)
                m += 1
                sent[q, 0] += 1
                at, length = rows[i, AT], rows[i, LEN]
                _merge(
                    rv_id, rv_age, rv_n, q, pay_ids[at : at + length], pay_ages[at : at + length], answer, random_view
                )
            elif kind == GOSSIP_REQUEST:
                first, last = buf_off[q], buf_off[q + 1]
                out_ids = longer(out_ids, pay + last - first)
                out_ages = longer(out_ages, pay + last - first)
                out_ids[pay : pay + last - first] = buf[first:last]
                out_ages[pay : pay + last - first] = 0
                out[m, DST], out[m, KIND], out[m, SRC], out[m, SEQ] = r, GOSSIP_ANSWERED, q, 0
                out[m, TOPIC], out[m, TTL], out[m, OTHER], out[m, AT], out[m, LEN] = NONE, 0, NONE, pay, last - first
                pay += last - first
                m += 1
                sent[q, 1] += 1
            elif kind == COPY:  # r's held copies, in its order
                for j in range(rows[i, AT], rows[i, AT] + rows[i, LEN]):
                    origin, t, left = copies[j, 0], copies[j, 1], copies[j, 2]
                    if origin != q:
                        found = False
                        for k in range(av_n[q]):
                            if av_o[q, k] == origin and av_t[q, k] == t:
                                found = True
                                break
                        if not found:
                            if av_n[q] == agent_view:  # first in, first out
                                for k in range(1, agent_view):
                                    av_o[q, k - 1], av_t[q, k - 1] = av_o[q, k], av_t[q, k]
                                av_n[q] -= 1
                            av_o[q, av_n[q]], av_t[q, av_n[q]] = origin, t
                            av_n[q] += 1
                    if left > 0:
                        _push(held, held_n, q, origin)
                        _push(held, held_n, q, t)
                        _push(held, held_n, q, left)
            else:  # a match
                other = rows[i, OTHER]
                if find(mb[q], mb_n[q], other) < 0:
                    _push(mb, mb_n, q, other)
                if kind == MATCH_ORIGIN:
                    s = _slot(sub_off, sub_top, q, rows[i, TOPIC])
                    if s >= 0 and own[s, 0] != NONE and own[s, 0] < c:  # not a match of an earlier diffusion
                        own[s, 3] += 1
                        if own[s, 2] == NONE:
                            own[s, 2] = c
            at_row += 1
    return out[:m], out_ids[:pay], out_ages[:pay]


@nb.njit(cache=True, nogil=True)
def _pool(p, buf, buf_off, answers, ans_order, ans_start, ans_ids, requests, req_order, req_start, pay_ids):
    """The distinct ids p heard this cycle, ascending: its buffer, its peer's gossip answer and its
    requesters' gossip."""
    size = buf_off[p + 1] - buf_off[p]
    for k in range(ans_start[p], ans_start[p + 1]):
        if answers[ans_order[k], KIND] == GOSSIP_ANSWERED:
            size += answers[ans_order[k], LEN]
    for k in range(req_start[p], req_start[p + 1]):
        if requests[req_order[k], KIND] == GOSSIP_REQUEST:
            size += requests[req_order[k], LEN]
    pool = np.empty(size, np.int64)
    size = buf_off[p + 1] - buf_off[p]
    pool[:size] = buf[buf_off[p] : buf_off[p + 1]]
    for k in range(ans_start[p], ans_start[p + 1]):
        i = ans_order[k]
        if answers[i, KIND] == GOSSIP_ANSWERED:
            at, length = answers[i, AT], answers[i, LEN]
            pool[size : size + length] = ans_ids[at : at + length]
            size += length
    for k in range(req_start[p], req_start[p + 1]):
        i = req_order[k]
        if requests[i, KIND] == GOSSIP_REQUEST:
            at, length = requests[i, AT], requests[i, LEN]
            pool[size : size + length] = pay_ids[at : at + length]
            size += length
    return np.unique(pool)


@nb.njit(cache=True, nogil=True)
def finish(c, params, sub_off, sub_top, need, requests, req_order, req_start, pay_ids, answers, ans_order, ans_start, ans_ids, ans_ages, buf, state, work, covered, needy):  # fmt: skip
    """Step 3: each node merges its Cyclon answer, chooses its similar view from everything it
    heard, and every `delta` cycles rebuilds its ln-covered view (Alg. 3); the coverage it gives
    (`covered`: a flag per subscription slot, `needy`: topics of two subscribers or more)."""
    random_view, similar_view, delta, clear_similar = params
    rv_id, rv_age, rv_n, sv_id, sv_n, av_o, av_t, av_n, lv, lv_n, mb, mb_n, held, held_n, reported, rep_n, own, keys = (
        state
    )
    target, peer, sent_ids, sent_n, buf_off, sent = work
    network = len(rv_n)
    mark = np.zeros(len(need), np.int64)
    for p in range(network):
        for k in range(ans_start[p], ans_start[p + 1]):
            i = ans_order[k]
            if answers[i, KIND] == CYCLON_ANSWERED:
                at, length, n = answers[i, AT], answers[i, LEN], rv_n[p]
                gone = find(rv_id[p], n, target[p])
                if gone >= 0:  # the contacted node leaves the view; its answer takes the slots of what p sent
                    rv_id[p, gone], rv_age[p, gone] = rv_id[p, n - 1], rv_age[p, n - 1]
                    rv_n[p] = n - 1
                _merge(rv_id, rv_age, rv_n, p, ans_ids[at : at + length], ans_ages[at : at + length], sent_ids[p, : sent_n[p]], random_view)  # fmt: skip
        first, last = sub_off[p], sub_off[p + 1]
        _mark(sub_off, sub_top, p, mark, True)
        rest = _rest(sub_off, sub_top, need, p, lv[p], lv_n[p], mark)
        rest_count = 0
        for j in range(len(rest)):
            rest_count += rest[j]
        # SelectSimilarNeighbors: by (u2 desc, u1 desc, id asc), u2 > 0, over the pool: p's buffer,
        # its requesters' and its peer's answer (a node with nothing left to cover has u2 = 0 for all)
        take = 0
        if rest_count > 0:
            pool = _pool(p, buf, buf_off, answers, ans_order, ans_start, ans_ids, requests, req_order, req_start, pay_ids)  # fmt: skip
            ids = np.empty(len(pool), np.int64)
            u2s = np.empty(len(pool), np.float64)
            u1s = np.empty(len(pool), np.float64)
            k = 0
            for q in pool:
                if q == p:
                    continue
                u2, u1 = _jaccards(sub_off, sub_top, p, rest, rest_count, q, mark)
                if u2 > 0.0:
                    ids[k], u2s[k], u1s[k] = q, u2, u1
                    k += 1
            # ids ascending already (the pool is sorted): two stable sorts give (u2 desc, u1 desc, id asc)
            order = np.argsort(-u1s[:k], kind="mergesort")
            order = order[np.argsort(-u2s[order], kind="mergesort")]
            take = min(k, similar_view)
            for a in range(take):
                sv_id[p, a] = ids[order[a]]
        sv_n[p] = take
        if c % delta == 0:
            both = np.concatenate((sv_id[p, :take], lv[p][: lv_n[p]], mb[p][: mb_n[p]]))
            candidates = np.unique(both)
            kept = 0
            for a in range(len(candidates)):
                if candidates[a] != p:
                    candidates[kept] = candidates[a]
                    kept += 1
            candidates = candidates[:kept]
            member = np.zeros((kept, last - first), np.bool_)
            sizes = np.empty(kept, np.int64)
            for a in range(kept):
                q = candidates[a]
                sizes[a] = sub_off[q + 1] - sub_off[q]
                if sizes[a] > 8 * (last - first):
                    for j in range(last - first):
                        member[a, j] = _subscribes(sub_off, sub_top, q, sub_top[first + j])
                    continue
                for b in range(sub_off[q], sub_off[q + 1]):
                    j = mark[sub_top[b]]
                    if j:
                        member[a, j - 1] = True
            needs = np.empty(last - first, np.int64)
            for j in range(last - first):
                needs[j] = need[sub_top[first + j]]
            chosen = ln_covered_order(member, sizes, needs)
            lv[p] = longer(lv[p], len(chosen))
            for a in range(len(chosen)):
                lv[p][a] = candidates[chosen[a]]
            lv_n[p] = len(chosen)
            mb_n[p] = 0
            if clear_similar:
                sv_n[p] = 0
        rest = _rest(sub_off, sub_top, need, p, lv[p], lv_n[p], mark)
        _mark(sub_off, sub_top, p, mark, False)
        needy[p] = 0
        for j in range(last - first):
            wanted = need[sub_top[first + j]] > 0
            needy[p] += wanted
            covered[first + j] = wanted and not rest[j]


@nb.njit(cache=True, nogil=True)
def ragged(offsets, values, nodes):
    """Growable rows (a list of arrays and their used lengths) from a list column's offsets and
    values."""
    lists = List()
    counts = np.zeros(nodes, np.int64)
    for p in range(nodes):
        n = offsets[p + 1] - offsets[p]
        row = np.empty(max(n, 4), np.int64)
        row[:n] = values[offsets[p] : offsets[p + 1]]
        lists.append(row)
        counts[p] = n
    return lists, counts


@nb.njit(cache=True, nogil=True)
def flat(lists, counts, sort, width):
    """A ragged row set as (offsets in items, values): each row's items of `width` values,
    sorted by their values (lexicographically) when `sort`."""
    nodes = len(counts)
    offsets = np.zeros(nodes + 1, np.int64)
    for p in range(nodes):
        offsets[p + 1] = offsets[p] + counts[p]
    values = np.empty(offsets[nodes], np.int64)
    for p in range(nodes):
        n = counts[p]
        row = lists[p][:n]
        if sort and width == 1:
            row = np.sort(row)
        elif sort:  # pairs: by the first value, then the second
            items = n // width
            order = np.argsort(row[0::width] * (np.int64(1) << 31) + row[1::width], kind="mergesort")
            sorted_row = np.empty(n, np.int64)
            for i in range(items):
                for w in range(width):
                    sorted_row[i * width + w] = row[order[i] * width + w]
            row = sorted_row
        values[offsets[p] : offsets[p] + n] = row
    return offsets, values


@nb.njit(cache=True, nogil=True)
def reported_keys(reported, rep_n, network):
    """The pairs every node reported, packed (node, origin, other) for the membership test."""
    keys = Dict.empty(key_type=types.int64, value_type=types.int8)
    for p in range(len(rep_n)):
        row = reported[p]
        for i in range(rep_n[p] // 2):
            keys[(p * network + row[2 * i]) * network + row[2 * i + 1]] = np.int8(1)
    return keys


@nb.njit(cache=True, nogil=True)
def by_destination(rows, network):
    """The rows' order by (dst, kind, src, seq) and where each destination's rows start (n + 1):
    a stable counting sort by (dst, kind), since every step writes its rows by source ascending
    and a source's in seq order."""
    kinds = 8
    counts = np.zeros(network * kinds + 1, np.int64)
    for i in range(len(rows)):
        counts[rows[i, DST] * kinds + rows[i, KIND] + 1] += 1
    for k in range(1, len(counts)):
        counts[k] += counts[k - 1]
    starts = np.empty(network + 1, np.int64)
    for v in range(network + 1):
        starts[v] = counts[v * kinds] if v < network else counts[network * kinds]
    order = np.empty(len(rows), np.int64)
    for i in range(len(rows)):
        key = rows[i, DST] * kinds + rows[i, KIND]
        order[counts[key]] = i
        counts[key] += 1
    return order, starts
