"""Exact greedy overlay design (GM, GPA, MinMaxODA, GPM) as batched Spark rounds.

The algorithms (ICDCS'16 Alg. 1 and 3, NOTES.md section 3) add, one at a time, the eligible edge
of highest gain, where the gain of (u, v) is the number of shared topics whose components of u
and v differ. GM / GPA: every pair is eligible (GPA stops at m edges). MinMaxODA / GPM: phases
D = 1, 2, ...; in phase D a pair is eligible while both ends have degree < D; a phase ends when
no eligible pair has positive gain, so it adds a maximal matching (GPM stops after phase d).
All stop at a TCO. Ties are broken by the smallest (u, v): the output is *the* canonical greedy
sequence, which the tests compare edge by edge with a pure-Python lazy greedy.

One round is Spark work over DataFrames plus one bounded driver step:

1. `candidates(u, v, bound)`: every pair that may still have positive gain, with an upper bound
   of its gain. It starts as the shared-topic counts (`overlay.design.pairs`, computed once) and
   only ever loses rows or lowers bounds. Sample the K + 1 eligible candidates of best key
   (bound desc, u, v): one top-K pass over the table, never a self-join on topic.
2. Evidence for those K pairs: join them with the component labels `labels(topic, node, comp)`,
   keeping the shared topics whose two components differ. That is at most K * max |T(v)| rows.
3. `overlay.design.settle` accepts, on the driver, every edge that provably beats all eligible
   candidates outside the batch (the (K+1)-th key bounds them), in order.
4. Write back: the batch's fresh gains as bounds (zero-gain pairs leave the table for good), the
   merged components as relabelled `labels`, the new degrees. Each is checkpointed, so lineage
   stays one round deep.

Why a batch stays exact: within the batch, gains are recomputed against the round's own merges
(two node-disjoint edges of a matching can still join the same two components of one topic,
so a batch's initial gains are only upper bounds); outside it, bounds cover every gain. An edge
is accepted only when it is the key-maximal eligible edge of the whole table at its step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from overlay import schema as S
from overlay.design.pairs import SHARED, heavy_threshold_for, shared_topic_counts
from overlay.design.settle import Batch, settle
from overlay.frames import local_frame
from overlay.graph import Backend
from overlay.quality import node_degrees, topic_components

log = logging.getLogger(__name__)

GreedyAlgorithm = Literal["gm", "gpa", "minmaxoda", "gpm"]
GREEDY_ALGORITHMS: tuple[str, ...] = ("gm", "gpa", "minmaxoda", "gpm")
PHASED = ("minmaxoda", "gpm")
BOUND, DEGREE, COMP = "bound", "degree", "comp"
GAIN = "gain"
MIN_AUTO_BATCH, MAX_AUTO_BATCH = 1024, 65536
EVIDENCE_ROWS = 2_000_000
MAX_BATCH_GROWTH = 32
MAX_OVERRIDE_ROWS = 1_000_000
LOOKAHEAD_PHASES = 8
OVERRIDE_SCHEMA = StructType([StructField(name, LongType(), False) for name in (S.U, S.V, BOUND)])


@dataclass(frozen=True)
class GreedyParams:
    algorithm: GreedyAlgorithm
    max_edges: int | None = None  # GPA's m
    max_degree: int | None = None  # GPM's d
    batch_size: int | None = None  # None: sized so one batch's evidence is about EVIDENCE_ROWS

    def __post_init__(self) -> None:
        if self.algorithm not in GREEDY_ALGORITHMS:
            raise ValueError(f"unknown greedy algorithm {self.algorithm!r}")
        if self.algorithm == "gpa" and (self.max_edges is None or self.max_edges < 1):
            raise ValueError("gpa needs max_edges >= 1")
        if self.algorithm == "gpm" and (self.max_degree is None or self.max_degree < 1):
            raise ValueError("gpm needs max_degree >= 1")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")

    @property
    def phased(self) -> bool:
        return self.algorithm in PHASED


@dataclass(frozen=True)
class GreedyStart:
    """Where a run stands after its completed rounds (a fresh run: no edges, round 0)."""

    edges: DataFrame | None = None  # (u, v, gain) of the edges added so far
    rounds_done: int = 0
    phase: int = 1
    edges_total: int = 0
    gain_total: int = 0


@dataclass(frozen=True)
class GreedyRound:
    round: int
    phase: int  # the degree limit D of the round (0 for GM / GPA)
    edges: list[tuple[int, int, int]]  # (u, v, gain) in the order added
    first_order: int  # added_order of edges[0]; orders are consecutive
    candidates: int  # candidates sampled to the driver
    reevaluations: int
    edges_total: int
    tcc: int
    tco_support: float
    next_phase: int
    finished: bool
    seconds: float


@dataclass(frozen=True)
class InstanceSize:
    nodes: int  # node ids lie in [0, nodes)
    tcc_empty: int  # |I|
    tcc_complete: int  # topics with a subscriber
    topic_span: int = 0  # topic ids lie in [0, topic_span)

    def tco_support(self, tcc: int) -> float:
        span = self.tcc_empty - self.tcc_complete
        return 1.0 if span == 0 else (self.tcc_empty - tcc) / span


def instance_size(subscriptions: DataFrame) -> InstanceSize:
    row = subscriptions.agg(
        F.max(S.NODE_ID).alias("n"),
        F.count("*").alias("i"),
        F.countDistinct(S.TOPIC_ID).alias("t"),
        F.max(S.TOPIC_ID).alias("span"),
    ).first()
    return InstanceSize(
        nodes=(row["n"] if row["n"] is not None else -1) + 1,
        tcc_empty=row["i"],
        tcc_complete=row["t"],
        topic_span=(row["span"] if row["span"] is not None else -1) + 1,
    )


class CandidateTable:
    """Pairs with an upper bound of their gain: an immutable base plus fresher bounds, so a round
    rewrites K rows, not the whole table.

    The fresher bounds live on the driver (a pandas frame, at most `compaction_rows` rows: the
    deliberate, bounded driver step) and reach Spark as one broadcast frame per round. When they
    outgrow that bound, the base is rebuilt (compacted) in one Spark pass."""

    def __init__(self, base: DataFrame, materialised: bool = False) -> None:
        """`materialised`: `base` is a projection of checkpointed data (no copy needed)."""
        self.spark = base.sparkSession
        self.base = base.select(S.U, S.V, BOUND)
        if not materialised:
            self.base = self.base.localCheckpoint(eager=True)
        stats = self.base.agg(F.count("*").alias("n"), F.avg(BOUND).alias("mean")).first()
        self.base_rows, self.mean_bound = stats["n"], float(stats["mean"] or 0.0)
        self.compaction_rows = min(MAX_OVERRIDE_ROWS, max(100_000, self.base_rows // 8))
        self._clear_overrides()

    def _clear_overrides(self) -> None:
        self.overrides = pd.DataFrame({S.U: [], S.V: [], BOUND: []}, dtype="int64")
        self._override_frame: DataFrame | None = None

    @property
    def override_rows(self) -> int:
        return len(self.overrides)

    def current(self) -> DataFrame:
        if self.override_rows == 0:
            return self.base
        if self._override_frame is None:
            self._override_frame = self.spark.createDataFrame(self.overrides, OVERRIDE_SCHEMA)
        fresher = self._override_frame
        return self.base.join(F.broadcast(fresher.select(S.U, S.V)), on=[S.U, S.V], how="left_anti").unionByName(
            fresher.filter(F.col(BOUND) > 0)
        )

    def lower(self, rows: list[tuple[int, int, int]]) -> None:
        """Record fresh bounds (u, v, bound) for some pairs; 0 removes a pair for good."""
        if not rows:
            return
        fresh = pd.DataFrame.from_records(rows, columns=[S.U, S.V, BOUND]).astype("int64")
        self.overrides = (
            pd.concat([self.overrides, fresh], ignore_index=True)
            .drop_duplicates(subset=[S.U, S.V], keep="last")
            .reset_index(drop=True)
        )
        self._override_frame = None
        if self.override_rows > self.compaction_rows:
            self.base = self.current().localCheckpoint(eager=True)
            self._clear_overrides()  # base_rows stays an upper bound: compaction only removes pairs

    def refresh(self, exact: DataFrame) -> None:
        """Replace every bound by an exact gain (pairs of gain 0 leave)."""
        self.base = exact.select(S.U, S.V, BOUND).filter(F.col(BOUND) > 0).localCheckpoint(eager=True)
        self._clear_overrides()

    def auto_batch_size(self) -> int:
        """K such that a batch's evidence (K pairs x their shared topics) is about EVIDENCE_ROWS."""
        return int(min(MAX_AUTO_BATCH, max(MIN_AUTO_BATCH, EVIDENCE_ROWS / max(1.0, self.mean_bound))))


