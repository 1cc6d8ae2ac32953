"""The design job end to end: stored rounds, resume after a crash, concurrency, bad input."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, replace

import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.baselines import random_a, random_m
from overlay.errors import InputError
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance
from pipelines import design
from pipelines.cli import main
from pipelines.design import DesignRequest, run_design
from pipelines.lakehouse import Lakehouse, UnknownInstanceError
from pipelines.ledger import RunTakenOver
from pipelines.overlays import _now, complete_run
from tests.helpers import exit_code, run_at_once, store_instance
from tests.oracles import greedy_oracle, tcc_span

SPEC = SyntheticSpec(dist="zipf", nodes=24, topics=16, min_subs=2, max_subs=5, seed=3)


@pytest.fixture(scope="module")
def lakehouse(module_lakehouse):
    return module_lakehouse


@pytest.fixture(scope="module")
def instance(spark, lakehouse):
    """A small Zipf instance named 'z', as (node_id, topic_id) pairs."""
    return store_instance(spark, lakehouse, "z", SPEC)


def stored_edges(lakehouse, run_id):
    rows = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run_id).orderBy(S.ADDED_ORDER).collect()
    return [(r[S.U], r[S.V], r[S.GAIN]) for r in rows]


class Crash(BaseException):
    """Stands in for kill -9 between a round's edges and its round row."""


CRASHED = SyntheticSpec(dist="zipf", nodes=12, topics=8, min_subs=2, max_subs=4, seed=5)


@pytest.mark.slow  # a crash mid-rounds, then the same request again (17 s)
def test_a_crashed_run_resumes_to_the_uninterrupted_overlay(spark, lakehouse, monkeypatch):
    """Store, crash between a round's links and its round row, read back, resume: the oracle's
    overlay (the smallest instance with three rounds of two links; kill -9 is the CI pass's)."""
    pairs = store_instance(spark, lakehouse, "crashed", CRASHED)
    request = DesignRequest("crashed", "gpm", max_degree=3)
    real_append = lakehouse.append_run_rows
    appended = []

    def crash_on_third_round_row(table, run_id, frame):
        if table is S.OVERLAY_ROUNDS and len(appended) == 2:
            raise Crash()
        real_append(table, run_id, frame)
        if table is S.OVERLAY_ROUNDS:
            appended.append(run_id)

    settings = {"batch_size": 2, "diameters": False, "per_node": 1, "engine": design.EngineChoice(regime="rounds")}
    monkeypatch.setattr(lakehouse, "append_run_rows", crash_on_third_round_row)
    with pytest.raises(Crash):
        run_design(spark, lakehouse, request, "mmo", commit_seconds=0, **settings)
    monkeypatch.undo()
    with pytest.raises(InputError, match="not complete"):
        complete_run(lakehouse, "mmo")  # never looks complete before it is
    torn = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == "mmo").agg(F.max(S.ROUND)).first()[0]
    assert torn == 3  # the third round's edges were stored, its row was not
    run = run_design(spark, lakehouse, request, "mmo", **settings)
    assert run[S.STATUS] == S.COMPLETE
    assert stored_edges(lakehouse, "mmo") == greedy_oracle(pairs, "gpm", max_degree=3)


@pytest.mark.parametrize("regime", ["memory", pytest.param("rounds", marks=pytest.mark.slow)])  # rounds: the slow pass
def test_a_run_whose_rounds_finished_before_a_crash_completes_with_their_regime(spark, lakehouse, monkeypatch, regime):
    """Crash after the last round is stored, while the metrics are computed: the run resumed
    takes no round, and records the regime its rounds ran in (they say it), not none."""
    store_instance(spark, lakehouse, "finished", CRASHED)
    request = DesignRequest("finished", "gpm", max_degree=3)
    settings = {"diameters": False, "engine": design.EngineChoice(regime=regime)}

    def crash(*args, **kwargs):
        raise Crash()

    monkeypatch.setattr(design, "evaluate_run", crash)
    with pytest.raises(Crash):
        run_design(spark, lakehouse, request, f"fin-{regime}", commit_seconds=0, **settings)
    monkeypatch.undo()
    rounds = lakehouse.read(S.OVERLAY_ROUNDS).filter(F.col(S.RUN_ID) == f"fin-{regime}")
    assert rounds.filter(F.col(S.FINISHED)).count() == 1  # every round stored before the crash
    run = run_design(spark, lakehouse, request, f"fin-{regime}", **settings)
    assert run[S.STATUS] == S.COMPLETE and run[S.REGIME] == regime
    assert {r[S.REGIME] for r in rounds.collect()} == {regime}


