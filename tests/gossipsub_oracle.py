"""An independent whole-network replay of gossipsub v1.1's mesh maintenance (the heartbeat's
GRAFT / PRUNE with PRUNE backoff and outbound quotas), written from the lab's reading of the
spec (docs/readings/gossipsub.md), sharing no code with the simulator: its own splitmix64 draws,
dicts of sets for the meshes, one synchronous heartbeat in three phases.

The reading, in short (the docs say why):

* every node knows every other subscriber of its topics (complete discovery in a broker cluster)
  and is connected to it; a connection is outbound at exactly one end, by a fair coin per pair;
* peer scores are left out (the spec gives no default weights): every score is 0, so negative-score
  pruning never fires, "the best D_score by score" is a random choice among equals and
  opportunistic grafting (peers scoring above the median) never grafts;
* heartbeat h: (1) every node, topic by topic: expired backoffs dropped; a mesh below D_low grafts
  D - |mesh| peers (not in the mesh, not backed off), the smallest draws; a mesh above D_high keeps
  D, the smallest draws, with at least D_out outbound peers where it has them (outbound peers
  outside the kept ones replace its last non-outbound ones), and prunes the others, backing them
  off; a mesh of at least D_low with fewer than D_out outbound peers grafts outbound ones;
  (2) every node handles the PRUNEs sent to it (the pruner leaves its mesh, backed off), then the
  GRAFTs in sender order: a sender already in the mesh is a no-op; a backed-off sender, or any
  sender that is not outbound while the mesh holds D_high or more, gets a PRUNE back and a
  (refreshed) backoff; any other joins the mesh; (3) every grafter handles the PRUNEs sent back:
  the peer leaves its mesh, backed off.
* a backoff set at heartbeat h lasts while the heartbeat is below h + prune_backoff.
"""

from __future__ import annotations

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
    d_low: int = 4
    d_high: int = 12
    d_out: int = 2
    prune_backoff: int = 60  # heartbeats (1 minute at the default 1 s heartbeat)


DEFAULTS = Params()


def outbound(seed: int, node: int, peer: int) -> bool:
    """Whether `node` opened the connection to `peer`: one end of each pair, a fair coin."""
    low, high = min(node, peer), max(node, peer)
    opened_by_low = rnd(seed, DIRECTION, low, high) & 1 == 0
    return opened_by_low == (node == low)


class GossipsubOracle:
    def __init__(self, subscriptions, params: Params = DEFAULTS, seed: int = 1, up=None):
        """`up(node, heartbeat)`: who is up (churn, failures); None: everyone, always."""
        self.params, self.seed = params, seed
        self.up = up or (lambda _node, _heartbeat: True)
        self.members: dict[int, set[int]] = {}
        self.topics: dict[int, set[int]] = {}
        for node, topic in subscriptions:
            self.members.setdefault(topic, set()).add(node)
            self.topics.setdefault(node, set()).add(topic)
        self.mesh = {(p, t): set() for p, ts in self.topics.items() for t in ts}
        self.backoff: dict[tuple[int, int], dict[int, int]] = {key: {} for key in self.mesh}  # peer -> until
        self.heartbeats = 0
        self.grafts = self.prunes = 0  # the last heartbeat's GRAFTs sent and PRUNEs sent (refusals too)

    def out(self, node: int, peer: int) -> bool:
        return outbound(self.seed, node, peer)

    def _smallest(self, candidates, k: int, purpose: int, h: int, node: int, topic: int) -> list[int]:
        ranked = sorted(candidates, key=lambda q: (rnd(self.seed, purpose, h, node, topic, q), q))
        return ranked[: max(0, k)]

    def _back_off(self, node: int, topic: int, peer: int, h: int) -> None:
        self.backoff[(node, topic)][peer] = h + self.params.prune_backoff

    def _maintain(self, p: int, t: int, h: int, grafts: list, prunes: list) -> None:
        P, mesh = self.params, self.mesh[(p, t)]
        backoff = self.backoff[(p, t)]
        for q in [q for q, until in backoff.items() if h >= until]:
            del backoff[q]
        mesh -= {q for q in mesh if not self.up(q, h)}  # gone peers leave at once, without backoff
        if len(mesh) < P.d_low:
            eligible = {q for q in self.members[t] if self.up(q, h)} - mesh - {p} - set(backoff)
            for q in self._smallest(eligible, P.d - len(mesh), GRAFT_PICK, h, p, t):
                mesh.add(q)
                grafts.append((p, q, t))
        if len(mesh) > P.d_high:
            ranked = self._smallest(mesh, len(mesh), KEEP, h, p, t)
            keep, rest = ranked[: P.d], ranked[P.d :]
            short = P.d_out - sum(self.out(p, q) for q in keep)
            if short > 0:
                extra = [q for q in rest if self.out(p, q)][:short]
                dropped = [q for q in reversed(keep) if not self.out(p, q)][: len(extra)]
                keep = [q for q in keep if q not in dropped] + extra
            for q in sorted(mesh - set(keep)):
                mesh.discard(q)
                self._back_off(p, t, q, h)
                prunes.append((p, q, t))
        if len(mesh) >= P.d_low:
            short = P.d_out - sum(self.out(p, q) for q in mesh)
            if short > 0:
                eligible = {q for q in self.members[t] - mesh - {p} - set(backoff) if self.out(p, q) and self.up(q, h)}
                for q in self._smallest(eligible, short, OUTBOUND_PICK, h, p, t):
                    mesh.add(q)
                    grafts.append((p, q, t))

    def heartbeat(self) -> None:
        self.heartbeats += 1
        h, P = self.heartbeats, self.params
        grafts: list[tuple[int, int, int]] = []  # (from, to, topic)
        prunes: list[tuple[int, int, int]] = []
        for p in sorted(self.topics):
            for t in sorted(self.topics[p]):
                if self.up(p, h):
                    self._maintain(p, t, h, grafts, prunes)
                else:  # down: it forgets everything
                    self.mesh[(p, t)].clear()
                    self.backoff[(p, t)].clear()
        for src, dst, t in sorted(prunes, key=lambda m: (m[1], m[2], m[0])):
            self.mesh[(dst, t)].discard(src)
            self._back_off(dst, t, src, h)
        refused = []
        for src, dst, t in sorted(grafts, key=lambda m: (m[1], m[2], m[0])):
            mesh, backoff = self.mesh[(dst, t)], self.backoff[(dst, t)]
            if src in mesh:
                continue
            if h < backoff.get(src, 0) or (len(mesh) >= P.d_high and not self.out(dst, src)):
                self._back_off(dst, t, src, h)
                refused.append((dst, src, t))
                continue
            mesh.add(src)
        for src, dst, t in refused:
            self.mesh[(dst, t)].discard(src)
            self._back_off(dst, t, src, h)
        self.grafts, self.prunes = len(grafts), len(prunes) + len(refused)

    def links(self) -> set[tuple[int, int]]:
        """The union of the meshes, as undirected links (u < v)."""
        return {(min(p, q), max(p, q)) for (p, _), mesh in self.mesh.items() for q in mesh}

    def rows(self) -> set[tuple[int, int, int]]:
        """(topic, node, peer): one row per direction, as `gossipsub_mesh` stores them."""
        return {(t, p, q) for (p, t), mesh in self.mesh.items() for q in mesh}


