"""The simulate job: a Feverfew run stored cycle by cycle, equal to the oracle's, resumable, and
an overlay run like any design."""

import pytest
from feverfew_oracle import FeverfewOracle, healing_oracle, published_topics, push_pull_oracle
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.classes import Subscriptions
from overlay.errors import InputError
from overlay.gossip.dissemination import Failures
from overlay.gossip.healing import heal_and_disseminate
from overlay.instance.synthetic import SyntheticSpec
from pipelines import simulate
from pipelines.disseminate import DisseminateRequest, run_dissemination, summary_rows
from pipelines.simulate import SimulateRequest, run_simulation
from tests.helpers import store_instance

NODES = 60
# BubbleSample from cycle 2 on: diffusions (8), agents and matches run within the 12 cycles.
REQUEST = SimulateRequest("gossip-60", "feverfew", cycles=12, seed=4, bubble_start=2)


@pytest.fixture(scope="module")
def gossip_instance(spark, module_lakehouse):
    pairs = store_instance(spark, module_lakehouse, "gossip-60", SyntheticSpec("zipf", NODES, 20, 1, 5, seed=2))
    subs: dict[int, set] = {}
    for v, t in pairs:
        subs.setdefault(v, set()).add(t)
    return module_lakehouse, subs


def oracle_after(subs, request: SimulateRequest, cycles: int) -> tuple[FeverfewOracle, list[dict]]:
    """The oracle's state after `cycles`, and its per-cycle coverage by topic."""
    oracle = FeverfewOracle(NODES, subs, seed=request.seed, bubble_start=request.bubble_start)
    coverage = []
    for cycle in range(1, cycles + 1):
        oracle.step(cycle)
        per_topic: dict[int, int] = {}
        for covered in oracle.covered.values():
            for t in covered:
                per_topic[t] = per_topic.get(t, 0) + 1
        coverage += [
            {"cycle": cycle, "topic": t, "subscribers": k, "covered": per_topic.get(t, 0)}
            for t, k in oracle.size.items()
            if k >= 2
        ]
    return oracle, coverage


def cycles_with_matches(oracle: FeverfewOracle) -> bool:
    return any(d[2] >= 0 for own in oracle.own.values() for d in own.values())


def stored(lakehouse, table, run_id):
    return lakehouse.read(table).filter(F.col(S.RUN_ID) == run_id)


@pytest.fixture(scope="module")
def simulated(spark, gossip_instance) -> dict:
    lakehouse, _ = gossip_instance
    return run_simulation(spark, lakehouse, REQUEST, snapshot_every=5, progress=False, diameters=False)


@pytest.mark.slow  # uses the module's simulation (about 50 s)
def test_a_simulation_is_stored_cycle_by_cycle_as_the_oracle_runs_it(spark, gossip_instance, simulated):
    lakehouse, subs = gossip_instance
    run = simulated
    run_id = run[S.RUN_ID]
    assert run_id == "gossip-60.feverfew.c12.s4" and run[S.STATUS] == S.COMPLETE and run[S.ALGORITHM] == "feverfew"
    oracle, coverage = oracle_after(subs, REQUEST, 12)

    states = stored(lakehouse, S.GOSSIP_STATES, run_id)
    assert sorted(r[0] for r in states.select(S.CYCLE).distinct().collect()) == [0, 5, 10, 12]
    last = {r[S.NODE_ID]: r.asDict() for r in states.filter(F.col(S.CYCLE) == 12).collect()}
    for v in range(NODES):
        assert {
            k: list(last[v][k]) if isinstance(last[v][k], list) else last[v][k] for k in oracle.state(v)
        } == oracle.state(v)

    got = sorted(
        (r[S.CYCLE], r[S.TOPIC_ID], r[S.SUBSCRIBERS], r[S.COVERED])
        for r in stored(lakehouse, S.GOSSIP_COVERAGE, run_id).collect()
    )
    assert got == sorted((c["cycle"], c["topic"], c["subscribers"], c["covered"]) for c in coverage)
    assert sum(len(d) for d in oracle.own.values()) > 0 and cycles_with_matches(oracle), "BubbleSample never ran"
    cycles = {r[S.CYCLE]: r for r in stored(lakehouse, S.GOSSIP_CYCLES, run_id).collect()}
    assert sorted(cycles) == list(range(1, 13))
    assert cycles[12][S.COVERED_SUBSCRIPTIONS] == sum(len(c) for c in oracle.covered.values())
    assert cycles[12][S.SUBSCRIPTIONS] == sum(k for k in oracle.size.values() if k >= 2)
    assert cycles[12][S.MATCHES] == sum(s[3] for s in oracle.sent.values())

    views = stored(lakehouse, S.GOSSIP_VIEWS, run_id).first()
    assert views[S.CHOICES] == sum(len(lv) for lv in oracle.lv.values()) and views[S.NODES] == NODES
    assert views[S.COVERED_SUBSCRIPTIONS] == cycles[12][S.COVERED_SUBSCRIPTIONS]

    links = {(r[S.U], r[S.V]) for r in stored(lakehouse, S.OVERLAY_EDGES, run_id).collect()}
    assert links == {(min(p, q), max(p, q)) for p in range(NODES) for q in oracle.lv[p]}
    assert run[S.EDGES] == len(links) and run[S.TCO_SUPPORT] is not None

    # The same command again finds the run complete and does nothing.
    again = run_simulation(spark, lakehouse, REQUEST, snapshot_every=5, progress=False, diameters=False)
    assert again[S.FINISHED_AT] == run[S.FINISHED_AT]