class GreedyDesign:
    """A greedy run over one instance; `rounds()` yields each completed round.

    `subscriptions`: (node_id, topic_id). `shared_counts`: (u, v, shared) from
    `overlay.design.pairs`, when the caller already has them.
    """

    def __init__(
        self,
        subscriptions: DataFrame,
        params: GreedyParams,
        start: GreedyStart | None = None,
        shared_counts: DataFrame | None = None,
        backend: Backend = "auto",
    ) -> None:
        self.params = params
        self.start = start or GreedyStart()
        self.subscriptions = subscriptions.select(S.NODE_ID, S.TOPIC_ID).localCheckpoint(eager=True)
        self.size = instance_size(self.subscriptions)
        if self.size.nodes * self.size.topic_span >= 1 << 62:
            raise ValueError("instance too large for 62-bit component keys")
        self._shared_counts = shared_counts
        self.backend = backend

    # State -------------------------------------------------------------------------------

    def _initial_state(self) -> tuple[CandidateTable, DataFrame, DataFrame]:
        counts = self._shared_counts
        if counts is None:
            counts = shared_topic_counts(self.subscriptions, heavy_threshold_for(self.size.nodes))
        self._counts = counts.select(S.U, S.V, SHARED).localCheckpoint(eager=True)
        candidates = self._counts.select(S.U, S.V, F.col(SHARED).alias(BOUND))
        edges = self.start.edges
        if edges is None:
            labels = self.subscriptions.select(S.TOPIC_ID, S.NODE_ID, F.col(S.NODE_ID).alias(COMP))
            degrees = local_frame(self.subscriptions.sparkSession, [], f"{S.NODE_ID} long, {DEGREE} long")
        else:
            pairs = edges.select(S.U, S.V)
            candidates = candidates.join(pairs, on=[S.U, S.V], how="left_anti")
            labels = topic_components(self.subscriptions, pairs, backend=self.backend).select(
                S.TOPIC_ID, S.NODE_ID, F.col(S.COMPONENT).alias(COMP)
            )
            degrees = node_degrees(pairs, backend="dataframe")
        return (
            CandidateTable(candidates, materialised=edges is None),
            labels.localCheckpoint(eager=True),
            degrees.localCheckpoint(eager=True),
        )

    # Rounds ------------------------------------------------------------------------------

    def rounds(self) -> Iterator[GreedyRound]:
        params, size = self.params, self.size
        spark = self.subscriptions.sparkSession
        candidates, labels, degrees = self._initial_state()
        round_no = self.start.rounds_done
        phase = self.start.phase if params.phased else 0
        edges_total, gain_total = self.start.edges_total, self.start.gain_total
        if self._done(phase, edges_total, gain_total):
            return
        initial_batch = params.batch_size or candidates.auto_batch_size()
        batch_size = initial_batch
        edges_since_refresh = 0
        lookahead = 1
        while True:
            clock = time.monotonic()
            round_no += 1
            phase_limit = phase + lookahead - 1
            if params.max_degree is not None and params.phased:
                phase_limit = min(phase_limit, params.max_degree)
            sampled, outside = self._sample(candidates, degrees, phase_limit, batch_size)
            batch = self._batch(spark, sampled, labels, outside)
            edges_left = None if params.max_edges is None else params.max_edges - edges_total
            settled = settle(
                batch, phase if params.phased else None, edges_left, phase_limit if params.phased else None
            )
            accepted = settled.accepted
            first_order = edges_total + 1
            edges_total += len(accepted)
            gain_total += sum(gain for _, _, gain in accepted)
            next_phase = phase
            if params.phased:
                next_phase = settled.phase + 1 if settled.exhausted else settled.phase
            # The whole eligible table fit in the batch: sample a few phases ahead next time.
            lookahead = LOOKAHEAD_PHASES if outside is None else 1
            finished = self._done(next_phase, edges_total, gain_total) or (settled.exhausted and not params.phased)
            if not finished:
                candidates, labels, degrees = self._write_back(
                    spark, candidates, labels, degrees, batch, settled.gains, settled.relabel, accepted
                )
            tcc = size.tcc_empty - gain_total
            yield GreedyRound(
                round=round_no,
                phase=phase,
                edges=accepted,
                first_order=first_order,
                candidates=len(sampled),
                reevaluations=settled.reevaluations,
                edges_total=edges_total,
                tcc=tcc,
                tco_support=size.tco_support(tcc),
                next_phase=next_phase,
                finished=finished,
                seconds=time.monotonic() - clock,
            )
            if finished:
                return
            phase = next_phase
            edges_since_refresh += len(accepted)
            # At most one edge per node in a phase: a matching of the batch's nodes.
            possible = len({x for pair in batch.pairs for x in pair}) // 2 if params.phased else len(batch.pairs)
            if settled.stopped_by_outside and len(accepted) < possible // 4:
                if edges_since_refresh > 0:
                    # Stale bounds: make every bound exact again, in one Spark pass.
                    candidates.refresh(self._exact_gains(labels))
                    edges_since_refresh = 0
                else:
                    # Exact bounds and still undecided: the batch interacts; look deeper.
                    batch_size = min(batch_size * 2, initial_batch * MAX_BATCH_GROWTH)

    def _done(self, phase: int, edges_total: int, gain_total: int) -> bool:
        params = self.params
        if self.size.tcc_empty - gain_total <= self.size.tcc_complete:
            return True  # a TCO: nothing has positive gain any more
        if params.max_edges is not None and edges_total >= params.max_edges:
            return True
        return params.max_degree is not None and params.phased and phase > params.max_degree

    def _exact_gains(self, labels: DataFrame) -> DataFrame:
        return exact_gains(self._counts, labels)

    def _sample(self, candidates: CandidateTable, degrees: DataFrame, phase: int, batch_size: int):
        """The `batch_size` eligible candidates of best key, with their ends' degrees, and the key
        of the next one (None when there is none). The bounded driver step: K + 1 rows."""
        eligible = candidates.current()
        if self.params.phased:
            for end in (S.U, S.V):
                known = F.broadcast(degrees.select(F.col(S.NODE_ID).alias(end), F.col(DEGREE).alias("_d" + end)))
                eligible = eligible.join(known, on=end, how="left").fillna(0, subset=["_d" + end])
            eligible = eligible.filter((F.col("_d" + S.U) < phase) & (F.col("_d" + S.V) < phase))
        else:
            eligible = eligible.withColumn("_du", F.lit(0)).withColumn("_dv", F.lit(0))
        return top_candidates(eligible, batch_size)

    def _batch(self, spark, sampled, labels: DataFrame, outside) -> Batch:
        return gather_batch(spark, sampled, labels, outside, self.size.nodes)

    def _write_back(self, spark, candidates, labels, degrees, batch: Batch, gains, relabel, accepted):
        candidates.lower([(u, v, g) for (u, v), g in zip(batch.pairs, gains)])
        labels = merge_components(spark, labels, relabel, self.size.nodes)
        if accepted:
            added = local_frame(spark, [(u, v) for u, v, _ in accepted], f"{S.U} long, {S.V} long")
            degrees = (
                degrees.unionByName(node_degrees(added, backend="dataframe"))
                .groupBy(S.NODE_ID)
                .agg(F.sum(DEGREE).alias(DEGREE))
                .localCheckpoint(eager=True)
            )
        return candidates, labels, degrees


