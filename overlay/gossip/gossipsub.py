"""gossipsub v1.1's mesh maintenance as a cycle protocol: one heartbeat per cycle (our reading of
libp2p's spec, docs/readings/gossipsub.md; the oracle
`tests/gossipsub_oracle.py` replays it on its own).

Every node knows every other subscriber of its topics and is connected to it; a connection is
outbound at one end, a fair coin per pair (`outbound`). Peer scores are left out: the spec gives
no default weights, so every score is 0 (no negative-score pruning, D_score's "best by score" is a
random choice among equals, opportunistic grafting never finds a peer above the median).

One heartbeat, in the engine's three steps (`overlay.gossip.cycles`):

1. `act`, each node, topic by topic: expired backoffs go; a mesh below D_low grafts D - |mesh|
   peers (not in it, not backed off: the smallest draws); a mesh above D_high keeps D of its peers
   (the smallest draws; outbound peers outside them replace its last non-outbound ones until it
   keeps D_out outbound, where it has them) and prunes the rest, backing them off; a mesh of at
   least D_low with fewer than D_out outbound peers grafts outbound ones. GRAFT and PRUNE messages
   go to the peers.
2. `serve`, each node: the PRUNEs sent to it (the pruner leaves its mesh, backed off), then the
   GRAFTs in sender order: a peer already in the mesh is a no-op; a backed-off peer, or one whose
   connection is not outbound here while the mesh holds D_high or more, gets a PRUNE back
   (REFUSE) and a (refreshed) backoff; any other joins the mesh.
3. `finish`, each grafter: a REFUSE takes the peer out of its mesh, backed off.

A backoff set at heartbeat h lasts while the heartbeat is below h + prune_backoff.

Churn and failures (`presence`): a node down at a heartbeat sends and handles nothing and forgets
its meshes and backoffs (it joins afresh when it returns); its connections are gone, so every peer
drops it from its meshes at that heartbeat, without a backoff, and grafts no node that is down.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from overlay import schema as S
from overlay.draws import GOSSIPSUB_DIRECTION, GOSSIPSUB_GRAFT, GOSSIPSUB_KEEP, GOSSIPSUB_OUTBOUND, draw_int
from overlay.errors import InputError
from overlay.gossip.cycles import MAX, MIN_NONNEGATIVE, SPARK, SUM, CycleEngine, CycleState, Figure, summarize
from overlay.lineage import LOCAL, Lineage

SELF, PRUNE, GRAFT, REFUSE = 0, 1, 2, 3  # message kinds, in the order a node handles them
OUTBOUND_CACHE = 1_000_000  # (node, peer) directions a protocol instance keeps drawn, then starts afresh

STATE_COLUMNS = (
    ("node_id", "bigint"),
    ("mesh_topic", "array<bigint>"),  # (topic, peer) pairs of the node's meshes, sorted
    ("mesh_peer", "array<bigint>"),
    ("backoff_topic", "array<bigint>"),  # (topic, peer, until): peers the node will not graft yet
    ("backoff_peer", "array<bigint>"),
    ("backoff_until", "array<int>"),
)
MEASURE_COLUMNS = (
    ("grafts", "int"),  # GRAFTs the node sent this heartbeat
    ("prunes", "int"),  # PRUNEs it sent: its own and its refusals of GRAFTs
    ("refused", "int"),  # GRAFTs of its own that came back refused
    # Over the node's meshes of topics with more than D_low subscribers (where the bounds can hold):
    ("meshes", "int"),  # how many
    ("mesh_links", "int"),  # their sizes summed
    ("mesh_min", "int"),  # the smallest and largest (-1: none)
    ("mesh_max", "int"),
    ("below_low", "int"),  # how many are below D_low, and above D_high
    ("above_high", "int"),
    ("backoffs", "int"),  # backoffs the node holds, every topic
)
# One heartbeat's `gossipsub_heartbeats` figures from the nodes' measure columns: sums over the
# nodes, the smallest mesh of the nodes that have one, the largest.
HEARTBEAT_FIGURES = (
    *(Figure(c, SUM, c) for c in (S.GRAFTS, S.PRUNES, S.REFUSED, S.MESHES, S.BELOW_LOW, S.ABOVE_HIGH, S.BACKOFFS)),
    Figure("links", SUM, "mesh_links"),
    Figure(S.MESH_MIN, MIN_NONNEGATIVE, "mesh_min"),
    Figure(S.MESH_MAX, MAX, "mesh_max"),
)


def heartbeat_summary(state: CycleState) -> dict:
    """One heartbeat's `gossipsub_heartbeats` measures (without run, heartbeat and timing): from
    the heartbeat's Arrow table in the memory regime, else one Spark aggregate."""
    row = summarize(state, HEARTBEAT_FIGURES)
    meshes = int(row[S.MESHES] or 0)
    return {
        **{k: int(row[k] or 0) for k in (S.GRAFTS, S.PRUNES, S.REFUSED, S.BELOW_LOW, S.ABOVE_HIGH, S.BACKOFFS)},
        S.MESHES: meshes,
        S.MESH_AVG: row["links"] / meshes if meshes else None,
        S.MESH_MIN: row[S.MESH_MIN],
        S.MESH_MAX: row[S.MESH_MAX] if meshes else None,
    }


