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

The loop is compiled (`settle_sample`), over the same flat forms of the rule and the relation
that the in-memory sweep uses (`Eligibility.compiled`, the classes' arrays, updated in place):
a round's sample holds up to millions of rows, and most of them reach the top of the heap only
to wait for a later phase.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from overlay.design import blocks, kernels, sweep
from overlay.design.classes import BlockClasses, Classes, ComponentClasses
from overlay.design.eligibility import Eligibility

Key = tuple[int, int, int]  # (gain, u, v)
NO_ARRAY = np.zeros(0, dtype=np.int64)
# info[...] slots of a settle
EXHAUSTED, STOPPED_BY_OUTSIDE, REEVALUATIONS, PHASE, JOINED, ADDED = range(6)


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
    def build(cls, us, vs, gains, tail_nodes, tail_gains, tail_us, tail_vs, first_left) -> Sample:
        """From arrays; `tail_nodes` distinct, with their tails' keys in the other arrays."""
        by_key = np.lexsort((tail_vs, tail_us, -tail_gains))
        keys = list(zip(tail_gains[by_key].tolist(), tail_us[by_key].tolist(), tail_vs[by_key].tolist()))
        return cls(us, vs, gains, tail_nodes[by_key], keys, first_left)

    def __len__(self) -> int:
        return len(self.us)

    def tail_arrays(self) -> np.ndarray:
        """The tails' keys as a (3, tails) int64 array (gain, u, v), in key order."""
        return np.array(self.tail_keys, dtype=np.int64).reshape(-1, 3).T.copy()


@dataclass
class Settled:
    accepted: list[tuple[int, int, int]]  # (u, v, gain) in the order added
    exhausted: bool  # no candidate eligible in the rule's phase has a positive gain any more
    stopped_by_outside: bool
    reevaluations: int


@nb.njit(cache=True, nogil=True)
def _before(ga, ua, va, gb, ub, vb):
    return ga > gb or (ga == gb and (ua < ub or (ua == ub and va < vb)))


@nb.njit(cache=True, nogil=True)
def _sift_down(heap, size, at, gains, us, vs):
    item = heap[at]
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _before(
            gains[heap[right]], us[heap[right]], vs[heap[right]], gains[heap[child]], us[heap[child]], vs[heap[child]]
        ):
            child = right
        if not _before(gains[heap[child]], us[heap[child]], vs[heap[child]], gains[item], us[item], vs[item]):
            break
        heap[at] = heap[child]
        at = child
    heap[at] = item


@nb.njit(cache=True, nogil=True)
def _heapify(heap, size, gains, us, vs):
    for at in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, at, gains, us, vs)


@nb.njit(cache=True, nogil=True)
def _live(rule, x, phase, degrees, rule_state):
    """Whether x can still be an end of an eligible pair (`Eligibility.live`)."""
    if rule == sweep.DEGREE_RULE:
        return degrees[x] < phase
    if rule == sweep.RING_RULE:
        return not sweep._ring_complete(rule_state) and degrees[x] < 2
    return True


@nb.njit(cache=True, nogil=True)
def _allows(rule, u, v, phase, degrees, max_degree, fragment, position, mask, rule_state):
    """`Eligibility.allows`: the pair may be added now (the ring's closing pair included)."""
    if rule == sweep.DEGREE_RULE:
        return degrees[u] < phase and degrees[v] < phase
    if rule == sweep.RING_RULE:
        if sweep._ring_complete(rule_state) or degrees[u] >= 2 or degrees[v] >= 2:
            return False
        if kernels.find(fragment, u) != kernels.find(fragment, v):
            return True
        return rule_state[sweep.RING_EDGES] == rule_state[sweep.RING_NODES] - 1 and rule_state[sweep.RING_NODES] >= 3
    if rule == sweep.SLOT_RULE:
        return (
            sweep._eligibility(rule, u, v, phase, degrees, max_degree, fragment, position, mask, rule_state)
            == sweep.ELIGIBLE
        )
    return True


@nb.njit(cache=True, nogil=True)
def outside_key(tail_nodes, tails, has_first_left, first_left, rule, phase, degrees, rule_state, cursor):
    """The best key an eligible unsampled candidate can have: the later of the first left out
    and the second best tail of a live node; (-1, -1, -1) when fewer than two live nodes
    have candidates left out. `cursor` (first, second) moves on as nodes stop being live."""
    if not has_first_left:
        return -1, -1, -1
    first, second = cursor[0], cursor[1]
    count = len(tail_nodes)
    while first < count and not _live(rule, tail_nodes[first], phase, degrees, rule_state):
        first += 1
    second = max(second, first + 1)
    while second < count and not _live(rule, tail_nodes[second], phase, degrees, rule_state):
        second += 1
    cursor[0], cursor[1] = first, second
    if second >= count:
        return -1, -1, -1
    g, u, v = tails[0, second], tails[1, second], tails[2, second]
    if _before(first_left[0], first_left[1], first_left[2], g, u, v):
        return g, u, v  # an unsampled pair ranks at or after both: the later of the two bounds
    return first_left[0], first_left[1], first_left[2]


