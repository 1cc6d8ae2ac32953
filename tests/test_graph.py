import random

import pytest
from chispa import assert_df_equality

from overlay import graph
from overlay.graph import (
    COMPONENT,
    ID,
    connected_components,
    propagated_components,
    resolve_backend,
)
from tests.oracles import components_by_min


def frames(spark, vertices, edges):
    return (
        spark.createDataFrame([(v,) for v in vertices], f"{ID} long"),
        spark.createDataFrame(edges, "src long, dst long"),
    )


# "propagation": GraphFrames told the vertex count (label propagation first, on these small graphs).
BACKENDS = ["dataframe", "graphframes", "propagation"]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    if request.param != "dataframe":
        request.getfixturevalue("graphframes")
    return request.param


def components(vertices, edges, backend: str):
    if backend == "propagation":
        return connected_components(vertices, edges, backend="graphframes", vertex_count=vertices.count())
    return connected_components(vertices, edges, backend=backend)


def test_hand_made_graph(spark, backend):
    # A path 5-3-9, a triangle 2-7-4 with a repeated edge and a self-loop, and a lone vertex 8.
    vertices, edges = frames(spark, [2, 3, 4, 5, 7, 8, 9], [(5, 3), (3, 9), (2, 7), (7, 4), (4, 2), (2, 7), (4, 4)])
    expected = spark.createDataFrame(
        [(5, 3), (3, 3), (9, 3), (2, 2), (7, 2), (4, 2), (8, 8)], f"{ID} long, {COMPONENT} long"
    )
    assert_df_equality(
        components(vertices, edges, backend),
        expected,
        ignore_row_order=True,
        ignore_nullable=True,
    )


@pytest.mark.parametrize("trial, n", [(0, 30), (1, 80), (2, 150)])
def test_matches_union_find_on_random_graphs(spark, backend, trial, n):
    rng = random.Random(trial)
    ids = rng.sample(range(10**6), n)  # sparse, unordered ids
    edges = [(rng.choice(ids), rng.choice(ids)) for _ in range(rng.randrange(n // 2, 2 * n))]
    # A long path too: the worst case for label propagation, fine for large/small star.
    path = sorted(ids)[: n // 3]
    rng.shuffle(path)
    edges += list(zip(path, path[1:]))
    vertices, edge_frame = frames(spark, ids, edges)
    got = {r[ID]: r[COMPONENT] for r in components(vertices, edge_frame, backend).collect()}
    assert got == components_by_min(ids, edges)


@pytest.mark.parametrize("length", [3, 12])
def test_label_propagation_settles_or_gives_way_to_the_two_phase_run(spark, graphframes, monkeypatch, length):
    """A path with its smallest vertex at one end (its label travels a hop a superstep), beside a
    triangle and a lone vertex, with 4 supersteps allowed: propagation settles on the short path,
    not on the long one, and `connected_components` told the vertex count is right either way."""
    monkeypatch.setattr(graph, "PROPAGATION_SUPERSTEPS", 4)
    path = list(range(100, 100 + length))
    edges = list(zip(path, path[1:])) + [(7, 8), (8, 9), (9, 7)]
    ids = path + [7, 8, 9, 40]
    vertices, edge_frame = frames(spark, ids, edges)
    expected = components_by_min(ids, edges)
    propagated = propagated_components(vertices, edge_frame, supersteps=4)
    if length <= 4:
        assert propagated is not None and {r[ID]: r[COMPONENT] for r in propagated.collect()} == expected
    else:
        assert propagated is None
    got = connected_components(vertices, edge_frame, backend="graphframes", vertex_count=len(ids))
    assert {r[ID]: r[COMPONENT] for r in got.collect()} == expected


def test_auto_backend_without_the_graphframes_jar(spark):
    assert resolve_backend(spark, "auto") in ("graphframes", "dataframe")
    if resolve_backend(spark, "auto") == "dataframe":
        with pytest.raises(RuntimeError, match="GraphFrames jar is not loaded"):
            resolve_backend(spark, "graphframes")


@pytest.mark.slow  # a Facebook sample on both backends, about 20 s
def test_both_backends_label_a_facebook_sample_topic_graph_alike(spark, graphframes):
    """The (topic, node) graph of a BFS sample of the shipped Facebook graph under a random
    overlay: many components of every size, real degree skew."""
    from overlay import schema as S
    from overlay.instance.social import SocialSpec, social_instance
    from overlay.quality import topic_graph
    from tests.helpers import FACEBOOK

    frames = social_instance(spark, SocialSpec(path=str(FACEBOOK), directed=False, sample_bfs=80, seed=2))
    subscriptions = frames.subscriptions.select(S.NODE_ID, S.TOPIC_ID).localCheckpoint(eager=True)
    rng = random.Random(2)
    links = spark.createDataFrame(
        [(rng.randrange(80), rng.randrange(80)) for _ in range(160)], f"{S.U} long, {S.V} long"
    )
    vertices, edges = topic_graph(subscriptions, links)
    dataframe = connected_components(vertices, edges, backend="dataframe").localCheckpoint(eager=True)
    graphframes_labels = connected_components(vertices, edges, backend="graphframes")
    assert dataframe.select(COMPONENT).distinct().count() > 10
    assert_df_equality(graphframes_labels, dataframe, ignore_row_order=True, ignore_nullable=True)
