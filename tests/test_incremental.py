"""Day two, the library: which of yesterday's links an incremental design keeps
(`overlay.design.incremental`), and the greedy continued from them, link by link against the
oracles given the same start (both regimes, small batches, phases, edge and degree budgets, GM2)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from overlay import schema as S
from overlay.design.greedy import GreedyDesign, GreedyParams, GreedyStart, InstanceSize
from overlay.design.incremental import keep_links, open_topics, release_redundant
from overlay.design.warm import warm_up
from tests.helpers import driver_copy, frame
from tests.instances import random_instance
from tests.ktco_oracle import gm2_ref
from tests.oracles import components_by_min, greedy_oracle, keep_oracle, release_oracle, topic_components_oracle


def random_links(subscriptions, count, seed):
    """Links between random nodes, most sharing a topic, some not, a few repeated or reversed."""
    rng = random.Random(seed)
    nodes = sorted({n for n, _ in subscriptions})
    by_topic = {}
    for node, topic in subscriptions:
        by_topic.setdefault(topic, []).append(node)
    topics = [t for t, members in by_topic.items() if len(members) > 1]
    links = []
    for _ in range(count):
        if rng.random() < 0.8 and topics:
            u, v = rng.sample(by_topic[rng.choice(topics)], 2)
        else:
            u, v = rng.sample(nodes, 2)
        links.append((v, u) if rng.random() < 0.5 else (u, v))
    return links + links[: count // 10]


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("budget", [{}, {"max_degree": 2}, {"max_degree": 4}, {"max_edges": 25}])
def test_kept_links_match_the_definition(seed, budget):
    subscriptions = random_instance(("unif", "zipf", "expo")[seed % 3], 40, 15, 1, 5, seed)
    links = random_links(subscriptions, 70, seed)
    kept = keep_links(driver_copy(subscriptions), np.array(links), departed=3, **budget)
    expected, unshared, removed = keep_oracle(subscriptions, links, **budget)
    assert [tuple(link) for link in kept.links.tolist()] == expected
    assert (kept.departed, kept.unshared, kept.over_budget) == (3, unshared, removed)
    if "max_degree" in budget:
        assert np.bincount(kept.links.reshape(-1)).max(initial=0) <= budget["max_degree"]


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("budget", [{}, {"max_degree": 3}, {"max_degree": 5}, {"max_edges": 25}])
def test_redundant_links_where_the_budget_binds_go_and_no_topic_splits(seed, budget):
    subscriptions = random_instance(("unif", "zipf", "expo")[seed % 3], 30, 12, 1, 4, seed)
    links = random_links(subscriptions, 120, seed)  # dense: redundant links at full nodes
    kept = keep_links(driver_copy(subscriptions), np.array(links), departed=0, **budget)
    released = release_redundant(driver_copy(subscriptions), kept, **budget)
    before = [tuple(link) for link in kept.links.tolist()]
    expected, count = release_oracle(subscriptions, before, **budget)
    assert [tuple(link) for link in released.links.tolist()] == expected
    assert released.released == count and released.removed == kept.removed + count
    assert topic_components_oracle(subscriptions, expected) == topic_components_oracle(subscriptions, before)
    assert (count > 0) == bool(budget)  # these instances reach the release wherever a budget binds
    gone = set(before) - set(expected)
    if "max_degree" in budget:
        degree = np.bincount(np.array(before).reshape(-1))
        assert all(max(degree[u], degree[v]) >= budget["max_degree"] for u, v in gone)


def test_of_two_links_closing_a_cycle_at_a_full_node_the_one_judged_last_goes():
    """Nodes 0..3 on topic 0, links (0, 1), (0, 2), (1, 2), (2, 3); node 2 is at the budget of
    three. (0, 1) has no end at the budget and is taken first; then (0, 2) joins 2 to {0, 1},
    (1, 2) joins nothing and goes, (2, 3) joins 3."""
    subscriptions = [(n, 0) for n in range(4)]
    links = np.array([(0, 1), (0, 2), (1, 2), (2, 3)])
    kept = keep_links(driver_copy(subscriptions), links, departed=0, max_degree=3)
    released = release_redundant(driver_copy(subscriptions), kept, max_degree=3)
    assert released.links.tolist() == [[0, 1], [0, 2], [2, 3]] and released.released == 1
    assert release_redundant(driver_copy(subscriptions), kept).links.tolist() == links.tolist()  # no budget


def test_a_link_between_two_nodes_over_the_budget_goes_first():
    """Node 0 and node 1 each have three links, the budget is two: removing (0, 1) alone fixes both,
    though it shares the most topics."""
    subscriptions = [(n, t) for n in range(5) for t in range(3)] + [(0, 3), (1, 3)]
    links = np.array([(0, 1), (0, 2), (0, 3), (1, 3), (1, 4)])
    kept = keep_links(driver_copy(subscriptions), links, departed=0, max_degree=2)
    assert kept.links.tolist() == [[0, 2], [0, 3], [1, 3], [1, 4]] and kept.over_budget == 1


ALGORITHMS = [
    ("gm", {}),
    ("gpa", {"max_edges": 30}),
    ("minmaxoda", {}),
    ("gpm", {"max_degree": 3}),
]
ENGINES = [{"regime": "memory"}, {"regime": "rounds", "batch_size": 2, "per_node": 1, "partitions": 3}]


def start_frame(spark, links):
    return spark.createDataFrame([(int(u), int(v)) for u, v in links], f"{S.U} long, {S.V} long")


# The rounds regime at seed 2 (10 s) runs in the slow pass; the memory regime, the incremental
# designs' own, at both seeds.
@pytest.mark.parametrize(
    "engine,seed",
    [
        (ENGINES[0], 1),
        (ENGINES[0], 2),
        (ENGINES[1], 1),
        pytest.param(ENGINES[1], 2, marks=pytest.mark.slow),
    ],
    ids=["memory-1", "memory-2", "rounds-1", "rounds-2"],
)
def test_the_greedy_from_kept_links_is_the_oracles_sequence_from_them(spark, engine, seed):
    """The links added after the kept ones are the canonical sequence from that start, gains
    included; the phases start again at 1 (a node over the phase waits as in a fresh run)."""
    subscriptions = random_instance(("zipf", "expo")[seed % 2], 36, 14, 1, 5, seed)
    previous = random_links(subscriptions, 45, seed + 10)
    for algorithm, budget in ALGORITHMS:
        kept = keep_links(driver_copy(subscriptions), np.array(previous), departed=0, **budget)
        start = [tuple(link) for link in kept.links.tolist()]
        params = GreedyParams(algorithm, **budget, **engine)
        design = GreedyDesign(frame(spark, subscriptions), params, start=GreedyStart(edges=start_frame(spark, start)))
        rounds = list(design.rounds())
        added = [edge for r in rounds for edge in r.edges]
        assert added == greedy_oracle(subscriptions, algorithm, start=start, **budget), (algorithm, engine)
        if rounds:
            assert rounds[0].first_order == len(start) + 1
        if algorithm == "gpm":
            ends = np.array(start + [e[:2] for e in added]).reshape(-1)
            assert np.bincount(ends).max() <= budget["max_degree"]


@pytest.mark.parametrize("engine", ENGINES, ids=["memory", "rounds"])
def test_gm2_from_kept_links_is_the_oracles_sequence_from_them(spark, engine):
    subscriptions = random_instance("unif", 14, 5, 1, 3, 6)
    previous = random_links(subscriptions, 12, 3)
    kept = keep_links(driver_copy(subscriptions), np.array(previous), departed=0)
    start = [tuple(link) for link in kept.links.tolist()]
    params = GreedyParams("gm2", **engine)
    design = GreedyDesign(frame(spark, subscriptions), params, start=GreedyStart(edges=start_frame(spark, start)))
    added = [edge for r in design.rounds() for edge in r.edges]
    assert added == gm2_ref(subscriptions, start=start)


def rounds_from_classes(spark, subscriptions, params, start, classes, view):
    """The rounds from the start's classes as `open_topics` built them (the links not merged again)."""
    begun = GreedyStart(edges=start_frame(spark, start), classes=classes)
    return [
        (r.edges, r.tcc, r.tco_support)
        for r in GreedyDesign(frame(spark, subscriptions), params, begun, **view).rounds()
    ]


