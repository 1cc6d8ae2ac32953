"""The in-memory regime (the compiled level sweep) against the pure-Python oracles, no Spark.

Many small random instances: ties (uniform topics), dense and sparse topics, every budget shape,
rounds cut after one or a few links (a round may stop in the middle of a level), a resumed start,
and the sweep without stamps (where a pair index leaves no bits for them)."""

from __future__ import annotations

import numpy as np
import pytest

from overlay.design import memory, sweep
from overlay.design.classes import BlockClasses, ComponentClasses, Subscriptions
from overlay.design.eligibility import DegreePhases, Unlimited
from overlay.design.greedy import GreedyEngine
from tests import instances
from tests.ktco_oracle import gm2_ref
from tests.oracles import greedy_oracle


def random_instance(dist: str, nodes: int, topics: int, low: int, high: int, seed: int) -> list:
    return instances.random_instance(dist, nodes, topics, low, high, seed, skip_every=7)


def design(
    subscriptions, algorithm, max_edges=None, max_degree=None, round_links=memory.ROUND_LINKS, start=(), prefer=None
):
    nodes = max(node for node, _ in subscriptions) + 1
    copy = Subscriptions.from_pairs(nodes, np.array(subscriptions, dtype=np.int64))
    phased = algorithm in ("minmaxoda", "gpm")
    degrees = np.bincount(np.array(start, dtype=np.int64).reshape(-1), minlength=nodes)
    rule = DegreePhases(nodes, max_degree if algorithm == "gpm" else None, degrees=degrees) if phased else Unlimited()
    classes = BlockClasses(copy) if algorithm == "gm2" else ComponentClasses(copy)
    engine = GreedyEngine(
        None,
        copy,
        rule,
        classes=classes,
        initial_links=list(start),
        max_edges=max_edges,
        regime="memory",
        round_links=round_links,
        edges_total=len(start),
        name=algorithm,
        prefer=None if prefer is None else np.array(prefer, dtype=np.int64),
    )
    rounds = list(engine.rounds())
    assert all(r.regime == "memory" for r in rounds)
    return [link for r in rounds for link in r.edges], rounds


CASES = [(dist, seed) for seed in range(12) for dist in ("unif", "zipf", "expo")]


@pytest.mark.parametrize("dist,seed", CASES)
def test_the_sweep_gives_the_canonical_sequence(dist, seed):
    subscriptions = random_instance(dist, 20 + seed, 6 + seed % 7, 1, 5 + seed % 3, seed)
    for algorithm, budget in (
        ("gm", {}),
        ("gpa", {"max_edges": 1}),
        ("gpa", {"max_edges": 4 + seed}),
        ("minmaxoda", {}),
        ("gpm", {"max_degree": 1}),
        ("gpm", {"max_degree": 2 + seed % 3}),
    ):
        expected = greedy_oracle(subscriptions, algorithm, **budget)
        for round_links in (memory.ROUND_LINKS, 1, 3):
            links, rounds = design(subscriptions, algorithm, round_links=round_links, **budget)
            assert links == expected, (algorithm, budget, round_links)
            assert rounds == [] or rounds[-1].finished


@pytest.mark.parametrize("seed", range(8))
def test_gm2_in_memory_gives_the_canonical_sequence(seed):
    subscriptions = random_instance(("unif", "zipf")[seed % 2], 16 + seed, 7, 2, 5, 40 + seed)
    expected = gm2_ref(subscriptions)
    for round_links in (memory.ROUND_LINKS, 2):
        links, rounds = design(subscriptions, "gm2", round_links=round_links)
        assert links == expected
        assert rounds[-1].finished