@pytest.mark.slow  # three more simulations with commits, about 60 s
def test_a_simulation_stopped_mid_way_resumes_from_its_last_snapshot(spark, gossip_instance, monkeypatch):
    lakehouse, subs = gossip_instance
    request = SimulateRequest("gossip-60", "feverfew", cycles=9, seed=7, bubble_start=3)
    real_add = simulate._Pending.add

    def crash_at_cycle_7(self, cycle, state, seconds):
        if cycle == 7:
            raise RuntimeError("power cut")
        return real_add(self, cycle, state, seconds)

    monkeypatch.setattr(simulate._Pending, "add", crash_at_cycle_7)
    with pytest.raises(RuntimeError, match="power cut"):
        run_simulation(spark, lakehouse, request, snapshot_every=3, progress=False, diameters=False)
    run_id = request.default_run_id()
    assert lakehouse.run_row(run_id)[S.STATUS] == S.FAILED
    assert stored(lakehouse, S.GOSSIP_CYCLES, run_id).agg(F.max(S.CYCLE)).first()[0] == 6
    monkeypatch.setattr(simulate._Pending, "add", real_add)
    real_store = simulate._store_views

    def crash_before_the_links(*args):
        raise RuntimeError("power cut after the last snapshot")

    monkeypatch.setattr(simulate, "_store_views", crash_before_the_links)
    with pytest.raises(RuntimeError, match="after the last snapshot"):
        run_simulation(spark, lakehouse, request, snapshot_every=3, progress=False, diameters=False)
    monkeypatch.setattr(simulate, "_store_views", real_store)
    # Every cycle is stored: the rerun only recomputes the last snapshot's coverage and the links.
    run = run_simulation(spark, lakehouse, request, snapshot_every=3, progress=False, diameters=False)
    assert run[S.STATUS] == S.COMPLETE
    oracle, _ = oracle_after(subs, request, 9)
    last = {r[S.NODE_ID]: r for r in stored(lakehouse, S.GOSSIP_STATES, run_id).filter(F.col(S.CYCLE) == 9).collect()}
    assert all(
        list(last[v]["lv"]) == oracle.lv[v] and list(last[v]["rv"]) == sorted(oracle.rv[v]) for v in range(NODES)
    )
    assert sorted(r[0] for r in stored(lakehouse, S.GOSSIP_CYCLES, run_id).select(S.CYCLE).collect()) == list(
        range(1, 10)
    )
    links = {(r[S.U], r[S.V]) for r in stored(lakehouse, S.OVERLAY_EDGES, run_id).collect()}
    assert links == {(min(p, q), max(p, q)) for p in range(NODES) for q in oracle.lv[p]}
    views = stored(lakehouse, S.GOSSIP_VIEWS, run_id).first()
    assert views[S.COVERED_SUBSCRIPTIONS] == sum(len(c) for c in oracle.covered.values())


def test_a_simulation_request_is_checked_before_spark():
    with pytest.raises(InputError, match="unknown protocol 'gossip'"):
        SimulateRequest("x", "gossip").check()
    with pytest.raises(InputError, match="--cycles must be at least 1"):
        SimulateRequest("x", "feverfew", cycles=0).check()
    with pytest.raises(InputError, match="--pss must be one of cyclon, uniform"):
        SimulateRequest("x", "feverfew", pss="newscast").check()