@pytest.mark.parametrize("algorithm,budget", ALGORITHMS)
def test_the_open_topics_alone_give_the_same_links_and_counts(spark, algorithm, budget):
    """On the topics the start leaves disconnected, with the whole instance's size and the closed
    topics' TCCs added, the engine adds the same links with the same gains and reports the same
    TCCs and TcoSuppR round by round (the memory regime: the one incremental designs take)."""
    subscriptions = random_instance("zipf", 40, 16, 1, 5, 11)
    whole = driver_copy(subscriptions)
    start = [
        tuple(link)
        for link in keep_links(whole, np.array(random_links(subscriptions, 40, 4)), 0, **budget).links.tolist()
    ]
    restricted, closed, classes = open_topics(whole, np.array(start))
    topics_of = {}
    for node, topic in subscriptions:
        topics_of.setdefault(topic, set()).add(node)
    connected = 0
    for members in topics_of.values():
        inside = [link for link in start if set(link) <= members]
        connected += len(set(components_by_min(sorted(members), inside).values())) == 1
    assert closed == connected and restricted.rows < whole.rows
    params = GreedyParams(algorithm, regime="memory", **budget)

    def rounds(**view):
        design = GreedyDesign(
            frame(spark, subscriptions), params, start=GreedyStart(edges=start_frame(spark, start)), **view
        )
        return [(r.edges, r.tcc, r.tco_support) for r in design.rounds()]

    full = rounds()
    view = {"driver_subscriptions": restricted, "size": InstanceSize.of(whole), "tcc_offset": closed}
    assert rounds(**view) == full
    assert rounds_from_classes(spark, subscriptions, params, start, classes, view) == full  # as the job runs it
    added = [e for edges, _, _ in full for e in edges]
    assert added == greedy_oracle(subscriptions, algorithm, start=start, **budget)