def top_candidates(eligible: DataFrame, batch_size: int):
    """The `batch_size` rows (u, v, bound, _du, _dv) of best key (bound desc, u, v) and the key of
    the next one (None when there is none). The bounded driver step: K + 1 rows."""
    top = (
        eligible.orderBy(F.desc(BOUND), S.U, S.V).limit(batch_size + 1)
        .select(S.U, S.V, BOUND, "_du", "_dv").toPandas()
    )
    rows = list(zip(*(top[c].astype("int64").tolist() for c in (S.U, S.V, BOUND, "_du", "_dv"))))
    rest = rows[batch_size:]
    outside = (rest[0][2], rest[0][0], rest[0][1]) if rest else None
    return rows[:batch_size], outside


def exact_gains(counts: DataFrame, labels: DataFrame) -> DataFrame:
    """(u, v, bound) with bound = the exact gain: shared topics (`counts`: u, v, shared) minus
    those where u and v are already in one component (`labels`: topic, node, comp). The second
    term is a self-join of the components, not of the topics: sum |C|^2 over the current TCCs,
    small while components are small."""
    sizes = labels.groupBy(S.TOPIC_ID, COMP).agg(F.count("*").alias("_size")).filter(F.col("_size") > 1)
    members = labels.join(sizes.select(S.TOPIC_ID, COMP), on=[S.TOPIC_ID, COMP])
    left = members.select(S.TOPIC_ID, COMP, F.col(S.NODE_ID).alias(S.U))
    right = members.select(S.TOPIC_ID, COMP, F.col(S.NODE_ID).alias(S.V))
    same = (
        left.join(right, on=[S.TOPIC_ID, COMP]).filter(F.col(S.U) < F.col(S.V))
        .groupBy(S.U, S.V).agg(F.count("*").alias("_same"))
    )
    return counts.join(same, on=[S.U, S.V], how="left").select(
        S.U, S.V, (F.col(SHARED) - F.coalesce(F.col("_same"), F.lit(0))).alias(BOUND)
    )


