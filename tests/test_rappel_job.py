"""`simulate rappel`: a run stored round by round whose every measure is the oracle's
(tests/rappel_trees_oracle.py), its friendships the run's links, and its input errors clear;
Scribe routed on the run's inputs (Fig. 10) against the routing oracle; Fig. 1's friend bound."""

import math
import re
import runpy
from pathlib import Path

import numpy as np
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F
from rappel_trees_oracle import coupled_run

from overlay import schema as S
from overlay.design.baselines import numbered_links
from overlay.errors import InputError
from overlay.instance.synthetic import SyntheticSpec
from overlay.rappel.simulation import RappelSimulation
from pipelines import rappel
from pipelines.churn import SESSIONS, MassFailure, Sessions, parse_churn, parse_mass_failure
from pipelines.rappel import RappelRequest, run_rappel
from tests import routing_oracle
from tests.helpers import RAPPEL_RUN_TABLES, ring_network, store_instance

NODES = 50
# 9 min: 18 rounds; 40% of the nodes fail at 3 min and return at 6 min (Fig. 7 in small).
REQUEST = RappelRequest("rappel-50", hours=0.15, seed=3, alpha=3, beta=3, mode="exact", failure=(0.4, 0.05, 0.1))


@pytest.fixture(scope="module")
def simulated(spark, module_lakehouse):
    pairs = store_instance(spark, module_lakehouse, "rappel-50", SyntheticSpec("zipf", NODES, 8, 1, 4, seed=5))
    run = run_rappel(spark, module_lakehouse, REQUEST, snapshot_every=7, progress=False, diameters=False)
    subs: dict[int, set] = {v: set() for v in range(NODES)}
    for v, t in pairs:
        subs[v].add(t)
    return module_lakehouse, run, subs


def stored(lakehouse, table, run_id):
    return lakehouse.read(table).filter(F.col(S.RUN_ID) == run_id)


def oracle_rounds(lakehouse, run_id, subs):
    """The oracle on the run's stored inputs (coordinates, publishers), round by round."""
    coords = {r[S.NODE_ID]: (r[S.X_MS], r[S.Y_MS]) for r in lakehouse.read(S.NODE_COORDINATES).collect()}
    publishers = [r[S.PUBLISHER] for r in stored(lakehouse, S.FEED_PUBLISHERS, run_id).orderBy(S.TOPIC_ID).collect()]
    presence = REQUEST.presence(frozenset(publishers))
    return publishers, coupled_run(
        NODES,
        subs,
        [coords[v] for v in range(NODES)],
        publishers,
        REQUEST.rounds,
        seed=REQUEST.seed,
        alpha=REQUEST.alpha,
        mode=REQUEST.mode,
        presence_down=lambda r: presence.down(range(NODES), r),
        beta=REQUEST.beta,
    )