@pytest.mark.ci  # two designs in threads at once
def test_two_runs_at_once_both_complete_with_their_rounds(spark, lakehouse, instance):
    """GPM and RandomM designed concurrently on one lakehouse: both complete, neither is damaged."""
    from deltalake import DeltaTable as ArrowDeltaTable

    requests = {
        "gpm-2": DesignRequest("z", "gpm", max_degree=2),
        "conc-rm": DesignRequest("z", "random-m", max_degree=3),
    }
    errors = run_at_once(
        {
            run_id: lambda r=run_id: run_design(
                spark, lakehouse, requests[r], r, batch_size=batch(requests[r]), progress=False, diameters=False
            )
            for run_id in requests
        }
    )
    assert not errors
    assert all(lakehouse.run_row(run_id)[S.STATUS] == S.COMPLETE for run_id in requests)
    assert len(stored_edges(lakehouse, "conc-rm")) >= len({node for node, _ in instance})

    expected = greedy_oracle(instance, "gpm", max_degree=2)
    assert stored_edges(lakehouse, "gpm-2") == expected
    run = lakehouse.run_row("gpm-2")
    assert run[S.EDGES] == len(expected)
    rounds = lakehouse.read(S.OVERLAY_ROUNDS).filter(F.col(S.RUN_ID) == "gpm-2").orderBy(S.ROUND).collect()
    assert [r[S.ROUND] for r in rounds] == list(range(1, len(rounds) + 1))
    assert sum(r[S.EDGES_ADDED] for r in rounds) == len(expected)
    assert rounds[-1][S.FINISHED] and not any(r[S.FINISHED] for r in rounds[:-1])
    assert {r[S.PHASE] for r in rounds} <= {1, 2}
    empty, complete = tcc_span(instance)
    tcc = empty - sum(gain for _, _, gain in expected)
    assert rounds[-1][S.TCC] == tcc
    metrics = lakehouse.read(S.OVERLAY_METRICS).filter(F.col(S.RUN_ID) == "gpm-2").first()
    assert metrics[S.TCC] == tcc and metrics[S.MAX_DEGREE] <= 2
    assert run[S.TCO_SUPPORT] == pytest.approx((empty - tcc) / (empty - complete))
    # The same command again is a no-op on a complete run.
    assert run_design(spark, lakehouse, DesignRequest("z", "gpm", max_degree=2), "gpm-2")[S.EDGES] == len(expected)
    for table in (S.OVERLAY_ROUNDS, S.OVERLAY_EDGES, S.OVERLAY_RUNS):
        assert ArrowDeltaTable(lakehouse.path(table)).to_pyarrow_table().column_names == table.columns


@pytest.mark.slow  # RandomA and RandomM (SpiderCastM: test_spidercast.py, against its oracle)
def test_baselines_respect_budgets_and_seeds(spark, lakehouse, instance):
    subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "z").select(S.NODE_ID, S.TOPIC_ID)
    nodes = subscriptions.select(S.NODE_ID).distinct()
    node_count = nodes.count()

    def pairs(frame):
        return [(r[S.U], r[S.V]) for r in frame.orderBy(S.ADDED_ORDER).collect()]

    drawn = pairs(random_a(nodes, 20, seed=4))
    assert len(drawn) == 20 == len(set(drawn)) and all(u < v for u, v in drawn)
    assert len(pairs(random_a(nodes, 10**6, seed=4))) == node_count * (node_count - 1) // 2
    matched = {seed: pairs(random_m(nodes, 3, seed)) for seed in (4, 5)}
    degree = {}
    for u, v in matched[4]:
        degree[u], degree[v] = degree.get(u, 0) + 1, degree.get(v, 0) + 1
    assert max(degree.values()) <= 3 and len(set(matched[4])) == len(matched[4])
    assert len(matched[4]) >= node_count  # most nodes reach degree 3: well over |V| / 2 links
    assert pairs(random_m(nodes, 3, seed=4)) == matched[4] != matched[5]


