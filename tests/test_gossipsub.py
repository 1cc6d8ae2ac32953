"""gossipsub's meshes in time (`overlay/gossip/gossipsub.py`, topic by topic) against the
independent oracle (`tests/gossipsub_oracle.py`, every topic in one event queue): the same
measures after every heartbeat interval and the same final meshes; the job's tables; the spread."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from overlay.errors import InputError
from overlay.gossip.gossipsub import MEASURES, PROFILES, GossipsubParams, simulate_topic
from overlay.gossip.mesh_batches import combine
from overlay.rappel.coordinates import LatencyModel
from tests.gossipsub_oracle import DEFAULTS, SPEC, GossipsubOracle, Params, plane_latency
from tests.oracles import topic_components_oracle


def random_subscriptions(seed: int, nodes: int, topics: int, most: int) -> list[tuple[int, int]]:
    draw = random.Random(seed)
    return sorted({(p, t) for p in range(nodes) for t in draw.sample(range(topics), draw.randint(1, most))})


def ours(params: Params, seed: int, model_seed: int = 1) -> GossipsubParams:
    """The simulator's parameters for the oracle's."""
    return GossipsubParams(
        d=params.d, d_low=params.d_low, d_high=params.d_high, d_score=0, d_out=params.d_out,
        prune_backoff_ms=params.prune_backoff_us // 1000, prune_at_high=params.high == params.d_high,
        backoff_sweep=params.sweep, backoff_slack_ms=params.slack_us // 1000,
        heartbeat_ms=params.heartbeat_us // 1000, seed=seed, model_seed=model_seed,
    )  # fmt: skip


def oracle_of(subs, params: Params, seed: int, model_seed: int = 1, up=None) -> GossipsubOracle:
    """The oracle on the latency model's positions (`model_seed`), as the job places the nodes."""
    nodes = max(p for p, _ in subs) + 1
    positions = LatencyModel().coordinates(model_seed, np.arange(nodes))
    latency = plane_latency({v: tuple(positions[v]) for v in range(nodes)})
    return GossipsubOracle(subs, params, seed=seed, latency=latency, up=up)


def per_topic(subs, params: GossipsubParams, heartbeats: int, presence=None, connections=None):
    """Every topic simulated on its own: the measures combined per heartbeat, and the mesh rows;
    `connections` (`overlay.gossip.connections.Connections`): peers as deployed."""
    members: dict[int, list[int]] = {}
    for p, t in subs:
        members.setdefault(t, []).append(p)
    positions = LatencyModel().coordinates(params.model_seed, np.arange(max(p for p, _ in subs) + 1))
    runs = {}
    for t, nodes in members.items():
        nodes = np.asarray(sorted(nodes), dtype=np.int64)
        links = None if connections is None else connections.within(nodes)
        runs[t] = simulate_topic(t, nodes, positions[nodes], params, heartbeats, presence, links)
    measures = combine(np.stack([r.measures for r in runs.values()]))
    rows = {(t, int(a), int(b)) for t, r in runs.items() for a, b in zip(r.mesh_node, r.mesh_peer)}
    return [dict(zip(MEASURES, row)) for row in measures.tolist()], rows


SMALL = Params(d=3, d_low=2, d_high=4, d_out=1, prune_backoff_us=4_000_000, high=4, sweep=1, slack_us=0)


@pytest.mark.parametrize(
    "seed,params",
    [
        (1, DEFAULTS),  # go-libp2p's
        (2, SMALL),  # small meshes: many prunes, refusals
        (3, SPEC),  # the spec's text: pruning above D_high, backoffs swept every heartbeat
        (4, Params(d=8, d_low=6, d_high=12, high=12, heartbeat_us=700_000)),  # the eth2 profile
        (5, Params(d=2, d_low=1, d_high=2, d_out=0, prune_backoff_us=2_000_000, high=2, sweep=3, slack_us=500_000)),
    ],
)
def test_each_topic_on_its_own_keeps_the_oracles_meshes_heartbeat_by_heartbeat(seed, params):
    subs = random_subscriptions(seed, 60, 7, 3)
    oracle = oracle_of(subs, params, seed)
    measures, rows = per_topic(subs, ours(params, seed), 25)
    prunes = refusals = 0
    for h, expected in enumerate(measures, 1):
        oracle.heartbeat()
        assert oracle.measures() == expected, f"heartbeat {h}"
        prunes, refusals = prunes + oracle.prunes, refusals + oracle.refused
    assert rows == oracle.rows()
    assert prunes > 0  # the runs reach the pruning paths
    assert refusals > 0 or params.d_high >= 12  # and, with small meshes, the refusals


