"""Rappel's pure pieces against hand-worked values: the utilities on the paper's worked example,
Bloom false-positive rates, one audit step, the five join cases of Alg. 2 (Fig. 4) and the
rejoin distribution with its expected load (checked by counting on a complete tree), and Fig. 1's
greedy best friends."""

import math

import numpy as np
import pytest

from overlay.design.classes import Subscriptions
from overlay.gossip.baselines import Knowledge
from overlay.rappel.greedy import best_friends
from overlay.rappel.interest import (
    audit,
    false_positive_rate,
    filter_of,
    holds,
    jaccard,
    pair_utility,
    set_utility,
)
from overlay.rappel.trees import DENY, FORWARD, OK, expected_rejoin_load, receive_join, rejoin_distances

A, B, C = filter_of(range(1, 6), "exact"), filter_of([1, 3, 5, 7], "exact"), filter_of([2, 4, 6], "exact")


def test_the_worked_example_of_section_3_2():
    assert jaccard(A, B) == 0.5 and jaccard(A, C) == pytest.approx(1 / 3)
    assert pair_utility(A, B, 0.001) == pytest.approx(500) and pair_utility(A, B, 0.1) == pytest.approx(5)
    # Fig. 3's formula: B alone shares f1, f3, f5 with A (bonus 3/5), C alone f2, f4 (2/5); the
    # text's "B uniquely covers f3 and f5" is wrong.
    both = set_utility(A, {1: (B, 1.0), 2: (C, 1.0)})
    assert both == pytest.approx((0.5 + 3 / 5) + (1 / 3 + 2 / 5))
    assert set_utility(A, {1: (B, 0.5)}) == pytest.approx((0.5 + 3 / 5) / 0.5)


def test_bloom_false_positive_rates_are_the_papers():
    assert [round(false_positive_rate(n) * 100, 2 if n == 50 else 1) for n in (50, 100, 200)] == [0.25, 1.6, 8.7]
    # Our three hashes behave so: over 20 filters of 100 feeds, feeds outside them pass at the
    # formula's rate (4,000 probes each: 5 standard deviations of the mean is about 0.002).
    passed = probes = 0
    for k in range(20):
        feeds = range(k * 1000, k * 1000 + 100)
        bits = filter_of(feeds)
        assert all(holds(bits, f) for f in feeds)
        outside = range(10**6 + k * 4000, 10**6 + (k + 1) * 4000)
        passed += sum(holds(bits, f) for f in outside)
        probes += len(outside)
    assert abs(passed / probes - false_positive_rate(100)) < 0.004


def test_exact_mode_holds_only_the_feeds():
    assert holds(A, 3, "exact") and not holds(A, 7, "exact")
    with pytest.raises(ValueError, match="mode must be one of bloom, exact"):
        filter_of([1], "counting")


def test_an_audit_adds_when_there_is_room_and_swaps_only_for_more_than_delta():
    mine = filter_of(range(1, 7), "exact")
    friends = {10: (filter_of([1, 2], "exact"), 1.0), 11: (filter_of([1, 3], "exact"), 1.0)}
    assert audit(mine, friends, 12, (filter_of([4, 5], "exact"), 1.0), alpha=3) == -1
    # Full (alpha 2): U(F) = 2 * (1/3 + 1/6) = 1 (each friend alone holds one of my feeds).
    # Candidate {4, 5, 6} d seconds away, replacing 10: the kept friend now alone holds 1 and 3,
    # (1/3 + 2/6), and the candidate brings (1/2 + 3/6) / d: 2/3 + 1/d; replacing 11 the same by
    # symmetry: swap 10 (the smaller id of the tie) when 2/3 + 1/d > 1.01.
    assert audit(mine, friends, 12, (filter_of([4, 5, 6], "exact"), 1.0), alpha=2) == 10
    assert audit(mine, friends, 12, (filter_of([4, 5, 6], "exact"), 2.9), alpha=2) == 10  # 1.0115
    assert audit(mine, friends, 12, (filter_of([4, 5, 6], "exact"), 3.0), alpha=2) is None  # 1.0


# Fig. 4's cases on a line: the publisher at 0, a node's distance to it its coordinate.
PLACE = {0: 0.0, 1: 1.0, 2: 2.0, 3: 3.0, 4: 4.0, 5: 2.5, 6: 5.0, 7: 6.0, 8: 1.5}


def key(x):
    return (-1.0, x) if x == 0 else (PLACE[x], x)


def seconds(a, b):
    return abs(PLACE[a] - PLACE[b])