@pytest.mark.slow  # uses the shared small workflow
def test_budget_ratio_uses_minmaxoda_once(spark, refreshed):
    """The shared workflow lakehouse holds `design --algorithm gpm --budget-ratio 0.5` on `tiny`."""
    lakehouse = refreshed["lakehouse"]
    pairs = [(r[S.NODE_ID], r[S.TOPIC_ID]) for r in lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "tiny").collect()]
    full = greedy_oracle(pairs, "minmaxoda")
    degree = {}
    for u, v, _ in full:
        degree[u], degree[v] = degree.get(u, 0) + 1, degree.get(v, 0) + 1
    assert stored_edges(lakehouse, "tiny.gpm.r0.5.s1") == greedy_oracle(
        pairs, "gpm", max_degree=max(degree.values()) // 2
    )
    ingest_id = lakehouse.instance_row("tiny")[S.INGEST_ID]
    budget = design.resolve_budget(
        spark, lakehouse, DesignRequest("tiny", "gpa", budget_ratio=0.5), ingest_id, 24, False
    )
    assert (budget.max_edges, budget.max_degree) == (len(full) // 2, max(degree.values()) // 2)
    matched = DesignRequest("tiny", "gpa", budget_ratio=0.5, ratio_edges="degree")  # m = d |V| / 2 with GPM's d
    budget = design.resolve_budget(spark, lakehouse, matched, ingest_id, 24, False)
    assert (budget.max_edges, budget.max_degree) == (max(degree.values()) // 2 * 24 // 2, max(degree.values()) // 2)
    references = (
        lakehouse.read(S.OVERLAY_RUNS)
        .filter((F.col(S.ALGORITHM) == "minmaxoda") & (F.col(S.INSTANCE) == "tiny"))
        .collect()
    )
    assert len(references) == 1 and references[0][S.EDGES] == len(full) == stored_edges_count(
        lakehouse, references[0][S.RUN_ID]
    )


def stored_edges_count(lakehouse, run_id):
    return lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run_id).count()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--algorithm", "gpx", "--max-degree", "2"], "invalid choice: 'gpx'"),
        (["--algorithm", "gpm", "--max-degree", "0"], "--max-degree: must be a positive integer, got 0"),
        (["--algorithm", "gpa", "--max-edges", "-3"], "--max-edges: must be a positive integer, got -3"),
        (["--algorithm", "gpm", "--budget-ratio", "1.5"], "--budget-ratio: must be a number in (0, 1], got 1.5"),
        (["--algorithm", "gpm", "--budget-ratio", "0"], "--budget-ratio: must be a number in (0, 1], got 0"),
        (["--algorithm", "swico", "--batch-size", "9"], "--batch-size: only for the greedy algorithms"),
        (["--algorithm", "gpm"], "needs a budget"),
        (["--algorithm", "gm", "--max-edges", "3"], "takes no budget"),
        (["--algorithm", "swico", "--max-degree", "3"], "fixed by Property 1"),
        (["--algorithm", "swico", "--long", "kleinberg"], "--long must be one of gswico, chord, random"),
        (["--algorithm", "gpm", "--max-degree", "2", "--short", "random"], "only with --algorithm swico"),
        (
            ["--algorithm", "gpm", "--budget-ratio", "0.2", "--ratio-edges", "degree"],
            "only with --budget-ratio and one",
        ),
        (["--algorithm", "gpa", "--max-edges", "9", "--ratio-edges", "degree"], "only with --budget-ratio and one"),
    ],
)
def test_bad_requests_fail_before_spark(argv, message, capsys, tmp_path):
    assert exit_code(["--lakehouse", str(tmp_path / "none"), "design", "--instance", "z", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "options", [{"batch_size": 4}, {"per_node": 2}, {"engine": design.EngineChoice(cross_check=True)}]
)
def test_the_library_refuses_greedy_options_on_other_algorithms(options):
    """A notebook calling `run_design` gets the CLI's refusal, before anything is read or written
    (no session, no lakehouse needed)."""
    with pytest.raises(InputError, match="only for the greedy algorithms"):
        run_design(None, None, DesignRequest("z", "swico"), **options)


def test_a_ratio_of_degree_edges_is_its_own_run():
    """`--ratio-edges degree` names its runs apart and records itself; the default (eq. 36) leaves
    the params of earlier runs as they were."""
    matched = DesignRequest("z", "gpa", budget_ratio=0.2, ratio_edges="degree")
    plain = DesignRequest("z", "gpa", budget_ratio=0.2)
    assert (matched.default_run_id(), plain.default_run_id()) == ("z.gpa.r0.2d.s1", "z.gpa.r0.2.s1")
    assert json.loads(design._params_json(matched))["ratio_edges"] == "degree"
    assert "ratio_edges" not in json.loads(design._params_json(plain))


def test_a_negative_commit_interval_is_a_usage_error(capsys, tmp_path):
    argv = [
        "--lakehouse",
        str(tmp_path / "none"),
        "design",
        "--instance",
        "z",
        "--algorithm",
        "gpm",
        "--max-degree",
        "2",
        "--commit-every",
        "-1",
    ]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and "must be 0 or more seconds" in capsys.readouterr().err


@pytest.mark.slow  # uses the shared small workflow
def test_bad_instances_leave_no_running_row(spark, lakehouse, instance, refreshed):
    with pytest.raises(UnknownInstanceError):
        run_design(spark, lakehouse, DesignRequest("nope", "gm"))
    full = synthetic_instance(spark, SyntheticSpec(dist="unif", nodes=3, topics=2, min_subs=1, max_subs=1, seed=1))
    lakehouse.replace_instance("empty", replace(full, subscriptions=full.subscriptions.limit(0)))
    with pytest.raises(InputError, match="no subscriptions"):
        run_design(spark, lakehouse, DesignRequest("empty", "gm"))
    statuses = [r[S.STATUS] for r in lakehouse.read(S.OVERLAY_RUNS).collect()]
    assert S.RUNNING not in statuses
    shared = refreshed["lakehouse"]  # its MinMaxODA reference of `tiny` is stored already
    with pytest.raises(InputError, match="leaves no edge"):
        run_design(spark, shared, DesignRequest("tiny", "gpm", budget_ratio=0.01))
    assert not shared.read(S.OVERLAY_RUNS).filter(F.col(S.STATUS) == S.RUNNING).count()


@pytest.mark.slow  # uses the shared small workflow
def test_a_run_id_reused_with_other_settings_is_refused(spark, refreshed):
    shared = refreshed["lakehouse"]  # holds the small-world run tiny.swico.random-chord.s1
    with pytest.raises(InputError, match="exists with other settings"):
        run_design(spark, shared, DesignRequest("tiny", "gpm", max_degree=3), "tiny.swico.random-chord.s1")
    assert design.DesignRequest("z", "gpm", max_degree=3).default_run_id() == "z.gpm.d3.s1"


@pytest.mark.ci  # a real kill -9 of a design process, then the same command again
def test_kill_minus_nine_then_the_same_command_finishes_the_same_overlay(spark, tmp_path):
    """A real crash: SIGKILL the design process after two committed rounds, run it again."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from deltalake import DeltaTable

    from tests.helpers import run_cli

    root = str(tmp_path / "lh")
    ingest = ["ingest", "--instance", "k", "--source", "synthetic", "--dist", "zipf", "--nodes", "24"]
    ingest += ["--topics", "16", "--min-subs", "2", "--max-subs", "6", "--seed", "2"]
    code, _, err = run_cli("--lakehouse", root, "-q", *ingest)  # in this process: a JVM start fewer
    assert code == 0, err[-3000:]
    base = [sys.executable, "-m", "pipelines", "--lakehouse", root, "-q", "--master", "local[2]"]
    base += ["--shuffle-partitions", "2"]
    design_cmd = base + [
        "design",
        "--instance",
        "k",
        "--algorithm",
        "minmaxoda",
        "--batch-size",
        "4",
        "--per-node",
        "1",
        "--skip-diameters",
        "--commit-every",
        "0",
        "--regime",
        "rounds",
    ]
    process = subprocess.Popen(design_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rounds_path = tmp_path / "lh" / "overlay_rounds"

    def committed_rounds() -> int:
        # The table's folder appears before its first commit; until that commit it has no rows.
        if not (rounds_path / "_delta_log" / f"{0:020d}.json").exists():
            return 0
        return len(DeltaTable(str(rounds_path)).to_pandas())

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and committed_rounds() < 2:
        assert process.poll() is None, f"the design exited (code {process.returncode}) before two rounds were committed"
        time.sleep(0.5)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    runs = DeltaTable(str(tmp_path / "lh" / "overlay_runs")).to_pandas()
    assert runs.status.tolist() == ["running"]
    subprocess.run(design_cmd, check=True, stdout=subprocess.DEVNULL)
    edges = DeltaTable(str(tmp_path / "lh" / "overlay_edges")).to_pandas().sort_values("added_order")
    subs = DeltaTable(str(tmp_path / "lh" / "subscriptions")).to_pandas()
    expected = greedy_oracle(list(zip(subs.node_id, subs.topic_id)), "minmaxoda")
    assert list(zip(edges.u, edges.v, edges.gain)) == expected
    assert DeltaTable(str(tmp_path / "lh" / "overlay_runs")).to_pandas().status.tolist() == ["complete"]


@pytest.mark.slow  # about 12 s
def test_a_tcc_mismatch_fails_the_run_loudly(spark, lakehouse, instance, monkeypatch):
    real = design.evaluate_run

    def miscounting(*args, **kwargs):
        return {**real(*args, **kwargs), S.TCC: -1}

    monkeypatch.setattr(design, "evaluate_run", miscounting)
    with pytest.raises(design.DesignError, match="topic components count -1"):
        run_design(spark, lakehouse, DesignRequest("z", "gpa", max_edges=3), "mismatch", diameters=False)
    run = lakehouse.run_row("mismatch")
    assert run[S.STATUS] == S.FAILED and "DesignError" in run[S.MESSAGE]


@pytest.mark.slow  # uses the shared small workflow
def test_a_small_world_run_stores_ring_fingers_and_links(refreshed):
    """The shared lakehouse's `design --algorithm swico --short random --long chord` on `tiny`."""
    from overlay.smallworld.fingers import property_1_violation, undirected_links

    lakehouse = refreshed["lakehouse"]
    run = lakehouse.run_row("tiny.swico.random-chord.s1")
    assert run[S.STATUS] == S.COMPLETE and run[S.ALGORITHM] == "swico"
    n = lakehouse.instance_row("tiny")[S.NODES]
    ring = lakehouse.read(S.RING).filter(F.col(S.RUN_ID) == run[S.RUN_ID])
    fingers = lakehouse.read(S.FINGERS).filter(F.col(S.RUN_ID) == run[S.RUN_ID])
    assert ring.count() == n and fingers.count() == n * 5  # k = ceil(log2 24) = 5
    assert property_1_violation(ring, fingers, n) is None
    links = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run[S.RUN_ID])
    assert sorted(links.select(S.U, S.V).collect()) == sorted(undirected_links(fingers).collect())
    assert run[S.EDGES] == links.count()
    assert {r[S.CHOSEN_BY] for r in fingers.collect()} == {"random", "chord"}


