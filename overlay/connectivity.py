"""Topic connectivity up to k: is an overlay a kTCO (PODC'13 Def. 1; NOTES-ktco 1.1)?

A kTCO keeps every topic subgraph G(t) k-connected, or a clique when the topic has at most k
subscribers. Per topic this needs the vertex connectivity kappa(G(t)) only up to k, so each
topic is checked on its own, in a task (`groupBy(topic).applyInPandas`; the topic subgraphs are
small next to the instance): connectedness for k = 1, biconnectedness for k = 2 (linear time),
and for k >= 3 Even's algorithm (networkx's, unit-capacity max-flows from a vertex of minimum
degree) with every flow cut off at the best bound so far, so no flow runs past k. networkx
counts kappa of a clique on n vertices as n - 1, as Def. 1 needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import networkx as nx
import pandas as pd
from networkx.algorithms.connectivity import build_auxiliary_node_connectivity, local_node_connectivity
from networkx.algorithms.flow import build_residual_network
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.graph import DST, SRC
from overlay.quality import NODE_BITS, topic_graph


def connectivity_upto(nodes, links, k: int) -> int:
    """min(kappa, k) of the graph on `nodes` with `links` (pairs; repeats and self-loops
    ignored); 0 for one vertex or a disconnected graph, n - 1 for a clique on n vertices."""
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((u, v) for u, v in links if u != v)
    n = graph.number_of_nodes()
    if n <= 1 or not nx.is_connected(graph):
        return 0
    if graph.number_of_edges() == n * (n - 1) // 2:
        return min(k, n - 1)
    if k == 1 or not nx.is_biconnected(graph):
        return 1
    if k == 2:
        return 2
    # Even's algorithm as networkx's node_connectivity runs it, each flow cut off at `best`.
    auxiliary = build_auxiliary_node_connectivity(graph)
    residual = build_residual_network(auxiliary, "capacity")
    v, degree = min(graph.degree, key=lambda item: (item[1], item[0]))
    best = min(k, degree)

    def flow(s, t) -> int:
        return local_node_connectivity(graph, s, t, auxiliary=auxiliary, residual=residual, cutoff=best)

    for w in sorted(set(graph) - set(graph[v]) - {v}):
        best = min(best, flow(v, w))
    for x, y in combinations(sorted(graph[v]), 2):
        if y not in graph[x]:
            best = min(best, flow(x, y))
    return best


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

    subscriptions: (node_id, topic_id), ids as `overlay.quality.check_id_ranges` allows; edges:
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
        pairs = frame.loc[frame[S.U].notna(), [S.U, S.V]].astype("int64")
        subscribers, edge_count = len(nodes), len(pairs)
        connectivity = connectivity_upto(nodes.tolist(), pairs.itertuples(index=False, name=None), k)
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
