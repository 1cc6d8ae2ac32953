"""GraphFrames forms of overlay quality (`overlay.graph_ops`) against the DataFrame forms: node
degrees and topic diameters, row for row, on random graphs and on a Facebook sample."""

from __future__ import annotations

import random

import pytest
from chispa import assert_df_equality

from overlay import schema as S
from overlay.instance.social import SocialSpec, social_instance
from overlay.quality import node_degrees, topic_diameters
from tests.helpers import EDGE_SCHEMA, FACEBOOK, SUBS_SCHEMA, random_overlay
from tests.oracles import topic_diameters_oracle


def both_backends(compute):
    """The DataFrame and GraphFrames answers of `compute(backend)`, each checkpointed."""
    return [compute(backend).localCheckpoint(eager=True) for backend in ("dataframe", "graphframes")]


def same(frames):
    assert_df_equality(*frames, ignore_row_order=True, ignore_nullable=True)


@pytest.mark.slow  # about 28 s
def test_diameters_agree_with_each_other_and_the_oracle(spark, graphframes):
    rng = random.Random(7)
    subscriptions = sorted({(rng.randrange(14), min(rng.randrange(6), rng.randrange(6))) for _ in range(40)})
    path = list(range(14))
    rng.shuffle(path)  # a long path makes long diameters; random links add shortcuts
    edges = sorted({tuple(sorted(p)) for p in zip(path, path[1:])} | set(random_overlay(rng, 14, 4)))
    subs, links = spark.createDataFrame(subscriptions, SUBS_SCHEMA), spark.createDataFrame(edges, EDGE_SCHEMA)
    # Topics of more than 5 subscribers take 2 sampled sources, which both backends must share.
    dataframe, pregel = both_backends(lambda backend: topic_diameters(subs, links, 5, 2, seed=3, backend=backend))
    same([dataframe, pregel])
    expected = topic_diameters_oracle(subscriptions, edges)
    rows = pregel.collect()
    assert (
        {r[S.TOPIC_ID] for r in rows} == set(expected)
        and any(r["exact"] for r in rows)
        and not all(r["exact"] for r in rows)
    )
    for r in rows:
        assert r["diameter"] == expected[r[S.TOPIC_ID]] if r["exact"] else r["diameter"] <= expected[r[S.TOPIC_ID]]


@pytest.mark.slow  # a Facebook sample on both backends, about 20 s
def test_both_backends_agree_on_a_facebook_sample(spark, graphframes):
    """A 60-node BFS sample of the shipped Facebook graph, 150 random links and a self-loop
    (which counts twice in a degree)."""
    frames = social_instance(spark, SocialSpec(path=str(FACEBOOK), directed=False, sample_bfs=60, seed=4))
    subscriptions = frames.subscriptions.select(S.NODE_ID, S.TOPIC_ID).localCheckpoint(eager=True)
    links = spark.createDataFrame(random_overlay(random.Random(4), 60, 150) + [(3, 3)], EDGE_SCHEMA)
    same(both_backends(lambda backend: node_degrees(links, backend)))
    diameters = both_backends(lambda backend: topic_diameters(subscriptions, links, 12, 4, backend=backend))
    same(diameters)
    assert not diameters[0].filter("exact").isEmpty() and not diameters[0].filter("not exact").isEmpty()


def test_auto_is_the_faster_backend(spark):
    """As measured by benchmarks/backends.py: DataFrame degrees and diameters; an explicit
    backend is always honoured."""
    from overlay import quality
    from overlay.graph_ops import pick_backend

    assert pick_backend(spark, "auto", quality.DEGREES_DEFAULT) == "dataframe"
    assert pick_backend(spark, "auto", quality.DIAMETERS_DEFAULT) == "dataframe"
    assert pick_backend(spark, "dataframe", "graphframes") == "dataframe"
