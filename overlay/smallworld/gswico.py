"""GSwicoS and GSwicoL (BeaConvey Alg. 1): greedy small-world, interest-close overlays.

Both add, one at a time, the edge of highest gain (TCCs merged, as in GPA / GPM) among the edges
still allowed, with ties broken by the smallest (u, v):

* GSwicoS grows a Hamiltonian circle. An edge is allowed while both ends have degree < 2 and lie
  on different path fragments (the last edge closes the circle). When no allowed edge has a
  positive gain, the fragments are joined in the order of their smallest node, with zero-gain
  edges (ties broken any way), and the circle is closed. Positions run along the circle from
  node 0 towards its smaller neighbour.
* GSwicoL adds long fingers on top of the ring. Finger slots are (node, phase), phase >= 1;
  a pair {u, v} is allowed while u's slot for v's phase or v's slot for u's phase is free (the
  gain is a property of the undirected link, so the two directed choices tie; u's slot is taken
  when free). When no allowed pair has a positive gain, every free slot gets its Chord finger
  (position + 2^i), which has gain 0 like every other choice then.

Both run on the project's greedy engine (`overlay.design.greedy`) with their own eligibility
rule, in memory (the rules' compiled forms) where the candidate state fits, else in rounds. The rules' state is one small integer per node on the driver (degree and fragment; or a
slot mask), handed to the executors each round as a vectorised row filter: the deliberate,
bounded driver step, O(|V|), never O(|I|).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.baselines import numbered_links
from overlay.design.classes import Subscriptions
from overlay.design.eligibility import CompiledRule, Eligibility, RowFilter
from overlay.design.greedy import MEMORY_BUDGET, GreedyEngine, Regime
from overlay.design.pairs import SHARED, shared_topic_counts
from overlay.design.sweep import RING_EDGES, RING_RULE, SLOT_RULE
from overlay.frames import local_frame
from overlay.lineage import LOCAL, Lineage
from overlay.progress import OnStep, report
from overlay.smallworld.baselines import (
    chord_fingers,
    random_fingers,
    random_ring,
    successor_fingers,
)
from overlay.smallworld.fingers import undirected_links
from overlay.smallworld.geometry import phase_count, phase_of

log = logging.getLogger(__name__)

Counts = Callable[[], DataFrame]  # the shared-topic counts, computed on first call


@dataclass
class GreedyLinks:
    """Links a greedy stage added: (u, v, gain, round) in the order added."""

    links: list[tuple[int, int, int, int]] = field(default_factory=list)
    rounds: int = 0


@dataclass
class RingFilter(RowFilter):
    degree: np.ndarray
    fragment: np.ndarray
    closing: bool
    complete: bool

    def eligible(self, us, vs):
        if self.complete:
            return np.zeros(len(us), dtype=bool)
        open_ends = (self.degree[us] < 2) & (self.degree[vs] < 2)
        return open_ends & ((self.fragment[us] != self.fragment[vs]) | self.closing)

    def dead(self, us, vs):
        return (self.degree[us] >= 2) | (self.degree[vs] >= 2) | self.complete


class RingRule(Eligibility):
    """GSwicoS: edges that can still be part of a Hamiltonian circle of the n nodes."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.degree = np.zeros(n, dtype=np.int64)
        self.parent = np.arange(n, dtype=np.int64)
        self.neighbours = np.full((n, 2), -1, dtype=np.int64)
        self.edges = 0

    @property
    def target_edges(self) -> int:
        return self.n if self.n >= 3 else max(self.n - 1, 0)

    @property
    def complete(self) -> bool:
        return self.edges >= self.target_edges

    def find(self, x: int) -> int:
        parent = self.parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return int(root)

    def allows(self, u: int, v: int) -> bool:
        if self.complete or self.degree[u] >= 2 or self.degree[v] >= 2:
            return False
        if self.find(u) != self.find(v):
            return True
        return self.edges == self.n - 1 and self.n >= 3  # the two ends of a Hamiltonian path

    def accept(self, u: int, v: int) -> None:
        for a, b in ((u, v), (v, u)):
            self.neighbours[a, self.degree[a]] = b
            self.degree[a] += 1
        ru, rv = self.find(u), self.find(v)
        self.parent[max(ru, rv)] = min(ru, rv)
        self.edges += 1

    def live(self, x: int) -> bool:
        return not self.complete and self.degree[x] < 2

    def open_nodes(self, lookahead: int = 1) -> np.ndarray:
        return np.flatnonzero(self.degree < 2)  # none once the circle is closed

    def compiled(self) -> CompiledRule:
        state = np.array([self.edges, self.n], dtype=np.int64)
        return CompiledRule(
            RING_RULE, degrees=self.degree, fragment=self.parent, neighbours=self.neighbours, state=state
        )

    def absorb(self, compiled: CompiledRule, links, owners, phases) -> None:
        self.edges = int(compiled.state[RING_EDGES])

    def row_filter(self, lookahead: int = 1) -> RowFilter:
        fragment = self.parent.copy()
        while True:  # point every node at its fragment's root
            hop = fragment[fragment]
            if np.array_equal(hop, fragment):
                break
            fragment = hop
        return RingFilter(self.degree.copy(), fragment, self.edges == self.n - 1 and self.n >= 3, self.complete)

    def fragments(self) -> list[list[int]]:
        """The path fragments (isolated nodes included), each from its smaller end, ordered by
        smallest node. Only before the circle is closed."""
        seen = np.zeros(self.n, dtype=bool)
        paths = []
        for start in range(self.n):
            if seen[start] or self.degree[start] == 2:
                continue
            path, previous, current = [start], -1, start
            seen[start] = True
            while True:
                nxt = next((int(x) for x in self.neighbours[current, : self.degree[current]] if x != previous), None)
                if nxt is None:
                    break
                path.append(nxt)
                seen[nxt] = True
                previous, current = current, nxt
            paths.append(path)
        return sorted(paths, key=min)

    def positions(self) -> list[tuple[int, int]]:
        """(node, position) along the closed circle: node 0 first, then its smaller neighbour."""
        order = [0]
        if self.n >= 2:
            previous, current = 0, int(min(self.neighbours[0, : self.degree[0]]))
            while current != 0 and len(order) < self.n:
                order.append(current)
                nxt = next(int(x) for x in self.neighbours[current, : self.degree[current]] if x != previous)
                previous, current = current, nxt
        return [(node, position) for position, node in enumerate(order)]


