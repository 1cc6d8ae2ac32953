"""The batched Spark greedy against the pure-Python lazy greedy, edge by edge."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.candidates import BOUND, CandidateTable, between
from overlay.design.classes import ComponentClasses, Subscriptions
from overlay.design.eligibility import DegreePhases, Unlimited
from overlay.design.greedy import GreedyDesign, GreedyParams, GreedyStart
from overlay.design.pairs import SHARED, shared_topic_counts
from overlay.design.settle import Sample, outside_bound, settle
from tests.helpers import driver_copy, frame
from tests.instances import random_instance
from tests.oracles import check_greedy_sequence, greedy_oracle, relaxed_report, tco_support_oracle


def run_engine(spark, subscriptions, params, start=None):
    rounds = list(GreedyDesign(frame(spark, subscriptions), params, start=start).rounds())
    edges = [edge for r in rounds for edge in r.edges]
    return edges, rounds


def test_shared_topic_counts_match_set_intersections(spark):
    subscriptions = [(node, topic) for node, topic in random_instance("zipf", 40, 30, 2, 12, seed=5) if node != 7]
    topics = {}
    for node, topic in subscriptions:
        topics.setdefault(node, set()).add(topic)
    expected = {(u, v): len(topics[u] & topics[v]) for u in topics for v in topics if u < v and topics[u] & topics[v]}
    for partitions in (1, 3):  # node 7 has no subscriptions; node 41 none and is past the last
        got = shared_topic_counts(spark, driver_copy(subscriptions, 42), partitions)
        assert got.rdd.getNumPartitions() == partitions
        assert {(r[S.U], r[S.V]): r["shared"] for r in got.collect()} == expected


def classes_of(subscriptions) -> ComponentClasses:
    return ComponentClasses(driver_copy(subscriptions))


def sample_of(rows, tails=(), first_left=None) -> Sample:
    """A hand-made sample: rows (u, v, gain); tails (node, (gain, u, v))."""
    column = lambda i, items: np.array([item[i] for item in items], dtype=np.int64)  # noqa: E731
    keys = [key for _, key in tails]
    return Sample.build(
        column(0, rows),
        column(1, rows),
        column(2, rows),
        column(0, tails),
        column(0, keys),
        column(1, keys),
        column(2, keys),
        first_left,
    )


# Topic 0: nodes 0-3; topic 1: nodes 0, 1, 4; topic 2: nodes 2, 3, 4.
TOY = [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1), (4, 1), (2, 2), (3, 2), (4, 2)]


def test_a_round_over_open_nodes_reads_the_rows_between_them_in_table_order(spark):
    rows = [(0, 1, 3), (0, 2, 1), (1, 2, 2), (1, 3, 5), (2, 3, 4), (3, 4, 1)]
    table = spark.createDataFrame(rows, f"{S.U} long, {S.V} long, {BOUND} long").repartition(1)
    kept = between(table, np.array([1, 2, 3]))
    expected = spark.createDataFrame([r for r in rows if {r[0], r[1]} <= {1, 2, 3}], table.schema)
    assert_df_equality(kept, expected)  # same columns, rows and order
    assert kept.rdd.getNumPartitions() == 1


def test_a_phase_subset_gives_the_samples_of_the_whole_table(spark):
    """Rounds over shrinking open nodes read a phase subset (made at half the nodes, then again
    at half of its nodes) and sample exactly what the whole table gives; a full pass drops it."""
    subscriptions = Subscriptions.from_pairs(
        50, np.array(random_instance("zipf", 50, 12, 2, 6, seed=5), dtype=np.int64)
    )
    counts = shared_topic_counts(spark, subscriptions, partitions=4).select(S.U, S.V, F.col(SHARED).alias(BOUND))
    with_subsets, whole = CandidateTable(counts, subset_min_rows=0), CandidateTable(counts, subset_min_rows=10**9)
    static = spark.sparkContext.broadcast(subscriptions)
    root = spark.sparkContext.broadcast(ComponentClasses(subscriptions).snapshot())
    rule = DegreePhases(50)
    read, subsets = [], set()
    for open_count in (None, 40, 25, 20, 12, 5, None):
        opened = None if open_count is None else np.arange(50 - open_count, 50)
        rule.degrees[:] = 0 if opened is None else 1
        if opened is not None:
            rule.degrees[opened] = 0
        samples = [table.sample(static, root, rule.row_filter(), 50, 2, 3, opened) for table in (with_subsets, whole)]
        for name in ("us", "vs", "gains", "tail_nodes", "tail_keys", "first_left"):
            assert np.array_equal(getattr(samples[0], name), getattr(samples[1], name)), (open_count, name)
        assert with_subsets.last_read == whole.last_read
        read.append(with_subsets.last_from_subset)
        subsets.add(with_subsets.subset)
        cached = [frame for frame in subsets - {None} if frame.storageLevel.useMemory]
        assert cached == ([with_subsets.subset] if with_subsets.subset is not None else [])  # old ones released
    assert read == [False, False, True, True, True, True, False]  # made at 25 (of 50), 12 and 5
    assert len(subsets - {None}) == 3


def test_rounds_read_the_table_in_as_many_partitions_as_task_slots(spark):
    subscriptions = Subscriptions.from_pairs(
        40, np.array(random_instance("zipf", 40, 12, 2, 6, seed=6), dtype=np.int64)
    )
    counts = shared_topic_counts(spark, subscriptions, partitions=5).select(S.U, S.V, F.col(SHARED).alias(BOUND))
    coalesced, as_counted = CandidateTable(counts, task_slots=2), CandidateTable(counts)
    assert (coalesced.partitions, as_counted.partitions) == (2, 5)
    assert coalesced.rows == counts.count() and as_counted.rows is None  # counted only to size the partitions
    static = spark.sparkContext.broadcast(subscriptions)
    root = spark.sparkContext.broadcast(ComponentClasses(subscriptions).snapshot())
    rule = DegreePhases(40)
    first, second = (table.sample(static, root, rule.row_filter(), 40, 1, 4) for table in (coalesced, as_counted))
    for name in ("us", "vs", "gains", "tail_nodes", "tail_keys", "first_left"):
        assert np.array_equal(getattr(first, name), getattr(second, name)), name


def test_settle_adds_only_links_that_beat_the_outside_bound():
    # (0, 1) gains 2 and beats the bound (1, 0, 3); (2, 3) also gains 2 and is next in key order;
    # then (0, 4) has gain 1 but ranks after the bound (a tie on gain, and (0, 4) > (0, 3)).
    sample = sample_of([(0, 1, 2), (2, 3, 2), (0, 4, 1)], tails=[(5, (1, 0, 3)), (6, (1, 0, 3))], first_left=(1, 0, 3))
    settled = settle(sample, classes_of(TOY), Unlimited())
    assert settled.accepted == [(0, 1, 2), (2, 3, 2)]
    assert settled.stopped_by_outside and not settled.exhausted


def test_settle_recomputes_stale_gains_before_adding():
    # After (0, 1) and (2, 3), topic 0 has two components: (0, 3) joins them (gain 1, still), and
    # then (1, 2), sampled with gain 1, has gain 0.
    sample = sample_of([(0, 1, 2), (2, 3, 2), (0, 3, 1), (1, 2, 1)])
    settled = settle(sample, classes_of(TOY), Unlimited())
    assert settled.accepted == [(0, 1, 2), (2, 3, 2), (0, 3, 1)]
    assert settled.reevaluations >= 2 and settled.exhausted


def test_a_full_node_no_longer_bounds_the_rest():
    """Per-node tails: once the nodes with high tails are full (a matching phase), the bound falls
    to the next live nodes' tails and the round goes on."""
    tails = [(0, (2, 0, 4)), (1, (2, 1, 4)), (2, (1, 2, 4)), (3, (1, 3, 4))]
    sample = sample_of([(0, 1, 2), (2, 3, 2)], tails=tails, first_left=(2, 0, 4))
    rule = DegreePhases(5, max_degree=1)
    assert outside_bound(sample, rule) == (2, 1, 4)  # the second best live tail
    settled = settle(sample, classes_of(TOY), rule)
    # (0, 1) beats (2, 1, 4); then 0 and 1 are full, the bound is (1, 3, 4) and (2, 3) beats it.
    assert settled.accepted == [(0, 1, 2), (2, 3, 2)]
    assert settled.exhausted  # fewer than two live nodes are left with candidates outside


