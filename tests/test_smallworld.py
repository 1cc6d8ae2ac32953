"""Small-world overlays: ring geometry, the Table 2 baselines, Property 1, and GSwicoS / GSwicoL
against the brute-force oracle."""

from __future__ import annotations

import random

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.frames import local_frame
from overlay.smallworld.baselines import chord_fingers, random_fingers, random_ring
from overlay.smallworld.fingers import property_1_violation, undirected_links
from overlay.smallworld.geometry import clockwise_column, phase_column, phase_count, phase_of
from overlay.smallworld.gswico import overlay_type, small_world_overlay
from tests import smallworld_oracle as oracle

RING_SCHEMA = f"{S.NODE_ID} long, {S.POSITION} long"


def test_phase_arithmetic_matches_the_definition(spark):
    for n in (2, 3, 4, 5, 8, 9, 100, 1024, 1025):
        assert phase_count(n) == oracle.phase_count(n)
    distances = list(range(1, 1100))
    assert [phase_of(d) for d in distances] == [oracle.phase_of(d) for d in distances]
    frame = spark.range(1, 1100).select(phase_column(F.col("id"), 1100).alias("p")).collect()
    assert [row["p"] for row in frame] == [oracle.phase_of(d) for d in distances]
    wrapped = spark.range(1).select(clockwise_column(F.lit(7), F.lit(2), 10).alias("d")).first()["d"]
    assert wrapped == 5


def _ring(spark, n, seed=3):
    nodes = spark.range(n).select(F.col("id").alias(S.NODE_ID))
    return random_ring(nodes, seed).localCheckpoint(eager=True)


