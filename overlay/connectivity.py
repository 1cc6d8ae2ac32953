"""Topic connectivity up to k: is an overlay a kTCO (PODC'13 Def. 1; docs/readings/ktco.md#validity)?

A kTCO keeps every topic subgraph G(t) k-connected, or a clique when the topic has at most k
subscribers. Per topic this needs the vertex connectivity kappa(G(t)) only up to k, so each
topic is checked on its own, in a task (its rows gathered by a repartition on the topic; the
topic subgraphs are small next to the instance), by the compiled `overlay.kappa`: connectedness for k = 1,
biconnectedness for k = 2 (linear time), and for k >= 3 Even's algorithm with every max-flow cut
off at the best bound so far. A clique on n vertices counts n - 1, as Def. 1 needs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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

    # Every row of a topic in one partition, in topic order; each task then walks its topics in
    # one pass (a pandas group per topic costs milliseconds: minutes on a social graph's topics).
    by_topic = rows.repartition(S.TOPIC_ID).sortWithinPartitions(S.TOPIC_ID)
    return by_topic.mapInArrow(_topics_in_partition(k), TOPIC_SCHEMA)


ROW_SCHEMA = pa.schema([(name, pa.int64()) for name in (S.TOPIC_ID, S.NODE_ID, S.U, S.V)])


def _topics_in_partition(k: int):
    """The executor side of `topic_connectivity` (a `mapInArrow` function over rows sorted by
    topic: a subscriber row has a node id, a link row its two ends)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # The input's nullability follows the source tables (a Delta column may be NOT NULL), so
        # each batch is cast to the rows' schema rather than compared with it.
        table = pa.Table.from_batches([batch.cast(ROW_SCHEMA) for batch in batches], schema=ROW_SCHEMA)
        if table.num_rows == 0:
            return
        topic, node, u, v = (
            pc.fill_null(table.column(name), -1).to_numpy() for name in (S.TOPIC_ID, S.NODE_ID, S.U, S.V)
        )
        starts = np.flatnonzero(np.r_[True, topic[1:] != topic[:-1]])
        ends = np.r_[starts[1:], len(topic)]
        result = {name: [] for name in (S.TOPIC_ID, S.SUBSCRIBERS, S.EDGES, S.CONNECTIVITY, S.K_CONNECTED)}
        for start, end in zip(starts.tolist(), ends.tolist()):
            nodes = np.unique(node[start:end][node[start:end] >= 0])
            is_link = u[start:end] >= 0
            pairs = np.column_stack([u[start:end][is_link], v[start:end][is_link]])
            connectivity = connectivity_upto(nodes, pairs, k)
            result[S.TOPIC_ID].append(int(topic[start]))
            result[S.SUBSCRIBERS].append(len(nodes))
            result[S.EDGES].append(len(pairs))
            result[S.CONNECTIVITY].append(connectivity)
            result[S.K_CONNECTED].append(is_k_connected_topic(len(nodes), len(pairs), connectivity, k))
        yield pa.RecordBatch.from_pydict({
            S.TOPIC_ID: pa.array(result[S.TOPIC_ID], pa.int64()),
            S.SUBSCRIBERS: pa.array(result[S.SUBSCRIBERS], pa.int64()),
            S.EDGES: pa.array(result[S.EDGES], pa.int64()),
            S.CONNECTIVITY: pa.array(result[S.CONNECTIVITY], pa.int32()),
            S.K_CONNECTED: pa.array(result[S.K_CONNECTED], pa.bool_()),
        })

    return run


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
