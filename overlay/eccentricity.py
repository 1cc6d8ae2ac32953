"""Topic diameters in one pass: every topic subgraph meets in one task, which runs its BFS.

A hop-synchronous BFS over the (topic, node) graph (the GraphFrames Pregel in
`overlay.graph_ops`) costs one Spark round per hop, a second or more each, so a small overlay
with long topic paths pays tens of seconds. But a topic subgraph is small next to the instance
(a topic's subscribers and the links between them), and BFS from its sources needs nothing
else: so the topic edges and the sources are hashed by topic into partitions, and each
partition's topics are searched in one compiled call (`mapInArrow`). One shuffle, whatever
the diameters; a task holds whole topics, so the largest topic subgraph must fit in a task
(it has at most as many edges as the overlay).
"""

from __future__ import annotations

from collections.abc import Iterator

import numba as nb
import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.csr import run_starts, undirected_csr
from overlay.graph import DST, ID, SRC
from overlay.spark_hash import SPARK_SEED, hash_int, hash_long

DIAMETER = "diameter"


@nb.njit(cache=True, nogil=True)
def source_eccentricities(offsets, targets, sources):
    """Hop eccentricity of each source vertex (the farthest vertex its BFS reaches), over the
    undirected graph in CSR form (`targets[offsets[x]:offsets[x + 1]]` are x's neighbours)."""
    vertices = len(offsets) - 1
    seen = np.full(vertices, -1, dtype=np.int64)  # i once visited by the BFS of source i
    dist = np.zeros(vertices, dtype=np.int64)
    queue = np.empty(vertices, dtype=np.int64)
    eccentricity = np.zeros(len(sources), dtype=np.int64)
    for i in range(len(sources)):
        source = sources[i]
        seen[source], dist[source], queue[0] = i, 0, source
        head, tail, farthest = 0, 1, 0
        while head < tail:
            x = queue[head]
            head += 1
            farthest = max(farthest, dist[x])
            for e in range(offsets[x], offsets[x + 1]):
                y = targets[e]
                if seen[y] != i:
                    seen[y], dist[y] = i, dist[x] + 1
                    queue[tail] = y
                    tail += 1
        eccentricity[i] = farthest
    return eccentricity