@pytest.mark.parametrize("n", [2, 7, 16])
def test_chord_and_random_fingers_keep_property_1(spark, n):
    ring = _ring(spark, n)
    positions = {r[S.NODE_ID]: r[S.POSITION] for r in ring.collect()}
    assert sorted(positions.values()) == list(range(n))
    at = {p: node for node, p in positions.items()}
    chord = chord_fingers(ring, n)
    expected = [
        (node, i, at[(positions[node] + (1 << i)) % n]) for node in range(n) for i in range(oracle.phase_count(n))
    ]
    assert_df_equality(
        chord,
        local_frame(spark, expected, f"{S.NODE_ID} long, {S.PHASE} int, {S.FINGER} long"),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    assert property_1_violation(ring, chord, n) is None
    randoms = random_fingers(ring, n, seed=5)
    assert property_1_violation(ring, randoms, n) is None
    assert sorted(randoms.collect()) == sorted(random_fingers(ring, n, seed=5).collect())


def test_random_fingers_spread_over_their_phase(spark):
    n = 64
    ring = _ring(spark, n)
    positions = {r[S.NODE_ID]: r[S.POSITION] for r in ring.collect()}
    offsets = {
        (positions[r[S.FINGER]] - positions[r[S.NODE_ID]]) % n
        for r in random_fingers(ring, n, seed=9).filter(F.col(S.PHASE) == 5).collect()
    }
    assert len(offsets) > 10 and min(offsets) >= 32 and max(offsets) < 64


def test_property_1_violations_are_named(spark):
    n = 8
    ring = _ring(spark, n)
    chord = chord_fingers(ring, n).localCheckpoint(eager=True)
    missing = chord.filter(~((F.col(S.NODE_ID) == 3) & (F.col(S.PHASE) == 2)))
    assert property_1_violation(ring, missing, n) == "fingers: node 3 has 0 fingers in phase 2 (k = 3)"
    successor_of_3 = chord.filter((F.col(S.NODE_ID) == 3) & (F.col(S.PHASE) == 0)).first()[S.FINGER]
    moved = chord.withColumn(
        S.FINGER,
        F.when((F.col(S.NODE_ID) == 3) & (F.col(S.PHASE) == 2), F.lit(successor_of_3)).otherwise(F.col(S.FINGER)),
    )
    assert property_1_violation(ring, moved, n) == (
        f"fingers: node 3's phase-2 finger {successor_of_3} is at distance 1, outside its phase"
    )
    doubled = ring.withColumn(S.POSITION, F.when(F.col(S.NODE_ID) == 5, F.lit(0)).otherwise(F.col(S.POSITION)))
    assert property_1_violation(doubled, chord, n).startswith("ring: ")


def _random_subscriptions(rng, n, topics, per_node):
    return sorted({(node, rng.randrange(topics)) for node in range(n) for _ in range(rng.randint(0, per_node))})


@pytest.mark.parametrize(
    "trial,regime",
    [
        (0, "memory"),
        pytest.param(0, "rounds", marks=pytest.mark.slow),
        pytest.param(1, "rounds", marks=pytest.mark.slow),
    ],
)
def test_gswico_matches_the_oracle(spark, trial, regime):
    """Both regimes of the engine give the oracle's ring, fingers and links."""
    rng = random.Random(50 + trial)
    n = rng.randint(9, 18)
    subscriptions = _random_subscriptions(rng, n, topics=6, per_node=4)
    frame = local_frame(spark, subscriptions, f"{S.NODE_ID} long, {S.TOPIC_ID} long")
    size = rng.choice([1, 2, 50])
    overlay = small_world_overlay(frame, n, "gswico", "gswico", batch_size=size, per_node=size, regime=regime)
    positions, ring_links, forests = oracle.gswico_ring_oracle(subscriptions, n)
    slots, long_links = oracle.gswico_fingers_oracle(subscriptions, n, positions, ring_links, forests)

    assert {r[S.NODE_ID]: r[S.POSITION] for r in overlay.ring.collect()} == positions
    assert property_1_violation(overlay.ring, overlay.fingers, n) is None
    fingers = {(r[S.NODE_ID], r[S.PHASE]): r[S.FINGER] for r in overlay.fingers.filter(F.col(S.PHASE) > 0).collect()}
    assert fingers == slots
    links = overlay.links.orderBy(S.ADDED_ORDER).collect()
    greedy = [(r[S.U], r[S.V], r[S.GAIN]) for r in links[: len(ring_links) + len(long_links)]]
    assert greedy == ring_links + long_links
    assert [r[S.ADDED_ORDER] for r in links] == list(range(1, len(links) + 1))
    assert all(r[S.GAIN] in (0, None) for r in links[len(greedy) :])
    assert_df_equality(
        overlay.links.select(S.U, S.V),
        undirected_links(overlay.fingers),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def test_mixed_overlays_use_the_greedy_half_only(spark):
    rng = random.Random(7)
    n = 12
    subscriptions = _random_subscriptions(rng, n, topics=5, per_node=3)
    frame = local_frame(spark, subscriptions, f"{S.NODE_ID} long, {S.TOPIC_ID} long")
    short_only = small_world_overlay(frame, n, "gswico", "chord")
    positions, _, _ = oracle.gswico_ring_oracle(subscriptions, n)
    assert {r[S.NODE_ID]: r[S.POSITION] for r in short_only.ring.collect()} == positions
    assert {r[S.CHOSEN_BY] for r in short_only.fingers.filter(F.col(S.PHASE) > 0).collect()} == {"chord"}

    long_only = small_world_overlay(frame, n, "random", "gswico", seed=4)
    ring = {r[S.NODE_ID]: r[S.POSITION] for r in long_only.ring.collect()}
    ring_links = [
        (min(node, other), max(node, other))
        for node, p in ring.items()
        for other, q in ring.items()
        if (q - p) % n == 1
    ]
    slots, _ = oracle.gswico_fingers_oracle(subscriptions, n, ring, ring_links)
    fingers = {(r[S.NODE_ID], r[S.PHASE]): r[S.FINGER] for r in long_only.fingers.filter(F.col(S.PHASE) > 0).collect()}
    assert fingers == slots
    assert [
        overlay_type(s, lo)
        for s, lo in [("gswico", "gswico"), ("gswico", "chord"), ("random", "gswico"), ("random", "random")]
    ] == ["SL", "S", "L", "-"]
