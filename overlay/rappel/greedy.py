"""Fig. 1's analysis (our reading: docs/readings/rappel.md, "Friend coverage bound"): how well could k friends cover a
node's feeds? Per node, the greedy best friends from everyone: each pick the node covering most
of its feeds not yet covered (ties: the smaller id), until k picks or nothing is left to cover.
Not the protocol (whose friends come from votes and audits with distance in the utility): the
bound the paper compares it with."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.gossip.baselines import Knowledge
from overlay.gossip.cycles import built, shared_builder


def best_friends(p: int, knowledge: Knowledge, k: int) -> tuple[list[int], list[int]]:
    """p's greedy best friends (at most k, in pick order) and the feeds covered after each pick."""
    candidates, member, _ = knowledge.matrix(p, knowledge.sharing(p))
    covered = np.zeros(member.shape[1], dtype=bool)
    chosen, after = [], []
    while len(chosen) < k and len(candidates):
        counts = member[:, ~covered].sum(axis=1)
        best = int(np.argmax(counts))  # the first of the most: the smaller id
        if counts[best] == 0:
            break
        chosen.append(int(candidates[best]))
        covered |= member[best]
        after.append(int(covered.sum()))
    return chosen, after


COVERAGE_DDL = f"{S.NODE_ID} bigint, {S.FEEDS} bigint, {S.FRIENDS} array<bigint>, covered_after array<int>"


def sampled_nodes(subscriptions: DataFrame, min_feeds: int, sample: int, seed: int) -> DataFrame:
    """(id): `sample` nodes of at least `min_feeds` feeds, those of least `xxhash64(seed, node)`
    (Fig. 1: 1,000 LiveJournal users with at least 5 feeds)."""
    return (
        subscriptions.groupBy(S.NODE_ID)
        .agg(F.count(F.lit(1)).alias("_feeds"))
        .filter(F.col("_feeds") >= min_feeds)
        .orderBy(F.xxhash64(F.lit(seed), F.lit("fig1-sample"), F.col(S.NODE_ID)), S.NODE_ID)
        .limit(sample)
        .select(F.col(S.NODE_ID).alias("id"))
    )


def best_friend_coverage(
    spark: SparkSession,
    offsets: np.ndarray,
    topics: np.ndarray,
    k: int,
    partitions: int,
    nodes: DataFrame | None = None,
) -> DataFrame:
    """The feeds, greedy best friends (at most k) and the feeds covered after each pick of every
    node, or of `nodes` (id) (one `mapInArrow` over the nodes; the subscriptions reach the
    executors as a broadcast)."""
    shared = shared_builder(spark, Knowledge, (offsets, topics))

    def coverage(batches):
        knowledge = built(shared)
        for batch in batches:
            nodes = batch.column("id").to_pylist()
            picks = [best_friends(p, knowledge, k) for p in nodes]
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(nodes, pa.int64()),
                    pa.array(knowledge.sizes_of(np.asarray(nodes, dtype=np.int64)), pa.int64()),
                    pa.array([c for c, _ in picks], pa.list_(pa.int64())),
                    pa.array([a for _, a in picks], pa.list_(pa.int32())),
                ],
                names=[S.NODE_ID, S.FEEDS, S.FRIENDS, "covered_after"],
            )

    if nodes is None:
        nodes = spark.range(len(offsets) - 1, numPartitions=partitions)
    else:
        nodes = nodes.select(F.col("id").cast("long")).repartition(partitions)
    return nodes.mapInArrow(coverage, COVERAGE_DDL)


def full_coverage_by_friends(rows: DataFrame, keys: list[str]) -> DataFrame:
    """Per group of `keys` and j = 1..k (`friend_bound` rows: k, feeds, covered_after): the
    nodes, and the share whose first j greedy picks cover all their feeds (a node whose picks
    stopped early keeps its last coverage). Columns: *keys, friends, nodes, full_coverage_nodes,
    full_coverage_share."""
    covered = F.coalesce(
        F.try_element_at(S.COVERED_AFTER, F.col("friends")), F.try_element_at(S.COVERED_AFTER, F.lit(-1)), F.lit(0)
    )
    full = (covered == F.col(S.FEEDS)).cast("long")
    return (
        rows.select(*keys, S.FEEDS, S.COVERED_AFTER, F.explode(F.sequence(F.lit(1), F.col(S.K))).alias("friends"))
        .groupBy(*keys, "friends")
        .agg(
            F.count(F.lit(1)).alias("nodes"),
            F.sum(full).alias("full_coverage_nodes"),
            F.avg(full.cast("double")).alias("full_coverage_share"),
        )
    )