@nb.njit(cache=True, nogil=True)
def _gain(relation, offsets, topics, parent, pblock, bparent, bhead, comp, comp_size, vmark, bmark, forest_state, u, v):
    if relation == sweep.COMPONENTS_RELATION:
        return kernels.pair_gain(offsets, topics, parent, u, v)
    return blocks.pair_gain(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, forest_state, u, v)


@nb.njit(cache=True, nogil=True)
def _merge(
    relation, offsets, topics, parent, pblock, bparent, bhead, comp, comp_size, vmark, bmark, forest_state, u, v
):
    if relation == sweep.COMPONENTS_RELATION:
        return kernels.merge_pair(offsets, topics, parent, u, v)
    return blocks.merge_pair(offsets, topics, pblock, bparent, bhead, comp, comp_size, vmark, bmark, forest_state, u, v)


@nb.njit(cache=True, nogil=True)
def settle_sample(
    us,
    vs,
    sampled_gains,
    tail_nodes,
    tails,
    has_first_left,
    first_left,
    relation,
    offsets,
    topics,
    parent,
    pblock,
    bparent,
    bhead,
    comp,
    comp_size,
    vmark,
    bmark,
    forest_state,
    rule,
    degrees,
    max_degree,
    fragment,
    neighbours,
    position,
    mask,
    rule_state,
    phase,
    last_phase,
    edges_left,
    epsilon,
    info,
):
    """The lazy greedy over one sample (module docstring); the links (u, v, gain) in order, with
    the slot rule's finger (owner, phase) of each. `edges_left` < 0: no budget; `epsilon` < 0:
    exact. The relation's and the rule's arrays are updated in place; `info` gets the rest."""
    count = len(us)
    gains = sampled_gains.copy()
    seen = np.zeros(count, dtype=np.int64)  # the number of links there were when the gain was computed
    heap = np.arange(count, dtype=np.int64)
    size = count
    _heapify(heap, size, gains, us, vs)
    waiting = np.empty(count, dtype=np.int64)  # not allowed in this phase, maybe in a later one
    waited = 0
    room = count + 1 if edges_left < 0 else min(count, edges_left) + 1
    out_u = np.empty(room, dtype=np.int64)
    out_v = np.empty(room, dtype=np.int64)
    out_g = np.empty(room, dtype=np.int64)
    out_owner = np.empty(room, dtype=np.int64)
    out_phase = np.empty(room, dtype=np.int64)
    added = 0
    joined_all = 0
    reevaluations = 0
    stopped_by_outside = False
    cursor = np.zeros(2, dtype=np.int64)
    while True:
        cursor[0], cursor[1] = 0, 1
        while size > 0 and (edges_left < 0 or added < edges_left):
            top = heap[0]
            u, v = us[top], vs[top]
            if not _allows(rule, u, v, phase, degrees, max_degree, fragment, position, mask, rule_state):
                waiting[waited] = top
                waited += 1
                size -= 1
                heap[0] = heap[size]
                _sift_down(heap, size, 0, gains, us, vs)
                continue
            if seen[top] != added:
                reevaluations += 1
                gain = _gain(
                    relation,
                    offsets,
                    topics,
                    parent,
                    pblock,
                    bparent,
                    bhead,
                    comp,
                    comp_size,
                    vmark,
                    bmark,
                    forest_state,
                    u,
                    v,
                )
                if gain == 0:
                    size -= 1
                    heap[0] = heap[size]
                else:
                    gains[top], seen[top] = gain, added
                _sift_down(heap, size, 0, gains, us, vs)
                continue
            gain = gains[top]
            bg, bu, bv = outside_key(
                tail_nodes, tails, has_first_left, first_left, rule, phase, degrees, rule_state, cursor
            )
            if bg >= 0:
                beats = _before(gain, u, v, bg, bu, bv) if epsilon < 0 else gain * (1.0 + epsilon) >= bg
                if not beats:
                    stopped_by_outside = True
                    break
            size -= 1
            heap[0] = heap[size]
            _sift_down(heap, size, 0, gains, us, vs)
            joined = _merge(
                relation,
                offsets,
                topics,
                parent,
                pblock,
                bparent,
                bhead,
                comp,
                comp_size,
                vmark,
                bmark,
                forest_state,
                u,
                v,
            )
            if joined != gain:
                raise AssertionError("a link joined a different number of classes than its gain")
            joined_all += joined
            out_owner[added], out_phase[added] = sweep._accept(
                rule, u, v, degrees, fragment, neighbours, position, mask, rule_state
            )
            out_u[added], out_v[added], out_g[added] = u, v, gain
            added += 1
        budget_spent = edges_left >= 0 and added >= edges_left
        dry = False
        if size == 0 and not budget_spent:
            dry = (
                outside_key(tail_nodes, tails, has_first_left, first_left, rule, phase, degrees, rule_state, cursor)[0]
                < 0
            )
        if dry and rule == sweep.DEGREE_RULE and phase < last_phase:
            phase += 1  # the sample holds every candidate eligible up to last_phase: open the next phase
            heap[:waited] = waiting[:waited]
            size, waited = waited, 0
            _heapify(heap, size, gains, us, vs)
            continue
        info[EXHAUSTED], info[STOPPED_BY_OUTSIDE] = 1 if dry else 0, 1 if stopped_by_outside else 0
        info[REEVALUATIONS] = reevaluations
        info[PHASE], info[JOINED], info[ADDED] = phase, joined_all, added
        return out_u[:added], out_v[:added], out_g[:added], out_owner[:added], out_phase[:added]


