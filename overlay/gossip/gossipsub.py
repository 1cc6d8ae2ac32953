"""gossipsub's mesh maintenance in time, topic by topic: every node's heartbeats at its own phase,
GRAFT and PRUNE arriving after their link's latency (our reading of libp2p's spec and of
go-libp2p-pubsub: docs/readings/gossipsub.md; the oracle `tests/gossipsub_oracle.py` replays it
on its own).

Every node knows every other subscriber of its topics and is connected to it; a connection is
outbound at one end, a fair coin per pair (`outbound`). Peer scores are left out: the spec gives
no default weights, so every score is 0 (no negative-score pruning, D_score's "best by score" is a
random choice among equals, opportunistic grafting never finds a peer above the median).

A mesh's rules involve only the subscribers of its topic, and connections, draws and presence
are functions of the seed, so each topic is simulated on its own (`simulate_topic`): the events
of one topic in time order, node v's heartbeat number h at (h - 1) x interval + phase(v), a
message sent at t arriving at t + latency. Events at one instant: PRUNEs, then GRAFTs, then
heartbeats, each by (node, sender). A heartbeat of node v, topic by topic:

1. backoffs swept: on every `backoff_sweep`-th heartbeat of the node, those that ended more than
   `backoff_slack_ms` ago go (a peer still held is not grafted, even after its backoff ended);
2. a mesh below D_low grafts D - |mesh| peers (up, not in it, not held: the smallest draws);
3. a mesh at D_high or above (`prune_at_high`; else above D_high, the spec's text) keeps D of its
   peers (the smallest draws; outbound peers outside them replace its last non-outbound ones until
   it keeps D_out outbound, where it has them) and prunes the rest, backing each off;
4. a mesh of at least D_low with fewer than D_out outbound peers grafts outbound ones.

A GRAFT from q reaching v: q in v's mesh already, nothing; q backed off and the backoff not ended,
or v's mesh at D_high or above and q's connection not outbound at v: a PRUNE back, the backoff
(re)set; else q joins. A PRUNE from q: q leaves v's mesh, backed off. A backoff is never
shortened.

Presence (churn, mass failure: `overlay.rappel.presence.Presence`, heartbeats as its rounds) is
decided at the start of each heartbeat interval: a node going down forgets its meshes and
backoffs and every peer drops it at once, without a backoff (go-libp2p's `RemovePeer`); messages
to or from it in flight are lost; it sends and handles nothing while down, and when it returns
its empty meshes graft at its next heartbeat.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from overlay.draws import (
    GOSSIPSUB_DIRECTION,
    GOSSIPSUB_PHASE,
    draw,
    draw_int,
)
from overlay.errors import InputError
from overlay.gossip import mesh_kernel
from overlay.gossip.connections import TopicLinks

# What each topic's simulation measures per heartbeat, at the end of its interval: GRAFTs and
# PRUNEs sent (refusals included), GRAFTs refused; over the meshes of nodes up in topics with more
# than D_low subscribers: how many, their sizes summed, least and largest (-1: none), how many
# below D_low and above D_high; the backoffs held.
MEASURES = (
    "grafts",
    "prunes",
    "refused",
    "meshes",
    "mesh_links",
    "mesh_min",
    "mesh_max",
    "below_low",
    "above_high",
    "backoffs",
)
(GRAFTS, PRUNES, REFUSED, MESHES, MESH_LINKS, MESH_MIN, MESH_MAX, BELOW_LOW, ABOVE_HIGH, BACKOFFS) = range(
    len(MEASURES)
)
_PRUNE, _GRAFT = 0, 1  # message kinds, in the order one instant's events run (then heartbeats)


@dataclass(frozen=True)
class GossipsubParams:
    """The mesh parameters (the spec's names), the rules where go-libp2p and the spec's text
    differ, and what a spread of publications uses. Times in ms."""

    d: int = 6
    d_low: int = 5
    d_high: int = 12
    d_score: int = 4
    d_out: int = 2
    prune_backoff_ms: int = 60_000
    prune_at_high: bool = True  # go-libp2p prunes a mesh of D_high peers; the text, one above
    backoff_sweep: int = 15  # heartbeats between sweeps of ended backoffs (go-libp2p; the text: 1)
    backoff_slack_ms: int = 2_000  # how long past its end a backoff is still held (go-libp2p; the text: 0)
    heartbeat_ms: int = 1000
    peers: int = 0  # connections per node, peers as deployed (`overlay.gossip.connections`); 0: every subscriber
    seed: int = 1
    model_seed: int = 1  # the latency model's (`overlay.rappel.coordinates`): control messages' delays
    # What the spread of publications uses (`overlay.gossip.spread`): gossip's D_lazy and factor,
    # the history windows it gossips about, and whether a publisher sends to every subscriber.
    d_lazy: int = 6
    gossip_factor: float = 0.25
    mcache_gossip: int = 3
    flood_publish: bool = False  # off in go-libp2p (`WithFloodPublish`) and optional in the spec
    idontwant_bytes: int = 1024  # v1.2: IDONTWANT for messages this large or larger (0: v1.1, never)

    def check(self) -> None:
        if not 1 <= self.d_low <= self.d <= self.d_high:
            raise InputError(f"gossipsub needs 1 <= D_low <= D <= D_high, got {self.d_low}, {self.d}, {self.d_high}")
        if not 0 <= self.d_out < self.d_low or 2 * self.d_out > self.d:
            raise InputError(f"gossipsub needs 0 <= D_out < D_low and D_out <= D/2, got D_out {self.d_out}")
        if not 0 <= self.d_score <= self.d:
            raise InputError(f"gossipsub needs 0 <= D_score <= D, got {self.d_score}")
        if self.prune_backoff_ms < 1 or self.backoff_sweep < 1 or self.backoff_slack_ms < 0:
            raise InputError(
                "the PRUNE backoff must be at least 1 ms, swept every heartbeat or more rarely, with a slack of 0 or more"
            )
        if self.peers < 0:
            raise InputError(f"--peers must be 0 (every subscriber of a node's topics) or more, got {self.peers}")
        if self.idontwant_bytes < 0:
            raise InputError(f"the IDONTWANT threshold must be 0 (none) or more bytes, got {self.idontwant_bytes}")
        if self.heartbeat_ms < 1 or self.d_lazy < 0 or not 0 <= self.gossip_factor <= 1 or self.mcache_gossip < 1:
            raise InputError(
                "gossipsub needs a heartbeat of 1 ms or more, D_lazy >= 0, a gossip factor in [0, 1] "
                "and at least one gossip window"
            )

    @classmethod
    def stored(cls, values: dict) -> GossipsubParams:
        """The parameters a run stored (`overlay_runs.params`), its fields only."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})

    def as_dict(self) -> dict:
        return asdict(self)


GO_LIBP2P = "go-libp2p"
PROFILES = {
    # go-libp2p-pubsub v0.19.0's defaults (gossipsub.go, `DefaultGossipSubParams`): D_low 5, the prune
    # at D_high, backoffs swept every 15 heartbeats with 2 s of slack, IDONTWANT from 1 KiB.
    GO_LIBP2P: GossipsubParams(),
    # The spec's text (v1.0's D, D_low, D_high; v1.1's D_score, D_out, backoff; v1.2's IDONTWANT leaves
    # its use to implementations: none here).
    "spec": GossipsubParams(d_low=4, prune_at_high=False, backoff_sweep=1, backoff_slack_ms=0, idontwant_bytes=0),
    # Ethereum's consensus layer: D 8, D_low 6, D_high 12, a 0.7 s heartbeat, go-libp2p's rules.
    "eth2": GossipsubParams(d=8, d_low=6, d_high=12, heartbeat_ms=700),
}
DEFAULT_PROFILE = GO_LIBP2P


def profile(name: str, seed: int = 1, model_seed: int = 1, peers: int = 0) -> GossipsubParams:
    if name not in PROFILES:
        raise InputError(f"--profile must be one of {', '.join(PROFILES)}, got '{name}'")
    return replace(PROFILES[name], seed=seed, model_seed=model_seed, peers=peers)


def outbound(seed: int, node: int, peer: int) -> bool:
    """Whether `node` opened its connection to `peer`: exactly one end of each pair, a fair coin."""
    low, high = min(node, peer), max(node, peer)
    opened_by_low = draw_int(seed, GOSSIPSUB_DIRECTION, low, high) & 1 == 0
    return opened_by_low == (node == low)


def outbound_row(seed: int, node: int, peers: np.ndarray) -> np.ndarray:
    """`outbound(seed, node, q)` for every q of `peers` at once (bool)."""
    peers = np.asarray(peers, dtype=np.int64)
    low, high = np.minimum(node, peers), np.maximum(node, peers)
    opened_by_low = (draw(seed, GOSSIPSUB_DIRECTION, low, high) & np.uint64(1)) == 0
    return opened_by_low == (low == node)


def phases_us(seed: int, nodes: np.ndarray, heartbeat_us: int) -> np.ndarray:
    """When in its heartbeat interval each node's heartbeats fall (us): the spread's timers too."""
    return (draw(seed, GOSSIPSUB_PHASE, np.asarray(nodes, dtype=np.int64)) % np.uint64(heartbeat_us)).astype(np.int64)


@dataclass
class TopicRun:
    """One topic's simulation: `measures` int64 [heartbeats, len(MEASURES)]; the final meshes, one
    row per direction as each node holds them (`mesh_node` holds `mesh_peer`)."""

    measures: np.ndarray
    mesh_node: np.ndarray
    mesh_peer: np.ndarray


def simulate_topic(
    topic: int,
    members: np.ndarray,
    positions: np.ndarray,
    params: GossipsubParams,
    heartbeats: int,
    presence=None,
    links: TopicLinks | None = None,
) -> TopicRun:
    """`heartbeats` heartbeat intervals of topic `topic`'s meshes among `members` (sorted node
    ids, `positions` their latency-model positions in ms); `presence`: who is up at each
    heartbeat, None: everyone; `links`: the members' connections among themselves
    (`overlay.gossip.connections`), None: every pair, its direction a coin."""
    params.check()
    members = np.asarray(members, dtype=np.int64)
    n = len(members)
    beat_us = 1000 * params.heartbeat_ms
    phase = phases_us(params.seed, members, beat_us)
    by_phase = np.lexsort((np.arange(n), phase))
    high = params.d_high if params.prune_at_high else params.d_high + 1  # a mesh this large prunes
    settings = np.array(
        [params.seed, params.d, params.d_low, params.d_high, params.d_out, high, beat_us,
         1000 * params.prune_backoff_ms, 1000 * params.backoff_slack_ms, params.backoff_sweep],
        dtype=np.int64,
    )  # fmt: skip
    if presence is None:
        up = np.ones((0, 0), dtype=np.bool_)
    else:
        up = np.array([[presence.up(node, h) for node in members.tolist()] for h in range(1, heartbeats + 1)], bool)
    if links is None:
        links = TopicLinks(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    positions = np.asarray(positions, dtype=np.float64).reshape(n, 2)
    measures, nodes, peers = mesh_kernel.simulate(
        topic, members, np.ascontiguousarray(positions[:, 0]), np.ascontiguousarray(positions[:, 1]), phase,
        by_phase, settings, heartbeats, up, presence is not None, links.offsets, links.targets, links.dialled,
        len(links.offsets) == n + 1,
    )  # fmt: skip
    return TopicRun(measures, members[nodes], members[peers])