MESSAGE_COLUMNS = (
    ("dst", "bigint"),
    ("kind", "int"),
    ("src", "bigint"),
    ("seq", "int"),
    ("topic", "bigint"),
    *STATE_COLUMNS[1:],
    ("grafts", "int"),
    ("prunes", "int"),
)


@dataclass(frozen=True)
class GossipsubParams:
    """The mesh parameters (the spec's names); `prune_backoff` in heartbeats (1 minute at the
    default 1 s heartbeat)."""

    d: int = 6
    d_low: int = 4
    d_high: int = 12
    d_score: int = 4
    d_out: int = 2
    prune_backoff: int = 60
    seed: int = 1
    # What the spread of publications uses (`overlay.gossip.spread`): the heartbeat interval, the
    # gossip's D_lazy and factor, and the history windows it gossips about.
    heartbeat_ms: int = 1000
    d_lazy: int = 6
    gossip_factor: float = 0.25
    mcache_gossip: int = 3

    def check(self) -> None:
        if not 1 <= self.d_low <= self.d <= self.d_high:
            raise InputError(f"gossipsub needs 1 <= D_low <= D <= D_high, got {self.d_low}, {self.d}, {self.d_high}")
        if not 0 <= self.d_out < self.d_low or 2 * self.d_out > self.d:
            raise InputError(f"gossipsub needs 0 <= D_out < D_low and D_out <= D/2, got D_out {self.d_out}")
        if not 0 <= self.d_score <= self.d:
            raise InputError(f"gossipsub needs 0 <= D_score <= D, got {self.d_score}")
        if self.prune_backoff < 1:
            raise InputError(f"the PRUNE backoff must be at least one heartbeat, got {self.prune_backoff}")
        if self.heartbeat_ms < 1 or self.d_lazy < 0 or not 0 <= self.gossip_factor <= 1 or self.mcache_gossip < 1:
            raise InputError(
                "gossipsub needs a heartbeat of 1 ms or more, D_lazy >= 0, a gossip factor in [0, 1] "
                "and at least one gossip window"
            )


PROFILES = {
    "default": GossipsubParams(),  # the spec's defaults (v1.0 D, D_low, D_high; v1.1 D_score, D_out)
    "eth2": GossipsubParams(d=8, d_low=6, d_high=12, heartbeat_ms=700),  # Ethereum's consensus layer
}


def outbound(seed: int, node: int, peer: int) -> bool:
    """Whether `node` opened its connection to `peer`: exactly one end of each pair, a fair coin."""
    low, high = min(node, peer), max(node, peer)
    opened_by_low = draw_int(seed, GOSSIPSUB_DIRECTION, low, high) & 1 == 0
    return opened_by_low == (node == low)


class Members:
    """Who subscribes to what, both ways, from the CSR of the subscriptions."""

    def __init__(self, offsets: np.ndarray, topics: np.ndarray) -> None:
        self.offsets, self.topics = offsets, topics
        nodes = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
        order = np.lexsort((nodes, topics))
        self.by_topic = nodes[order]
        self.topic_offsets = np.searchsorted(topics[order], np.arange(int(topics.max(initial=-1)) + 2))

    def of_node(self, node: int) -> np.ndarray:
        return self.topics[self.offsets[node] : self.offsets[node + 1]]

    def of_topic(self, topic: int) -> np.ndarray:
        return self.by_topic[self.topic_offsets[topic] : self.topic_offsets[topic + 1]]


