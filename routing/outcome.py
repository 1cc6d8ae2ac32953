"""From arrivals to what a routing run reports: deliveries, per-node load, per-publication
counts, the metrics of BeaConvey section 4.2, and the exactly-once check.

* A node *receives* every message that arrives at it and *sends* every message it passes on
  (ComNet'09 Fig. 10's data traffic per node).
* A *pure forward* is a message received by a node not subscribed to its topic: their sum is
  the routing overhead.
* A *delivery* is a message addressed to a subscriber (see `routing.simulate`), other than the
  publication's own publisher. A subscriber that relays a message addressed further on does not
  deliver it then.
* A delivery's *latency* is the sum of the link latencies along its path, its *direct* latency
  the publisher's link latency to the subscriber, their ratio its stretch (all null when the
  network has no latencies); the metrics give their median and 95th percentile (exact).
* Expected deliveries: every (publication, subscriber of its topic except the publisher).
  Every protocol here must deliver each exactly once; the first pair that does not is the run's
  counter-example.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from routing.network import AT, HOPS, LATENCY, SENDER, SUBS, TARGET, Network
from routing.simulate import Simulation


@dataclass
class Outcome:
    deliveries: DataFrame | pa.Table  # (pub_id, node_id, hops, latency_ms, direct_ms)
    load: DataFrame | pa.Table  # (node_id, received, pure_forwards, delivered, sent)
    per_publication: DataFrame | pa.Table  # (pub_id, topic_id, publisher, received, pure_forwards, deliveries)
    metrics: dict
    counter_example: str | None


def summarise(simulation: Simulation, network: Network, publications: DataFrame) -> Outcome:
    """publications: (pub_id, topic_id, publisher) with the publisher as a ring position."""
    subscribed = network.subscribed.withColumn("_sub", F.lit(True))
    arrivals = network.lineage.cut(
        simulation.arrivals.join(subscribed, on=[S.TOPIC_ID, AT], how="left")
        .withColumn("_sub", F.coalesce(F.col("_sub"), F.lit(False)))
        .withColumn("_delivered", F.col(TARGET) & F.col("_sub") & (F.col(AT) != F.col(S.PUBLISHER)))
        .withColumn("_pure", ~F.col("_sub"))
        .select(S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, AT, HOPS, LATENCY, SENDER, "_delivered", "_pure")
    )
    node_of = network.positions  # (node_id, at)
    delivered = arrivals.filter("_delivered")
    deliveries = _with_direct(delivered.join(node_of, on=AT), network).select(
        S.PUB_ID,
        S.NODE_ID,
        F.col(HOPS).cast("int").alias(HOPS),
        F.col(LATENCY).alias(S.LATENCY_MS),
        S.DIRECT_MS,
    )
    per_node = arrivals.groupBy(AT).agg(
        F.count("*").alias(S.RECEIVED),
        F.sum(F.col("_pure").cast("long")).alias(S.PURE_FORWARDS),
        F.sum(F.col("_delivered").cast("long")).alias(S.DELIVERED),
    )
    sent = arrivals.groupBy(F.col(SENDER).alias(AT)).agg(F.count("*").alias(S.SENT))
    load = (
        node_of.join(per_node, on=AT, how="left")
        .join(sent, on=AT, how="left")
        .select(
            S.NODE_ID,
            *[
                F.coalesce(F.col(c), F.lit(0)).cast("long").alias(c)
                for c in (S.RECEIVED, S.PURE_FORWARDS, S.DELIVERED, S.SENT)
            ],
        )
    )
    per_pub_counts = arrivals.groupBy(S.PUB_ID).agg(
        F.count("*").alias(S.RECEIVED),
        F.sum(F.col("_pure").cast("long")).alias(S.PURE_FORWARDS),
        F.sum(F.col("_delivered").cast("long")).alias(S.DELIVERIES),
    )
    publisher_node = node_of.select(F.col(AT).alias(S.PUBLISHER), F.col(S.NODE_ID).alias("_publisher"))
    per_publication = (
        publications.join(per_pub_counts, on=S.PUB_ID, how="left")
        .join(publisher_node, on=S.PUBLISHER)
        .select(
            S.PUB_ID,
            S.TOPIC_ID,
            F.col("_publisher").alias(S.PUBLISHER),
            *[
                F.coalesce(F.col(c), F.lit(0)).cast("long").alias(c)
                for c in (S.RECEIVED, S.PURE_FORWARDS, S.DELIVERIES)
            ],
        )
    )
    expected = (
        publications.join(network.topics, on=S.TOPIC_ID)
        .select(S.PUB_ID, S.TOPIC_ID, S.PUBLISHER, F.explode(SUBS).alias(AT))
        .filter(F.col(AT) != F.col(S.PUBLISHER))
        .withColumn("_expected", F.lit(True))
    )
    counts = delivered.groupBy(S.PUB_ID, AT).agg(F.count("*").alias("_times"))
    check = network.lineage.cut(
        expected.join(counts, on=[S.PUB_ID, AT], how="full").withColumn("_times", F.coalesce(F.col("_times"), F.lit(0)))
    )
    # One job for the counts of the check, the routing overhead, the publications and the paths.
    path_stats = deliveries.agg(
        F.avg(HOPS).alias("avg"),
        F.max(HOPS).alias("max"),
        F.percentile(S.LATENCY_MS, F.lit(0.5)).alias(S.LATENCY_MEDIAN),
        F.percentile(S.LATENCY_MS, F.lit(0.95)).alias(S.LATENCY_P95),
        F.percentile(F.try_divide(F.col(S.LATENCY_MS), F.col(S.DIRECT_MS)), F.lit(0.5)).alias(S.STRETCH_MEDIAN),
    )
    totals = (
        check.agg(
            F.sum(F.col("_expected").isNotNull().cast("long")).alias("expected"),
            F.sum("_times").alias("deliveries"),
            F.sum((F.col("_times") > 0).cast("long")).alias("distinct"),
            F.sum(((F.col("_times") == 0) & F.col("_expected").isNotNull()).cast("long")).alias("missing"),
            F.sum(((F.col("_times") != 1) | F.col("_expected").isNull()).cast("long")).alias("wrong"),
        )
        .crossJoin(arrivals.agg(F.sum(F.col("_pure").cast("long")).alias("pure")))
        .crossJoin(publications.agg(F.count("*").alias("publications")))
        .crossJoin(path_stats)
        .first()
    )
    overhead = totals["pure"] or 0
    expected_total = int(totals["expected"] or 0)
    deliveries_total = int(totals["deliveries"] or 0)
    distinct_total = int(totals["distinct"] or 0)
    metrics = {
        S.PUBLICATIONS: int(totals["publications"]),
        S.ROUTING_OVERHEAD: int(overhead),
        S.AVG_PATH_LENGTH: None if totals["avg"] is None else float(totals["avg"]),
        S.MAX_PATH_LENGTH: None if totals["max"] is None else int(totals["max"]),
        **{
            c: None if totals[c] is None else float(totals[c])
            for c in (S.LATENCY_MEDIAN, S.LATENCY_P95, S.STRETCH_MEDIAN)
        },
        S.DELIVERY_RATIO: 1.0 if expected_total == 0 else distinct_total / expected_total,
        S.DUPLICATE_DELIVERIES: deliveries_total - distinct_total,
        S.MISSING_DELIVERIES: int(totals["missing"] or 0),
        S.DELIVERIES: deliveries_total,
        S.EXPECTED_DELIVERIES: expected_total,
        S.MESSAGES: simulation.messages,
        S.SUPERSTEPS: simulation.supersteps,
    }
    wrong = int(totals["wrong"] or 0)  # the counter-example's query only when there is one
    return Outcome(deliveries, load, per_publication, metrics, _counter_example(check, node_of) if wrong else None)


def _with_direct(delivered: DataFrame, network: Network) -> DataFrame:
    """`delivered` (with publisher and at positions) and `direct_ms`: the distance of the two
    nodes' coordinates, null when the network has none."""
    if network.coordinates is None:
        return delivered.withColumn(S.DIRECT_MS, F.lit(None).cast("double"))
    at = network.coordinates.select(AT, F.col(S.X_MS).alias("_x"), F.col(S.Y_MS).alias("_y"))
    publisher = network.coordinates.select(
        F.col(AT).alias(S.PUBLISHER), F.col(S.X_MS).alias("_px"), F.col(S.Y_MS).alias("_py")
    )
    direct = F.sqrt((F.col("_x") - F.col("_px")) ** 2 + (F.col("_y") - F.col("_py")) ** 2)
    return delivered.join(at, on=AT).join(publisher, on=S.PUBLISHER).withColumn(S.DIRECT_MS, direct)


