import random

import pytest
from chispa import assert_df_equality

from overlay.graph import COMPONENT, ID, connected_components, resolve_backend
from tests.oracles import components_by_min


def frames(spark, vertices, edges):
    return (
        spark.createDataFrame([(v,) for v in vertices], f"{ID} long"),
        spark.createDataFrame(edges, "src long, dst long"),
    )


BACKENDS = ["dataframe", "graphframes"]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    if request.param == "graphframes":
        request.getfixturevalue("graphframes")
    return request.param


def test_hand_made_graph(spark, backend):
    # A path 5-3-9, a triangle 2-7-4 with a repeated edge and a self-loop, and a lone vertex 8.
    vertices, edges = frames(spark, [2, 3, 4, 5, 7, 8, 9], [(5, 3), (3, 9), (2, 7), (7, 4), (4, 2), (2, 7), (4, 4)])
    expected = spark.createDataFrame(
        [(5, 3), (3, 3), (9, 3), (2, 2), (7, 2), (4, 2), (8, 8)], f"{ID} long, {COMPONENT} long"
    )
    assert_df_equality(
        connected_components(vertices, edges, backend=backend), expected,
        ignore_row_order=True, ignore_nullable=True,
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
    got = {r[ID]: r[COMPONENT] for r in connected_components(vertices, edge_frame, backend=backend).collect()}
    assert got == components_by_min(ids, edges)


def test_auto_backend_without_the_graphframes_jar(spark):
    assert resolve_backend(spark, "auto") in ("graphframes", "dataframe")
    if resolve_backend(spark, "auto") == "dataframe":
        with pytest.raises(RuntimeError, match="GraphFrames jar is not loaded"):
            resolve_backend(spark, "graphframes")
