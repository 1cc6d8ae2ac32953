"""The bounded driver step of a greedy round: settle one batch of candidates exactly.

A round samples the K eligible candidates with the highest gain bounds to the driver together
with their evidence: for every shared topic where the two endpoints are in different components
at the start of the round, the pair of component keys (topic, component) of u and of v. The gain
of a pair is then the number of its evidence rows whose two keys are still apart, which a small
union-find over component keys answers as edges are accepted within the round.

Settling is a lazy greedy over the batch under one total order, the *key*
(gain descending, u ascending, v ascending):

* pop the best entry; if its gain is stale (computed before the last acceptance), recompute it
  and push it back: gains only fall, so a stale gain is an upper bound;
* a fresh entry at the top beats every other batch entry; it is accepted only if it also beats
  `outside`, the key of the best eligible candidate *not* in the batch, whose bound is at least
  the gain of everything outside. Otherwise the round ends, and the next one samples again.

So every accepted edge is *the* key-maximal eligible edge at its step, in the whole candidate
table, not just in the batch: the output is the canonical greedy sequence whatever the batch size,
and a resumed run, which restarts from coarser bounds, makes exactly the same choices.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

Key = tuple[int, int, int]  # (gain or bound, u, v)


class EligibilityRule(Protocol):
    """A constraint on which pairs may still be added, kept on the driver (for instance the ring
    of GSwicoS, or the finger slots of GSwicoL). Eligibility may only shrink as edges are added:
    that is what keeps the `outside` bound of a batch valid through the round."""

    def allows(self, u: int, v: int) -> bool: ...

    def accept(self, u: int, v: int) -> None: ...


def ranks_before(gain: int, u: int, v: int, other: Key) -> bool:
    """Whether (gain, u, v) comes strictly before `other` in key order."""
    return gain > other[0] or (gain == other[0] and (u, v) < (other[1], other[2]))


@dataclass
class Batch:
    """Candidates sampled to the driver. `pairs[i] = (u, v)`; the evidence of pair i is
    `zip(a[starts[i]:starts[i+1]], b[...])`: one (key of u's component, key of v's component)
    per shared topic where they differ at the start of the round. Arrays, not lists: a batch
    can carry millions of evidence rows and most are never looked at one by one."""

    pairs: list[tuple[int, int]]
    starts: np.ndarray
    a: np.ndarray
    b: np.ndarray
    degrees: dict[int, int] = field(default_factory=dict)
    outside: Key | None = None

    @classmethod
    def from_lists(cls, pairs, evidence, degrees=None, outside=None) -> "Batch":
        starts = np.concatenate([[0], np.cumsum([len(ev) for ev in evidence])]).astype(np.int64)
        flat = [pair for ev in evidence for pair in ev]
        a = np.array([x for x, _ in flat], dtype=np.int64)
        b = np.array([y for _, y in flat], dtype=np.int64)
        return cls(list(pairs), starts, a, b, dict(degrees or {}), outside)

    def evidence(self, i: int) -> list[tuple[int, int]]:
        lo, hi = int(self.starts[i]), int(self.starts[i + 1])
        return list(zip(self.a[lo:hi].tolist(), self.b[lo:hi].tolist()))


@dataclass
class Settled:
    accepted: list[tuple[int, int, int]]  # (u, v, gain) in the order they were added
    gains: list[int]  # every batch pair's gain after the round (0 for accepted ones)
    exhausted: bool  # no eligible positive-gain candidate is left anywhere
    relabel: dict[int, int]  # component key -> the smallest key of its merged component
    reevaluations: int
    stopped_by_outside: bool  # a batch entry could not be shown to beat the best outside one
    phase: int | None = None  # the degree limit the round ended in (phased rounds)


class _ComponentForest:
    """Union-find over component keys; the root of a set is its smallest key."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, key: int) -> int:
        parent = self.parent
        root = key
        while root in parent:
            root = parent[root]
        while key in parent and parent[key] != root:
            parent[key], key = root, parent[key]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def settle(
    batch: Batch,
    max_degree: int | None,
    edges_left: int | None,
    last_phase: int | None = None,
    rule: EligibilityRule | None = None,
) -> Settled:
    """Accept edges from `batch` while each is provably the best eligible edge overall.

    `max_degree`: the phase's degree limit D (an edge is eligible while both ends have degree
    below D), or None. `edges_left`: how many more edges the budget allows, or None.
    `last_phase`: when the batch holds every candidate eligible under that degree limit (no
    `outside`), a phase that runs dry moves on to the next one, up to `last_phase`, in the same
    round: late MinMaxODA phases add a few edges each. `rule`: a further constraint, told of
    every accepted edge.
    """
    forest = _ComponentForest()
    degrees = dict(batch.degrees)
    evidence_cache: dict[int, list[tuple[int, int]]] = {}
    phase = max_degree
    last_phase = phase if last_phase is None or batch.outside is not None else last_phase

    def evidence(i: int) -> list[tuple[int, int]]:
        if i not in evidence_cache:
            evidence_cache[i] = batch.evidence(i)
        return evidence_cache[i]

    def gain_of(i: int) -> int:
        find = forest.find
        return sum(1 for a, b in evidence(i) if find(a) != find(b))

    def eligible(u: int, v: int) -> bool:
        if rule is not None and not rule.allows(u, v):
            return False
        if phase is None:
            return True
        return degrees.get(u, 0) < phase and degrees.get(v, 0) < phase

    version = 0
    counts = np.diff(batch.starts).tolist()
    heap = [(-counts[i], u, v, i, 0) for i, (u, v) in enumerate(batch.pairs)]
    heapq.heapify(heap)
    waiting: list[tuple[int, int, int, int, int]] = []
    accepted: list[tuple[int, int, int]] = []
    accepted_index: list[int] = []
    reevaluations = 0
    stopped_by_outside = False
    while True:
        while heap and (edges_left is None or len(accepted) < edges_left):
            negative_gain, u, v, i, seen = heap[0]
            if not eligible(u, v):
                waiting.append(heapq.heappop(heap))
                continue
            if seen != version:
                reevaluations += 1
                heapq.heapreplace(heap, (-gain_of(i), u, v, i, version))
                continue
            gain = -negative_gain
            if gain == 0:
                break
            if batch.outside is not None and not ranks_before(gain, u, v, batch.outside):
                stopped_by_outside = True
                break
            heapq.heappop(heap)
            for a, b in evidence(i):
                forest.union(a, b)
            degrees[u] = degrees.get(u, 0) + 1
            degrees[v] = degrees.get(v, 0) + 1
            if rule is not None:
                rule.accept(u, v)
            accepted.append((u, v, gain))
            accepted_index.append(i)
            version += 1
        budget_spent = edges_left is not None and len(accepted) >= edges_left
        if stopped_by_outside or budget_spent or phase is None or phase >= last_phase:
            break
        phase += 1  # phase ran dry and the batch holds all its candidates: the next phase
        heap.extend(waiting)
        heapq.heapify(heap)
        waiting = []
    exhausted = not budget_spent and not stopped_by_outside and batch.outside is None
    relabel = {key: forest.find(key) for key in list(forest.parent)}
    gains = _gains_after(batch, relabel)
    gains[accepted_index] = 0
    return Settled(accepted, gains.tolist(), exhausted, relabel, reevaluations, stopped_by_outside, phase)


def _gains_after(batch: Batch, relabel: dict[int, int]) -> np.ndarray:
    """Every batch pair's gain once the components in `relabel` are merged (vectorised)."""
    counts = np.diff(batch.starts)
    if not relabel or len(batch.a) == 0:
        return counts.astype(np.int64)
    old = np.fromiter(relabel.keys(), dtype=np.int64, count=len(relabel))
    new = np.fromiter(relabel.values(), dtype=np.int64, count=len(relabel))
    order = np.argsort(old)
    old, new = old[order], new[order]

    def root(keys: np.ndarray) -> np.ndarray:
        at = np.clip(np.searchsorted(old, keys), 0, len(old) - 1)
        return np.where(old[at] == keys, new[at], keys)

    apart = root(batch.a) != root(batch.b)
    owner = np.repeat(np.arange(len(batch.pairs)), counts)
    return np.bincount(owner, weights=apart, minlength=len(batch.pairs)).astype(np.int64)