@pytest.mark.parametrize("algorithm,budget", (("gm", {}), ("gpm", {"max_degree": 3}), ("minmaxoda", {})))
def test_a_resumed_sweep_continues_the_same_sequence(algorithm, budget):
    subscriptions = random_instance("zipf", 30, 12, 2, 6, seed=5)
    expected = greedy_oracle(subscriptions, algorithm, **budget)
    for cut in (1, len(expected) // 2):
        prefix = [(u, v) for u, v, _ in expected[:cut]]
        if algorithm == "gm":
            rest, _ = design(subscriptions, algorithm, start=prefix, **budget)
            assert expected[:cut] + rest == expected
        else:  # a phased run resumes in the phase its stored rounds reached: the first, here
            first_phase = greedy_oracle(subscriptions, algorithm, max_degree=1)
            prefix = [(u, v) for u, v, _ in first_phase[:cut]]
            rest, _ = design(subscriptions, algorithm, start=prefix, **budget)
            assert first_phase[:cut] + rest == expected


def test_without_stamps_the_sweep_is_the_same(monkeypatch):
    subscriptions = random_instance("unif", 30, 8, 2, 5, seed=3)
    expected = greedy_oracle(subscriptions, "gpm", max_degree=3)
    monkeypatch.setattr(sweep, "stamp_bits_for", lambda nodes, links: 0)
    assert design(subscriptions, "gpm", max_degree=3)[0] == expected


def test_the_pair_bound_holds_and_the_regime_follows_the_budget():
    subscriptions = random_instance("zipf", 40, 15, 2, 8, seed=1)
    nodes = max(node for node, _ in subscriptions) + 1
    copy = Subscriptions.from_pairs(nodes, np.array(subscriptions, dtype=np.int64))
    topics = {}
    for node, topic in subscriptions:
        topics.setdefault(node, set()).add(topic)
    pairs = sum(1 for u in topics for v in topics if u < v and topics[u] & topics[v])
    bound = memory.pair_bound(copy)
    assert pairs <= bound <= nodes * (nodes - 1) // 2
    assert memory.MemorySweep(copy, Unlimited(), ComponentClasses(copy), None, 0).pairs == pairs
    needed = memory.state_bytes(copy, bound)
    for budget, regime in ((needed, "memory"), (needed - 1, "rounds")):
        engine = GreedyEngine(None, copy, Unlimited(), memory_budget=budget)
        assert engine.regime == regime
    assert memory.parse_bytes("4g") == 4 << 30 and memory.parse_bytes("512m") == 512 << 20
    with pytest.raises(ValueError):
        memory.parse_bytes("4 GB")


@pytest.mark.parametrize("trial", range(16))
def test_gswico_rules_in_memory_match_the_oracle(trial):
    """GSwicoS's ring (with its closing link) and GSwicoL's slots on that ring, in the sweep."""
    from overlay.smallworld.gswico import RingRule, SlotRule
    from tests.smallworld_oracle import gswico_fingers_oracle, gswico_ring_oracle

    n = 3 + trial % 17
    subscriptions = [
        (u, t) for u, t in random_instance(("unif", "zipf", "expo")[trial % 3], n, 4 + trial % 6, 1, 4, trial) if u < n
    ]
    copy = Subscriptions.from_pairs(n, np.array(subscriptions, dtype=np.int64).reshape(-1, 2))
    positions, ring_links, _ = gswico_ring_oracle(subscriptions, n)
    slots, long_links = gswico_fingers_oracle(subscriptions, n, positions, ring_links)
    at = np.zeros(n, dtype=np.int64)
    for node, position in positions.items():
        at[node] = position
    for round_links in (memory.ROUND_LINKS, 1):
        ring = RingRule(n)
        engine = GreedyEngine(None, copy, ring, regime="memory", round_links=round_links, name="gswico-s")
        links = [link for r in engine.rounds() for link in r.edges]
        assert links == ring_links[: len(links)]  # the rest is the caller's zero-gain fill
        assert ring.complete == (len(links) == len(ring_links))
        assert ring.edges == len(links)
        rule = SlotRule(at, n)
        engine = GreedyEngine(
            None,
            copy,
            rule,
            initial_links=[(u, v) for u, v, _ in ring_links],
            regime="memory",
            round_links=round_links,
            name="gswico-l",
        )
        assert [link for r in engine.rounds() for link in r.edges] == long_links
        assert all(slots[(owner, phase)] == finger for owner, phase, finger in rule.fingers)


def preferred_links(subscriptions, seed: int, share: float) -> list[tuple[int, int]]:
    """A random set of pairs sharing a topic (yesterday's links), some given as (v, u)."""
    rng = np.random.default_rng(seed)
    topics: dict[int, set[int]] = {}
    for node, topic in subscriptions:
        topics.setdefault(node, set()).add(topic)
    pairs = [(u, v) for u in topics for v in topics if u < v and topics[u] & topics[v]]
    chosen = [pairs[i] for i in np.flatnonzero(rng.random(len(pairs)) < share)]
    return [(v, u) if i % 3 == 0 else (u, v) for i, (u, v) in enumerate(chosen)]


@pytest.mark.parametrize("dist,seed", [(dist, seed) for seed in range(6) for dist in ("unif", "zipf")])
def test_preferred_pairs_go_first_among_equal_gains(dist, seed):
    """A rebuild's tie rule: among equal gains yesterday's links first, then (u, v); levels
    2g + 1 and 2g, with stale bounds, phases and cut rounds."""
    subscriptions = random_instance(dist, 18 + seed, 5 + seed % 4, 1, 5, 70 + seed)
    for share in (0.1, 0.5):
        prefer = preferred_links(subscriptions, seed, share)
        changed = False
        for algorithm, budget in (
            ("gm", {}),
            ("gpa", {"max_edges": 3 + seed}),
            ("minmaxoda", {}),
            ("gpm", {"max_degree": 2}),
        ):
            expected = greedy_oracle(subscriptions, algorithm, prefer=prefer, **budget)
            changed |= expected != greedy_oracle(subscriptions, algorithm, **budget)
            for round_links in (memory.ROUND_LINKS, 1):
                links, _ = design(subscriptions, algorithm, round_links=round_links, prefer=prefer, **budget)
                assert links == expected, (algorithm, budget, round_links, share)
        assert changed  # the preference decided some tie


@pytest.mark.parametrize("seed", range(4))
def test_gm2_prefers_the_given_pairs_among_equal_estimates(seed):
    subscriptions = random_instance("unif", 14 + seed, 6, 2, 4, 90 + seed)
    prefer = preferred_links(subscriptions, seed, 0.3)
    expected = gm2_ref(subscriptions, prefer=prefer)
    assert design(subscriptions, "gm2", prefer=prefer)[0] == expected


@pytest.mark.parametrize("seed", range(6))
def test_nodes_full_at_the_start_leave_their_pairs_out_and_the_sequence_stays(seed):
    """GPM from a start whose links fill some nodes to the budget (an incremental design's): the
    sweep builds no pair with a full end (`memory.closed_nodes`), and the links are the oracle's."""
    subscriptions = random_instance(("unif", "zipf")[seed % 2], 24, 8, 2, 5, 120 + seed)
    nodes = max(node for node, _ in subscriptions) + 1
    budget = 2
    degrees = np.zeros(nodes, dtype=np.int64)
    start = []
    for u, v, _ in greedy_oracle(subscriptions, "gm")[seed % 2 :: 2]:  # every other GM link, within the budget
        if degrees[u] < budget and degrees[v] < budget:
            start.append((u, v))
            degrees[u] += 1
            degrees[v] += 1
    assert memory.closed_nodes(DegreePhases(nodes, budget, degrees=degrees)).sum() >= 2
    expected = greedy_oracle(subscriptions, "gpm", max_degree=budget, start=start)
    assert design(subscriptions, "gpm", max_degree=budget, start=start)[0] == expected