@pytest.mark.parametrize("seed,peers", [(1, 4), (2, 6), (3, 12)])
def test_peers_as_deployed_connect_and_mesh_as_the_oracle(seed, peers):
    """A bounded number of peers: the dials are the oracle's, no node holds more than `peers`
    connections, every mesh peer is a connected one, and the meshes are the oracle's."""
    from overlay.design.classes import Subscriptions
    from overlay.gossip.connections import deployed
    from tests.gossipsub_oracle import deployed_dials

    subs = random_subscriptions(seed, 60, 5, 3)
    csr = Subscriptions.from_pairs(60, np.asarray(subs, dtype=np.int64))
    connections = deployed(csr, peers, seed)
    dials = list(zip(connections.dialer.tolist(), connections.listener.tolist()))
    assert sorted(dials) == sorted(deployed_dials(subs, peers, seed))
    held = np.bincount(np.concatenate([connections.dialer, connections.listener]), minlength=60)
    assert held.max() <= peers and len({frozenset(d) for d in dials}) == len(dials)
    oracle = oracle_of(subs, SMALL, seed)
    oracle.dials, oracle.linked = set(dials), {}
    for a, b in dials:
        oracle.linked.setdefault(a, set()).add(b)
        oracle.linked.setdefault(b, set()).add(a)
    measures, rows = per_topic(subs, ours(SMALL, seed), 15, connections=connections)
    for h, expected in enumerate(measures, 1):
        oracle.heartbeat()
        assert oracle.measures() == expected, f"heartbeat {h}"
    assert rows == oracle.rows() and all(frozenset((p, q)) in {frozenset(d) for d in dials} for _, p, q in rows)


@pytest.mark.parametrize(
    "change,message",
    [({"d_low": 7}, "D_low <= D"), ({"d_high": 5}, "D <= D_high"), ({"d_out": 4}, "D_out < D_low"),
     ({"d_out": 4, "d_low": 5, "d": 7}, "D_out <= D/2"), ({"d_score": 7}, "D_score"),
     ({"prune_backoff_ms": 0}, "backoff"), ({"backoff_sweep": 0}, "backoff")],
)  # fmt: skip
def test_parameters_outside_the_specs_constraints_are_refused(change, message):
    with pytest.raises(InputError, match=re.escape(message)):
        GossipsubParams(**change).check()
    for params in PROFILES.values():
        params.check()


@pytest.fixture(scope="module")
def simulated(spark, module_lakehouse):
    """A gossipsub run of 12 heartbeats (go-libp2p's profile, batches of about 30 subscriptions) on a
    small instance, and the oracle after the same heartbeats with its measures per heartbeat."""
    from overlay.instance.synthetic import SyntheticSpec
    from pipelines.gossipsub import GossipsubRequest, run_gossipsub
    from tests.helpers import store_instance

    spec = SyntheticSpec(dist="zipf", nodes=40, topics=6, min_subs=1, max_subs=3, seed=2)
    subs = store_instance(spark, module_lakehouse, "g", spec)
    request = GossipsubRequest("g", 12, seed=3)
    run = run_gossipsub(spark, module_lakehouse, request, snapshot_every=30, progress=False, diameters=False)
    oracle = oracle_of(subs, DEFAULTS, 3)
    measures = []
    for _ in range(12):
        oracle.heartbeat()
        measures.append(oracle.measures())
    return module_lakehouse, run, subs, oracle, measures


