"""Day two, the jobs: `ingest --source churn` writes the next days as instance versions, and
`design --incremental-from` continues yesterday's overlay on today's version; each checked
against plain-Python readings of the stored tables (keys matched by hand, the greedy oracle
given the same start), on one module lakehouse."""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np
import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.churn import ChurnSpec
from overlay.instance.synthetic import SyntheticSpec
from pipelines.design import DesignRequest, run_design
from pipelines.incremental import IncrementalChoice
from pipelines.ingest import IngestRequest
from pipelines.instance_churn import ChurnRequest, run_churn
from pipelines.lakehouse import Retention, UnknownRunError
from pipelines.workflow.complete import outputs_complete
from tests.helpers import exit_code, run_cli, store_instance
from tests.oracles import greedy_oracle, keep_oracle, release_oracle

SPEC = SyntheticSpec(dist="zipf", nodes=40, topics=12, min_subs=1, max_subs=4, seed=8)
GPM = DesignRequest("churny", "gpm", max_degree=3)


@pytest.fixture(scope="module")
def lakehouse(module_lakehouse):
    return module_lakehouse


@pytest.fixture(scope="module")
def days(spark, lakehouse):
    """Day 0 (a synthetic instance) with a GPM and a GM overlay, then one day of churn."""
    store_instance(spark, lakehouse, "churny", SPEC)
    day0 = lakehouse.instance_row("churny")
    run_design(spark, lakehouse, GPM, "d0.gpm", diameters=False, progress=False)
    run_design(spark, lakehouse, DesignRequest("churny", "gm"), "d0.gm", diameters=False, progress=False)
    request = ChurnRequest("churny", "churny", 1, ChurnSpec(rate=0.1, seed=2, node_rate=0.05))
    (day1,) = run_churn(spark, lakehouse, request, progress=False)
    return day0, day1


def version(lakehouse, row):
    """(node keys by id, subscriptions as (node id, topic id), (node key, topic key) pairs)."""

    def keys(table):
        return {r[S.ID]: r[S.KEY] for r in lakehouse.instance_rows(table, "churny", row[S.INGEST_ID]).collect()}

    nodes, topics = keys(S.NODE_KEYS), keys(S.TOPIC_KEYS)
    subs = [
        (r[S.NODE_ID], r[S.TOPIC_ID])
        for r in lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "churny", row[S.INGEST_ID]).collect()
    ]
    return nodes, subs, {(nodes[n], topics[t]) for n, t in subs}


def edges_of(lakehouse, run_id):
    rows = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run_id).orderBy(S.ADDED_ORDER).collect()
    return [(r[S.U], r[S.V], r[S.ROUND], r[S.GAIN]) for r in rows]


def changes_of(lakehouse, run_id):
    (row,) = lakehouse.read(S.OVERLAY_CHANGES).filter(F.col(S.RUN_ID) == run_id).collect()
    return row


def carried_by_hand(lakehouse, days, run_id):
    """The previous run's links in today's ids, and how many had an end that left."""
    day0, day1 = days
    before, _, _ = version(lakehouse, day0)
    today, _, _ = version(lakehouse, day1)
    by_key = {key: node for node, key in today.items()}
    links, departed = [], 0
    for u, v, _, _ in edges_of(lakehouse, run_id):
        a, b = by_key.get(before[u]), by_key.get(before[v])
        if a is None or b is None:
            departed += 1
        else:
            links.append((a, b))
    return links, departed


def test_a_churned_day_is_a_version_whose_params_reconcile_with_its_keys(lakehouse, days):
    day0, day1 = days
    params = json.loads(day1[S.PARAMS])
    assert day1[S.SOURCE] == "churn" and params["from_ingest_id"] == day0[S.INGEST_ID] and params["day"] == 1
    _, _, pairs0 = version(lakehouse, day0)
    nodes1, _, pairs1 = version(lakehouse, day1)
    events = params["events"]
    keys0 = {n for n, _ in pairs0}
    gone = keys0 - {n for n, _ in pairs1}
    assert events["departures"] == len(gone) == round(0.05 * 40)
    lost = {p for p in pairs0 - pairs1 if p[0] not in gone}
    gained = {p for p in pairs1 - pairs0 if p[0] in keys0}
    assert len(lost) == events["unsubscribes"] + events["swaps"]
    assert len(gained) == events["swaps"] + events["subscribes"]
    assert sorted(nodes1) == list(range(len(nodes1)))
    assert [h[S.INGEST_ID] for h in lakehouse.instance_history("churny").collect()] == [
        day1[S.INGEST_ID],
        day0[S.INGEST_ID],
    ]


