"""HararyPT and CyclePT (kTCO paper) against the pure-Python oracle, and the shared random draws."""

from __future__ import annotations

import numpy as np
import pytest

from overlay import draws
from overlay import schema as S
from overlay.design.per_topic import cycle_pt, harary_pt
from tests import ktco_oracle as oracle
from tests.helpers import frame
from tests.instances import random_instance


def test_draws_repeat_the_oracle_splitmix64():
    values = np.array([0, 1, 7, 2**40 + 3, -5], dtype=np.int64)
    topics = np.array([3, 0, 9, 1, 2**62], dtype=np.int64)
    got = draws.draw(123, draws.CYCLE_PT_ORDER, topics, values)
    assert got.tolist() == [oracle.draw(123, 1, int(t), int(v)) for t, v in zip(topics, values)]
    assert draws.splitmix64(np.uint64(0)) == 0xE220A8397B1DCDAF  # SplitMix64's first output from seed 0
    # ranks sort as the unsigned draws do
    drawn = draws.draw(5, 2, np.arange(200))
    assert np.array_equal(
        np.argsort(draws.ranks(5, 2, np.arange(200)), kind="stable"), np.argsort(drawn, kind="stable")
    )


def links_of(frame_) -> list[tuple[int, int]]:
    rows = frame_.orderBy(S.ADDED_ORDER).collect()
    assert [r[S.ADDED_ORDER] for r in rows] == list(range(1, len(rows) + 1))
    return [(r[S.U], r[S.V]) for r in rows]


@pytest.mark.parametrize("dist,nodes,topics,low,high,seed", [("zipf", 24, 10, 1, 5, 1), ("unif", 18, 6, 1, 4, 2)])
def test_harary_pt_is_the_oracles_union_of_harary_graphs_and_a_ktco(spark, dist, nodes, topics, low, high, seed):
    subscriptions = random_instance(dist, nodes, topics, low, high, seed)
    subs = frame(spark, subscriptions)
    for k in (2, 3, 4, 5):
        links = links_of(harary_pt(subs, k, partitions=3))
        assert links == sorted(oracle.harary_pt(subscriptions, k)), k
        assert oracle.is_ktco(subscriptions, links, k), k
    order = oracle.random_node_order(subscriptions, seed=7)
    links = links_of(harary_pt(subs, 3, node_order="random", seed=7, partitions=2))
    assert links == sorted(oracle.harary_pt(subscriptions, 3, order)) != sorted(oracle.harary_pt(subscriptions, 3))


def test_cycle_pt_draws_the_oracles_cycles_on_any_layout(spark):
    subscriptions = random_instance("expo", 26, 9, 1, 5, 3)
    subs = frame(spark, subscriptions)
    links = links_of(cycle_pt(subs, seed=11, partitions=3))
    assert links == sorted(oracle.cycle_pt(subscriptions, 11))
    assert links_of(cycle_pt(subs.repartition(5), seed=11, partitions=1)) == links
    assert oracle.is_ktco(subscriptions, links, 2)
    assert links != links_of(cycle_pt(subs, seed=12, partitions=3))