def test_simulate_gossipsub_stores_the_oracles_meshes_heartbeats_and_union(spark, simulated):
    """The job: its meshes, every heartbeat's measures and the run's links are the oracle's; it
    committed its topics in batches."""
    from chispa import assert_df_equality
    from pyspark.sql import functions as F

    from overlay import schema as S

    lakehouse, run, subs, oracle, measures = simulated
    mine = lambda table: lakehouse.read(table).filter(F.col(S.RUN_ID) == run[S.RUN_ID])  # noqa: E731
    expected = spark.createDataFrame(sorted(oracle.rows()), "topic_id long, node_id long, peer_id long")
    assert_df_equality(mine(S.GOSSIPSUB_MESH).drop(S.RUN_ID), expected, ignore_row_order=True, ignore_nullable=True)
    beats = mine(S.GOSSIPSUB_HEARTBEATS).orderBy(S.HEARTBEAT).collect()
    assert [r[S.HEARTBEAT] for r in beats] == list(range(1, 13))
    for row, m in zip(beats, measures):
        assert [row[k] for k in ("grafts", "prunes", "refused", "meshes", "below_low", "above_high", "backoffs")] == [
            m[k] for k in ("grafts", "prunes", "refused", "meshes", "below_low", "above_high", "backoffs")
        ]
        assert (row[S.MESH_MIN], row[S.MESH_MAX]) == (m["mesh_min"], m["mesh_max"])
        assert abs(row[S.MESH_AVG] - m["mesh_links"] / m["meshes"]) < 1e-12
    edges = mine(S.OVERLAY_EDGES).orderBy(S.ADDED_ORDER).collect()
    links = {(r[S.U], r[S.V]) for r in edges}
    assert links == oracle.links() and run[S.EDGES] == len(links) and run[S.STATUS] == S.COMPLETE
    # Numbered by (u, v), as the union read back from the stored meshes is (a resumed run's).
    assert [(r[S.U], r[S.V]) for r in edges] == sorted(links)
    assert [r[S.ADDED_ORDER] for r in edges] == list(range(1, len(links) + 1)) and {r[S.ROUND] for r in edges} == {12}
    # Evaluated from the links in memory: the components are the union-find oracle's.
    components = {(r[S.TOPIC_ID], r[S.NODE_ID]): r[S.COMPONENT] for r in mine(S.TOPIC_COMPONENTS).collect()}
    assert components == topic_components_oracle(subs, sorted(links))
    assert run[S.REGIME] == "memory"  # a local master, a small instance: `simulate.regime: auto`
    assert mine(S.GOSSIPSUB_BATCHES).select(S.BATCH).distinct().count() > 1
    assert run[S.RUN_ID] == "g.gossipsub.go-libp2p.h12.s3"


def test_the_spark_regime_gives_the_memory_regimes_rows(spark, simulated):
    """One batch of the run's topics as a Spark job: the same measures and mesh rows as in memory."""
    import pyarrow as pa

    from overlay import schema as S
    from overlay.design.classes import Subscriptions
    from overlay.gossip import mesh_batches

    lakehouse, _, subs, _, _ = simulated
    frame = spark.createDataFrame(subs, "node_id long, topic_id long")
    params = ours(DEFAULTS, 3)
    csr = Subscriptions.from_pairs(40, np.asarray(subs, dtype=np.int64))
    topic_ids = np.flatnonzero(np.diff(csr.members[0]))
    batch = mesh_batches.Batch(0, int(topic_ids[0]), int(topic_ids[-1]), len(subs))
    positions = LatencyModel().coordinates(1, np.arange(40))
    memory_measures, memory_mesh = mesh_batches.in_memory(csr.subscribers, topic_ids.tolist(), positions, params, 8)
    rows = mesh_batches.on_spark(frame, batch, params, 8).localCheckpoint()
    spark_measures = [r.asDict() for r in mesh_batches.spark_measures(rows).orderBy(S.HEARTBEAT).collect()]
    assert spark_measures == [
        {k: (int(v) if k != S.HEARTBEAT else v) for k, v in r.items()} for r in memory_measures.to_pylist()
    ]
    spark_mesh = {tuple(r) for r in mesh_batches.spark_mesh(rows).collect()}
    assert spark_mesh == set(zip(*(memory_mesh.column(c).to_pylist() for c in memory_mesh.column_names)))
    assert isinstance(memory_mesh, pa.Table) and len(spark_mesh) > 0