def test_a_workflows_ingest_step_takes_a_churned_day_of_its_source_as_todays_version(lakehouse, days):
    day0, day1 = days
    assert json.loads(day1[S.PARAMS])["origin"] == {"source": day0[S.SOURCE], "params": json.loads(day0[S.PARAMS])}
    args = argparse.Namespace(command="ingest", instance="churny")
    kept = Retention(versions=None, days=None)
    assert "churned day" in outputs_complete(lakehouse, args, IngestRequest(SPEC, kept))
    other = dataclasses.replace(SPEC, seed=SPEC.seed + 1)  # another source: ingest it again
    assert outputs_complete(lakehouse, args, IngestRequest(other, kept)) is None


def test_an_incremental_design_keeps_what_it_may_and_continues_the_greedy(spark, lakehouse, days):
    run = run_design(spark, lakehouse, GPM, "d1.gpm", progress=False, incremental=IncrementalChoice("d0.gpm"))
    stored = edges_of(lakehouse, "d1.gpm")
    kept = [(u, v) for u, v, r, _ in stored if r == 0]
    added = [(u, v, g) for u, v, r, g in stored if r > 0]
    links, departed = carried_by_hand(lakehouse, days, "d0.gpm")
    _, subs1, pairs1 = version(lakehouse, days[1])
    carried, unshared, over = keep_oracle(subs1, links, max_degree=3)
    expected_kept, released = release_oracle(subs1, carried, max_degree=3)
    assert kept == expected_kept and released > 0  # the fixture's day reaches the release
    assert added == greedy_oracle(subs1, "gpm", max_degree=3, start=expected_kept)
    degrees = np.bincount(np.array([(u, v) for u, v, _, _ in stored]).reshape(-1))
    assert degrees.max() <= 3 and run[S.EDGES] == len(stored)
    _, _, pairs0 = version(lakehouse, days[0])
    row = changes_of(lakehouse, "d1.gpm")
    previous = len(edges_of(lakehouse, "d0.gpm"))
    assert row[S.CHANGE_KIND] == S.INCREMENTAL and row[S.PREVIOUS_RUN_ID] == "d0.gpm"
    assert (row[S.LINKS_KEPT], row[S.LINKS_ADDED]) == (len(kept), len(added))
    assert row[S.LINKS_REMOVED] == previous - len(kept) == departed + unshared + over + released
    removed = (row[S.REMOVED_DEPARTED], row[S.REMOVED_UNSHARED], row[S.REMOVED_BUDGET], row[S.REMOVED_REDUNDANT])
    assert removed == (departed, unshared, over, released)
    assert row[S.CHANGED_SUBSCRIPTIONS] == len(pairs0 ^ pairs1)
    assert row[S.MAX_DEGREE] == degrees.max() and row[S.TCO_SUPPORT] == run[S.TCO_SUPPORT]
    again = run_design(spark, lakehouse, GPM, "d1.gpm", progress=False, incremental=IncrementalChoice("d0.gpm"))
    assert again[S.STARTED_AT] == run[S.STARTED_AT]  # complete: reused


def test_latest_finds_yesterdays_run_and_a_first_day_designs_fresh(spark, lakehouse, days):
    run_design(spark, lakehouse, GPM, "d1.latest", progress=False, incremental=IncrementalChoice("latest"))
    assert edges_of(lakehouse, "d1.latest") == edges_of(lakehouse, "d1.gpm")
    assert changes_of(lakehouse, "d1.latest")[S.PREVIOUS_RUN_ID] == "d0.gpm"
    first = DesignRequest("churny", "gpm", max_degree=2)  # no earlier run of this request
    run_design(spark, lakehouse, first, "d1.first", progress=False, incremental=IncrementalChoice("latest"))
    assert 0 not in {r for _, _, r, _ in edges_of(lakehouse, "d1.first")}  # no kept links: fresh
    assert lakehouse.read(S.OVERLAY_CHANGES).filter(F.col(S.RUN_ID) == "d1.first").count() == 0


