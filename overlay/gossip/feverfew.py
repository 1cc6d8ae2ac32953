"""Feverfew's node protocol (our reading: docs/readings/feverfew.md#cyclon, #gossip-sample, #select,
#bubble-sample) as three per-node steps of one synchronous cycle, for the cycle engine
(`overlay.gossip.cycles`). Every choice is a keyed draw (`overlay.draws`), so a seed gives one run
on any layout, and every step reads only the node's own state, the messages addressed to it and the
static subscriptions.

One cycle c, as every node sees it (all of it reads the state at the start of the cycle, after
every random-view age went up by 1):

1. **act** (each node p on its own):
   * Cyclon (`pss="cyclon"`): the target q is the oldest random-view entry (ties: the smaller
     id); p sends q its own entry (age 0) and `shuffle - 1` other entries, those of smallest
     draw(CYCLON_SEND, c, p, id). With `pss="uniform"` the random view is instead `shuffle`
     fresh uniform nodes (draw(UNIFORM_SAMPLE, c, p, k) mod N, k = 0, 1, ..., skipping p and
     repeats) and the first of them is the target; nothing is exchanged.
   * GossipSample: the peer g is draw(GOSSIP_PEER, c, p) mod |pool|-th of the sorted similar
     view, or of the ln-covered view when that is empty, or of the random view; p sends g its
     buffer B_p = RV(p) ∪ SV(p).
   * BubbleSample, from cycle `bubble_start` on: for each t ∈ restSub(p) (ascending) without a
     live diffusion of p, p starts one (TTL0(t)); a diffusion is live for TTL0 cycles from its
     start. Every held copy (origin, t, τ) (the origin holds its own with τ = TTL0) sends one
     copy with TTL τ - 1 to the Cyclon target, then τ drops by 1; a copy is let go after its
     TTL-0 send. As an agent, for each (o, t) in AV(p) (oldest first) and each r of RV(p)
     (ascending) other than o that subscribes to t, a pair (o, r) p never reported before: p
     tells o about r and r about o.
2. **serve** (each node q, with the requests addressed to it): q answers every Cyclon requester
   r with `shuffle` entries of its start-of-cycle view (smallest draw(CYCLON_ANSWER, c, q, r,
   id)) and merges the requests in requester-id order (`merge_entries`: entries for q and those
   q holds are dropped; empty slots fill first, then the entries q sent to r are replaced, in
   order); q answers every GossipSample requester with B_q and pools their buffers; copies
   received put (o, t) into AV (first in, first out; a pair already there stays) and are held
   while their TTL is above 0; matches go into MB, and count for the origin's latest diffusion of
   the topic when they arrive after the cycle it started in.
3. **finish** (each node p, with the answers to its own requests): p drops q and merges q's
   answer (replacing the entries p sent); SV becomes the best `similar_view` of B_p, B_g and the
   buffers of p's GossipSample requesters by (u2 desc, u1 desc, id asc), u2 > 0, with restSub
   from the start-of-cycle LV; every `delta` cycles LV is rebuilt by Alg. 3 from SV ∪ LV ∪ MB,
   MB is emptied, and SV too with `clear_similar`.

The cycle 0 state: a random view of `random_view` distinct other nodes (draw(GOSSIP_BOOTSTRAP,
p, k) mod N, k = 0, 1, ..., skipping p and repeats), ages 0; all else empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
from pyspark.sql.types import LongType

from overlay import schema as S
from overlay.draws import CYCLON_ANSWER, CYCLON_SEND, GOSSIP_BOOTSTRAP, GOSSIP_PEER, UNIFORM_SAMPLE, draw_int
from overlay.gossip.baselines import Knowledge
from overlay.gossip.cycles import SPARK, CycleEngine
from overlay.gossip.select import jaccard, rest_sub, select_ln_covered
from overlay.gossip.theory import need, ttl0
from overlay.lineage import LOCAL, Lineage

PSS_KINDS = ("cyclon", "uniform")
NONE = -1

# Message kinds, in the order a node handles them (the engine sorts by dst, kind, src, seq); the
# push-pull exchanges are those of a dissemination inside the gossip (`overlay.gossip.healing`).
(
    SELF,
    CYCLON_REQUEST,
    GOSSIP_REQUEST,
    COPY,
    MATCH_ORIGIN,
    MATCH_PEER,
    CYCLON_ANSWERED,
    GOSSIP_ANSWERED,
    PUSH_PULL_REQUEST,
    PUSH_PULL_ANSWERED,
) = range(10)


@dataclass(frozen=True)
class FeverfewParams:
    """The protocol's settings; the defaults are the paper's and our readings
    (docs/readings/feverfew.md#defaults)."""

    seed: int = 1
    random_view: int = 20
    shuffle: int = 10
    similar_view: int = 40
    agent_view: int = 40
    bubble_start: int = 30
    delta: int = 1
    clear_similar: bool = False
    pss: str = "cyclon"
    bubble: bool = True

    def check(self) -> None:
        if self.pss not in PSS_KINDS:
            raise ValueError(f"pss must be one of {', '.join(PSS_KINDS)}, got {self.pss!r}")
        for name in ("random_view", "shuffle", "similar_view", "agent_view", "delta"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.shuffle > self.random_view:
            raise ValueError(f"the shuffle ({self.shuffle}) cannot exceed the random view ({self.random_view})")
        if self.bubble_start < 1:
            raise ValueError(f"bubble_start must be a cycle >= 1, got {self.bubble_start}")


class Interests(Knowledge):
    """What every node knows without gossip: the subscriptions both ways (`Knowledge`), sub(q) as
    sets, need(t) and TTL0(t) from the topic sizes."""

    def __init__(self, offsets: np.ndarray, topics: np.ndarray, network: int, shuffle: int) -> None:
        super().__init__(offsets, topics)
        self.network = network
        self._need = {t: need(int(n)) for t, n in enumerate(self.sizes) if n}
        self._ttl = {s: ttl0(network, s, shuffle) for s in {int(n) for n in self.sizes if n > 1}}

    __getitem__ = Knowledge.subs  # the mapping `select` reads

    def need(self, topic: int) -> int:
        return self._need.get(topic, 0)

    def ttl(self, topic: int) -> int:
        return self._ttl[int(self.sizes[topic])]


@dataclass
class Node:
    """One node's state between cycles (the row of `STATE_COLUMNS`)."""

    node: int
    rv: dict[int, int] = field(default_factory=dict)  # random view: id -> age
    sv: list[int] = field(default_factory=list)  # similar view, best first
    lv: list[int] = field(default_factory=list)  # ln-covered view, in the order Alg. 3 took it
    mb: set[int] = field(default_factory=set)  # matches received since the last LV rebuild
    av: list[tuple[int, int]] = field(default_factory=list)  # agent view (origin, topic), oldest first
    reported: set[tuple[int, int]] = field(default_factory=set)  # (origin, other) pairs told
    held: list[tuple[int, int, int]] = field(default_factory=list)  # copies held (origin, topic, ttl)
    own: dict[int, list[int]] = field(default_factory=dict)  # topic -> [started, ttl, first match, matches]
    informed: dict[int, int] = field(default_factory=dict)  # publication -> cycle informed (healing runs only)


# The state row: flat arrays (`gossip_states`), so that a notebook can query a snapshot.
STATE_COLUMNS = (
    (S.NODE_ID, "bigint"),
    *((name, f"array<{'bigint' if isinstance(kind, LongType) else 'int'}>") for name, kind in S.GOSSIP_STATE_ARRAYS),
)
# What `finish` adds for the cycle's measures: the node's covered topics, its topics that need
# covering (two or more subscribers), and the messages it sent (`SENT_KINDS`).
MEASURE_COLUMNS = (("covered", "array<bigint>"), ("needy", "int"), ("sent", "array<int>"))
SENT_KINDS = ("cyclon", "gossip", "copies", "matches")  # the order of `sent`
# A dissemination inside the gossip adds the publications each node holds.
INFORMED_COLUMNS = (("informed_pub", "array<bigint>"), ("informed_at", "array<int>"))


def message_columns(state_columns) -> tuple:
    """Message rows: the payload columns, then the state (on SELF rows) and the working columns a
    node carries from one step of the cycle to the next."""
    return (
        ("dst", "bigint"),
        ("kind", "int"),
        ("src", "bigint"),
        ("seq", "int"),
        ("topic", "bigint"),
        ("ttl", "int"),
        ("other", "bigint"),
        ("ids", "array<bigint>"),
        ("ages", "array<int>"),
        *state_columns[1:],
        ("target", "bigint"),
        ("peer", "bigint"),
        ("sent_ids", "array<bigint>"),
        ("pool", "array<bigint>"),
        ("sent", "array<int>"),
    )


def to_row(n: Node) -> dict:
    rv = sorted(n.rv)
    reported = sorted(n.reported)
    own = sorted(n.own)
    return {
        "node_id": n.node,
        "rv": rv,
        "rv_age": [n.rv[q] for q in rv],
        "sv": list(n.sv),
        "lv": list(n.lv),
        "mb": sorted(n.mb),
        "av_origin": [o for o, _ in n.av],
        "av_topic": [t for _, t in n.av],
        "reported_origin": [o for o, _ in reported],
        "reported_other": [r for _, r in reported],
        "held_origin": [h[0] for h in n.held],
        "held_topic": [h[1] for h in n.held],
        "held_ttl": [h[2] for h in n.held],
        "own_topic": own,
        "own_started": [n.own[t][0] for t in own],
        "own_ttl": [n.own[t][1] for t in own],
        "own_first_match": [n.own[t][2] for t in own],
        "own_matches": [n.own[t][3] for t in own],
        "informed_pub": sorted(n.informed),
        "informed_at": [n.informed[j] for j in sorted(n.informed)],
    }


def from_row(row: dict, node_key: str = "node_id") -> Node:
    return Node(
        node=row[node_key],
        rv=dict(zip(row["rv"], row["rv_age"])),
        sv=list(row["sv"]),
        lv=list(row["lv"]),
        mb=set(row["mb"]),
        av=list(zip(row["av_origin"], row["av_topic"])),
        reported=set(zip(row["reported_origin"], row["reported_other"])),
        held=list(zip(row["held_origin"], row["held_topic"], row["held_ttl"])),
        own={
            t: [s, ttl, f, m]
            for t, s, ttl, f, m in zip(
                row["own_topic"], row["own_started"], row["own_ttl"], row["own_first_match"], row["own_matches"]
            )
        },
        informed=dict(zip(row.get("informed_pub") or (), row.get("informed_at") or ())),
    )


def distinct_draws(
    seed: int, purpose: int, key: tuple, count: int, network: int, skip: int, allowed: np.ndarray | None = None
) -> list[int]:
    """`count` distinct nodes other than `skip` (and, given `allowed`, a bool per node, only those
    allowed): draw(purpose, *key, k) mod N for k = 0, 1, ... (fewer when there are fewer)."""
    others = network if allowed is None else int(allowed.sum()) + (0 if allowed[skip] else 1)
    count = min(count, others - 1)
    chosen: list[int] = []
    k = 0
    while len(chosen) < count:
        q = draw_int(seed, purpose, *key, k) % network
        k += 1
        if q != skip and q not in chosen and (allowed is None or allowed[q]):
            chosen.append(q)
    return chosen


def bootstrap(node: int, network: int, params: FeverfewParams) -> Node:
    """The cycle 0 state of a node."""
    return Node(
        node,
        rv={q: 0 for q in distinct_draws(params.seed, GOSSIP_BOOTSTRAP, (node,), params.random_view, network, node)},
    )


def smallest_draws(ids: Iterable[int], count: int, seed: int, purpose: int, *key: int) -> list[int]:
    """The `count` ids of smallest draw(purpose, *key, id), smallest first."""
    return sorted(ids, key=lambda q: (draw_int(seed, purpose, *key, q), q))[:count]


def merge_entries(
    view: dict[int, int], incoming: list[tuple[int, int]], replaceable: list[int], me: int, size: int
) -> None:
    """Cyclon's merge, in place: skip entries for `me` and entries held; fill empty slots first,
    then replace the first entry of `replaceable` still held; otherwise drop the entry."""
    spare = [q for q in replaceable]
    for q, age in incoming:
        if q == me or q in view:
            continue
        if len(view) < size:
            view[q] = age
            continue
        while spare and spare[0] not in view:
            spare.pop(0)
        if spare:
            del view[spare.pop(0)]
            view[q] = age


def rest_of(node: int, lv: Iterable[int], interests: Interests) -> frozenset:
    """restSub of `node` with ln-covered view `lv` (`select.rest_sub`)."""
    return rest_sub(interests.subs(node), lv, interests, interests.need)


def select_similar(node: int, pool: Iterable[int], rest: frozenset, interests: Interests, size: int) -> list[int]:
    """SelectSimilarNeighbors: the `size` best by (u2 desc, u1 desc, id asc), u2 > 0 (u2 is the
    Jaccard of restSub(p) and sub(q), u1 of sub(p) and sub(q): `select.u1`, `select.u2`)."""
    mine = interests.subs(node)
    scored = []
    for q in set(pool) - {node}:
        theirs = interests.subs(q)
        score = jaccard(rest, theirs)
        if score > 0:
            scored.append((-score, -jaccard(mine, theirs), q))
    scored.sort()
    return [q for _, _, q in scored[:size]]


class Feverfew:
    """The three steps of a cycle over rows (dicts), for `overlay.gossip.cycles.CycleEngine`.
    `healing` (an `overlay.gossip.healing.Healing`): nodes fail and return, and publications
    spread by push-pull among the subscribers, inside the cycles."""

    measure_columns = MEASURE_COLUMNS

    def __init__(self, params: FeverfewParams, offsets: np.ndarray, topics: np.ndarray, healing=None) -> None:
        params.check()
        self.params = params
        self.interests = Interests(offsets, topics, len(offsets) - 1, params.shuffle)
        self.healing = healing
        self.state_columns = STATE_COLUMNS if healing is None else (*STATE_COLUMNS, *INFORMED_COLUMNS)
        self.message_columns = message_columns(self.state_columns)

    def start(self, node: int) -> dict:
        return to_row(bootstrap(node, self.interests.network, self.params))

    def coverage(self, node: int, lv: list[int]) -> tuple[list[int], int]:
        """The node's ln-covered topics by `lv`, and its topics that need covering."""
        w = self.interests
        needy = {t for t in w.subs(node) if w.need(t) > 0}
        return sorted(needy - rest_of(node, lv, w)), len(needy)

    # -- step 1 ---------------------------------------------------------------------------------
    def act(self, rows: Iterable[dict], cycle: int) -> Iterator[dict]:
        p, w = self.params, self.interests
        for row in rows:
            n = from_row(row)
            me = n.node
            sent = [0, 0, 0, 0]
            target, sent_ids = NONE, []
            if self.healing is not None:
                n = self.healing.enter(n, cycle)
                if not self.healing.up(me, cycle):  # down this cycle: no state, no message
                    yield {
                        **to_row(n),
                        "dst": me,
                        "kind": SELF,
                        "src": me,
                        "seq": 0,
                        "target": NONE,
                        "peer": NONE,
                        "sent_ids": [],
                        "pool": [],
                        "sent": sent,
                    }
                    continue
            if p.pss == "uniform":
                fresh = distinct_draws(p.seed, UNIFORM_SAMPLE, (cycle, me), p.shuffle, w.network, me)
                n.rv = dict.fromkeys(fresh, 0)
                target = fresh[0] if fresh else NONE
            else:
                n.rv = {q: age + 1 for q, age in n.rv.items()}
                if n.rv:
                    target = min(n.rv, key=lambda q: (-n.rv[q], q))
                    others = [q for q in n.rv if q != target]
                    sent_ids = smallest_draws(others, p.shuffle - 1, p.seed, CYCLON_SEND, cycle, me)
                    entries = [(me, 0)] + [(q, n.rv[q]) for q in sent_ids]
                    yield {
                        "dst": target,
                        "kind": CYCLON_REQUEST,
                        "src": me,
                        "seq": 0,
                        "ids": [q for q, _ in entries],
                        "ages": [a for _, a in entries],
                    }
                    sent[0] += 1
            pool = sorted(n.sv) or sorted(n.lv) or sorted(n.rv)
            peer = pool[draw_int(p.seed, GOSSIP_PEER, cycle, me) % len(pool)] if pool else NONE
            buffer = sorted(set(n.rv) | set(n.sv))
            if peer != NONE:
                yield {"dst": peer, "kind": GOSSIP_REQUEST, "src": me, "seq": 0, "ids": buffer}
                sent[1] += 1
            seq = 0
            if p.bubble:
                if cycle >= p.bubble_start:
                    for t in sorted(rest_of(me, n.lv, w)):
                        live = n.own.get(t)
                        if live is None or cycle >= live[0] + live[1]:
                            ttl = w.ttl(t)
                            n.own[t] = [cycle, ttl, NONE, 0]
                            n.held.append((me, t, ttl))
                kept = []
                for origin, t, ttl in n.held:
                    if target != NONE:
                        yield {
                            "dst": target,
                            "kind": COPY,
                            "src": me,
                            "seq": seq,
                            "other": origin,
                            "topic": t,
                            "ttl": ttl - 1,
                        }
                        seq += 1
                        sent[2] += 1
                    if ttl - 1 > 0:
                        kept.append((origin, t, ttl - 1))
                n.held = kept
                for origin, t in n.av:
                    for r in sorted(n.rv):
                        if r != origin and (origin, r) not in n.reported and t in w.subs(r):
                            n.reported.add((origin, r))
                            yield {"dst": origin, "kind": MATCH_ORIGIN, "src": me, "seq": seq, "other": r, "topic": t}
                            yield {"dst": r, "kind": MATCH_PEER, "src": me, "seq": seq + 1, "other": origin, "topic": t}
                            seq += 2
                            sent[3] += 2
            if self.healing is not None:
                yield from self.healing.requests(n, cycle, w)
            yield {
                **to_row(n),
                "dst": me,
                "kind": SELF,
                "src": me,
                "seq": 0,
                "target": target,
                "peer": peer,
                "sent_ids": sent_ids,
                "pool": buffer,
                "sent": sent,
            }

    # -- step 2 ---------------------------------------------------------------------------------
    def serve(self, node: int, rows: list[dict], cycle: int) -> Iterator[dict]:
        """`rows`: the node's SELF row first, then its requests, copies and matches, sorted."""
        p = self.params
        own, rest = rows[0], rows[1:]
        assert own["kind"] == SELF and own["dst"] == node
        n = from_row(own, "dst")
        start_rv = dict(n.rv)
        pool = set(own["pool"])
        sent = list(own["sent"])
        for m in rest:
            kind = m["kind"]
            if kind == CYCLON_REQUEST:
                answer = smallest_draws(start_rv, p.shuffle, p.seed, CYCLON_ANSWER, cycle, node, m["src"])
                yield {
                    "dst": m["src"],
                    "kind": CYCLON_ANSWERED,
                    "src": node,
                    "seq": 0,
                    "ids": answer,
                    "ages": [start_rv[q] for q in answer],
                }
                sent[0] += 1
                merge_entries(n.rv, list(zip(m["ids"], m["ages"])), answer, node, p.random_view)
            elif kind == GOSSIP_REQUEST:
                yield {"dst": m["src"], "kind": GOSSIP_ANSWERED, "src": node, "seq": 0, "ids": own["pool"]}
                sent[1] += 1
                pool.update(m["ids"])
            elif kind == COPY:
                origin, t = m["other"], m["topic"]
                if origin != node and (origin, t) not in n.av:
                    n.av.append((origin, t))
                    if len(n.av) > p.agent_view:
                        n.av.pop(0)
                if m["ttl"] > 0:
                    n.held.append((origin, t, m["ttl"]))
            elif kind in (MATCH_ORIGIN, MATCH_PEER):
                n.mb.add(m["other"])
                diffusion = n.own.get(m["topic"]) if kind == MATCH_ORIGIN else None
                if diffusion is not None and diffusion[0] < cycle:  # not a match of an earlier diffusion
                    diffusion[3] += 1
                    if diffusion[2] == NONE:
                        diffusion[2] = cycle
            elif kind == PUSH_PULL_REQUEST:
                yield self.healing.answer(n, m, cycle)
        yield {
            **to_row(n),
            "dst": node,
            "kind": SELF,
            "src": node,
            "seq": 0,
            "target": own["target"],
            "peer": own["peer"],
            "sent_ids": own["sent_ids"],
            "pool": sorted(pool),
            "sent": sent,
        }

    # -- step 3 ---------------------------------------------------------------------------------
    def finish(self, node: int, rows: list[dict], cycle: int) -> dict:
        """`rows`: the node's SELF row first, then the answers to its requests."""
        p, w = self.params, self.interests
        own = rows[0]
        assert own["kind"] == SELF and own["dst"] == node
        n = from_row(own, "dst")
        if self.healing is not None and not self.healing.up(node, cycle):
            return {**to_row(n), "covered": [], "needy": 0, "sent": list(own["sent"])}
        start_lv = list(n.lv)
        pool = set(own["pool"])
        for m in rows[1:]:
            if m["kind"] == CYCLON_ANSWERED:
                n.rv.pop(own["target"], None)
                merge_entries(n.rv, list(zip(m["ids"], m["ages"])), list(own["sent_ids"]), node, p.random_view)
            elif m["kind"] == GOSSIP_ANSWERED:
                pool.update(m["ids"])
            elif m["kind"] == PUSH_PULL_ANSWERED:
                self.healing.pull(n, m, cycle)
        rest = rest_of(node, start_lv, w)
        n.sv = select_similar(node, pool, rest, w, p.similar_view)
        if cycle % p.delta == 0:
            buffer = (set(n.sv) | set(n.lv) | n.mb) - {node}
            n.lv = select_ln_covered(node, w, sorted(buffer), w.need)
            n.mb = set()
            if p.clear_similar:
                n.sv = []
        covered, needy = self.coverage(node, n.lv)
        return {**to_row(n), "covered": covered, "needy": needy, "sent": list(own["sent"])}


def feverfew_engine(
    spark,
    subscriptions,
    params: FeverfewParams,
    partitions: int,
    lineage: Lineage = LOCAL,
    regime: str = SPARK,
    memory_bytes: int | None = None,
) -> CycleEngine:
    """The cycle engine running Feverfew on `subscriptions` (`overlay.design.classes.Subscriptions`,
    the deliberate driver copy the greedy engine keeps too: every executor needs sub(q) of any q);
    `regime`: `overlay.gossip.cycles.MEMORY` (the compiled cycles, `overlay.gossip.feverfew_compiled`)
    or `SPARK`; `memory_bytes`: what the compiled cycles' held copies may take (None: no limit)."""
    from overlay.gossip.feverfew_compiled import CompiledFeverfew  # it builds on this module

    args = (params, subscriptions.offsets, subscriptions.topics)
    compiled = lambda: CompiledFeverfew(*args, memory_bytes=memory_bytes)  # noqa: E731
    return CycleEngine(spark, Feverfew, args, partitions, lineage, regime, compiled)