def test_a_run_with_peers_as_deployed_stores_its_connections_and_the_oracles_meshes(spark, simulated):
    """`--peers 6`: the connections stored are the oracle's dials, the meshes the oracle's on
    them, in the memory regime and in a Spark batch; a spread on the run gossips among them."""
    from pyspark.sql import functions as F

    from overlay import schema as S
    from overlay.gossip import mesh_batches
    from pipelines.disseminate import DisseminateRequest, run_dissemination
    from pipelines.gossipsub import GossipsubRequest, run_gossipsub
    from tests.gossipsub_oracle import deployed_dials

    lakehouse, _, subs, _, _ = simulated
    request = GossipsubRequest("g", 8, seed=3, peers=6)
    run = run_gossipsub(spark, lakehouse, request, progress=False, diameters=False)
    assert run[S.RUN_ID] == "g.gossipsub.go-libp2p.h8.peers6.s3"
    mine = lambda table: lakehouse.read(table).filter(F.col(S.RUN_ID) == run[S.RUN_ID])  # noqa: E731
    dials = {(r[S.NODE_ID], r[S.PEER_ID]) for r in mine(S.GOSSIPSUB_CONNECTIONS).collect()}
    assert dials == set(deployed_dials(subs, 6, 3))
    oracle = oracle_of(subs, DEFAULTS, 3)
    oracle.dials, oracle.linked = dials, {}
    for a, b in dials:
        oracle.linked.setdefault(a, set()).add(b)
        oracle.linked.setdefault(b, set()).add(a)
    for _ in range(8):
        oracle.heartbeat()
    assert {(r[S.TOPIC_ID], r[S.NODE_ID], r[S.PEER_ID]) for r in mine(S.GOSSIPSUB_MESH).collect()} == oracle.rows()
    frame = spark.createDataFrame(subs, "node_id long, topic_id long")
    topics = sorted({t for _, t in subs})
    batch = mesh_batches.Batch(0, topics[0], topics[-1], len(subs))
    linked = spark.createDataFrame(sorted(dials), "dialer long, listener long")
    rows = mesh_batches.on_spark(frame, batch, request.params(), 8, None, linked).localCheckpoint()
    assert {tuple(r) for r in mesh_batches.spark_mesh(rows).collect()} == oracle.rows()
    spread = DisseminateRequest(run[S.RUN_ID], 2, seed=9, kind="gossipsub-spread", flood_publish=True)
    done = run_dissemination(spark, lakehouse, spread, progress=False)
    publications = lakehouse.read(S.ROUTING_PUBLICATIONS).filter(F.col(S.ROUTING_RUN_ID) == done[S.ROUTING_RUN_ID])
    for pub in publications.collect():  # flood publishing reaches the publisher's connected subscribers
        connected = {b for a, b in dials if a == pub[S.PUBLISHER]} | {a for a, b in dials if b == pub[S.PUBLISHER]}
        members = {p for p, t in subs if t == pub[S.TOPIC_ID]}
        assert pub[S.RECEIVED] >= len(connected & members)