def test_a_fresh_design_records_its_changes_against_yesterdays_run(spark, lakehouse, days):
    run_design(spark, lakehouse, GPM, "d1.fresh", progress=False, changes_from="d0.gpm")
    row = changes_of(lakehouse, "d1.fresh")
    before, _, _ = version(lakehouse, days[0])
    today, subs1, _ = version(lakehouse, days[1])

    def keyed(nodes, run_id):
        return {tuple(sorted((nodes[u], nodes[v]))) for u, v, _, _ in edges_of(lakehouse, run_id)}

    old, new = keyed(before, "d0.gpm"), keyed(today, "d1.fresh")
    assert [(u, v, g) for u, v, _, g in edges_of(lakehouse, "d1.fresh")] == greedy_oracle(subs1, "gpm", max_degree=3)
    assert row[S.CHANGE_KIND] == S.FRESH
    assert (row[S.LINKS_KEPT], row[S.LINKS_ADDED], row[S.LINKS_REMOVED]) == (
        len(old & new),
        len(new - old),
        len(old - new),
    )
    alive = set(today.values())
    assert row[S.REMOVED_DEPARTED] == sum(1 for a, b in old - new if a not in alive or b not in alive)


def test_max_changes_caps_what_the_design_adds(spark, lakehouse, days):
    choice = IncrementalChoice("d0.gpm", max_changes=3)
    run_design(spark, lakehouse, GPM, "d1.capped", progress=False, incremental=choice)
    stored = edges_of(lakehouse, "d1.capped")
    kept = [(u, v) for u, v, r, _ in stored if r == 0]
    added = [(u, v, g) for u, v, r, g in stored if r > 0]
    row = changes_of(lakehouse, "d1.capped")
    _, subs1, _ = version(lakehouse, days[1])
    allowance = max(0, 3 - row[S.REMOVED_UNSHARED] - row[S.REMOVED_BUDGET])
    assert added == greedy_oracle(subs1, "gpm", max_degree=3, start=kept, max_edges=len(kept) + allowance)
    assert len(added) <= allowance


def test_a_scheduled_rebuild_is_a_fresh_design_recorded_as_such(spark, lakehouse, days):
    choice = IncrementalChoice("d0.gpm", rebuild_every=1)
    run_design(spark, lakehouse, GPM, "d1.rebuilt", progress=False, incremental=choice)
    _, subs1, _ = version(lakehouse, days[1])
    stored = edges_of(lakehouse, "d1.rebuilt")
    yesterday, _ = carried_by_hand(lakehouse, days, "d0.gpm")  # a rebuild prefers them among equal gains
    expected = greedy_oracle(subs1, "gpm", max_degree=3, prefer=yesterday)
    assert expected != greedy_oracle(subs1, "gpm", max_degree=3)  # the preference decides some tie here
    assert [(u, v, g) for u, v, _, g in stored] == expected
    assert changes_of(lakehouse, "d1.rebuilt")[S.CHANGE_KIND] == S.REBUILT
    params = json.loads(lakehouse.run_row("d1.rebuilt")[S.PARAMS])
    assert params["rebuilt"] == "scheduled" and params["start"]["from_run"] == "d0.gpm"


@pytest.mark.parametrize(
    "run_id,request_,message",
    [
        ("d1.gpm", GPM, "made on the current version"),
        ("d0.gm", GPM, "designed by gm, not gpm"),
        ("d0.gpm", DesignRequest("churny", "gpm", budget_ratio=0.5), "budget rule"),
    ],
)
def test_bad_starts_are_refused_and_nothing_is_written(spark, lakehouse, days, run_id, request_, message):
    if run_id == "d1.gpm":
        run_design(spark, lakehouse, GPM, "d1.gpm", progress=False, incremental=IncrementalChoice("d0.gpm"))
    with pytest.raises(InputError, match=message):
        run_design(spark, lakehouse, request_, "refused", progress=False, incremental=IncrementalChoice(run_id))
    with pytest.raises(UnknownRunError):
        lakehouse.run_row("refused")