def test_relaxed_settling_goes_within_epsilon_of_the_bound():
    sample = sample_of([(0, 1, 2), (2, 3, 2), (0, 4, 1)], tails=[(5, (3, 5, 6)), (6, (3, 5, 6))], first_left=(3, 5, 6))
    exact = settle(sample, classes_of(TOY), Unlimited())
    relaxed = settle(sample, classes_of(TOY), Unlimited(), epsilon=0.5)
    assert exact.accepted == [] and exact.stopped_by_outside  # something outside may gain 3
    assert relaxed.accepted == [(0, 1, 2), (2, 3, 2)]  # 2 * 1.5 >= 3, then 1 * 1.5 < 3


CASES = [
    ("unif", 24, 10, 1, 4, 1),
    ("zipf", 30, 20, 2, 6, 2),
    ("expo", 30, 20, 1, 5, 3),
]


ALGORITHMS = (("gm", {}), ("gpa", {"max_edges": 7}), ("minmaxoda", {}), ("gpm", {"max_degree": 2}))


# Every case in both regimes; the default run takes the rounds regime on the first case only
# (the memory regime alone, without Spark, on many more: tests/test_memory_greedy.py).
@pytest.mark.parametrize(
    "dist,nodes,topics,low,high,seed,regime",
    [
        pytest.param(*case, regime, marks=pytest.mark.slow if regime == "rounds" and i > 0 else ())
        for i, case in enumerate(CASES)
        for regime in ("memory", "rounds")
    ],
)
def test_greedy_algorithms_match_the_oracle(spark, dist, nodes, topics, low, high, seed, regime):
    """Both regimes give the canonical sequence (so each other's), link by link, gains included."""
    subscriptions = random_instance(dist, nodes, topics, low, high, seed)
    counts = shared_topic_counts(spark, driver_copy(subscriptions), partitions=3).localCheckpoint()
    for algorithm, budget in ALGORITHMS:
        params = GreedyParams(algorithm, regime=regime, **budget)
        design = GreedyDesign(frame(spark, subscriptions), params, shared_counts=counts)
        rounds = list(design.rounds())
        edges = [edge for r in rounds for edge in r.edges]
        expected = greedy_oracle(subscriptions, algorithm, **budget)
        assert edges == expected, algorithm
        check_greedy_sequence(subscriptions, [e[:2] for e in edges], algorithm, **budget)
        assert [r.round for r in rounds] == list(range(1, len(rounds) + 1))
        assert {r.regime for r in rounds} <= {regime}


