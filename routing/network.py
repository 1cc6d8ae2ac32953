"""The routing tables of a small-world overlay, in ring positions (the small-world ids).

BeaConvey Data Structure 3: each node knows its fingers and, per topic, its nearest subscriber
clockwise. Here they are two small DataFrames a superstep joins its messages with:

* `fingers`: (at, fdist) with `fdist` the sorted clockwise distances of the node's fingers;
* `topics`: (topic_id, subs) with `subs` the sorted positions of the topic's subscribers, from
  which a node's nearest subscriber and its subscribed fingers follow;
* `subscribed`: (topic_id, at) for the metrics (who is a pure forwarder).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.smallworld.geometry import clockwise_column

AT, LOW, HIGH, HOPS, KIND, KEY, TARGET = "at", "low", "high", "hops", "kind", "key", "target"
FDIST, SUBS = "fdist", "subs"


@dataclass(frozen=True)
class Network:
    n: int
    positions: DataFrame  # (node_id, at)
    fingers: DataFrame  # (at, fdist)
    topics: DataFrame  # (topic_id, subs)
    subscribed: DataFrame  # (topic_id, at)


def build_network(ring: DataFrame, fingers: DataFrame, subscriptions: DataFrame, n: int) -> Network:
    """Routing tables from a run's ring (node_id, position), fingers (node_id, phase, finger) and
    the instance's subscriptions (node_id, topic_id); all checkpointed, they are joined every
    superstep."""
    positions = ring.select(S.NODE_ID, F.col(S.POSITION).alias(AT)).localCheckpoint(eager=True)
    to = positions.select(F.col(S.NODE_ID).alias(S.FINGER), F.col(AT).alias("_to"))
    finger_table = (
        fingers.join(positions, on=S.NODE_ID).join(to, on=S.FINGER)
        .groupBy(AT)
        .agg(F.array_sort(F.collect_set(clockwise_column(F.col(AT), F.col("_to"), n))).alias(FDIST))
        .localCheckpoint(eager=True)
    )
    subscribed = (
        subscriptions.join(positions, on=S.NODE_ID).select(S.TOPIC_ID, AT).distinct().localCheckpoint(eager=True)
    )
    topics = (
        subscribed.groupBy(S.TOPIC_ID).agg(F.array_sort(F.collect_list(AT)).alias(SUBS)).localCheckpoint(eager=True)
    )
    return Network(n=n, positions=positions, fingers=finger_table, topics=topics, subscribed=subscribed)
