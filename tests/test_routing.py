"""Routing: Protocol 5 on the paper's example (Fig. 2(d) as we read it), every protocol on every
engine against the message-level oracle (arrival by arrival, hashed and given tree roots), the
outcome (deliveries, latencies, loads), the exactly-once check, the workload, and Chord's hop
count."""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.frames import local_frame
from overlay.rappel.coordinates import LatencyModel
from overlay.smallworld.gswico import small_world_overlay
from routing import rules
from routing.compiled import simulate_compiled
from routing.engines import ENGINES, MEMORY, SPARK_ENGINES
from routing.in_memory import Routed, route_in_memory, routing_tables, spark_percentile, summarise_in_memory
from routing.network import AT, FDIST, HOPS, SENDER, SUBS, build_network
from routing.outcome import summarise
from routing.protocols import PROTOCOLS, hop_messages
from routing.simulate import Simulation, simulate
from routing.trees import rendezvous, rendezvous_of
from routing.workload import feed_publications, feed_publications_in_memory, publications, publications_in_memory
from tests import routing_oracle as oracle
from tests.helpers import ring_network

SUBSCRIPTION_SCHEMA = f"{S.NODE_ID} long, {S.TOPIC_ID} long"
COORDINATE_SCHEMA = f"{S.NODE_ID} long, {S.X_MS} double, {S.Y_MS} double"


@pytest.mark.parametrize(
    "protocol,fingers,expected",
    [
        pytest.param("po", [1, 2, 6, 8], [3, 6], id="fig2a-po"),  # node 1's fingers 2, 3, 7, 9; X = {4, 7}
        pytest.param("po", [1, 2, 4, 8], [3], id="fig2b-po"),  # finger 5 instead of 7; X = {4}
        pytest.param("pa1", [1, 2, 4, 8], [3, 8], id="fig2c-pa1"),  # pivot 9, a finger in the distant range [6, 11)
        pytest.param("pie", [1, 2, 4, 8], [3, 8], id="fig2c-pie"),
        # Our reading, not the paper's answer: the paper's Fig. 2(d) Pa1 pivots at node 8 (through the
        # pure forwarders 5 and 8); we pivot at node 6, the distant range's first position.
        pytest.param("pa1", [1, 2, 4, 12], [3, 5], id="fig2d-pa1-our-reading-paper-pivots-at-8"),
        pytest.param("pie", [1, 2, 4, 12], [3], id="fig2d-pie"),  # ... and Pie goes without, as in the paper
    ],
)
def test_next_hops_on_the_papers_example_and_our_reading_of_fig2d(spark, protocol, fingers, expected):
    """BeaConvey Fig. 2: 16 nodes, V(t) = {1, 4, 7, 10, 12, 14}, node 1 holds msg [1, 11).
    (a)-(c) are the next hops the paper's text states. Fig. 2(d) is our reading: the text says
    only that node 1 has no finger in the distant range [6, 11) (we give it 13 for 9) and that
    Pie takes no pivot there (so X = {4}), while Pa1 "still enforces a pivot at node 8". Protocol
    5's pivotInDistantRange returns any q in that range and we take its first position, 6, so
    the Pa1 case expects offsets [3, 5] (nodes 4 and 6), not the paper's pivot 8 (offset 7).
    The rule is `routing.rules.next_hops`; the Spark column runs it through an Arrow UDF."""
    subs = (1, 4, 7, 10, 12, 14)
    out = np.empty(len(fingers) + 2, np.int64)
    count = rules.next_hops(rules.PROTOCOL_CODES[protocol], 16, 1, 10, np.array(fingers), np.array(subs), out)
    assert out[:count].tolist() == expected
    row = spark.range(1).select(
        F.lit(1).cast("long").alias(AT),
        F.lit(11).cast("long").alias("high"),
        F.array(*[F.lit(d).cast("long") for d in fingers]).alias(FDIST),
        F.array(*[F.lit(p).cast("long") for p in subs]).alias(SUBS),
    )
    spread = hop_messages(protocol, 16, F.col(AT), F.col(AT), F.col("high"), F.col(FDIST), F.col(SUBS))
    got = row.select(spread.alias("x")).first()["x"]
    ends = [x + 1 for x in expected[1:]] + [11]
    assert [(m["low"], m["high"]) for m in got] == [(x + 1, end) for x, end in zip(expected, ends)]
    assert [fingers[m["finger"]] for m in got] == [max(d for d in fingers if d <= x) for x in expected]
    assert oracle.next_hops(protocol, {1: fingers}, set(subs), 1, 1, 11, 16) == expected


