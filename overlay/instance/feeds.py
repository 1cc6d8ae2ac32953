"""The Rappel paper's way of cutting a feed workload out of a social graph (ComNet'09 section 5,
LiveJournal; our reading: docs/readings/rappel.md#feed-sample): journals are users, a journal's subscribers
its followers (of an undirected graph: its friends, each friendship two follows).

The rule, exactly, over the unique follow edges (subscriber, publisher):

1. every journal with a follower gets a pseudo-random rank `xxhash64(seed, "feed-seed", user)`;
   the `seeds` lowest-ranked are the seed journals;
2. the universe is every user who follows a seed journal;
3. the publishers are the `publishers` journals most followed from inside the universe (ties:
   the lower user id first);
4. a follow edge is kept when its subscriber is in the universe and its publisher is one of the
   publishers; every other edge is `unsampled`.

The nodes are then the kept edges' users (subscribers and publishers; a publisher need not
subscribe to anything), numbered as any social instance, so a feed's publisher is the node with
its key. Four Spark jobs whatever the graph's size; nothing is collected.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from overlay.lineage import LOCAL, Lineage

_RANK, _FOLLOWERS = "_rank", "_followers"


def feed_sample(
    edges: DataFrame,
    subscriber: str,
    publisher: str,
    seeds: int,
    publishers: int,
    seed: int,
    lineage: Lineage = LOCAL,
) -> DataFrame:
    """The kept (subscriber, publisher) pairs of unique follow edges (see the module doc)."""
    journals = edges.select(F.col(publisher).alias("_journal")).distinct()
    seed_journals = lineage.cut(
        journals.withColumn(_RANK, F.xxhash64(F.lit(seed), F.lit("feed-seed"), F.col("_journal")))
        .orderBy(_RANK, "_journal")
        .limit(seeds)
    )
    universe = lineage.cut(
        edges.join(seed_journals.select(F.col("_journal").alias(publisher)), on=publisher)
        .select(F.col(subscriber).alias("_member"))
        .distinct()
    )
    inside = edges.join(universe.select(F.col("_member").alias(subscriber)), on=subscriber)
    popular = Window.orderBy(F.col(_FOLLOWERS).desc(), F.col(publisher))
    chosen = lineage.cut(
        inside.groupBy(publisher)
        .agg(F.count(F.lit(1)).alias(_FOLLOWERS))
        .withColumn("_place", F.row_number().over(popular))
        .filter(F.col("_place") <= publishers)
        .select(publisher)
    )
    return inside.join(chosen, on=publisher).select(subscriber, publisher)
