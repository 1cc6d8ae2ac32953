"""Shared-topic counts |T(u) & T(v)| for every node pair that shares a topic.

These counts are the gains of all links on the empty overlay, and, because gains never grow
(docs/readings/icdcs16.md#gain), upper bounds on every later gain: the greedy engine starts its
candidate table from them.

A self-join of the subscriptions on topic costs sum |V(t)|^2 / 2 rows (8.6e7 on the ICDCS'16
Zipf 1K x 1K workload, 1.1e9 on Zipf 10K), almost all from a few popular topics, and a shuffle
to count them. Instead, each partition takes a range of nodes u and counts, per u, every later
subscriber of each of u's topics in a dense counter (a sparse product of the subscription matrix
with its transpose, compiled: `overlay.design.kernels`), against the subscriptions broadcast in
CSR form by node and by topic. No shuffle; the output rows are the candidate table's partitions.
Node ranges are cut so that each holds about the same counting work.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from overlay import schema as S
from overlay.design import kernels
from overlay.design.classes import Subscriptions

SHARED = "shared"
WORK_PER_PARTITION = 50_000_000  # counter increments per partition, at most
MIN_WORK_PER_PARTITION = 20_000_000  # below this, another partition costs more than it saves


def by_topic(subscriptions: Subscriptions) -> tuple[np.ndarray, np.ndarray]:
    """The transpose: subscribers of topic t are `nodes[offsets[t]:offsets[t + 1]]`, ascending."""
    topic_offsets, topic_nodes, _, _ = kernels.transpose(
        subscriptions.offsets, subscriptions.topics, NO_GROUPS, _topic_count(subscriptions)
    )
    return topic_offsets, topic_nodes


NO_GROUPS = np.zeros(0, dtype=np.int64)


def by_topic_and_class(subscriptions: Subscriptions, label: np.ndarray) -> tuple[np.ndarray, ...]:
    """The transpose with each topic's subscribers grouped by class, and for each subscription row
    the span `[group_lo, group_hi)` of its own class among them. `label`: each subscription row's
    class (a flattened union-find of `ComponentClasses`: rows of one class share a topic).

    What the pair counts need to skip pairs a start's links joined already: on a topic nearly
    connected, a node's partners apart from it are the few outside its class. One counting pass
    (`kernels.transpose`), no sort."""
    return kernels.transpose(
        subscriptions.offsets, subscriptions.topics, np.ascontiguousarray(label), _topic_count(subscriptions)
    )


def _topic_count(subscriptions: Subscriptions) -> int:
    return int(subscriptions.topics.max()) + 1 if subscriptions.rows else 0


def node_ranges(
    subscriptions: Subscriptions, topic_offsets: np.ndarray, parts: int | None, parallelism: int
) -> np.ndarray:
    """Boundaries [b0 = 0, b1, ..., bP = nodes] of node ranges of about equal counting work."""
    sizes = np.diff(topic_offsets)
    running = np.concatenate([[0], np.cumsum(sizes[subscriptions.topics])])
    work = running[subscriptions.offsets[1:]] - running[subscriptions.offsets[:-1]]  # per node
    total = int(work.sum())
    if parts is None:
        parts = max(-(-total // WORK_PER_PARTITION), min(parallelism, -(-total // MIN_WORK_PER_PARTITION)))
    parts = max(1, min(parts, max(1, subscriptions.nodes)))
    cumulative = np.cumsum(work)
    cuts = np.searchsorted(cumulative, np.arange(1, parts) * (total / parts), side="left")
    return np.unique(np.concatenate([[0], cuts, [subscriptions.nodes]])).astype(np.int64)


def shared_topic_counts(
    spark: SparkSession,
    subscriptions: Subscriptions,
    partitions: int | None = None,
    parallelism: int | None = None,
    label: np.ndarray | None = None,
) -> DataFrame:
    """(u, v, shared) for u < v with shared = |T(u) & T(v)| > 0, one partition per node range.
    `label`: each subscription row's class after a start's links (`by_topic_and_class`): then
    shared counts the topics where u and v are apart, each pair's gain at the start.

    `partitions`: how many (None: by work, at least `parallelism` when there is work enough);
    `parallelism`: how many tasks run at once (None: the context's default parallelism). Each
    round reads every partition, so more partitions than task slots only add waves of tasks."""
    if label is None:
        topic_offsets, topic_nodes = by_topic(subscriptions)
        groups = (NO_GROUPS, NO_GROUPS)
    else:
        topic_offsets, topic_nodes, *groups = by_topic_and_class(subscriptions, label)
    bounds = node_ranges(subscriptions, topic_offsets, partitions, parallelism or spark.sparkContext.defaultParallelism)
    parts = len(bounds) - 1
    shared = spark.sparkContext.broadcast((subscriptions, topic_offsets, topic_nodes, *groups, bounds))

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        csr, by_topic, members, group_lo, group_hi, cuts = shared.value
        for batch in batches:
            for part in batch.column("id").to_pylist():
                us, vs, counts = kernels.shared_counts_of_range(
                    csr.offsets, csr.topics, by_topic, members, group_lo, group_hi, cuts[part], cuts[part + 1]
                )
                yield pa.RecordBatch.from_arrays(
                    [pa.array(us), pa.array(vs), pa.array(counts)], names=[S.U, S.V, SHARED]
                )

    return spark.range(parts, numPartitions=parts).mapInArrow(count, f"{S.U} long, {S.V} long, {SHARED} long")