def gather_batch(spark, sampled: list[tuple[int, int, int, int, int]], labels: DataFrame, outside, nodes: int) -> Batch:
    """The driver's batch for sampled (u, v, bound, degree u, degree v) rows: each pair's evidence,
    one (component key of u, component key of v) per shared topic where they differ. Bounded: K
    pairs times their shared topics."""
    pairs = [(u, v) for u, v, _, _, _ in sampled]
    if not pairs:
        return Batch.from_lists([], [], outside=outside)
    index = local_frame(spark, [(i, u, v) for i, (u, v) in enumerate(pairs)], f"_i int, {S.U} long, {S.V} long")
    n = nodes
    at_u = labels.select(F.col(S.NODE_ID).alias(S.U), S.TOPIC_ID, F.col(COMP).alias("_cu"))
    at_v = labels.select(F.col(S.NODE_ID).alias(S.V), S.TOPIC_ID, F.col(COMP).alias("_cv"))
    evidence = (
        F.broadcast(index).join(at_u, on=S.U)
        .join(at_v, on=[S.V, S.TOPIC_ID])
        .filter(F.col("_cu") != F.col("_cv"))
        .select(
            "_i",
            (F.col(S.TOPIC_ID) * n + F.col("_cu")).alias("_a"),
            (F.col(S.TOPIC_ID) * n + F.col("_cv")).alias("_b"),
        )
        .toPandas()  # bounded: K pairs times their shared topics
    )
    ids = evidence["_i"].to_numpy()
    order = np.argsort(ids, kind="stable")
    starts = np.searchsorted(ids[order], np.arange(len(pairs) + 1)).astype(np.int64)
    a = evidence["_a"].to_numpy().astype(np.int64)[order]
    b = evidence["_b"].to_numpy().astype(np.int64)[order]
    degrees = {u: du for u, _, _, du, _ in sampled} | {v: dv for _, v, _, _, dv in sampled}
    return Batch(pairs=pairs, starts=starts, a=a, b=b, degrees=degrees, outside=outside)


def merge_components(spark, labels: DataFrame, relabel: dict[int, int], nodes: int) -> DataFrame:
    """`labels` (topic, node, comp) after the merges of a round (component key -> new key)."""
    if not relabel:
        return labels
    n = nodes
    mapping = local_frame(spark, list(relabel.items()), "_old long, _new long")
    key = F.col(S.TOPIC_ID) * n + F.col(COMP)
    return (
        labels.withColumn("_old", key)
        .join(F.broadcast(mapping), on="_old", how="left")
        .select(
            S.TOPIC_ID,
            S.NODE_ID,
            F.coalesce(F.col("_new") - F.col(S.TOPIC_ID) * n, F.col(COMP)).alias(COMP),
        )
        .localCheckpoint(eager=True)
    )
