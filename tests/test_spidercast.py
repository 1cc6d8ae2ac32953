"""SpiderCastM against its plain-Python oracle (`tests/spidercast_m_oracle.py`), link by link and
round by round, on random instances with greedy and random turns, ties and saturated topics."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F
from spidercast_m_oracle import spidercast_m_oracle, xxhash64

from overlay import schema as S
from overlay.design.spidercast import SpiderCastParams, spidercast_m


def random_subscriptions(rng: random.Random, nodes: int, topics: int, most: int) -> dict[int, set[int]]:
    """Skewed interests: low topic ids are popular, so scores tie and topics saturate."""
    weights = [1 / (t + 1) for t in range(topics)]
    return {
        10 * p + 3: {100 + t for t in rng.choices(range(topics), weights, k=rng.randint(1, most))} for p in range(nodes)
    }


def spark_links(spark, subs: dict[int, set[int]], params: SpiderCastParams) -> list[tuple[int, int, int]]:
    frame = spark.createDataFrame(
        [(p, t) for p, topics in subs.items() for t in topics], f"{S.NODE_ID} long, {S.TOPIC_ID} long"
    )
    rows = spidercast_m(frame, params).orderBy(S.ADDED_ORDER).collect()
    assert [r[S.ADDED_ORDER] for r in rows] == list(range(1, len(rows) + 1))
    return [(r[S.U], r[S.V], r[S.ROUND]) for r in rows]


def test_the_oracles_hash_is_sparks(spark):
    cases = [(1, 1, 3, 103), (7, 12, 2**40 + 5, -9), (-3, 0, 0, 2**62)]
    rows = (
        spark.createDataFrame(cases, "s int, r int, a long, b long")
        .select(F.xxhash64("s", "r", "a", "b").alias("h"))
        .collect()
    )
    assert [r.h for r in rows] == [xxhash64(("int", s), ("int", r), ("long", a), ("long", b)) for s, r, a, b in cases]


def test_spidercast_m_matches_the_oracle(spark):
    """4 rounds on 16 nodes with d = 5: every node's 4th link is a random turn, and 6 greedy turns
    find no neighbour with a needy topic to share (so they pick at random)."""
    subs = random_subscriptions(random.Random(3), 16, 6, 4)
    expected = spidercast_m_oracle(subs, 5, 3)
    assert max(r for _, _, r in expected) == 4
    assert spark_links(spark, subs, SpiderCastParams(max_degree=5, seed=3)) == expected


# d = 5, 3, 6, 4 on 16, 19, 30, 26 nodes; the last with K_g = K_r = 1 (every other link random).
@pytest.mark.parametrize("instance_seed, kg, kr", [(1, 3, 1), (4, 3, 1), (6, 3, 1), (9, 1, 1)])
def test_spidercast_m_matches_the_oracle_on_more_instances(spark, instance_seed, kg, kr):
    rng = random.Random(instance_seed)
    subs = random_subscriptions(rng, rng.randint(12, 30), rng.randint(3, 10), rng.randint(2, 6))
    max_degree, seed = rng.randint(2, 6), rng.randint(1, 9)
    expected = spidercast_m_oracle(subs, max_degree, seed, kg, kr)
    params = SpiderCastParams(max_degree=max_degree, seed=seed, greedy_coverage=kg, random_coverage=kr)
    assert spark_links(spark, subs, params) == expected


def test_max_rounds_stops_early(spark):
    subs = random_subscriptions(random.Random(7), 16, 5, 3)
    expected = spidercast_m_oracle(subs, 4, 2, max_rounds=2)
    assert {r for _, _, r in expected} == {1, 2}
    assert spark_links(spark, subs, SpiderCastParams(max_degree=4, seed=2, max_rounds=2)) == expected
