"""What failures do to an overlay: topic connectivity after removing nodes or links.

The reason for a kTCO (PODC'13) is that brokers fail. For any overlay this measures, per failure
scenario (a share of the nodes or links removed, in one trial), the TcoSuppR of the surviving
overlay on the instance restricted to the surviving nodes, and the share of topics with at least
two surviving subscribers whose surviving subgraph is still connected.

Failure models (`MODELS`):

* `random-nodes`: each trial orders the nodes by a seeded draw (`overlay.draws`, keyed by
  (seed, trial, node)); a share s removes the first round(s |V|). So the shares of one trial are
  nested, and a seed gives one result on any layout.
* `targeted-nodes`: the highest-degree nodes of the intact overlay first, ties by node id: one
  order, so one trial.
* `random-links`: as `random-nodes`, over the links (keyed by (seed, trial, u, v)); every node
  survives.

Two Spark jobs per model. First the thresholds: the element at rank round(s N) of each trial's
order (a window per trial over the N nodes or links; only those few rows reach the driver), so an
element fails iff its (key, id) sorts before its scenario's threshold. Then one pass over the
topics: subscriptions and topic links hashed by topic, each partition rebuilding the failure keys
of its rows (the draws are a pure function of the key; targeted nodes carry their degree) and
counting, per scenario, the surviving subscribers and components of each topic with one
union-find (`mapInArrow`); only per-partition sums per scenario leave the executors.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numba as nb
import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from overlay import draws
from overlay import schema as S
from overlay.design.kernels import find
from overlay.graph import DST, ID, SRC
from overlay.quality import NODE_BITS, topic_graph

MODELS = ("random-nodes", "targeted-nodes", "random-links")
NODE_MASK = (1 << NODE_BITS) - 1
_KIND, _A, _B, _DEGREE, _KEY, _ID, _TRIAL, _RANK = "_kind", "_a", "_b", "_degree", "_key", "_id", "_trial", "_rank"
_SCENARIO, _SIZE = "_scenario", "_size"
_SUMS = ("subscriptions", "topics", "tcc", "shared_topics", "connected_topics")


@dataclass(frozen=True)
class FailurePlan:
    """One failure model at several shares, over `trials` seeded trials (targeted: one)."""

    model: str
    shares: tuple[float, ...]
    trials: int = 1
    seed: int = 1

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, got {self.model!r}")
        if not self.shares or any(not 0 <= share <= 1 for share in self.shares):
            raise ValueError(f"shares must lie in [0, 1], got {self.shares}")
        if self.trials < 1:
            raise ValueError(f"trials must be >= 1, got {self.trials}")
        if self.model == "targeted-nodes":
            object.__setattr__(self, "trials", 1)  # one order: every trial would be the same

    @property
    def of_links(self) -> bool:
        return self.model == "random-links"


@dataclass(frozen=True)
class Scenario:
    share: float
    trial: int
    failed: int  # nodes (links, for random-links) removed
    threshold: tuple[int, int] | None  # (key, id) of the first survivor; None: everything fails


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    survivors: int  # nodes left
    subscriptions: int  # of the surviving nodes
    topics: int  # with a surviving subscriber
    tcc: int  # topic-connected components of the surviving overlay
    shared_topics: int  # with at least two surviving subscribers
    connected_topics: int  # of those, connected

    @property
    def tco_support(self) -> float:
        span = self.subscriptions - self.topics
        return 1.0 if span == 0 else (self.subscriptions - self.tcc) / span

    @property
    def connected_topic_share(self) -> float:
        return 1.0 if self.shared_topics == 0 else self.connected_topics / self.shared_topics


def failure_keys(model: str, seed: int, trial: int, ids: np.ndarray, degrees: np.ndarray | None = None) -> np.ndarray:
    """The int64 key ordering elements for failure (smallest first; ties by id): a seeded draw,
    or minus the degree for targeted nodes. `ids`: nodes, or links packed as u << 32 | v."""
    if model == "targeted-nodes":
        return -np.asarray(degrees, dtype=np.int64)
    purpose = draws.FAIL_LINKS if model == "random-links" else draws.FAIL_NODES
    return draws.ranks(seed, purpose, np.full(len(ids), trial, dtype=np.int64), ids)


def failed_count(share: float, size: int) -> int:
    """How many of `size` elements a share removes: share * size rounded half up."""
    return min(size, math.floor(share * size + 0.5))


def _fails(keys: np.ndarray, ids: np.ndarray, threshold: tuple[int, int] | None) -> np.ndarray:
    if threshold is None:
        return np.ones(len(keys), dtype=bool)
    key, at = threshold
    return (keys < key) | ((keys == key) & (ids < at))


def _keyed_population(plan: FailurePlan, population: DataFrame) -> DataFrame:
    """(_trial, _key, _id) for every element and trial; `population`: (_id, _degree)."""
    trials = population.sparkSession.range(plan.trials).select(F.col("id").alias(_TRIAL))
    rows = population.crossJoin(trials)

    def keyed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            ids = batch.column(_ID).to_numpy().astype(np.int64)
            trial = batch.column(_TRIAL).to_numpy().astype(np.int64)
            degrees = batch.column(_DEGREE).to_numpy().astype(np.int64)
            keys = np.empty(len(ids), dtype=np.int64)
            for t in np.unique(trial):
                at = trial == t
                keys[at] = failure_keys(plan.model, plan.seed, int(t), ids[at], degrees[at])
            yield pa.RecordBatch.from_arrays(
                [pa.array(trial), pa.array(keys), pa.array(ids)], names=[_TRIAL, _KEY, _ID]
            )

    return rows.mapInArrow(keyed, f"{_TRIAL} long, {_KEY} long, {_ID} long")


def scenarios(plan: FailurePlan, population: DataFrame) -> list[Scenario]:
    """Each (share, trial) with its threshold: the element at rank round(share * size) of the
    trial's failure order (size: elements per trial). `population`: (_id, _degree) of the
    nodes or links. One job: a window per trial sorts its elements in one task and counts them;
    only the threshold rows (and each trial's first, which carries the size) reach the driver."""
    size = F.count(F.lit(1)).over(Window.partitionBy(_TRIAL))
    ranked = _keyed_population(plan, population).select(
        "*",
        (F.row_number().over(Window.partitionBy(_TRIAL).orderBy(_KEY, _ID)) - 1).alias(_RANK),
        size.alias(_SIZE),
    )
    wanted = F.col(_RANK) == 0
    for share in plan.shares:  # failed_count, in Spark
        wanted = wanted | (F.col(_RANK) == F.least(F.col(_SIZE), F.floor(F.lit(share) * F.col(_SIZE) + 0.5)))
    found = ranked.filter(wanted).collect()  # at most trials x (shares + 1) rows
    size = int(found[0][_SIZE]) if found else 0
    at = {(r[_TRIAL], r[_RANK]): (r[_KEY], r[_ID]) for r in found}
    return [
        Scenario(share, trial, failed, at.get((trial, failed)))
        for share in plan.shares
        for trial in range(plan.trials)
        for failed in [failed_count(share, size)]
    ]


@nb.njit(cache=True, nogil=True)
def surviving_components(starts, alive, ia, ib, link_alive):
    """Sums over the topics `rows[starts[t]:starts[t + 1]]` of one partition: surviving
    subscriptions, topics with one, components, topics with two or more, and of those the
    connected ones. Links (ia, ib) join rows of one topic; a link counts when `link_alive` and
    both ends are alive."""
    parent = np.arange(len(alive))
    for e in range(len(ia)):
        if link_alive[e] and alive[ia[e]] and alive[ib[e]]:
            a, b = find(parent, ia[e]), find(parent, ib[e])
            if a != b:
                parent[max(a, b)] = min(a, b)
    subscriptions = topics = tcc = shared = connected = 0
    for t in range(len(starts) - 1):
        survivors = components = 0
        for r in range(starts[t], starts[t + 1]):
            if alive[r]:
                survivors += 1
                if parent[r] == r:
                    components += 1
        subscriptions += survivors
        tcc += components
        if survivors >= 1:
            topics += 1
        if survivors >= 2:
            shared += 1
            if components == 1:
                connected += 1
    return subscriptions, topics, tcc, shared, connected


def _partition_outcomes(plan: FailurePlan, scenarios_: list[Scenario]):
    def outcomes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The executor side: every scenario over the partition's whole topics."""
        batches = [batch for batch in batches if batch.num_rows]
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        kind = table.column(_KIND).to_numpy()
        src = table.column(SRC).to_numpy().astype(np.int64)
        dst = table.column(DST).fill_null(0).to_numpy().astype(np.int64)
        degree = table.column(_DEGREE).fill_null(0).to_numpy().astype(np.int64)
        subscription = kind == 0
        vertices, degrees = src[subscription], degree[subscription]
        order = np.argsort(vertices, kind="stable")
        vertices, degrees = vertices[order], degrees[order]
        nodes = vertices & NODE_MASK
        topic = vertices >> NODE_BITS
        starts = np.flatnonzero(np.r_[True, topic[1:] != topic[:-1], True]).astype(np.int64)
        a, b = src[~subscription], dst[~subscription]
        ia, ib = np.searchsorted(vertices, a), np.searchsorted(vertices, b)
        u, v = np.minimum(a, b) & NODE_MASK, np.maximum(a, b) & NODE_MASK
        links = (u << 32) | v
        every_link = np.ones(len(links), dtype=bool)
        every_row = np.ones(len(vertices), dtype=bool)
        keys: dict[int, np.ndarray] = {}
        result = {name: [] for name in (_SCENARIO, *_SUMS)}
        for index, scenario in enumerate(scenarios_):
            if scenario.trial not in keys:
                ids = links if plan.of_links else nodes
                keys[scenario.trial] = failure_keys(plan.model, plan.seed, scenario.trial, ids, degrees)
            fails = _fails(keys[scenario.trial], links if plan.of_links else nodes, scenario.threshold)
            alive, link_alive = (every_row, ~fails) if plan.of_links else (~fails, every_link)
            sums = surviving_components(starts, alive, ia, ib, link_alive)
            result[_SCENARIO].append(index)
            for name, value in zip(_SUMS, sums):
                result[name].append(value)
        yield pa.RecordBatch.from_pydict({name: pa.array(values, pa.int64()) for name, values in result.items()})

    return outcomes


def resilience(
    spark: SparkSession,
    subscriptions: DataFrame,
    edges: DataFrame,
    nodes: int,
    plan: FailurePlan,
) -> list[Outcome]:
    """Every scenario of `plan` on the overlay `edges` (u, v), u < v, each link once (as
    `overlay_edges` holds them), of an instance with node ids in [0, nodes): what survives and
    how connected its topics stay."""
    links = edges.select(S.U, S.V)
    no_degree = F.lit(None).cast("long").alias(_DEGREE)
    vertices, topic_edges = topic_graph(subscriptions, links)
    if plan.of_links:
        population = links.select(F.shiftleft(F.col(S.U), 32).bitwiseOR(F.col(S.V)).alias(_ID), F.lit(0).alias(_DEGREE))
    elif plan.model == "targeted-nodes":  # nodes ordered by degree: the population and each row carry it
        degree = (
            links.select(F.col(S.U).alias(_ID))
            .unionAll(links.select(F.col(S.V).alias(_ID)))
            .groupBy(_ID)
            .agg(F.count("*").alias(_DEGREE))
        )
        population = spark.range(nodes).select(F.col("id").alias(_ID)).join(degree, _ID, "left").fillna(0, [_DEGREE])
        vertices = vertices.join(degree.withColumnRenamed(_ID, S.NODE_ID), S.NODE_ID, "left")
    else:
        population = spark.range(nodes).select(F.col("id").alias(_ID), F.lit(0).cast("long").alias(_DEGREE))
    if plan.model != "targeted-nodes":
        vertices = vertices.withColumn(_DEGREE, no_degree)
    planned = scenarios(plan, population)
    rows = vertices.select(
        F.lit(0).alias(_KIND),
        F.col(ID).alias(SRC),
        F.lit(None).cast("long").alias(DST),
        F.col(_DEGREE).cast("long"),
    ).unionByName(topic_edges.select(F.lit(1).alias(_KIND), SRC, DST, no_degree))
    by_topic = rows.repartition(F.shiftright(F.col(SRC), NODE_BITS))
    schema = ", ".join([f"{_SCENARIO} long", *(f"{name} long" for name in _SUMS)])
    totals = (
        by_topic.mapInArrow(_partition_outcomes(plan, planned), schema)
        .groupBy(_SCENARIO)
        .agg(*(F.sum(name).alias(name) for name in _SUMS))
        .collect()  # one row per scenario
    )
    found = {r[_SCENARIO]: r for r in totals}
    outcomes = []
    for index, scenario in enumerate(planned):
        row = found.get(index)
        sums = {name: int(row[name]) if row is not None else 0 for name in _SUMS}
        survivors = nodes if plan.of_links else nodes - scenario.failed
        outcomes.append(Outcome(scenario, survivors, **sums))
    return outcomes
