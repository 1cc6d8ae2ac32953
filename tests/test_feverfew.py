"""Feverfew's simulator (overlay.gossip.feverfew on the cycle engine) against the independent
whole-network oracle (tests/feverfew_oracle.py), cycle by cycle, and its pure pieces."""

from itertools import groupby

import numpy as np
import pytest
from feverfew_oracle import (
    FeverfewOracle,
    assert_same_states,
    global_feverfew_oracle,
    oracle_for,
    spidercast_oracle,
    ttl_for,
)

from overlay.design.classes import Subscriptions
from overlay.gossip.baselines import CANDIDATES, chosen_views
from overlay.gossip.feverfew import Feverfew, FeverfewParams, feverfew_engine, merge_entries
from overlay.gossip.measures import view_links, view_summary


def zipf_instance(nodes: int, topics: int, seed: int) -> list[tuple[int, int]]:
    """1-5 topics per node, Zipf-popular topics: a few large topics and many small ones."""
    rng = np.random.default_rng(seed)
    weight = rng.zipf(1.6, topics).astype(float)
    pairs = set()
    for v in range(nodes):
        for t in rng.choice(topics, size=int(rng.integers(1, 6)), replace=False, p=weight / weight.sum()):
            pairs.add((v, int(t)))
    return sorted(pairs)


def run_both(spark, nodes: int, pairs, params: FeverfewParams, cycles: int) -> FeverfewOracle:
    subscriptions = Subscriptions.from_pairs(nodes, np.array(pairs))
    engine = feverfew_engine(spark, subscriptions, params, partitions=3)
    oracle = oracle_for(nodes, pairs, params)
    first = {r["node_id"]: r.asDict() for r in engine.start(spark, nodes).collect()}
    assert all(first[v]["rv"] == sorted(oracle.rv[v]) for v in range(nodes))

    def compare(cycle, state, _seconds):
        oracle.step(cycle)
        assert_same_states({r["node_id"]: r.asDict() for r in state.frame.collect()}, oracle, cycle)

    engine.run(engine.start(spark, nodes), 1, cycles, on_cycle=compare)
    return oracle


@pytest.mark.slow  # 40 cycles compared one by one, about 35 s (the default run compares 12 in test_simulate.py)
def test_the_spark_simulation_matches_the_oracle_for_40_cycles_with_bubble_sample(spark):
    """Small views and an early BubbleSample, so that diffusions, agents, matches and the
    first-in-first-out agent view all run; every cycle's whole state is compared."""
    pairs = zipf_instance(80, 30, 3)
    params = FeverfewParams(
        seed=3,
        bubble_start=3,
        delta=2,
        clear_similar=True,
        random_view=8,
        shuffle=4,
        similar_view=5,
        agent_view=3,
    )
    oracle = run_both(spark, 80, pairs, params, 40)
    diffusions = [d for own in oracle.own.values() for d in own.values()]
    assert diffusions and any(d[2] >= 0 for d in diffusions), "no diffusion ever matched: the test exercises nothing"
    assert any(len(av) == 3 for av in oracle.av.values()), "no agent view filled up"


@pytest.mark.slow  # two more 40-cycle comparisons (about 7 min; the bubble one above is slow too)
@pytest.mark.parametrize(
    "nodes, topics, seed, options",
    [
        (60, 20, 1, {"bubble_start": 5}),  # the paper's view sizes: GossipSample covers almost all
        (150, 40, 2, {"bubble_start": 10, "pss": "uniform"}),  # Thm 1-2's sampler
    ],
)
def test_the_spark_simulation_matches_the_oracle_on_more_settings(spark, nodes, topics, seed, options):
    run_both(spark, nodes, zipf_instance(nodes, topics, seed), FeverfewParams(seed=seed, **options), 40)


def test_cyclon_merge_fills_empty_slots_then_replaces_the_entries_sent():
    view = {1: 5, 2: 3, 3: 1}
    # 9 is me and 2 is held: skipped; 7 fills the empty slot; 8 replaces 1 (the first sent still
    # held: 4 is gone); 6 replaces 3; 5 finds nothing left to replace and is dropped.
    merge_entries(view, [(9, 0), (2, 0), (7, 2), (8, 1), (6, 4), (5, 0)], replaceable=[4, 1, 3], me=9, size=4)
    assert view == {2: 3, 7: 2, 8: 1, 6: 4}


def run_locally(protocol: Feverfew, rows: list[dict], cycle: int) -> list[dict]:
    """One cycle without Spark: the engine's sort and grouping, in plain Python."""

    def order(m):
        return m["dst"], m["kind"], m["src"], m["seq"]

    messages = sorted(protocol.act(rows, cycle), key=order)
    served = sorted(
        (
            m
            for dst, group in groupby(messages, key=lambda m: m["dst"])
            for m in protocol.serve(dst, list(group), cycle)
        ),
        key=order,
    )
    return [protocol.finish(dst, list(group), cycle) for dst, group in groupby(served, key=lambda m: m["dst"])]


