import random

import numpy as np
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.instance.social import SocialSpec, social_instance
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance
from overlay.quality import summarise_degrees, summarise_tccs, topic_components, topic_diameters, topic_graph
from tests.helpers import EDGE_SCHEMA, FACEBOOK, SUBS_SCHEMA, random_overlay
from tests.oracles import tco_support_oracle, topic_components_oracle


def check_against_oracle(spark, subscriptions, edges):
    subs_frame = spark.createDataFrame(subscriptions, SUBS_SCHEMA)
    edge_frame = spark.createDataFrame(edges, EDGE_SCHEMA)
    components = topic_components(subs_frame, edge_frame).localCheckpoint()
    got = {(r[S.TOPIC_ID], r[S.NODE_ID]): r[S.COMPONENT] for r in components.collect()}
    assert got == topic_components_oracle(subscriptions, edges)
    summary = summarise_tccs(components)
    empty, tcc, complete, support = tco_support_oracle(subscriptions, edges)
    assert (summary.tcc_empty, summary.tcc, summary.tcc_complete) == (empty, tcc, complete)
    assert summary.tco_support == pytest.approx(support)
    return summary


@pytest.mark.parametrize(
    "dist", ["unif", pytest.param("zipf", marks=pytest.mark.slow), pytest.param("expo", marks=pytest.mark.slow)]
)
def test_tcc_matches_the_oracle_on_synthetic_instances(spark, dist):
    rng = random.Random(dist)
    spec = SyntheticSpec(dist=dist, nodes=40, topics=25, min_subs=1, max_subs=6, seed=len(dist))
    subscriptions = [(r[S.NODE_ID], r[S.TOPIC_ID]) for r in synthetic_instance(spark, spec).subscriptions.collect()]
    for count in (0, 40):
        check_against_oracle(spark, subscriptions, random_overlay(rng, 40, count))


@pytest.mark.slow  # the real-graph check; TCC counting is covered on synthetic instances
def test_tcc_matches_the_oracle_on_the_facebook_sample(spark):
    frames = social_instance(spark, SocialSpec(path=str(FACEBOOK), directed=False, sample_bfs=150, seed=2))
    subscriptions = [(r[S.NODE_ID], r[S.TOPIC_ID]) for r in frames.subscriptions.collect()]
    check_against_oracle(spark, subscriptions, random_overlay(random.Random(1), 150, 300))


@pytest.mark.slow  # an invariance check; the oracle tests pin the counts themselves
def test_relabelling_nodes_and_topics_changes_nothing(spark):
    rng = random.Random(3)
    subscriptions = sorted({(rng.randrange(30), rng.randrange(12)) for _ in range(120)})
    edges = random_overlay(rng, 30, 40)
    node_map = dict(zip(range(30), rng.sample(range(30), 30)))
    topic_map = dict(zip(range(12), rng.sample(range(12), 12)))
    relabelled_subs = [(node_map[n], topic_map[t]) for n, t in subscriptions]
    relabelled_edges = [tuple(sorted((node_map[u], node_map[v]))) for u, v in edges]
    first = check_against_oracle(spark, subscriptions, edges)
    second = check_against_oracle(spark, relabelled_subs, relabelled_edges)
    assert first == second


