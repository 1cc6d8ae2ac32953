"""The batched Spark greedy against the pure-Python lazy greedy, edge by edge."""

from __future__ import annotations

import math
import random

import pytest

from overlay import schema as S
from overlay.design.greedy import GreedyDesign, GreedyParams, GreedyStart
from overlay.design.pairs import shared_topic_counts
from overlay.design.settle import Batch, settle
from tests.oracles import check_greedy_sequence, greedy_oracle


def random_instance(dist: str, nodes: int, topics: int, low: int, high: int, seed: int) -> list:
    """(node, topic) pairs: each node picks k in [low, high] topics by weight, without replacement."""
    rng = random.Random(seed)
    weight = {
        "unif": lambda r: 1.0,
        "zipf": lambda r: (r + 1) ** -2.0,
        "expo": lambda r: math.exp(-10.0 * r / topics),
    }[dist]
    subscriptions = []
    for node in range(nodes):
        k = rng.randint(low, high)
        keys = sorted(range(topics), key=lambda r: -rng.random() ** (1.0 / weight(r)))
        subscriptions += [(node, topic) for topic in keys[:k]]
    return subscriptions


def frame(spark, subscriptions):
    return spark.createDataFrame(subscriptions, f"{S.NODE_ID} long, {S.TOPIC_ID} long")


def run_engine(spark, subscriptions, params, start=None):
    rounds = list(GreedyDesign(frame(spark, subscriptions), params, start=start).rounds())
    edges = [edge for r in rounds for edge in r.edges]
    return edges, rounds


def test_shared_topic_counts_match_set_intersections(spark):
    subscriptions = random_instance("zipf", 40, 30, 2, 12, seed=5)
    topics = {}
    for node, topic in subscriptions:
        topics.setdefault(node, set()).add(topic)
    expected = {
        (u, v): len(topics[u] & topics[v])
        for u in topics for v in topics if u < v and topics[u] & topics[v]
    }
    for threshold in (8, 2):  # mixed, all heavy
        got = shared_topic_counts(frame(spark, subscriptions), heavy_threshold=threshold, max_heavy_words=2)
        assert {(r[S.U], r[S.V]): r["shared"] for r in got.collect()} == expected


def test_settle_accepts_only_what_beats_the_outside_bound():
    # Two pairs share component keys 1-2 of one topic; the first merge zeroes the second's gain.
    batch = Batch.from_lists([(0, 1), (2, 3), (4, 5)], [[(1, 2), (7, 8)], [(1, 2)], [(9, 10)]], outside=(1, 0, 9))
    settled = settle(batch, max_degree=None, edges_left=None)
    assert settled.accepted == [(0, 1, 2)]  # (4, 5) has gain 1 but (1, 0, 9) ranks before it
    assert settled.gains == [0, 0, 1] and not settled.exhausted
    assert settled.relabel == {2: 1, 8: 7}


def test_settle_respects_the_phase_degree_limit():
    batch = Batch.from_lists([(0, 1), (0, 2), (1, 2)], [[(1, 2)], [(3, 4)], [(5, 6)]], degrees={0: 0})
    settled = settle(batch, max_degree=1, edges_left=None)
    assert [edge[:2] for edge in settled.accepted] == [(0, 1)]
    assert settled.exhausted


CASES = [
    ("unif", 24, 10, 1, 4, 1),
    ("zipf", 30, 20, 2, 6, 2),
    ("expo", 30, 20, 1, 5, 3),
]


