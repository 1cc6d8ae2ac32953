"""Rappel's measures (our reading: docs/readings/rappel.md, "Measures") as DataFrame operations over a
simulation's round results (`overlay.rappel.simulation.RoundResult`): per round, per delivery,
per node and round, per node at the end, and the trees' layout."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.rappel.feeds import NONE, TICKS_PER_ROUND, TRAFFIC_KINDS, layout
from overlay.rappel.simulation import DELIVERY, TRAFFIC, TREE
from overlay.rappel.tree_codec import decode

_SENT = "sent"


def _tagged(frames: list[tuple[int, DataFrame]]) -> DataFrame:
    """The frames of several rounds as one, each row with its round."""
    tagged = [frame.withColumn(S.ROUND, F.lit(r).cast("int")) for r, frame in frames]
    union = tagged[0]
    for frame in tagged[1:]:
        union = union.unionByName(frame)
    return union


def deliveries(steps: list[tuple[int, DataFrame]]) -> DataFrame:
    """The rounds' deliveries as `rappel_deliveries` rows (without run_id)."""
    rows = _tagged(steps).where(F.col("kind") == DELIVERY)
    return rows.select(
        S.ROUND,
        F.col("feed").alias(S.TOPIC_ID),
        S.UPDATE_ID,
        S.NODE_ID,
        S.PUBLISHED_MS,
        S.ARRIVAL_MS,
        (F.col(S.ARRIVAL_MS) - F.col(S.PUBLISHED_MS)).alias(S.LATENCY_MS),
        S.HOPS,
        S.DIRECT_MS,
    )


def traffic(friendships: list[tuple[int, DataFrame]], steps: list[tuple[int, DataFrame]]) -> DataFrame:
    """Per round and node online (or sending), over its feeds: `rappel_traffic` rows (without run_id)."""
    counts = _tagged(steps).where(F.col("kind") == TRAFFIC)
    trees = counts.groupBy(S.ROUND, S.NODE_ID).agg(
        *(F.sum(F.col("counts")[i]).cast("long").alias(name) for i, name in enumerate(TRAFFIC_KINDS))
    )
    friends = (
        _tagged(friendships)
        .where(F.col("online"))
        .select(
            S.ROUND,
            S.NODE_ID,
            F.aggregate(_SENT, F.lit(0).cast("long"), lambda total, x: total + x).alias(S.FRIENDSHIP_MESSAGES),
        )
    )
    both = trees.join(friends, [S.ROUND, S.NODE_ID], "full")
    return both.select(
        S.ROUND,
        S.NODE_ID,
        F.coalesce("data", F.lit(0)).cast("long").alias(S.DATA_MESSAGES),
        F.coalesce("join", F.lit(0)).cast("long").alias(S.JOINS),
        F.coalesce("joins_in", F.lit(0)).cast("long").alias(S.JOINS_IN),
        F.coalesce("rejoins_in", F.lit(0)).cast("long").alias(S.REJOINS_IN),
        F.coalesce("pings", F.lit(0)).cast("long").alias(S.TREE_PINGS),
        F.coalesce(S.FRIENDSHIP_MESSAGES, F.lit(0)).cast("long").alias(S.FRIENDSHIP_MESSAGES),
    )


def round_summary(
    friendships: list[tuple[int, DataFrame]], delivered: DataFrame, moved: DataFrame, subscriptions: DataFrame
) -> list[dict]:
    """One dict per round (the `rappel_rounds` columns but run_id, seconds, computed_at), from
    the rounds' friendship results, their `deliveries` and `traffic` rows and the instance's
    subscriptions (node_id, topic_id: noise is a delivery to a node not among them). Three
    aggregates, each one job."""
    nodes = (
        _tagged(friendships)
        .where(F.col("online"))
        .groupBy(S.ROUND)
        .agg(
            F.count(F.lit(1)).alias(S.NODES_UP),
            F.avg(F.size("friends")).alias(S.FRIENDS_AVG),
            F.sum("feeds").cast("long").alias(S.FEEDS),
            F.sum("covered").cast("long").alias(S.COVERED),
            F.sum(((F.col("covered") == F.col("feeds")) & (F.col("feeds") > 0)).cast("long")).alias(
                S.FULL_COVERAGE_NODES
            ),
        )
    )
    subscribed = subscriptions.select(S.NODE_ID, S.TOPIC_ID, F.lit(True).alias("subscribed"))
    arrivals = (
        delivered.join(subscribed, [S.NODE_ID, S.TOPIC_ID], "left")
        .groupBy(S.ROUND)
        .agg(
            F.count(F.lit(1)).alias(S.DELIVERIES),
            F.percentile(S.LATENCY_MS, F.lit(0.5)).alias(S.LATENCY_MEDIAN),
            F.percentile(S.LATENCY_MS, F.lit(0.95)).alias(S.LATENCY_P95),
            F.percentile(F.col(S.LATENCY_MS) / F.col(S.DIRECT_MS), F.lit(0.5)).alias(S.STRETCH_MEDIAN),
            F.sum(F.col("subscribed").isNull().cast("long")).alias(S.NOISE),
        )
    )
    messages = moved.groupBy(S.ROUND).agg(
        F.sum(S.DATA_MESSAGES).alias(S.DATA_MESSAGES),
        F.sum(F.col(S.JOINS) + F.col(S.TREE_PINGS) + F.col(S.FRIENDSHIP_MESSAGES)).alias(S.CONTROL_MESSAGES),
    )
    by_round = {r[S.ROUND]: r.asDict() for r in nodes.collect()}
    for extra in (arrivals.collect(), messages.collect()):
        for r in extra:
            by_round.setdefault(r[S.ROUND], {S.ROUND: r[S.ROUND]}).update(r.asDict())
    out = []
    for r, _ in friendships:
        row = by_round.get(r, {S.ROUND: r})
        feeds = row.get(S.FEEDS) or 0
        out.append(
            {
                S.ROUND: r,
                S.NODES_UP: row.get(S.NODES_UP, 0),
                S.FRIENDS_AVG: row.get(S.FRIENDS_AVG),
                S.FEEDS: feeds,
                S.COVERED: row.get(S.COVERED) or 0,
                S.COVERED_SHARE: (row.get(S.COVERED) or 0) / feeds if feeds else None,
                S.FULL_COVERAGE_NODES: row.get(S.FULL_COVERAGE_NODES) or 0,
                S.DELIVERIES: row.get(S.DELIVERIES, 0),
                S.LATENCY_MEDIAN: row.get(S.LATENCY_MEDIAN),
                S.LATENCY_P95: row.get(S.LATENCY_P95),
                S.STRETCH_MEDIAN: row.get(S.STRETCH_MEDIAN),
                S.NOISE: row.get(S.NOISE) or 0,
                S.DATA_MESSAGES: int(row.get(S.DATA_MESSAGES) or 0),
                S.CONTROL_MESSAGES: int(row.get(S.CONTROL_MESSAGES) or 0),
            }
        )
    return out