class Gossipsub:
    """The three steps of a heartbeat over rows (dicts), for `overlay.gossip.cycles.CycleEngine`."""

    state_columns = STATE_COLUMNS
    message_columns = MESSAGE_COLUMNS
    measure_columns = MEASURE_COLUMNS

    def __init__(self, params: GossipsubParams, offsets: np.ndarray, topics: np.ndarray, presence=None) -> None:
        """`presence` (`overlay.rappel.presence.Presence`, heartbeats as its rounds): who is up
        when; None: everyone, always."""
        params.check()
        self.params = params
        self.members = Members(offsets, topics)
        self.presence = presence
        self._outbound: dict[tuple[int, int], bool] = {}  # `outbound` per (node, peer), drawn once
        self._topic_sizes = np.diff(self.members.topic_offsets).tolist()  # subscribers per topic

    def up(self, node: int, heartbeat: int) -> bool:
        return self.presence is None or self.presence.up(node, heartbeat)

    def start(self, node: int) -> dict:
        return _row(node, {}, {})

    def _out(self, node: int, peer: int) -> bool:
        found = self._outbound.get((node, peer))
        if found is None:
            if len(self._outbound) >= OUTBOUND_CACHE:  # a bound on the worker's memory
                self._outbound.clear()
            found = self._outbound[node, peer] = outbound(self.params.seed, node, peer)
        return found

    def _outbound_short(self, node: int, peers: Iterable[int]) -> int:
        """How many outbound peers `peers` lacks to reach D_out (0 when it has them)."""
        short = self.params.d_out
        for q in peers:
            if short <= 0:
                break
            short -= self._out(node, q)
        return max(short, 0)

    def _smallest(self, candidates: Iterable[int], k: int, purpose: int, h: int, node: int, topic: int) -> list[int]:
        seed = self.params.seed
        ranked = sorted(candidates, key=lambda q: (draw_int(seed, purpose, h, node, topic, q), q))
        return ranked[: max(0, k)]

    def _maintain(self, node: int, topic: int, h: int, mesh: set, backoff: dict) -> Iterator[tuple[int, int]]:
        """One topic's mesh maintenance: (kind, peer) of each GRAFT and PRUNE to send."""
        p = self.params
        for q in [q for q, until in backoff.items() if h >= until]:
            del backoff[q]
        for q in [q for q in mesh if not self.up(q, h)]:  # its connection is gone: out, without backoff
            mesh.discard(q)
        if len(mesh) < p.d_low:
            eligible = (
                {q for q in self.members.of_topic(topic).tolist() if self.up(q, h)} - mesh - {node} - set(backoff)
            )
            for q in self._smallest(eligible, p.d - len(mesh), GOSSIPSUB_GRAFT, h, node, topic):
                mesh.add(q)
                yield GRAFT, q
        if len(mesh) > p.d_high:
            ranked = self._smallest(mesh, len(mesh), GOSSIPSUB_KEEP, h, node, topic)
            keep, rest = ranked[: p.d], ranked[p.d :]
            short = self._outbound_short(node, keep)
            if short > 0:
                extra = [q for q in rest if self._out(node, q)][:short]
                dropped = [q for q in reversed(keep) if not self._out(node, q)][: len(extra)]
                keep = [q for q in keep if q not in dropped] + extra
            for q in sorted(mesh - set(keep)):
                mesh.discard(q)
                backoff[q] = h + p.prune_backoff
                yield PRUNE, q
        if len(mesh) >= p.d_low:
            short = self._outbound_short(node, mesh)
            if short > 0:
                members = set(self.members.of_topic(topic).tolist())
                eligible = {q for q in members - mesh - {node} - set(backoff) if self._out(node, q) and self.up(q, h)}
                for q in self._smallest(eligible, short, GOSSIPSUB_OUTBOUND, h, node, topic):
                    mesh.add(q)
                    yield GRAFT, q

    # -- step 1 ---------------------------------------------------------------------------------
    def act(self, rows: Iterable[dict], cycle: int) -> Iterator[dict]:
        for row in rows:
            node = row["node_id"]
            if not self.up(node, cycle):  # down: it forgets its meshes (a returning node joins afresh)
                yield {**_row(node, {}, {}, "dst"), "kind": SELF, "src": node, "seq": 0, "grafts": 0, "prunes": 0}
                continue
            meshes, backoffs = _meshes(row), _backoffs(row)
            seq = grafts = prunes = 0
            for topic in self.members.of_node(node).tolist():
                mesh, backoff = meshes.setdefault(topic, set()), backoffs.setdefault(topic, {})
                for kind, q in self._maintain(node, topic, cycle, mesh, backoff):
                    yield {"dst": q, "kind": kind, "src": node, "seq": seq, "topic": topic}
                    seq += 1
                    grafts += kind == GRAFT
                    prunes += kind == PRUNE
            yield {
                **_row(node, meshes, backoffs, "dst"),
                "kind": SELF,
                "src": node,
                "seq": 0,
                "grafts": grafts,
                "prunes": prunes,
            }

    # -- step 2 ---------------------------------------------------------------------------------
    def serve(self, node: int, rows: list[dict], cycle: int) -> Iterator[dict]:
        """`rows`: the node's SELF row first, then the PRUNEs and GRAFTs sent to it, sorted."""
        p = self.params
        own = rows[0]
        assert own["kind"] == SELF and own["dst"] == node
        meshes, backoffs = _meshes(own), _backoffs(own)
        refusals = 0
        for m in rows[1:]:
            topic, q = m["topic"], m["src"]
            mesh, backoff = meshes.setdefault(topic, set()), backoffs.setdefault(topic, {})
            if m["kind"] == PRUNE:
                mesh.discard(q)
                backoff[q] = cycle + p.prune_backoff
            elif m["kind"] == GRAFT and q not in mesh:
                if cycle < backoff.get(q, 0) or (len(mesh) >= p.d_high and not self._out(node, q)):
                    backoff[q] = cycle + p.prune_backoff
                    yield {"dst": q, "kind": REFUSE, "src": node, "seq": refusals, "topic": topic}
                    refusals += 1
                else:
                    mesh.add(q)
        yield {
            **_row(node, meshes, backoffs, "dst"),
            "kind": SELF,
            "src": node,
            "seq": 0,
            "grafts": own["grafts"],
            "prunes": own["prunes"] + refusals,
        }

    # -- step 3 ---------------------------------------------------------------------------------
    def finish(self, node: int, rows: list[dict], cycle: int) -> dict:
        """`rows`: the node's SELF row first, then the refusals of its GRAFTs."""
        own = rows[0]
        assert own["kind"] == SELF and own["dst"] == node
        meshes, backoffs = _meshes(own), _backoffs(own)
        for m in rows[1:]:
            meshes.setdefault(m["topic"], set()).discard(m["src"])
            backoffs.setdefault(m["topic"], {})[m["src"]] = cycle + self.params.prune_backoff
        return {
            **_row(node, meshes, backoffs),
            "grafts": own["grafts"],
            "prunes": own["prunes"],
            "refused": len(rows) - 1,
            **self.mesh_measures(node, meshes, backoffs, cycle),
        }

    def mesh_measures(
        self, node: int, meshes: dict[int, set[int]], backoffs: dict[int, dict[int, int]], heartbeat: int
    ) -> dict:
        """The node's measure columns of its meshes (those of topics with more than D_low
        subscribers; none while it is down)."""
        p = self.params
        sizes = (
            [len(meshes.get(t, ())) for t in self.members.of_node(node).tolist() if self._topic_sizes[t] > p.d_low]
            if self.up(node, heartbeat)
            else []
        )
        return {
            "meshes": len(sizes),
            "mesh_links": sum(sizes),
            "mesh_min": min(sizes, default=-1),
            "mesh_max": max(sizes, default=-1),
            "below_low": sum(size < p.d_low for size in sizes),
            "above_high": sum(size > p.d_high for size in sizes),
            "backoffs": sum(len(held) for held in backoffs.values()),
        }