def topic_eccentricities(
    src: np.ndarray,
    dst: np.ndarray,
    is_edge: np.ndarray,
    node_bits: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(topics, diameters): per topic, the largest eccentricity of its sources. Rows are packed
    vertex ids (the topic above `node_bits`): an edge (src, dst) where `is_edge`, else a source
    `src`; all rows of a topic are here."""
    ends = np.concatenate([src, dst[is_edge]])
    ids = np.unique(ends)
    a, b = np.searchsorted(ids, src[is_edge]), np.searchsorted(ids, dst[is_edge])
    offsets, targets = undirected_csr(a, b, len(ids))
    sources = np.searchsorted(ids, src[~is_edge]).astype(np.int64)
    eccentricity = source_eccentricities(offsets, targets, sources)
    topics = ids[sources] >> node_bits
    order = np.argsort(topics, kind="stable")
    topics, eccentricity = topics[order], eccentricity[order]
    starts = run_starts(topics)
    return topics[starts], np.maximum.reduceat(eccentricity, starts) if len(starts) else eccentricity[:0]


def _partition_diameters(node_bits: int):
    def diameters(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The executor side: the whole partition (whole topics) in one BFS call."""
        batches = [batch for batch in batches if batch.num_rows]
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        src = table.column(SRC).to_numpy().astype(np.int64)
        is_edge = table.column(DST).is_valid().to_numpy(zero_copy_only=False)
        dst = table.column(DST).fill_null(0).to_numpy().astype(np.int64)
        topics, diameters = topic_eccentricities(src, dst, is_edge, node_bits)
        yield pa.RecordBatch.from_pydict(
            {S.TOPIC_ID: pa.array(topics, pa.int64()), DIAMETER: pa.array(diameters.astype(np.int32), pa.int32())}
        )

    return diameters


def diameters_by_topic(sources: DataFrame, topic_edges: DataFrame, node_bits: int) -> DataFrame:
    """(topic_id, diameter): the largest eccentricity of each topic's sources, for every topic
    with a source. `sources`: packed vertex ids (`id`, the topic above `node_bits`);
    `topic_edges`: (src, dst) packed, both ends in one topic (`overlay.quality.topic_graph`)."""
    rows = topic_edges.select(SRC, DST).unionByName(
        sources.select(F.col(ID).alias(SRC), F.lit(None).cast("long").alias(DST))
    )
    by_topic = rows.repartition(F.shiftright(F.col(SRC), node_bits))
    return by_topic.mapInArrow(_partition_diameters(node_bits), f"{S.TOPIC_ID} long, {DIAMETER} int")


@nb.njit(cache=True, nogil=True)
def spark_xxhash64_int_long(first, values):
    """`xxhash64(int first, long value)` for each value, as Spark computes it (signed): the BFS
    sources `overlay.quality.topic_diameters` picks with `xxhash64(lit(seed), node_id)`."""
    seed = hash_int(first, SPARK_SEED)
    out = np.empty(len(values), dtype=np.int64)
    for i in range(len(values)):
        out[i] = np.int64(hash_long(values[i], seed))
    return out


@nb.njit(cache=True, nogil=True)
def _diameters(topic_offsets, topic_nodes, link_offsets, link_targets, keys, exact_limit, samples, nodes):
    topics = len(topic_offsets) - 1
    mark = np.full(nodes, -1, dtype=np.int64)  # topic index of the topic being searched
    local = np.zeros(nodes, dtype=np.int64)  # a member's index within it
    diameters = np.zeros(topics, dtype=np.int64)
    for t in range(topics):
        start, end = topic_offsets[t], topic_offsets[t + 1]
        size = end - start
        if size < 2:
            continue
        members = topic_nodes[start:end]
        for i in range(size):
            mark[members[i]], local[members[i]] = t, i
        offsets = np.zeros(size + 1, dtype=np.int64)  # the topic subgraph, local CSR
        for i in range(size):
            x = members[i]
            count = 0
            for e in range(link_offsets[x], link_offsets[x + 1]):
                if mark[link_targets[e]] == t:
                    count += 1
            offsets[i + 1] = offsets[i] + count
        targets = np.empty(offsets[size], dtype=np.int64)
        for i in range(size):
            x, k = members[i], offsets[i]
            for e in range(link_offsets[x], link_offsets[x + 1]):
                y = link_targets[e]
                if mark[y] == t:
                    targets[k] = local[y]
                    k += 1
        if offsets[size] == 0:
            continue  # no link: diameter 0
        if size <= exact_limit:
            sources = np.arange(size)
        else:  # the smallest (key, node): members are in node order, the sort is stable
            sources = np.argsort(keys[members], kind="mergesort")[:samples]
        diameters[t] = source_eccentricities(offsets, targets, sources).max()
    return diameters


def diameters_in_memory(
    topics: np.ndarray,
    topic_offsets: np.ndarray,
    topic_nodes: np.ndarray,
    link_offsets: np.ndarray,
    link_targets: np.ndarray,
    exact_limit: int,
    samples: int,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(topic_id, diameter, exact) for every topic with at least two subscribers, the values
    `overlay.quality.topic_diameters` computes (the same BFS sources), on the driver's copy.

    One row per subscription, topic-major with nodes ascending within a topic (`topics`,
    `topic_nodes`, runs at `topic_offsets`), and the links as undirected CSR over node ids: the
    arrays `overlay.certified.topic_forest` keeps, so the design job, whose engine holds both,
    runs no Spark job and builds nothing twice."""
    nodes = len(link_offsets) - 1
    keys = spark_xxhash64_int_long(seed, np.arange(nodes, dtype=np.int64))
    diameters = _diameters(topic_offsets, topic_nodes, link_offsets, link_targets, keys, exact_limit, samples, nodes)
    sizes = np.diff(topic_offsets)
    keep = sizes >= 2
    return topics[topic_offsets[:-1]][keep], diameters[keep], sizes[keep] <= exact_limit