def test_a_diffusion_sends_two_to_the_ttl_minus_one_copies():
    """Alg. 4 read as a binomial tree: a diffusion with TTL0 = τ makes 2^τ holders, its origin
    included, so 2^τ - 1 copies travel. Two subscribers of one topic in 64 nodes find each other
    only by chance, so both diffuse (as do the subscribers of the other topics still uncovered);
    every copy any node sends is counted until none is held."""
    nodes, params = 64, FeverfewParams(seed=5, bubble_start=1, pss="uniform", shuffle=4, random_view=4)
    pairs = [(0, 0), (1, 0)] + [(v, 1 + v % 7) for v in range(2, nodes)]
    subscriptions = Subscriptions.from_pairs(nodes, np.array(pairs))
    protocol = Feverfew(params, subscriptions.offsets, subscriptions.topics)
    rows = [protocol.start(v) for v in range(nodes)]
    copies, cycle, started = 0, 0, []
    while cycle < 3 or any(r["held_ttl"] for r in rows):
        cycle += 1
        rows = run_locally(protocol, rows, cycle)
        copies += sum(r["sent"][2] for r in rows)
        started += [
            (r["node_id"], t, ttl)
            for r in rows
            for t, begun, ttl in zip(r["own_topic"], r["own_started"], r["own_ttl"])
            if begun == cycle
        ]
    pair = [(v, ttl) for v, t, ttl in started if t == 0]
    assert {v for v, _ in pair} == {0, 1} and all(ttl == ttl_for(nodes, 2, params.shuffle) for _, ttl in pair)
    assert copies == sum(2**ttl - 1 for _, _, ttl in started)


def test_the_full_knowledge_and_gossip_baselines_choose_the_oracles_links(spark):
    """Global Feverfew (Alg. 3 over every node sharing a topic), SpiderCast with full knowledge,
    and SpiderCast over given candidate lists (what gossip taught each node)."""
    nodes, pairs = 70, zipf_instance(70, 25, 11)
    subs: dict[int, set] = {}
    for v, t in pairs:
        subs.setdefault(v, set()).add(t)
    csr = Subscriptions.from_pairs(nodes, np.array(pairs))

    def links(rule, known=None):
        views = chosen_views(spark, csr.offsets, csr.topics, rule, 5, known, partitions=2)
        rows = view_links(views, 0).collect()
        assert sorted(r["added_order"] for r in rows) == list(range(1, len(rows) + 1))
        return {(r["u"], r["v"]) for r in rows}

    assert links("feverfew") == global_feverfew_oracle(nodes, subs)
    # With full knowledge Alg. 3 covers every subscription it can: those of topics of two or more.
    views = chosen_views(spark, csr.offsets, csr.topics, "feverfew", 5, None, partitions=2)
    summary = view_summary(views)
    needy = sum(1 for v, t in pairs if sum(1 for _, s in pairs if s == t) >= 2)
    assert summary["subscriptions"] == needy and summary["covered_share"] == 1.0
    assert summary["choices"] == sum(len(r["lv"]) for r in views.collect())
    sharing = {p: [q for q in range(nodes) if q != p and subs[p] & subs[q]] for p in range(nodes)}
    assert links("spidercast") == spidercast_oracle(nodes, subs, sharing, 5)
    rng = np.random.default_rng(2)
    known = {p: sorted(int(q) for q in rng.choice(nodes, 12, replace=False)) for p in range(nodes)}
    frame = spark.createDataFrame([(p, known[p]) for p in range(nodes)], f"node_id long, {CANDIDATES} array<long>")
    assert links("spidercast", frame) == spidercast_oracle(nodes, subs, known, 5)
    assert links("spidercast", frame) != links("spidercast")  # the candidates matter


def test_topic_structure_is_networkx_diameter_and_average_clustering():
    """Table 3's measures of one topic subgraph, against networkx on random small graphs (and a
    disconnected one: no diameter)."""
    import networkx as nx

    from overlay.gossip.topics import structure

    rng = np.random.default_rng(4)
    for trial in range(30):
        n = int(rng.integers(2, 25))
        graph = nx.gnp_random_graph(n, float(rng.uniform(0.1, 0.6)), seed=trial)
        members = [10 + v for v in range(n)]  # ids other than positions
        links = [(10 + u, 10 + v) for u, v in graph.edges()]
        connected, diameter, clustering = structure(members, links)
        assert connected == nx.is_connected(graph)
        assert diameter == (nx.diameter(graph) if connected else None)
        assert clustering == pytest.approx(nx.average_clustering(graph), abs=1e-12)
