"""gossipsub's topics simulated in batches (`overlay.gossip.gossipsub.simulate_topic` per topic):
in this process over the driver's copy of the subscriptions (the memory regime), or as one Spark
job per batch with the topics spread over the tasks (the spark regime). Both return the same
two tables: the batch's measures per heartbeat (summed over its topics; the least and largest
mesh) and its final meshes, one row per direction.

A batch is a run of consecutive topic ids with at most `subscriptions` subscriptions in all (one
topic at least): the unit a job commits and resumes by.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.gossip.connections import Connections, links_of, within_groups
from overlay.gossip.gossipsub import MEASURES, MESH_MAX, MESH_MIN, GossipsubParams, simulate_topic
from overlay.rappel.coordinates import LatencyModel

_SUMMED = [i for i in range(len(MEASURES)) if i not in (MESH_MIN, MESH_MAX)]
MEASURE_SCHEMA = pa.schema([(S.HEARTBEAT, pa.int32()), *((name, pa.int64()) for name in MEASURES)])
MESH_SCHEMA = pa.schema([(S.TOPIC_ID, pa.int64()), (S.NODE_ID, pa.int64()), (S.PEER_ID, pa.int64())])
_ROWS = "row_kind int, topic_id long, heartbeat int, node_id long, peer_id long, " + ", ".join(
    f"{name} long" for name in MEASURES
)
_MEASURE_ROW, _MESH_ROW = 0, 1


@dataclass(frozen=True)
class Batch:
    number: int
    first_topic: int  # topic ids first..last, both included
    last_topic: int
    subscriptions: int


def batches(topic_ids: np.ndarray, sizes: np.ndarray, subscriptions: int, first_number: int = 0) -> list[Batch]:
    """Consecutive runs of the topics (ids ascending, their subscriber counts) of at most
    `subscriptions` subscriptions each, one topic at least, numbered from `first_number`."""
    out: list[Batch] = []
    start, total = 0, 0
    for i, size in enumerate(sizes.tolist()):
        if i > start and total + size > subscriptions:
            out.append(Batch(first_number + len(out), int(topic_ids[start]), int(topic_ids[i - 1]), total))
            start, total = i, 0
        total += size
    if len(topic_ids) > start:
        out.append(Batch(first_number + len(out), int(topic_ids[start]), int(topic_ids[-1]), total))
    return out


def combine(measures: np.ndarray) -> np.ndarray:
    """[topics, heartbeats, measures] -> [heartbeats, measures]: sums, the least mesh of those
    that have one (-1: none), the largest."""
    heartbeats = measures.shape[1]
    out = np.zeros((heartbeats, len(MEASURES)), dtype=np.int64)
    if measures.shape[0] == 0:
        out[:, MESH_MIN] = out[:, MESH_MAX] = -1
        return out
    out[:, _SUMMED] = measures[:, :, _SUMMED].sum(axis=0)
    least = np.where(measures[:, :, MESH_MIN] >= 0, measures[:, :, MESH_MIN], np.iinfo(np.int64).max).min(axis=0)
    out[:, MESH_MIN] = np.where(least == np.iinfo(np.int64).max, -1, least)
    out[:, MESH_MAX] = measures[:, :, MESH_MAX].max(axis=0)
    return out


def measure_table(combined: np.ndarray) -> pa.Table:
    heartbeats = np.arange(1, combined.shape[0] + 1, dtype=np.int32)
    return pa.table([heartbeats, *combined.T], schema=MEASURE_SCHEMA)


def in_memory(
    members_of,
    topics: list[int],
    positions: np.ndarray,
    params: GossipsubParams,
    heartbeats: int,
    presence=None,
    connections: Connections | None = None,
) -> tuple[pa.Table, pa.Table]:
    """The batch `topics` in this process; `members_of(topic)` its sorted subscribers, `positions`
    every node's latency-model position (by node id); `connections`: peers as deployed, None:
    every pair sharing a topic."""
    runs = []
    mesh: list[np.ndarray] = []
    for topic in topics:
        members = members_of(topic)
        links = None if connections is None else connections.within(members)
        run = simulate_topic(topic, members, positions[members], params, heartbeats, presence, links)
        runs.append(run.measures)
        mesh.append(np.stack([np.full(len(run.mesh_node), topic, np.int64), run.mesh_node, run.mesh_peer]))
    stacked = np.stack(runs) if runs else np.zeros((0, heartbeats, len(MEASURES)), np.int64)
    rows = np.concatenate(mesh, axis=1) if mesh else np.zeros((3, 0), np.int64)
    return measure_table(combine(stacked)), pa.table(list(rows), schema=MESH_SCHEMA)


def on_spark(
    subscriptions: DataFrame,
    batch: Batch,
    params: GossipsubParams,
    heartbeats: int,
    presence=None,
    connections: DataFrame | None = None,
) -> DataFrame:
    """The batch's rows, per topic, computed by the tasks (`subscriptions`: node_id, topic_id;
    `connections`: dialer, listener, peers as deployed, None: every pair sharing a topic): measure
    rows and mesh rows. The caller cuts their lineage once, so the topics are simulated once, then
    reads `spark_measures` and `spark_mesh` of them."""
    inside = subscriptions.filter(F.col(S.TOPIC_ID).between(batch.first_topic, batch.last_topic))
    grouped = inside.groupBy(S.TOPIC_ID).agg(F.sort_array(F.collect_list(S.NODE_ID)).alias("_members"))
    if connections is not None:
        pairs = within_groups(inside, connections, S.TOPIC_ID)
        grouped = grouped.join(pairs, S.TOPIC_ID, "left")
    model_seed = params.model_seed

    def simulate(batches_in: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        model = LatencyModel()
        for record in batches_in:
            for row in record.to_pylist():
                members = np.asarray(row["_members"], dtype=np.int64)
                topic = int(row[S.TOPIC_ID])
                links = links_of(row, members)
                positions = model.coordinates(model_seed, members)
                run = simulate_topic(topic, members, positions, params, heartbeats, presence, links)
                yield _rows(topic, run)

    return grouped.mapInArrow(simulate, _ROWS)


def _rows(topic: int, run) -> pa.RecordBatch:
    heartbeats, mesh = run.measures.shape[0], len(run.mesh_node)
    total = heartbeats + mesh
    nulls = pa.nulls(mesh, pa.int64())
    columns = {
        "row_kind": pa.array([_MEASURE_ROW] * heartbeats + [_MESH_ROW] * mesh, pa.int32()),
        S.TOPIC_ID: pa.array(np.full(total, topic, np.int64)),
        S.HEARTBEAT: pa.concat_arrays(
            [pa.array(np.arange(1, heartbeats + 1, dtype=np.int32)), pa.nulls(mesh, pa.int32())]
        ),
        S.NODE_ID: pa.concat_arrays([pa.nulls(heartbeats, pa.int64()), pa.array(run.mesh_node)]),
        S.PEER_ID: pa.concat_arrays([pa.nulls(heartbeats, pa.int64()), pa.array(run.mesh_peer)]),
    }
    for i, name in enumerate(MEASURES):
        columns[name] = pa.concat_arrays([pa.array(run.measures[:, i]), nulls])
    return pa.RecordBatch.from_pydict(columns)


def spark_measures(rows: DataFrame) -> DataFrame:
    """(heartbeat, MEASURES...) of a batch's rows, combined over its topics as `combine` does."""
    measures = rows.filter(F.col("row_kind") == _MEASURE_ROW)
    summed = [F.sum(MEASURES[i]).alias(MEASURES[i]) for i in _SUMMED]
    least = F.min(F.when(F.col(MEASURES[MESH_MIN]) >= 0, F.col(MEASURES[MESH_MIN])))
    return measures.groupBy(S.HEARTBEAT).agg(
        *summed,
        F.coalesce(least, F.lit(-1)).cast("long").alias(MEASURES[MESH_MIN]),
        F.max(MEASURES[MESH_MAX]).alias(MEASURES[MESH_MAX]),
    )


def spark_mesh(rows: DataFrame) -> DataFrame:
    return rows.filter(F.col("row_kind") == _MESH_ROW).select(S.TOPIC_ID, S.NODE_ID, S.PEER_ID)