@dataclass
class SlotFilter(RowFilter):
    position: np.ndarray
    mask: np.ndarray
    n: int

    def _free(self, owner, other):
        distance = (self.position[other] - self.position[owner]) % self.n
        phase = np.zeros(len(distance), dtype=np.int64)
        for i in range(1, phase_count(self.n)):
            phase += distance >= (1 << i)
        return (self.mask[owner] >> phase) & 1 == 0

    def eligible(self, us, vs):
        return self._free(us, vs) | self._free(vs, us)

    def dead(self, us, vs):
        return ~self.eligible(us, vs)  # slots only fill up


class SlotRule(Eligibility):
    """GSwicoL: a pair is allowed while one end still has a free finger slot for the other's phase."""

    def __init__(self, positions: np.ndarray, n: int) -> None:
        self.n = n
        self.k = phase_count(n)
        self.position = positions
        self.mask = np.ones(n, dtype=np.int64)  # bit i set: slot of phase i taken; phase 0 is the ring
        self.fingers: list[tuple[int, int, int]] = []  # (node, phase, finger)

    def _phase(self, a: int, b: int) -> int:
        return phase_of(int((self.position[b] - self.position[a]) % self.n))

    def _free(self, a: int, phase: int) -> bool:
        return not (int(self.mask[a]) >> phase) & 1

    def allows(self, u: int, v: int) -> bool:
        return self._free(u, self._phase(u, v)) or self._free(v, self._phase(v, u))

    def accept(self, u: int, v: int) -> None:
        owner, other = (u, v) if self._free(u, self._phase(u, v)) else (v, u)
        phase = self._phase(owner, other)
        self.mask[owner] |= 1 << phase
        self.fingers.append((owner, phase, other))

    def row_filter(self, lookahead: int = 1) -> RowFilter:
        return SlotFilter(self.position, self.mask.copy(), self.n)

    def compiled(self) -> CompiledRule:
        return CompiledRule(SLOT_RULE, position=self.position, mask=self.mask)

    def absorb(self, compiled: CompiledRule, links, owners, phases) -> None:
        for (u, v, _), owner, phase in zip(links, owners, phases):
            self.fingers.append((owner, phase, v if owner == u else u))


