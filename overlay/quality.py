"""Overlay quality (ICDCS'16 section IV): topic subgraphs, TCC counting, TcoSuppR, degrees.

For an instance (V, T, I) and an overlay E, G(t) is the subgraph of E induced by V(t), the
subscribers of t; a topic-connected component (TCC) is a connected component of some G(t).
TCC(E) = sum over t of #components of G(t); TCC(empty) = |I| (every subscription alone);
TCC(complete) = number of topics with a subscriber. TcoSuppR(E) = (TCC(empty) - TCC(E)) /
(TCC(empty) - TCC(complete)), 1 exactly when E is a TCO; 1 by convention when the denominator is 0
(every topic has a single subscriber).

All topic subgraphs are one graph: vertices are the (topic, node) subscriptions, and every overlay
edge (u, v) joins (t, u) and (t, v) for each topic t both subscribe to. One connected-components
run labels every TCC at once (`overlay.graph`). A (topic, node) vertex id packs the topic into the
high 31 bits and the node into the low 32 bits, so the component label, the smallest vertex id,
decodes back to the smallest node of the TCC.

Degrees and topic diameters run on either backend (`Backend`, GraphFrames forms in
`overlay.graph_ops`), same answer; "auto" picks the one measured faster (benchmarks/backends.py):
- degrees: the DataFrame groupBy; aggregateMessages took 5.4x as long (Zipf 10K: 2.9 s / 0.5 s);
- topic diameters: the DataFrame form, each topic subgraph searched in one task
  (`overlay.eccentricity`: one shuffle, whatever the diameters); the Pregel pays a Spark round
  per hop (on Zipf 1K under GPM d = 4: 5.4 s against 43.6 s in `evaluate`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.eccentricity import diameters_by_topic
from overlay.graph import COMPONENT, DST, ID, SRC, Backend, connected_components
from overlay.graph_ops import DEGREE, FARTHEST, SOURCE, aggregate_degrees, farthest_source, pick_backend
from overlay.lineage import LOCAL, Lineage

NODE_BITS = 32
# What "auto" means for each operation (measured: module docstring).
DEGREES_DEFAULT = "dataframe"
DIAMETERS_DEFAULT = "dataframe"
_NODE_MASK = (1 << NODE_BITS) - 1


def _vertex_id(topic: F.Column, node: F.Column) -> F.Column:
    return F.shiftleft(topic.cast("long"), NODE_BITS) + node.cast("long")


def topic_graph(subscriptions: DataFrame, edges: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The union of all topic subgraphs: vertices (id, topic_id, node_id), edges (src, dst).

    `subscriptions`: (node_id, topic_id); `edges`: (u, v) overlay links in node ids.
    """
    vertices = subscriptions.select(_vertex_id(F.col(S.TOPIC_ID), F.col(S.NODE_ID)).alias(ID), S.TOPIC_ID, S.NODE_ID)
    at_u = subscriptions.select(F.col(S.NODE_ID).alias(S.U), F.col(S.TOPIC_ID).alias("_t"))
    at_v = subscriptions.select(F.col(S.NODE_ID).alias(S.V), F.col(S.TOPIC_ID).alias("_t"))
    shared = edges.select(S.U, S.V).join(at_u, on=S.U).join(at_v, on=[S.V, "_t"])
    topic_edges = shared.select(
        _vertex_id(F.col("_t"), F.col(S.U)).alias(SRC), _vertex_id(F.col("_t"), F.col(S.V)).alias(DST)
    )
    return vertices, topic_edges


def check_id_ranges(nodes: int, topics: int) -> None:
    """The vertex packing needs node ids < 2^32 and topic ids < 2^31: an instance's dense ids lie
    in [0, nodes) and [0, topics), so its counts tell (no Spark job)."""
    if nodes > _NODE_MASK + 1 or topics > 1 << 31:
        raise ValueError(f"the vertex packing needs at most 2^32 nodes and 2^31 topics, not {nodes:,} and {topics:,}")