@pytest.mark.slow  # an 18-round run stored and evaluated, about 2 min
def test_a_rappel_run_stores_the_oracles_rounds_links_and_trees(simulated):
    lakehouse, run, subs = simulated
    run_id = run[S.RUN_ID]
    assert run[S.STATUS] == S.COMPLETE and REQUEST.rounds == 18
    publishers, rounds = oracle_rounds(lakehouse, run_id, subs)
    by_round = {r[S.ROUND]: r for r in stored(lakehouse, S.RAPPEL_ROUNDS, run_id).collect()}
    assert sorted(by_round) == list(range(1, 19))
    delivered = stored(lakehouse, S.RAPPEL_DELIVERIES, run_id)
    for r, fo, trees in rounds:
        row = by_round[r]
        up = [v for v in range(NODES) if v not in fo.down(r)]
        assert row[S.NODES_UP] == len(up)
        assert row[S.COVERED] == sum(fo.covered(v) for v in up)
        latencies = [arrival - published for *_, published, arrival, _ in trees.deliveries]
        assert row[S.DELIVERIES] == len(latencies) and row[S.NOISE] == 0
        if latencies:
            assert row[S.LATENCY_MEDIAN] == pytest.approx(float(np.median(latencies)))
            assert row[S.LATENCY_P95] == pytest.approx(float(np.percentile(latencies, 95)))
        got = sorted(
            (d[S.TOPIC_ID], d[S.NODE_ID], d[S.UPDATE_ID], d[S.ARRIVAL_MS])
            for d in delivered.filter(F.col(S.ROUND) == r).collect()
        )
        assert got == sorted((f, x, u, arrival) for f, x, u, _, arrival, _ in trees.deliveries)
        if r == REQUEST.rounds:
            final_friends = {v: set(fo.friends[v]) for v in range(NODES)}
            final_trees = {f: trees.tree(f) for f in range(len(publishers))}
    assert 0 < by_round[7][S.NODES_UP] < NODES  # the failure happened
    links = {(e[S.U], e[S.V]) for e in stored(lakehouse, S.OVERLAY_EDGES, run_id).collect()}
    assert links == {(min(v, q), max(v, q)) for v, qs in final_friends.items() for q in qs}
    layout = {
        (t[S.TOPIC_ID], t[S.NODE_ID]): t[S.PARENT]
        for t in stored(lakehouse, S.FEED_TREES, run_id).filter(F.col(S.ROUND) == 18).collect()
    }
    assert layout == {
        (f, x): (None if fields[1] == -1 else fields[1])
        for f, tree in final_trees.items()
        for x, fields in tree.items()
        if fields[0]
    }
    # Neighbour overlap by hand: friends, then parent and children in every tree (links on the
    # publisher's tree only), one count per role, each neighbour once.
    roles = {v: [*final_friends[v]] for v in range(NODES)}
    for f, tree in final_trees.items():
        for x in tree:
            if rooted(tree, x, publishers[f]) and tree[x][1] != -1:
                roles[x].append(tree[x][1])
                roles[tree[x][1]].append(x)
    for r in stored(lakehouse, S.RAPPEL_NODES, run_id).collect():
        mine = roles[r[S.NODE_ID]]
        assert (r[S.OVERLAP_ROLES], r[S.OVERLAP_NEIGHBOURS]) == (len(mine), len(set(mine))), r[S.NODE_ID]
        assert (r[S.FRIENDS], r[S.FEEDS]) == (len(final_friends[r[S.NODE_ID]]), len(subs[r[S.NODE_ID]]))


def rooted(tree: dict, x: int, root: int) -> bool:
    """Whether x's chain of online parents that list it reaches the root."""
    while x != root:
        online, parent = tree[x][0], tree[x][1]
        if not online or parent == -1 or parent not in tree or not tree[parent][0] or x not in tree[parent][2]:
            return False
        x = parent
    return tree[root][0]


@pytest.mark.slow  # the same run
def test_a_rappel_runs_traffic_adds_up(simulated):
    lakehouse, run, _ = simulated
    run_id = run[S.RUN_ID]
    traffic = stored(lakehouse, S.RAPPEL_TRAFFIC, run_id)
    totals = traffic.agg(F.sum(S.DATA_MESSAGES), F.sum(S.FRIENDSHIP_MESSAGES), F.sum(S.REJOINS_IN)).first()
    rounds = stored(lakehouse, S.RAPPEL_ROUNDS, run_id).agg(F.sum(S.DATA_MESSAGES), F.sum(S.DELIVERIES)).first()
    assert totals[0] == rounds[0] == rounds[1]  # one update message per delivery
    assert totals[1] > 0


RESUMED_TABLES = RAPPEL_RUN_TABLES


