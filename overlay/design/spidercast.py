"""SpiderCastM: SpiderCast's neighbour selection with a maximum degree (ICDCS'16 section IX).

SpiderCast (Chockler, Melamed, Tock, Vitenberg, DEBS'07) has every node aim, for each of its
topics, at K_g neighbours sharing the topic chosen greedily ("greedy coverage") and K_r chosen at
random ("random coverage"). We use K_g = 3 and K_r = 1, the setting reported for SpiderCast by
Ma, Wang and Sun (Feverfew, Sci China Inf Sci 2014, section 4: "each node aims for greedy
3-coverage and random 1-coverage"). SpiderCastM (ICDCS'16) lets every node, with global
knowledge of the subscriptions, run this selection independently until its degree reaches d.

Our reading, made exact so that a seed gives one overlay:

* coverage cov(p, t) = number of p's neighbours subscribed to t, for t in T(p);
* node p's j-th link (j = degree + 1) is a *random* pick when j is a multiple of K_g + K_r,
  else a *greedy* pick, so links follow the K_g : K_r mix;
* greedy pick: the node q maximising |{t in T(p) & T(q) : cov(p, t) < K_g}| (ties: smallest
  xxhash64(seed, round, p, q)); with no such q with a positive count, a random pick instead;
* random pick: the topic t of p with cov(p, t) < K_r (any topic of p if none) of smallest
  hash, then the subscriber q of t of smallest hash;
* q must have degree < d, not be p or a neighbour of p.

The nodes run in synchronous rounds: every node below degree d proposes one link; a node
accepts as many of the proposals touching it as it has free degree, in order of
xxhash64(seed, round, u, v); a proposal becomes a link when both ends accept it. Rounds repeat
until no node can propose.

One round is one Spark job and one bounded driver step, as in the greedy engine
(`overlay.design.greedy`): the subscriptions (the engine's capped driver copy, in CSR form by node
and by topic) are broadcast once, the links (a neighbour table of |V| x d integers) every round;
one `mapInArrow` pass over node ranges computes every open node's proposal
(`overlay.design.spidercast_kernels`), and the driver receives at most one proposal per node and
decides which become links. A round's cost is the scoring of the open nodes' needy topics, not
a join of the links with the subscriptions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from overlay import schema as S
from overlay.design import spidercast_kernels as kernels
from overlay.design.classes import Subscriptions
from overlay.design.pairs import by_topic, node_ranges

log = logging.getLogger(__name__)

GREEDY_COVERAGE = 3
RANDOM_COVERAGE = 1


@dataclass(frozen=True)
class SpiderCastParams:
    max_degree: int
    seed: int = 1
    greedy_coverage: int = GREEDY_COVERAGE
    random_coverage: int = RANDOM_COVERAGE
    max_rounds: int | None = None
    parallelism: int | None = None  # tasks that run at once (None: the context's default parallelism)

    def __post_init__(self) -> None:
        if self.max_degree < 1:
            raise ValueError(f"SpiderCastM needs max_degree >= 1, got {self.max_degree}")
        if self.greedy_coverage < 0 or self.random_coverage < 0 or self.greedy_coverage + self.random_coverage < 1:
            raise ValueError("SpiderCastM needs coverages >= 0 with a positive sum")


class _Links:
    """The overlay so far on the driver: a neighbour table, degrees, and each round's links."""

    def __init__(self, nodes: int, max_degree: int) -> None:
        self.neighbours = np.full((nodes, max(1, min(max_degree, nodes))), -1, dtype=np.int64)
        self.degree = np.zeros(nodes, dtype=np.int64)
        empty = np.zeros(0, dtype=np.int64)
        self.rounds: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [(empty, empty, empty)]

    def add_round(self, us: np.ndarray, vs: np.ndarray, round_no: int, max_degree: int) -> int:
        """Accept this round's proposals, in priority order (`kernels.accept`); links added."""
        accepted = kernels.accept(us, vs, self.neighbours, self.degree, max_degree)
        self.rounds.append((us[accepted], vs[accepted], np.full(int(accepted.sum()), round_no, dtype=np.int64)))
        return int(accepted.sum())

    def frame(self, spark: SparkSession) -> DataFrame:
        """(u, v, added_order, round): each round's links are already in (priority, u, v) order."""
        us, vs, rounds = (np.concatenate(parts) for parts in zip(*self.rounds))
        table = pa.table(
            {
                S.U: pa.array(us, pa.int64()),
                S.V: pa.array(vs, pa.int64()),
                S.ADDED_ORDER: pa.array(np.arange(1, len(us) + 1, dtype=np.int64)),
                S.ROUND: pa.array(rounds, pa.int32()),
            }
        )
        return spark.createDataFrame(table)