def _relation(classes: Classes) -> tuple:
    s = classes.subscriptions
    if isinstance(classes, ComponentClasses):
        return (sweep.COMPONENTS_RELATION, s.offsets, s.topics, classes.parent) + (NO_ARRAY,) * 8
    if isinstance(classes, BlockClasses):
        return (
            sweep.BLOCKS_RELATION,
            s.offsets,
            s.topics,
            NO_ARRAY,
            classes.pblock,
            classes.bparent,
            classes.bhead,
            classes.comp,
            classes.comp_size,
            classes.vmark,
            classes.bmark,
            classes.state,
        )
    raise TypeError(f"no compiled form of the relation {type(classes).__name__}")


def _compiled(rule: Eligibility):
    compiled = rule.compiled()
    if compiled is None:
        raise TypeError(f"the rule {type(rule).__name__} has no compiled form (Eligibility.compiled)")
    return compiled


def outside_bound(sample: Sample, rule: Eligibility) -> Key | None:
    """The outside bound of `sample` under the rule as it stands (None: nothing bounds)."""
    compiled = _compiled(rule)
    first_left = np.array(sample.first_left or (0, 0, 0), dtype=np.int64)
    key = outside_key(
        sample.tail_nodes.astype(np.int64),
        sample.tail_arrays(),
        sample.first_left is not None,
        first_left,
        compiled.kind,
        max(rule.phase, 1),
        compiled.degrees,
        compiled.state,
        np.array([0, 1], dtype=np.int64),
    )
    return None if key[0] < 0 else tuple(int(x) for x in key)


def settle(
    sample: Sample,
    classes: Classes,
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
    compiled = _compiled(rule)
    phase = max(rule.phase, 1)
    first_left = np.array(sample.first_left or (0, 0, 0), dtype=np.int64)
    info = np.zeros(6, dtype=np.int64)
    us, vs, gains, owners, phases = settle_sample(
        sample.us.astype(np.int64),
        sample.vs.astype(np.int64),
        sample.gains.astype(np.int64),
        sample.tail_nodes.astype(np.int64),
        sample.tail_arrays(),
        sample.first_left is not None,
        first_left,
        *_relation(classes),
        compiled.kind,
        compiled.degrees,
        compiled.max_degree,
        compiled.fragment,
        compiled.neighbours,
        compiled.position,
        compiled.mask,
        compiled.state,
        phase,
        max(phase, last_phase or phase),
        -1 if edges_left is None else edges_left,
        -1.0 if epsilon is None else float(epsilon),
        info,
    )
    if isinstance(classes, ComponentClasses):
        classes.components -= int(info[JOINED])
    if rule.phase:
        rule.phase = int(info[PHASE])
    links = list(zip(us.tolist(), vs.tolist(), gains.tolist()))
    rule.absorb(compiled, links, owners.tolist(), phases.tolist())
    return Settled(links, bool(info[EXHAUSTED]), bool(info[STOPPED_BY_OUTSIDE]), int(info[REEVALUATIONS]))