def _meshes(row: dict) -> dict[int, set[int]]:
    """The row's meshes by topic: one set per run of equal topics (the row keeps them sorted)."""
    topics, peers = row["mesh_topic"], row["mesh_peer"]
    meshes: dict[int, set[int]] = {}
    cuts = [0, *(i for i in range(1, len(topics)) if topics[i] != topics[i - 1]), len(topics)]
    for start, end in zip(cuts, cuts[1:]):
        if start < end:
            meshes.setdefault(topics[start], set()).update(peers[start:end])
    return meshes


def _backoffs(row: dict) -> dict[int, dict[int, int]]:
    backoffs: dict[int, dict[int, int]] = {}
    for topic, peer, until in zip(row["backoff_topic"], row["backoff_peer"], row["backoff_until"]):
        backoffs.setdefault(topic, {})[peer] = until
    return backoffs


def _row(node: int, meshes: dict[int, set[int]], backoffs: dict[int, dict[int, int]], key: str = "node_id") -> dict:
    mesh_topic: list[int] = []
    mesh_peer: list[int] = []
    for t in sorted(meshes):  # (topic, peer) order
        peers = sorted(meshes[t])
        mesh_topic += [t] * len(peers)
        mesh_peer += peers
    held = sorted((t, q, until) for t, peers in backoffs.items() for q, until in peers.items())
    return {
        key: node,
        "mesh_topic": mesh_topic,
        "mesh_peer": mesh_peer,
        "backoff_topic": [t for t, _, _ in held],
        "backoff_peer": [q for _, q, _ in held],
        "backoff_until": [u for _, _, u in held],
    }


def gossipsub_engine(
    spark,
    subscriptions,
    params: GossipsubParams,
    partitions: int,
    lineage: Lineage = LOCAL,
    presence=None,
    regime: str = SPARK,
) -> CycleEngine:
    """The cycle engine running gossipsub's heartbeats on `subscriptions` (the driver copy
    `overlay.design.classes.Subscriptions`: every executor needs the members of any topic);
    `presence`: who is up at each heartbeat (churn, mass failure), None: everyone; `regime`:
    `overlay.gossip.cycles.MEMORY` or `SPARK`."""
    args = (params, subscriptions.offsets, subscriptions.topics, presence)
    return CycleEngine(spark, Gossipsub, args, partitions, lineage, regime)
