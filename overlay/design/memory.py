"""The in-memory regime of the greedy engine: the whole greedy compiled, in the driver process.

Where an instance's candidate state fits a memory budget (`conf/lab.yaml`, `design.memory_budget`),
the engine builds the candidate pairs in memory from the driver copy of the subscriptions and runs
the level sweep of `overlay.design.sweep` over them: no Spark job per round, no candidate table
re-read. It runs in the driver because the greedy is one sequential computation that needs the
driver's copy of the classes and rule anyway, and because its output, the ordered links, is what
the driver stores: a task would add a Python worker's start and a trip of the state there and
back, and hold the same memory on one executor instead.

A "round" of this regime is one call of the sweep: it ends at a degree phase's end or after
`round_links` links, so long runs report progress and commit resumable points like the batched
rounds do. The links are the canonical greedy sequence, the same as the batched rounds'.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np

from overlay.design import kernels, sweep
from overlay.design.classes import BlockClasses, Classes, ComponentClasses, Subscriptions
from overlay.design.eligibility import DegreePhases, Eligibility
from overlay.design.pairs import by_topic, by_topic_and_class

BYTES_PER_PAIR = 16  # a pair's code (8 bytes), twice over while a level's list doubles
BYTES_PER_SUBSCRIPTION = 96  # the CSR and its transpose, the components or GM2's forest
ROUND_LINKS = 100_000  # links one call of the sweep adds at most (a round of this regime)
NO_ARRAY = np.zeros(0, dtype=np.int64)
NO_FLAGS = np.zeros(0, dtype=np.bool_)


def pair_bound(
    subscriptions: Subscriptions, topic_offsets: np.ndarray | None = None, group_sizes: np.ndarray | None = None
) -> int:
    """An upper bound on the candidate pairs, without counting them: pairs share a topic, so
    there are at most sum_t C(|V(t)|, 2) of them, at most C(|V|, 2), and node u is in at most
    min(|V| - 1, sum over its topics of |V(t)| - 1). `group_sizes`: each subscription row's class
    size after a start's links (`start_label`): then a row's partners are those outside its class."""
    if topic_offsets is None:
        topic_offsets, _ = by_topic(subscriptions)
    sizes = np.diff(topic_offsets)
    nodes = subscriptions.nodes
    partners = sizes[subscriptions.topics] - (1 if group_sizes is None else group_sizes)
    by_topics = int(partners.sum()) // 2
    running = np.concatenate([[0], np.cumsum(partners)])
    per_node = running[subscriptions.offsets[1:]] - running[subscriptions.offsets[:-1]]
    by_nodes = int(np.minimum(per_node, max(0, nodes - 1)).sum()) // 2
    return min(by_topics, by_nodes, nodes * (nodes - 1) // 2)


def start_label(classes: Classes) -> np.ndarray | None:
    """Each subscription row's topic component, when a start's links joined any (else None): the
    pair counts then leave out the pairs with no topic apart, whose gain is 0 for good (gains never
    grow), and count each pair's gain at the start, exact. An incremental design's start joins
    nearly every topic, so this is most of its work saved (docs/concepts/day-two.md)."""
    if not isinstance(classes, ComponentClasses) or classes.components == classes.subscriptions.rows:
        return None
    kernels.flatten(classes.parent)
    return classes.parent.copy()


def grouped_transpose(subscriptions: Subscriptions, label: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """(topic offsets, topic nodes, group_lo, group_hi): `pairs.by_topic`, or `by_topic_and_class`."""
    if label is None:
        return (*by_topic(subscriptions), NO_ARRAY, NO_ARRAY)
    return by_topic_and_class(subscriptions, label)


def state_bytes(subscriptions: Subscriptions, pairs: int) -> int:
    """What the in-memory regime holds for this many candidate pairs."""
    return pairs * BYTES_PER_PAIR + subscriptions.rows * BYTES_PER_SUBSCRIPTION


def supported(rule: Eligibility, classes: Classes) -> bool:
    """Whether the sweep has compiled forms of this rule and relation."""
    return rule.compiled() is not None and isinstance(classes, (ComponentClasses, BlockClasses))


def closed_nodes(rule: Eligibility) -> np.ndarray:
    """A flag per node that can take no link in this run (GPM's at the degree budget already), or
    empty: `sweep.build_levels` leaves their pairs out."""
    if isinstance(rule, DegreePhases) and rule.max_degree is not None and len(rule.degrees):
        full = rule.degrees >= rule.max_degree
        if full.any():
            return full
    return NO_FLAGS


class MemorySweep:
    """The state of one in-memory greedy: candidate levels, relation and rule; `calls()` runs it."""

    def __init__(
        self,
        subscriptions: Subscriptions,
        rule: Eligibility,
        classes: Classes,
        max_edges: int | None,
        edges_total: int,
        round_links: int = ROUND_LINKS,
        bound: int | None = None,
        transpose: tuple[np.ndarray, ...] | None = None,
        preferred: np.ndarray = NO_ARRAY,
    ) -> None:
        """`bound`: `pair_bound` of the subscriptions, and `transpose`: `grouped_transpose` of them
        against `classes`, when the caller computed them already. `preferred`: sorted pair indices
        (u * nodes + v) that go first among equal gains (`sweep.level_of`), or empty."""
        self.subscriptions, self.rule, self.classes = subscriptions, rule, classes
        self.max_edges, self.round_links = max_edges, round_links
        if transpose is None:
            transpose = grouped_transpose(subscriptions, start_label(classes))
        topic_offsets, topic_nodes, group_lo, group_hi = transpose
        grouped = len(group_lo) > 0
        top = int(np.diff(subscriptions.offsets).max()) if subscriptions.nodes else 0
        if bound is None:
            bound = pair_bound(subscriptions, topic_offsets, group_hi - group_lo if grouped else None)
        # Stamps need a bound on the links before the pairs are counted: the pair bound serves.
        self.stamp_bits = sweep.stamp_bits_for(subscriptions.nodes, bound + edges_total)
        # Counted against a start's classes, a pair's level is its exact gain now: stamped current.
        stamp = (edges_total + 1) & ((1 << self.stamp_bits) - 1) if grouped else 0
        self.levels, self.sizes = sweep.build_levels(
            subscriptions.offsets,
            subscriptions.topics,
            topic_offsets,
            topic_nodes,
            group_lo,
            group_hi,
            max(top, 1),
            self.stamp_bits,
            stamp,
            preferred,
            closed_nodes(rule),
        )
        self.preferred = preferred
        self.pairs = int(self.sizes[1:].sum())
        self.topics = (
            subscriptions.topics.astype(np.int32)
            if subscriptions.topics.max(initial=0) < 1 << 31
            else subscriptions.topics
        )
        self.ordered = self.sizes.copy()  # built in (u, v) order
        self.state = np.zeros(sweep.STATE_SLOTS, dtype=np.int64)
        self.state[sweep.PHASE] = max(rule.phase, 1)
        self.state[sweep.LEVEL] = sweep.top_level(self.sizes)
        self.state[sweep.EDGES] = edges_total
        self.state[sweep.COMPONENTS] = classes.components

    def _relation(self) -> tuple:
        classes = self.classes
        if isinstance(classes, ComponentClasses):
            label, following, class_size = sweep.labels_of(classes.parent)
            return (
                sweep.COMPONENTS_RELATION,
                label,
                following,
                class_size,
                NO_ARRAY,
                NO_ARRAY,
                NO_ARRAY,
                NO_ARRAY,
                NO_ARRAY,
                NO_ARRAY,
                NO_ARRAY,
                NO_ARRAY,
                classes.topics,
                0,
            )
        return (
            sweep.BLOCKS_RELATION,
            NO_ARRAY,
            NO_ARRAY,
            NO_ARRAY,
            classes.state,
            classes.pblock,
            classes.bparent,
            classes.bhead,
            classes.comp,
            classes.comp_size,
            classes.vmark,
            classes.bmark,
            classes.topics,
            classes.shared_topics,
        )

    @property
    def alive(self) -> int:
        return int(self.sizes[1:].sum())

    def calls(self) -> Iterator[tuple[int, list[tuple[int, int, int]], int, int, float]]:
        """Each call of the sweep: (phase it ran in, links (u, v, gain), refreshes, visits, seconds)."""
        rule = self.rule.compiled()
        relation = self._relation()
        s = self.subscriptions
        state = self.state
        while not state[sweep.FINISHED]:
            clock = time.monotonic()
            phase = int(state[sweep.PHASE])
            refreshes, visits = int(state[sweep.REFRESHES]), int(state[sweep.VISITS])
            budget = self.round_links
            if self.max_edges is not None:
                budget = max(1, min(budget, self.max_edges - int(state[sweep.EDGES])))
            us, vs, gains, owners, phases = sweep.sweep(
                self.levels,
                self.sizes,
                self.ordered,
                state,
                s.nodes,
                s.offsets,
                self.topics,
                *relation,
                rule.kind,
                rule.degrees,
                rule.max_degree,
                rule.fragment,
                rule.neighbours,
                rule.position,
                rule.mask,
                rule.state,
                self.max_edges or 0,
                budget,
                self.stamp_bits,
                self.preferred,
            )
            if isinstance(self.classes, ComponentClasses):  # the classes as the rounds regime holds them
                sweep.parent_of(relation[1], self.classes.parent)
                self.classes.components = int(state[sweep.COMPONENTS])
            if isinstance(self.rule, DegreePhases):
                self.rule.phase = int(state[sweep.PHASE])
            links = list(zip(us.tolist(), vs.tolist(), gains.tolist()))
            self.rule.absorb(rule, links, owners.tolist(), phases.tolist())
            yield (
                phase,
                links,
                int(state[sweep.REFRESHES]) - refreshes,
                int(state[sweep.VISITS]) - visits,
                time.monotonic() - clock,
            )


def estimate(subscriptions: Subscriptions, transpose: tuple[np.ndarray, ...] | None = None) -> tuple[int, int]:
    """(pair bound, state bytes at that bound): what deciding the regime needs, without counting.
    `transpose`: `grouped_transpose` against the engine's classes after its start's links."""
    topic_offsets, _, group_lo, group_hi = transpose or grouped_transpose(subscriptions, None)
    pairs = pair_bound(subscriptions, topic_offsets, group_hi - group_lo if len(group_lo) else None)
    return pairs, state_bytes(subscriptions, pairs)


def parse_bytes(text: str) -> int:
    """'512m', '4g' -> bytes (the size grammar of Spark's memory settings)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    number, unit = text[:-1], text[-1].lower()
    if unit not in units or not number.isdigit():
        raise ValueError(f"a size is digits and one of k, m, g, t, got {text!r}")
    return int(number) * units[unit]


def human_bytes(count: int) -> str:
    if count < 1 << 20:
        return f"{math.ceil(count / 1024)} KiB"
    if count < 1 << 30:
        return f"{count / (1 << 20):.0f} MiB"
    return f"{count / (1 << 30):.1f} GiB"
