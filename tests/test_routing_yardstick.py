"""The routing yardstick (`benchmarks/routing_yardstick.py`) against the tests' message-level
oracle (`tests/routing_oracle.py`), publication by publication, for all five protocols: every
arrival (node, hops, addressed, latency, sender) as a multiset, the deliveries with their hops
and latencies, the messages received and pure forwards, each node's received and sent, and the
exactly-once count. No Spark: small random rings (20-80 positions) built here."""

from __future__ import annotations

import functools
import math
import random
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest

from benchmarks import routing_yardstick as yardstick
from tests import routing_oracle as oracle

pytestmark = pytest.mark.ci  # a benchmark's check: in the CI pass (cold numba compiles are most of it)

SEEDS = range(4)
EVERYONE, LONELY, NOBODY = 0, 1, 99  # every node subscribes; one does; none does


@dataclass(frozen=True)
class Instance:
    n: int
    fingers: dict  # position -> sorted finger distances
    subs: dict  # topic -> set of positions
    subscriptions: list  # (position, topic)
    publications: list  # (publisher position, topic)
    roots: dict | None  # topic -> RP(t) given (None: hashed)
    xy: dict  # position -> coordinates (ms)

    def rp(self, topic: int) -> int:
        return oracle.rendezvous(topic, self.n) if self.roots is None else self.roots[topic]

    def link(self, u: int, v: int) -> float:
        return math.dist(self.xy[u], self.xy[v])

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        f_start = np.cumsum([0] + [len(self.fingers[v]) for v in range(self.n)])
        f_dist = np.concatenate([self.fingers[v] for v in range(self.n)])
        f_lat = np.array([self.link(v, (v + d) % self.n) for v in range(self.n) for d in self.fingers[v]])
        return f_start, f_dist, f_lat