@pytest.mark.slow  # two more simulations with commits, about 60 s
def test_a_gossipsub_run_stopped_mid_way_resumes_after_its_last_batch(spark, lakehouse, monkeypatch):
    from pyspark.sql import functions as F

    from overlay import schema as S
    from overlay.instance.synthetic import SyntheticSpec
    from pipelines import gossipsub
    from tests.helpers import store_instance

    subs = store_instance(spark, lakehouse, "r", SyntheticSpec("zipf", 30, 5, 1, 3, seed=4))
    request = gossipsub.GossipsubRequest("r", 9, seed=5, profile="spec")
    real, calls = gossipsub._commit, []

    def power_cut_at_batch_3(*args):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("power cut")
        return real(*args)

    monkeypatch.setattr(gossipsub, "_commit", power_cut_at_batch_3)
    with pytest.raises(RuntimeError, match="power cut"):
        gossipsub.run_gossipsub(spark, lakehouse, request, snapshot_every=8, progress=False, diameters=False)
    run_id = request.default_run_id()
    mine = lambda table: lakehouse.read(table).filter(F.col(S.RUN_ID) == run_id)  # noqa: E731
    assert lakehouse.run_row(run_id)[S.STATUS] == S.FAILED
    assert mine(S.GOSSIPSUB_BATCHES).agg(F.max(S.BATCH)).first()[0] == 1
    monkeypatch.setattr(gossipsub, "_commit", real)
    # Resumed in batches of another size: the run goes on after the last topic committed.
    run = gossipsub.run_gossipsub(spark, lakehouse, request, snapshot_every=5, progress=False, diameters=False)
    assert run[S.STATUS] == S.COMPLETE
    oracle = oracle_of(subs, SPEC, 5)
    counts = []
    for _ in range(9):
        oracle.heartbeat()
        counts.append((oracle.heartbeats, oracle.grafts, oracle.prunes))
    beats = mine(S.GOSSIPSUB_HEARTBEATS).orderBy(S.HEARTBEAT).collect()
    assert [(r[S.HEARTBEAT], r[S.GRAFTS], r[S.PRUNES]) for r in beats] == counts  # each topic once
    assert {(r[S.TOPIC_ID], r[S.NODE_ID], r[S.PEER_ID]) for r in mine(S.GOSSIPSUB_MESH).collect()} == oracle.rows()


@pytest.mark.parametrize("seed", range(6))
def test_a_publications_spread_is_the_oracles(seed):
    """Meshes the heartbeats built, a latency model's positions, a share of members down: eager
    push with gossip (gossipsub), without (a designed overlay's flood), and flood publishing."""
    import math

    from overlay.gossip.connections import TopicLinks
    from overlay.gossip.spread import SpreadParams, spread
    from overlay.rappel.coordinates import LatencyModel
    from tests.gossipsub_oracle import Spread, spread_oracle

    subs = random_subscriptions(seed, 60, 4, 2)
    oracle = GossipsubOracle(subs, Params(d=3, d_low=2, d_high=5, d_out=1, high=5), seed=seed)
    for _ in range(6):
        oracle.heartbeat()
    draw = random.Random(seed)
    topic = draw.choice(sorted(oracle.members))
    nodes = np.asarray(sorted(oracle.members[topic]), dtype=np.int64)
    at = {int(v): i for i, v in enumerate(nodes)}
    coordinates = LatencyModel().coordinates(seed, nodes)
    up_ids = {int(v) for v in nodes if draw.random() > 0.2}
    publisher = draw.choice(sorted(up_ids))
    mesh = {int(v): oracle.mesh[(int(v), topic)] for v in nodes}
    indptr = np.cumsum([0] + [len(mesh[int(v)]) for v in nodes])
    indices = np.asarray([at[q] for v in nodes for q in sorted(mesh[int(v)])], dtype=np.int64)
    up = np.asarray([int(v) in up_ids for v in nodes])

    def latency(a, b):
        (xa, ya), (xb, yb) = coordinates[at[a]], coordinates[at[b]]
        return round(1000.0 * math.hypot(xa - xb, ya - yb))

    pairs = [(int(a), int(b)) for a in nodes for b in nodes if a < b and draw.random() < 0.3]
    linked = {int(v): set() for v in nodes}
    for a, b in pairs:
        linked[a].add(b)
        linked[b].add(a)
    neighbours = [sorted(at[q] for q in linked[int(v)]) for v in nodes]
    links = TopicLinks(
        np.cumsum([0] + [len(row) for row in neighbours]).astype(np.int64),
        np.asarray([q for row in neighbours for q in row], dtype=np.int64),
        np.zeros(sum(len(row) for row in neighbours), dtype=bool),
    )
    for gossip, flood, idontwant, mbps, connected in (
        (True, False, 0, 0.0, False), (False, False, 0, 0.0, False), (True, True, 0, 0.0, False),
        (True, False, 1024, 0.0, False), (True, False, 1024, 20.0, False), (True, False, 0, 20.0, False),
        (False, True, 1024, 20.0, False), (True, True, 0, 0.0, True),
    ):  # fmt: skip
        knobs = {"message_bytes": 4096, "idontwant_bytes": idontwant, "upload_mbps": mbps}
        spec = Spread(heartbeat_us=700_000, gossip=gossip, flood_publish=flood, **knobs)
        reach = linked if connected else None
        first, counts = spread_oracle(nodes.tolist(), mesh, latency, up_ids, publisher, 11, seed, spec, reach)
        params = SpreadParams(heartbeat_us=700_000, gossip=gossip, flood_publish=flood, seed=seed, **knobs)
        ours = spread(nodes, indptr, indices, coordinates, up, at[publisher], 11, params, links if connected else None)
        got = {int(nodes[i]): (int(t), int(h)) for i, (t, h) in enumerate(zip(ours.first_us, ours.hops)) if t >= 0}
        assert got == first
        names = ("messages", "duplicates", "ihave", "iwant", "idontwant", "bytes")
        assert (ours.messages, ours.duplicates, ours.ihave, ours.iwant, ours.idontwant, ours.bytes_sent) == tuple(
            counts[k] for k in names
        )