@pytest.mark.parametrize(
    "failures",
    [
        {"substitution": 0.05},
        {"mass_share": 0.5, "mass_cycle": 2},
    ],
    ids=["churn", "mass-failure"],
)
@pytest.mark.slow  # uses the module's simulation (about 50 s)
def test_dissemination_on_the_simulated_overlay_matches_the_oracle(spark, gossip_instance, simulated, failures):
    """Push-pull on the Feverfew run's topic subgraphs, cycle by cycle as the oracle walks it."""
    lakehouse, subs = gossip_instance
    request = DisseminateRequest(simulated[S.RUN_ID], publications=3, cycles=15, seed=9, **failures)
    done = run_dissemination(spark, lakehouse, request, progress=False)
    assert done[S.STATUS] == S.COMPLETE and done[S.PROTOCOL] == "push-pull"
    links = [(r[S.U], r[S.V]) for r in stored(lakehouse, S.OVERLAY_EDGES, simulated[S.RUN_ID]).collect()]
    rows = lakehouse.read(S.DISSEMINATION_COMPLETION).filter(F.col(S.ROUTING_RUN_ID) == done[S.ROUTING_RUN_ID])
    got: dict = {}
    for r in rows.collect():
        got.setdefault((r[S.PUB_ID], r[S.TOPIC_ID]), []).append((r[S.CYCLE], r[S.ALIVE], r[S.INFORMED]))
    topics = published_topics(subs, 9, 3)
    assert sorted(got) == [(k, t) for k, t in enumerate(topics)]
    for (pub, topic), counts in got.items():
        want = push_pull_oracle(subs, links, topic, pub, 9, 15, **failures)
        assert sorted(counts) == [(c, a, i) for c, (a, i) in enumerate(want)], (pub, topic)
    assert {r["pub_id"] for r in summary_rows(lakehouse, done[S.ROUTING_RUN_ID])} == {0, 1, 2}


@pytest.mark.slow  # uses the module's simulation (about 50 s)
def test_a_simulated_overlay_is_exported_and_failed_like_any_run(spark, gossip_instance, simulated, tmp_path):
    from pipelines.failures import ResilienceRequest, run_resilience
    from pipelines.overlays import run_export

    lakehouse, _ = gossip_instance
    out = tmp_path / "links.csv"
    assert run_export(spark, lakehouse, simulated[S.RUN_ID], str(out)) == simulated[S.EDGES]
    assert len(out.read_text().splitlines()) == simulated[S.EDGES] + 1  # the header
    rows = run_resilience(spark, lakehouse, ResilienceRequest(simulated[S.RUN_ID], fail_nodes=(0.1,), trials=2))
    assert rows and stored(lakehouse, S.RESILIENCE, simulated[S.RUN_ID]).count() == 2


@pytest.mark.slow  # uses the module's simulation (about 50 s)
def test_the_convergence_notebook_replays_a_simulation(gossip_instance, simulated, monkeypatch, capsys, tmp_path):
    import runpy
    from pathlib import Path

    lakehouse, _ = gossip_instance
    monkeypatch.setenv("OVERLAY_LAB_LAKEHOUSE", lakehouse.root)
    monkeypatch.setenv("OVERLAY_LAB_RUN_ID", simulated[S.RUN_ID])
    monkeypatch.setenv("OVERLAY_LAB_NODE", "3")
    monkeypatch.setenv("OVERLAY_LAB_FIGURES", str(tmp_path))
    runpy.run_path(
        str(Path(__file__).resolve().parent.parent / "notebooks" / "gossip_convergence.py"), run_name="__main__"
    )
    out = capsys.readouterr().out
    assert f"Cycles of {simulated[S.RUN_ID]}" in out and "Node 3 in" in out and "figure saved" in out
    assert (tmp_path / "ln_covered_share_by_topic_size.png").is_file()


LIVE_FAILURES = {"substitution": 0.08, "mass_share": 0.3, "mass_cycle": 3}  # churn and a mass failure at once


def live_oracle(subs):
    """The oracle's completions and last state, 8 cycles of `LIVE_FAILURES` after the stored 12."""
    pubs = list(enumerate(published_topics(subs, 9, 3)))
    oracle, _ = oracle_after(subs, REQUEST, 12)
    return pubs, oracle, healing_oracle(oracle, 12, pubs, 9, 8, **LIVE_FAILURES)