def test_a_property_1_violation_fails_the_run(spark, lakehouse, instance, monkeypatch):
    real = design.small_world_overlay

    def dropping_a_finger(*args, **kwargs):
        overlay = real(*args, **kwargs)
        overlay.fingers = overlay.fingers.filter(~((F.col(S.NODE_ID) == 4) & (F.col(S.PHASE) == 3)))
        return overlay

    monkeypatch.setattr(design, "small_world_overlay", dropping_a_finger)
    request = DesignRequest("z", "swico", short="random", long="chord")
    with pytest.raises(design.DesignError, match="node 4 has 0 fingers in phase 3"):
        run_design(spark, lakehouse, request, "broken-sw", diameters=False)
    run = lakehouse.run_row("broken-sw")
    assert run[S.STATUS] == S.FAILED and "Property 1" in run[S.MESSAGE]
    assert (
        not lakehouse.exists(S.FINGERS) or lakehouse.read(S.FINGERS).filter(F.col(S.RUN_ID) == "broken-sw").count() == 0
    )


@pytest.mark.slow  # about 14 s per case
@pytest.mark.parametrize("outcome", ["complete", "failed"])
def test_a_run_taken_over_before_its_final_write_is_left_to_its_new_owner(
    spark, lakehouse, instance, monkeypatch, outcome
):
    """Another process resumes the run after this one's last ownership check (simulated inside
    the evaluation, the step before the final write): this one must neither complete nor fail
    its successor's run."""
    real = design.evaluate_run
    run_id = f"taken-{outcome}"

    def taken_over_meanwhile(*args, **kwargs):
        metrics = real(*args, **kwargs)
        lakehouse.update_run(run_id, **{S.ATTEMPT: "successor"})
        return metrics if outcome == "complete" else {**metrics, S.TCC: -1}  # -1: this run then fails

    monkeypatch.setattr(design, "evaluate_run", taken_over_meanwhile)
    with pytest.raises(RunTakenOver if outcome == "complete" else design.DesignError):
        run_design(spark, lakehouse, DesignRequest("z", "gpa", max_edges=3), run_id, progress=False, diameters=False)
    run = lakehouse.run_row(run_id)
    assert (run[S.STATUS], run[S.ATTEMPT], run[S.MESSAGE]) == (S.RUNNING, "successor", None)