def _constrained_greedy(
    spark: SparkSession,
    subscriptions: Subscriptions,
    counts: Counts,
    initial_links: list[tuple[int, int]],
    rule: Eligibility,
    name: str,
    batch_size: int | None,
    first_round: int = 1,
    on_step: OnStep | None = None,
    per_node: int | None = None,
    regime: Regime = "auto",
    memory_budget: int = MEMORY_BUDGET,
    lineage: Lineage = LOCAL,
) -> tuple[GreedyLinks, GreedyEngine]:
    """Add max-gain allowed links until no allowed candidate has a positive gain; returns the
    links and the engine (its classes are the final topic components). `on_step` hears of every
    round (stage `NAME round`: links added, links so far, TcoSuppR; the engine's own figures)."""
    engine = GreedyEngine(
        spark,
        subscriptions,
        rule,
        initial_links=initial_links,
        shared_counts=counts,
        batch_size=batch_size,
        per_node=per_node,
        first_round=first_round,
        name=name,
        regime=regime,
        memory_budget=memory_budget,
        lineage=lineage,
    )
    result = GreedyLinks()
    for r in engine.rounds():
        result.links.extend((u, v, gain, r.round) for u, v, gain in r.edges)
        result.rounds += 1
        report(
            on_step,
            f"{name} round",
            r.round,
            seconds=r.seconds,
            figures={"added": len(r.edges), "links": len(result.links), "TcoSuppR": round(r.tco_support, 4)},
        )
    return result, engine


@dataclass
class SmallWorld:
    """A small-world overlay: ring positions, directed fingers and the undirected links in the
    order they were chosen (u < v, gain or None, round)."""

    ring: DataFrame  # (node_id, position)
    fingers: DataFrame  # (node_id, phase, finger, chosen_by)
    links: DataFrame  # (u, v, added_order, round, gain)
    rounds: int


def shared_counts(
    spark, subscriptions: Subscriptions, parallelism: int | None = None, lineage: Lineage = LOCAL
) -> Counts:
    """The shared-topic counts for both greedy stages, computed once when the first stage that
    runs in rounds asks (the in-memory regime builds its own; `parallelism`: see
    `shared_topic_counts`)."""
    return functools.cache(
        lambda: lineage.cut(shared_topic_counts(spark, subscriptions, parallelism=parallelism).select(S.U, S.V, SHARED))
    )


def gswico_ring(
    spark: SparkSession,
    subscriptions: Subscriptions,
    counts: Counts,
    batch_size: int | None = None,
    on_step: OnStep | None = None,
    per_node: int | None = None,
    regime: Regime = "auto",
    memory_budget: int = MEMORY_BUDGET,
    lineage: Lineage = LOCAL,
) -> tuple[list[tuple[int, int]], GreedyLinks]:
    """GSwicoS: the (node, position) pairs of the greedy circle and its links in order."""
    n = subscriptions.nodes
    rule = RingRule(n)
    stage, engine = _constrained_greedy(
        spark,
        subscriptions,
        counts,
        [],
        rule,
        "gswico-s",
        batch_size,
        on_step=on_step,
        per_node=per_node,
        regime=regime,
        memory_budget=memory_budget,
        lineage=lineage,
    )
    if not rule.complete:
        fill_round = stage.rounds + 1
        paths = rule.fragments()
        ends = [(path[-1], paths[(i + 1) % len(paths)][0]) for i, path in enumerate(paths)]
        joins, closing = ends[:-1], ends[-1]
        for a, b in joins:  # zero gain: nothing allowed had a positive gain
            rule.accept(a, b)
            stage.links.append((min(a, b), max(a, b), 0, fill_round))
        if n >= 3:
            a, b = closing
            stage.links.append((min(a, b), max(a, b), engine.classes.gain(min(a, b), max(a, b)), fill_round))
            rule.accept(a, b)
        stage.rounds += 1
    return rule.positions(), stage