# -- Dissemination: eager push along the meshes, lazy IHAVE / IWANT at the heartbeats -----------
PHASE, IHAVE_PICK = 29, 30


@dataclass(frozen=True)
class Spread:
    heartbeat_us: int = 1_000_000
    d_lazy: int = 6
    gossip_factor: float = 0.25
    mcache_gossip: int = 3
    gossip: bool = True  # lazy gossip on (gossipsub) or off (eager push alone: a designed overlay's flood)
    flood_publish: bool = False


SPREAD = Spread()


def spread_oracle(members, mesh, latency_us, alive, publisher, pub, seed, spread: Spread = SPREAD):
    """One publication among `members` of its topic: `mesh[v]` the peers v pushes to, latency_us(a, b)
    an int, `alive` the nodes up. Returns (first, counts): first[v] = (time_us, hops) of v's first
    copy; counts: messages (full copies sent), duplicates (copies received again), ihave, iwant.

    Events in time order, ties by (time, kind, node, other): kind 0 a copy arrives at node from
    other; 1 node's heartbeat number other; 2 an IHAVE arrives at node from other; 3 an IWANT
    arrives at node from other."""
    import heapq

    first = {publisher: (0, 0)}
    counts = {"messages": 0, "duplicates": 0, "ihave": 0, "iwant": 0}
    events = []

    def copy(v, w, at, hops):
        counts["messages"] += 1
        heapq.heappush(events, (at + latency_us(v, w), 0, w, v, hops))

    def received(v, at, hops, came_from, targets):
        for w in sorted(targets):
            if w != came_from and w != publisher and w in alive:
                copy(v, w, at, hops + 1)
        if spread.gossip:  # in the message cache: gossiped at the next mcache_gossip heartbeats
            phase = rnd(seed, PHASE, v) % spread.heartbeat_us
            k = (at - phase) // spread.heartbeat_us + 1
            for j in range(k, k + spread.mcache_gossip):
                heapq.heappush(events, (phase + j * spread.heartbeat_us, 1, v, j, 0))

    everyone = {w for w in members if w != publisher}
    received(publisher, 0, 0, None, everyone if spread.flood_publish else mesh.get(publisher, ()))
    while events:
        time, kind, node, other, hops = heapq.heappop(events)
        if kind == 0:
            if node in first:
                counts["duplicates"] += 1
            else:
                first[node] = (time, hops)
                received(node, time, hops, other, mesh.get(node, ()))
        elif kind == 1:
            eligible = sorted(w for w in members if w != node and w in alive and w not in mesh.get(node, ()))
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
    return first, counts