def test_an_unknown_start_is_named(spark, lakehouse, days):
    with pytest.raises(UnknownRunError, match="no-such-run"):
        run_design(spark, lakehouse, GPM, "refused", progress=False, incremental=IncrementalChoice("no-such-run"))


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--source", "churn", "--days", "1", "--rate", "1.5", "--seed", "1"], "--rate: must be a number in [0, 1]"),
        (["--source", "churn", "--days", "0", "--rate", "0.1", "--seed", "1"], "--days: must be a positive integer"),
        (["--source", "churn", "--rate", "0.1", "--seed", "1"], "--source churn needs --days"),
        (
            ["--source", "churn", "--days", "1", "--rate", "0.1", "--seed", "1", "--nodes", "5"],
            "--nodes does not apply",
        ),
        (
            [
                "--source",
                "synthetic",
                "--dist",
                "zipf",
                "--nodes",
                "5",
                "--topics",
                "3",
                "--min-subs",
                "1",
                "--max-subs",
                "2",
                "--seed",
                "1",
                "--rate",
                "0.1",
            ],
            "--rate does not apply to --source synthetic",
        ),
    ],
)
def test_bad_churn_flags_fail_before_spark(tmp_path, capsys, argv, message):
    code = exit_code(["--lakehouse", str(tmp_path / "none"), "ingest", "--instance", "x", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--algorithm", "gpm", "--max-degree", "3", "--max-changes", "4"], "--max-changes shapes an incremental"),
        (["--algorithm", "swico", "--incremental-from", "r"], "--incremental-from: only for the greedy algorithms"),
        (["--algorithm", "gm", "--incremental-from", "r", "--changes-from", "q"], "--changes-from compares a fresh"),
        (["--algorithm", "gm", "--incremental-from", "r", "--rebuild-below", "2"], "--rebuild-below: must be a number"),
    ],
)
def test_bad_incremental_flags_fail_before_spark(tmp_path, capsys, argv, message):
    code = exit_code(["--lakehouse", str(tmp_path / "none"), "design", "--instance", "x", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert not (tmp_path / "none").exists()


EXPERIMENT = ["churn-experiment", "--instance", "exp-base", "--days", "2", "--rate", "0.1", "--seed", "3"]
EXPERIMENT += ["--algorithm", "gpm", "--max-degree", "3"]
CHAIN = "exp-base.churn0.1.s3"


@pytest.fixture(scope="module")
def experiment(spark, lakehouse):
    """A two-day chain through the CLI: its output."""
    spec = SyntheticSpec(dist="unif", nodes=30, topics=8, min_subs=1, max_subs=3, seed=4)
    store_instance(spark, lakehouse, "exp-base", spec)
    code, out, err = run_cli("--lakehouse", lakehouse.root, *EXPERIMENT)
    assert code == 0, err[-3000:]
    return out


def chain_changes(lakehouse):
    return {r[S.RUN_ID]: r for r in lakehouse.read(S.OVERLAY_CHANGES).filter(F.col(S.INSTANCE) == CHAIN).collect()}


@pytest.mark.slow  # a chain of five designs (its pieces run in the default tests above)
def test_the_experiment_designs_each_day_both_ways_and_a_rerun_adds_nothing(lakehouse, experiment):
    versions = lakehouse.instance_history(CHAIN).collect()
    assert [json.loads(v[S.PARAMS])["day"] for v in versions] == [3, 2, 1]  # day 0 is the copy
    changes = chain_changes(lakehouse)
    for day in (1, 2):
        inc, fresh = (f"{CHAIN}.gpm.d3.s1.{kind}.d{day:03d}" for kind in ("inc", "fresh"))
        previous = f"{CHAIN}.gpm.d3.s1.inc.d{day - 1:03d}"
        assert changes[inc][S.PREVIOUS_RUN_ID] == changes[fresh][S.PREVIOUS_RUN_ID] == previous
        assert (changes[inc][S.CHANGE_KIND], changes[fresh][S.CHANGE_KIND]) == (S.INCREMENTAL, S.FRESH)
        assert changes[inc][S.CHANGED_SUBSCRIPTIONS] == changes[fresh][S.CHANGED_SUBSCRIPTIONS] > 0
    assert len(experiment.splitlines()) >= 5  # the table: a title, a header, a rule and days 0-2
    code, again, err = run_cli("--lakehouse", lakehouse.root, *EXPERIMENT)
    assert code == 0, err[-3000:]
    assert len(lakehouse.instance_history(CHAIN).collect()) == 3
    assert again.splitlines()[-3:] == experiment.splitlines()[-3:]


@pytest.mark.slow  # on the chain above
def test_the_report_shows_the_chain_incremental_against_fresh(spark, lakehouse, experiment, tmp_path):
    from pipelines.report import day_two, run_report

    data = run_report(spark, lakehouse, tmp_path / "report")
    assert "day_two.png" in data.files
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## Day two: incremental against fresh designs" in text
    (row,) = day_two.summary(data.day_two[data.day_two[day_two.SERIES] == f"{CHAIN} gpm"]).to_dict("records")
    changes = [r for r in chain_changes(lakehouse).values() if r[S.PREVIOUS_RUN_ID] is not None]
    inc = [r for r in changes if r[S.CHANGE_KIND] == S.INCREMENTAL]
    fresh = [r for r in changes if r[S.CHANGE_KIND] == S.FRESH]
    assert row["days"] == len(inc) == 2
    assert row["changed_incremental"] == round(sum(r[S.LINKS_ADDED] + r[S.LINKS_REMOVED] for r in inc) / 2, 1)
    assert row["changed_fresh"] == round(sum(r[S.LINKS_ADDED] + r[S.LINKS_REMOVED] for r in fresh) / 2, 1)


@pytest.mark.parametrize("anchor,rebuilt", [(2.0, "below"), pytest.param(0.0, None, marks=pytest.mark.slow)])
def test_rebuild_below_redoes_the_design_fresh_when_it_falls_short(
    spark, lakehouse, days, monkeypatch, anchor, rebuilt
):
    """The chain's last fresh TcoSuppR is set by hand: 2.0 puts any overlay more than 0.5 below it
    (rebuilt fresh), 0.0 none (kept incremental)."""
    from pipelines import design

    monkeypatch.setattr(design, "_anchor_tco", lambda lakehouse, run_id: anchor)
    run_id = f"d1.below{anchor:g}"
    choice = IncrementalChoice("d0.gpm", rebuild_below=0.5)
    run_design(spark, lakehouse, GPM, run_id, progress=False, incremental=choice)
    params = json.loads(lakehouse.run_row(run_id)[S.PARAMS])
    assert params.get("rebuilt") == rebuilt
    kinds = {None: S.INCREMENTAL, "below": S.REBUILT}
    assert changes_of(lakehouse, run_id)[S.CHANGE_KIND] == kinds[rebuilt]
    stored = edges_of(lakehouse, run_id)
    assert (0 in {r for _, _, r, _ in stored}) == (rebuilt is None)  # kept links only when incremental
    if rebuilt:
        _, subs1, _ = version(lakehouse, days[1])
        yesterday, _ = carried_by_hand(lakehouse, days, "d0.gpm")
        assert [(u, v, g) for u, v, _, g in stored] == greedy_oracle(subs1, "gpm", max_degree=3, prefer=yesterday)


class Crash(BaseException):
    """Stands in for kill -9 between a round's links and its round row."""


@pytest.mark.parametrize("crash_at", [0, pytest.param(1, marks=pytest.mark.slow)])  # 1: 15 s, the slow pass
def test_a_crashed_incremental_run_resumes_to_the_same_overlay(spark, lakehouse, days, monkeypatch, crash_at):
    """Crash before the first round row (only the kept links and round 1's links stored) or after
    it, then run again: the kept links and the oracle's sequence from them, each once."""
    from pipelines import design

    run_id = f"d1.crash{crash_at}"
    real_append, appended = lakehouse.append_run_rows, []

    def crash_on_a_round_row(table, run, frame):
        if table is S.OVERLAY_ROUNDS and len(appended) == crash_at:
            raise Crash()
        real_append(table, run, frame)
        if table is S.OVERLAY_ROUNDS:
            appended.append(run)

    settings = {"batch_size": 2, "per_node": 1, "progress": False, "engine": design.EngineChoice(regime="rounds")}
    settings |= {"incremental": IncrementalChoice("d0.gpm")}
    monkeypatch.setattr(lakehouse, "append_run_rows", crash_on_a_round_row)
    with pytest.raises(Crash):
        run_design(spark, lakehouse, GPM, run_id, commit_seconds=0, diameters=False, **settings)
    monkeypatch.undo()
    assert lakehouse.read(S.OVERLAY_EDGES).filter((F.col(S.RUN_ID) == run_id) & (F.col(S.ROUND) > 0)).count() > 0
    run = run_design(spark, lakehouse, GPM, run_id, diameters=False, **settings)
    assert run[S.STATUS] == S.COMPLETE
    stored = edges_of(lakehouse, run_id)
    kept = [(u, v) for u, v, r, _ in stored if r == 0]
    links, _ = carried_by_hand(lakehouse, days, "d0.gpm")
    _, subs1, _ = version(lakehouse, days[1])
    assert kept == release_oracle(subs1, keep_oracle(subs1, links, max_degree=3)[0], max_degree=3)[0]
    assert [(u, v, g) for u, v, r, g in stored if r > 0] == greedy_oracle(subs1, "gpm", max_degree=3, start=kept)
    assert changes_of(lakehouse, run_id)[S.LINKS_KEPT] == len(kept)