def _instance(rng, n, topics, per_node):
    return sorted({(node, rng.randrange(topics)) for node in range(n) for _ in range(rng.randint(1, per_node))})


@dataclass
class Case:
    n: int
    subscriptions: list
    frame: object
    overlay: object
    network: object
    publications: object  # (pub_id, topic_id, publisher position)
    coordinates: dict  # node -> (x, y) ms
    roots: dict | None  # topic -> the node its tree is rooted at (None: hashed)
    tables: object  # the memory regime's routing tables (`routing.in_memory.Tables`)


def tables_of(overlay, frame, n, coordinate_frame, root_frame):
    """The memory regime's routing tables of the same inputs as `build_network`'s."""
    return routing_tables(
        overlay.ring.select(S.NODE_ID, S.POSITION).toArrow(),
        overlay.fingers.select(S.NODE_ID, S.FINGER).toArrow(),
        frame.toArrow(),
        n,
        coordinate_frame.toArrow(),
        None if root_frame is None else root_frame.toArrow(),
    )


def arrivals_of(engine, network, tables, placed, protocol, partitions=2):
    """The arrivals of a run on one engine, as rows, and its messages and supersteps."""
    if engine == MEMORY:
        routed = route_in_memory(tables, placed.toArrow(), protocol)
        return routed.arrivals.to_pylist(), routed.messages, routed.supersteps
    routed = SPARK_ENGINES[engine](network, placed, protocol, partitions=partitions)
    return [r.asDict() for r in routed.arrivals.collect()], routed.messages, routed.supersteps


def coordinates_of(spark, n, seed):
    """The latency model's coordinates of nodes 0..n-1, as a dict and a frame."""
    xy = LatencyModel().coordinates(seed, list(range(n))).tolist()
    return dict(enumerate(map(tuple, xy))), local_frame(
        spark, [(v, x, y) for v, (x, y) in enumerate(xy)], COORDINATE_SCHEMA
    )


@pytest.fixture(scope="module")
def small_overlays(spark):
    """Two small instances with a greedy (SL) and a data-oblivious (-) overlay each, link
    latencies, their routing tables and 12 publications; the second roots every topic's tree at
    a random node (subscriber or not), which publishes the topic (as a Rappel feed)."""
    cases = []
    for trial, (short, long) in enumerate([("gswico", "gswico"), ("random", "random")]):
        rng = random.Random(20 + trial)
        n = rng.randint(13, 22)
        subscriptions = _instance(rng, n, topics=7, per_node=3)
        frame = local_frame(spark, subscriptions, SUBSCRIPTION_SCHEMA)
        overlay = small_world_overlay(frame, n, short, long, seed=trial + 1)
        coordinates, coordinate_frame = coordinates_of(spark, n, seed=trial + 3)
        roots = {t: rng.randrange(n) for t in sorted({t for _, t in subscriptions})} if trial == 1 else None
        root_frame = (
            None if roots is None else local_frame(spark, sorted(roots.items()), f"{S.TOPIC_ID} long, {S.NODE_ID} long")
        )
        network = build_network(overlay.ring, overlay.fingers, frame, n, coordinate_frame, root_frame)
        workload = publications(frame, 12, seed=5) if roots is None else feed_publications(root_frame, 12)
        placed = (
            workload.join(network.positions.withColumnRenamed(S.NODE_ID, S.PUBLISHER), on=S.PUBLISHER)
            .select(S.PUB_ID, S.TOPIC_ID, F.col(AT).alias(S.PUBLISHER))
            .localCheckpoint(eager=True)
        )
        tables = tables_of(overlay, frame, n, coordinate_frame, root_frame)
        cases.append(Case(n, subscriptions, frame, overlay, network, placed, coordinates, roots, tables))
    return cases