# The default run takes one phased and one unphased case (15-20 s each); the rest are slow.
# These re-read the table each round (keep_rows=False): the path a round takes when its
# partitions' kept rows are missing.
@pytest.mark.parametrize(
    "algorithm,budget,open_read_share",
    [
        pytest.param(algorithm, budget, 0.9, marks=() if algorithm == "gpm" else pytest.mark.slow)
        for algorithm, budget in ALGORITHMS
    ]
    + [("minmaxoda", {}, 0.0), pytest.param("gpm", {"max_degree": 2}, 0.0, marks=pytest.mark.slow)],
)
def test_samples_much_smaller_than_the_table_stay_exact(spark, algorithm, budget, open_read_share):
    """One best row per partition and one per node: nearly every round ends on the outside bound
    (ties included: unif gives many equal gains), bounds computed at a round's start go stale
    within it, phases fill up (rounds read only the open nodes' rows), and the table is compacted
    as pairs die (phased rules: with every round reading every row, since a round that reads the
    open nodes' rows never compacts)."""
    subscriptions = random_instance("unif", 60, 10, 2, 4, seed=21)
    params = GreedyParams(
        algorithm,
        batch_size=1,
        per_node=1,
        partitions=3,
        open_read_share=open_read_share,
        regime="rounds",
        keep_rows=False,
        **budget,
    )
    rounds = list(GreedyDesign(frame(spark, subscriptions), params).rounds())
    edges = [edge for r in rounds for edge in r.edges]
    assert edges == greedy_oracle(subscriptions, algorithm, **budget)
    assert sum(r.candidates for r in rounds) < len(rounds) * rounds[0].candidate_rows / 2
    narrowed = [r.open_nodes for r in rounds if r.open_nodes is not None]
    if open_read_share == 0:
        assert not narrowed
    elif algorithm != "gpa":  # GPA stops early; GM narrows to the nodes that still have rows
        assert narrowed and max(narrowed) <= 0.9 * 60, "no round read only the open nodes' rows"
        assert all(r.rows_read < rounds[0].rows_read for r in rounds if r.open_nodes is not None)
    if algorithm == "gm" or open_read_share == 0:
        assert rounds[-1].candidate_rows < rounds[0].candidate_rows  # compacted on the way