_LAYOUT_SCHEMA = pa.schema(
    [(S.TOPIC_ID, pa.int64()), (S.NODE_ID, pa.int64()), (S.PARENT, pa.int64()), (S.DEPTH, pa.int32())]
)


def tree_layout(step: DataFrame, round_: int) -> DataFrame:
    """Each feed's online members after `round_` with parent and depth (nulls for none):
    `feed_trees` rows without run_id."""

    def members(batches):
        for batch in batches:
            rows = [
                (feed, x, parent, depth)
                for feed, value in zip(batch.column("feed").to_pylist(), batch.column("tree").to_pylist())
                for x, parent, depth in layout(decode(feed, value))
            ]
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([r[0] for r in rows], pa.int64()),
                    pa.array([r[1] for r in rows], pa.int64()),
                    pa.array([None if r[2] == NONE else r[2] for r in rows], pa.int64()),
                    pa.array([None if r[3] == NONE else r[3] for r in rows], pa.int32()),
                ],
                schema=_LAYOUT_SCHEMA,
            )

    ddl = f"{S.TOPIC_ID} bigint, {S.NODE_ID} bigint, {S.PARENT} bigint, {S.DEPTH} int"
    trees = step.where(F.col("kind") == TREE).select("feed", "tree").mapInArrow(members, ddl)
    return trees.select(
        F.lit(round_).cast("int").alias(S.ROUND),
        S.TOPIC_ID,
        S.NODE_ID,
        S.PARENT,
        S.DEPTH,
        F.lit(round_ * TICKS_PER_ROUND).cast("int").alias(S.TICK),
    )


def node_summary(friendship: DataFrame, trees: DataFrame) -> DataFrame:
    """Each node at the end: feeds, covered, friends, and the neighbour overlap ratio (roles of
    friends, parents and children over all trees, over distinct such neighbours) from the last
    friendship results and the `tree_layout` rows."""
    links = trees.where(F.col(S.PARENT).isNotNull() & F.col(S.DEPTH).isNotNull())
    roles = (
        friendship.select(S.NODE_ID, F.explode("friends").alias("other"))
        .unionByName(links.select(F.col(S.NODE_ID), F.col(S.PARENT).alias("other")))
        .unionByName(links.select(F.col(S.PARENT).alias(S.NODE_ID), F.col(S.NODE_ID).alias("other")))
    )
    overlap = roles.groupBy(S.NODE_ID).agg(
        F.count(F.lit(1)).alias(S.OVERLAP_ROLES),
        F.countDistinct("other").alias(S.OVERLAP_NEIGHBOURS),
    )
    nodes = friendship.select(
        S.NODE_ID,
        F.col("feeds").cast("long").alias(S.FEEDS),
        F.col("covered").cast("long").alias(S.COVERED),
        F.size("friends").cast("long").alias(S.FRIENDS),
    )
    return nodes.join(overlap, S.NODE_ID, "left").select(
        S.NODE_ID,
        S.FEEDS,
        S.COVERED,
        S.FRIENDS,
        F.coalesce(S.OVERLAP_ROLES, F.lit(0)).cast("long").alias(S.OVERLAP_ROLES),
        F.coalesce(S.OVERLAP_NEIGHBOURS, F.lit(0)).cast("long").alias(S.OVERLAP_NEIGHBOURS),
        (F.col(S.OVERLAP_ROLES) / F.col(S.OVERLAP_NEIGHBOURS)).alias(S.OVERLAP_RATIO),
    )