def topic_components(
    subscriptions: DataFrame,
    edges: DataFrame,
    backend: Backend = "auto",
    lineage: Lineage = LOCAL,
    subscription_count: int | None = None,
) -> DataFrame:
    """(topic_id, node_id, component) for every subscription; component = smallest node of its TCC
    (`subscription_count`, when known: the topic graph's vertex count, `connected_components`)."""
    vertices, topic_edges = topic_graph(subscriptions, edges)
    labelled = connected_components(
        vertices.select(ID), topic_edges, backend=backend, lineage=lineage, vertex_count=subscription_count
    )
    return vertices.join(labelled, on=ID).select(
        S.TOPIC_ID, S.NODE_ID, F.col(COMPONENT).bitwiseAND(F.lit(_NODE_MASK)).alias(S.COMPONENT)
    )


@dataclass(frozen=True)
class TccSummary:
    tcc_empty: int
    tcc: int
    tcc_complete: int
    subscribed_topics: int
    topics_connected: int

    @property
    def tco_support(self) -> float:
        reducible = self.tcc_empty - self.tcc_complete
        return 1.0 if reducible == 0 else (self.tcc_empty - self.tcc) / reducible


def summarise_tccs(components: DataFrame) -> TccSummary:
    """TCC figures from `topic_components` rows (one row per subscription)."""
    per_topic = components.groupBy(S.TOPIC_ID).agg(
        F.count(F.lit(1)).alias("_subscribers"), F.countDistinct(S.COMPONENT).alias("_tccs")
    )
    row = per_topic.agg(
        F.coalesce(F.sum("_subscribers"), F.lit(0)).alias("empty"),
        F.coalesce(F.sum("_tccs"), F.lit(0)).alias("tcc"),
        F.count(F.lit(1)).alias("topics"),
        F.coalesce(F.sum(F.when(F.col("_tccs") == 1, 1).otherwise(0)), F.lit(0)).alias("connected"),
    ).first()
    return TccSummary(
        tcc_empty=int(row["empty"]),
        tcc=int(row["tcc"]),
        tcc_complete=int(row["topics"]),
        subscribed_topics=int(row["topics"]),
        topics_connected=int(row["connected"]),
    )


@dataclass(frozen=True)
class DegreeSummary:
    edges: int
    avg_degree: float
    min_degree: int
    max_degree: int


def node_degrees(edges: DataFrame, backend: Backend = "auto", lineage: Lineage = LOCAL) -> DataFrame:
    """(node_id, degree) of every node with a link; edges: (u, v) overlay links (`lineage`: how
    the GraphFrames form keeps its result)."""
    chosen = pick_backend(edges.sparkSession, backend, DEGREES_DEFAULT)
    ends = edges.select(F.col(S.U).alias(S.NODE_ID)).union(edges.select(F.col(S.V).alias(S.NODE_ID)))
    if chosen == "dataframe":
        return ends.groupBy(S.NODE_ID).agg(F.count(F.lit(1)).alias(DEGREE))
    counted = aggregate_degrees(
        ends.distinct().select(F.col(S.NODE_ID).alias(ID)),
        edges.select(F.col(S.U).alias(SRC), F.col(S.V).alias(DST)),
        lineage,
    )
    return counted.select(F.col(ID).alias(S.NODE_ID), DEGREE)


def degree_summary(links: np.ndarray, node_count: int) -> DegreeSummary:
    """`summarise_degrees` of links a driver step holds already ((k, 2) node ids: every row
    counts at both ends, a self-loop twice, as in the DataFrame form)."""
    ends = np.asarray(links, dtype=np.int64).reshape(-1)
    degree = np.bincount(ends, minlength=node_count) if len(ends) else np.zeros(0, dtype=np.int64)
    linked = degree[degree > 0]
    edge_count = len(ends) // 2
    return DegreeSummary(
        edges=edge_count,
        avg_degree=(2 * edge_count / node_count) if node_count else 0.0,
        min_degree=0 if node_count > len(linked) or not len(linked) else int(linked.min()),
        max_degree=int(linked.max()) if len(linked) else 0,
    )


def summarise_degrees(
    edges: DataFrame, node_count: int, backend: Backend = "auto", lineage: Lineage = LOCAL
) -> DegreeSummary:
    """Degrees over all `node_count` nodes of the instance (nodes without links have degree 0)."""
    row = (
        node_degrees(edges, backend, lineage)
        .agg(
            F.count(F.lit(1)).alias("linked"),
            F.coalesce(F.sum(DEGREE), F.lit(0)).alias("ends"),
            F.min(DEGREE).alias("min"),
            F.max(DEGREE).alias("max"),
        )
        .first()
    )
    edge_count = int(row["ends"]) // 2
    unlinked = node_count - int(row["linked"])
    return DegreeSummary(
        edges=edge_count,
        avg_degree=(2 * edge_count / node_count) if node_count else 0.0,
        min_degree=0 if unlinked > 0 or row["min"] is None else int(row["min"]),
        max_degree=int(row["max"] or 0),
    )