def _counter_example(check: DataFrame, node_of: DataFrame) -> str | None:
    """The first (publication, node) not delivered exactly once, in words."""
    wrong = check.filter((F.col("_times") != 1) | F.col("_expected").isNull()).orderBy(S.PUB_ID, AT).limit(1).collect()
    if not wrong:
        return None
    row = wrong[0]
    nodes = dict(
        (r[AT], r[S.NODE_ID])
        for r in node_of.filter(
            F.col(AT).isin([row[AT], row[S.PUBLISHER]] if row[S.PUBLISHER] is not None else [row[AT]])
        ).collect()
    )
    return counter_example_text(
        row[S.PUB_ID],
        row[S.TOPIC_ID] if row["_expected"] is not None else None,
        nodes.get(row[S.PUBLISHER]),
        nodes.get(row[AT]),
        row["_times"],
    )


def counter_example_text(pub_id: int, topic: int | None, publisher: int | None, node: int, times: int) -> str:
    """A pair not delivered exactly once, in words; `topic` None: the node does not subscribe."""
    if topic is None:
        return f"publication {pub_id}: node {node} was delivered it {times} times but does not subscribe"
    return (
        f"publication {pub_id} (topic {topic}, published by node {publisher}): "
        f"subscriber node {node} received it {times} times, not once"
    )
