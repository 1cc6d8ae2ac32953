"""An independent whole-network replay of gossipsub's mesh maintenance in time (heartbeats at each
node's phase, GRAFT / PRUNE arriving after their latency, PRUNE backoff, outbound quotas),
written from the lab's reading of the spec and of go-libp2p-pubsub (docs/readings/gossipsub.md),
sharing no code with the simulator: its own splitmix64 draws, dicts of sets for the meshes, one
event queue for every node and topic at once (the simulator runs topic by topic).

The reading, in short (the docs say why):

* every node knows every other subscriber of its topics and is connected to it; a connection is
  outbound at exactly one end, by a fair coin per pair; peer scores are left out (every score 0);
* node p's heartbeat number h falls at (h - 1) * interval + phase(p); a message sent at t arrives
  at t + latency(p, q); one instant's events run PRUNE arrivals, GRAFT arrivals, heartbeats, each
  by (node, sender, topic);
* heartbeat of p, topic by topic: every `backoff_sweep`-th heartbeat, backoffs that ended more than
  `slack` ago go; a mesh below D_low grafts D - |mesh| peers (up, not in it, not held), the
  smallest draws; a mesh of `high` peers or more (D_high for go-libp2p, D_high + 1 for the spec's
  text) keeps D, the smallest draws, with at least D_out outbound peers where it has them (outbound
  peers outside the kept ones replace its last non-outbound ones), and prunes the others, backing
  them off; a mesh of at least D_low with fewer than D_out outbound peers grafts outbound ones;
* GRAFT from q at p: q in the mesh, nothing; a backoff of q not ended, or p's mesh at D_high or more
  and q not outbound at p: PRUNE back, backoff (re)set; else q joins. PRUNE from q: q leaves,
  backed off. Backoffs are never shortened;
* presence at the start of each interval: a node going down forgets its meshes and backoffs, every
  peer drops it without a backoff, messages in flight to or from it are lost;
* measures at the end of interval h: GRAFTs, PRUNEs (refusals too) and refusals sent in it; the
  meshes of up nodes in topics of more than D_low subscribers; the backoffs held.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

M64 = (1 << 64) - 1
DIRECTION, GRAFT_PICK, KEEP, OUTBOUND_PICK = 25, 26, 27, 28


def mix(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rnd(seed: int, purpose: int, *key: int) -> int:
    x = mix(mix(seed & M64) ^ purpose)
    for k in key:
        x = mix(x ^ (k & M64))
    return x


@dataclass(frozen=True)
class Params:
    d: int = 6
    d_low: int = 5
    d_high: int = 12
    d_out: int = 2
    prune_backoff_us: int = 60_000_000
    high: int = 12  # a mesh of this many peers prunes (go-libp2p: D_high; the spec's text: D_high + 1)
    sweep: int = 15  # heartbeats between sweeps of ended backoffs
    slack_us: int = 2_000_000
    heartbeat_us: int = 1_000_000


DEFAULTS = Params()
SPEC = Params(d_low=4, high=13, sweep=1, slack_us=0)
PHASE, IHAVE_PICK, DIAL_ORDER, DIAL = 29, 30, 31, 32
PRUNE, GRAFT, BEAT = 0, 1, 2


def outbound(seed: int, node: int, peer: int) -> bool:
    """Whether `node` opened the connection to `peer`: one end of each pair, a fair coin."""
    low, high = min(node, peer), max(node, peer)
    opened_by_low = rnd(seed, DIRECTION, low, high) & 1 == 0
    return opened_by_low == (node == low)


def deployed_dials(subscriptions, peers: int, seed: int) -> list[tuple[int, int]]:
    """Peers as deployed: nodes come up by draw(DIAL_ORDER, v); each dials the nodes sharing a topic
    with it by draw(DIAL, v, q), skipping those connected to it or holding `peers` connections,
    until it dialled ceil(peers / 2), holds `peers` or tried them all. (dialer, listener) pairs."""
    topics: dict[int, set[int]] = {}
    members: dict[int, set[int]] = {}
    for node, topic in subscriptions:
        topics.setdefault(node, set()).add(topic)
        members.setdefault(topic, set()).add(node)
    links: dict[int, set[int]] = {v: set() for v in topics}
    dials = []
    for v in sorted(topics, key=lambda v: (rnd(seed, DIAL_ORDER, v), v)):
        candidates = set().union(*(members[t] for t in topics[v])) - {v}
        made = 0
        for q in sorted(candidates, key=lambda q: (rnd(seed, DIAL, v, q), q)):
            if made >= -(-peers // 2) or len(links[v]) >= peers:
                break
            if q in links[v] or len(links[q]) >= peers:
                continue
            links[v].add(q)
            links[q].add(v)
            dials.append((v, q))
            made += 1
    return dials


def flat_latency(us: int = 1000):
    return lambda _a, _b: us


def plane_latency(positions: dict[int, tuple[float, float]]):
    """Latency in whole us between two nodes at `positions` (ms)."""
    return lambda a, b: round(1000.0 * math.hypot(positions[a][0] - positions[b][0], positions[a][1] - positions[b][1]))


class GossipsubOracle:
    def __init__(self, subscriptions, params: Params = DEFAULTS, seed: int = 1, latency=None, up=None, phases=None, dials=None):  # fmt: skip
        """`latency(a, b)`: us; `up(node, heartbeat)`: who is up (churn, failures), None: everyone;
        `phases`: node -> its heartbeats' phase (us), None: the seeded draws; `dials`: the
        connections as (dialer, listener) pairs, None: every pair sharing a topic, a coin's way."""
        self.params, self.seed, self.phases = params, seed, phases
        self.dials = None if dials is None else set(dials)
        self.linked: dict[int, set[int]] = {}
        for a, b in self.dials or ():
            self.linked.setdefault(a, set()).add(b)
            self.linked.setdefault(b, set()).add(a)
        self.latency = latency or flat_latency()
        self.up_at = up or (lambda _node, _heartbeat: True)
        self.members: dict[int, set[int]] = {}
        self.topics: dict[int, set[int]] = {}
        for node, topic in subscriptions:
            self.members.setdefault(topic, set()).add(node)
            self.topics.setdefault(node, set()).add(topic)
        self.mesh = {(p, t): set() for p, ts in self.topics.items() for t in ts}
        self.backoff: dict[tuple[int, int], dict[int, int]] = {key: {} for key in self.mesh}  # peer -> end (us)
        self.ticks = dict.fromkeys(self.topics, 0)
        self.up = dict.fromkeys(self.topics, True)
        self.epoch = dict.fromkeys(self.topics, 0)
        self.queue: list[tuple] = []
        self.heartbeats = 0
        self.grafts = self.prunes = self.refused = 0  # sent in the last interval

    def out(self, node: int, peer: int) -> bool:
        if self.dials is not None:
            return (node, peer) in self.dials
        return outbound(self.seed, node, peer)

    def peers(self, node: int, topic: int) -> set[int]:
        """The subscribers of `topic` that `node` is connected to."""
        if self.dials is None:
            return self.members[topic] - {node}
        return self.members[topic] & self.linked.get(node, set())

    def phase(self, node: int) -> int:
        if self.phases is not None:
            return self.phases[node]
        return rnd(self.seed, PHASE, node) % self.params.heartbeat_us

    def _smallest(self, candidates, k: int, purpose: int, h: int, node: int, topic: int) -> list[int]:
        ranked = sorted(candidates, key=lambda q: (rnd(self.seed, purpose, h, node, topic, q), q))
        return ranked[: max(0, k)]

    def _back_off(self, p: int, t: int, q: int, now: int) -> None:
        held = self.backoff[(p, t)]
        held[q] = max(held.get(q, -1), now + self.params.prune_backoff_us)

    def _send(self, kind: int, p: int, q: int, t: int, now: int) -> None:
        if kind == GRAFT:
            self.grafts += 1
        else:
            self.prunes += 1
        at = now + self.latency(p, q)
        heapq.heappush(self.queue, (at, kind, q, p, t, self.epoch[q], self.epoch[p]))

    def _beat(self, p: int, h: int, now: int) -> None:
        P = self.params
        self.ticks[p] += 1
        for t in sorted(self.topics[p]):
            mesh, held = self.mesh[(p, t)], self.backoff[(p, t)]
            if self.ticks[p] % P.sweep == 0:
                for q in [q for q, end in held.items() if end + P.slack_us < now]:
                    del held[q]
            if len(mesh) < P.d_low:
                eligible = {q for q in self.peers(p, t) if self.up[q]} - mesh - set(held)
                for q in self._smallest(eligible, P.d - len(mesh), GRAFT_PICK, h, p, t):
                    mesh.add(q)
                    self._send(GRAFT, p, q, t, now)
            if len(mesh) >= P.high:
                ranked = self._smallest(mesh, len(mesh), KEEP, h, p, t)
                keep, rest = ranked[: P.d], ranked[P.d :]
                short = P.d_out - sum(self.out(p, q) for q in keep)
                if short > 0:
                    extra = [q for q in rest if self.out(p, q)][:short]
                    dropped = [q for q in reversed(keep) if not self.out(p, q)][: len(extra)]
                    keep = [q for q in keep if q not in dropped] + extra
                for q in sorted(mesh - set(keep)):
                    mesh.discard(q)
                    self._back_off(p, t, q, now)
                    self._send(PRUNE, p, q, t, now)
            if len(mesh) >= P.d_low:
                short = P.d_out - sum(self.out(p, q) for q in mesh)
                if short > 0:
                    eligible = {q for q in self.members[t] - mesh - {p} - set(held) if self.out(p, q) and self.up[q]}
                    for q in self._smallest(eligible, short, OUTBOUND_PICK, h, p, t):
                        mesh.add(q)
                        self._send(GRAFT, p, q, t, now)

    def _receive(self, now: int, kind: int, p: int, q: int, t: int) -> None:
        mesh = self.mesh[(p, t)]
        if kind == PRUNE:
            mesh.discard(q)
            self._back_off(p, t, q, now)
            return
        if q in mesh:
            return
        end = self.backoff[(p, t)].get(q)
        if (end is not None and now < end) or (len(mesh) >= self.params.d_high and not self.out(p, q)):
            self._back_off(p, t, q, now)
            self.refused += 1
            self._send(PRUNE, p, q, t, now)
        else:
            mesh.add(q)

    def _presence(self, h: int) -> None:
        for p in sorted(self.topics):
            now_up = self.up_at(p, h)
            if now_up == self.up[p]:
                continue
            self.up[p] = now_up
            self.epoch[p] += 1
            self.ticks[p] = 0
            if not now_up:
                for t in self.topics[p]:
                    for q in self.members[t]:
                        self.mesh[(q, t)].discard(p)
                    self.mesh[(p, t)].clear()
                    self.backoff[(p, t)].clear()

    def heartbeat(self) -> None:
        """One more heartbeat interval, every node's heartbeat in it and every message arriving in it."""
        self.heartbeats += 1
        h, beat = self.heartbeats, self.params.heartbeat_us
        self.grafts = self.prunes = self.refused = 0
        self._presence(h)
        for p in self.topics:
            heapq.heappush(self.queue, ((h - 1) * beat + self.phase(p), BEAT, p, -1, -1, self.epoch[p], 0))
        while self.queue and self.queue[0][0] < h * beat:
            now, kind, p, q, t, p_epoch, q_epoch = heapq.heappop(self.queue)
            if kind == BEAT:
                if self.up[p] and self.epoch[p] == p_epoch:
                    self._beat(p, h, now)
            elif self.epoch[p] == p_epoch and self.epoch[q] == q_epoch:
                self._receive(now, kind, p, q, t)

    def links(self) -> set[tuple[int, int]]:
        """The union of the meshes, as undirected links (u < v)."""
        return {(min(p, q), max(p, q)) for (p, _), mesh in self.mesh.items() for q in mesh}

    def rows(self) -> set[tuple[int, int, int]]:
        """(topic, node, peer): one row per direction as each node holds it (`gossipsub_mesh`)."""
        return {(t, p, q) for (p, t), mesh in self.mesh.items() for q in mesh}

    def measures(self) -> dict:
        """The interval's measures, as `gossipsub_heartbeats` holds them."""
        P = self.params
        sizes = [len(mesh) for (p, t), mesh in self.mesh.items() if self.up[p] and len(self.members[t]) > P.d_low]
        return {
            "grafts": self.grafts,
            "prunes": self.prunes,
            "refused": self.refused,
            "meshes": len(sizes),
            "mesh_links": sum(sizes),
            "mesh_min": min(sizes, default=-1),
            "mesh_max": max(sizes, default=-1),
            "below_low": sum(s < P.d_low for s in sizes),
            "above_high": sum(s > P.d_high for s in sizes),
            "backoffs": sum(len(held) for held in self.backoff.values()),
        }