def _placed(frame, network, rows):
    """Publications (pub_id, topic_id, publisher node) placed on the ring."""
    return (
        local_frame(frame.sparkSession, rows, f"{S.PUB_ID} long, {S.TOPIC_ID} long, {S.PUBLISHER} long")
        .join(network.positions.withColumnRenamed(S.NODE_ID, S.PUBLISHER), on=S.PUBLISHER)
        .select(S.PUB_ID, S.TOPIC_ID, F.col(AT).alias(S.PUBLISHER))
        .localCheckpoint(eager=True)
    )


@pytest.fixture(scope="module")
def hard_cases(spark):
    """Small rings built to reach the hard paths of every rule: nodes with no subscription (pure
    forwarders), a topic every node subscribes to (the nearest subscriber is also a subscribed
    finger: a tie the rule must count once), a topic with one subscriber (nobody to deliver to),
    and every subscriber publishing every one of its topics, so ranges wrap round position 0
    from every start. The second roots each topic's tree at a random node; in the first, RP(t)
    itself publishes too (its message starts in the tree)."""
    cases = []
    for trial, (short, long, rooted) in enumerate([("gswico", "gswico", False), ("random", "chord", True)]):
        rng = random.Random(70 + trial)
        n = rng.randint(13, 17)
        everyone, lonely = 0, 1
        subscriptions = {(node, everyone) for node in range(n)} | {(rng.randrange(n), lonely)}
        idle = set(rng.sample(range(n), 3))  # subscribe to nothing but `everyone`
        subscriptions |= {(node, rng.randrange(2, 6)) for node in range(n) if node not in idle for _ in range(2)}
        subscriptions = sorted(subscriptions)
        frame = local_frame(spark, subscriptions, SUBSCRIPTION_SCHEMA)
        overlay = small_world_overlay(frame, n, short, long, seed=trial + 1)
        coordinates, coordinate_frame = coordinates_of(spark, n, seed=trial + 5)
        topics = sorted({t for _, t in subscriptions})
        roots = {t: rng.randrange(n) for t in topics} if rooted else None
        root_frame = (
            None if roots is None else local_frame(spark, sorted(roots.items()), f"{S.TOPIC_ID} long, {S.NODE_ID} long")
        )
        network = build_network(overlay.ring, overlay.fingers, frame, n, coordinate_frame, root_frame)
        position, fingers, subs = ring_network(overlay, subscriptions)
        node_at = {p: node for node, p in position.items()}
        publishers = [(node, t) for node, t in subscriptions]
        if roots is None:
            publishers += [(node_at[rendezvous_of(t, n)], t) for t in topics]
        else:
            publishers += [(roots[t], t) for t in topics]
        placed = _placed(frame, network, [(i, t, node) for i, (node, t) in enumerate(publishers)])
        tables = tables_of(overlay, frame, n, coordinate_frame, root_frame)
        cases.append((n, network, placed, position, fingers, subs, coordinates, roots, tables))
    return cases


def _oracle_arrivals(case, protocol, pubs):
    """The oracle's arrivals of the publications: {(pub_id, at, hops, target, latency, sender): times}."""
    n, _, _, position, fingers, subs, coordinates, roots, _ = case
    xy = {p: coordinates[node] for node, p in position.items()}

    def link(u, v):
        return math.dist(xy[u], xy[v])

    expected = Counter()
    for row in pubs:
        rp = None if roots is None else position[roots[row[S.TOPIC_ID]]]
        routed = oracle.route_publication(protocol, fingers, subs, row[S.TOPIC_ID], row[S.PUBLISHER], n, link, rp)
        for at, hops, target, ms, sender in routed.arrivals:
            expected[row[S.PUB_ID], at, hops, target, round(ms, 9), sender] += 1
    return expected


# Every protocol on every engine. The default run takes the compiled engine on all five and the
# supersteps (a Spark stage or two a hop) on Pa1, whose pivot has both fallbacks, and iScribe,
# whose trie is the hardest tree; the slow pass runs the other three on the supersteps too.
@pytest.mark.parametrize(
    "protocol,engine",
    [
        pytest.param(
            protocol,
            engine,
            marks=pytest.mark.slow if engine == "supersteps" and protocol not in ("pa1", "iscribe") else (),
        )
        for protocol in PROTOCOLS
        for engine in ENGINES
    ],
)
def test_every_protocol_on_every_engine_matches_the_oracle(spark, hard_cases, protocol, engine):
    """Every arrival (publication, node, hops, addressed, latency, sender), as a multiset, and the
    run's message and superstep counts, against the message-level oracle."""
    for case in hard_cases:
        network, placed = case[1], case[2]
        rows, messages, supersteps = arrivals_of(engine, network, case[8], placed, protocol)
        got = Counter((r[S.PUB_ID], r[AT], r["hops"], r["target"], round(r["latency"], 9), r["sender"]) for r in rows)
        expected = _oracle_arrivals(case, protocol, placed.collect())
        assert got == expected
        assert messages == sum(expected.values())
        assert supersteps == max(hops for _, _, hops, *_ in expected)


