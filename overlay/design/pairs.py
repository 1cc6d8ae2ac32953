"""Shared-topic counts |T(u) & T(v)| for every node pair that shares a topic.

These counts are the gains of all edges on the empty overlay, and, because gains never grow
(NOTES.md section 2), upper bounds on every later gain: the greedy engine starts its candidate
table from them and never needs them again.

A plain self-join of the subscriptions on topic costs sum |V(t)|^2 / 2 rows: 8.6e7 on the
ICDCS'16 Zipf 1K x 1K workload, 1.1e9 on Zipf 10K, almost all of it from a few popular topics.
So topics are split by size:

* light topics (fewer than `heavy_threshold` subscribers) are self-joined on topic and counted;
* heavy topics (at most `64 * max_heavy_words` of the largest) become a bitset per node, and the
  pairs of nodes holding a heavy topic are counted with `bit_count(x & y)` over a few longs.

The heavy part is a cross join of the nodes that hold a heavy topic, which is what the pairs
sharing a popular topic are anyway; the two counts add up because every topic is in one part.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.frames import local_frame

SHARED = "shared"
HEAVY_BITS = 64


def heavy_threshold_for(node_count: int) -> int:
    """Topics this large go to the bitset: a topic with n/16 subscribers costs n^2/512 join rows."""
    return max(64, node_count // 16)


def shared_topic_counts(
    subscriptions: DataFrame,
    heavy_threshold: int,
    max_heavy_words: int = 32,
) -> DataFrame:
    """(u, v, shared) for u < v with shared = |T(u) & T(v)| > 0."""
    subscriptions = subscriptions.select(S.NODE_ID, S.TOPIC_ID)
    sizes = subscriptions.groupBy(S.TOPIC_ID).agg(F.count("*").alias("_size"))
    ranked = sizes.filter(F.col("_size") >= heavy_threshold).orderBy(F.desc("_size"), S.TOPIC_ID)
    heavy = ranked.limit(HEAVY_BITS * max_heavy_words).select(S.TOPIC_ID).collect()  # bounded
    heavy_ids = [row[S.TOPIC_ID] for row in heavy]
    light_pairs = _light_pairs(subscriptions, heavy_ids)
    if not heavy_ids:
        return light_pairs
    heavy_pairs = _heavy_pairs(subscriptions, heavy_ids)
    return (
        light_pairs.unionByName(heavy_pairs)
        .groupBy(S.U, S.V)
        .agg(F.sum(SHARED).cast("long").alias(SHARED))
    )


def _light_pairs(subscriptions: DataFrame, heavy_ids: list[int]) -> DataFrame:
    light = subscriptions.filter(~F.col(S.TOPIC_ID).isin(heavy_ids)) if heavy_ids else subscriptions
    left = light.select(F.col(S.NODE_ID).alias(S.U), S.TOPIC_ID)
    right = light.select(F.col(S.NODE_ID).alias(S.V), S.TOPIC_ID)
    return (
        left.join(right, on=S.TOPIC_ID)
        .filter(F.col(S.U) < F.col(S.V))
        .groupBy(S.U, S.V)
        .agg(F.count("*").alias(SHARED))
    )


def _heavy_pairs(subscriptions: DataFrame, heavy_ids: list[int]) -> DataFrame:
    spark = subscriptions.sparkSession
    words = (len(heavy_ids) + HEAVY_BITS - 1) // HEAVY_BITS
    index = local_frame(spark, [(topic, i) for i, topic in enumerate(heavy_ids)], f"{S.TOPIC_ID} long, _bit int")
    bits = (
        subscriptions.join(F.broadcast(index), on=S.TOPIC_ID)
        .groupBy(S.NODE_ID, (F.col("_bit") / HEAVY_BITS).cast("int").alias("_word"))
        .agg(F.bit_or(F.expr(f"shiftleft(1L, _bit % {HEAVY_BITS})")).alias("_bits"))
    )
    word_columns = [f"w{i}" for i in range(words)]
    vectors = (
        bits.groupBy(S.NODE_ID)
        .pivot("_word", list(range(words)))
        .agg(F.first("_bits"))
        .toDF(S.NODE_ID, *word_columns)
        .na.fill(0)
    )
    left = vectors.select(F.col(S.NODE_ID).alias(S.U), *[F.col(w).alias("l" + w) for w in word_columns])
    right = vectors.select(F.col(S.NODE_ID).alias(S.V), *[F.col(w).alias("r" + w) for w in word_columns])
    shared = sum(
        (F.bit_count(F.col("l" + w).bitwiseAND(F.col("r" + w))) for w in word_columns), F.lit(0)
    )
    return (
        left.join(right, F.col(S.U) < F.col(S.V))
        .select(S.U, S.V, shared.cast("long").alias(SHARED))
        .filter(F.col(SHARED) > 0)
    )
