"""Topic connectivity up to k: is an overlay a kTCO (PODC'13 Def. 1; docs/readings/ktco.md#validity)?

A kTCO keeps every topic subgraph G(t) k-connected, or a clique when the topic has at most k
subscribers. Per topic this needs the vertex connectivity kappa(G(t)) only up to k, so each
topic is checked on its own, in a task (`groupBy(topic).applyInPandas`; the topic subgraphs are
small next to the instance), by the compiled `overlay.kappa`: connectedness for k = 1,
biconnectedness for k = 2 (linear time), and for k >= 3 Even's algorithm with every max-flow cut
off at the best bound so far. A clique on n vertices counts n - 1, as Def. 1 needs."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.graph import DST, SRC
from overlay.kappa import connectivity_upto
from overlay.quality import NODE_BITS, topic_graph


def is_k_connected_topic(subscribers: int, edges: int, connectivity: int, k: int) -> bool:
    """Def. 1 for one topic: at most one subscriber, a clique of at most k, or kappa >= k."""
    if subscribers <= 1:
        return True
    if subscribers <= k:
        return edges == subscribers * (subscribers - 1) // 2
    return connectivity >= k


TOPIC_SCHEMA = (
    f"{S.TOPIC_ID} long, {S.SUBSCRIBERS} long, {S.EDGES} long, {S.CONNECTIVITY} int, {S.K_CONNECTED} boolean"
)


def topic_connectivity(subscriptions: DataFrame, edges: DataFrame, k: int) -> DataFrame:
    """(topic_id, subscribers, edges, connectivity, k_connected) for every subscribed topic:
    `connectivity` is min(kappa(G(t)), k), `edges` the distinct links inside G(t).

    subscriptions: (node_id, topic_id), ids that `overlay.quality.check_id_ranges` allows; edges:
    (u, v) overlay links in node ids, any order, repeats and self-loops allowed."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    _, topic_edges = topic_graph(subscriptions, edges)  # packed (topic, node) ids, both in t
    mask = F.lit((1 << NODE_BITS) - 1)
    inside = topic_edges.filter(F.col(SRC) != F.col(DST)).select(
        F.least(SRC, DST).alias(SRC), F.greatest(SRC, DST).alias(DST)
    ).distinct().select(
        F.shiftright(SRC, NODE_BITS).alias(S.TOPIC_ID),
        F.col(SRC).bitwiseAND(mask).alias(S.U), F.col(DST).bitwiseAND(mask).alias(S.V),
    )
    rows = subscriptions.select(
        S.TOPIC_ID, S.NODE_ID, F.lit(None).cast("long").alias(S.U), F.lit(None).cast("long").alias(S.V)
    ).unionByName(inside.select(S.TOPIC_ID, F.lit(None).cast("long").alias(S.NODE_ID), S.U, S.V))

    def per_topic(frame: pd.DataFrame) -> pd.DataFrame:
        nodes = frame[S.NODE_ID].dropna().astype("int64").unique()
        pairs = frame.loc[frame[S.U].notna(), [S.U, S.V]].astype("int64").to_numpy()
        subscribers, edge_count = len(nodes), len(pairs)
        connectivity = connectivity_upto(nodes, pairs, k)
        return pd.DataFrame({
            S.TOPIC_ID: [int(frame[S.TOPIC_ID].iloc[0])], S.SUBSCRIBERS: [subscribers], S.EDGES: [edge_count],
            S.CONNECTIVITY: [connectivity],
            S.K_CONNECTED: [is_k_connected_topic(subscribers, edge_count, connectivity, k)],
        })

    return rows.groupBy(S.TOPIC_ID).applyInPandas(per_topic, TOPIC_SCHEMA)


@dataclass(frozen=True)
class KtcoSummary:
    k: int
    topics: int
    k_connected_topics: int

    @property
    def share(self) -> float:
        return self.k_connected_topics / self.topics if self.topics else 1.0

    @property
    def is_ktco(self) -> bool:
        return self.k_connected_topics == self.topics


def summarise_ktco(per_topic: DataFrame, k: int) -> KtcoSummary:
    """How many topics are fine for k (one aggregate over `topic_connectivity` rows)."""
    row = per_topic.agg(
        F.count(F.lit(1)).alias("topics"),
        F.coalesce(F.sum(F.col(S.K_CONNECTED).cast("long")), F.lit(0)).alias("fine"),
    ).first()
    return KtcoSummary(k, int(row["topics"]), int(row["fine"]))