def test_the_hashed_rendezvous_is_one_rule(spark):
    """RP(t) as a Spark column (the supersteps) and as an int (the compiled engine's roots, the
    oracle) agree, up to the largest dense topic id a long product allows."""
    topics = [0, 1, 2, 3, 7, 1000, 65535, 2**31 - 1]
    for n in (1, 13, 1024, 10_007):
        frame = spark.createDataFrame([(t,) for t in topics], "t long")
        got = [r[0] for r in frame.select(rendezvous(F.col("t"), n)).collect()]
        assert got == [rendezvous_of(t, n) for t in topics] == [oracle.rendezvous(t, n) for t in topics]


# The outcome (deliveries, latencies, loads, metrics) is derived from the arrivals whatever the
# engine: checked on the default one, for every protocol in the slow pass.
@pytest.mark.parametrize(
    "protocol",
    [pytest.param(p, marks=() if p in ("pie", "iscribe") else pytest.mark.slow) for p in PROTOCOLS],
)
def test_the_outcome_agrees_with_the_oracle(spark, small_overlays, protocol):
    for case in small_overlays:
        n, network, placed = case.n, case.network, case.publications
        position, fingers, subs = ring_network(case.overlay, case.subscriptions)
        outcome = summarise(simulate_compiled(network, placed, protocol), network, placed)
        node_at = {p: node for node, p in position.items()}
        xy = {p: case.coordinates[node] for node, p in position.items()}

        def link(u, v, xy=xy):
            return math.dist(xy[u], xy[v])

        per_publication = {r[S.PUB_ID]: r for r in outcome.per_publication.collect()}
        expected_deliveries, expected_received, expected_sent, expected_latency = set(), Counter(), Counter(), {}
        for row in placed.collect():
            topic, publisher = row[S.TOPIC_ID], row[S.PUBLISHER]
            rp = None if case.roots is None else position[case.roots[topic]]
            routed = oracle.route_publication(protocol, fingers, subs, topic, publisher, n, link, rp)
            topic_subs = subs[topic]
            for at, hops in routed.deliveries(topic_subs, publisher):
                expected_deliveries.add((row[S.PUB_ID], node_at[at], hops))
            for at, ms in routed.latencies(topic_subs, publisher).items():
                expected_latency[row[S.PUB_ID], node_at[at]] = (ms, link(publisher, at))
            for at, times in routed.received().items():
                expected_received[node_at[at]] += times
            for at, times in routed.sent().items():
                expected_sent[node_at[at]] += times
            got = per_publication[row[S.PUB_ID]]
            assert got[S.RECEIVED] == len(routed.arrivals), (protocol, row)
            assert got[S.PURE_FORWARDS] == routed.pure_forwards(topic_subs), (protocol, row)
        delivered = outcome.deliveries.collect()
        assert {(r[S.PUB_ID], r[S.NODE_ID], r[S.HOPS]) for r in delivered} == expected_deliveries
        assert {
            (r[S.PUB_ID], r[S.NODE_ID]): pytest.approx((r[S.LATENCY_MS], r[S.DIRECT_MS]), rel=1e-12) for r in delivered
        } == expected_latency
        latencies = sorted(ms for ms, _ in expected_latency.values())
        assert outcome.metrics[S.LATENCY_MEDIAN] == pytest.approx(_percentile(latencies, 0.5), rel=1e-12)
        assert outcome.metrics[S.LATENCY_P95] == pytest.approx(_percentile(latencies, 0.95), rel=1e-12)
        load = outcome.load.collect()
        assert {r[S.NODE_ID]: r[S.RECEIVED] for r in load if r[S.RECEIVED]} == dict(expected_received)
        assert {r[S.NODE_ID]: r[S.SENT] for r in load if r[S.SENT]} == dict(expected_sent)
        assert outcome.counter_example is None
        assert outcome.metrics[S.DELIVERY_RATIO] == 1.0 and outcome.metrics[S.DUPLICATE_DELIVERIES] == 0
        assert outcome.metrics[S.DELIVERIES] == outcome.metrics[S.EXPECTED_DELIVERIES] == len(expected_deliveries)


