import numpy as np
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.synthetic import SyntheticSpec, draw_node_topics, log_weights, synthetic_instance


def reference_subscriptions(spec: SyntheticSpec) -> list[tuple[int, int]]:
    """The generator's definition, run node by node in plain Python."""
    logw = log_weights(spec.dist, spec.topics, spec.alpha, spec.expo_rate)
    return [(v, int(t)) for v in range(spec.nodes) for t in draw_node_topics(spec, v, logw)]


@pytest.mark.parametrize("dist", ["unif", "zipf", "expo"])
def test_generator_matches_its_definition(spark, dist):
    spec = SyntheticSpec(dist=dist, nodes=60, topics=40, min_subs=3, max_subs=12, seed=7)
    frames = synthetic_instance(spark, spec)
    expected = spark.createDataFrame(reference_subscriptions(spec), f"{S.NODE_ID} long, {S.TOPIC_ID} long")
    assert_df_equality(frames.subscriptions, expected, ignore_row_order=True, ignore_nullable=True)
    assert frames.tally.read == frames.tally.accepted == len(reference_subscriptions(spec))
    assert frames.node_keys.count() == 60 and frames.topic_keys.count() == 40


@pytest.mark.parametrize("dist", ["unif", "zipf", "expo"])
def test_sizes_and_distinct_topics(spark, dist):
    spec = SyntheticSpec(dist=dist, nodes=200, topics=100, min_subs=5, max_subs=9, seed=3)
    per_node = synthetic_instance(spark, spec).subscriptions.groupBy(S.NODE_ID).agg(
        F.count("*").alias("n"), F.countDistinct(S.TOPIC_ID).alias("d")
    )
    stats = per_node.agg(F.min("n"), F.max("n"), F.count("*"), F.sum(F.col("n") - F.col("d"))).first()
    assert stats[0] >= 5 and stats[1] <= 9 and stats[2] == 200 and stats[3] == 0


def test_popularity_shapes(spark):
    def subscribers_of_first_and_last_quarter(dist):
        spec = SyntheticSpec(dist=dist, nodes=400, topics=100, min_subs=10, max_subs=10, seed=11)
        counts = synthetic_instance(spark, spec).subscriptions.groupBy(S.TOPIC_ID).count()
        head = counts.filter(F.col(S.TOPIC_ID) < 25).agg(F.sum("count")).first()[0] or 0
        tail = counts.filter(F.col(S.TOPIC_ID) >= 75).agg(F.sum("count")).first()[0] or 0
        return head, tail

    unif_head, unif_tail = subscribers_of_first_and_last_quarter("unif")
    zipf_head, zipf_tail = subscribers_of_first_and_last_quarter("zipf")
    expo_head, expo_tail = subscribers_of_first_and_last_quarter("expo")
    assert 0.7 < unif_head / unif_tail < 1.4
    assert zipf_head > 5 * max(zipf_tail, 1)
    assert expo_head > 5 * max(expo_tail, 1)


def test_same_seed_same_instance_other_seed_differs(spark):
    spec = SyntheticSpec(dist="zipf", nodes=50, topics=30, min_subs=2, max_subs=6, seed=5)
    first = synthetic_instance(spark, spec).subscriptions
    again = synthetic_instance(spark, spec).subscriptions
    assert_df_equality(first, again, ignore_row_order=True)
    other = synthetic_instance(spark, SyntheticSpec(**{**spec.__dict__, "seed": 6})).subscriptions
    assert first.exceptAll(other).count() > 0


def test_zipf_weights_are_the_documented_ones():
    assert np.allclose(np.exp(log_weights("zipf", 3, 2.0, 10.0)), [1.0, 1 / 4, 1 / 9])
    assert np.allclose(np.exp(log_weights("expo", 4, 2.0, 10.0)), np.exp(-10.0 * np.arange(4) / 4))
    assert np.allclose(log_weights("unif", 5, 2.0, 10.0), 0.0)


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"nodes": 0}, "--nodes must be a positive integer, got 0"),
        ({"topics": -3}, "--topics must be a positive integer, got -3"),
        ({"min_subs": 0}, "--min-subs must be a positive integer"),
        ({"min_subs": 9, "max_subs": 4}, "--min-subs (9) is larger than --max-subs (4)"),
        ({"max_subs": 50}, "--max-subs (50) exceeds --topics (30)"),
        ({"alpha": 0.0}, "--alpha must be a positive number"),
        ({"seed": -1}, "--seed must be zero or positive"),
    ],
    ids=["zero-nodes", "negative-topics", "zero-min", "min-above-max", "max-above-topics", "zero-alpha", "negative-seed"],
)
def test_bad_sizes_are_clear_errors(spark, change, fragment):
    spec = SyntheticSpec(**{**dict(dist="zipf", nodes=10, topics=30, min_subs=2, max_subs=5, seed=1), **change})
    with pytest.raises(InputError) as error:
        synthetic_instance(spark, spec)
    assert fragment in str(error.value)