@pytest.mark.parametrize(
    "algorithm,budget",
    [
        pytest.param(algorithm, budget, marks=() if algorithm in ("gpm", "gm") else pytest.mark.slow)
        for algorithm, budget in ALGORITHMS
    ],
)
def test_kept_rows_give_the_same_sequence_computing_few_gains(spark, caplog, algorithm, budget):
    """Partitions keep their rows between rounds (`overlay.design.round_state`) and compute only
    the gains that can change their sample (`overlay.design.lazy_round`); one-row samples, ties
    and stale bounds as above. One partition's files removed mid-run: that round reads the table
    again and the run stays exact."""
    subscriptions = random_instance("unif", 60, 10, 2, 4, seed=21)
    params = GreedyParams(algorithm, batch_size=1, per_node=1, partitions=3, regime="rounds", **budget)
    engine = GreedyDesign(frame(spark, subscriptions), params).engine()
    rounds = []
    caplog.set_level(logging.INFO, logger="overlay.design.candidates")
    for r in engine.rounds():
        rounds.append(r)
        state = engine.table.state
        if len(rounds) == 2:
            state.drop(1)
    edges = [edge for r in rounds for edge in r.edges]
    assert edges == greedy_oracle(subscriptions, algorithm, **budget)
    pairs = rounds[0].candidate_rows
    assert sum(r.rows_read for r in rounds[1:]) <= (len(rounds) - 1) * pairs / 4, "rounds computed most gains"
    assert not os.path.exists(os.path.join(state.base(), state.token))  # removed at the end
    assert len(rounds) > 2 or algorithm == "gpa"
    assert ("partitions [1] kept no rows" in caplog.text) == (len(rounds) > 2)