@pytest.mark.parametrize("regime", ["memory", pytest.param("spark", marks=pytest.mark.ci)])
def test_disseminate_spreads_as_the_oracle_on_meshes_and_topic_subgraphs(spark, simulated, regime):
    """`disseminate --protocol gossipsub-spread` on the gossipsub run (its meshes, lazy gossip) and
    `--protocol flood` (the run's topic subgraphs, no gossip) with a fifth of the nodes down, in
    the driver's memory and (the CI pass) as Spark tasks: every delivery, its hops and latency,
    and each publication's counts are the oracle's."""
    import math

    from pyspark.sql import functions as F

    from overlay import schema as S
    from overlay.gossip.cycles import CycleRegime
    from overlay.rappel.coordinates import LatencyModel
    from pipelines.disseminate import DisseminateRequest, run_dissemination
    from pipelines.lakehouse import Lakehouse
    from tests.gossipsub_oracle import Spread, rnd, spread_oracle

    stored, run, subs, oracle, _ = simulated
    members = {}
    for p, t in subs:
        members.setdefault(t, set()).add(p)
    links = oracle.links()
    n = max(p for p, _ in subs) + 1
    position = LatencyModel().coordinates(4, np.arange(n, dtype=np.int64))

    def latency(a, b):
        return round(1000.0 * math.hypot(position[a, 0] - position[b, 0], position[a, 1] - position[b, 1]))

    lakehouse = Lakehouse(spark, stored.root, stored.lineage, CycleRegime(regime))
    for kind, gossip in (("gossipsub-spread", True), ("flood", False)):
        flood = False if gossip else None  # the profile's flood publishing off: the mesh alone
        request = DisseminateRequest(
            run[S.RUN_ID], 3, seed=9, mass_share=0.2, kind=kind, model_seed=4, flood_publish=flood
        )
        done = run_dissemination(spark, lakehouse, request, f"{kind}-{regime}", progress=False)
        rid = done[S.ROUTING_RUN_ID]
        mine = lambda table, rid=rid, lh=lakehouse: lh.read(table).filter(F.col(S.ROUTING_RUN_ID) == rid)  # noqa: E731
        publications = mine(S.ROUTING_PUBLICATIONS).collect()
        assert len(publications) == 3
        expected_total = delivered_total = 0
        for pub in publications:
            topic, nodes = pub[S.TOPIC_ID], sorted(members[pub[S.TOPIC_ID]])
            publisher = min(nodes, key=lambda v: (rnd(9, 11, topic, v), v))
            assert pub[S.PUBLISHER] == publisher
            up = {v for v in nodes if v == publisher or rnd(9, 12, 0, v) >= int(0.2 * 2.0**64)}
            if gossip:
                mesh = {v: oracle.mesh[(v, topic)] for v in nodes}
            else:
                mesh = {v: {w for w in nodes if (min(v, w), max(v, w)) in links} for v in nodes}
            first, counts = spread_oracle(nodes, mesh, latency, up, publisher, pub[S.PUB_ID], 9, Spread(gossip=gossip))
            got = {
                r[S.NODE_ID]: (round(r[S.LATENCY_MS] * 1000), r[S.HOPS])
                for r in mine(S.ROUTING_DELIVERIES).filter(F.col(S.PUB_ID) == pub[S.PUB_ID]).collect()
            }
            assert got == {v: f for v, f in first.items() if v != publisher}
            assert (pub[S.RECEIVED], pub[S.DUPLICATE_DELIVERIES], pub[S.IHAVE], pub[S.IWANT]) == (
                counts["messages"],
                counts["duplicates"],
                counts["ihave"],
                counts["iwant"],
            )
            assert (pub[S.IDONTWANT], pub[S.BYTES_SENT]) == (counts["idontwant"], counts["bytes"])
            assert pub[S.EXPECTED_DELIVERIES] == len(up) - 1 and pub[S.DELIVERIES] == len(got)
            expected_total += len(up) - 1
            delivered_total += len(got)
        metrics = mine(S.ROUTING_METRICS).first()
        assert metrics[S.DELIVERY_RATIO] == delivered_total / expected_total and metrics[S.ROUTING_OVERHEAD] == 0
        assert done[S.STATUS] == S.COMPLETE