@pytest.mark.slow  # the same run stopped twice and finished (about 25 more rounds, 6 min)
def test_a_rappel_run_stopped_mid_way_resumes_to_the_uninterrupted_run(spark, simulated, lakehouse, monkeypatch):
    straight, run, _ = simulated
    store_instance(spark, lakehouse, "rappel-50", SyntheticSpec("zipf", NODES, 8, 1, 4, seed=5))
    run_id = REQUEST.default_run_id()
    spans = []  # the rounds each attempt simulates
    real_run = RappelSimulation.run

    def recorded_run(self, state, trees, first, last, **kwargs):
        spans.append((first, last))
        return real_run(self, state, trees, first, last, **kwargs)

    monkeypatch.setattr(RappelSimulation, "run", recorded_run)
    real_append = lakehouse.append_run_rows
    trees_stored = []

    def crash_before_the_second_trees(table, rid, frame):
        if table == S.RAPPEL_TREE_STATES:
            trees_stored.append(rid)
            if len(trees_stored) == 2:  # round 14: its states are stored, its trees not
                raise RuntimeError("power cut inside a snapshot")
        real_append(table, rid, frame)

    monkeypatch.setattr(lakehouse, "append_run_rows", crash_before_the_second_trees)
    with pytest.raises(RuntimeError, match="inside a snapshot"):
        run_rappel(spark, lakehouse, REQUEST, snapshot_every=7, progress=False, diameters=False)
    assert lakehouse.run_row(run_id)[S.STATUS] == S.FAILED
    assert stored(lakehouse, S.RAPPEL_ROUNDS, run_id).agg(F.max(S.ROUND)).first()[0] == 14  # debris past round 7
    assert stored(lakehouse, S.RAPPEL_STATES, run_id).agg(F.max(S.ROUND)).first()[0] == 14
    monkeypatch.setattr(lakehouse, "append_run_rows", real_append)

    def crash_before_the_links(*args):
        raise RuntimeError("power cut after the last snapshot")

    monkeypatch.setattr(rappel, "numbered_links", crash_before_the_links)
    with pytest.raises(RuntimeError, match="after the last snapshot"):
        run_rappel(spark, lakehouse, REQUEST, snapshot_every=7, progress=False, diameters=False)
    assert stored(lakehouse, S.RAPPEL_TREE_STATES, run_id).agg(F.max(S.ROUND)).first()[0] == REQUEST.rounds
    monkeypatch.setattr(rappel, "numbered_links", numbered_links)
    # The third attempt simulates nothing: the links and node measures come from round 18's snapshot.
    assert (
        run_rappel(spark, lakehouse, REQUEST, snapshot_every=7, progress=False, diameters=False)[S.STATUS] == S.COMPLETE
    )
    assert spans == [(1, 18), (8, 18)]
    for table in RESUMED_TABLES:
        got, want = (
            stored(house, table, rid).drop(S.RUN_ID, S.SECONDS, S.COMPUTED_AT)
            for house, rid in ((lakehouse, run_id), (straight, run[S.RUN_ID]))
        )
        assert got.count() == want.count() > 0, table.name
        assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
    snapshots = sorted(
        r[0] for r in stored(lakehouse, S.RAPPEL_TREE_STATES, run_id).select(S.ROUND).distinct().collect()
    )
    assert snapshots == [7, 14, 18]