def test_topic_subgraph_construction_by_hand(spark):
    # Topic 0: nodes 0, 1, 2; topic 1: node 1 alone; node 3 subscribes to nothing.
    # Edge (0, 1) serves topic 0; edge (1, 3) shares no topic; edge (0, 2) serves topic 0.
    subs = spark.createDataFrame([(0, 0), (1, 0), (2, 0), (1, 1)], SUBS_SCHEMA)
    edges = spark.createDataFrame([(0, 1), (1, 3), (0, 2)], EDGE_SCHEMA)
    vertices, topic_edges = topic_graph(subs, edges)
    pack = lambda t, n: (t << 32) + n  # noqa: E731
    assert_df_equality(
        vertices,
        spark.createDataFrame(
            [(pack(0, 0), 0, 0), (pack(0, 1), 0, 1), (pack(0, 2), 0, 2), (pack(1, 1), 1, 1)],
            f"id long, {S.TOPIC_ID} long, {S.NODE_ID} long",
        ),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    assert_df_equality(
        topic_edges,
        spark.createDataFrame([(pack(0, 0), pack(0, 1)), (pack(0, 0), pack(0, 2))], "src long, dst long"),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    components = topic_components(subs, edges)
    assert_df_equality(
        components,
        spark.createDataFrame(
            [(0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 1, 1)], f"{S.TOPIC_ID} long, {S.NODE_ID} long, {S.COMPONENT} long"
        ),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    summary = summarise_tccs(components)
    assert (summary.tcc_empty, summary.tcc, summary.tcc_complete, summary.tco_support) == (4, 2, 2, 1.0)


def test_empty_overlay_has_zero_support_and_single_subscriber_topics_have_one(spark):
    subs = spark.createDataFrame([(0, 0), (1, 0), (2, 1)], SUBS_SCHEMA)
    none = spark.createDataFrame([], EDGE_SCHEMA)
    assert summarise_tccs(topic_components(subs, none)).tco_support == 0.0
    lonely = spark.createDataFrame([(0, 0), (1, 1)], SUBS_SCHEMA)
    assert summarise_tccs(topic_components(lonely, none)).tco_support == 1.0


def test_degrees_count_unlinked_nodes(spark):
    edges = spark.createDataFrame([(0, 1), (0, 2), (1, 2)], EDGE_SCHEMA)
    summary = summarise_degrees(edges, node_count=4)
    assert (summary.edges, summary.avg_degree, summary.min_degree, summary.max_degree) == (3, 1.5, 0, 2)
    assert summarise_degrees(edges.filter(F.lit(False)), node_count=4).max_degree == 0


def test_topic_diameters_exact_and_sampled(spark):
    from overlay.quality import summarise_diameters, topic_diameters
    from tests.oracles import topic_diameters_oracle

    rng = random.Random(6)
    subscriptions = sorted({(rng.randrange(15), rng.randrange(5)) for _ in range(45)})
    # A path through many nodes makes long diameters; random links add shortcuts.
    path = list(range(15))
    rng.shuffle(path)
    edges = sorted({tuple(sorted(p)) for p in zip(path, path[1:])} | set(random_overlay(rng, 15, 5)))
    subs = spark.createDataFrame(subscriptions, SUBS_SCHEMA)
    links = spark.createDataFrame(edges, EDGE_SCHEMA)
    expected = topic_diameters_oracle(subscriptions, edges)

    exact = {
        r[S.TOPIC_ID]: (r["diameter"], r["exact"]) for r in topic_diameters(subs, links, exact_limit=100).collect()
    }
    assert exact == {t: (d, True) for t, d in expected.items()}

    sampled = {
        r[S.TOPIC_ID]: (r["diameter"], r["exact"])
        for r in topic_diameters(subs, links, exact_limit=3, samples=2).collect()
    }
    assert set(sampled) == set(expected)
    for topic, (diameter, is_exact) in sampled.items():
        assert diameter <= expected[topic]  # a lower bound
        assert is_exact == (sum(1 for _, t in subscriptions if t == topic) <= 3)
    summary = summarise_diameters(topic_diameters(subs, links, exact_limit=100), 100, 8)
    assert summary.diameter_max == max(expected.values())
    assert summary.diameter_avg == pytest.approx(sum(expected.values()) / len(expected))
    assert summary.sampled_topics == 0 and "exact" in summary.method


@pytest.mark.parametrize("seed", range(4))
def test_topic_eccentricities_are_the_oracles_diameters(seed):
    """The per-partition BFS of `overlay.eccentricity` on packed rows, every subscriber a source."""
    from overlay.eccentricity import topic_eccentricities
    from tests.oracles import topic_diameters_oracle

    rng = random.Random(seed)
    subscriptions = sorted({(rng.randrange(20), rng.randrange(6)) for _ in range(70)})
    edges = random_overlay(rng, 20, 8 * seed) + [(1, 1)]  # seed 0: a lone self-loop, no path
    subscribers = {}
    for node, topic in subscriptions:
        subscribers.setdefault(topic, set()).add(node)
    bits = 8
    rows = [
        (topic << bits | u, topic << bits | v, True)
        for topic, nodes in subscribers.items()
        for u, v in edges
        if u in nodes and v in nodes
    ]
    rows += [(topic << bits | node, 0, False) for node, topic in subscriptions if len(subscribers[topic]) > 1]
    rng.shuffle(rows)
    src, dst, is_edge = (np.array(column) for column in zip(*rows))
    topics, diameters = topic_eccentricities(src, dst, is_edge.astype(bool), bits)
    assert dict(zip(topics.tolist(), diameters.tolist())) == topic_diameters_oracle(subscriptions, edges)


def test_driver_degree_summary_counts_like_the_dataframe_form():
    """Every link row counts at both ends, a self-loop twice; nodes without links make min 0."""
    from overlay.quality import DegreeSummary, degree_summary

    links = np.array([(0, 1), (1, 2), (2, 2)])
    assert degree_summary(links, 3) == DegreeSummary(edges=3, avg_degree=2.0, min_degree=1, max_degree=3)
    assert degree_summary(links, 4) == DegreeSummary(edges=3, avg_degree=1.5, min_degree=0, max_degree=3)
    assert degree_summary(np.zeros((0, 2)), 2) == DegreeSummary(edges=0, avg_degree=0.0, min_degree=0, max_degree=0)


def test_spark_xxhash64_as_spark_computes_it(spark):
    """The driver's copy of `xxhash64(int, long)` picks the same diameter sources as Spark's."""
    from overlay.eccentricity import spark_xxhash64_int_long

    values = [0, 1, 2, 7, 41, 1 << 31, (1 << 32) + 5, -1, -(1 << 62), (1 << 63) - 1]
    frame = spark.createDataFrame([(v,) for v in values], "x long")
    for seed in (0, 3, -2):
        expected = [r[0] for r in frame.select(F.xxhash64(F.lit(seed), F.col("x"))).collect()]
        assert spark_xxhash64_int_long(seed, np.array(values, dtype=np.int64)).tolist() == expected


@pytest.mark.parametrize("seed", range(2))
def test_diameters_in_memory_are_the_dataframe_forms(spark, seed):
    """The design job's driver diameters against `topic_diameters`: exact topics against the
    oracle, sampled ones (a lower bound that depends on the sources) against the Spark form."""
    from overlay.certified import topic_forest
    from overlay.design.classes import Subscriptions
    from overlay.eccentricity import diameters_in_memory
    from tests.oracles import topic_diameters_oracle

    rng = random.Random(seed)
    nodes = 30
    subscriptions = sorted({(rng.randrange(nodes), min(rng.randrange(5), rng.randrange(5))) for _ in range(90)})
    path = list(range(nodes))
    rng.shuffle(path)  # long paths: a sampled source set changes the lower bound
    edges = sorted({tuple(sorted(p)) for p in zip(path, path[1:])} | set(random_overlay(rng, nodes, 6)))
    forest = topic_forest(Subscriptions.from_pairs(nodes, np.array(subscriptions)), np.array(edges))
    subs, links = spark.createDataFrame(subscriptions, SUBS_SCHEMA), spark.createDataFrame(edges, EDGE_SCHEMA)
    expected = topic_diameters_oracle(subscriptions, edges)
    for exact_limit, samples in ((100, 8), (4, 2), (6, 1)):
        topics, diameters, exact = diameters_in_memory(
            forest.topics,
            forest.topic_offsets,
            forest.nodes,
            forest.link_offsets,
            forest.link_targets,
            exact_limit,
            samples,
            seed=seed,
        )
        got = dict(zip(topics.tolist(), zip(diameters.tolist(), exact.tolist())))
        spark_form = {
            r[S.TOPIC_ID]: (r["diameter"], r["exact"])
            for r in topic_diameters(subs, links, exact_limit, samples, seed=seed, backend="dataframe").collect()
        }
        assert got == spark_form
        assert all(d == expected[t] if e else d <= expected[t] for t, (d, e) in got.items())
    assert not all(e for _, e in got.values())
