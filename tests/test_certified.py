"""The certified topic components: the driver forest against the oracle, and a check that
rejects every kind of wrong forest."""

import random
from collections import Counter

import numpy as np
import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.certified import (
    DEPTH,
    PARENT,
    CertificateError,
    certified_components,
    certified_topic_components,
    forest_violations,
    topic_forest,
)
from overlay.design.classes import Subscriptions
from overlay.errors import InputError
from overlay.quality import DegreeSummary, TccSummary
from tests.helpers import EDGE_SCHEMA, SUBS_SCHEMA, random_overlay
from tests.oracles import tco_support_oracle, topic_components_oracle

FOREST_SCHEMA = f"{S.TOPIC_ID} long, {S.NODE_ID} long, {S.COMPONENT} long, {PARENT} long, {DEPTH} long"


def random_instance(seed, nodes=30, topics=12, rows=120, links=35):
    rng = random.Random(seed)
    subscriptions = sorted({(rng.randrange(nodes), rng.randrange(topics)) for _ in range(rows)})
    edges = random_overlay(rng, nodes, links)
    # Repeats, reversed pairs and self-loops are allowed in a stored overlay.
    edges += [(v, u) for u, v in edges[:3]] + [(u, u) for u, _ in edges[:1]]
    return subscriptions, edges


def frames(spark, subscriptions, edges):
    return spark.createDataFrame(subscriptions, SUBS_SCHEMA), spark.createDataFrame(edges, EDGE_SCHEMA)


@pytest.mark.parametrize("seed", range(3))
def test_certified_components_and_summaries_match_the_oracle(spark, seed):
    subscriptions, edges = random_instance(seed, links=10 * seed)
    subs, links = frames(spark, subscriptions, edges)
    # Odd seeds check with the links shuffled to the join, even seeds with them broadcast.
    proven = certified_components(spark, subs, links, nodes=32, broadcast_links=0 if seed % 2 else 10**6)
    got = {(r[S.TOPIC_ID], r[S.NODE_ID]): r[S.COMPONENT] for r in proven.components.collect()}
    assert got == topic_components_oracle(subscriptions, edges)
    empty, tcc, complete, support = tco_support_oracle(subscriptions, edges)
    topics = {topic for _, topic in subscriptions}
    connected = sum(len({c for (t, _), c in got.items() if t == topic}) == 1 for topic in topics)
    assert proven.tccs == TccSummary(empty, tcc, complete, complete, connected)
    assert proven.tccs.tco_support == support
    # Degrees over 32 nodes (30 can have links): every link row counts at both ends.
    degree = Counter(end for link in edges for end in link)
    assert proven.degrees == DegreeSummary(
        edges=len(edges), avg_degree=2 * len(edges) / 32, min_degree=0, max_degree=max(degree.values(), default=0)
    )


def test_the_forest_is_a_bfs_from_each_components_smallest_node():
    # Topic 0: path 4 - 2 - 7 and node 9 alone; topic 1: nodes 2 and 7, linked.
    driver = Subscriptions.from_pairs(10, np.array([(2, 0), (4, 0), (7, 0), (9, 0), (2, 1), (7, 1)]))
    forest = topic_forest(driver, np.array([(4, 2), (2, 7)]))
    rows = list(zip(forest.topics, forest.nodes, forest.component, forest.parent, forest.depth))
    assert rows == [
        (0, 2, 2, -1, 0),
        (0, 4, 2, 2, 1),
        (0, 7, 2, 2, 1),
        (0, 9, 9, -1, 0),
        (1, 2, 2, -1, 0),
        (1, 7, 2, 2, 1),
    ]


def good_forest(spark, subscriptions, edges):
    driver = Subscriptions.from_pairs(max(n for n, _ in subscriptions) + 1, np.array(subscriptions))
    table = topic_forest(driver, np.array(edges)).to_arrow()
    return [tuple(row.values()) for row in table.to_pylist()]


# A forest for topic 0 = {0, 1, 2}, links 0-1 and 1-2; topic 1 = {0, 2}, no link between them.
SMALL_SUBS = [(0, 0), (1, 0), (2, 0), (0, 1), (2, 1)]
SMALL_LINKS = [(0, 1), (1, 2)]
SMALL_FOREST = [(0, 0, 0, None, 0), (0, 1, 0, 0, 1), (0, 2, 0, 1, 2), (1, 0, 0, None, 0), (1, 2, 2, None, 0)]


def test_the_small_forest_is_what_the_driver_computes_and_passes(spark):
    assert good_forest(spark, SMALL_SUBS, SMALL_LINKS) == SMALL_FOREST
    subs, links = frames(spark, SMALL_SUBS, SMALL_LINKS)
    assert forest_violations(subs, links, spark.createDataFrame(SMALL_FOREST, FOREST_SCHEMA)) == {}


@pytest.mark.parametrize(
    ("forest", "rule"),
    [
        (SMALL_FOREST[:-1], "subscription without exactly one forest row"),
        (SMALL_FOREST + [SMALL_FOREST[-1]], "subscription without exactly one forest row"),
        (SMALL_FOREST + [(1, 1, 1, None, 0)], "forest row without a subscription"),
        # Two roots in one topic component: the link 1-2 joins them.
        ([*SMALL_FOREST[:2], (0, 2, 2, None, 0), *SMALL_FOREST[3:]], "link joining two components of a topic"),
        # Topic 1's two subscribers claimed connected, with no link 0-2.
        ([*SMALL_FOREST[:4], (1, 2, 0, 0, 1)], "tree edge not an overlay link"),
        # A label that is not the smallest node of its class.
        ([(0, 0, 1, 1, 1), (0, 1, 1, None, 0), (0, 2, 1, 1, 1), *SMALL_FOREST[3:]], "bad root, depth or component"),
        # A cycle 1 -> 2 -> 1 under the root 0, depths made up.
        (
            [SMALL_FOREST[0], (0, 1, 0, 2, 1), (0, 2, 0, 1, 2), *SMALL_FOREST[3:]],
            "parent not one level up in the component",
        ),
        ([SMALL_FOREST[0], (0, 1, 0, 5, 1), *SMALL_FOREST[2:]], "parent not a subscriber of the topic"),
        ([(0, 0, 0, None, 1), *SMALL_FOREST[1:]], "bad root, depth or component"),
    ],
)
def test_every_wrong_forest_is_caught(spark, forest, rule):
    subs, links = frames(spark, SMALL_SUBS, SMALL_LINKS)
    violations = forest_violations(subs, links, spark.createDataFrame(forest, FOREST_SCHEMA))
    assert rule in violations, violations


def test_a_lost_link_fails_the_certificate(spark, monkeypatch):
    """The driver reads the links once; the check reads them again from the frame."""
    subs, links = frames(spark, SMALL_SUBS, SMALL_LINKS)
    import overlay.certified as certified

    real = certified.forest_violations
    monkeypatch.setattr(
        certified, "forest_violations", lambda s, e, f, *more: real(s, e.filter(F.col(S.U) != 1), f, *more)
    )
    with pytest.raises(CertificateError, match="tree edge not an overlay link"):
        certified_topic_components(spark, subs, links)


def test_over_the_driver_cap_is_an_input_error(spark):
    subs, links = frames(spark, SMALL_SUBS, SMALL_LINKS)
    with pytest.raises(InputError):
        certified_topic_components(spark, subs, links, max_rows=6)
