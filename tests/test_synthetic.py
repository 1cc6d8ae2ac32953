import itertools
import math

import numpy as np
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance import synthetic as synthetic_module
from overlay.instance.synthetic import SyntheticSpec, log_weights, synthetic_instance


def stated_popularity(dist: str, topics: int, alpha: float = 2.0, expo_rate: float = 10.0) -> list[float]:
    """w(r) of rank r as the generator's docstring states it (docs/readings/icdcs16.md#workloads:
    Unif, Zipf with alpha = 2.0, Expo), in plain Python: the reference does not call the
    generator."""
    if dist == "unif":
        return [1.0] * topics
    if dist == "zipf":
        return [(r + 1) ** -alpha for r in range(topics)]
    return [math.exp(-expo_rate * r / topics) for r in range(topics)]


def inclusion_probabilities(weights: list[float], k: int) -> list[float]:
    """P(topic t is among k topics picked one at a time, each with probability proportional to
    its weight among those not picked yet): exact, a sum over every ordered k-sequence (for
    k = 1 it is w(t) / sum(w))."""
    included = [0.0] * len(weights)
    for sequence in itertools.permutations(range(len(weights)), k):
        probability, left = 1.0, sum(weights)
        for t in sequence:
            probability *= weights[t] / left
            left -= weights[t]
        for t in sequence:
            included[t] += probability
    return included


def bernstein_tolerance(trials: int, p: float, checks: int, false_alarm: float = 1e-6) -> float:
    """A bound a with P(|Binomial(trials, p) - trials * p| >= a) <= false_alarm / checks, from
    Bernstein's inequality, P(|X - EX| >= a) <= 2 exp(-a^2 / (2 var + 2a/3)) for a sum of
    independent 0/1 draws (var = trials p (1 - p)), solved for a. It needs no normal
    approximation, so it holds for the rare Expo/Zipf tail topics too; with the union bound a
    correct sampler fails any of the `checks` with probability at most `false_alarm`."""
    log_term = math.log(2 * checks / false_alarm)
    return log_term / 3 + math.sqrt(log_term**2 / 9 + 2 * trials * p * (1 - p) * log_term)


@pytest.mark.parametrize("dist", ["unif", "zipf", "expo"])
def test_drawn_topics_follow_the_stated_popularity(spark, dist):
    """The draw itself, against an independent reference: nodes are independent, so given the
    N_k nodes of size k, the number that include topic t is Binomial(N_k, pi_k(t)), pi_k from
    `inclusion_probabilities` on the stated weights; N_k is Binomial(N, 1/4) (sizes uniform in
    [1, 4]). Each count must lie within its Bernstein tolerance (about 6 standard deviations,
    e.g. +-270 of about 7,500 nodes for pi = 0.5; false alarms <= 1e-6 over all 44 checks).
    Reversing the popularity, scaling the Gumbel noise by 0.7 or 1.3, or ranking by w * U
    instead fails Zipf and Expo (by 3.6 to 420 times the tolerance; the correct draw uses at
    most 0.4 of it). The seed is fixed, so the outcome is too."""
    nodes, topics, sizes = 30_000, 10, range(1, 5)
    spec = SyntheticSpec(dist=dist, nodes=nodes, topics=topics, min_subs=1, max_subs=4, seed=7)
    frames = synthetic_instance(spark, spec)
    rows = frames.subscriptions.toPandas()  # about 75,000 rows, counted with pandas
    per_node = rows.groupby(S.NODE_ID)[S.TOPIC_ID].agg(["size", "nunique"])
    assert len(per_node) == nodes and (per_node["size"] == per_node["nunique"]).all()  # no repeats
    assert (per_node["size"].min(), per_node["size"].max()) == (1, 4)
    nodes_of_size = per_node["size"].value_counts().to_dict()
    counts = rows.assign(k=rows[S.NODE_ID].map(per_node["size"])).groupby(["k", S.TOPIC_ID]).size().to_dict()
    checks = len(sizes) * (topics + 1)
    off = []
    for k in sizes:
        expected_nodes = nodes / len(sizes)
        if abs(nodes_of_size[k] - expected_nodes) > bernstein_tolerance(nodes, 1 / len(sizes), checks):
            off.append(f"{nodes_of_size[k]} nodes of size {k}, expected about {expected_nodes:.0f}")
        included = inclusion_probabilities(stated_popularity(dist, topics), k)
        assert math.isclose(sum(included), k)  # the reference: k topics per node
        for t, p in enumerate(included):
            got, expected = counts.get((k, t), 0), nodes_of_size[k] * p
            if abs(got - expected) > bernstein_tolerance(nodes_of_size[k], p, checks):
                off.append(f"size {k}, topic {t}: {got} nodes, expected {expected:.1f}")
    assert not off, off
    assert frames.tally.read == frames.tally.accepted == len(rows)
    assert frames.node_keys.count() == nodes and frames.topic_keys.count() == topics


@pytest.mark.parametrize("dist", ["unif", "zipf", "expo"])
def test_sizes_and_distinct_topics(spark, dist):
    spec = SyntheticSpec(dist=dist, nodes=200, topics=100, min_subs=5, max_subs=9, seed=3)
    per_node = (
        synthetic_instance(spark, spec)
        .subscriptions.groupBy(S.NODE_ID)
        .agg(F.count("*").alias("n"), F.countDistinct(S.TOPIC_ID).alias("d"))
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


def test_same_seed_same_instance_other_seed_differs(spark, monkeypatch):
    spec = SyntheticSpec(dist="zipf", nodes=50, topics=30, min_subs=2, max_subs=6, seed=5)
    first = synthetic_instance(spark, spec).subscriptions
    monkeypatch.setattr(synthetic_module, "NODES_PER_TASK", 7)  # 8 tasks instead of 1: same rows
    again = synthetic_instance(spark, spec).subscriptions
    assert again.rdd.getNumPartitions() == 8
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
    ids=[
        "zero-nodes",
        "negative-topics",
        "zero-min",
        "min-above-max",
        "max-above-topics",
        "zero-alpha",
        "negative-seed",
    ],
)
def test_bad_sizes_are_clear_errors(spark, change, fragment):
    spec = SyntheticSpec(**{**dict(dist="zipf", nodes=10, topics=30, min_subs=2, max_subs=5, seed=1), **change})
    with pytest.raises(InputError) as error:
        synthetic_instance(spark, spec)
    assert fragment in str(error.value)
