"""The routing tables of a small-world overlay, in ring positions (the small-world ids).

BeaConvey Data Structure 3: each node knows its fingers and, per topic, its nearest subscriber
clockwise. Here they are two small DataFrames a superstep joins its messages with:

* `fingers`: (at, fdist, flat) with `fdist` the sorted clockwise distances of the node's
  fingers and `flat` the latency of each (ms, same order; null without coordinates);
* `topics`: (topic_id, subs) with `subs` the sorted positions of the topic's subscribers, from
  which a node's nearest subscriber and its subscribed fingers follow;
* `subscribed`: (topic_id, at) for the metrics (who is a pure forwarder);
* `rendezvous` (optional): (topic_id, rp) when the topics' trees are rooted at given nodes (their
  feed publishers, as Rappel's are) instead of where the topic hashes (`routing.trees`).

Link latencies, when the node coordinates are given, are the Euclidean distances of the two
nodes' coordinates (ms), as Rappel's (`overlay.rappel.coordinates`): a message adds each hop's
latency, so every protocol reports latency beside hops.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.lineage import LOCAL, Lineage
from overlay.smallworld.geometry import clockwise_column

AT, LOW, HIGH, HOPS, KIND, KEY, TARGET = "at", "low", "high", "hops", "kind", "key", "target"
FDIST, FLAT, SUBS, LATENCY, RP, SENDER = "fdist", "flat", "subs", "latency", "rp", "sender"


@dataclass(frozen=True)
class Network:
    n: int
    positions: DataFrame  # (node_id, at)
    fingers: DataFrame  # (at, fdist, flat)
    topics: DataFrame  # (topic_id, subs)
    subscribed: DataFrame  # (topic_id, at)
    rendezvous: DataFrame | None = None  # (topic_id, rp)
    coordinates: DataFrame | None = None  # (at, x_ms, y_ms) when links have latencies
    lineage: Lineage = LOCAL  # how these tables and every superstep's messages are checkpointed

    @property
    def latencies(self) -> bool:
        """Whether `flat` holds link latencies (the network was built with coordinates)."""
        return self.coordinates is not None


def build_network(
    ring: DataFrame,
    fingers: DataFrame,
    subscriptions: DataFrame,
    n: int,
    coordinates: DataFrame | None = None,
    rendezvous: DataFrame | None = None,
    lineage: Lineage = LOCAL,
) -> Network:
    """Routing tables from a run's ring (node_id, position), fingers (node_id, phase, finger) and
    the instance's subscriptions (node_id, topic_id); optionally the nodes' coordinates (node_id,
    x_ms, y_ms) for link latencies and each topic's root (topic_id, node_id) for Scribe's and
    iScribe's trees. All checkpointed (`lineage`: reliable on a cluster): they are joined every
    superstep; the routing run over the network checkpoints the same way."""
    positions = lineage.cut(ring.select(S.NODE_ID, F.col(S.POSITION).alias(AT)))
    to = positions.select(F.col(S.NODE_ID).alias(S.FINGER), F.col(AT).alias("_to"))
    links = fingers.select(S.NODE_ID, S.FINGER).join(positions, on=S.NODE_ID).join(to, on=S.FINGER)
    if coordinates is not None:
        here = coordinates.select(S.NODE_ID, F.col(S.X_MS).alias("_x"), F.col(S.Y_MS).alias("_y"))
        there = coordinates.select(
            F.col(S.NODE_ID).alias(S.FINGER), F.col(S.X_MS).alias("_fx"), F.col(S.Y_MS).alias("_fy")
        )
        latency = F.sqrt((F.col("_x") - F.col("_fx")) ** 2 + (F.col("_y") - F.col("_fy")) ** 2)
        links = links.join(here, on=S.NODE_ID).join(there, on=S.FINGER)
    else:
        latency = F.lit(None).cast("double")
    # (distance, latency) pairs sorted by distance; a finger reached in two phases appears once.
    pairs = F.array_sort(
        F.collect_set(F.struct(clockwise_column(F.col(AT), F.col("_to"), n).alias("d"), latency.alias("l")))
    )
    finger_table = lineage.cut(
        links.groupBy(AT)
        .agg(pairs.alias("_pairs"))
        .select(AT, F.col("_pairs.d").alias(FDIST), F.col("_pairs.l").alias(FLAT))
    )
    subscribed = lineage.cut(subscriptions.join(positions, on=S.NODE_ID).select(S.TOPIC_ID, AT).distinct())
    topics = lineage.cut(subscribed.groupBy(S.TOPIC_ID).agg(F.array_sort(F.collect_list(AT)).alias(SUBS)))
    placed = None
    if coordinates is not None:
        placed = lineage.cut(coordinates.join(positions, on=S.NODE_ID).select(AT, S.X_MS, S.Y_MS))
    roots = None
    if rendezvous is not None:
        roots = lineage.cut(rendezvous.join(positions, on=S.NODE_ID).select(S.TOPIC_ID, F.col(AT).alias(RP)))
    return Network(
        n=n,
        positions=positions,
        fingers=finger_table,
        topics=topics,
        subscribed=subscribed,
        rendezvous=roots,
        coordinates=placed,
        lineage=lineage,
    )
