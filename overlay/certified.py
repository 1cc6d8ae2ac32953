"""Topic-connected components proven by a certificate: a spanning forest per topic, checked in Spark.

`overlay.quality.topic_components` labels the TCCs with a GraphFrames connected-components run
over the (topic, node) graph: about 20 s on the Zipf 1K topic graph (312K vertices) even warm,
and more in a fresh process, the largest part of a design job once the greedy got fast. A design
job needs the same labels, but it can afford a driver step: the engine keeps the subscriptions
on the driver already (`overlay.design.classes`, capped). So it

1. computes, on the driver, a BFS forest of every topic subgraph G(t): each subscription (t, x)
   gets its component's smallest node `component`, its BFS `parent` (a node of t linked to x;
   null at the root) and its `depth`;
2. checks the forest with Spark joins against the stored subscriptions and links, every rule in
   one job (`forest_violations`):
   - the forest has exactly one row per subscription;
   - a root has depth 0, no parent and is its own component; any other row has depth > 0;
   - every row's component is at most its node;
   - a parent is a subscription of the same topic, one level up, in the same component, and the
     link (x, parent) is in the overlay;
   - no link joins two subscriptions of one topic with different components.

If all hold, the labels are exactly the TCCs: following parents strictly lowers the depth, so
every row reaches its root through links of G(t) (a class is connected); no link leaves a class
(a class is a union of components); and the root is the smallest node of its class. A BFS bug or
a lost link cannot pass: the check reads the links from the table, not from the driver copy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.classes import MAX_DRIVER_SUBSCRIPTIONS, Subscriptions
from overlay.errors import InputError

PARENT, DEPTH = "parent", "depth"
NO_PARENT = -1


class CertificateError(RuntimeError):
    """The forest failed its check: the labels cannot be trusted."""


@nb.njit(cache=True, nogil=True)
def _bfs_forest(topic_offsets, topic_nodes, link_offsets, linked, nodes):
    """Per topic, in topic-major order: (component, parent, depth) of every subscription.

    `topic_nodes[topic_offsets[t]:topic_offsets[t + 1]]` are t's subscribers, ascending; links in
    CSR form (`linked[link_offsets[x]:link_offsets[x + 1]]` are x's neighbours). Subscribers are
    visited in ascending order, so each BFS starts at its component's smallest node."""
    rows = len(topic_nodes)
    component = np.empty(rows, dtype=np.int64)
    parent = np.empty(rows, dtype=np.int64)
    depth = np.empty(rows, dtype=np.int64)
    member = np.full(nodes, -1, dtype=np.int64)  # t while x subscribes the topic in hand
    seen = np.full(nodes, -1, dtype=np.int64)  # t once x is visited for the topic in hand
    row_of = np.empty(nodes, dtype=np.int64)
    queue = np.empty(nodes, dtype=np.int64)
    for t in range(len(topic_offsets) - 1):
        first, last = topic_offsets[t], topic_offsets[t + 1]
        for k in range(first, last):
            member[topic_nodes[k]] = t
            row_of[topic_nodes[k]] = k
        for k in range(first, last):
            root = topic_nodes[k]
            if seen[root] == t:
                continue
            seen[root] = t
            component[k], parent[k], depth[k] = root, -1, 0
            head, tail = 0, 1
            queue[0] = root
            while head < tail:
                x = queue[head]
                head += 1
                for e in range(link_offsets[x], link_offsets[x + 1]):
                    w = linked[e]
                    if member[w] == t and seen[w] != t:
                        seen[w] = t
                        kw = row_of[w]
                        component[kw], parent[kw], depth[kw] = root, x, depth[row_of[x]] + 1
                        queue[tail] = w
                        tail += 1
    return component, parent, depth


@dataclass(frozen=True)
class TopicForest:
    """One row per subscription, topic-major: the forest `forest_violations` checks."""

    topics: np.ndarray
    nodes: np.ndarray
    component: np.ndarray
    parent: np.ndarray  # NO_PARENT at a root
    depth: np.ndarray

    def to_arrow(self) -> pa.Table:
        return pa.table({
            S.TOPIC_ID: self.topics, S.NODE_ID: self.nodes, S.COMPONENT: self.component,
            PARENT: pa.array(self.parent, mask=self.parent == NO_PARENT), DEPTH: self.depth,
        })


def topic_forest(subscriptions: Subscriptions, links: np.ndarray) -> TopicForest:
    """BFS forests of every topic subgraph; `links` (k x 2) in node ids, any order, repeats and
    self-loops allowed."""
    links = np.asarray(links, dtype=np.int64).reshape(-1, 2)
    nodes = max(subscriptions.nodes, int(links.max()) + 1 if len(links) else 0)
    ends = np.concatenate([links, links[:, ::-1]])
    ends = ends[ends[:, 0] != ends[:, 1]]
    ends = ends[np.lexsort((ends[:, 1], ends[:, 0]))]
    link_offsets = np.searchsorted(ends[:, 0], np.arange(nodes + 1)).astype(np.int64)
    node_of_row = np.repeat(np.arange(subscriptions.nodes, dtype=np.int64), np.diff(subscriptions.offsets))
    # Topic-major order, nodes ascending within a topic (stable sort of node-major rows).
    order = np.argsort(subscriptions.topics, kind="stable")
    topics, topic_nodes = subscriptions.topics[order], node_of_row[order]
    starts = np.flatnonzero(np.r_[True, topics[1:] != topics[:-1]]) if len(topics) else np.zeros(0, np.int64)
    topic_offsets = np.r_[starts, len(topics)].astype(np.int64)
    component, parent, depth = _bfs_forest(
        topic_offsets, np.ascontiguousarray(topic_nodes), link_offsets, np.ascontiguousarray(ends[:, 1]), nodes
    )
    return TopicForest(topics, topic_nodes, component, parent, depth)


def _normalised(edges: DataFrame) -> DataFrame:
    return edges.filter(F.col(S.U) != F.col(S.V)).select(
        F.least(S.U, S.V).alias("_a"), F.greatest(S.U, S.V).alias("_b")
    ).distinct()


def forest_violations(subscriptions: DataFrame, edges: DataFrame, forest: DataFrame) -> dict[str, int]:
    """How many rows break each rule of the module docstring (one Spark job; all 0: proven).

    subscriptions: (node_id, topic_id); edges: (u, v); forest: (topic_id, node_id, component,
    parent, depth)."""
    t, x, c, p, d = S.TOPIC_ID, S.NODE_ID, S.COMPONENT, PARENT, DEPTH
    subs = subscriptions.select(t, x)
    links = _normalised(edges)
    kind = "_kind"

    def broken(frame: DataFrame, rule: str) -> DataFrame:
        return frame.select(F.lit(rule).alias(kind))

    # One row per key on each side: a missing, extra or repeated row shows in the counts.
    tagged = subs.select(t, x, F.lit(1).alias("_s"), F.lit(0).alias("_f")).unionByName(
        forest.select(t, x, F.lit(0).alias("_s"), F.lit(1).alias("_f"))
    )
    coverage = tagged.groupBy(t, x).agg(F.sum("_s").alias("_s"), F.sum("_f").alias("_f"))
    is_root = F.col(d) == 0
    root_rules = forest.filter(
        (F.col(d) < 0) | (is_root != F.col(p).isNull()) | (is_root != (F.col(c) == F.col(x))) | (F.col(c) > F.col(x))
    )
    parents = forest.select(
        t, F.col(x).alias(p), F.col(c).alias("_pc"), F.col(d).alias("_pd"), F.lit(1).alias("_pf")
    )
    child = forest.filter(F.col(p).isNotNull())
    up = child.join(parents, [t, p], "left")
    tree_links = child.select(F.least(x, p).alias("_a"), F.greatest(x, p).alias("_b")).join(
        links.withColumn("_l", F.lit(1)), ["_a", "_b"], "left"
    )
    labels = forest.select(t, x, c)
    at_a = labels.select(t, F.col(x).alias("_a"), F.col(c).alias("_ca"))
    at_b = labels.select(t, F.col(x).alias("_b"), F.col(c).alias("_cb"))
    across = links.join(at_a, "_a").join(at_b, [t, "_b"]).filter(F.col("_ca") != F.col("_cb"))
    checks = [
        broken(coverage.filter(F.col("_f") != 1), "subscription without exactly one forest row"),
        broken(coverage.filter(F.col("_s") == 0), "forest row without a subscription"),
        broken(root_rules, "bad root, depth or component"),
        broken(up.filter(F.col("_pf").isNull()), "parent not a subscriber of the topic"),
        broken(up.filter((F.col("_pd") != F.col(d) - 1) | (F.col("_pc") != F.col(c))), "parent not one level up in the component"),
        broken(tree_links.filter(F.col("_l").isNull()), "tree edge not an overlay link"),
        broken(across, "link joining two components of a topic"),
    ]
    union = checks[0]
    for check in checks[1:]:
        union = union.unionByName(check)
    return {row[kind]: row["count"] for row in union.groupBy(kind).count().collect()}


def certified_topic_components(
    spark: SparkSession, subscriptions: DataFrame, edges: DataFrame, nodes: int | None = None,
    max_rows: int = MAX_DRIVER_SUBSCRIPTIONS,
) -> DataFrame:
    """(topic_id, node_id, component) for every subscription, as `topic_components` gives them,
    computed on the driver and proven in Spark. Raises `InputError` when the subscriptions and
    links exceed `max_rows` (use `topic_components`), `CertificateError` when the check fails."""
    driver_subscriptions = Subscriptions.collect(subscriptions, nodes, max_rows)
    table = edges.select(S.U, S.V).limit(max_rows - driver_subscriptions.rows + 1).toArrow()
    if driver_subscriptions.rows + table.num_rows > max_rows:
        raise InputError(f"subscriptions and links exceed the driver cap of {max_rows:,} rows")
    links = np.column_stack([
        table.column(S.U).to_numpy().astype(np.int64), table.column(S.V).to_numpy().astype(np.int64)
    ]) if table.num_rows else np.zeros((0, 2), dtype=np.int64)
    # Materialised once: the check reads it five times, and an Arrow-built frame is slow to reread.
    forest = spark.createDataFrame(topic_forest(driver_subscriptions, links).to_arrow()).localCheckpoint(eager=True)
    violations = forest_violations(subscriptions, edges, forest)
    if violations:
        raise CertificateError(
            "the topic components failed their check: "
            + ", ".join(f"{rule}: {count:,}" for rule, count in sorted(violations.items()))
        )
    return forest.select(S.TOPIC_ID, S.NODE_ID, S.COMPONENT)