@pytest.mark.parametrize("seed", range(3))
def test_under_churn_and_a_mass_failure_each_topic_keeps_the_oracles_meshes(seed):
    """Sessions of a few heartbeats and a third of the nodes down from heartbeat 8 to 14: gone
    peers leave the meshes, returning nodes join afresh, heartbeat by heartbeat as the oracle."""
    from overlay.rappel.presence import Presence

    subs = random_subscriptions(seed, 50, 6, 3)
    presence = Presence(seed=seed, share=0.3, fail_round=8, return_round=14, mean_online=12, mean_offline=4)
    params = Params(d=3, d_low=2, d_high=5, d_out=1, prune_backoff_us=6_000_000, high=5)
    oracle = oracle_of(subs, params, seed, up=presence.up)
    measures, rows = per_topic(subs, ours(params, seed), 24, presence)
    downs = 0
    for h, expected in enumerate(measures, 1):
        oracle.heartbeat()
        assert oracle.measures() == expected, f"heartbeat {h}"
        down = [v for v in range(50) if not presence.up(v, h)]
        downs += len(down)
        assert all(not (set(oracle.mesh[(v, t)]) & set(down)) for (v, t) in oracle.mesh)  # nobody meshes a down node
    assert rows == oracle.rows()
    assert downs > 50  # the churn and the failure took nodes down


@pytest.mark.slow  # one more simulation, about 30 s
def test_simulate_gossipsub_under_churn_stores_the_oracles_meshes(spark, simulated):
    from pyspark.sql import functions as F

    from overlay import schema as S
    from pipelines.gossipsub import GossipsubRequest, run_gossipsub

    lakehouse, _, subs, _, _ = simulated
    request = GossipsubRequest("g", 10, seed=4, churn=(0.2, 0.05), failure=(0.25, 4, 8))
    run = run_gossipsub(spark, lakehouse, request, snapshot_every=4, progress=False, diameters=False)
    assert run[S.RUN_ID] == "g.gossipsub.go-libp2p.h10.churn0.2-0.05.fail0.25at4-8.s4"
    oracle = oracle_of(subs, DEFAULTS, 4, up=request.presence().up)
    for _ in range(10):
        oracle.heartbeat()
    stored = lakehouse.read(S.GOSSIPSUB_MESH).filter(F.col(S.RUN_ID) == run[S.RUN_ID]).collect()
    assert {(r[S.TOPIC_ID], r[S.NODE_ID], r[S.PEER_ID]) for r in stored} == oracle.rows()
    assert any(not request.presence().up(v, 10) for v in range(40))  # some node is down at the end


