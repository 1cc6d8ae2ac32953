"""GM2 (kTCO paper, Alg. 1) on the greedy engine against the pure-Python oracle, link by link."""

from __future__ import annotations

import random

import numpy as np
import pytest

from overlay.design.classes import BlockClasses
from overlay.design.greedy import GreedyDesign, GreedyParams
from overlay.design.kernels import apart
from tests.helpers import driver_copy, frame
from tests.instances import random_instance
from tests.ktco_oracle import blocks, gm2_ref, is_ktco, subscribers, verify_gm2_sequence


def _row(subscriptions, node: int, topic: int) -> int:
    lo, hi = subscriptions.offsets[node], subscriptions.offsets[node + 1]
    return int(lo + np.searchsorted(subscriptions.topics[lo:hi], topic))


@pytest.mark.parametrize("seed", range(40))
def test_blocks_kept_as_links_arrive_match_hopcroft_tarjan(seed):
    """Random links in random order (bridges, cycles through cut vertices, re-rooted trees): after
    each, the gain equals the topics whose blocks (recomputed by the oracle) hold not both ends,
    the block and component counts match, and the executors' flattened copy answers alike."""
    rng = random.Random(seed)
    subscriptions = random_instance(
        ("unif", "zipf", "expo")[seed % 3], rng.randint(4, 14), rng.randint(1, 5), 1, 4, seed
    )
    csr = driver_copy(subscriptions)
    classes = BlockClasses(csr)
    topics = subscribers(subscriptions)
    pairs = [(u, v) for u in range(csr.nodes) for v in range(u + 1, csr.nodes)]
    rng.shuffle(pairs)
    links: list[tuple[int, int]] = []
    for u, v in pairs[: rng.randint(len(pairs) // 3, len(pairs))]:
        expected = sum(
            1
            for nodes in topics.values()
            if u in nodes and v in nodes and not any({u, v} <= block for block in blocks(nodes, links))
        )
        assert classes.gain(u, v) == expected
        assert classes.merge(u, v) == expected
        links.append((u, v))
        found = [blocks(nodes, links) for nodes in topics.values()]
        assert classes.blocks == sum(1 for topic in found for block in topic if len(block) >= 2)
        components = sum(len({frozenset(b) for b in _components(nodes, links)}) for nodes in topics.values())
        assert classes.components == components
        assert classes.complete == is_ktco(subscriptions, links, 2)
    label, head = classes.snapshot()
    for t, nodes in topics.items():
        holding = blocks(nodes, links)
        for a in nodes:
            for b in nodes:
                if a < b:
                    expected = not any({a, b} <= block for block in holding)
                    assert apart(label, head, _row(csr, a, t), _row(csr, b, t)) == expected


def _components(nodes, links):
    nodes = set(nodes)
    adjacency = {v: set() for v in nodes}
    for a, b in links:
        if a in nodes and b in nodes:
            adjacency[a].add(b)
            adjacency[b].add(a)
    seen, found = set(), []
    for v in sorted(nodes):
        if v in seen:
            continue
        stack, part = [v], {v}
        while stack:
            for w in adjacency[stack.pop()] - part:
                part.add(w)
                stack.append(w)
        seen |= part
        found.append(part)
    return found


def test_the_driver_forest_is_capped():
    from overlay.errors import InputError

    csr = driver_copy(random_instance("unif", 10, 4, 1, 3, 1))
    with pytest.raises(InputError, match="GM2 keeps every topic's blocks on the driver"):
        BlockClasses(csr, max_rows=csr.rows - 1)
    assert BlockClasses(csr, max_rows=csr.rows).components == csr.rows


GM2_CASES = [
    ("unif", 20, 8, 1, 4, 1),
    ("zipf", 24, 14, 2, 5, 2),
    ("expo", 22, 12, 1, 5, 3),
]


@pytest.mark.parametrize("dist,nodes,topics,low,high,seed", GM2_CASES)
def test_gm2_matches_the_oracle_link_by_link(spark, dist, nodes, topics, low, high, seed):
    """Whole-table samples and one-row samples (nearly every round stops on the outside bound, ties
    and stale bounds included) both give the canonical sequence, which the brute-force replay
    accepts; the run stops exactly at a 2TCO."""
    subscriptions = random_instance(dist, nodes, topics, low, high, seed)
    expected = gm2_ref(subscriptions)
    verify_gm2_sequence(subscriptions, expected)
    for sizes in ({"regime": "memory"}, {"batch_size": 1, "per_node": 1, "partitions": 3, "regime": "rounds"}):
        rounds = list(GreedyDesign(frame(spark, subscriptions), GreedyParams("gm2", **sizes)).rounds())
        links = [link for r in rounds for link in r.edges]
        assert links == expected, sizes
        assert rounds[-1].finished and rounds[-1].tcc == len(subscribers(subscriptions))
    assert len(rounds) > 3  # the one-row samples did need many rounds


def test_relaxed_gm2_builds_a_2tco_in_fewer_rounds(spark):
    subscriptions = random_instance("zipf", 30, 16, 2, 6, seed=9)
    exact = list(
        GreedyDesign(
            frame(spark, subscriptions), GreedyParams("gm2", batch_size=2, per_node=1, regime="rounds")
        ).rounds()
    )
    relaxed = list(
        GreedyDesign(
            frame(spark, subscriptions),
            GreedyParams("gm2", batch_size=2, per_node=1, mode="relaxed", epsilon=1.0),
        ).rounds()
    )
    links = [(u, v) for r in relaxed for u, v, _ in r.edges]
    assert is_ktco(subscriptions, links, 2) and len(relaxed) < len(exact)
    assert [(u, v) for r in exact for u, v, _ in r.edges] != links  # it did leave the canonical sequence


def test_a_resumed_gm2_continues_the_same_sequence(spark):
    """The stored links of the first rounds rebuild the block forest (in their order); the rest
    of the run is the canonical sequence."""
    from overlay import schema as S
    from overlay.design.greedy import GreedyStart

    subscriptions = random_instance("zipf", 22, 10, 2, 5, seed=6)
    params = GreedyParams("gm2", batch_size=2, per_node=1, regime="rounds")
    rounds = list(GreedyDesign(frame(spark, subscriptions), params).rounds())
    prefix = [link for r in rounds[:2] for link in r.edges]
    start = GreedyStart(
        edges=spark.createDataFrame([(u, v) for u, v, _ in prefix], f"{S.U} long, {S.V} long"), rounds_done=2
    )
    rest = [link for r in GreedyDesign(frame(spark, subscriptions), params, start=start).rounds() for link in r.edges]
    assert len(rounds) > 3 and prefix + rest == gm2_ref(subscriptions)