def _percentile(values, q):
    """Spark's exact percentile: linear between the two nearest ranks."""
    rank = q * (len(values) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


def test_a_lost_delivery_is_the_counter_example(spark, small_overlays):
    network, pubs = small_overlays[0].network, small_overlays[0].publications
    routed = simulate_compiled(network, pubs, "pie")
    first = summarise(routed, network, pubs).deliveries.orderBy(S.PUB_ID, S.NODE_ID).first()
    lost_at = network.positions.filter(F.col(S.NODE_ID) == first[S.NODE_ID]).first()[AT]
    dropped = routed.arrivals.filter(~((F.col(S.PUB_ID) == first[S.PUB_ID]) & (F.col(AT) == lost_at) & F.col("target")))
    broken = summarise(Simulation(dropped, routed.supersteps, routed.messages, []), network, pubs)
    assert broken.counter_example.startswith(f"publication {first[S.PUB_ID]} ")
    assert f"subscriber node {first[S.NODE_ID]} received it 0 times" in broken.counter_example
    assert broken.metrics[S.MISSING_DELIVERIES] == 1 and broken.metrics[S.DELIVERY_RATIO] < 1


def _outcome_rows(outcome):
    """An outcome's tables as sorted rows and its metrics, whichever regime made it."""

    def rows(table):
        if isinstance(table, pa.Table):
            return sorted(tuple(r.values()) for r in table.to_pylist())
        return sorted(tuple(r) for r in table.collect())

    return (
        rows(outcome.deliveries),
        rows(outcome.load),
        rows(outcome.per_publication),
        outcome.metrics,
        outcome.counter_example,
    )


@pytest.mark.parametrize("protocol", [pytest.param(p, marks=() if p == "iscribe" else pytest.mark.slow) for p in PROTOCOLS])  # fmt: skip
def test_the_memory_regimes_outcome_is_the_spark_regimes(spark, small_overlays, hard_cases, protocol):
    """`summarise_in_memory` against `summarise` on the same arrivals, row for row and metric for
    metric (doubles equal, not close), on runs that deliver exactly once and on the same runs with
    a delivery lost and another duplicated (the counter-example's words too)."""
    cases = [(c.network, c.publications, c.tables) for c in small_overlays] + [(c[1], c[2], c[8]) for c in hard_cases]
    for network, placed, tables in cases:
        routed = simulate_compiled(network, placed, protocol)
        arrivals = routed.arrivals.localCheckpoint(eager=True)
        memory = route_in_memory(tables, placed.toArrow(), protocol)
        broken = arrivals.orderBy(S.PUB_ID, AT, HOPS, SENDER).collect()
        delivered = [r for r in broken if r["target"] and r[AT] != r[S.PUBLISHER]]
        variants = [(arrivals, memory.arrivals)]
        if delivered:
            lost, twice = delivered[0], delivered[-1]
            kept = [r for r in broken if r != lost] + [twice]
            frame = spark.createDataFrame(kept, arrivals.schema)
            variants.append((frame, pa.Table.from_pylist([r.asDict() for r in kept], schema=memory.arrivals.schema)))
        for frame, table in variants:
            spark_regime = summarise(Simulation(frame, routed.supersteps, routed.messages, []), network, placed)
            in_memory = summarise_in_memory(Routed(table, routed.supersteps, routed.messages), tables, placed.toArrow())
            assert _outcome_rows(in_memory) == _outcome_rows(spark_regime)
            assert (in_memory.counter_example is None) == (frame is arrivals)
        assert memory.messages == routed.messages and memory.supersteps == routed.supersteps


def test_the_memory_regimes_percentile_is_sparks(spark):
    """Spark's exact percentile (ties, one value, none) against `spark_percentile`, bit for bit."""
    draw = random.Random(3)
    for size in (0, 1, 2, 3, 7, 40, 101):
        values = [round(draw.uniform(0, 90), draw.choice([0, 1, 6])) for _ in range(size)]
        frame = spark.createDataFrame([(v,) for v in values], "v double")
        for fraction in (0.5, 0.95, 0.05, 1.0, 0.0):
            expected = frame.agg(F.percentile("v", F.lit(fraction))).first()[0]
            assert spark_percentile(np.asarray(values, dtype=np.float64), fraction) == expected, (values, fraction)


@pytest.mark.parametrize("seed", [1, 0, -7, 2**31 - 1, 2**31, -(2**31) - 1, 2**40 + 3])
def test_the_memory_regimes_workload_is_sparks(spark, seed):
    """The numpy draws (`publications_in_memory`, `feed_publications_in_memory`) pick the same
    publications as the Spark ones, row for row, for seeds hashed as ints and as longs."""
    draw = random.Random(seed % 1000)
    subscriptions = _instance(draw, draw.randint(5, 40), topics=draw.randint(1, 12), per_node=4)
    subscriptions += subscriptions[:3]  # duplicates count once
    frame = local_frame(spark, subscriptions, SUBSCRIPTION_SCHEMA)
    count = draw.randint(1, 300)
    expected = sorted(tuple(r) for r in publications(frame, count, seed).collect())
    got = publications_in_memory(pa.Table.from_pylist([dict(zip((S.NODE_ID, S.TOPIC_ID), r)) for r in subscriptions]), count, seed)  # fmt: skip
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == expected
    feeds = sorted({t: node for node, t in subscriptions}.items())
    feed_frame = local_frame(spark, feeds, f"{S.TOPIC_ID} long, {S.NODE_ID} long")
    expected = sorted(tuple(r) for r in feed_publications(feed_frame, count).collect())
    got = feed_publications_in_memory(pa.Table.from_pylist([{S.TOPIC_ID: t, S.NODE_ID: v} for t, v in reversed(feeds)]), count)  # fmt: skip
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == expected


def test_publications_pick_topics_uniformly_and_publishers_among_subscribers(spark):
    subscriptions = [(node, topic) for topic in range(4) for node in range(topic * 3, topic * 3 + 2 + topic)]
    frame = local_frame(spark, subscriptions, SUBSCRIPTION_SCHEMA)
    pubs = publications(frame, 4000, seed=7).collect()
    assert sorted(r[S.PUB_ID] for r in pubs) == list(range(4000))
    assert all((r[S.PUBLISHER], r[S.TOPIC_ID]) in set(subscriptions) for r in pubs)
    per_topic = Counter(r[S.TOPIC_ID] for r in pubs)
    assert all(abs(count - 1000) < 120 for count in per_topic.values())
    publishers = Counter(r[S.PUBLISHER] for r in pubs if r[S.TOPIC_ID] == 3)
    assert len(publishers) == 5 and all(abs(c - per_topic[3] / 5) < 70 for c in publishers.values())
    assert publications(frame, 50, seed=7).collect() == publications(frame, 50, seed=7).collect()


def test_greedy_unicast_on_chord_takes_half_log_n_hops(spark):
    """On Chord, greedy routing takes one hop per set bit of the distance: 0.5 log2 |V| on average."""
    from routing.simulate import unicast_hops

    n = 1024
    nodes = spark.range(n).select(F.col("id").alias(S.NODE_ID))
    overlay = small_world_overlay(
        nodes.select(S.NODE_ID, F.lit(0).cast("long").alias(S.TOPIC_ID)), n, "random", "chord"
    )
    network = build_network(
        overlay.ring, overlay.fingers, nodes.limit(0).select(S.NODE_ID, F.lit(0).cast("long").alias(S.TOPIC_ID)), n
    )
    rng = random.Random(3)
    pairs = [(i, rng.randrange(n), rng.randrange(n)) for i in range(3000)]
    hops = unicast_hops(network, local_frame(spark, pairs, "pair long, source long, target long"))
    mean = hops.agg(F.avg("hops")).first()[0]
    assert abs(mean - 0.5 * math.log2(n)) < 0.15, mean
    expected = sum(bin((t - s) % n).count("1") for _, s, t in pairs) / len(pairs)
    assert mean == pytest.approx(expected)


@pytest.fixture
def cluster_says_auto(spark, monkeypatch):
    """The session config as a Databricks job cluster answers it (`spark.sql.shuffle.partitions`
    is `auto` there; open-source Spark refuses to set that value, so the getter is patched)."""
    from pyspark.sql.conf import RuntimeConfig

    real_get = RuntimeConfig.get

    def get(self, key, *default):
        return "auto" if key == "spark.sql.shuffle.partitions" else real_get(self, key, *default)

    monkeypatch.setattr(RuntimeConfig, "get", get)
    assert spark.conf.get("spark.sql.shuffle.partitions") == "auto"


def test_routing_on_a_cluster_whose_shuffle_partitions_are_auto(spark, small_overlays, cluster_says_auto):
    """The simulator takes its partition count as an argument; the job derives a number from a
    session that says `auto` (its default parallelism)."""
    from pipelines.spark import shuffle_partitions

    partitions = shuffle_partitions(spark)
    assert partitions == spark.sparkContext.defaultParallelism
    case = small_overlays[0]
    routed = simulate(case.network, case.publications, "scribe", partitions=partitions)
    assert routed.arrivals.rdd.getNumPartitions() <= partitions * routed.supersteps
    assert summarise(routed, case.network, case.publications).counter_example is None


@pytest.mark.parametrize(
    "trial,n,short,long,rooted",
    [
        (0, 48, "gswico", "gswico", False),
        (1, 300, "random", "chord", False),
        (2, 257, "random", "random", True),
        (3, 64, "gswico", "random", True),
    ],
)
def test_compiled_routing_matches_the_oracle_arrival_by_arrival(spark, trial, n, short, long, rooted):
    """The compiled engine on larger rings than the DataFrame supersteps are checked on: every
    arrival (node, hops, addressed, latency, sender) of 150 publications a protocol, for all five
    protocols, against the oracle's; topics with many subscribers, so the trees branch and rejoin."""
    rng = random.Random(100 + trial)
    subscriptions = _instance(rng, n, topics=max(8, n // 6), per_node=6)
    frame = local_frame(spark, subscriptions, SUBSCRIPTION_SCHEMA)
    overlay = small_world_overlay(frame, n, short, long, seed=trial + 1)
    coordinates, coordinate_frame = coordinates_of(spark, n, seed=trial)
    roots = {t: rng.randrange(n) for t in sorted({t for _, t in subscriptions})} if rooted else None
    root_frame = (
        None if roots is None else local_frame(spark, sorted(roots.items()), f"{S.TOPIC_ID} long, {S.NODE_ID} long")
    )
    network = build_network(overlay.ring, overlay.fingers, frame, n, coordinate_frame, root_frame)
    tables = tables_of(overlay, frame, n, coordinate_frame, root_frame)
    workload = publications(frame, 150, seed=trial) if roots is None else feed_publications(root_frame, 150)
    placed = (
        workload.join(network.positions.withColumnRenamed(S.NODE_ID, S.PUBLISHER), on=S.PUBLISHER)
        .select(S.PUB_ID, S.TOPIC_ID, F.col(AT).alias(S.PUBLISHER))
        .localCheckpoint(eager=True)
    )
    position, fingers, subs = ring_network(overlay, subscriptions)
    xy = {p: coordinates[node] for node, p in position.items()}

    def link(u, v):
        return math.dist(xy[u], xy[v])

    pubs = placed.collect()
    for protocol, engine in [(p, e) for p in PROTOCOLS for e in ("compiled", MEMORY)]:
        rows, messages, supersteps = arrivals_of(engine, network, tables, placed, protocol, partitions=3)
        got = Counter((r[S.PUB_ID], r[AT], r["hops"], r["target"], round(r["latency"], 9), r["sender"]) for r in rows)
        expected = Counter()
        for row in pubs:
            rp = None if roots is None else position[roots[row[S.TOPIC_ID]]]
            oracle_run = oracle.route_publication(
                protocol, fingers, subs, row[S.TOPIC_ID], row[S.PUBLISHER], n, link, rp
            )
            for at, hops, target, ms, sender in oracle_run.arrivals:
                expected[row[S.PUB_ID], at, hops, target, round(ms, 9), sender] += 1
        assert got == expected, (protocol, engine)
        assert messages == sum(expected.values())
        assert supersteps == max(hops for _, _, hops, *_ in expected)
