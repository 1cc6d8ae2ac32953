"""Compiled inner loops of SpiderCastM: Spark's xxhash64, one node range's proposals, acceptance.

A SpiderCastM round is a synchronous step of every open node (`overlay.design.spidercast`). A
node's proposal needs its coverage of each of its topics (a sorted merge of its topic list with
each neighbour's) and, on a greedy turn, a score for every node sharing a needy topic (a dense
counter over the subscribers of those topics, as `overlay.design.kernels` counts shared topics).
Subscriptions are in CSR form by node (`offsets`, `topics`) and by topic (`topic_offsets`,
`topic_nodes`); links as a padded neighbour table (`neighbours[p, :degree[p]]`).

Tie-breaks are Spark's `xxhash64(seed, round, a, b)` (seed and round as ints, a and b as longs),
so the overlay is the one the DataFrame reading of the rules gives, and the tests' oracle's.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from overlay.spark_hash import SPARK_SEED, hash_int, hash_long


@nb.njit(cache=True, nogil=True)
def tie_hash(seed, round_no, a, b):
    """Spark's `xxhash64(lit(seed), lit(round_no), a, b)` for int literals and long columns, signed."""
    h = hash_int(np.int64(seed), SPARK_SEED)
    h = hash_int(np.int64(round_no), h)
    h = hash_long(np.int64(a), h)
    h = hash_long(np.int64(b), h)
    return np.int64(h)


@nb.njit(cache=True, nogil=True)
def pair_hashes(seed, round_no, us, vs):
    out = np.empty(len(us), dtype=np.int64)
    for i in range(len(us)):
        out[i] = tie_hash(seed, round_no, us[i], vs[i])
    return out


@nb.njit(cache=True, nogil=True)
def _coverage(offsets, topics, neighbours, degree, p, cov):
    """cov[i] = neighbours of p subscribed to p's i-th topic (sorted merges)."""
    start, end = offsets[p], offsets[p + 1]
    cov[: end - start] = 0
    for k in range(degree[p]):
        q = neighbours[p, k]
        i, j, j_end = start, offsets[q], offsets[q + 1]
        while i < end and j < j_end:
            if topics[i] < topics[j]:
                i += 1
            elif topics[i] > topics[j]:
                j += 1
            else:
                cov[i - start] += 1
                i += 1
                j += 1


@nb.njit(cache=True, nogil=True)
def propose_range(
    offsets,
    topics,
    topic_offsets,
    topic_nodes,
    neighbours,
    degree,
    max_degree,
    greedy_coverage,
    random_coverage,
    seed,
    round_no,
    lo,
    hi,
):
    """(p, q) of the proposal of every open node p in [lo, hi) that has one (module doc of
    `overlay.design.spidercast` for the rules)."""
    nodes = len(offsets) - 1
    score = np.zeros(nodes, dtype=np.int64)
    scored = np.empty(nodes, dtype=np.int64)
    linked = np.zeros(nodes, dtype=np.bool_)
    widest = 0
    for p in range(lo, hi):
        widest = max(widest, offsets[p + 1] - offsets[p])
    cov = np.zeros(widest, dtype=np.int64)
    out_p = np.empty(hi - lo, dtype=np.int64)
    out_q = np.empty(hi - lo, dtype=np.int64)
    found = 0
    for p in range(lo, hi):
        start, end = offsets[p], offsets[p + 1]
        if start == end or degree[p] >= max_degree:
            continue  # not in the instance, or full
        for k in range(degree[p]):
            linked[neighbours[p, k]] = True
        linked[p] = True
        _coverage(offsets, topics, neighbours, degree, p, cov)
        pick = -1
        if (degree[p] + 1) % (greedy_coverage + random_coverage) != 0:  # a greedy turn
            count = 0
            for i in range(start, end):
                if cov[i - start] >= greedy_coverage:
                    continue
                t = topics[i]
                for j in range(topic_offsets[t], topic_offsets[t + 1]):
                    q = topic_nodes[j]
                    if linked[q] or degree[q] >= max_degree:
                        continue
                    if score[q] == 0:
                        scored[count] = q
                        count += 1
                    score[q] += 1
            best_score, best_hash = 0, np.int64(0)
            for k in range(count):
                q = scored[k]
                s = score[q]
                score[q] = 0
                if s < best_score:
                    continue  # the hash only breaks ties: no need to compute it
                h = tie_hash(seed, round_no, p, q)
                # max of (score, -hash, q)
                if s > best_score or h < best_hash or (h == best_hash and q > pick):
                    best_score, best_hash, pick = s, h, q
        if pick == -1:  # a random turn, or a greedy one with nothing to gain
            topic, topic_key, topic_hash = -1, 2, np.int64(0)
            for i in range(start, end):
                key = 1 if cov[i - start] >= random_coverage else 0
                h = tie_hash(seed, round_no, p, topics[i])
                if key < topic_key or (key == topic_key and h < topic_hash):
                    topic, topic_key, topic_hash = topics[i], key, h
            best_hash = np.int64(0)
            for j in range(topic_offsets[topic], topic_offsets[topic + 1]):
                q = topic_nodes[j]
                if linked[q] or degree[q] >= max_degree:
                    continue
                h = tie_hash(seed, round_no, p, q)
                # min of (hash, q)
                if pick == -1 or h < best_hash or (h == best_hash and q < pick):
                    best_hash, pick = h, q
        for k in range(degree[p]):
            linked[neighbours[p, k]] = False
        linked[p] = False
        if pick != -1:
            out_p[found] = p
            out_q[found] = pick
            found += 1
    return out_p[:found], out_q[:found]


@nb.njit(cache=True, nogil=True)
def accept(us, vs, neighbours, degree, max_degree):
    """Which proposals (u, v), in priority order, become links: each end keeps the proposals
    touching it in this order while it had free degree at the round's start; a link needs both
    ends to keep it. The accepted links are added to `neighbours` and `degree`."""
    kept = np.zeros(len(degree), dtype=np.int64)
    accepted = np.zeros(len(us), dtype=np.bool_)
    for i in range(len(us)):
        u, v = us[i], vs[i]
        accepted[i] = kept[u] < max_degree - degree[u] and kept[v] < max_degree - degree[v]
        kept[u] += 1
        kept[v] += 1
    for i in range(len(us)):
        if accepted[i]:
            u, v = us[i], vs[i]
            neighbours[u, degree[u]] = v
            neighbours[v, degree[v]] = u
            degree[u] += 1
            degree[v] += 1
    return accepted
