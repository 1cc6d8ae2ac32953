"""Per-topic overlays of the kTCO paper: HararyPT (Alg. 2) and CyclePT, one pass over the topics.

Both give every topic its own k-connected subgraph and take the union of the links
(our reading: docs/readings/ktco.md#harary-pt, #cycle-pt):

* **HararyPT** lays each topic's subscribers out in one *global* node order (node ids, or a
  seeded random order) and joins them as the Harary graph H(k, n_t): position i to i +- 1 .. r
  (r = floor(k / 2), modulo n_t), and for odd k the opposite positions; a clique when n_t <= k.
  Sharing the order is what makes topics share links.
* **CyclePT** gives each topic its own seeded random order and a cycle over it (H(2, n_t) in
  that order), so topics rarely share links: the paper's baseline.

One Spark job: the subscriptions are hashed by topic into partitions, and each partition builds
the links of its whole topics in one compiled call (`mapInArrow`); a `distinct` then merges the
links topics share. Random orders come from `overlay.draws`, keyed by (seed, node) or
(seed, topic, node), so a seed gives one overlay on any layout.
"""

from __future__ import annotations

from collections.abc import Iterator

import numba as nb
import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import draws
from overlay import schema as S
from overlay.design.baselines import numbered_links

NODE_ORDERS = ("ids", "random")


@nb.njit(cache=True, nogil=True)
def harary_links(starts, ordered, k):
    """Links (a, b) of H(k, n) over each segment `ordered[starts[s]:starts[s + 1]]` (a topic's
    subscribers in its order); a clique when n <= k. Ends are node ids, in either order."""
    total = 0
    for s in range(len(starts) - 1):
        n = starts[s + 1] - starts[s]
        total += n * (n - 1) // 2 if n <= k else (k * n + 1) // 2
    out_a = np.empty(total, dtype=np.int64)
    out_b = np.empty(total, dtype=np.int64)
    size = 0
    half = k // 2
    for s in range(len(starts) - 1):
        first = starts[s]
        n = starts[s + 1] - first
        if n <= 1:
            continue
        if n <= k:
            for i in range(n):
                for j in range(i + 1, n):
                    out_a[size], out_b[size] = ordered[first + i], ordered[first + j]
                    size += 1
            continue
        for i in range(n):
            for step in range(1, half + 1):
                out_a[size], out_b[size] = ordered[first + i], ordered[first + (i + step) % n]
                size += 1
        if k % 2 == 1:
            if n % 2 == 0:
                for i in range(n // 2):
                    out_a[size], out_b[size] = ordered[first + i], ordered[first + i + n // 2]
                    size += 1
            else:
                for i in range((n - 1) // 2 + 1):
                    out_a[size], out_b[size] = ordered[first + i], ordered[first + (i + (n + 1) // 2) % n]
                    size += 1
    return out_a[:size], out_b[:size]


def _partition_links(k: int, order: str, seed: int):
    def links(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The executor side: every topic of the partition in one call."""
        batches = [batch for batch in batches if batch.num_rows]
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        nodes = table.column(S.NODE_ID).to_numpy().astype(np.int64)
        topics = table.column(S.TOPIC_ID).to_numpy().astype(np.int64)
        if order == "per-topic":
            rank = draws.ranks(seed, draws.CYCLE_PT_ORDER, topics, nodes)
        elif order == "random":
            rank = draws.ranks(seed, draws.HARARY_PT_ORDER, nodes)
        else:
            rank = nodes
        laid_out = np.lexsort((nodes, rank, topics))
        topics, nodes = topics[laid_out], nodes[laid_out]
        starts = np.flatnonzero(np.r_[True, topics[1:] != topics[:-1], True]).astype(np.int64)
        a, b = harary_links(starts, nodes, k)
        yield pa.RecordBatch.from_arrays(
            [pa.array(np.minimum(a, b)), pa.array(np.maximum(a, b))],
            names=[S.U, S.V],
        )

    return links


def _per_topic_links(subscriptions: DataFrame, k: int, order: str, seed: int, partitions: int | None) -> DataFrame:
    """H(k, n_t) per topic with its subscribers laid out in node-id order, a random global order
    ("random") or each topic's own random order ("per-topic")."""
    rows = subscriptions.select(S.NODE_ID, S.TOPIC_ID)
    by_topic = rows.repartition(partitions, S.TOPIC_ID) if partitions else rows.repartition(S.TOPIC_ID)
    links = by_topic.mapInArrow(_partition_links(k, order, seed), f"{S.U} long, {S.V} long")
    return numbered_links(links.distinct().withColumn(S.ROUND, F.lit(1)), [S.U, S.V])


def harary_pt(
    subscriptions: DataFrame,
    k: int,
    node_order: str = "ids",
    seed: int = 1,
    partitions: int | None = None,
) -> DataFrame:
    """HararyPT's links (u, v, added_order, round), u < v, numbered in (u, v) order: a kTCO.
    `node_order`: the global order, node ids or a random order drawn from `seed`."""
    if k < 2:
        raise ValueError(f"HararyPT needs k >= 2, got {k}")
    if node_order not in NODE_ORDERS:
        raise ValueError(f"node_order must be one of {', '.join(NODE_ORDERS)}, got {node_order!r}")
    return _per_topic_links(subscriptions, k, node_order, seed, partitions)


def cycle_pt(subscriptions: DataFrame, seed: int, partitions: int | None = None) -> DataFrame:
    """CyclePT's links (u, v, added_order, round): a cycle per topic over its own random order
    (one link for two subscribers), so a 2TCO."""
    return _per_topic_links(subscriptions, 2, "per-topic", seed, partitions)