def _proposals(
    spark: SparkSession, static, state, parts: int, params: SpiderCastParams, round_no: int
) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) of every open node's proposal: one Spark job, at most one row per node."""
    d, kg, kr, seed = params.max_degree, params.greedy_coverage, params.random_coverage, params.seed

    def propose(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        offsets, topics, topic_offsets, topic_nodes, cuts = static.value
        neighbours, degree = state.value
        for batch in batches:
            for part in batch.column("id").to_pylist():
                ps, qs = kernels.propose_range(
                    offsets,
                    topics,
                    topic_offsets,
                    topic_nodes,
                    neighbours,
                    degree,
                    d,
                    kg,
                    kr,
                    seed,
                    round_no,
                    cuts[part],
                    cuts[part + 1],
                )
                yield pa.RecordBatch.from_arrays([pa.array(ps), pa.array(qs)], names=["_p", "_q"])

    table = spark.range(parts, numPartitions=parts).mapInArrow(propose, "_p long, _q long").toArrow()
    return table.column("_p").to_numpy(), table.column("_q").to_numpy()


def spidercast_m(subscriptions: DataFrame, params: SpiderCastParams) -> DataFrame:
    """(u, v, added_order, round) of the SpiderCastM overlay (module doc)."""
    spark = subscriptions.sparkSession
    # Node ids are row indices, as in the greedy engine.
    csr = Subscriptions.collect(subscriptions, holder="SpiderCastM")
    topic_offsets, topic_nodes = by_topic(csr)
    cuts = node_ranges(csr, topic_offsets, None, params.parallelism or spark.sparkContext.defaultParallelism)
    static = spark.sparkContext.broadcast((csr.offsets, csr.topics, topic_offsets, topic_nodes, cuts))
    d = params.max_degree
    links = _Links(csr.nodes, d)
    limit = params.max_rounds or 50 * d + 50
    started = time.monotonic()
    round_no = 0
    try:
        for round_no in range(1, limit + 1):
            clock = time.monotonic()
            state = spark.sparkContext.broadcast((links.neighbours, links.degree))
            try:
                ps, qs = _proposals(spark, static, state, len(cuts) - 1, params, round_no)
            finally:
                state.unpersist()
            if len(ps) == 0:
                break
            # Two nodes may propose to each other: one proposal. Then priority order, and acceptance.
            pairs = np.unique(np.column_stack([np.minimum(ps, qs), np.maximum(ps, qs)]), axis=0)
            us, vs = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
            order = np.lexsort((vs, us, kernels.pair_hashes(params.seed, round_no, us, vs)))
            added = links.add_round(us[order], vs[order], round_no, d)
            log.info(
                "SpiderCastM round %d: %d proposals, %d links, %.1fs (elapsed %.0fs)",
                round_no,
                len(us),
                added,
                time.monotonic() - clock,
                time.monotonic() - started,
            )
    finally:
        static.unpersist()
    log.info(
        "SpiderCastM: %d rounds, %d links, %.0fs", round_no, int(links.degree.sum()) // 2, time.monotonic() - started
    )
    return links.frame(spark)