def gswico_fingers(
    spark: SparkSession,
    subscriptions: Subscriptions,
    counts: Counts,
    positions: list[tuple[int, int]],
    ring_links: list[tuple[int, int]],
    batch_size: int | None = None,
    first_round: int = 1,
    on_step: OnStep | None = None,
    per_node: int | None = None,
    regime: Regime = "auto",
    memory_budget: int = MEMORY_BUDGET,
    lineage: Lineage = LOCAL,
) -> tuple[list[tuple[int, int, int]], GreedyLinks]:
    """GSwicoL: greedy long fingers (node, phase, finger) on a given ring, and their links in
    order. Free slots left when gains run out are filled by the caller (Chord fingers)."""
    n = subscriptions.nodes
    position = np.zeros(n, dtype=np.int64)
    for node, at in positions:
        position[node] = at
    rule = SlotRule(position, n)
    stage, _ = _constrained_greedy(
        spark,
        subscriptions,
        counts,
        ring_links,
        rule,
        "gswico-l",
        batch_size,
        first_round,
        on_step,
        per_node,
        regime,
        memory_budget,
        lineage,
    )
    return rule.fingers, stage


SHORT_KINDS = ("gswico", "random")
LONG_KINDS = ("gswico", "chord", "random")


def overlay_type(short: str, long: str) -> str:
    """The overlay's name in BeaConvey Table 2: SL, S, L or -."""
    return ("S" if short == "gswico" else "") + ("L" if long == "gswico" else "") or "-"


def _ordered_fingers(spark, rows: list[tuple[int, int, int, int, int | None, int]], chosen_by: str) -> DataFrame:
    """Fingers picked by a greedy stage: (node, phase, finger, seq, gain, round)."""
    frame = local_frame(
        spark, rows, f"{S.NODE_ID} long, {S.PHASE} int, {S.FINGER} long, _seq long, {S.GAIN} long, {S.ROUND} int"
    )
    return frame.withColumn(S.CHOSEN_BY, F.lit(chosen_by))


def _plain(fingers: DataFrame, chosen_by: str, round_no: int) -> DataFrame:
    return fingers.select(
        S.NODE_ID,
        S.PHASE,
        S.FINGER,
        F.lit(None).cast("long").alias("_seq"),
        F.lit(0 if chosen_by == "fill" else None).cast("long").alias(S.GAIN),
        F.lit(round_no).alias(S.ROUND),
        F.lit(chosen_by).alias(S.CHOSEN_BY),
    )