def test_join_case_1_a_bloom_false_positive_denies():
    assert receive_join(1, 3, False, 0, [], key, seconds).kind == DENY


def test_join_case_2_a_joiner_nearer_the_publisher_goes_up():
    answer = receive_join(3, 8, True, 1, [], key, seconds)
    assert (answer.kind, answer.to) == (FORWARD, 1)


def test_join_case_3_a_node_with_room_takes_the_joiner():
    answer = receive_join(1, 3, True, 0, [2], key, seconds, beta=3)
    assert (answer.kind, answer.evicted) == (OK, None)


def test_join_case_4_every_child_nearer_forwards_to_the_child_nearest_the_joiner():
    answer = receive_join(1, 7, True, 0, [2, 3, 4], key, seconds, beta=3)
    assert (answer.kind, answer.to) == (FORWARD, 4)


def test_join_case_5_a_farther_child_is_evicted_and_sent_to_the_nearest_remaining():
    # Children 2, 3, 6 of node 1 (beta 3); 5 (at 2.5) joins: 6 (at 5) has the largest key, and
    # of 2, 3 and 5 the nearest to 6 is 3 (at 3).
    answer = receive_join(1, 5, True, 0, [2, 3, 6], key, seconds, beta=3)
    assert (answer.kind, answer.evicted, answer.rejoin_at) == (OK, 6, 3)


def test_the_publisher_is_the_root_even_beside_a_node_at_distance_zero():
    place = {0: 0.0, 9: 0.0}
    answer = receive_join(0, 9, True, None, [], lambda x: (-1.0, x) if x == 0 else (place[x], x), lambda a, b: 0.0)
    assert answer.kind == OK


def test_rejoin_distances_and_their_expected_load_on_a_complete_tree():
    assert rejoin_distances(1) == []
    assert [(p, round(q * 31, 9)) for p, q in rejoin_distances(4)] == [(2, 25.0), (3, 5.0), (4, 1.0)]
    # Count: in a complete 5-ary tree of height 4, a node at height h receives from each of its
    # 5^p descendants p levels down (p >= 2) that descendant's probability of choosing it.
    beta, tree_height = 5, 4
    for h in range(tree_height + 1):
        counted = sum(beta**p * dict(rejoin_distances(h + p, beta))[p] for p in range(2, tree_height - h + 1))
        assert expected_rejoin_load(h, tree_height, beta) == pytest.approx(counted)
    assert expected_rejoin_load(0, 4) == pytest.approx(25 + 125 / 6 + 625 / 31)
    assert expected_rejoin_load(3, 4) == 0 and math.isclose(expected_rejoin_load(2, 4), 625 / 31)


def test_the_latency_model_follows_the_papers_inter_as_mixture_in_shape():
    import numpy as np

    from overlay.rappel.coordinates import LatencyModel

    shares = []
    for seed in (1, 2, 3, 4):
        xy = LatencyModel().coordinates(seed, np.arange(800))
        d = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))[np.triu_indices(800, 1)]
        shares.append(((d < 4).mean(), ((d >= 4) & (d < 30)).mean(), d.max()))
    near, mid, longest = np.array(shares).mean(axis=0)
    assert 0.06 < near < 0.14 and 0.22 < mid < 0.36 and longest < 130  # paper: 10%, 30%, up to 115 ms
    # Keyed per node: a node sits where it sits whatever else is placed with it.
    assert np.array_equal(
        LatencyModel().coordinates(5, np.array([7, 3]))[0], LatencyModel().coordinates(5, np.arange(10))[7]
    )


def test_the_greedy_best_friends_are_a_brute_force_greedys():
    """Fig. 1's analysis: each pick the node covering most of p's uncovered feeds (ties: the
    smaller id), against a plain search over every other node."""
    rng = np.random.default_rng(1)
    n, feeds = 30, 12
    subs = {v: set(rng.choice(feeds, size=int(rng.integers(1, 6)), replace=False).tolist()) for v in range(n)}
    csr = Subscriptions.from_pairs(n, np.array([(v, t) for v in range(n) for t in sorted(subs[v])]))
    knowledge = Knowledge(csr.offsets, csr.topics)
    for p in range(n):
        chosen, after = best_friends(p, knowledge, 3)
        want, covered, counts = [], set(), []
        for _ in range(3):
            gain, q = max((len((subs[q] & subs[p]) - covered), -q) for q in range(n) if q != p and q not in want)
            if gain == 0:
                break
            want.append(-q)
            covered |= subs[-q] & subs[p]
            counts.append(len(covered))
        assert (chosen, after) == (want, counts), p
