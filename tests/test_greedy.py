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
    for threshold in (1000, 8, 2):  # all light, mixed, all heavy
        got = shared_topic_counts(frame(spark, subscriptions), heavy_threshold=threshold, max_heavy_words=2)
        assert {(r[S.U], r[S.V]): r["shared"] for r in got.collect()} == expected


def test_settle_accepts_only_what_beats_the_outside_bound():
    # Two pairs share component keys 1-2 of one topic; the first merge zeroes the second's gain.
    batch = Batch(pairs=[(0, 1), (2, 3), (4, 5)], evidence=[[(1, 2), (7, 8)], [(1, 2)], [(9, 10)]],
                  outside=(1, 0, 9))
    settled = settle(batch, max_degree=None, edges_left=None)
    assert settled.accepted == [(0, 1, 2)]  # (4, 5) has gain 1 but (1, 0, 9) ranks before it
    assert settled.gains == [0, 0, 1] and not settled.exhausted
    assert settled.relabel == {2: 1, 8: 7}


def test_settle_respects_the_phase_degree_limit():
    batch = Batch(pairs=[(0, 1), (0, 2), (1, 2)], evidence=[[(1, 2)], [(3, 4)], [(5, 6)]], degrees={0: 0})
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
