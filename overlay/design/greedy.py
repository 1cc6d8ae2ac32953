"""The greedy engine: every greedy of the project (GM, GPA, MinMaxODA, GPM, GM2, GSwicoS, GSwicoL),
in memory where its state fits, else as batched Spark rounds.

The algorithms (ICDCS'16 Alg. 1 and 3, BeaConvey Alg. 1, kTCO Alg. 1; our reading:
docs/readings/icdcs16.md#greedy) add, one at a time, the eligible link of highest gain, where the
gain of (u, v) is the number of shared topics on which u and v are in different classes
(topic-connected components; for GM2, blocks). Ties go to the smallest (u, v): the exact mode's
output is *the* canonical greedy sequence, which the tests compare link by link with a pure-Python
lazy greedy. A day-two rebuild may name preferred pairs (yesterday's links): among equal gains
they go first, then the smallest (u, v) (the memory regime; the rounds regime keeps the canonical
ties and says so). What varies between algorithms is pluggable: which pairs are eligible
(`overlay.design.eligibility`: none excluded, degree phases, a ring, finger slots) and the "same
class" relation (`overlay.design.classes`).

Two regimes, one canonical sequence. Where the candidate state fits `memory_budget` bytes and the
rule and relation have compiled forms, the whole greedy runs compiled in the driver process
(`overlay.design.memory`, the *memory* regime). Past the budget, or with `regime="rounds"`, it runs
as the design card's batched Spark iterations (the *rounds* regime, below); the relaxed mode
lives there. Both yield `GreedyRound`s and give the same links, gains included.

In the rounds regime one round is one Spark job and one bounded driver step:

1. Broadcast the flattened classes (one or two integers per subscription) and the rule's row
   filter; one `mapInArrow` pass over the candidate table refreshes every gain, and returns the
   sample (the best rows overall and the best few of every node) with the bounds of the rest
   (`overlay.design.candidates`).
2. `overlay.design.settle` adds, on the driver, every sampled link that provably is the best
   eligible link of the whole table at its step, updating the classes and the rule as it goes.

Nothing is written back: the next round's broadcast carries the new classes. When at most
`OPEN_READ_SHARE` of the nodes can still be an end of an eligible link (a matching phase fills
up, or nodes have no eligible row left: the last sample, which holds rows of every node that has
one, did not touch them), the round reads only the rows between those nodes
(`overlay.design.candidates`). A phased rule whose eligible candidates run out opens its next
phase; a run stops at a TCO (GM2: a 2TCO), at GPA's m links, after GPM's phase d, or when the
rule is complete.

The relaxed mode (`mode="relaxed"`) settles with slack: a link is added when its gain, exact at
that step, is within a factor (1 + epsilon) of the bound on every other eligible link, so a round
goes deeper than the exact one; it is no longer the canonical sequence.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import registry
from overlay import schema as S
from overlay.design import memory
from overlay.design.candidates import BOUND, CandidateTable
from overlay.design.classes import BlockClasses, Classes, ComponentClasses, Subscriptions
from overlay.design.eligibility import DegreePhases, Eligibility, Unlimited
from overlay.design.pairs import SHARED, shared_topic_counts
from overlay.design.round_state import RoundState
from overlay.design.settle import settle
from overlay.lineage import LOCAL, Lineage

log = logging.getLogger(__name__)

GreedyAlgorithm = Literal["gm", "gpa", "minmaxoda", "gpm", "gm2"]
GREEDY_ALGORITHMS: tuple[str, ...] = registry.algorithms(registry.GREEDY)
PHASED = ("minmaxoda", "gpm")
Mode = Literal["exact", "relaxed"]
MODES: tuple[str, ...] = ("exact", "relaxed")
Regime = Literal["auto", "memory", "rounds"]
REGIMES: tuple[str, ...] = ("auto", "memory", "rounds")
MEMORY_BUDGET = 4 << 30  # bytes of candidate state the memory regime may hold (conf/lab.yaml: design.memory_budget)
DEFAULT_EPSILON = 0.1
TOP_ROWS = 1_000_000  # best rows each partition of a round sends the driver (auto sizes)
TAIL_ROWS = 200_000  # and about as many rows of its open nodes, spread over them
MAX_PER_NODE = 1024
OPEN_READ_SHARE = 0.9  # read only the open nodes' rows when at most this share of nodes is open
MAX_LOOKAHEAD = 64  # phases one round may sample ahead, once a whole phase fits in a sample


@dataclass(frozen=True)
class GreedyParams:
    algorithm: GreedyAlgorithm
    max_edges: int | None = None  # GPA's m
    max_degree: int | None = None  # GPM's d
    batch_size: int | None = None  # best rows sampled per partition and round (None: auto)
    per_node: int | None = None  # best rows of every node sampled per partition and round (None: auto)
    mode: Mode = "exact"
    epsilon: float = DEFAULT_EPSILON
    partitions: int | None = None  # of the candidate table (None: sized to the counting work)
    parallelism: int | None = None  # tasks that run at once (None: the context's default parallelism)
    open_read_share: float = OPEN_READ_SHARE  # read only open nodes' rows at most at this share (0: never)
    regime: Regime = "auto"  # memory where the state fits `memory_budget` (auto), or forced
    memory_budget: int = MEMORY_BUDGET
    keep_rows: bool = True  # rounds: each partition keeps its rows on its executor (False: re-read the table)
    lineage: Lineage = LOCAL  # the rounds regime's checkpoints (reliable on a cluster)

    def __post_init__(self) -> None:
        if self.algorithm not in GREEDY_ALGORITHMS:
            raise ValueError(f"unknown greedy algorithm {self.algorithm!r}")
        if self.algorithm == "gpa" and (self.max_edges is None or self.max_edges < 1):
            raise ValueError("gpa needs max_edges >= 1")
        if self.algorithm == "gpm" and (self.max_degree is None or self.max_degree < 1):
            raise ValueError("gpm needs max_degree >= 1")
        for name in ("batch_size", "per_node"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not self.epsilon > 0:
            raise ValueError(f"epsilon must be positive, got {self.epsilon}")
        if self.regime not in REGIMES:
            raise ValueError(f"regime must be one of {', '.join(REGIMES)}, got {self.regime!r}")
        if self.regime == "memory" and self.mode == "relaxed":
            raise ValueError("the relaxed mode settles sampled rounds: it runs in the rounds regime")

    @property
    def phased(self) -> bool:
        return self.algorithm in PHASED


@dataclass(frozen=True)
class GreedyStart:
    """Where a run stands after its completed rounds (a fresh run: no links, round 0)."""

    edges: DataFrame | None = None  # (u, v) of the links added so far
    rounds_done: int = 0
    phase: int = 1
    links: np.ndarray | None = None  # the same links, when the caller holds them already ((k, 2))
    prefer: np.ndarray | None = None  # (k, 2) pairs that go first among equal gains (a rebuild's yesterday)
    classes: Classes | None = None  # the links' classes over the engine's subscriptions, when built already


@dataclass(frozen=True)
class GreedyRound:
    round: int
    phase: int  # the degree limit D of the round (0 for rules without phases)
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
    spark_seconds: float = 0.0  # the round's Spark job; the rest is the driver's settling
    candidate_rows: int = 0  # rows of the candidate table (at its last full pass)
    open_nodes: int | None = None  # the round read only the rows between this many open nodes (None: all rows)
    rows_read: int = 0  # rows the round's pass read
    regime: str = "rounds"  # which regime ran it: memory or rounds


@dataclass(frozen=True)
class InstanceSize:
    nodes: int  # node ids lie in [0, nodes)
    tcc_empty: int  # |I|
    tcc_complete: int  # topics with a subscriber

    def tco_support(self, tcc: int) -> float:
        span = self.tcc_empty - self.tcc_complete
        return 1.0 if span == 0 else (self.tcc_empty - tcc) / span

    @classmethod
    def of(cls, subscriptions: Subscriptions) -> InstanceSize:
        return cls(nodes=subscriptions.nodes, tcc_empty=subscriptions.rows, tcc_complete=len(subscriptions.topic_sizes))


def preferred_pairs(links: np.ndarray | None, nodes: int) -> np.ndarray:
    """Links (k, 2) as the sorted, distinct pair indices u * nodes + v (u < v) the sweep looks up."""
    if links is None or len(links) == 0:
        return memory.NO_ARRAY
    pairs = np.sort(np.asarray(links, dtype=np.int64).reshape(-1, 2), axis=1)
    return np.unique(pairs[:, 0] * nodes + pairs[:, 1])


class GreedyEngine:
    """Greedy rounds under one eligibility rule; `rounds()` yields each completed round.

    `subscriptions`: the driver copy (`Subscriptions.collect`). `shared_counts` (u, v, shared):
    the candidate pairs, when the caller has them (or a function that computes them: the rounds
    regime alone needs them).
    `initial_links` (u, v): links already in the overlay (a resumed run, or a ring under GSwicoL).
    `classes`: the "same class" relation (default: topic-connected components).
    `prefer` (u, v): pairs that go first among equal gains (memory regime).
    """

    def __init__(
        self,
        spark: SparkSession,
        subscriptions: Subscriptions,
        rule: Eligibility,
        *,
        classes: Classes | None = None,
        initial_links: np.ndarray | list[tuple[int, int]] = (),
        shared_counts: DataFrame | Callable[[], DataFrame] | None = None,
        max_edges: int | None = None,
        batch_size: int | None = None,
        per_node: int | None = None,
        mode: Mode = "exact",
        epsilon: float = DEFAULT_EPSILON,
        partitions: int | None = None,
        parallelism: int | None = None,
        open_read_share: float = OPEN_READ_SHARE,
        first_round: int = 1,
        edges_total: int = 0,
        name: str = "greedy",
        regime: Regime = "auto",
        memory_budget: int = MEMORY_BUDGET,
        round_links: int = memory.ROUND_LINKS,
        keep_rows: bool = True,
        size: InstanceSize | None = None,
        tcc_offset: int = 0,
        lineage: Lineage = LOCAL,
        prefer: np.ndarray | None = None,
    ) -> None:
        self.spark = spark
        self.subscriptions = subscriptions
        # `subscriptions` may be the open topics of a larger instance (`overlay.design.incremental`):
        # then `size` is the whole instance's and `tcc_offset` its topics connected already (a TCC each).
        self.size = size or InstanceSize.of(subscriptions)
        self.tcc_offset = tcc_offset
        self.rule = rule
        self.classes = classes if classes is not None else ComponentClasses(subscriptions)
        self.classes.merge_all(np.asarray(initial_links, dtype=np.int64).reshape(-1, 2))
        self.shared_counts = shared_counts
        self.max_edges = max_edges
        self.batch_size, self.per_node = batch_size, per_node
        self.epsilon = epsilon if mode == "relaxed" else None
        self.partitions, self.parallelism = partitions, parallelism
        self.open_read_share = open_read_share
        self.round_no = first_round - 1
        self.edges_total = edges_total
        self.name = name
        self.finished = False
        self.lookahead = 1
        self.with_rows: tuple[tuple[int, int], np.ndarray] | None = None  # (phases, nodes the last sample touched)
        self.requested_regime, self.memory_budget, self.round_links = regime, memory_budget, round_links
        self.relaxed = mode == "relaxed"
        self.pair_bound: int | None = None  # the regime's estimate, reused by the memory regime
        self.keep_rows = keep_rows
        self.lineage = lineage
        self.table: CandidateTable | None = None  # the rounds regime's, once its rounds start
        self.preferred = preferred_pairs(prefer, subscriptions.nodes)

    @cached_property
    def transpose(self) -> tuple[np.ndarray, ...]:
        """The subscriptions by topic, grouped by the start's classes (`memory.grouped_transpose`):
        built once for the regime's estimate and the memory regime's pairs."""
        return memory.grouped_transpose(self.subscriptions, memory.start_label(self.classes))

    @cached_property
    def regime(self) -> str:
        """The regime that runs: memory when asked, or (auto) when the rule and relation have
        compiled forms, the run is exact and a bound on the candidate state fits the budget."""
        if self.requested_regime == "rounds":
            return "rounds"
        compiled = memory.supported(self.rule, self.classes) and not self.relaxed
        if self.requested_regime == "memory":
            if not compiled:
                raise ValueError(f"{self.name}: its rule or mode has no in-memory form; use the rounds regime")
            return "memory"
        if not compiled:
            return "rounds"
        pairs, needed = memory.estimate(self.subscriptions, self.transpose)
        self.pair_bound = pairs
        fits = needed <= self.memory_budget
        log.info(
            "%s: at most %d candidate pairs, %s of state against a budget of %s: the %s regime",
            self.name,
            pairs,
            memory.human_bytes(needed),
            memory.human_bytes(self.memory_budget),
            "memory" if fits else "rounds",
        )
        return "memory" if fits else "rounds"

    def _sample_sizes(self, open_nodes: int) -> tuple[int, int]:
        """Rows per node and best rows overall a round samples. Auto: the best rows bound what a
        round can settle (the first row left out bounds every row not sent), so they take most of
        the sample; the open nodes share the rest, so a filling matching phase samples them deeper
        (and their tails bound less)."""
        per_node = self.per_node or max(1, min(MAX_PER_NODE, TAIL_ROWS // max(1, open_nodes)))
        top = self.batch_size or TOP_ROWS
        return per_node, top

    @property
    def tcc(self) -> int:
        """The TCCs of the whole instance now."""
        return self.classes.components + self.tcc_offset

    def done(self) -> bool:
        if self.classes.complete:
            return True  # a TCO (2TCO for blocks): nothing has a positive gain any more
        if self.max_edges is not None and self.edges_total >= self.max_edges:
            return True
        return self.rule.complete

    def rounds(self) -> Iterator[GreedyRound]:
        if self.done():
            return
        if self.regime == "memory":
            yield from self._memory_rounds()
            return
        if len(self.preferred):
            log.warning(
                "%s: the rounds regime breaks ties canonically: the preferred links are not preferred", self.name
            )
        spark = self.spark
        clock = time.monotonic()
        counts = self.shared_counts() if callable(self.shared_counts) else self.shared_counts
        if counts is None:
            label = memory.start_label(self.classes)  # a start's links: only pairs apart somewhere
            counts = shared_topic_counts(spark, self.subscriptions, self.partitions, self.parallelism, label)
        # Partitions chosen by the caller stay (the tests use them to vary the layout).
        slots = None if self.partitions is not None else self.parallelism or spark.sparkContext.defaultParallelism
        state = RoundState() if self.keep_rows else None
        self.table = table = CandidateTable(
            counts.select(S.U, S.V, F.col(SHARED).alias(BOUND)),
            task_slots=slots,
            state=state,
            lineage=self.lineage,
        )
        log.info(
            "%s: candidate table in %d partitions, in %.1fs", self.name, table.partitions, time.monotonic() - clock
        )
        static = spark.sparkContext.broadcast(self.subscriptions)
        try:
            while True:
                yield self._round(spark, table, static)
                if self.finished:
                    return
        finally:
            table.release()
            static.unpersist()

    def _memory_rounds(self) -> Iterator[GreedyRound]:
        """The memory regime: each call of the compiled sweep is a round."""
        clock = time.monotonic()
        state = memory.MemorySweep(
            self.subscriptions,
            self.rule,
            self.classes,
            self.max_edges,
            self.edges_total,
            self.round_links,
            self.pair_bound,
            self.transpose,
            self.preferred,
        )
        log.info("%s: %d candidate pairs in memory, in %.1fs", self.name, state.pairs, time.monotonic() - clock)
        phased = isinstance(self.rule, DegreePhases)
        for phase, links, refreshes, visits, seconds in state.calls():
            self.round_no += 1
            first_order = self.edges_total + 1
            self.edges_total += len(links)
            self.finished = bool(state.state[memory.sweep.FINISHED])
            tcc = self.tcc
            yield GreedyRound(
                round=self.round_no,
                phase=phase if phased else 0,
                edges=links,
                first_order=first_order,
                candidates=state.alive,
                reevaluations=refreshes,
                edges_total=self.edges_total,
                tcc=tcc,
                tco_support=self.size.tco_support(tcc),
                next_phase=self.rule.phase,
                finished=self.finished,
                seconds=seconds,
                candidate_rows=state.pairs,
                rows_read=visits,
                regime="memory",
            )

    def _round(self, spark, table: CandidateTable, static) -> GreedyRound:
        clock = time.monotonic()
        self.round_no += 1
        rule = self.rule
        root = spark.sparkContext.broadcast(self.classes.snapshot())
        last_phase = rule.last_phase(self.lookahead)
        open_nodes = rule.open_nodes(self.lookahead)
        reach = (rule.phase, last_phase)
        if self.with_rows is not None and self.with_rows[0] == reach:
            # A node the last sample did not touch had no eligible row left: it has none for the
            # rest of these phases (gains never grow, eligibility only shrinks within a phase).
            has_rows = self.with_rows[1]
            open_nodes = np.flatnonzero(has_rows) if open_nodes is None else open_nodes[has_rows[open_nodes]]
        per_node, top = self._sample_sizes(self.size.nodes if open_nodes is None else len(open_nodes))
        share = self.open_read_share
        if open_nodes is not None and (share <= 0 or len(open_nodes) > share * self.size.nodes):
            open_nodes = None  # most rows would pass: the semi-joins would not pay
        try:
            sample = table.sample(
                static, root, rule.row_filter(self.lookahead), self.size.nodes, per_node, top, open_nodes
            )
        finally:
            root.unpersist()
        spark_seconds = time.monotonic() - clock
        has_rows = np.zeros(self.size.nodes, dtype=bool)  # every node with an eligible row has one sampled
        has_rows[sample.us] = True
        has_rows[sample.vs] = True
        self.with_rows = (reach, has_rows)
        # The sample held every eligible row: next time, sample more phases at once.
        self.lookahead = min(MAX_LOOKAHEAD, 2 * self.lookahead) if sample.first_left is None else 1
        phase = rule.phase
        edges_left = None if self.max_edges is None else self.max_edges - self.edges_total
        settled = settle(sample, self.classes, rule, edges_left, self.epsilon, last_phase)
        first_order = self.edges_total + 1
        self.edges_total += len(settled.accepted)
        self.finished = self.done()
        if settled.exhausted and not self.finished:
            self.finished = not rule.next_phase()
        tcc = self.tcc
        seconds = time.monotonic() - clock
        # DEBUG (-v): the caller's progress reports the round (one line per step, or a bar).
        log.debug(
            "%s round %d (phase %d, %d rows read%s, %d received): +%d links (%d in all), %d sampled, %d re-evaluated, "
            "%.2fs (Spark %.2fs)",
            self.name,
            self.round_no,
            phase,
            table.last_read,
            "" if open_nodes is None else f" between {len(open_nodes)} open nodes",
            table.last_received,
            len(settled.accepted),
            self.edges_total,
            len(sample),
            settled.reevaluations,
            seconds,
            spark_seconds,
        )
        return GreedyRound(
            round=self.round_no,
            phase=phase,
            edges=settled.accepted,
            first_order=first_order,
            candidates=len(sample),
            reevaluations=settled.reevaluations,
            edges_total=self.edges_total,
            tcc=tcc,
            tco_support=self.size.tco_support(tcc),
            next_phase=rule.phase,
            finished=self.finished,
            seconds=seconds,
            spark_seconds=spark_seconds,
            candidate_rows=table.rows,
            open_nodes=None if open_nodes is None else len(open_nodes),
            rows_read=table.last_read,
        )


class GreedyDesign:
    """GM, GPA, MinMaxODA, GPM or GM2 over one instance; `rounds()` yields each completed round.

    `subscriptions`: (node_id, topic_id). `shared_counts`: (u, v, shared) from
    `overlay.design.pairs`, when the caller already has them.
    """

    def __init__(
        self,
        subscriptions: DataFrame,
        params: GreedyParams,
        start: GreedyStart | None = None,
        shared_counts: DataFrame | None = None,
        subscription_rows: int | None = None,
        driver_subscriptions: Subscriptions | None = None,
        size: InstanceSize | None = None,
        tcc_offset: int = 0,
    ) -> None:
        self.params = params
        self.start = start or GreedyStart()
        self.frame = subscriptions.select(S.NODE_ID, S.TOPIC_ID)
        self.shared_counts = shared_counts
        self.subscription_rows = subscription_rows  # when the caller knows: saves the copy a count
        self.collected = driver_subscriptions  # when the caller has collected them already
        self.size, self.tcc_offset = size, tcc_offset  # of the whole instance, when these are its open topics

    @cached_property
    def driver_subscriptions(self) -> Subscriptions:
        """The engine's capped driver copy, kept for the caller's check (`overlay.certified`)."""
        if self.collected is not None:
            return self.collected
        return Subscriptions.collect(self.frame, rows=self.subscription_rows)

    @cached_property
    def initial_links(self) -> np.ndarray:
        """The (k, 2) links of the start (a resumed run's stored links): |E| rows, a bounded driver step."""
        if self.start.links is not None:
            return np.asarray(self.start.links, dtype=np.int64).reshape(-1, 2)
        if self.start.edges is None:
            return np.zeros((0, 2), dtype=np.int64)
        stored = self.start.edges.select(S.U, S.V).toArrow()
        return np.column_stack([stored.column(S.U).to_numpy(), stored.column(S.V).to_numpy()]).astype(np.int64)

    def engine(self) -> GreedyEngine:
        params, start = self.params, self.start
        subscriptions = self.driver_subscriptions
        links = self.initial_links
        if params.phased:
            ends = links.reshape(-1)
            degrees = np.bincount(ends, minlength=subscriptions.nodes).astype(np.int64)
            rule: Eligibility = DegreePhases(subscriptions.nodes, params.max_degree, start.phase, degrees)
        else:
            rule = Unlimited()
        if start.classes is not None:  # the links are merged in them already
            classes, merging = start.classes, links[:0]
        else:
            classes = BlockClasses(subscriptions) if params.algorithm == "gm2" else ComponentClasses(subscriptions)
            merging = links
        return GreedyEngine(
            self.frame.sparkSession,
            subscriptions,
            rule,
            classes=classes,
            initial_links=merging,
            shared_counts=self.shared_counts,
            max_edges=params.max_edges,
            batch_size=params.batch_size,
            per_node=params.per_node,
            mode=params.mode,
            epsilon=params.epsilon,
            partitions=params.partitions,
            parallelism=params.parallelism,
            open_read_share=params.open_read_share,
            first_round=start.rounds_done + 1,
            edges_total=len(links),
            name=params.algorithm,
            regime=params.regime,
            memory_budget=params.memory_budget,
            keep_rows=params.keep_rows,
            size=self.size,
            tcc_offset=self.tcc_offset,
            lineage=params.lineage,
            prefer=start.prefer,
        )

    def rounds(self) -> Iterator[GreedyRound]:
        yield from self.engine().rounds()