@pytest.mark.slow  # five overlays, ten spreads and a routing run: about 2 min
def test_compare_meshes_stores_one_row_per_system_from_its_runs(spark, simulated, tmp_path):
    """Every row is read off the runs it names; MinMaxODA is a TCO, so its flood with every node up
    delivers every publication; only Pie's routing may send copies to non-subscribers; GPM keeps to
    gossipsub's max degree; a rerun reuses every run."""
    from pyspark.sql import functions as F

    from overlay import schema as S
    from pipelines.mesh_compare import SYSTEMS, MeshComparisonRequest, run_mesh_comparison

    lakehouse = simulated[0]
    request = MeshComparisonRequest("g", seed=3, publications=3, heartbeats=12)
    rows = {r[S.SYSTEM]: r for r in run_mesh_comparison(spark, lakehouse, request, progress=False).collect()}
    assert set(rows) == set(SYSTEMS)
    assert rows["gossipsub"][S.RUN_ID] == simulated[1][S.RUN_ID]  # the fixture's run, reused
    for system, row in rows.items():
        metrics = lakehouse.read(S.OVERLAY_METRICS).filter(F.col(S.RUN_ID) == row[S.RUN_ID]).first()
        assert (row[S.AVG_DEGREE], row[S.MAX_DEGREE]) == (metrics[S.AVG_DEGREE], metrics[S.MAX_DEGREE]), system
        routed = lakehouse.read(S.ROUTING_METRICS).filter(F.col(S.ROUTING_RUN_ID) == row[S.ROUTING_RUN_ID]).first()
        assert row[S.DELIVERY_RATIO] == routed[S.DELIVERY_RATIO] and row[S.AVG_PATH_LENGTH] == routed[S.AVG_PATH_LENGTH]
        assert row[S.IRRELEVANT_PER_DELIVERY] == 0 or system == "SL with Pie"  # floods reach subscribers only
        assert (row[S.DELIVERY_RATIO_20] is None) == (system == "SL with Pie")
    assert rows["MinMaxODA"][S.DELIVERY_RATIO] == 1.0 and rows["MinMaxODA"][S.TCO_SUPPORT] == 1.0
    assert rows["GPM (gossipsub's max degree)"][S.MAX_DEGREE] <= rows["gossipsub"][S.MAX_DEGREE]
    before = lakehouse.read(S.ROUTING_RUNS).count()
    run_mesh_comparison(spark, lakehouse, request, progress=False)
    assert lakehouse.read(S.ROUTING_RUNS).count() == before
    from pipelines.report import run_report

    run_report(spark, lakehouse, tmp_path / "report")
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## gossipsub beside the papers' overlays" in text and (tmp_path / "report" / "meshes.png").is_file()
    assert all(system in text for system in SYSTEMS)


# A gossipsub run's fixed costs on a fresh lakehouse, one batch of topics, from its claim on (a
# fresh claim: no debris to clear; the batch's meshes and measures, the heartbeats and the meshes'
# union from memory, the evaluation from the links in memory, the completion), and its spread's
# (the deliveries, publications and metrics written, the completion): measured and pinned, since
# each commit and each job is latency.
GOSSIPSUB_COMMITS = 7
GOSSIPSUB_JOBS = 22
SPREAD_COMMITS = 4
SPREAD_JOBS = 20


def test_a_gossipsub_run_and_its_spread_count_their_spark_jobs_and_delta_commits(spark, tmp_path):
    """The counts are stored on the run rows and pinned here, so fixed costs cannot creep back."""
    from overlay import schema as S
    from pipelines.disseminate import DisseminateRequest, run_dissemination
    from pipelines.gossipsub import GossipsubRequest, run_gossipsub
    from tests.helpers import counting_lakehouse

    lakehouse = counting_lakehouse(spark, tmp_path)
    run_gossipsub(spark, lakehouse, GossipsubRequest("c", 4, seed=1), run_id="warm", progress=False, diameters=False)
    run = run_gossipsub(spark, lakehouse, GossipsubRequest("c", 6, seed=2), progress=False, diameters=False)
    assert run[S.REGIME] == "memory"
    assert (run[S.DELTA_COMMITS], run[S.SPARK_JOBS]) == (GOSSIPSUB_COMMITS, GOSSIPSUB_JOBS)
    warm = DisseminateRequest("warm", 3, seed=1, kind="gossipsub-spread")
    run_dissemination(spark, lakehouse, warm, progress=False)
    spread = run_dissemination(spark, lakehouse, DisseminateRequest(run[S.RUN_ID], 3, seed=2, kind="gossipsub-spread"), progress=False)  # fmt: skip
    assert (spread[S.DELTA_COMMITS], spread[S.SPARK_JOBS]) == (SPREAD_COMMITS, SPREAD_JOBS)
