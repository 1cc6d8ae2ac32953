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

The rounds reuse the exact batched engine of `overlay.design.greedy`: a top-K sample of the
candidate table filtered by the rule's state, settled on the driver against the best candidate
outside the batch. The rules' state is one small integer per node on the driver (degree and
fragment; or a slot mask): the deliberate, bounded driver step, O(|V|), never O(|I|).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.baselines import numbered_links
from overlay.design.greedy import (
    BOUND,
    COMP,
    CandidateTable,
    exact_gains,
    gather_batch,
    merge_components,
    top_candidates,
)
from overlay.design.pairs import SHARED, heavy_threshold_for, shared_topic_counts
from overlay.design.settle import settle
from overlay.frames import local_frame
from overlay.graph import Backend
from overlay.quality import topic_components
from overlay.smallworld.baselines import (
    chord_fingers,
    random_fingers,
    random_ring,
    successor_fingers,
)
from overlay.smallworld.fingers import undirected_links
from overlay.smallworld.geometry import (
    clockwise_column,
    phase_column,
    phase_count,
    phase_of,
    power_of_two,
)

log = logging.getLogger(__name__)

MAX_BATCH_GROWTH = 32


@dataclass
class GreedyLinks:
    """Links a greedy stage added: (u, v, gain, round) in the order added."""

    links: list[tuple[int, int, int, int]] = field(default_factory=list)
    rounds: int = 0


class RingRule:
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

    def eligible(self, candidates: DataFrame) -> DataFrame:
        """The candidates the rule allows now, in Spark: a broadcast of the nodes on a fragment."""
        spark = candidates.sparkSession
        touched = np.nonzero(self.degree)[0]
        state = local_frame(
            spark,
            [(int(x), int(self.degree[x]), self.find(int(x))) for x in touched],
            "_node long, _deg long, _frag long",
        )
        frame = candidates
        for end in (S.U, S.V):
            known = F.broadcast(state.select(
                F.col("_node").alias(end), F.col("_deg").alias("_deg" + end), F.col("_frag").alias("_frag" + end)
            ))
            frame = frame.join(known, on=end, how="left")
        degree_ok = (F.coalesce(F.col("_deg" + S.U), F.lit(0)) < 2) & (F.coalesce(F.col("_deg" + S.V), F.lit(0)) < 2)
        apart = F.coalesce(F.col("_frag" + S.U), F.col(S.U)) != F.coalesce(F.col("_frag" + S.V), F.col(S.V))
        closing = F.lit(self.edges == self.n - 1 and self.n >= 3)
        return frame.filter(degree_ok & (apart | closing) & F.lit(not self.complete)).select(
            S.U, S.V, BOUND, F.lit(0).alias("_du"), F.lit(0).alias("_dv")
        )

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


class SlotRule:
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

    def eligible(self, candidates: DataFrame) -> DataFrame:
        spark = candidates.sparkSession
        taken = local_frame(
            spark,
            [(int(x), int(self.position[x]), int(self.mask[x])) for x in range(self.n)],
            "_node long, _pos long, _mask long",
        )
        frame = candidates
        for end in (S.U, S.V):
            frame = frame.join(
                F.broadcast(taken.select(
                    F.col("_node").alias(end), F.col("_pos").alias("_pos" + end), F.col("_mask").alias("_mask" + end)
                )),
                on=end,
            )
        n = self.n
        phase_u = phase_column(clockwise_column(F.col("_pos" + S.U), F.col("_pos" + S.V), n), n)
        phase_v = phase_column(clockwise_column(F.col("_pos" + S.V), F.col("_pos" + S.U), n), n)
        free_u = F.col("_mask" + S.U).bitwiseAND(power_of_two(phase_u)) == 0
        free_v = F.col("_mask" + S.V).bitwiseAND(power_of_two(phase_v)) == 0
        return frame.filter(free_u | free_v).select(S.U, S.V, BOUND, F.lit(0).alias("_du"), F.lit(0).alias("_dv"))