@pytest.mark.slow  # uses the module's simulation (about 50 s)
def test_a_live_dissemination_heals_the_overlay_as_the_oracle_does(spark, gossip_instance, simulated):
    """Push-pull inside the gossip under churn and a mass failure: the nodes filter the dead, the
    returning ones rejoin, and the completions and every node's views equal the oracle's going on
    from the same 12 cycles."""
    lakehouse, subs = gossip_instance
    pubs, oracle, want = live_oracle(subs)
    state = stored(lakehouse, S.GOSSIP_STATES, simulated[S.RUN_ID]).filter(F.col(S.CYCLE) == 12)
    csr = Subscriptions.collect(
        lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "gossip-60").select(S.NODE_ID, S.TOPIC_ID), NODES
    )
    rows, last = heal_and_disseminate(
        spark,
        state.drop(S.RUN_ID, S.CYCLE),
        12,
        csr.offsets,
        csr.topics,
        REQUEST.params(),
        pubs,
        Failures(**LIVE_FAILURES),
        8,
        9,
        2,
    )
    got: dict = {}
    for r in rows:
        got.setdefault(r[S.PUB_ID], []).append((r[S.CYCLE], r[S.ALIVE], r[S.INFORMED]))
    assert got == {p: [(k, *ai) for k, ai in enumerate(w)] for p, w in want.items()}
    assert any(i > 1 for w in want.values() for _, i in w), "nothing spread"
    assert any(a < w[0][0] for w in want.values() for a, _ in w), "no subscriber failed"
    nodes = {r[S.NODE_ID]: r for r in last.collect()}
    for v in range(NODES):
        assert list(nodes[v]["lv"]) == oracle.lv[v] and list(nodes[v]["rv"]) == sorted(oracle.rv[v]), v
        assert list(nodes[v]["sv"]) == oracle.sv[v] and list(nodes[v]["av_origin"]) == [o for o, _ in oracle.av[v]], v


@pytest.mark.slow  # another 8 healing cycles, about 20 s
def test_disseminate_live_stores_the_healing_run(spark, gossip_instance, simulated):
    lakehouse, subs = gossip_instance
    request = DisseminateRequest(simulated[S.RUN_ID], publications=3, cycles=8, seed=9, live=True, **LIVE_FAILURES)
    done = run_dissemination(spark, lakehouse, request, progress=False)
    assert done[S.STATUS] == S.COMPLETE and done[S.PROTOCOL] == "push-pull-live"
    assert done[S.ROUTING_RUN_ID] == "gossip-60.feverfew.c12.s4.push-pull-live.p3.c8.sub0.08.fail0.3at3.s9"
    rows = lakehouse.read(S.DISSEMINATION_COMPLETION).filter(F.col(S.ROUTING_RUN_ID) == done[S.ROUTING_RUN_ID])
    got: dict = {}
    for r in rows.collect():
        got.setdefault(r[S.PUB_ID], []).append((r[S.CYCLE], r[S.ALIVE], r[S.INFORMED]))
    _, _, want = live_oracle(subs)
    assert {p: sorted(c) for p, c in got.items()} == {p: [(k, *ai) for k, ai in enumerate(w)] for p, w in want.items()}


def test_live_dissemination_needs_a_feverfew_run():
    from pyspark.sql import Row

    from pipelines import disseminate

    run = Row(**{S.RUN_ID: "fb.gpm", S.ALGORITHM: "gpm"})
    request = DisseminateRequest("fb.gpm", 2, cycles=3, live=True)
    with pytest.raises(
        InputError, match="--live goes on with a Feverfew simulation's gossip; run 'fb.gpm' was made by gpm"
    ):
        disseminate._live(None, None, run, None, request, None, None, progress=False)


# A Feverfew run's fixed costs on a fresh lakehouse, in the memory regime, from its claim on (a
# fresh claim: no debris to clear; the start's snapshot, the cycles' measures and the last
# snapshot, the links and views, the evaluation from the links in memory, the completion):
# measured and pinned, since each commit and each job is latency.
FEVERFEW_COMMITS = 10
FEVERFEW_JOBS = 29


def test_a_feverfew_run_counts_its_spark_jobs_and_delta_commits(spark, tmp_path):
    """The counts are stored on the run row and pinned here, so fixed costs cannot creep back."""
    from tests.helpers import counting_lakehouse

    lakehouse = counting_lakehouse(spark, tmp_path)
    run_simulation(spark, lakehouse, SimulateRequest("c", "feverfew", 4, seed=1), run_id="warm", progress=False, diameters=False)  # fmt: skip
    run = run_simulation(spark, lakehouse, SimulateRequest("c", "feverfew", 6, seed=2), progress=False, diameters=False)  # fmt: skip
    assert run[S.REGIME] == "memory"
    assert (run[S.DELTA_COMMITS], run[S.SPARK_JOBS]) == (FEVERFEW_COMMITS, FEVERFEW_JOBS)