def running_reference(lakehouse, instance: str, attempt: str) -> str:
    """A `running` MinMaxODA reference row of `instance` owned by another process (`attempt`),
    as a budgeted design started a moment earlier leaves it; its run id."""
    ingest_id = lakehouse.instance_row(instance)[S.INGEST_ID]
    run_id = f"{instance}.minmaxoda.{ingest_id}"
    request = DesignRequest(instance, "minmaxoda")
    params = {"request": json.loads(design._params_json(request)), "budget": asdict(design.Budget(None, None))}
    assert lakehouse.insert_run(
        {
            S.RUN_ID: run_id,
            S.INSTANCE: instance,
            S.INGEST_ID: ingest_id,
            S.ALGORITHM: "minmaxoda",
            S.PARAMS: json.dumps(params, sort_keys=True),
            S.STATUS: S.RUNNING,
            S.STARTED_AT: _now(),
            S.ATTEMPT: attempt,
        }
    )
    return run_id


@pytest.mark.slow  # waits on a reference another process owns, about 20-30 s
def test_a_reference_whose_owner_shows_no_progress_is_taken_over(spark, lakehouse, instance, monkeypatch, caplog):
    """The owner of the reference died (no round, no metrics, no new attempt): the budgeted design
    waits for the staleness bound (2 s here, 15 min by default), then takes the reference over."""
    reference = running_reference(lakehouse, "z", "dead")
    monkeypatch.setattr(design, "REFERENCE_POLL_SECONDS", 0.2, raising=False)
    monkeypatch.setattr(design, "REFERENCE_STALE_SECONDS", 2.0, raising=False)
    with caplog.at_level(logging.INFO, logger="pipelines.design"):
        run = run_design(
            spark, lakehouse, DesignRequest("z", "gpm", budget_ratio=0.5), "z.gpm.after-dead", diameters=False
        )
    assert "waiting for it" in caplog.text and "presumed dead" in caplog.text
    assert run[S.STATUS] == S.COMPLETE and json.loads(run[S.PARAMS])["budget"]["reference_run"] == reference
    taken = lakehouse.run_row(reference)
    assert taken[S.STATUS] == S.COMPLETE and taken[S.ATTEMPT] != "dead"
    assert taken[S.EDGES] == len(greedy_oracle(instance, "minmaxoda"))


