"""The kTCO oracle checks itself (docs/readings/ktco.md#oracle): two vertex connectivities agree,
blocks match their definition, Harary graphs have the textbook properties, GM2 ends at a 2TCO."""

from __future__ import annotations

import math
import random
from itertools import combinations

import pytest

from tests import ktco_oracle as K


def random_graph(rng, n, p):
    return [(u, v) for u, v in combinations(range(n), 2) if rng.random() < p]


@pytest.mark.parametrize("seed", range(40))
def test_brute_force_and_flow_connectivity_agree(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 8)
    edges = random_graph(rng, n, rng.choice([0.3, 0.5, 0.8, 1.0]))
    brute = K.vertex_connectivity_brute(range(n), edges)
    assert K.vertex_connectivity_flow(range(n), edges) == brute
    for k in range(1, 5):  # kTCO validity of one topic against Def. 1 read directly
        direct = n <= 1 or (K.is_clique(range(n), edges) if n <= k else brute >= k)
        assert K.ktco_ok(range(n), edges, k) == direct


def test_known_connectivities():
    cycle = [(i, (i + 1) % 6) for i in range(6)]
    assert K.vertex_connectivity_flow(range(6), cycle) == 2
    assert K.vertex_connectivity_flow(range(4), list(combinations(range(4), 2))) == 3
    assert K.vertex_connectivity_flow(range(4), [(0, 1), (2, 3)]) == 0
    star = [(0, i) for i in range(1, 5)]
    assert K.vertex_connectivity_flow(range(5), star) == 1


@pytest.mark.parametrize("seed", range(30))
def test_blocks_match_their_definition(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 9)
    edges = random_graph(rng, n, rng.choice([0.15, 0.3, 0.5]))
    found = K.blocks(range(n), edges)
    assert set().union(*found) == set(range(n))
    for u, w in combinations(range(n), 2):
        together = sum(u in b and w in b for b in found)
        assert together <= 1  # two vertices share at most one block
        assert bool(together) == K.share_a_block_by_definition(range(n), edges, u, w)


def test_blocks_of_a_bowtie_and_a_bridge():
    # Triangles 0-1-2 and 2-3-4 share the cut vertex 2; the bridge 4-5; 6 alone.
    edges = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (2, 4), (4, 5)]
    assert set(K.blocks(range(7), edges)) == {
        frozenset({0, 1, 2}),
        frozenset({2, 3, 4}),
        frozenset({4, 5}),
        frozenset({6}),
    }


@pytest.mark.parametrize("k", range(2, 7))
@pytest.mark.parametrize("n", range(1, 13))
def test_harary_graphs_are_exactly_k_connected_with_the_fewest_links(k, n):
    links = K.harary(k, list(range(n)))
    if n <= k:
        assert len(links) == n * (n - 1) // 2  # the clique Def. 1 asks for
        return
    assert len(links) == math.ceil(k * n / 2)
    degree = {v: 0 for v in range(n)}
    for u, v in links:
        degree[u] += 1
        degree[v] += 1
    assert min(degree.values()) >= k
    assert K.vertex_connectivity_flow(range(n), links) == k  # so not (k+1)-connected


def test_harary_follows_the_given_order():
    assert K.harary(2, [7, 3, 9]) == {(3, 7), (3, 9), (7, 9)}
    assert K.harary(2, [7, 3, 9, 1]) == {(3, 7), (3, 9), (1, 9), (1, 7)}


def random_instance(seed, nodes=9, topics=4, per_node=(1, 3)):
    rng = random.Random(seed)
    return sorted({(v, t) for v in range(nodes) for t in rng.sample(range(topics), rng.randint(*per_node))})


@pytest.mark.parametrize("seed", range(6))
def test_gm2_ends_at_a_2tco_and_replays(seed):
    subscriptions = random_instance(seed)
    sequence = K.gm2_ref(subscriptions)
    K.verify_gm2_sequence(subscriptions, sequence)
    gains = [gain for _, _, gain in sequence]
    assert gains == sorted(gains, reverse=True)  # estimates never grow (docs/readings/ktco.md#gm2-facts, fact 2)
    assert K.is_ktco(subscriptions, [(u, v) for u, v, _ in sequence], 2)


@pytest.mark.parametrize("seed", range(10))
def test_the_lazy_gm2_gives_the_reference_sequence(seed):
    """The benchmarks' plain lazy GM2 against the step-by-step reference (ties included)."""
    subscriptions = random_instance(seed, nodes=12, topics=5, per_node=(1, 4))
    assert K.gm2_lazy(subscriptions) == K.gm2_ref(subscriptions)


@pytest.mark.parametrize("seed", range(6))
def test_estimate_is_shared_topics_minus_blocks_holding_both(seed):
    """docs/readings/ktco.md#gm2-facts, fact 3, on a random overlay."""
    rng = random.Random(seed)
    subscriptions = random_instance(seed)
    edges = random_graph(rng, 9, 0.25)
    linked = set(edges)
    topics = K.subscribers(subscriptions)
    holding = {}
    for nodes in topics.values():
        for block in K.blocks(nodes, edges):
            for v, w in combinations(sorted(block), 2):
                holding[(v, w)] = holding.get((v, w), 0) + 1
    estimates = K.estimates(subscriptions, edges)
    for v, w in combinations(range(9), 2):
        if (v, w) in linked:
            continue
        shared = sum(v in nodes and w in nodes for nodes in topics.values())
        assert estimates.get((v, w), 0) == shared - holding.get((v, w), 0)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_harary_pt_is_a_ktco(k):
    subscriptions = random_instance(3, nodes=12, topics=5, per_node=(1, 4))
    assert K.is_ktco(subscriptions, K.harary_pt(subscriptions, k), k)
    assert not K.is_ktco(subscriptions, [], k)
