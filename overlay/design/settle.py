"""The bounded driver step of a greedy round: settle one sample of candidates exactly.

A round (see `overlay.design.greedy`) brings to the driver a *sample* of the eligible candidates,
with their gains exact at the start of the round, and what bounds every candidate left out:

* `first_left`: the best key (gain desc, u, v) of any eligible candidate not sampled;
* per node x, a *tail*: the key of x's first candidate left out; every unsampled pair (x, y) ranks
  at or after both tails. An unsampled pair is eligible only while both ends are live, so the
  best unsampled eligible key ranks at or after the *second* best tail of a live node. As nodes
  fill up (a matching phase), their tails stop counting and this bound falls.

Settling is a lazy greedy over the sample under the key order: pop the best entry; if its gain is
stale (computed before the last link was added) recompute it and push it back (gains only
fall); a fresh entry at the top beats every other sampled entry and is added only if it also
ranks before the outside bound (`exact`), or, in the relaxed mode, if its gain is within a factor
(1 + epsilon) of that bound. So in the exact mode every link is *the* key-maximal eligible link
of the whole candidate table at its step: the canonical greedy sequence, whatever the sample.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from overlay.design.classes import ComponentClasses
from overlay.design.eligibility import Eligibility

Key = tuple[int, int, int]  # (gain, u, v)


def ranks_before(gain: int, u: int, v: int, other: Key) -> bool:
    """Whether (gain, u, v) comes strictly before `other` in key order."""
    return gain > other[0] or (gain == other[0] and (u, v) < (other[1], other[2]))


@dataclass
class Sample:
    """What a round brings to the driver: sampled rows and the bounds of the rest."""

    us: np.ndarray
    vs: np.ndarray
    gains: np.ndarray  # exact at the start of the round
    tail_nodes: np.ndarray  # nodes with a tail, in key order of their tails
    tail_keys: list[Key]
    first_left: Key | None

    @classmethod
    def build(cls, us, vs, gains, tail_nodes, tail_gains, tail_us, tail_vs, first_left) -> "Sample":
        """From arrays; `tail_nodes` distinct, with their tails' keys in the other arrays."""
        by_key = np.lexsort((tail_vs, tail_us, -tail_gains))
        keys = list(zip(tail_gains[by_key].tolist(), tail_us[by_key].tolist(), tail_vs[by_key].tolist()))
        return cls(us, vs, gains, tail_nodes[by_key], keys, first_left)

    def __len__(self) -> int:
        return len(self.us)


class OutsideBound:
    """The best key an eligible, unsampled candidate can have, as the round adds links."""

    def __init__(self, sample: Sample, live: Callable[[int], bool]) -> None:
        self.nodes = sample.tail_nodes.tolist()
        self.keys = sample.tail_keys
        self.first_left = sample.first_left
        self.live = live
        self.first, self.second = 0, 1

    def key(self) -> Key | None:
        if self.first_left is None:
            return None
        nodes, live = self.nodes, self.live
        while self.first < len(nodes) and not live(nodes[self.first]):
            self.first += 1
        self.second = max(self.second, self.first + 1)
        while self.second < len(nodes) and not live(nodes[self.second]):
            self.second += 1
        if self.second >= len(nodes):
            return None  # fewer than two live nodes have candidates left out
        tail = self.keys[self.second]
        first_left = self.first_left
        return tail if ranks_before(first_left[0], first_left[1], first_left[2], tail) else first_left


@dataclass
class Settled:
    accepted: list[tuple[int, int, int]]  # (u, v, gain) in the order added
    exhausted: bool  # no candidate eligible in the rule's phase has a positive gain any more
    stopped_by_outside: bool
    reevaluations: int


def settle(
    sample: Sample,
    classes: ComponentClasses,
    rule: Eligibility,
    edges_left: int | None = None,
    epsilon: float | None = None,
    last_phase: int | None = None,
) -> Settled:
    """Add links from `sample` while each provably is the best eligible link overall (or, with
    `epsilon`, within a factor 1 + epsilon of it). `classes` and `rule` are updated as links are
    added. `edges_left`: how many more links the budget allows, or None. `last_phase`: the
    sample holds every candidate eligible up to that phase of a phased rule, so a phase that runs
    dry opens the next one in the same round, up to it."""
    heap = list(zip((-sample.gains).tolist(), sample.us.tolist(), sample.vs.tolist(), [0] * len(sample)))
    heapq.heapify(heap)
    waiting: list[tuple[int, int, int, int]] = []  # ineligible in this phase, maybe not in the next
    version = 0
    accepted: list[tuple[int, int, int]] = []
    reevaluations = 0
    stopped_by_outside = False
    while True:
        outside = OutsideBound(sample, rule.live)
        while heap and (edges_left is None or len(accepted) < edges_left):
            negative_gain, u, v, seen = heap[0]
            if not rule.allows(u, v):
                waiting.append(heapq.heappop(heap))
                continue
            if seen != version:
                reevaluations += 1
                gain = classes.gain(u, v)
                if gain == 0:
                    heapq.heappop(heap)
                else:
                    heapq.heapreplace(heap, (-gain, u, v, version))
                continue
            gain = -negative_gain
            bound = outside.key()
            if bound is not None:
                beats = ranks_before(gain, u, v, bound) if epsilon is None else gain * (1.0 + epsilon) >= bound[0]
                if not beats:
                    stopped_by_outside = True
                    break
            heapq.heappop(heap)
            merged = classes.merge(u, v)
            if merged != gain:
                raise AssertionError(f"gain of ({u}, {v}) was {gain} but the link joined {merged} classes")
            rule.accept(u, v)
            accepted.append((u, v, gain))
            version += 1
        budget_spent = edges_left is not None and len(accepted) >= edges_left
        dry = not heap and not budget_spent and outside.key() is None
        if dry and last_phase is not None and rule.phase < last_phase and rule.next_phase():
            heap, waiting = waiting, []
            heapq.heapify(heap)
            continue
        return Settled(accepted, dry, stopped_by_outside, reevaluations)