@pytest.mark.parametrize(
    "algorithm,budget",
    (  # the default run takes GPM (10-22 s each); the rest are slow
        pytest.param("gm", {}, marks=pytest.mark.slow),
        pytest.param("gpa", {"max_edges": 30}, marks=pytest.mark.slow),
        pytest.param("minmaxoda", {}, marks=pytest.mark.slow),
        ("gpm", {"max_degree": 3}),
    ),
)
def test_the_relaxed_mode_is_a_valid_greedy_in_fewer_rounds(spark, algorithm, budget):
    """Relaxed rounds add links within (1 + epsilon) of the bound: every gain is exact when added,
    the run stops where the algorithm stops, and it stays close to the exact overlay."""
    subscriptions = random_instance("zipf", 40, 24, 2, 7, seed=8)
    exact = list(
        GreedyDesign(
            frame(spark, subscriptions),
            GreedyParams(algorithm, batch_size=2, per_node=1, regime="rounds", **budget),
        ).rounds()
    )
    relaxed = list(
        GreedyDesign(
            frame(spark, subscriptions),
            GreedyParams(algorithm, batch_size=2, per_node=1, mode="relaxed", epsilon=1.0, **budget),
        ).rounds()
    )
    links = [edge for r in relaxed for edge in r.edges]
    report = relaxed_report(subscriptions, links, algorithm, **budget)
    assert report["first_divergence"] is not None and 0 < report["below_best"] < 1
    assert len(relaxed) < len(exact)
    exact_support = tco_support_oracle(subscriptions, [e[:2] for r in exact for e in r.edges])[3]
    relaxed_support = tco_support_oracle(subscriptions, [e[:2] for e in links])[3]
    assert abs(relaxed_support - exact_support) <= 0.1
    # The sample is taken as if the table were one partition: the same run on another layout.
    one_partition = GreedyParams(
        algorithm, batch_size=2, per_node=1, mode="relaxed", epsilon=1.0, partitions=1, **budget
    )
    assert [e for r in GreedyDesign(frame(spark, subscriptions), one_partition).rounds() for e in r.edges] == links


def facebook_sample(size: int) -> list:
    """Subscriptions of a BFS sample of the Facebook graph: each user is a topic, friends subscribe."""
    from collections import deque

    from tests.helpers import FACEBOOK, read_edges

    friends = {}
    for a, b in read_edges(FACEBOOK):
        friends.setdefault(a, set()).add(b)
        friends.setdefault(b, set()).add(a)
    seen, queue = [0], deque([0])
    while queue and len(seen) < size:
        for friend in sorted(friends[queue.popleft()]):
            if friend not in seen and len(seen) < size:
                seen.append(friend)
                queue.append(friend)
    dense = {user: i for i, user in enumerate(sorted(seen))}
    return sorted((dense[a], dense[b]) for a in seen for b in friends[a] if b in dense)


@pytest.mark.slow
def test_facebook_sample_matches_the_oracle(spark):
    subscriptions = facebook_sample(60)
    for algorithm, budget in (("gpm", {"max_degree": 3}), ("gpa", {"max_edges": 25})):
        edges, _ = run_engine(spark, subscriptions, GreedyParams(algorithm, batch_size=64, regime="rounds", **budget))
        assert edges == greedy_oracle(subscriptions, algorithm, **budget)
        check_greedy_sequence(subscriptions, [e[:2] for e in edges], algorithm, **budget)


@pytest.mark.slow
def test_a_resumed_engine_continues_the_same_sequence(spark):
    subscriptions = random_instance("expo", 30, 20, 1, 5, seed=4)
    params = GreedyParams("gpm", max_degree=3, batch_size=2, per_node=1, regime="rounds")
    edges, rounds = run_engine(spark, subscriptions, params)
    done = rounds[1]
    prefix = [e for r in rounds[:2] for e in r.edges]
    start = GreedyStart(
        edges=spark.createDataFrame([(u, v) for u, v, _ in prefix], f"{S.U} long, {S.V} long"),
        rounds_done=done.round,
        phase=done.next_phase,
    )
    rest, _ = run_engine(spark, subscriptions, params, start=start)
    assert prefix + rest == edges == greedy_oracle(subscriptions, "gpm", max_degree=3)


@pytest.mark.parametrize("seed", range(12))
def test_the_oracle_passes_the_brute_force_replay(seed):
    """The oracle itself against the definition, on many small random instances (no Spark)."""
    dist = ("unif", "zipf", "expo")[seed % 3]
    subscriptions = random_instance(dist, 14, 9, 1, 4, seed=100 + seed)
    for algorithm, budget in (("gm", {}), ("gpa", {"max_edges": 5}), ("minmaxoda", {}), ("gpm", {"max_degree": 2})):
        edges = greedy_oracle(subscriptions, algorithm, **budget)
        check_greedy_sequence(subscriptions, [e[:2] for e in edges], algorithm, **budget)
