"""Scribe as a GraphFrames Pregel (`routing.pregel`) against the DataFrame supersteps and the
message-level oracle: the same arrivals, and the same deliveries with the same hops."""

from __future__ import annotations

import random

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.frames import local_frame
from overlay.smallworld.gswico import small_world_overlay
from routing.network import AT, SUBS, build_network
from routing.outcome import summarise
from routing.pregel import simulate_on, simulate_pregel
from routing.simulate import simulate
from routing.trees import rendezvous
from routing.workload import publications
from tests import routing_oracle as oracle
from tests.test_routing import SUBSCRIPTION_SCHEMA, _instance, _python_network, coordinates_of


def placed_publications(frame, network, count, seed):
    """`count` publications (publisher as a ring position), plus one published by RP(t) itself
    when some topic's rendezvous node subscribes to it: its message starts in the tree."""
    placed = (
        publications(frame, count, seed=seed)
        .join(network.positions.withColumnRenamed(S.NODE_ID, S.PUBLISHER), on=S.PUBLISHER)
        .select(S.PUB_ID, S.TOPIC_ID, F.col(AT).alias(S.PUBLISHER))
    )
    at_root = network.topics.select(S.TOPIC_ID, SUBS, rendezvous(F.col(S.TOPIC_ID), network.n).alias(S.PUBLISHER))
    at_root = at_root.filter(F.array_contains(SUBS, F.col(S.PUBLISHER))).limit(1)
    return placed.unionByName(at_root.select(F.lit(count).cast("long").alias(S.PUB_ID), S.TOPIC_ID, S.PUBLISHER))


@pytest.mark.parametrize(
    "trial, long",
    [
        (0, "random"),
        pytest.param(1, "chord", marks=pytest.mark.slow),  # the same check on another overlay type
    ],
)
def test_pregel_scribe_delivers_as_the_supersteps_and_the_oracle(spark, graphframes, trial, long):
    rng = random.Random(40 + trial)
    n = rng.randint(14, 22)
    subscriptions = _instance(rng, n, topics=6, per_node=3)
    frame = local_frame(spark, subscriptions, SUBSCRIPTION_SCHEMA)
    overlay = small_world_overlay(frame, n, "random", long, seed=trial + 1)
    _, coordinates = coordinates_of(spark, n, seed=trial)
    network = build_network(overlay.ring, overlay.fingers, frame, n, coordinates)
    placed = placed_publications(frame, network, 16, seed=trial).localCheckpoint(eager=True)

    by_supersteps = simulate(network, placed, "scribe")
    by_pregel = simulate_pregel(network, placed, "scribe")
    assert_df_equality(by_pregel.arrivals, by_supersteps.arrivals, ignore_row_order=True, ignore_nullable=True)
    assert (by_pregel.supersteps, by_pregel.messages) == (by_supersteps.supersteps, by_supersteps.messages)
    pregel_outcome = summarise(by_pregel, network, placed)
    assert_df_equality(
        pregel_outcome.deliveries,
        summarise(by_supersteps, network, placed).deliveries,
        ignore_row_order=True,
        ignore_nullable=True,
    )
    assert pregel_outcome.counter_example is None

    position, fingers, subs = _python_network(overlay, subscriptions)
    node_at = {p: node for node, p in position.items()}
    expected = set()
    for row in placed.collect():
        routed = oracle.route_publication("scribe", fingers, subs, row[S.TOPIC_ID], row[S.PUBLISHER], n)
        expected |= {
            (row[S.PUB_ID], node_at[at], hops)
            for at, hops in routed.deliveries(subs[row[S.TOPIC_ID]], row[S.PUBLISHER])
        }
    assert {(r[S.PUB_ID], r[S.NODE_ID], r[S.HOPS]) for r in pregel_outcome.deliveries.collect()} == expected


def test_simulate_on_picks_a_backend_per_protocol(spark, graphframes):
    with pytest.raises(ValueError, match="no GraphFrames form of 'pie'"):
        simulate_on(None, spark.range(0), "pie", backend="graphframes")
