"""Feverfew's per-node choices (NOTES-ktco-feverfew-rappel.md §2.1-2.2): the utilities u1 and u2
and SelectLnCoveredNeighbors (Alg. 3), on one node's buffer of candidates. Pure Python over
sets: the simulator runs it per node inside a grouped pandas function, where a buffer holds at
most the similar view, the ln-covered view and the matches received (tens of nodes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping


def jaccard(mine: frozenset, theirs: frozenset) -> float:
    """|a ∩ b| / |a ∪ b|, 0 for two empty sets."""
    union = len(mine | theirs)
    return len(mine & theirs) / union if union else 0.0


def u1(subs_p: frozenset, subs_q: frozenset) -> float:
    """Eq. 1: how alike two nodes' interests are."""
    return jaccard(subs_p, subs_q)


def u2(rest_p: frozenset, subs_q: frozenset) -> float:
    """Eq. 2: how much of what p still lacks (restSub(p)) q would cover, against all q brings."""
    return jaccard(rest_p, subs_q)


def rest_sub(subs_p: frozenset, view: Iterable[int], subs_of: Mapping[int, frozenset],
             need_of: Callable[[int], int]) -> frozenset:
    """restSub(p): p's topics with fewer than need(t) subscribers of t in its view."""
    covered = dict.fromkeys(subs_p, 0)
    for q in view:
        for t in subs_of[q] & subs_p:
            covered[t] += 1
    return frozenset(t for t, n in covered.items() if n < need_of(t))


def select_ln_covered(p: int, subs_of: Mapping[int, frozenset], buffer: Iterable[int],
                      need_of: Callable[[int], int]) -> list[int]:
    """Alg. 3: the ln-covered view rebuilt from scratch out of `buffer` (SV ∪ LV ∪ MB, p and dead
    nodes already left out or dropped here), in the order chosen. Greedy: take the q of largest
    u2(p, q); ties by more of restSub covered, then the smaller id; stop when u2 is 0, the buffer
    is empty, or every topic of p is covered."""
    subs_p = subs_of[p]
    left = {q for q in buffer if q != p}
    view: list[int] = []
    covered = dict.fromkeys(subs_p, 0)
    rest = frozenset(t for t in subs_p if need_of(t) > 0)
    while rest and left:
        best = min(left, key=lambda q: (-u2(rest, subs_of[q]), -len(rest & subs_of[q]), q))
        if not rest & subs_of[best]:
            break  # u2 = 0 for every candidate left
        left.discard(best)
        view.append(best)
        for t in subs_of[best] & subs_p:
            covered[t] += 1
        rest = frozenset(t for t in rest if covered[t] < need_of(t))
    return view