TINY = SyntheticSpec(dist="zipf", nodes=12, topics=8, min_subs=2, max_subs=4, seed=5)


@pytest.mark.slow  # waits on a reference another process owns, about 20-30 s
def test_a_reference_that_fails_while_awaited_is_named_then_resumed(spark, tmp_path, monkeypatch):
    fresh = Lakehouse(spark, tmp_path / "lakehouse")
    pairs = store_instance(spark, fresh, "y", TINY)
    reference = running_reference(fresh, "y", "owner")
    real_mark = getattr(design, "_progress_mark", None)

    def owner_fails_meanwhile(lakehouse, run):
        fresh.update_run(reference, **{S.STATUS: S.FAILED, S.MESSAGE: "OutOfMemoryError: Java heap space"})
        return real_mark(lakehouse, run)

    monkeypatch.setattr(design, "_progress_mark", owner_fails_meanwhile, raising=False)
    monkeypatch.setattr(design, "REFERENCE_POLL_SECONDS", 0.2, raising=False)
    request = DesignRequest("y", "gpm", budget_ratio=0.5)
    with pytest.raises(
        design.DesignError, match=f"run '{reference}', which this design waited for, failed .OutOfMemoryError"
    ):
        run_design(spark, fresh, request, "y.gpm", diameters=False)
    assert not fresh.run_exists("y.gpm")
    monkeypatch.undo()
    assert run_design(spark, fresh, request, "y.gpm", diameters=False)[S.STATUS] == S.COMPLETE  # resumes the reference
    assert fresh.run_row(reference)[S.STATUS] == S.COMPLETE
    assert stored_edges(fresh, reference) == greedy_oracle(pairs, "minmaxoda")


