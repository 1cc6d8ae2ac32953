"""The structure of single topic subgraphs (Feverfew Table 3;
docs/readings/feverfew.md#topic-structure): for a handful of sampled topics, whether G(t) is
connected, its diameter and its clustering coefficient (the mean local Watts-Strogatz coefficient,
nodes of degree < 2 counting 0, as networkx's `average_clustering`).

Topics are sampled by size (the topic nearest each size asked for), so their number is small;
each is measured exactly in one Python call over its members and links (`mapInArrow` over one
row per topic): a BFS from every member for the diameter."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S

CONNECTED, DIAMETER, CLUSTERING = S.CONNECTED, S.DIAMETER, S.CLUSTERING
_MEMBERS, _US, _VS = "_members", "_us", "_vs"


def structure(members: list[int], links: list[tuple[int, int]]) -> tuple[bool, int | None, float]:
    """(connected, diameter (None when not connected), mean local clustering) of one graph."""
    near: dict[int, set[int]] = {v: set() for v in members}
    for u, v in links:
        near[u].add(v)
        near[v].add(u)
    total = 0.0
    for around in near.values():
        k = len(around)
        if k >= 2:
            closed = sum(1 for a in around for b in near[a] if b in around) // 2
            total += 2.0 * closed / (k * (k - 1))
    clustering = total / len(members) if members else 0.0
    diameter = 0
    for source in members:
        depth = {source: 0}
        queue = deque([source])
        while queue:
            x = queue.popleft()
            for y in near[x]:
                if y not in depth:
                    depth[y] = depth[x] + 1
                    queue.append(y)
        if len(depth) < len(members):
            return False, None, clustering
        diameter = max(diameter, max(depth.values()))
    return True, diameter, clustering


def topic_structure(subscriptions: DataFrame, links: DataFrame, topics: DataFrame) -> DataFrame:
    """(topic_id, subscribers, connected, diameter, clustering) for each topic of `topics`
    (a `topic_id` column) on the overlay `links` (u, v)."""
    members = topics.select(S.TOPIC_ID).distinct().join(subscriptions.select(S.NODE_ID, S.TOPIC_ID), S.TOPIC_ID)
    a = members.select(S.TOPIC_ID, F.col(S.NODE_ID).alias(S.U))
    b = members.select(S.TOPIC_ID, F.col(S.NODE_ID).alias(S.V))
    inside = links.select(S.U, S.V).join(a, S.U).join(b, [S.TOPIC_ID, S.V])
    grouped = (
        members.groupBy(S.TOPIC_ID)
        .agg(F.collect_list(S.NODE_ID).alias(_MEMBERS))
        .join(
            inside.groupBy(S.TOPIC_ID).agg(F.collect_list(S.U).alias(_US), F.collect_list(S.V).alias(_VS)),
            S.TOPIC_ID,
            "left",
        )
    )

    def measure(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out = {S.TOPIC_ID: [], S.SUBSCRIBERS: [], CONNECTED: [], DIAMETER: [], CLUSTERING: []}
            for row in batch.to_pylist():
                connected, diameter, clustering = structure(row[_MEMBERS], list(zip(row[_US] or [], row[_VS] or [])))
                for name, value in zip(out, (row[S.TOPIC_ID], len(row[_MEMBERS]), connected, diameter, clustering)):
                    out[name].append(value)
            yield pa.RecordBatch.from_pydict(
                out,
                schema=pa.schema(
                    [
                        (S.TOPIC_ID, pa.int64()),
                        (S.SUBSCRIBERS, pa.int64()),
                        (CONNECTED, pa.bool_()),
                        (DIAMETER, pa.int32()),
                        (CLUSTERING, pa.float64()),
                    ]
                ),
            )

    return grouped.mapInArrow(
        measure,
        f"{S.TOPIC_ID} long, {S.SUBSCRIBERS} long, {CONNECTED} boolean, {DIAMETER} int, {CLUSTERING} double",
    )