def _constrained_greedy(
    subscriptions: DataFrame,
    counts: DataFrame,
    n: int,
    initial_links: DataFrame | None,
    rule,
    name: str,
    batch_size: int | None,
    backend: Backend,
    first_round: int = 1,
    on_round: Callable[[str, int, int, int, float], None] | None = None,
) -> tuple[GreedyLinks, DataFrame]:
    """Add max-gain allowed links until no allowed candidate has a positive gain; returns the
    links and the final component labels (topic, node, comp)."""
    spark = subscriptions.sparkSession
    bounds = counts.select(S.U, S.V, F.col(SHARED).alias(BOUND))
    if initial_links is None:
        labels = subscriptions.select(S.TOPIC_ID, S.NODE_ID, F.col(S.NODE_ID).alias(COMP))
    else:
        pairs = initial_links.select(S.U, S.V)
        bounds = bounds.join(pairs, on=[S.U, S.V], how="left_anti")
        labels = topic_components(subscriptions, pairs, backend=backend).select(
            S.TOPIC_ID, S.NODE_ID, F.col(S.COMPONENT).alias(COMP)
        )
    candidates = CandidateTable(bounds, materialised=initial_links is None)
    labels = labels.localCheckpoint(eager=True)
    initial_batch = batch_size or candidates.auto_batch_size()
    size = initial_batch
    result = GreedyLinks()
    round_no = first_round - 1
    since_refresh = 0
    while True:
        clock = time.monotonic()
        round_no += 1
        sampled, outside = top_candidates(rule.eligible(candidates.current()), size)
        batch = gather_batch(spark, sampled, labels, outside, n)
        settled = settle(batch, None, None, rule=rule)
        result.links.extend((u, v, gain, round_no) for u, v, gain in settled.accepted)
        result.rounds += 1
        candidates.lower([(u, v, g) for (u, v), g in zip(batch.pairs, settled.gains)])
        labels = merge_components(spark, labels, settled.relabel, n)
        seconds = time.monotonic() - clock
        log.info(
            "%s round %d: +%d links (%d in all), %d candidates sampled, %.1fs",
            name, round_no, len(settled.accepted), len(result.links), len(sampled), seconds,
        )
        if on_round is not None:
            on_round(name, round_no, len(settled.accepted), len(result.links), seconds)
        if settled.exhausted or getattr(rule, "complete", False):
            return result, labels
        since_refresh += len(settled.accepted)
        possible = len({x for pair in batch.pairs for x in pair}) // 2
        if settled.stopped_by_outside and len(settled.accepted) < possible // 4:
            if since_refresh > 0:
                candidates.refresh(exact_gains(counts, labels))
                since_refresh = 0
            else:
                size = min(size * 2, initial_batch * MAX_BATCH_GROWTH)


def _gain_of(spark, labels: DataFrame, u: int, v: int, n: int) -> int:
    """The gain of one pair against `labels`: its shared topics whose components differ."""
    batch = gather_batch(spark, [(u, v, 0, 0, 0)], labels, None, n)
    return int(batch.starts[1] - batch.starts[0])


@dataclass
class SmallWorld:
    """A small-world overlay: ring positions, directed fingers and the undirected links in the
    order they were chosen (u < v, gain or None, round)."""

    ring: DataFrame  # (node_id, position)
    fingers: DataFrame  # (node_id, phase, finger, chosen_by)
    links: DataFrame  # (u, v, added_order, round, gain)
    rounds: int


def shared_counts(subscriptions: DataFrame, n: int) -> DataFrame:
    return shared_topic_counts(subscriptions, heavy_threshold_for(n)).select(S.U, S.V, SHARED).localCheckpoint(eager=True)


def gswico_ring(
    subscriptions: DataFrame, counts: DataFrame, n: int, batch_size: int | None = None,
    backend: Backend = "auto", on_round=None,
) -> tuple[list[tuple[int, int]], GreedyLinks]:
    """GSwicoS: the (node, position) pairs of the greedy circle and its links in order."""
    rule = RingRule(n)
    stage, labels = _constrained_greedy(
        subscriptions, counts, n, None, rule, "gswico-s", batch_size, backend, on_round=on_round
    )
    if not rule.complete:
        spark = subscriptions.sparkSession
        fill_round = stage.rounds + 1
        paths = rule.fragments()
        ends = [(path[-1], paths[(i + 1) % len(paths)][0]) for i, path in enumerate(paths)]
        joins, closing = ends[:-1], ends[-1]
        for a, b in joins:  # zero gain: nothing allowed had a positive gain
            rule.accept(a, b)
            stage.links.append((min(a, b), max(a, b), 0, fill_round))
        if n >= 3:
            a, b = closing
            stage.links.append((min(a, b), max(a, b), _gain_of(spark, labels, min(a, b), max(a, b), n), fill_round))
            rule.accept(a, b)
        stage.rounds += 1
    return rule.positions(), stage