@pytest.mark.slow  # two designs in threads at once on a fresh lakehouse, 1-2 minutes
def test_two_budgeted_designs_at_once_share_one_reference(spark, tmp_path):
    """GPM and RandomM with a budget ratio started together on a lakehouse with the instance
    but no overlay_runs table: both complete, on one MinMaxODA reference computed once (before,
    the second took the reference over and the first died with RunTakenOver)."""
    fresh = Lakehouse(spark, tmp_path / "lakehouse")
    pairs = store_instance(spark, fresh, "z", SPEC)
    assert not fresh.exists(S.OVERLAY_RUNS)
    requests = {
        "z.gpm.r0.5": DesignRequest("z", "gpm", budget_ratio=0.5),
        "z.rm.r0.5": DesignRequest("z", "random-m", budget_ratio=0.5),
    }
    errors = run_at_once(
        {
            run_id: lambda r=run_id: run_design(
                spark, fresh, requests[r], r, batch_size=batch(requests[r]), progress=False, diameters=False
            )
            for run_id in requests
        }
    )
    assert not errors
    runs = {r[S.RUN_ID]: r for r in fresh.read(S.OVERLAY_RUNS).collect()}
    (reference,) = [r for r in runs.values() if r[S.ALGORITHM] == "minmaxoda"]
    assert reference[S.STATUS] == S.COMPLETE and all(runs[run_id][S.STATUS] == S.COMPLETE for run_id in requests)
    assert {json.loads(runs[run_id][S.PARAMS])["budget"]["reference_run"] for run_id in requests} == {
        reference[S.RUN_ID]
    }
    full = greedy_oracle(pairs, "minmaxoda")
    assert stored_edges(fresh, reference[S.RUN_ID]) == full
    degree = {}
    for u, v, _ in full:
        degree[u], degree[v] = degree.get(u, 0) + 1, degree.get(v, 0) + 1
    assert stored_edges(fresh, "z.gpm.r0.5") == greedy_oracle(pairs, "gpm", max_degree=max(degree.values()) // 2)


@pytest.mark.slow  # about 60 s
def test_ktco_designs_store_the_oracles_links_and_prove_their_k(spark, lakehouse, instance):
    """GM2, HararyPT (a sweep over k, one run each) and CyclePT through the design job: the
    oracles' links, and the evaluator's kTCO check stored for the k each builds."""
    from tests import ktco_oracle

    requests = {
        "gm2": DesignRequest("z", "gm2"),
        "h3": DesignRequest("z", "harary-pt", k=3),
        "c5": DesignRequest("z", "cycle-pt", seed=5),
    }
    expected = {
        "gm2": [(u, v) for u, v, _ in ktco_oracle.gm2_ref(instance)],
        "h3": sorted(ktco_oracle.harary_pt(instance, 3)),
        "c5": sorted(ktco_oracle.cycle_pt(instance, 5)),
    }
    for run_id, request in requests.items():
        run = run_design(spark, lakehouse, request, run_id, diameters=False)
        assert run[S.STATUS] == S.COMPLETE
        assert [(u, v) for u, v, _ in stored_edges(lakehouse, run_id)] == expected[run_id]
        ktco = lakehouse.read(S.OVERLAY_KTCO).filter(F.col(S.RUN_ID) == run_id).collect()
        assert [(r[S.K], r[S.IS_KTCO]) for r in ktco] == [(request.k, True)]
    assert json.loads(lakehouse.run_row("h3")[S.PARAMS])["request"]["k"] == 3
    assert [DesignRequest("z", a, k=k).default_run_id() for a, k in (("gm2", None), ("harary-pt", 4))] == [
        "z.gm2.2tco.s1",
        "z.harary-pt.4tco.s1",
    ]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--algorithm", "harary-pt"], "harary-pt needs --k K with K >= 2"),
        (["--algorithm", "gm2", "--k", "3"], "gm2 builds a 2TCO"),
        (["--algorithm", "gpm", "--max-degree", "3", "--k", "2"], "--k is the connectivity of a kTCO design"),
        (["--algorithm", "gm", "--node-order", "random"], "--node-order is HararyPT's global order"),
        (["--algorithm", "harary-pt", "--k", "2,3", "--run-id", "x"], "a sweep over --k uses the default run ids"),
    ],
)
def test_bad_ktco_requests_fail_before_spark(tmp_path, capsys, argv, message):
    code = exit_code(["--lakehouse", str(tmp_path / "none"), "design", "--instance", "z", *argv])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def batch(request: DesignRequest) -> int | None:
    """Small sampled batches for a greedy (several rounds to interleave); others take none."""
    return 32 if request.algorithm in design.GREEDY_ALGORITHMS else None


