"""Rappel's friendship overlay (§3; our reading: docs/readings/rappel.md#friendship) as one round of 30 s per
cycle of the gossip cycle engine (`overlay.gossip.cycles`). Every choice is a keyed draw, so a seed
gives one run on any layout.

A node's state: its friends F (at most alpha), its fans (at most 2 alpha, each with the round it
last pinged or was accepted), its candidates (`overlay.rappel.candidates`: votes, audited, the
round last heard of) and `met`, the nodes it met on join walks since its last round (the trees
fill it; they are heard of, i.e. voted for, at the start of the next round).

Round r, as every node up sees it (a node down neither sends nor answers; its state waits):

1. **act** (node i): hear of every node in `met`; ping every friend, the ping carrying F(i);
   audit (Alg. 1, `interest.audit` with the set utility of Fig. 3): with room for k more friends,
   the k next candidates (`candidates.next_audit`) are all viable and each gets a friendship
   request (our reading of "if refused and |F| < alpha, audit again" for rounds: the audits a
   refusal would trigger happen in the same round); with F full, one candidate is audited and
   asked when swapping it for one friend raises U(i, F) by more than delta.
2. **serve** (node j): each ping from i (ascending i) refreshes i as a fan (or adds it back, if
   there is room), makes i and F(i) heard of, and is acked with F(j) as the round started.
   Friendship requests are then taken first come, first served in the order of
   draw(RAPPEL_FCFS, r, j, i) (the paper's arrival order, which our rounds do not have): accepted
   while j has fewer than 2 alpha fans; every answer carries F(j).
3. **finish** (node i): each ack makes F(friend) heard of; a friend that did not ack is
   dropped; each answer makes F(c) heard of, and an acceptance adds c, dropping the friend the
   audit chose to replace. After any change of F every candidate is open to audit again (votes 0),
   and no friend stays a candidate. A fan that pinged neither this round nor the last (45 s in
   the paper) is dropped.

Distances come from the node coordinates (ms, `overlay.rappel.coordinates`) in seconds, and
subscriptions from the node's filter (`overlay.rappel.interest`, Bloom or exact); the measure is
the exact share of a node's feeds some friend subscribes to."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from overlay.draws import RAPPEL_FCFS, draw_int
from overlay.gossip.baselines import Knowledge
from overlay.gossip.cycles import CycleEngine
from overlay.rappel.candidates import Candidate, capacity, hear, next_audit, reopen
from overlay.rappel.interest import DELTA, MODES, audit, distance, filter_of
from overlay.rappel.presence import Presence

UTILITIES = ("interest-distance", "interest")

# Message kinds, in the order a node handles them (the engine sorts by dst, kind, src, seq).
SELF, PING, FRIEND_REQUEST, ACK, FRIEND_ANSWER = range(5)
SENT_KINDS = ("pings", "acks", "requests", "answers")  # the order of `sent`
NONE = -1


@dataclass(frozen=True)
class RappelParams:
    """The protocol's settings; the defaults are the paper's (docs/readings/rappel.md#defaults)."""

    seed: int = 1
    alpha: int = 6
    beta: int = 5
    delta: float = DELTA
    mode: str = "bloom"
    utility: str = "interest-distance"

    def check(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.utility not in UTILITIES:
            raise ValueError(f"utility must be one of {', '.join(UTILITIES)}, got {self.utility!r}")
        if self.alpha < 1 or self.beta < 1:
            raise ValueError(f"alpha and beta must be at least 1, got {self.alpha} and {self.beta}")
        if self.delta < 0:
            raise ValueError(f"delta must not be negative, got {self.delta}")


STATE_COLUMNS = (
    ("node_id", "bigint"),
    ("friends", "array<bigint>"),
    ("fans", "array<bigint>"),
    ("fan_seen", "array<int>"),
    ("cand", "array<bigint>"),
    ("cand_votes", "array<int>"),
    ("cand_audited", "array<int>"),
    ("cand_heard", "array<int>"),
    ("met", "array<bigint>"),
)
# What `finish` adds: the node's feeds some friend subscribes to, its feeds, messages sent, and
# whether it was online in the round.
MEASURE_COLUMNS = (("covered", "int"), ("feeds", "int"), ("sent", "array<int>"), ("online", "boolean"))
MESSAGE_COLUMNS = (
    ("dst", "bigint"),
    ("kind", "int"),
    ("src", "bigint"),
    ("seq", "int"),
    ("ids", "array<bigint>"),
    ("accepted", "boolean"),
    *STATE_COLUMNS[1:],
    ("asked", "array<bigint>"),
    ("victims", "array<bigint>"),
    ("sent", "array<int>"),
)


@dataclass
class Friend:
    """One node's friendship state between rounds (the row of `STATE_COLUMNS`)."""

    node: int
    friends: list[int]
    fans: dict[int, int]  # fan -> round last pinged or accepted
    candidates: dict[int, Candidate]
    met: list[int]


def to_row(n: Friend) -> dict:
    cand = sorted(n.candidates)
    fans = sorted(n.fans)
    return {
        "node_id": n.node,
        "friends": sorted(n.friends),
        "fans": fans,
        "fan_seen": [n.fans[f] for f in fans],
        "cand": cand,
        "cand_votes": [n.candidates[q].votes for q in cand],
        "cand_audited": [int(n.candidates[q].audited) for q in cand],
        "cand_heard": [n.candidates[q].heard for q in cand],
        "met": list(n.met),
    }


def from_row(row: dict, node_key: str = "node_id") -> Friend:
    return Friend(
        node=row[node_key],
        friends=list(row["friends"]),
        fans=dict(zip(row["fans"], row["fan_seen"])),
        candidates={
            q: Candidate(v, bool(a), h)
            for q, v, a, h in zip(row["cand"], row["cand_votes"], row["cand_audited"], row["cand_heard"])
        },
        met=list(row["met"]),
    )


class Interests(Knowledge):
    """What a node can look up of any other (the audit's "fetch its Bloom and coordinates"): the
    subscriptions both ways (`Knowledge`: a node's feeds are its topics), the subscription
    filters and the coordinates, from plain arrays."""

    def __init__(self, offsets: np.ndarray, topics: np.ndarray, coordinates: np.ndarray, mode: str) -> None:
        super().__init__(offsets, topics)
        self.coordinates, self.mode = coordinates, mode
        self.network = len(offsets) - 1
        self._filters: dict[int, int] = {}

    feeds = Knowledge.subs

    def filter(self, node: int) -> int:
        found = self._filters.get(node)
        if found is None:
            found = self._filters[node] = filter_of(self.feeds(node), self.mode)
        return found

    def seconds(self, a: int, b: int) -> float:
        return distance(self.coordinates[a], self.coordinates[b])


class Friendship:
    """The three steps of a round over rows (dicts), for `overlay.gossip.cycles.CycleEngine`.
    `presence` (`overlay.rappel.presence.Presence`): who is online when (default: everyone);
    `introductions`: CSR (offsets, ids) of the nodes each node starts having met."""

    state_columns = STATE_COLUMNS
    message_columns = MESSAGE_COLUMNS
    measure_columns = MEASURE_COLUMNS

    def __init__(
        self,
        params: RappelParams,
        offsets: np.ndarray,
        topics: np.ndarray,
        coordinates: np.ndarray,
        introductions: tuple[np.ndarray, np.ndarray] | None = None,
        presence: Presence | None = None,
    ) -> None:
        params.check()
        self.params = params
        self.interests = Interests(offsets, topics, coordinates, params.mode)
        self.introductions = introductions
        self.up = (presence or Presence.always()).up
        self.limit = capacity(params.alpha)

    def start(self, node: int) -> dict:
        met = []
        if self.introductions is not None:
            offsets, ids = self.introductions
            met = ids[offsets[node] : offsets[node + 1]].tolist()
        return to_row(Friend(node, [], {}, {}, met))

    def known(self, me: int, q: int) -> tuple[int, float]:
        """q's filter and its distance from `me` (1 s everywhere for the interest-only utility)."""
        w = self.interests
        return w.filter(q), (w.seconds(me, q) if self.params.utility == "interest-distance" else 1.0)

    def audits(self, n: Friend) -> tuple[list[int], list[int]]:
        """The candidates asked this round and, for each, the friend it replaces (NONE: room)."""
        p, me = self.params, n.node
        room = p.alpha - len(n.friends)
        if room > 0:
            asked = []
            while len(asked) < room and (c := next_audit(n.candidates)) is not None:
                asked.append(c)
            return asked, [NONE] * len(asked)
        c = next_audit(n.candidates)
        if c is None:
            return [], []
        friends = {j: self.known(me, j) for j in n.friends}
        victim = audit(self.interests.filter(me), friends, c, self.known(me, c), p.alpha, p.delta)
        return ([c], [victim]) if victim is not None else ([], [])

    # -- step 1 ---------------------------------------------------------------------------------
    def act(self, rows: Iterable[dict], cycle: int) -> Iterator[dict]:
        for row in rows:
            n = from_row(row)
            me = n.node
            sent = [0, 0, 0, 0]
            asked, victims = [], []
            if self.up(me, cycle):
                hear(n.candidates, n.met, me, n.friends, cycle, self.limit)
                n.met = []
                for j in sorted(n.friends):
                    yield {"dst": j, "kind": PING, "src": me, "seq": 0, "ids": sorted(n.friends)}
                    sent[0] += 1
                asked, victims = self.audits(n)
                for c in asked:
                    yield {"dst": c, "kind": FRIEND_REQUEST, "src": me, "seq": 0}
                    sent[2] += 1
            yield {
                **to_row(n),
                "dst": me,
                "kind": SELF,
                "src": me,
                "seq": 0,
                "asked": asked,
                "victims": victims,
                "sent": sent,
            }

    # -- step 2 ---------------------------------------------------------------------------------
    def serve(self, node: int, rows: list[dict], cycle: int) -> Iterator[dict]:
        """`rows`: the node's SELF row first, then its pings and friendship requests, sorted."""
        own = rows[0]
        assert own["kind"] == SELF and own["dst"] == node
        n = from_row(own, "dst")
        sent = list(own["sent"])
        if self.up(node, cycle):
            fans_cap = 2 * self.params.alpha
            mine = sorted(n.friends)
            requests = []
            for m in rows[1:]:
                i = m["src"]
                if m["kind"] == PING:
                    if i in n.fans or len(n.fans) < fans_cap:
                        n.fans[i] = cycle
                    hear(n.candidates, [i, *m["ids"]], node, n.friends, cycle, self.limit)
                    yield {"dst": i, "kind": ACK, "src": node, "seq": 0, "ids": mine}
                    sent[1] += 1
                elif m["kind"] == FRIEND_REQUEST:
                    requests.append(i)
            for i in sorted(requests, key=lambda i: (draw_int(self.params.seed, RAPPEL_FCFS, cycle, node, i), i)):
                accepted = i in n.fans or len(n.fans) < fans_cap
                if accepted:
                    n.fans[i] = cycle
                yield {"dst": i, "kind": FRIEND_ANSWER, "src": node, "seq": 0, "ids": mine, "accepted": accepted}
                sent[3] += 1
        yield {
            **to_row(n),
            "dst": node,
            "kind": SELF,
            "src": node,
            "seq": 0,
            "asked": own["asked"],
            "victims": own["victims"],
            "sent": sent,
        }

    # -- step 3 ---------------------------------------------------------------------------------
    def finish(self, node: int, rows: list[dict], cycle: int) -> dict:
        """`rows`: the node's SELF row first, then the acks and answers to its messages."""
        own = rows[0]
        assert own["kind"] == SELF and own["dst"] == node
        n = from_row(own, "dst")
        if self.up(node, cycle):
            before = set(n.friends)
            acked = set()
            replaces = dict(zip(own["asked"], own["victims"]))
            for m in rows[1:]:
                if m["kind"] == ACK:
                    acked.add(m["src"])
                    hear(n.candidates, m["ids"], node, n.friends, cycle, self.limit)
            n.friends = [j for j in n.friends if j in acked]
            for m in rows[1:]:
                if m["kind"] == FRIEND_ANSWER:
                    c = m["src"]
                    hear(n.candidates, m["ids"], node, n.friends, cycle, self.limit)
                    if m["accepted"]:
                        victim = replaces[c]
                        if victim in n.friends:
                            n.friends.remove(victim)
                        if c not in n.friends and len(n.friends) < self.params.alpha:
                            n.friends.append(c)
            n.friends.sort()
            if set(n.friends) != before:
                reopen(n.candidates)
            for j in n.friends:
                n.candidates.pop(j, None)
            n.fans = {f: seen for f, seen in n.fans.items() if seen >= cycle - 1}
        feeds = self.interests.feeds(node)
        held = set().union(*(self.interests.feeds(j) for j in n.friends)) if n.friends else set()
        return {
            **to_row(n),
            "covered": len(feeds & held),
            "feeds": len(feeds),
            "sent": list(own["sent"]),
            "online": self.up(node, cycle),
        }


def friendship_engine(
    spark,
    subscriptions,
    coordinates: np.ndarray,
    params: RappelParams,
    partitions: int,
    introductions: tuple[np.ndarray, np.ndarray] | None = None,
    presence: Presence | None = None,
) -> CycleEngine:
    """The cycle engine running the friendship overlay on `subscriptions`
    (`overlay.design.classes.Subscriptions`: every executor looks up any node's filter, as every
    Rappel node can fetch any other's) and `coordinates` (float [nodes, 2], ms)."""
    return CycleEngine(
        spark,
        Friendship,
        (params, subscriptions.offsets, subscriptions.topics, coordinates, introductions, presence),
        partitions,
    )