@dataclass(frozen=True)
class DiameterSummary:
    diameter_max: int | None  # None: not computed
    diameter_avg: float | None
    exact_topics: int
    sampled_topics: int
    method: str


def topic_diameters(
    subscriptions: DataFrame,
    edges: DataFrame,
    exact_limit: int = 64,
    samples: int = 8,
    seed: int = 0,
    backend: Backend = "auto",
    lineage: Lineage = LOCAL,
) -> DataFrame:
    """(topic_id, diameter, exact) for every topic with at least two subscribers.

    A topic's diameter is the longest shortest path between two of its subscribers in G(t) that
    are connected (so the largest over its TCCs; 0 when it has no link). Topics with at most
    `exact_limit` subscribers get a BFS from every subscriber: exact. Larger ones get a BFS from
    `samples` subscribers picked by `xxhash64(seed, node)`: the largest eccentricity found, a
    lower bound. The DataFrame form gathers each topic subgraph in one task and searches it there
    (`overlay.eccentricity`: one shuffle); the GraphFrames form runs all BFS together over the
    (topic, node) graph as a Pregel, one Spark round per hop (`lineage`: its checkpoints).
    """
    vertices, topic_edges = topic_graph(subscriptions, edges)
    sizes = subscriptions.groupBy(S.TOPIC_ID).agg(F.count(F.lit(1)).alias("_size"))
    ranked = vertices.join(sizes.filter(F.col("_size") >= 2), on=S.TOPIC_ID).withColumn(
        "_rank",
        F.row_number().over(
            Window.partitionBy(S.TOPIC_ID).orderBy(F.xxhash64(F.lit(seed), F.col(S.NODE_ID)), S.NODE_ID)
        ),
    )
    is_source = (F.col("_size") <= exact_limit) | (F.col("_rank") <= samples)
    if pick_backend(subscriptions.sparkSession, backend, DIAMETERS_DEFAULT) == "dataframe":
        per_topic = diameters_by_topic(ranked.filter(is_source).select(ID), topic_edges, NODE_BITS)
    else:
        farthest = farthest_source(ranked.select(ID, is_source.alias(SOURCE)), topic_edges, lineage)
        per_topic = farthest.groupBy(F.shiftright(F.col(ID), NODE_BITS).alias(S.TOPIC_ID)).agg(
            F.max(FARTHEST).alias("diameter")
        )
    return per_topic.join(sizes, on=S.TOPIC_ID).select(
        S.TOPIC_ID, "diameter", (F.col("_size") <= exact_limit).alias("exact")
    )


def summarise_diameters(diameters: DataFrame, exact_limit: int, samples: int) -> DiameterSummary:
    row = diameters.agg(
        F.coalesce(F.max("diameter"), F.lit(0)).alias("max"),
        F.coalesce(F.avg("diameter"), F.lit(0.0)).alias("avg"),
        F.coalesce(F.sum(F.when(F.col("exact"), 1).otherwise(0)), F.lit(0)).alias("exact"),
        F.count(F.lit(1)).alias("all"),
    ).first()
    return _diameter_summary(
        int(row["max"]), float(row["avg"]), int(row["exact"]), int(row["all"]), exact_limit, samples
    )


def summarise_diameter_arrays(
    diameters: np.ndarray, exact: np.ndarray, exact_limit: int, samples: int
) -> DiameterSummary:
    """`summarise_diameters` of `overlay.eccentricity.diameters_in_memory`'s arrays."""
    top = int(diameters.max()) if len(diameters) else 0
    avg = float(diameters.mean()) if len(diameters) else 0.0
    return _diameter_summary(top, avg, int(exact.sum()), len(diameters), exact_limit, samples)


def _diameter_summary(top: int, avg: float, exact: int, topics: int, exact_limit: int, samples: int) -> DiameterSummary:
    sampled = topics - exact
    method = f"exact (all-source BFS) for {exact} topics with <= {exact_limit} subscribers"
    if sampled:
        method += f"; lower bound from {samples} sampled BFS sources for {sampled} larger topics"
    return DiameterSummary(top, avg, exact, sampled, method)