# What a design on a lakehouse whose tables exist costs at most (measured on the pinned stack):
# the claim, the instance and run rows read, the subscriptions copied once, the links and rounds
# appended, the components and metrics written, the completing write; each commit is latency.
DESIGN_COMMITS = 6  # claim, edges, rounds, components, metrics, completion
DESIGN_JOBS = {"memory": 16, "rounds": 20}  # measured on a fresh lakehouse (rounds: + the kept rows removed)


@pytest.mark.parametrize("regime", ["memory", pytest.param("rounds", marks=pytest.mark.slow)])
def test_a_design_counts_its_spark_jobs_and_delta_commits(spark, tmp_path, regime):
    """The counts are stored on the run row and pinned here, so fixed costs cannot creep back;
    both regimes give the oracle's links. A lakehouse of its own, so the count does not depend on
    the designs run before it (on the module's shared lakehouse the rounds count moved by one
    with the order of the tests)."""
    lakehouse = Lakehouse(spark, tmp_path / "lakehouse")
    instance = store_instance(spark, lakehouse, "z", SPEC)
    run_design(spark, lakehouse, DesignRequest("z", "gpm", max_degree=2), "counted-warm", diameters=False)
    run_id = f"counted-{regime}"
    run = run_design(
        spark, lakehouse, DesignRequest("z", "gpm", max_degree=3), run_id, engine=design.EngineChoice(regime=regime)
    )  # diameters included: from the engine's state
    assert stored_edges(lakehouse, run_id) == greedy_oracle(instance, "gpm", max_degree=3)
    assert run[S.REGIME] == regime
    assert run[S.DELTA_COMMITS] == DESIGN_COMMITS
    assert run[S.SPARK_JOBS] == DESIGN_JOBS[regime], run[S.SPARK_JOBS]
