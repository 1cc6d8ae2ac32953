"""kTCO validity per topic (`overlay.connectivity`) against the pure-Python oracle."""

from __future__ import annotations

import random
from itertools import combinations

import numpy as np
import pytest
from chispa import assert_df_equality

from overlay.connectivity import TOPIC_SCHEMA, summarise_ktco, topic_connectivity
from overlay.kappa import connectivity_upto
from tests import ktco_oracle as K
from tests.helpers import EDGE_SCHEMA, SUBS_SCHEMA


@pytest.mark.parametrize("seed", range(40))
def test_connectivity_upto_k_is_the_oracles(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 9)
    links = [(u, v) for u, v in combinations(range(n), 2) if rng.random() < rng.choice([0.3, 0.6, 0.9, 1.0])]
    kappa = K.vertex_connectivity_brute(range(n), links)
    for k in range(1, 6):
        assert connectivity_upto(range(n), links + [(0, 0)], k) == min(kappa, k), (n, links, k)


@pytest.mark.parametrize("seed", range(30))
def test_larger_graphs_and_ks_match_the_flow_oracle(seed):
    """Dense graphs up to 14 vertices and k up to 10: Even's flows, cut off at each bound."""
    rng = random.Random(100 + seed)
    n = rng.randint(8, 14)
    density = rng.choice([0.5, 0.7, 0.85, 0.95])
    links = [(u, v) for u, v in combinations(range(n), 2) if rng.random() < density]
    kappa = K.vertex_connectivity_flow(range(n), links)
    for k in (3, 5, 7, 10):
        assert connectivity_upto(range(n), links, k) == min(kappa, k), (n, links, k)


def test_harary_graphs_stop_at_their_k():
    links = K.harary(4, list(range(10)))
    assert [connectivity_upto(range(10), links, k) for k in (3, 4, 5, 6)] == [3, 4, 4, 4]


@pytest.mark.parametrize(("seed", "k"), [(0, 1), (1, 2), (2, 3), (3, 2)])
def test_topic_connectivity_matches_the_oracle(spark, seed, k):
    rng = random.Random(seed)
    subscriptions = sorted({(v, t) for v in range(12) for t in rng.sample(range(5), rng.randint(1, 4))})
    # A HararyPT overlay for k (every topic fine) with some links dropped and noise added.
    edges = sorted(K.harary_pt(subscriptions, k))
    edges = [e for e in edges if rng.random() < 0.8] + [(3, 3)] + [(v, u) for u, v in edges[:2]]
    expected = []
    for topic, nodes in sorted(K.subscribers(subscriptions).items()):
        inside = {(min(u, v), max(u, v)) for u, v in edges if u != v and u in nodes and v in nodes}
        kappa = K.vertex_connectivity_flow(nodes, inside) if len(nodes) > 1 else 0
        expected.append((topic, len(nodes), len(inside), min(kappa, k), K.ktco_ok(nodes, inside, k)))
    got = topic_connectivity(
        spark.createDataFrame(subscriptions, SUBS_SCHEMA), spark.createDataFrame(edges, EDGE_SCHEMA), k
    )
    assert_df_equality(got, spark.createDataFrame(expected, TOPIC_SCHEMA), ignore_row_order=True, ignore_nullable=True)
    summary = summarise_ktco(got, k)
    fine = sum(row[-1] for row in expected)
    assert (summary.topics, summary.k_connected_topics, summary.is_ktco) == (len(expected), fine, fine == len(expected))
    assert K.is_ktco(subscriptions, edges, k) == summary.is_ktco


@pytest.mark.parametrize(("seed", "k"), [(s, k) for s in range(6) for k in (1, 2, 3)])
def test_one_compiled_pass_over_a_partitions_topics_is_the_oracles(seed, k):
    """`topics_connectivity` gets many topics' rows at once, in any order (what a task sees)."""
    from overlay.connectivity import topics_connectivity

    rng = random.Random(500 + seed)
    nodes = rng.randint(5, 14)
    subscriptions = sorted({(v, t) for v in range(nodes) for t in rng.sample(range(9), rng.randint(1, 5))})
    edges = sorted(K.harary_pt(subscriptions, k))
    edges = sorted(
        {e for e in edges if rng.random() < 0.85}
        | {(u, v) for u, v in combinations(range(nodes), 2) if rng.random() < 0.1}
    )
    rows = [(t, v, -1, -1) for v, t in subscriptions]
    expected = {}
    for topic, members in sorted(K.subscribers(subscriptions).items()):
        inside = {(u, v) for u, v in edges if u in members and v in members}
        rows += [(topic, -1, u, v) for u, v in inside]
        kappa = K.vertex_connectivity_flow(members, inside) if len(members) > 1 else 0
        expected[topic] = (len(members), len(inside), min(kappa, k), K.ktco_ok(members, inside, k))
    rng.shuffle(rows)
    topic, node, u, v = (np.array(column, dtype=np.int64) for column in zip(*rows))
    got = topics_connectivity(topic, node, u, v, k)
    columns = ("subscribers", "edges", "connectivity", "k_connected")
    assert {t: tuple(got[c][i].item() for c in columns) for i, t in enumerate(got["topic_id"].tolist())} == expected


def test_not_null_columns_as_delta_stores_them(spark):
    """Delta tables give NOT NULL columns; the executor side must take them as well as nullable ones."""
    subscriptions = [(v, t) for v in range(4) for t in (0, 1)]
    edges = [(0, 1), (1, 2), (2, 3)]
    subs = spark.createDataFrame(subscriptions, f"{SUBS_SCHEMA.replace('long', 'long not null')}")
    links = spark.createDataFrame(edges, f"{EDGE_SCHEMA.replace('long', 'long not null')}")
    got = topic_connectivity(subs, links, 2)
    assert_df_equality(
        got,
        spark.createDataFrame([(0, 4, 3, 1, False), (1, 4, 3, 1, False)], TOPIC_SCHEMA),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def test_k_must_be_positive(spark):
    subs = spark.createDataFrame([(0, 0)], SUBS_SCHEMA)
    with pytest.raises(ValueError, match="at least 1"):
        topic_connectivity(subs, spark.createDataFrame([(0, 0)], EDGE_SCHEMA), 0)
