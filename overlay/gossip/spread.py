"""One publication's spread through its topic's members, event by event in time: eager push of
full copies along each member's push peers (gossipsub's mesh of the topic, or a designed
overlay's topic subgraph) and, for gossipsub, lazy gossip at the heartbeats (IHAVE to peers
outside the mesh, IWANT back, the copy sent); our reading: docs/readings/gossipsub.md#spread.

Times are integer microseconds; a link's latency is round(1000 * hypot(dx, dy)) for the two
nodes' positions in ms (Rappel's latency model, `overlay.rappel.coordinates`). A member that is
down takes no part: nobody sends to it (its connections are gone) and it sends nothing.

Events run in (time, kind, node, other) order: kind 0, a copy reaches `node` from `other`; 1,
`node`'s heartbeat number `other`; 2, an IHAVE reaches `node` from `other`; 3, an IWANT reaches
`node` from `other`. A member's first copy is its delivery (its time and hops); it forwards the
copy at once to its push peers but the one it came from and the publisher, and, with gossip,
keeps it in its message cache: its next `mcache_gossip` heartbeats (heartbeat j at phase +
j * heartbeat, the phase a seeded draw per node) send an IHAVE to max(D_lazy, gossip_factor *
eligible) of the eligible peers (up, outside its push peers; the smallest draws), capped at all
of them. A member without the copy answers an IHAVE with an IWANT, which the announcer answers
with the copy; every copy after a member's first is a duplicate.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from overlay.draws import GOSSIPSUB_IHAVE, GOSSIPSUB_PHASE, draw_int

COPY, HEARTBEAT, IHAVE, IWANT = 0, 1, 2, 3


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


@dataclass
class SpreadOutcome:
    """Per member (in the members' order): its first copy's time (us) and hops, -1 for none;
    and the publication's counts of full copies sent, duplicates received, IHAVEs and IWANTs."""

    first_us: np.ndarray
    hops: np.ndarray
    messages: int = 0
    duplicates: int = 0
    ihave: int = 0
    iwant: int = 0


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
) -> SpreadOutcome:
    """One publication among `nodes` (its topic's members, sorted ids): member i pushes to
    `indices[indptr[i]:indptr[i + 1]]` (member positions), `up[i]` says it is up, `publisher`
    is a member position, `pub` the publication's id (a key of its draws)."""
    n = len(nodes)
    out = SpreadOutcome(np.full(n, -1, np.int64), np.full(n, -1, np.int32))
    out.first_us[publisher], out.hops[publisher] = 0, 0
    events: list[tuple[int, int, int, int, int]] = []
    seed, beat = params.seed, params.heartbeat_us

    def send(v: int, w: int, at: int, hops: int) -> None:
        out.messages += 1
        heapq.heappush(events, (at + latency_us(positions, v, w), COPY, w, v, hops))

    def hold(v: int, at: int, hops: int, came_from: int, targets) -> None:
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

    everyone = [w for w in range(n) if w != publisher]
    hold(publisher, 0, 0, -1, everyone if params.flood_publish else sorted(peers(publisher).tolist()))
    while events:
        time, kind, v, other, hops = heapq.heappop(events)
        if kind == COPY:
            if out.first_us[v] >= 0:
                out.duplicates += 1
                continue
            out.first_us[v], out.hops[v] = time, hops
            hold(v, time, hops, other, sorted(peers(v).tolist()))
        elif kind == HEARTBEAT:
            pushed = set(peers(v).tolist())
            eligible = [w for w in range(n) if w != v and up[w] and w not in pushed]
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
    return out
