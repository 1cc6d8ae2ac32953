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

import numba as nb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.csr import run_starts, undirected_csr
from overlay.graph import DST, SRC
from overlay.kappa import csr_connectivity_upto
from overlay.quality import NODE_BITS, topic_graph


def is_k_connected_topic(subscribers, edges, connectivity, k: int):
    """Def. 1 for a topic (or for arrays of them): at most one subscriber, a clique of at most k,
    or kappa >= k."""
    clique = edges == subscribers * (subscribers - 1) // 2
    return (subscribers <= 1) | np.where(subscribers <= k, clique, connectivity >= k)


TOPIC_SCHEMA = f"{S.TOPIC_ID} long, {S.SUBSCRIBERS} long, {S.EDGES} long, {S.CONNECTIVITY} int, {S.K_CONNECTED} boolean"


def topic_connectivity(subscriptions: DataFrame, edges: DataFrame, k: int) -> DataFrame:
    """(topic_id, subscribers, edges, connectivity, k_connected) for every subscribed topic:
    `connectivity` is min(kappa(G(t)), k), `edges` the distinct links inside G(t).

    subscriptions: (node_id, topic_id), ids that `overlay.quality.check_id_ranges` allows; edges:
    (u, v) overlay links in node ids, any order, repeats and self-loops allowed."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    _, topic_edges = topic_graph(subscriptions, edges)  # packed (topic, node) ids, both in t
    mask = F.lit((1 << NODE_BITS) - 1)
    inside = (
        topic_edges.filter(F.col(SRC) != F.col(DST))
        .select(F.least(SRC, DST).alias(SRC), F.greatest(SRC, DST).alias(DST))
        .distinct()
        .select(
            F.shiftright(SRC, NODE_BITS).alias(S.TOPIC_ID),
            F.col(SRC).bitwiseAND(mask).alias(S.U),
            F.col(DST).bitwiseAND(mask).alias(S.V),
        )
    )
    rows = subscriptions.select(
        S.TOPIC_ID, S.NODE_ID, F.lit(None).cast("long").alias(S.U), F.lit(None).cast("long").alias(S.V)
    ).unionByName(inside.select(S.TOPIC_ID, F.lit(None).cast("long").alias(S.NODE_ID), S.U, S.V))

    # Every row of a topic in one partition; each task then checks all its topics in one compiled
    # pass (a Python step per topic costs a millisecond: minutes on a social graph's topics).
    by_topic = rows.repartition(S.TOPIC_ID)
    return by_topic.mapInArrow(_topics_in_partition(k), TOPIC_SCHEMA)


ROW_SCHEMA = pa.schema([(name, pa.int64()) for name in (S.TOPIC_ID, S.NODE_ID, S.U, S.V)])


@nb.njit(cache=True, nogil=True)
def _each_topic(topic_starts, offsets, targets, k):
    """min(kappa, k) of each topic: its vertices are `topic_starts[t]:topic_starts[t + 1]` of the
    partition's CSR, whose links stay within a topic."""
    topics = len(topic_starts) - 1
    out = np.empty(topics, dtype=np.int64)
    for t in range(topics):
        first, last = topic_starts[t], topic_starts[t + 1]
        local = offsets[first : last + 1] - offsets[first]
        out[t] = csr_connectivity_upto(local, targets[offsets[first] : offsets[last]] - first, k)
    return out


def topics_connectivity(topic, node, u, v, k: int) -> dict[str, np.ndarray]:
    """The rows of `topic_connectivity` for the topics of these rows (all rows of each topic): a
    subscriber row has `node` >= 0, a link row its ends `u`, `v` >= 0 (distinct, u < v, both
    subscribers of the topic). One compiled pass, no Python per topic."""
    is_subscriber = node >= 0
    keys = np.unique((topic[is_subscriber] << NODE_BITS) | node[is_subscriber])  # topic-major vertices
    vertex_topic = keys >> NODE_BITS
    topic_offsets = np.r_[run_starts(vertex_topic), len(keys)].astype(np.int64)
    link_topic = topic[~is_subscriber]
    a = np.searchsorted(keys, (link_topic << NODE_BITS) | u[~is_subscriber])
    b = np.searchsorted(keys, (link_topic << NODE_BITS) | v[~is_subscriber])
    offsets, targets = undirected_csr(a, b, len(keys))
    connectivity = _each_topic(topic_offsets, offsets, targets, k)
    topics = vertex_topic[topic_offsets[:-1]]
    subscribers = np.diff(topic_offsets)
    edges = np.bincount(np.searchsorted(topics, link_topic), minlength=len(topics))
    fine = is_k_connected_topic(subscribers, edges, connectivity, k)
    return {
        S.TOPIC_ID: topics,
        S.SUBSCRIBERS: subscribers,
        S.EDGES: edges,
        S.CONNECTIVITY: connectivity.astype(np.int32),
        S.K_CONNECTED: fine,
    }


def _topics_in_partition(k: int):
    """The executor side of `topic_connectivity` (a `mapInArrow` function over rows grouped by
    topic: a subscriber row has a node id, a link row its two ends)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # The input's nullability follows the source tables (a Delta column may be NOT NULL), so
        # each batch is cast to the rows' schema rather than compared with it.
        table = pa.Table.from_batches([batch.cast(ROW_SCHEMA) for batch in batches], schema=ROW_SCHEMA)
        if table.num_rows == 0:
            return
        topic, node, u, v = (
            pc.fill_null(table.column(name), -1).to_numpy().astype(np.int64)
            for name in (S.TOPIC_ID, S.NODE_ID, S.U, S.V)
        )
        result = topics_connectivity(topic, node, u, v, k)
        types = {
            S.TOPIC_ID: pa.int64(),
            S.SUBSCRIBERS: pa.int64(),
            S.EDGES: pa.int64(),
            S.CONNECTIVITY: pa.int32(),
            S.K_CONNECTED: pa.bool_(),
        }
        yield pa.RecordBatch.from_pydict({name: pa.array(result[name], types[name]) for name in types})

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