def small_world_overlay(
    subscriptions: DataFrame,
    n: int,
    short: str,
    long: str,
    seed: int = 1,
    batch_size: int | None = None,
    on_step: OnStep | None = None,
    per_node: int | None = None,
    parallelism: int | None = None,
    regime: Regime = "auto",
    memory_budget: int = MEMORY_BUDGET,
    lineage: Lineage = LOCAL,
) -> SmallWorld:
    """One of the four overlay types of BeaConvey Table 2 over nodes 0..n-1.

    `short`: gswico (GSwicoS) or random (RandomS); `long`: gswico (GSwicoL), chord or random
    (RandomL). Links are numbered in the order they were chosen: the ring first, then the long
    fingers; links of a baseline or of the zero-gain fill come after the greedy ones, by
    (phase, position).

    `lineage`: how the greedy rounds and the ring and fingers are kept (reliable checkpoints on a
    cluster). `on_step` (optional) hears of every greedy round (stages `gswico-s round`, `gswico-l round`)
    and of every phase done (stage `phase`: the driver copy when a part is greedy, the
    ring, the long fingers), with figures the code has at hand: no Spark job is added for them.
    """
    if short not in SHORT_KINDS or long not in LONG_KINDS:
        raise ValueError(f"unknown small-world overlay short={short!r} long={long!r}")
    spark = subscriptions.sparkSession
    greedy_stages = "gswico" in (short, long)
    phases, clock = 3 if greedy_stages else 2, time.monotonic()

    def phase_done(step: int, **figures) -> None:
        nonlocal clock
        report(on_step, "phase", step, total=phases, figures=figures, seconds=time.monotonic() - clock)
        clock = time.monotonic()

    driver_copy = Subscriptions.collect(subscriptions, n) if greedy_stages else None
    counts = shared_counts(spark, driver_copy, parallelism, lineage) if greedy_stages else None
    if greedy_stages:
        phase_done(1, **{"driver copy": "done", "subscriptions": driver_copy.rows})
    rounds = 0
    seq = 0
    if short == "gswico":
        positions, stage = gswico_ring(
            spark, driver_copy, counts, batch_size, on_step, per_node, regime, memory_budget, lineage
        )
        ring = lineage.cut(local_frame(spark, positions, f"{S.NODE_ID} long, {S.POSITION} long"))
        rounds = stage.rounds
        position = dict(positions)
        order = {(u, v): (i, gain, r) for i, (u, v, gain, r) in enumerate(stage.links)}
        seq = len(stage.links)
        # Each greedy ring link becomes the phase-0 finger of whichever end precedes the other.
        rows = []
        for (u, v), (i, gain, r) in order.items():
            owner, other = (u, v) if (position[v] - position[u]) % n == 1 else (v, u)
            rows.append((owner, 0, other, i, gain, r))
        if n == 2:
            rows.append((rows[0][2], 0, rows[0][0], 1, None, rows[0][5]))
        short_fingers = _ordered_fingers(spark, rows, "gswico")
    else:
        nodes = spark.range(n).select(F.col("id").alias(S.NODE_ID))
        ring = lineage.cut(random_ring(nodes, seed))
        rounds = 1
        short_fingers = _plain(successor_fingers(ring, n), "random", rounds)
    phase_done(phases - 1, ring=short, nodes=n, rounds=rounds)
    if long == "gswico":
        # The ring's n positions and n links: the driver's slot rule and union-find need them.
        placed = ring.select(S.NODE_ID, S.POSITION).toArrow()
        positions = list(zip(placed.column(S.NODE_ID).to_pylist(), placed.column(S.POSITION).to_pylist()))
        links = undirected_links(short_fingers).select(S.U, S.V).toArrow()
        ring_links = list(zip(links.column(S.U).to_pylist(), links.column(S.V).to_pylist()))
        fingers, stage = gswico_fingers(
            spark,
            driver_copy,
            counts,
            positions,
            ring_links,
            batch_size,
            rounds + 1,
            on_step,
            per_node,
            regime,
            memory_budget,
            lineage,
        )
        rows = [
            (node, phase, finger, seq + i, gain, r)
            for i, ((node, phase, finger), (_, _, gain, r)) in enumerate(zip(fingers, stage.links))
        ]
        greedy = _ordered_fingers(spark, rows, "gswico")
        rounds += stage.rounds + 1
        free = chord_fingers(ring, n, first_phase=1).join(
            greedy.select(S.NODE_ID, S.PHASE), on=[S.NODE_ID, S.PHASE], how="left_anti"
        )
        long_fingers = greedy.unionByName(_plain(free, "fill", rounds))
    else:
        rounds += 1
        chosen = chord_fingers(ring, n, 1) if long == "chord" else random_fingers(ring, n, seed, 1)
        long_fingers = _plain(chosen, long, rounds)
    fingers = lineage.cut(short_fingers.unionByName(long_fingers))
    phase_done(phases, fingers=long, rounds=rounds)
    return SmallWorld(ring=ring, fingers=fingers.select(*S.FINGER_COLUMNS), links=_links(fingers, ring), rounds=rounds)


def _links(fingers: DataFrame, ring: DataFrame) -> DataFrame:
    """The undirected links (u < v), each numbered by the first finger that made it."""
    placed = fingers.join(ring, on=S.NODE_ID)
    first = F.min(
        F.struct(
            F.col("_seq").isNull().alias("_plain"),
            F.col("_seq"),
            F.col(S.ROUND),
            F.col(S.PHASE),
            F.col(S.POSITION),
            F.col(S.GAIN),
        )
    )
    links = (
        placed.select(
            F.least(S.NODE_ID, S.FINGER).alias(S.U),
            F.greatest(S.NODE_ID, S.FINGER).alias(S.V),
            "_seq",
            S.ROUND,
            S.PHASE,
            S.POSITION,
            S.GAIN,
        )
        .filter(F.col(S.U) != F.col(S.V))
        .groupBy(S.U, S.V)
        .agg(first.alias("_first"))
        .select(S.U, S.V, "_first.*")
    )
    numbered = numbered_links(
        links, [F.col("_plain"), F.col("_seq"), F.col(S.ROUND), F.col(S.PHASE), F.col(S.POSITION), S.U, S.V]
    )
    return numbered.join(links.select(S.U, S.V, S.GAIN), on=[S.U, S.V]).select(*S.EDGE_COLUMNS)