# -- Dissemination: eager push along the meshes, lazy IHAVE / IWANT at the heartbeats -----------
@dataclass(frozen=True)
class Spread:
    heartbeat_us: int = 1_000_000
    d_lazy: int = 6
    gossip_factor: float = 0.25
    mcache_gossip: int = 3
    gossip: bool = True  # lazy gossip on (gossipsub) or off (eager push alone: a designed overlay's flood)
    flood_publish: bool = False
    message_bytes: int = 256
    idontwant_bytes: int = 0  # v1.2: a first copy of a message this large or larger is announced (0: never)
    upload_mbps: float = 0.0  # a node's copies leave one after another, each 8 * bytes / mbps us (0: at once)


SPREAD = Spread()


def spread_oracle(members, mesh, latency_us, alive, publisher, pub, seed, spread: Spread = SPREAD, linked=None):
    """One publication among `members` of its topic: `mesh[v]` the peers v pushes to, latency_us(a, b)
    an int, `alive` the nodes up. Returns (first, counts): first[v] = (time_us, hops) of v's first
    copy; counts: messages (full copies sent), duplicates (copies received again), ihave, iwant,
    idontwant, bytes (message_bytes a copy, 46 an IHAVE, IWANT or IDONTWANT).

    Events in time order, ties by (time, kind, node, other): kind -1 an IDONTWANT arrives at node
    from other; 0 a copy arrives at node from other; 1 node's heartbeat number other; 2 an IHAVE
    arrives at node from other; 3 an IWANT arrives at node from other. A node's first copy of a
    large enough message sends IDONTWANT to its mesh peers but the sender, before it forwards; a
    node told IDONTWANT by a peer sends that peer no copy. `linked[v]`: the members v is connected
    to (whom it gossips and flood-publishes to), None: all of them."""
    import heapq

    first = {publisher: (0, 0)}
    counts = {"messages": 0, "duplicates": 0, "ihave": 0, "iwant": 0, "idontwant": 0}
    events = []
    told = set()  # (v, w): w told v it does not want the message
    free = {}  # when a node's uplink is free again
    busy = round(8 * spread.message_bytes / spread.upload_mbps) if spread.upload_mbps else 0

    def copy(v, w, at, hops):
        if (v, w) in told:
            return
        counts["messages"] += 1
        free[v] = max(at, free.get(v, 0)) + busy
        heapq.heappush(events, (free[v] + latency_us(v, w), 0, w, v, hops))

    def received(v, at, hops, came_from, targets):
        large = 0 < spread.idontwant_bytes <= spread.message_bytes
        if large:  # the publisher as well, at once (came_from None: every mesh peer)
            for w in sorted(mesh.get(v, ())):
                if w != came_from and w in alive:
                    counts["idontwant"] += 1
                    heapq.heappush(events, (at + latency_us(v, w), -1, w, v, 0))
        for w in sorted(targets):
            if w != came_from and w != publisher and w in alive:
                copy(v, w, at, hops + 1)
        if spread.gossip:  # in the message cache: gossiped at the next mcache_gossip heartbeats
            phase = rnd(seed, PHASE, v) % spread.heartbeat_us
            k = (at - phase) // spread.heartbeat_us + 1
            for j in range(k, k + spread.mcache_gossip):
                heapq.heappush(events, (phase + j * spread.heartbeat_us, 1, v, j, 0))

    def reach(v):
        return set(members) if linked is None else linked.get(v, set())

    everyone = {w for w in reach(publisher) if w != publisher}
    received(publisher, 0, 0, None, everyone if spread.flood_publish else mesh.get(publisher, ()))
    while events:
        time, kind, node, other, hops = heapq.heappop(events)
        if kind == -1:
            told.add((node, other))
        elif kind == 0:
            if node in first:
                counts["duplicates"] += 1
            else:
                first[node] = (time, hops)
                received(node, time, hops, other, mesh.get(node, ()))
        elif kind == 1:
            eligible = sorted(w for w in reach(node) if w != node and w in alive and w not in mesh.get(node, ()))
            want = min(len(eligible), max(spread.d_lazy, int(spread.gossip_factor * len(eligible))))
            for w in sorted(eligible, key=lambda w: (rnd(seed, IHAVE_PICK, pub, node, other, w), w))[:want]:
                counts["ihave"] += 1
                heapq.heappush(events, (time + latency_us(node, w), 2, w, node, 0))
        elif kind == 2:
            if node not in first:
                counts["iwant"] += 1
                heapq.heappush(events, (time + latency_us(node, other), 3, other, node, 0))
        else:
            copy(node, other, time, first[node][1] + 1)
    control = counts["ihave"] + counts["iwant"] + counts["idontwant"]
    counts["bytes"] = counts["messages"] * spread.message_bytes + 46 * control
    return first, counts