@functools.cache
def instance(seed: int) -> Instance:
    """A random small world (Property 1: a finger per phase, Chord's or a uniform one) with
    idle nodes (pure forwarders), a topic of every node, one of a single node and one of none,
    publications by random subscribers, by that single node, by every topic's RP(t), and of the
    topic nobody subscribes to. Odd seeds root the trees at random nodes (as Rappel's feeds)."""
    rng = random.Random(seed)
    n = (20, 80, rng.randint(21, 79), rng.randint(21, 79))[seed % 4]
    fingers = {}
    for v in range(n):
        phases = [(1 << i, min(1 << (i + 1), n)) for i in range(math.ceil(math.log2(n)))]
        fingers[v] = sorted({low if rng.random() < 0.3 else rng.randrange(low, high) for low, high in phases})
    topics = list(range(2, 2 + max(4, n // 6)))
    idle = set(rng.sample(range(n), 4))
    lonely = rng.randrange(n)
    subscriptions = {(v, EVERYONE) for v in range(n)} | {(lonely, LONELY)}
    subscriptions |= {(v, rng.choice(topics)) for v in range(n) if v not in idle for _ in range(rng.randint(1, 3))}
    subscriptions = sorted(subscriptions)
    subs = {}
    for v, t in subscriptions:
        subs.setdefault(t, set()).add(v)
    roots = {t: rng.randrange(n) for t in [*subs, NOBODY]} if seed % 2 else None
    xy = {v: (rng.uniform(0, 120), rng.uniform(0, 120)) for v in range(n)}
    publications = rng.sample(subscriptions, min(60, len(subscriptions))) + [(lonely, LONELY)]
    case = Instance(n, fingers, subs, subscriptions, publications, roots, xy)
    publications += [(case.rp(t), t) for t in sorted(subs)] + [(rng.randrange(n), NOBODY)]
    return case


@pytest.mark.parametrize("latency", [True, False], ids=["latency", "hops-only"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("protocol", yardstick.PROTOCOLS)
def test_the_routing_yardstick_routes_every_publication_as_the_oracle(protocol, seed, latency):
    case = instance(seed)
    f_start, f_dist, f_lat = case.csr()
    got = yardstick.simulate(
        f_start, f_dist, case.subscriptions, case.publications, protocol, case.n, f_lat if latency else None, case.roots
    )
    link = (case.link,) if latency else ()
    received, sent = Counter(), Counter()
    lonely = rooted = multi_hop = 0
    for p, (publisher, topic) in enumerate(case.publications):
        rp = None if case.roots is None else case.roots[topic]
        routed = oracle.route_publication(protocol, case.fingers, case.subs, topic, publisher, case.n, *link, rp=rp)
        subs = case.subs.get(topic, set())
        where = (protocol, seed, p, publisher, topic)
        assert Counter(got.arrivals(p)) == Counter(routed.arrivals), where
        assert got.deliveries(p) == routed.deliveries(subs, publisher), where
        assert got.latencies(p) == routed.latencies(subs, publisher), where
        messages, pure, delivered, expected, missing, duplicates = got.per_pub[p].tolist()
        assert messages == len(routed.arrivals) and pure == routed.pure_forwards(subs), where
        assert delivered == len(routed.deliveries(subs, publisher)) == expected == len(subs - {publisher}), where
        assert missing == duplicates == 0, where
        received += routed.received()
        sent += routed.sent()
        # the hard paths: nobody but the publisher to deliver to, RP(t) publishing, long routes
        lonely += expected == 0 and topic != NOBODY
        rooted += publisher == case.rp(topic) and delivered > 0
        multi_hop += max((hops for _, hops, *_ in routed.arrivals), default=0) >= 3 and pure > 0
    assert {v: c for v, c in enumerate(got.load[:, 0].tolist()) if c} == dict(received)
    assert {v: c for v, c in enumerate(got.load[:, 1].tolist()) if c} == dict(sent)
    assert lonely >= 1 and rooted >= 3 and multi_hop >= 3, (lonely, rooted, multi_hop)
    nobody = len(case.publications) - 1  # a topic without subscribers: the rendezvous protocols still reach RP(t)
    assert (got.per_pub[nobody, 0] > 0) == (protocol in ("scribe", "iscribe") and case.publications[-1][0] != case.rp(NOBODY))  # fmt: skip


def test_the_instances_reach_the_hard_paths_of_the_rules(monkeypatch):
    """Across the instances: Pa1's pivot at the distant half's first position (no finger there)
    and at a finger, Pie going without one, the nearest subscriber being a subscribed finger
    (counted once), ranges wrapping round position 0, iScribe's routes meeting again (a node
    reached twice by one publication) and Scribe's routes joining (a node with two children)."""
    seen = Counter()
    real = oracle.next_hops

    def recording(protocol, fingers, subs, v, low, high, n):
        hops = real(protocol, fingers, subs, v, low, high, n)
        plain = real("po", fingers, subs, v, low, high, n)
        span = (high - low) % n or n
        if hops != plain:
            seen[protocol, "pivot at a finger" if hops[-1] in fingers[v] else "pivot at the half"] += 1
        elif protocol == "pie" and plain and plain[-1] < (span + 1) // 2:
            seen[protocol, "no pivot"] += 1
        if plain and plain[0] in fingers[v]:
            seen["nearest is a finger"] += 1
        if low + span > n:
            seen["range wraps"] += 1
        return hops

    monkeypatch.setattr(oracle, "next_hops", recording)
    for seed in SEEDS:
        case = instance(seed)
        f_start, f_dist, _ = case.csr()
        for protocol in ("pa1", "pie"):
            for publisher, topic in case.publications:
                oracle.route_publication(protocol, case.fingers, case.subs, topic, publisher, case.n)
        for protocol in ("scribe", "iscribe"):
            got = yardstick.simulate(f_start, f_dist, case.subscriptions, case.publications, protocol, case.n, None, case.roots)  # fmt: skip
            for p in range(len(case.publications)):
                at = Counter(a for a, *_ in got.arrivals(p))
                senders = Counter(s for *_, s in got.arrivals(p))
                seen[protocol, "a node reached twice"] += max(at.values(), default=0) > 1
                seen[protocol, "a node with two children"] += max(senders.values(), default=0) > 1
    for path in [
        ("pa1", "pivot at a finger"),
        ("pa1", "pivot at the half"),
        ("pie", "pivot at a finger"),
        ("pie", "no pivot"),
        "nearest is a finger",
        "range wraps",
        ("iscribe", "a node reached twice"),
        ("scribe", "a node with two children"),
    ]:
        assert seen[path] > 0, path


def test_the_workload_hash_is_xxh64():
    """`lab_publications` draws with XXH64 as Spark's xxhash64 does: the reference vectors, and
    the vectorised 8-byte form against the byte form."""
    assert yardstick.xxh64(b"", 0) == 0xEF46DB3751D8E999
    assert yardstick.xxh64(b"a", 0) == 0xD24EC4F1A98C6E5B
    assert yardstick.xxh64(b"abc", 0) == 0x44BC2CF5AD770999
    assert yardstick.xxh64(b"Nobody inspects the spammish repetition", 0) == 0xFBCEA83C8A378BF1
    values = np.array([0, 1, 7, -1, 1 << 40, -(1 << 62)], np.int64)
    expected = [yardstick.xxh64(int(v).to_bytes(8, "little", signed=True), 12345) for v in values]
    assert yardstick._xxh64_longs(values, 12345).tolist() == expected
    subs = np.array([(node, topic) for topic in range(5) for node in range(topic, 3 * topic + 2)])
    picked = yardstick.lab_publications(subs, 500, seed=3)
    assert {tuple(row) for row in picked[:, ::-1].tolist()} <= {tuple(row) for row in subs.tolist()}
    assert set(picked[:, 0].tolist()) == set(range(5))
