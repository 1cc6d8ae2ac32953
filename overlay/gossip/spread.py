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
first tells its push peers but the sender it has the message, and a peer so told never sends it
a copy after that; it forwards the
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

import heapq
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.draws import GOSSIPSUB_IHAVE, GOSSIPSUB_PHASE, draw_int
from overlay.gossip.connections import links_of, within_groups
from overlay.gossip.dissemination import Failures, publisher_of
from overlay.rappel.coordinates import LatencyModel

IDONTWANT, COPY, HEARTBEAT, IHAVE, IWANT = -1, 0, 1, 2, 3
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


def latency_us(positions: np.ndarray, a: int, b: int) -> int:
    """The latency between members a and b (positions in ms), in whole microseconds."""
    return round(1000.0 * math.hypot(positions[a, 0] - positions[b, 0], positions[a, 1] - positions[b, 1]))


def spread(
    nodes: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    positions: np.ndarray,
    up: np.ndarray,
    publisher: int,
    pub: int,
    params: SpreadParams,
    neighbours: list[list[int]] | None = None,
) -> SpreadOutcome:
    """One publication among `nodes` (its topic's members, sorted ids): member i pushes to
    `indices[indptr[i]:indptr[i + 1]]` (member positions), `up[i]` says it is up, `publisher`
    is a member position, `pub` the publication's id (a key of its draws); `neighbours[i]`: the
    members i is connected to (ascending), None: all of them (whom it gossips and flood-publishes
    to)."""
    n = len(nodes)
    out = SpreadOutcome(np.full(n, -1, np.int64), np.full(n, -1, np.int32))
    out.first_us[publisher], out.hops[publisher] = 0, 0
    events: list[tuple[int, int, int, int, int]] = []
    seed, beat = params.seed, params.heartbeat_us
    unwanted: list[set[int]] = [set() for _ in range(n)]  # unwanted[v]: the peers that told v IDONTWANT
    uplink_free = [0] * n  # when each member's uplink is free again
    transmit = params.transmit_us

    def send(v: int, w: int, at: int, hops: int) -> None:
        if w in unwanted[v]:
            return
        out.messages += 1
        uplink_free[v] = max(at, uplink_free[v]) + transmit
        heapq.heappush(events, (uplink_free[v] + latency_us(positions, v, w), COPY, w, v, hops))

    def hold(v: int, at: int, hops: int, came_from: int, targets) -> None:
        if params.idontwant and v != publisher:
            for w in sorted(peers(v).tolist()):
                if w != came_from and up[w]:
                    out.idontwant += 1
                    heapq.heappush(events, (at + latency_us(positions, v, w), IDONTWANT, w, v, 0))
        for w in targets:
            if w != came_from and w != publisher and up[w]:
                send(v, w, at, hops + 1)
        if params.gossip:
            phase = draw_int(seed, GOSSIPSUB_PHASE, int(nodes[v])) % beat
            after = (at - phase) // beat + 1
            for j in range(after, after + params.mcache_gossip):
                heapq.heappush(events, (phase + j * beat, HEARTBEAT, v, j, 0))

    def peers(v: int) -> np.ndarray:
        return indices[indptr[v] : indptr[v + 1]]

    everyone = list(range(n))

    def connected(v: int) -> list[int]:
        return everyone if neighbours is None else neighbours[v]

    flooded = [w for w in connected(publisher) if w != publisher]
    hold(publisher, 0, 0, -1, flooded if params.flood_publish else sorted(peers(publisher).tolist()))
    while events:
        time, kind, v, other, hops = heapq.heappop(events)
        if kind == IDONTWANT:
            unwanted[v].add(other)
        elif kind == COPY:
            if out.first_us[v] >= 0:
                out.duplicates += 1
                continue
            out.first_us[v], out.hops[v] = time, hops
            hold(v, time, hops, other, sorted(peers(v).tolist()))
        elif kind == HEARTBEAT:
            pushed = set(peers(v).tolist())
            eligible = [w for w in connected(v) if w != v and up[w] and w not in pushed]
            want = min(len(eligible), max(params.d_lazy, int(params.gossip_factor * len(eligible))))
            ranked = sorted(
                eligible, key=lambda w: (draw_int(seed, GOSSIPSUB_IHAVE, pub, int(nodes[v]), other, int(nodes[w])), w)
            )
            for w in ranked[:want]:
                out.ihave += 1
                heapq.heappush(events, (time + latency_us(positions, v, w), IHAVE, w, v, 0))
        elif kind == IHAVE:
            if out.first_us[v] < 0:
                out.iwant += 1
                heapq.heappush(events, (time + latency_us(positions, v, other), IWANT, other, v, 0))
        else:
            send(v, other, time, int(out.hops[v]) + 1)
    out.bytes_sent = out.messages * params.message_bytes + MESSAGE_ID_BYTES * (out.ihave + out.iwant + out.idontwant)
    return out


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
            rows = [r for row in batch.to_pylist() for r in _one(row, failures, model_seed, params)]
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=_ARROW)

    return grouped.mapInArrow(run, SPREAD_SCHEMA)


def _one(row: dict, failures: Failures, model_seed: int, params: SpreadParams) -> list[dict]:
    nodes = np.asarray(row["_members"], dtype=np.int64)
    topic, pub = int(row[S.TOPIC_ID]), int(row[S.PUB_ID])
    us = np.searchsorted(nodes, np.asarray(row["_us"] or [], dtype=np.int64))
    vs = np.searchsorted(nodes, np.asarray(row["_vs"] or [], dtype=np.int64))
    order = np.lexsort((vs, us))
    indptr = np.searchsorted(us[order], np.arange(len(nodes) + 1))
    publisher = publisher_of(params.seed, topic, nodes)
    up = failures.alive(params.seed, nodes, 1, publisher)[1]
    positions = LatencyModel().coordinates(model_seed, nodes)
    links = links_of(row, nodes)
    neighbours = None if links is None else links.neighbours
    out = spread(nodes, indptr, vs[order], positions, up, publisher, pub, params, neighbours)
    base = {S.PUB_ID: pub, S.TOPIC_ID: topic, "publisher": int(nodes[publisher])}
    rows = [
        {
            **base,
            S.NODE_ID: int(nodes[i]),
            "row_kind": DELIVERY,
            "hops": int(out.hops[i]),
            "latency_ms": out.first_us[i] / 1000.0,
            "direct_ms": latency_us(positions, publisher, i) / 1000.0,
        }
        for i in np.flatnonzero(out.first_us >= 0).tolist()
        if i != publisher
    ]
    rows.append(
        {
            **base,
            S.NODE_ID: int(nodes[publisher]),
            "row_kind": SUMMARY,
            "messages": out.messages,
            "duplicates": out.duplicates,
            "ihave": out.ihave,
            "iwant": out.iwant,
            "idontwant": out.idontwant,
            "bytes_sent": out.bytes_sent,
            "expected": int(up.sum()) - 1,
        }
    )
    return rows
