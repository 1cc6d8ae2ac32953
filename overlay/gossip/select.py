"""Feverfew's per-node choices (docs/readings/feverfew.md#utilities, #select): the utilities u1 and
u2 and SelectLnCoveredNeighbors (Alg. 3), on one node's buffer of candidates: a few tens of nodes in
the simulator (the similar and ln-covered views and the matches received), every node sharing a
topic in Global Feverfew (thousands on a dense instance). Alg. 3 runs over a boolean matrix
(candidates x p's topics), one vectorised pass per node taken."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numba as nb
import numpy as np


def jaccard(mine: frozenset, theirs: frozenset) -> float:
    """|a ∩ b| / |a ∪ b|, 0 for two empty sets (the union counted, not built: this is the
    simulator's innermost call)."""
    both = len(mine & theirs)
    union = len(mine) + len(theirs) - both
    return both / union if union else 0.0


def u1(subs_p: frozenset, subs_q: frozenset) -> float:
    """Eq. 1: how alike two nodes' interests are."""
    return jaccard(subs_p, subs_q)


def u2(rest_p: frozenset, subs_q: frozenset) -> float:
    """Eq. 2: how much of what p still lacks (restSub(p)) q would cover, against all q brings."""
    return jaccard(rest_p, subs_q)


def rest_sub(
    subs_p: frozenset, view: Iterable[int], subs_of: Mapping[int, frozenset], need_of: Callable[[int], int]
) -> frozenset:
    """restSub(p): p's topics with fewer than need(t) subscribers of t in its view."""
    covered = dict.fromkeys(subs_p, 0)
    for q in view:
        for t in subs_of[q] & subs_p:
            covered[t] += 1
    return frozenset(t for t, n in covered.items() if n < need_of(t))


def select_ln_covered(
    p: int, subs_of: Mapping[int, frozenset], buffer: Iterable[int], need_of: Callable[[int], int]
) -> list[int]:
    """Alg. 3: the ln-covered view rebuilt from scratch out of `buffer` (SV ∪ LV ∪ MB, p and dead
    nodes already left out or dropped here), in the order chosen. Greedy: take the q of largest
    u2(p, q); ties by more of restSub covered, then the smaller id; stop when u2 is 0, the buffer
    is empty, or every topic of p is covered."""
    mine = sorted(subs_of[p])
    column = {t: j for j, t in enumerate(mine)}
    candidates = np.array(sorted({q for q in buffer if q != p}), dtype=np.int64)
    member = np.zeros((len(candidates), len(mine)), dtype=bool)
    sizes = np.zeros(len(candidates), dtype=np.int64)
    for i, q in enumerate(candidates.tolist()):
        theirs = subs_of[q]
        sizes[i] = len(theirs)
        member[i, [column[t] for t in theirs & subs_of[p]]] = True
    need = np.array([need_of(t) for t in mine], dtype=np.int64)
    return ln_covered_choice(candidates, member, sizes, need)


def ln_covered_choice(candidates: np.ndarray, member: np.ndarray, sizes: np.ndarray, need: np.ndarray) -> list[int]:
    """Alg. 3 over a membership matrix: `candidates` ascending ids, `member[i, j]`: candidate i
    subscribes p's j-th topic, `sizes[i]` = |sub(candidate i)|, `need[j]`: need of that topic.
    u2 = |rest ∩ sub(q)| / (|rest| + |sub(q)| - |rest ∩ sub(q)|), the same division of the same
    integers as `u2`, so ties are ties here too. Compiled (`ln_covered_order`): the simulator
    calls it once per node and cycle on a few tens of candidates, where numpy's per-call cost
    was most of a Feverfew cycle."""
    order = ln_covered_order(
        np.ascontiguousarray(member, dtype=np.bool_),
        np.ascontiguousarray(sizes, dtype=np.int64),
        np.ascontiguousarray(need, dtype=np.int64),
    )
    return [int(candidates[i]) for i in order]


@nb.njit(cache=True, nogil=True)
def ln_covered_order(member: np.ndarray, sizes: np.ndarray, need: np.ndarray) -> np.ndarray:
    """The rows Alg. 3 takes, in order: each time the row left of largest u2 against the topics
    still short of their need; among equal u2 the one covering more of them, then the first row;
    none once u2 is 0 for every row left, no row is left, or every topic is covered. Each row's
    topics are listed once, so a pick costs the rows' topic lists, not rows x topics."""
    rows, topics = member.shape
    offsets = np.zeros(rows + 1, dtype=np.int64)
    for i in range(rows):
        offsets[i + 1] = offsets[i] + member[i].sum()
    listed = np.empty(offsets[rows], dtype=np.int64)
    for i in range(rows):
        k = offsets[i]
        for j in range(topics):
            if member[i, j]:
                listed[k] = j
                k += 1
    covered = np.zeros(topics, dtype=np.int64)
    rest = need > 0
    left = np.ones(rows, dtype=np.bool_)
    order = np.empty(rows, dtype=np.int64)
    taken = 0
    rest_count = 0
    for j in range(topics):
        rest_count += rest[j]
    while rest_count > 0 and taken < rows:
        best, best_score, best_inter = -1, -1.0, -1
        for i in range(rows):
            if not left[i]:
                continue
            inter = 0
            for k in range(offsets[i], offsets[i + 1]):
                inter += rest[listed[k]]
            score = inter / (rest_count + sizes[i] - inter)
            if score > best_score or (score == best_score and inter > best_inter):
                best, best_score, best_inter = i, score, inter
        if best_score <= 0.0:
            break  # u2 = 0 for every row left
        left[best] = False
        order[taken] = best
        taken += 1
        for k in range(offsets[best], offsets[best + 1]):
            j = listed[k]
            covered[j] += 1
            if rest[j] and covered[j] >= need[j]:
                rest[j] = False
                rest_count -= 1
    return order[:taken]