@pytest.mark.slow  # the same run (about 20 s)
def test_the_rappel_notebook_shows_a_run_and_a_nodes_snapshots(simulated, monkeypatch, capsys, tmp_path):
    lakehouse, run, _ = simulated
    for name, value in {
        "LAKEHOUSE": lakehouse.root,
        "RUN_ID": run[S.RUN_ID],
        "NODE": "3",
        "FIGURES": str(tmp_path),
    }.items():
        monkeypatch.setenv(f"OVERLAY_LAB_{name}", value)
    runpy.run_path(str(Path(__file__).resolve().parent.parent / "notebooks" / "rappel_run.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert f"Rounds of {run[S.RUN_ID]}" in out and "Feeds after round 18" in out and "figure saved" in out
    assert (tmp_path / "update_latency_over_time.png").is_file()
    node = out[out.index(f"## Node 3 in {run[S.RUN_ID]}") :]
    assert [int(r) for r in re.findall(r"^\|(\d+)\s*\|", node, flags=re.M)] == [7, 14, 18]  # the snapshots


def test_rappel_requests_refuse_bad_settings():
    assert parse_mass_failure("0.5@2-3", "hours") == MassFailure(0.5, 2.0, 3.0)
    assert parse_mass_failure("0.8@1", "hours") == MassFailure(0.8, 1.0, None)
    assert parse_churn("sessions:240/30", (SESSIONS,)) == Sessions(240.0, 30.0)
    with pytest.raises(InputError, match="SHARE@FROM-TO"):
        parse_mass_failure("half@2", "hours")
    with pytest.raises(InputError, match="TO must exceed FROM"):
        parse_mass_failure("0.5@3-2", "hours")
    with pytest.raises(InputError, match="sessions:ON/OFF"):
        parse_churn("0.01", (SESSIONS,))
    with pytest.raises(InputError, match="sessions:ON/OFF"):
        parse_churn("substitution:0.01", (SESSIONS,))  # a kind Rappel does not simulate
    with pytest.raises(InputError, match="return after they fail"):
        RappelRequest("x", failure=(0.5, 2.0, 1.0)).check()
    with pytest.raises(InputError, match="--hours must be positive"):
        RappelRequest("x", hours=0).check()
    with pytest.raises(InputError, match="--proper-leaves needs --churn"):
        RappelRequest("x", proper_leaves=0.5).check()
    with pytest.raises(InputError, match=r"proper leaves must be in \[0, 1\]"):
        RappelRequest("x", churn=(240.0, 30.0), proper_leaves=1.5).check()
    # a run without proper leaves keeps the parameters stored before the setting existed
    assert "proper_leaves" not in RappelRequest("x").params_json()
    assert '"proper_leaves": 0.5' in RappelRequest("x", churn=(240.0, 30.0), proper_leaves=0.5).params_json()


@pytest.fixture(scope="module")
def scribed(spark, simulated):
    """Scribe on the run's feeds (route --feeds) over a random ring of the same instance."""
    from pipelines.design import DesignRequest, run_design
    from pipelines.route import RouteRequest, run_route

    lakehouse, run, _ = simulated
    overlay = run_design(
        spark,
        lakehouse,
        DesignRequest("rappel-50", "swico", short="random", long="random"),
        progress=False,
        diameters=False,
    )
    routed = run_route(
        spark, lakehouse, RouteRequest(overlay[S.RUN_ID], "scribe", 40, 2, feeds=run[S.RUN_ID]), progress=False
    )
    return overlay, routed


@pytest.mark.slow  # the same run, a small-world design on its instance and a routing run: about 1 min
def test_scribe_on_a_rappel_runs_inputs_roots_trees_at_publishers(simulated, scribed):
    """route --feeds: every publication comes from its feed's publisher, Scribe's tree is rooted
    there and latencies come from the run's coordinates: deliveries, hops and latencies are the
    routing oracle's with RP(t) = the publisher; Scribe reaches subscribers through
    non-subscribers (Fig. 10), Rappel (the run above) never does."""
    lakehouse, run, subs = simulated
    overlay, routed = scribed
    assert routed[S.STATUS] == S.COMPLETE
    rid = routed[S.ROUTING_RUN_ID]

    class Ring:
        ring = lakehouse.read(S.RING).filter(F.col(S.RUN_ID) == overlay[S.RUN_ID])
        fingers = lakehouse.read(S.FINGERS).filter(F.col(S.RUN_ID) == overlay[S.RUN_ID])

    pairs = [(v, t) for v, ts in subs.items() for t in ts]
    position, fingers, by_topic = ring_network(Ring, pairs)
    node_at = {p: v for v, p in position.items()}
    coords = {r[S.NODE_ID]: (r[S.X_MS], r[S.Y_MS]) for r in lakehouse.read(S.NODE_COORDINATES).collect()}
    publishers = {r[S.TOPIC_ID]: r[S.PUBLISHER] for r in stored(lakehouse, S.FEED_PUBLISHERS, run[S.RUN_ID]).collect()}

    def link(a, b):
        return math.dist(coords[node_at[a]], coords[node_at[b]])

    workload = lakehouse.read(S.ROUTING_PUBLICATIONS).filter(F.col(S.ROUTING_RUN_ID) == rid).collect()
    feeds = sorted(t for t, ts in by_topic.items() if ts)
    assert sorted((w[S.PUB_ID], w[S.TOPIC_ID], w[S.PUBLISHER]) for w in workload) == [
        (i, feeds[i % len(feeds)], publishers[feeds[i % len(feeds)]]) for i in range(40)
    ]  # every feed in turn
    expected, pure = {}, 0
    for w in workload:
        source = position[w[S.PUBLISHER]]
        routed_one = routing_oracle.route_publication(
            "scribe", fingers, by_topic, w[S.TOPIC_ID], source, len(position), link, rp=source
        )
        topic_subs = by_topic.get(w[S.TOPIC_ID], set())
        assert all(hops <= len(position) for _, hops in routed_one.deliveries(topic_subs, source))
        for at, hops in routed_one.deliveries(topic_subs, source):
            expected[w[S.PUB_ID], node_at[at]] = (hops, routed_one.latencies(topic_subs, source)[at], link(source, at))
        pure += routed_one.pure_forwards(topic_subs)
    got = {
        (d[S.PUB_ID], d[S.NODE_ID]): (d[S.HOPS], d[S.LATENCY_MS], d[S.DIRECT_MS])
        for d in lakehouse.read(S.ROUTING_DELIVERIES).filter(F.col(S.ROUTING_RUN_ID) == rid).collect()
    }
    assert got.keys() == expected.keys()
    for key, (hops, latency, direct) in expected.items():
        assert got[key][0] == hops and got[key][1:] == pytest.approx((latency, direct), rel=1e-12), key
    metrics = lakehouse.read(S.ROUTING_METRICS).filter(F.col(S.ROUTING_RUN_ID) == rid).first()
    assert metrics[S.ROUTING_OVERHEAD] == pure > 0  # Scribe forwards through non-subscribers
    assert metrics[S.LATENCY_MEDIAN] > 0 and metrics[S.STRETCH_MEDIAN] >= 1
    noise = stored(lakehouse, S.RAPPEL_ROUNDS, run[S.RUN_ID]).agg(F.sum(S.NOISE)).first()[0]
    assert noise == 0  # Rappel: none


@pytest.mark.slow  # the same runs, and the report (about 40 s)
def test_the_report_checks_rappel_against_the_paper(spark, simulated, scribed, tmp_path):
    """The report's Rappel part: its figures drawn, its numbers those of the stored tables
    (computed here by hand), and each check's verdict."""
    from pipelines.report import run_report

    lakehouse, run, subs = simulated
    _, routed = scribed
    data = run_report(spark, lakehouse, tmp_path / "report")
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## Friendship overlays and per-feed trees (Rappel)" in text
    assert {"rappel_latency.png", "rappel_traffic.png"} <= set(data.files)
    nodes = stored(lakehouse, S.RAPPEL_NODES, run[S.RUN_ID]).collect()
    subscribers = [r for r in nodes if r[S.FEEDS] > 0]
    full = sum(r[S.COVERED] == r[S.FEEDS] for r in subscribers) / len(subscribers)
    row = data.rappel.runs.set_index(S.RUN_ID).loc[run[S.RUN_ID]]
    assert row["full_coverage_share"] == pytest.approx(full)
    multi = [r for r in subscribers if r[S.FEEDS] > 1]
    assert row["multi_feed_full_share"] == pytest.approx(sum(r[S.COVERED] == r[S.FEEDS] for r in multi) / len(multi))
    many = [r for r in nodes if r[S.FEEDS] >= 9]
    if many:
        assert row["many_feeds_alpha_covered_share"] == pytest.approx(
            sum(r[S.COVERED] >= REQUEST.alpha for r in many) / len(many)
        )
    by_count = {}
    for r in subscribers:
        by_count.setdefault(min(r[S.FEEDS], 9), []).append(r)
    coverage = data.rappel.coverage[data.rappel.coverage[S.RUN_ID] == run[S.RUN_ID]]
    assert {
        int(f): (int(n), c) for f, n, c in zip(coverage[S.FEEDS], coverage["nodes"], coverage["full_coverage_share"])
    } == {
        f: (len(rs), pytest.approx(sum(r[S.COVERED] == r[S.FEEDS] for r in rs) / len(rs))) for f, rs in by_count.items()
    }
    assert "rappel_coverage.png" in data.files
    assert row["overlap_above_1_share"] == pytest.approx(sum((r[S.OVERLAP_RATIO] or 0) > 1 for r in nodes) / len(nodes))
    load = lakehouse.read(S.ROUTING_LOAD).filter(F.col(S.ROUTING_RUN_ID) == routed[S.ROUTING_RUN_ID]).collect()
    forwarders = sum(r[S.PURE_FORWARDS] > 0 for r in load)
    assert int(data.rappel.scribe.iloc[0]["non_subscriber_forwarders"]) == forwarders > 0
    scribe_traffic = data.rappel.traffic[data.rappel.traffic["run"] == routed[S.ROUTING_RUN_ID]]
    by_feeds = {}
    for r in load:
        by_feeds.setdefault(len(subs[r[S.NODE_ID]]), []).append(r[S.SENT])
    assert {int(f): m for f, m in zip(scribe_traffic[S.FEEDS], scribe_traffic["data_sent_mean"])} == pytest.approx(
        {f: sum(v) / len(v) for f, v in by_feeds.items()}
    )
    assert f"Noise, {run[S.RUN_ID]}: 0 updates reached a non-subscriber (zero by construction): holds." in text
    assert (
        f"Fig. 10, {routed[S.ROUTING_RUN_ID]}: scribe reaches subscribers through {forwarders} non-subscribers" in text
    )
    assert f"Fig. 7, {run[S.RUN_ID]}: the run does not reach 10 min after the return; no check." in text


@pytest.mark.slow  # the same runs
def test_route_feeds_needs_a_rappel_run(spark, simulated, scribed):
    from pipelines.route import RouteRequest, run_route

    lakehouse, _, _ = simulated
    overlay, _ = scribed
    with pytest.raises(InputError, match="--feeds takes a Rappel run"):
        run_route(
            spark, lakehouse, RouteRequest(overlay[S.RUN_ID], "scribe", 5, feeds=overlay[S.RUN_ID]), progress=False
        )
    assert lakehouse.read(S.ROUTING_RUNS).filter(F.col(S.ROUTING_RUN_ID).contains(".p5.")).isEmpty()  # refused first


@pytest.mark.slow  # an ingest and a job, about 25 s: the default run is at its budget
def test_the_friend_bound_job_stores_the_greedy_best_friends_of_a_sample(spark, lakehouse):
    """Fig. 1's job: the sample is the nodes of enough feeds, each row a brute-force greedy's
    picks, and the summary counts the nodes whose first j picks cover everything."""
    from pipelines.friend_bound import FriendBoundRequest, run_friend_bound

    pairs = store_instance(spark, lakehouse, "bound-40", SyntheticSpec("zipf", 40, 15, 1, 7, seed=2))
    subs: dict[int, set] = {}
    for v, t in pairs:
        subs.setdefault(v, set()).add(t)
    request = FriendBoundRequest("bound-40", k=3, min_feeds=4, sample=10, seed=1)
    summary = run_friend_bound(spark, lakehouse, request)
    rows = lakehouse.read(S.FRIEND_BOUND).filter(F.col(S.INSTANCE) == "bound-40").collect()
    eligible = {v for v, ts in subs.items() if len(ts) >= 4}
    assert len(rows) == min(10, len(eligible)) and {r[S.NODE_ID] for r in rows} <= eligible
    full = [0, 0, 0]
    for r in rows:
        p, covered, picks, after = r[S.NODE_ID], set(), [], []
        for _ in range(3):
            gain, q = max((len((subs[q] & subs[p]) - covered), -q) for q in subs if q != p and q not in picks)
            if gain == 0:
                break
            picks.append(-q)
            covered |= subs[-q] & subs[p]
            after.append(len(covered))
        assert (r[S.FRIENDS], r[S.COVERED_AFTER], r[S.FEEDS]) == (picks, after, len(subs[p])), p
        for j in range(3):
            full[j] += (after[min(j, len(after) - 1)] if after else 0) == len(subs[p])
    assert [s["full_coverage_nodes"] for s in summary] == full
    again = run_friend_bound(spark, lakehouse, request)  # a rerun replaces, never adds
    assert again == summary and lakehouse.read(S.FRIEND_BOUND).count() == len(rows)