def test_the_reports_day_two_summary_is_the_mean_of_its_days():
    """Per series: the mean links changed and TcoSuppR each way, the worst day's gap, the engine
    ratio and the rebuilt days, from `overlay_changes` rows written by hand."""
    import pandas as pd

    from pipelines.report import day_two

    rows = pd.DataFrame(
        [
            # series, day, kind, links changed, TcoSuppR, engine seconds
            ("c gpm", 1, S.INCREMENTAL, 4, 0.98, 1.0),
            ("c gpm", 1, S.FRESH, 40, 0.99, 10.0),
            ("c gpm", 2, S.REBUILT, 30, 0.99, 9.0),
            ("c gpm", 2, S.FRESH, 30, 0.99, 9.0),
        ],
        columns=[day_two.SERIES, day_two.DAY, S.CHANGE_KIND, day_two.CHANGED, S.TCO_SUPPORT, S.SECONDS_ENGINE],
    )
    (row,) = day_two.summary(rows).to_dict("records")
    assert row["days"] == 2 and row["rebuilt_days"] == 1
    assert (row["changed_incremental"], row["changed_fresh"], row["changed_ratio"]) == (17.0, 35.0, round(17 / 35, 3))
    assert row["worst_tco_gap"] == 0.01 and row["engine_ratio"] == round(5.0 / 9.5, 3)
    assert day_two.figure(rows) is not None and day_two.figure(rows.iloc[0:0]) is None


@pytest.mark.parametrize("seed", range(6))
def test_pairs_after_a_start_are_those_apart_with_their_gains(seed):
    """Counted against a start's classes, the candidate pairs are exactly the pairs apart on some
    shared topic, each with the number of such topics (its gain now); the pair bound holds."""
    from overlay.design import kernels, memory
    from overlay.design.classes import ComponentClasses
    from overlay.design.pairs import by_topic_and_class
    from tests.oracles import topic_components_oracle

    subscriptions = random_instance(("zipf", "unif", "expo")[seed % 3], 30, 10, 1, 5, seed)
    start = random_links(subscriptions, 25 + 5 * seed, seed)
    copy = driver_copy(subscriptions)
    classes = ComponentClasses(copy)
    for u, v in start:
        classes.merge(u, v)
    label = memory.start_label(classes)
    topic_offsets, topic_nodes, lo, hi = by_topic_and_class(copy, label)
    us, vs, counts = kernels.shared_counts_of_range(
        copy.offsets, copy.topics, topic_offsets, topic_nodes, lo, hi, 0, copy.nodes
    )
    component = topic_components_oracle(subscriptions, start)
    topics_of = {}
    for node, topic in subscriptions:
        topics_of.setdefault(node, set()).add(topic)
    expected = {}
    for u in topics_of:
        for v in topics_of:
            apart = sum(component[(t, u)] != component[(t, v)] for t in topics_of[u] & topics_of[v])
            if u < v and apart:
                expected[(u, v)] = apart
    assert dict(zip(zip(us.tolist(), vs.tolist()), counts.tolist())) == expected
    assert list(zip(us.tolist(), vs.tolist())) == sorted(expected)
    assert memory.estimate(copy, memory.grouped_transpose(copy, label))[0] >= len(expected)


@pytest.mark.parametrize("algorithm", ["gm", "gpa", "minmaxoda", "gpm", "gm2"])
def test_the_warm_up_runs_every_greedy_path_the_experiment_times(spark, algorithm):
    warm_up(spark, algorithm)  # fails when a path (fresh, rebuild, kept links, open topics) breaks