def gswico_fingers(
    subscriptions: DataFrame, counts: DataFrame, ring: DataFrame, ring_links: DataFrame, n: int,
    batch_size: int | None = None, backend: Backend = "auto", first_round: int = 1, on_round=None,
) -> tuple[list[tuple[int, int, int]], GreedyLinks]:
    """GSwicoL: greedy long fingers (node, phase, finger) on a given ring, and their links in
    order. Free slots left when gains run out are filled by the caller (Chord fingers)."""
    positions = np.zeros(n, dtype=np.int64)
    ordered = ring.select(S.NODE_ID, S.POSITION).toPandas()  # n rows: the driver's slot rule needs them
    positions[ordered[S.NODE_ID].to_numpy()] = ordered[S.POSITION].to_numpy()
    rule = SlotRule(positions, n)
    stage, _ = _constrained_greedy(
        subscriptions, counts, n, ring_links, rule, "gswico-l", batch_size, backend, first_round, on_round
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
        S.NODE_ID, S.PHASE, S.FINGER, F.lit(None).cast("long").alias("_seq"),
        F.lit(0 if chosen_by == "fill" else None).cast("long").alias(S.GAIN),
        F.lit(round_no).alias(S.ROUND), F.lit(chosen_by).alias(S.CHOSEN_BY),
    )


def small_world_overlay(
    subscriptions: DataFrame,
    n: int,
    short: str,
    long: str,
    seed: int = 1,
    batch_size: int | None = None,
    backend: Backend = "auto",
    on_round=None,
) -> SmallWorld:
    """One of the four overlay types of BeaConvey Table 2 over nodes 0..n-1.

    `short`: gswico (GSwicoS) or random (RandomS); `long`: gswico (GSwicoL), chord or random
    (RandomL). Links are numbered in the order they were chosen: the ring first, then the long
    fingers; links of a baseline or of the zero-gain fill come after the greedy ones, by
    (phase, position).
    """
    if short not in SHORT_KINDS or long not in LONG_KINDS:
        raise ValueError(f"unknown small-world overlay short={short!r} long={long!r}")
    spark = subscriptions.sparkSession
    subscriptions = subscriptions.select(S.NODE_ID, S.TOPIC_ID).localCheckpoint(eager=True)
    counts = shared_counts(subscriptions, n) if "gswico" in (short, long) else None
    rounds = 0
    seq = 0
    if short == "gswico":
        positions, stage = gswico_ring(subscriptions, counts, n, batch_size, backend, on_round)
        ring = local_frame(spark, positions, f"{S.NODE_ID} long, {S.POSITION} long").localCheckpoint(eager=True)
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
        ring = random_ring(nodes, seed).localCheckpoint(eager=True)
        rounds = 1
        short_fingers = _plain(successor_fingers(ring, n), "random", rounds)
    if long == "gswico":
        ring_links = undirected_links(short_fingers)
        fingers, stage = gswico_fingers(
            subscriptions, counts, ring, ring_links, n, batch_size, backend, rounds + 1, on_round
        )
        rows = [(node, phase, finger, seq + i, gain, r) for i, ((node, phase, finger), (_, _, gain, r))
                in enumerate(zip(fingers, stage.links))]
        greedy = _ordered_fingers(spark, rows, "gswico")
        rounds += stage.rounds + 1
        free = chord_fingers(ring, n, first_phase=1).join(greedy.select(S.NODE_ID, S.PHASE), on=[S.NODE_ID, S.PHASE], how="left_anti")
        long_fingers = greedy.unionByName(_plain(free, "fill", rounds))
    else:
        rounds += 1
        chosen = chord_fingers(ring, n, 1) if long == "chord" else random_fingers(ring, n, seed, 1)
        long_fingers = _plain(chosen, long, rounds)
    fingers = short_fingers.unionByName(long_fingers).localCheckpoint(eager=True)
    return SmallWorld(ring=ring, fingers=fingers.select(*S.FINGER_COLUMNS), links=_links(fingers, ring), rounds=rounds)


def _links(fingers: DataFrame, ring: DataFrame) -> DataFrame:
    """The undirected links (u < v), each numbered by the first finger that made it."""
    placed = fingers.join(ring, on=S.NODE_ID)
    first = F.min(F.struct(
        F.col("_seq").isNull().alias("_plain"), F.col("_seq"), F.col(S.ROUND), F.col(S.PHASE), F.col(S.POSITION),
        F.col(S.GAIN),
    ))
    links = (
        placed.select(
            F.least(S.NODE_ID, S.FINGER).alias(S.U), F.greatest(S.NODE_ID, S.FINGER).alias(S.V),
            "_seq", S.ROUND, S.PHASE, S.POSITION, S.GAIN,
        )
        .filter(F.col(S.U) != F.col(S.V))
        .groupBy(S.U, S.V)
        .agg(first.alias("_first"))
        .select(S.U, S.V, "_first.*")
    )
    numbered = numbered_links(links, [F.col("_plain"), F.col("_seq"), F.col(S.ROUND), F.col(S.PHASE), F.col(S.POSITION), S.U, S.V])
    return numbered.join(links.select(S.U, S.V, S.GAIN), on=[S.U, S.V]).select(*S.EDGE_COLUMNS)