@pytest.mark.parametrize("dist,nodes,topics,low,high,seed", CASES)
def test_greedy_algorithms_match_the_oracle(spark, dist, nodes, topics, low, high, seed):
    subscriptions = random_instance(dist, nodes, topics, low, high, seed)
    counts = shared_topic_counts(frame(spark, subscriptions), heavy_threshold=6).localCheckpoint()
    for algorithm, budget in (("gm", {}), ("gpa", {"max_edges": 7}), ("minmaxoda", {}), ("gpm", {"max_degree": 2})):
        params = GreedyParams(algorithm, batch_size=4096, **budget)
        design = GreedyDesign(frame(spark, subscriptions), params, shared_counts=counts)
        rounds = list(design.rounds())
        edges = [edge for r in rounds for edge in r.edges]
        expected = greedy_oracle(subscriptions, algorithm, **budget)
        assert edges == expected, algorithm
        check_greedy_sequence(subscriptions, [e[:2] for e in edges], algorithm, **budget)
        assert [r.round for r in rounds] == list(range(1, len(rounds) + 1))


def facebook_sample(size: int) -> list:
    """Subscriptions of a BFS sample of the Facebook graph: each user is a topic, friends subscribe."""
    from collections import deque

    from tests.conftest import FACEBOOK, read_edges

    friends = {}
    for a, b in read_edges(FACEBOOK):
        friends.setdefault(a, set()).add(b)
        friends.setdefault(b, set()).add(a)
    seen, queue = [0], deque([0])
    while queue and len(seen) < size:
        for friend in sorted(friends[queue.popleft()]):
            if friend not in seen and len(seen) < size:
                seen.append(friend)
                queue.append(friend)
    dense = {user: i for i, user in enumerate(sorted(seen))}
    return sorted(
        (dense[a], dense[b]) for a in seen for b in friends[a] if b in dense
    )


@pytest.mark.slow
def test_facebook_sample_matches_the_oracle(spark):
    subscriptions = facebook_sample(60)
    for algorithm, budget in (("gpm", {"max_degree": 3}), ("gpa", {"max_edges": 25})):
        edges, _ = run_engine(spark, subscriptions, GreedyParams(algorithm, batch_size=64, **budget))
        assert edges == greedy_oracle(subscriptions, algorithm, **budget)
        check_greedy_sequence(subscriptions, [e[:2] for e in edges], algorithm, **budget)


def test_tiny_batches_stay_exact(spark):
    """K = 4: rounds end on the outside bound all the time, bounds go stale, K grows."""
    subscriptions = random_instance("zipf", 16, 10, 2, 5, seed=9)
    edges, rounds = run_engine(spark, subscriptions, GreedyParams("gm", batch_size=4))
    assert edges == greedy_oracle(subscriptions, "gm")
    assert len(rounds) > 3


@pytest.mark.slow
def test_a_resumed_engine_continues_the_same_sequence(spark):
    subscriptions = random_instance("expo", 30, 20, 1, 5, seed=4)
    params = GreedyParams("gpm", max_degree=3, batch_size=16)
    edges, rounds = run_engine(spark, subscriptions, params)
    done = rounds[1]
    prefix = [e for r in rounds[:2] for e in r.edges]
    start = GreedyStart(
        edges=spark.createDataFrame(prefix, f"{S.U} long, {S.V} long, gain long"),
        rounds_done=done.round, phase=done.next_phase, edges_total=done.edges_total,
        gain_total=sum(g for _, _, g in prefix),
    )
    rest, _ = run_engine(spark, subscriptions, params, start=start)
    assert prefix + rest == edges == greedy_oracle(subscriptions, "gpm", max_degree=3)


@pytest.mark.parametrize("seed", range(12))
def test_the_oracle_passes_the_brute_force_replay(seed):
    """The oracle itself against the definition, on many small random instances (no Spark)."""
    dist = ("unif", "zipf", "expo")[seed % 3]
    subscriptions = random_instance(dist, 14, 9, 1, 4, seed=100 + seed)
    for algorithm, budget in (("gm", {}), ("gpa", {"max_edges": 5}), ("minmaxoda", {}), ("gpm", {"max_degree": 2})):
        edges = greedy_oracle(subscriptions, algorithm, **budget)
        check_greedy_sequence(subscriptions, [e[:2] for e in edges], algorithm, **budget)
