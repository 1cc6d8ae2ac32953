"""Topic-connected components proven by a certificate: a spanning forest per topic, checked in Spark.

`overlay.quality.topic_components` labels the TCCs with a GraphFrames connected-components run
over the (topic, node) graph: about 20 s on the Zipf 1K topic graph (312K vertices) even warm,
and more in a fresh process, the largest part of a design job once the greedy got fast. A design
job needs the same labels, but it can afford a driver step: the engine keeps the subscriptions
on the driver already (`overlay.design.classes`, capped). So it

1. computes, on the driver, a BFS forest of every topic subgraph G(t): each subscription (t, x)
   gets its component's smallest node `component`, its BFS `parent` (a node of t linked to x;
   null at the root) and its `depth`;
2. checks the forest in Spark against the stored subscriptions and links, every rule in one
   job with one shuffle (`forest_violations`):
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
from overlay.csr import run_starts, undirected_csr
from overlay.design.classes import MAX_DRIVER_SUBSCRIPTIONS, Subscriptions
from overlay.errors import InputError
from overlay.lineage import LOCAL, Lineage
from overlay.quality import DegreeSummary, TccSummary, degree_summary

PARENT, DEPTH = "parent", "depth"
NO_PARENT = -1
# Links broadcast to the check's join up to this many (two longs each, sent both ways).
BROADCAST_LINKS = 2_000_000


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
    # The graph the forests were searched on, for other per-topic searches (the diameters):
    topic_offsets: np.ndarray  # topic i's rows are topic_offsets[i]:topic_offsets[i + 1]
    link_offsets: np.ndarray  # the links as undirected CSR over node ids (`overlay.csr`)
    link_targets: np.ndarray

    def tcc_summary(self) -> TccSummary:
        """`summarise_tccs` of these labels: a TCC per root, a topic connected with one root."""
        topics = np.unique(self.topics)
        roots = self.parent == NO_PARENT
        roots_per_topic = np.bincount(np.searchsorted(topics, self.topics[roots]), minlength=len(topics))
        return TccSummary(
            tcc_empty=len(self.topics),
            tcc=int(roots.sum()),
            tcc_complete=len(topics),
            subscribed_topics=len(topics),
            topics_connected=int((roots_per_topic == 1).sum()),
        )

    def to_arrow(self) -> pa.Table:
        return pa.table(
            {
                S.TOPIC_ID: self.topics,
                S.NODE_ID: self.nodes,
                S.COMPONENT: self.component,
                PARENT: pa.array(self.parent, mask=self.parent == NO_PARENT),
                DEPTH: self.depth,
            }
        )


def topic_forest(subscriptions: Subscriptions, links: np.ndarray) -> TopicForest:
    """BFS forests of every topic subgraph; `links` (k x 2) in node ids, any order, repeats and
    self-loops allowed."""
    links = np.asarray(links, dtype=np.int64).reshape(-1, 2)
    nodes = max(subscriptions.nodes, int(links.max()) + 1 if len(links) else 0)
    link_offsets, link_targets = undirected_csr(links[:, 0], links[:, 1], nodes)
    node_of_row = np.repeat(np.arange(subscriptions.nodes, dtype=np.int64), np.diff(subscriptions.offsets))
    # Topic-major order, nodes ascending within a topic (stable sort of node-major rows).
    order = np.argsort(subscriptions.topics, kind="stable")
    topics, topic_nodes = subscriptions.topics[order], node_of_row[order]
    topic_offsets = np.r_[run_starts(topics), len(topics)].astype(np.int64)
    topic_nodes = np.ascontiguousarray(topic_nodes)
    component, parent, depth = _bfs_forest(topic_offsets, topic_nodes, link_offsets, link_targets, nodes)
    return TopicForest(topics, topic_nodes, component, parent, depth, topic_offsets, link_offsets, link_targets)


def forest_violations(
    subscriptions: DataFrame,
    edges: DataFrame,
    forest: DataFrame,
    broadcast_links: bool = False,
) -> dict[str, int]:
    """How many (topic, node) keys break each rule of the module docstring (one Spark job, one
    shuffle when the links are broadcast: every fact about a key meets in one group; all 0:
    proven).

    subscriptions: (node_id, topic_id); edges: (u, v); forest: (topic_id, node_id, component,
    parent, depth). Each link tells both its ends the other end's label on every topic the other
    end has a forest row for (a join of the links, both ways, with the forest on the node); each
    child asks its parent for its label; a tree edge missing from the links (an anti-join) is a
    fact of its child. `broadcast_links`: the links are few enough to broadcast to those joins
    (the caller knows how many there are)."""
    t, x, c, p, d = S.TOPIC_ID, S.NODE_ID, S.COMPONENT, PARENT, DEPTH
    links = edges.filter(F.col(S.U) != F.col(S.V))
    both_ways = links.select(F.col(S.U).alias("_from"), F.col(S.V).alias(x)).unionByName(
        links.select(F.col(S.V).alias("_from"), F.col(S.U).alias(x))
    )
    one_way = links.select(F.least(S.U, S.V).alias("_a"), F.greatest(S.U, S.V).alias("_b"))
    if broadcast_links:
        both_ways, one_way = F.broadcast(both_ways), F.broadcast(one_way)
    labels = forest.select(t, F.col(x).alias("_from"), F.col(c).alias("_nc"))
    children = forest.filter(F.col(p).isNotNull())
    unlinked = children.select(t, x, F.least(x, p).alias("_a"), F.greatest(x, p).alias("_b")).join(
        one_way, ["_a", "_b"], "left_anti"
    )
    is_root = F.col(d) == 0
    bad_root = (
        (F.col(d) < 0) | (is_root != F.col(p).isNull()) | (is_root != (F.col(c) == F.col(x))) | (F.col(c) > F.col(x))
    )
    facts = [  # (topic, node) keyed: a subscription, a forest row, a child's ask, a neighbour's label
        subscriptions.select(t, x, F.lit(1).alias("_s")),
        forest.select(t, x, c, d, F.lit(1).alias("_f"), bad_root.cast("int").alias("_bad")),
        children.select(t, F.col(p).alias(x), F.col(c).alias("_ac"), F.col(d).alias("_ad")),
        both_ways.join(labels, "_from").select(t, x, "_nc"),
        unlinked.select(t, x, F.lit(1).alias("_unlinked")),
    ]
    union = facts[0]
    for frame in facts[1:]:
        union = union.unionByName(frame, allowMissingColumns=True)
    count = lambda column: F.coalesce(F.sum(column), F.lit(0))  # noqa: E731
    keys = union.groupBy(t, x).agg(  # min / max only: a hash aggregate, never sort-based
        count("_s").alias("_s"),
        count("_f").alias("_f"),
        count("_bad").alias("_bad"),
        count("_unlinked").alias("_unlinked"),
        F.max(c).alias(c),
        F.max(d).alias(d),
        F.count("_ac").alias("_asks"),
        F.min("_ac").alias("_ac_min"),
        F.max("_ac").alias("_ac_max"),
        F.min("_ad").alias("_ad_min"),
        F.max("_ad").alias("_ad_max"),
        F.min("_nc").alias("_nc_min"),
        F.max("_nc").alias("_nc_max"),
    )
    has_row, asked = F.col("_f") == 1, F.col("_asks") > 0
    rules = {
        "subscription without exactly one forest row": (F.col("_s") > 0) & ~has_row,
        "forest row without a subscription": (F.col("_f") > 0) & (F.col("_s") == 0),
        "bad root, depth or component": F.col("_bad") > 0,
        "parent not a subscriber of the topic": asked & (F.col("_f") == 0),
        "parent not one level up in the component": asked
        & has_row
        & (
            (F.col("_ac_min") != F.col(c))
            | (F.col("_ac_max") != F.col(c))
            | (F.col("_ad_min") != F.col(d) + 1)
            | (F.col("_ad_max") != F.col(d) + 1)
        ),
        "tree edge not an overlay link": F.col("_unlinked") > 0,
        "link joining two components of a topic": has_row
        & ((F.col("_nc_min") != F.col(c)) | (F.col("_nc_max") != F.col(c))),
    }
    row = keys.agg(*[count(F.when(rule, 1)).alias(name) for name, rule in rules.items()]).first()
    return {name: row[name] for name in rules if row[name]}


@dataclass(frozen=True)
class CertifiedComponents:
    """Proven TCC labels, with the summaries the driver step computed from what it proved."""

    components: DataFrame  # (topic_id, node_id, component), as `topic_components` gives them
    tccs: TccSummary
    degrees: DegreeSummary


def certified_components(
    spark: SparkSession,
    subscriptions: DataFrame,
    edges: DataFrame,
    nodes: int | None = None,
    max_rows: int = MAX_DRIVER_SUBSCRIPTIONS,
    driver_subscriptions: Subscriptions | None = None,
    broadcast_links: int = BROADCAST_LINKS,
    lineage: Lineage = LOCAL,
) -> CertifiedComponents:
    """The TCC labels of every subscription computed on the driver and proven in Spark, and
    their TCC and degree summaries (over `nodes` nodes). Raises `InputError` when the
    subscriptions and links exceed `max_rows` (use `topic_components`), `CertificateError`
    when the check fails.

    `driver_subscriptions`: a driver copy the caller holds already (a design job's engine); the
    check compares the forest with `subscriptions`, so a wrong copy cannot pass. The links are
    broadcast to the check's join when there are at most `broadcast_links` of them; the forest is
    kept as `lineage` says."""
    if driver_subscriptions is None:
        driver_subscriptions = Subscriptions.collect(subscriptions, nodes, max_rows)
    table = edges.select(S.U, S.V).limit(max_rows - driver_subscriptions.rows + 1).toArrow()
    if driver_subscriptions.rows + table.num_rows > max_rows:
        raise InputError(f"subscriptions and links exceed the driver cap of {max_rows:,} rows")
    links = (
        np.column_stack([table.column(S.U).to_numpy().astype(np.int64), table.column(S.V).to_numpy().astype(np.int64)])
        if table.num_rows
        else np.zeros((0, 2), dtype=np.int64)
    )
    driver_forest = topic_forest(driver_subscriptions, links)
    # Materialised once: the check reads it four times, and an Arrow-built frame is slow to reread.
    forest = lineage.cut(spark.createDataFrame(driver_forest.to_arrow()))
    violations = forest_violations(subscriptions, edges, forest, table.num_rows <= broadcast_links)
    if violations:
        raise CertificateError(
            "the topic components failed their check: "
            + ", ".join(f"{rule}: {count:,}" for rule, count in sorted(violations.items()))
        )
    return CertifiedComponents(
        forest.select(S.TOPIC_ID, S.NODE_ID, S.COMPONENT),
        driver_forest.tcc_summary(),
        degree_summary(links, driver_subscriptions.nodes if nodes is None else nodes),
    )


def certified_topic_components(
    spark: SparkSession,
    subscriptions: DataFrame,
    edges: DataFrame,
    nodes: int | None = None,
    max_rows: int = MAX_DRIVER_SUBSCRIPTIONS,
    broadcast_links: int = BROADCAST_LINKS,
    lineage: Lineage = LOCAL,
) -> DataFrame:
    """(topic_id, node_id, component) for every subscription, as `topic_components` gives them:
    `certified_components` without the summaries."""
    return certified_components(
        spark, subscriptions, edges, nodes, max_rows, broadcast_links=broadcast_links, lineage=lineage
    ).components
