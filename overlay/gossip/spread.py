"""One publication's spread through its topic's members, event by event in time: eager push of
full copies along each member's push peers (gossipsub's mesh of the topic, or a designed
overlay's topic subgraph) and, for gossipsub, lazy gossip at the heartbeats (IHAVE to peers
outside the mesh, IWANT back, the copy sent); our reading: docs/readings/gossipsub.md#spread.

Times are integer microseconds; a link's latency is round(1000 * hypot(dx, dy)) for the two
nodes' positions in ms (Rappel's latency model, `overlay.rappel.coordinates`). A member that is
down takes no part: nobody sends to it (its connections are gone) and it sends nothing.

Events run in (time, kind, node, other) order: kind -1, an IDONTWANT reaches `node` from `other`;
0, a copy reaches `node` from `other`; 1, `node`'s heartbeat number `other`; 2, an IHAVE reaches
`node` from `other`; 3, an IWANT reaches `node` from `other`. A member's first copy is its
delivery (its time and hops); with IDONTWANT (v1.2: a message of at least `idontwant_bytes`) it
first tells its push peers but the sender it has the message (the publisher tells all of its
push peers as it publishes), and a peer so told never sends it a copy after that; it forwards the
copy at once to its push peers but the one it came from and the publisher, and, with gossip,
keeps it in its message cache: its next `mcache_gossip` heartbeats (heartbeat j at phase +
j * heartbeat, the phase a seeded draw per node) send an IHAVE to max(D_lazy, gossip_factor *
eligible) of the eligible peers (up, outside its push peers; the smallest draws), capped at all
of them. A member without the copy answers an IHAVE with an IWANT, which the announcer answers
with the copy; every copy after a member's first is a duplicate. With an uplink limit
(`upload_mbps`) a member's copies leave one after another, each taking message_bytes x 8 /
upload_mbps, in the order they were sent; control messages are small and go at once (go-libp2p
queues IDONTWANT as urgent). Bytes sent: `message_bytes` per
copy and `MESSAGE_ID_BYTES` per IHAVE, IWANT and IDONTWANT entry (go-libp2p's default message
id, the author's 38-byte peer id and an 8-byte sequence number; RPC framing left out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.gossip import spread_kernel
from overlay.gossip.connections import DIALERS, LISTENERS, TopicLinks, links_of, within_groups
from overlay.gossip.dissemination import Failures, publisher_of
from overlay.gossip.event_rows import latencies_us
from overlay.rappel.coordinates import LatencyModel

MESSAGE_ID_BYTES = 46


@dataclass(frozen=True)
class SpreadParams:
    """How copies spread: `gossip` off is eager push alone (a designed overlay's flood)."""

    heartbeat_us: int = 1_000_000
    d_lazy: int = 6
    gossip_factor: float = 0.25
    mcache_gossip: int = 3
    gossip: bool = True
    flood_publish: bool = False
    seed: int = 1
    message_bytes: int = 256
    idontwant_bytes: int = 0  # v1.2: IDONTWANT for messages of at least this size (0: never)
    upload_mbps: float = 0.0  # each node's uplink: its copies leave one after another (0: no limit)

    @property
    def transmit_us(self) -> int:
        """How long one copy occupies its sender's uplink (us)."""
        return round(8 * self.message_bytes / self.upload_mbps) if self.upload_mbps > 0 else 0

    @property
    def idontwant(self) -> bool:
        return 0 < self.idontwant_bytes <= self.message_bytes


@dataclass
class SpreadOutcome:
    """Per member (in the members' order): its first copy's time (us) and hops, -1 for none;
    and the publication's counts of full copies sent, duplicates received, IHAVEs, IWANTs and
    IDONTWANTs sent, and the bytes of all of them."""

    first_us: np.ndarray
    hops: np.ndarray
    messages: int = 0
    duplicates: int = 0
    ihave: int = 0
    iwant: int = 0
    idontwant: int = 0
    bytes_sent: int = 0


def spread(
    nodes: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    positions: np.ndarray,
    up: np.ndarray,
    publisher: int,
    pub: int,
    params: SpreadParams,
    links: TopicLinks | None = None,
) -> SpreadOutcome:
    """One publication among `nodes` (its topic's members, sorted ids): member i pushes to
    `indices[indptr[i]:indptr[i + 1]]` (member positions, ascending), `up[i]` says it is up,
    `publisher` is a member position, `pub` the publication's id (a key of its draws); `links`:
    whom each member is connected to, None: every member (whom it gossips and flood-publishes
    to). Compiled: `overlay.gossip.spread_kernel`."""
    positions = np.asarray(positions, dtype=np.float64).reshape(len(nodes), 2)
    settings = np.array(
        [params.heartbeat_us, params.d_lazy, params.mcache_gossip, params.gossip, params.flood_publish,
         params.seed, params.idontwant, params.transmit_us],
        dtype=np.int64,
    )  # fmt: skip
    if links is None:
        links = TopicLinks(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    first_us, hops, counts = spread_kernel.spread(
        np.asarray(nodes, dtype=np.int64), np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
        np.ascontiguousarray(positions[:, 0]), np.ascontiguousarray(positions[:, 1]), np.asarray(up, dtype=np.bool_),
        publisher, pub, settings, float(params.gossip_factor), links.offsets, links.targets,
        len(links.offsets) == len(nodes) + 1,
    )  # fmt: skip
    messages, duplicates, ihave, iwant, idontwant = (int(c) for c in counts)
    sent = messages * params.message_bytes + MESSAGE_ID_BYTES * (ihave + iwant + idontwant)
    return SpreadOutcome(first_us, hops, messages, duplicates, ihave, iwant, idontwant, sent)


# -- Every publication of a workload, one per task call ------------------------------------------
DELIVERY, SUMMARY = 0, 1  # the two kinds of rows `spread_publications` returns
SPREAD_SCHEMA = (
    "pub_id long, topic_id long, publisher long, node_id long, row_kind int, hops int, latency_ms double, "
    "direct_ms double, messages long, duplicates long, ihave long, iwant long, idontwant long, bytes_sent long, "
    "expected long"
)
_ARROW = pa.schema(
    [
        ("pub_id", pa.int64()),
        ("topic_id", pa.int64()),
        ("publisher", pa.int64()),
        ("node_id", pa.int64()),
        ("row_kind", pa.int32()),
        ("hops", pa.int32()),
        ("latency_ms", pa.float64()),
        ("direct_ms", pa.float64()),
        ("messages", pa.int64()),
        ("duplicates", pa.int64()),
        ("ihave", pa.int64()),
        ("iwant", pa.int64()),
        ("idontwant", pa.int64()),
        ("bytes_sent", pa.int64()),
        ("expected", pa.int64()),
    ]
)


def spread_publications(
    subscriptions: DataFrame,
    push: DataFrame,
    topics: DataFrame,
    mass_share: float,
    model_seed: int,
    params: SpreadParams,
    connections: DataFrame | None = None,
) -> DataFrame:
    """Every publication of `topics` (pub_id, topic_id) spread among its topic's subscribers;
    `connections` (dialer, listener): who is connected to whom, None: every pair of subscribers.
    `push`: (topic_id, u, v), u pushes copies of the topic's publications to v. The publisher of
    topic t and the members down are those push-pull's would be (`dissemination.publisher_of`,
    a `Failures` mass failure of `mass_share` from the start; the publisher stays up). Rows
    (`SPREAD_SCHEMA`): a DELIVERY per member other than the publisher that got a copy (its hops,
    latency and the publisher's direct latency, ms), and a SUMMARY per publication (its counts and
    `expected`, the members up but the publisher)."""
    members = topics.join(subscriptions.select(S.NODE_ID, S.TOPIC_ID), S.TOPIC_ID)
    grouped = members.groupBy(S.PUB_ID, S.TOPIC_ID).agg(F.sort_array(F.collect_list(S.NODE_ID)).alias("_members"))
    pushed = (
        topics.select(S.PUB_ID, S.TOPIC_ID)
        .join(push.select(S.TOPIC_ID, S.U, S.V), S.TOPIC_ID)
        .groupBy(S.PUB_ID)
        .agg(F.collect_list(S.U).alias("_us"), F.collect_list(S.V).alias("_vs"))
    )
    failures = Failures(mass_share=mass_share)  # down from cycle 1 on: from the start of a spread
    failures.check()
    grouped = grouped.join(pushed, S.PUB_ID, "left")
    if connections is not None:
        linked = within_groups(members, connections, S.PUB_ID)
        grouped = grouped.join(linked, S.PUB_ID, "left")

    def run(batches):
        for batch in batches:
            for row in batch.to_pylist():
                yield _one(row, failures, model_seed, params)

    return grouped.mapInArrow(run, SPREAD_SCHEMA)


def spread_in_memory(
    subscriptions: pa.Table,
    push: pa.Table,
    topics: pa.Table,
    mass_share: float,
    model_seed: int,
    params: SpreadParams,
    connections: pa.Table | None = None,
) -> pa.Table:
    """`spread_publications` over tables in this process (the memory regime): the same rows, the
    groups built with numpy instead of Spark's joins. subscriptions (node_id, topic_id), push
    (topic_id, u, v), topics (pub_id, topic_id), connections (dialer, listener)."""
    failures = Failures(mass_share=mass_share)
    failures.check()
    node, topic = (np.asarray(subscriptions.column(c).to_numpy(), np.int64) for c in (S.NODE_ID, S.TOPIC_ID))
    by_topic = np.lexsort((node, topic))
    node, topic = node[by_topic], topic[by_topic]
    p_topic, p_u, p_v = (np.asarray(push.column(c).to_numpy(), np.int64) for c in (S.TOPIC_ID, S.U, S.V))
    by_push = np.argsort(p_topic, kind="stable")
    p_topic, p_u, p_v = p_topic[by_push], p_u[by_push], p_v[by_push]
    dialer = listener = None
    if connections is not None:
        dialer, listener = (np.asarray(connections.column(c).to_numpy(), np.int64) for c in ("dialer", "listener"))
        by_dialer = np.argsort(dialer, kind="stable")
        dialer, listener = dialer[by_dialer], listener[by_dialer]
    batches = []
    for pub, t in zip(topics.column(S.PUB_ID).to_pylist(), topics.column(S.TOPIC_ID).to_pylist()):
        members = node[np.searchsorted(topic, t) : np.searchsorted(topic, t, side="right")]
        if len(members) == 0:
            continue  # the Spark regime's join with the subscriptions drops it
        pushed = slice(np.searchsorted(p_topic, t), np.searchsorted(p_topic, t, side="right"))
        row = {S.PUB_ID: pub, S.TOPIC_ID: t, "_members": members, "_us": p_u[pushed], "_vs": p_v[pushed]}
        if dialer is not None:
            lo, hi = np.searchsorted(dialer, members), np.searchsorted(dialer, members, side="right")
            ends = np.repeat(lo - np.concatenate([[0], np.cumsum(hi - lo)[:-1]]), hi - lo) + np.arange((hi - lo).sum())
            ends = ends[np.isin(listener[ends], members)]
            row[DIALERS], row[LISTENERS] = dialer[ends], listener[ends]
        batches.append(_one(row, failures, model_seed, params))
    return pa.Table.from_batches(batches, schema=_ARROW)


def _one(row: dict, failures: Failures, model_seed: int, params: SpreadParams) -> pa.RecordBatch:
    nodes = np.asarray(row["_members"], dtype=np.int64)
    topic, pub = int(row[S.TOPIC_ID]), int(row[S.PUB_ID])
    us = np.searchsorted(nodes, np.asarray(_listed(row["_us"]), dtype=np.int64))
    vs = np.searchsorted(nodes, np.asarray(_listed(row["_vs"]), dtype=np.int64))
    order = np.lexsort((vs, us))
    indptr = np.searchsorted(us[order], np.arange(len(nodes) + 1))
    publisher = publisher_of(params.seed, topic, nodes)
    up = failures.alive(params.seed, nodes, 1, publisher)[1]
    positions = LatencyModel().coordinates(model_seed, nodes)
    out = spread(nodes, indptr, vs[order], positions, up, publisher, pub, params, links_of(row, nodes))
    px, py = np.ascontiguousarray(positions[:, 0], np.float64), np.ascontiguousarray(positions[:, 1], np.float64)
    got = np.flatnonzero(out.first_us >= 0)
    got = got[got != publisher]
    summary = np.append(np.zeros(len(got), bool), True)  # the last row: the publication's summary

    def deliveries(values: np.ndarray, kind: pa.DataType) -> pa.Array:
        return pa.array(np.append(values, 0), mask=summary, type=kind)

    def summaries(count: int) -> pa.Array:
        return pa.array(np.append(np.zeros(len(got), np.int64), count), mask=~summary, type=pa.int64())

    def each(value: int) -> pa.Array:
        return pa.array(np.full(len(got) + 1, value), type=pa.int64())

    counts = (out.messages, out.duplicates, out.ihave, out.iwant, out.idontwant, out.bytes_sent, int(up.sum()) - 1)
    columns = [
        each(pub),
        each(topic),
        each(int(nodes[publisher])),
        pa.array(np.append(nodes[got], nodes[publisher]), type=pa.int64()),
        pa.array(np.append(np.full(len(got), DELIVERY), SUMMARY), type=pa.int32()),
        deliveries(out.hops[got], pa.int32()),
        deliveries(out.first_us[got] / 1000.0, pa.float64()),
        deliveries(latencies_us(px, py, publisher, got.astype(np.int64)) / 1000.0, pa.float64()),
        *(summaries(c) for c in counts),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=_ARROW)


def _listed(values) -> list | np.ndarray:
    """A collected list column's value (None: no rows) or the memory regime's array."""
    return [] if values is None else values
