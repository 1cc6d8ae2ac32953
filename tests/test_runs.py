"""Runs as objects (list, show, delete, --replace) and instance history (versions kept, retention)."""

from datetime import datetime, timedelta

import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance
from pipelines import ledger, overlays, runs
from pipelines.cli import main
from pipelines.design import DesignRequest, run_design
from pipelines.lakehouse import Retention, UnknownRunError
from tests.helpers import imported, routing_run_on

SPEC = SyntheticSpec(dist="zipf", nodes=20, topics=8, min_subs=1, max_subs=3, seed=3)
OTHER = SyntheticSpec(dist="unif", nodes=14, topics=5, min_subs=1, max_subs=2, seed=4)


@pytest.fixture(scope="module")
def lakehouse(module_lakehouse):
    return module_lakehouse


@pytest.fixture(scope="module")
def instance(spark, lakehouse):
    lakehouse.replace_instance("r", synthetic_instance(spark, SPEC))
    return "r"


def rows_of(lakehouse, table, key, value):
    return lakehouse.read(table).filter(F.col(key) == value).count() if lakehouse.exists(table) else 0


def comparison(spark, lakehouse, comparison_id, routing_run_ids):
    now = datetime(2026, 1, 1)
    rows = [
        (comparison_id, "r", f"system {i}", "swico", "pie", rid, None, 0, None, None, None, None, None, None, None, now)
        for i, rid in enumerate(routing_run_ids)
    ]
    frame = local_frame(spark, rows, S.ROUTING_COMPARISON.schema)
    lakehouse.write_run_rows(S.ROUTING_COMPARISON, comparison_id, frame, key=S.COMPARISON_ID)


def test_retention_keeps_the_newest_versions_and_those_replaced_recently():
    now = datetime.now()
    versions = [("v1", now - timedelta(days=9)), ("v2", now - timedelta(days=2)), ("v3", None), ("v4", None)]
    assert Retention(versions=2).kept("v3", versions) == {"v2", "v3", "v4"}  # v4: a later ingest still writing
    assert Retention(versions=None, days=5).kept("v3", versions) == {"v2", "v3", "v4"}
    assert Retention(versions=None, days=None).kept("v3", versions) == {"v1", "v2", "v3", "v4"}
    assert Retention(versions=1, days=30).kept("v3", versions[:3]) == {"v3"}


@pytest.mark.slow  # about 50 s
def test_ingest_keeps_versions_within_the_retention_and_runs_read_theirs(spark, lakehouse, write_text):
    lakehouse.replace_instance("h", synthetic_instance(spark, SPEC))
    first = lakehouse.instance_row("h")[S.INGEST_ID]
    imported(spark, lakehouse, write_text, "on-first", [(1, 2)], instance="h")
    lakehouse.replace_instance("h", synthetic_instance(spark, OTHER), Retention(versions=2))
    second = lakehouse.instance_row("h")[S.INGEST_ID]
    imported(spark, lakehouse, write_text, "on-second", [(1, 2)], instance="h")

    history = lakehouse.instance_history("h").collect()
    assert [v[S.INGEST_ID] for v in history] == [second, first]
    assert history[0][S.SUPERSEDED_AT] is None and history[1][S.SUPERSEDED_AT] is not None
    version, subscriptions, _ = overlays.run_inputs(lakehouse, overlays.complete_run(lakehouse, "on-first"))
    assert version[S.NODES] == 20 and version[S.INGEST_ID] == first  # the first version, not the current
    assert subscriptions.count() == version[S.SUBSCRIPTIONS]

    lakehouse.replace_instance("h", synthetic_instance(spark, SPEC), Retention(versions=2))
    assert [v[S.INGEST_ID] for v in lakehouse.instance_history("h").collect()][1:] == [second]
    for table in S.INSTANCE_TABLES:
        assert rows_of(lakehouse, table, S.INGEST_ID, first) == 0, f"{table.name} kept a dropped version"
    with pytest.raises(InputError, match="no longer stored.*--replace.*runs delete on-first"):
        overlays.run_evaluate(spark, lakehouse, "on-first")
    assert overlays.run_inputs(lakehouse, overlays.complete_run(lakehouse, "on-second"))[0][S.NODES] == 14
    listed = {r[S.RUN_ID]: r[runs.VERSION] for r in runs.list_runs(lakehouse, runs.RunFilter(instance="h"))[0]}
    assert listed == {"on-first": runs.DROPPED, "on-second": runs.EARLIER}


@pytest.mark.slow  # about 31 s
def test_runs_are_listed_newest_first_filtered_and_shown(spark, lakehouse, instance, write_text):
    imported(spark, lakehouse, write_text, "list-a", [(1, 2), (2, 3)])
    imported(spark, lakehouse, write_text, "list-b", [(1, 2)])
    overlays.run_evaluate(spark, lakehouse, "list-b", diameters=False)
    routing_run_on(spark, lakehouse, "list-b.pie", "list-b")

    listed, more = runs.list_runs(lakehouse, runs.RunFilter(instance="r", kind="overlay"))
    names = [r[S.RUN_ID] for r in listed if r[S.RUN_ID].startswith("list-")]
    assert names == ["list-b", "list-a"] and not more
    assert {r[S.RUN_ID] for r in runs.list_runs(lakehouse, runs.RunFilter(made_by="pie"))[0]} == {"list-b.pie"}
    listed, more = runs.list_runs(lakehouse, runs.RunFilter(instance="r", limit=1))
    assert len(listed) == 1 and more

    details = runs.show_run(lakehouse, "list-b")
    assert details.kind is runs.OVERLAY and details.params == {"path": details.params["path"]}
    assert details.row[runs.VERSION] == runs.CURRENT and details.row[S.EDGES] == 1
    (metrics,) = details.sections["metrics"]
    assert metrics[S.DIAMETER_METHOD] == "skipped" and metrics[S.DIAMETER_MAX] is None  # not computed: null, not 0
    assert [r[S.ROUTING_RUN_ID] for r in details.sections["routing runs on it"]] == ["list-b.pie"]
    assert runs.show_run(lakehouse, "list-b.pie").kind is runs.ROUTING  # looked up, not guessed from the name
    with pytest.raises(UnknownRunError, match="python -m pipelines runs"):
        runs.show_run(lakehouse, "no-such-run")


@pytest.mark.slow  # about 46 s
def test_delete_removes_the_run_its_routing_runs_and_their_comparisons(spark, lakehouse, instance, write_text):
    imported(spark, lakehouse, write_text, "gone", [(1, 2), (3, 4)])
    imported(spark, lakehouse, write_text, "stays", [(1, 2)])
    overlays.run_evaluate(spark, lakehouse, "gone", diameters=False)
    routing_run_on(spark, lakehouse, "gone.pie", "gone")
    routing_run_on(spark, lakehouse, "stays.pie", "stays")
    comparison(spark, lakehouse, "cmp-both", ["gone.pie", "stays.pie"])
    comparison(spark, lakehouse, "cmp-stays", ["stays.pie"])

    deleted = runs.delete_run(lakehouse, "gone")
    assert [(d.kind, d.run_ids) for d in deleted] == [("routing", ("gone.pie",)), ("overlay", ("gone",))]
    assert deleted[1].rows[S.OVERLAY_EDGES.name] == 2 and deleted[1].rows[S.OVERLAY_RUNS.name] == 1
    for table in (S.OVERLAY_RUNS, S.OVERLAY_EDGES, S.OVERLAY_METRICS, S.TOPIC_COMPONENTS):
        assert rows_of(lakehouse, table, S.RUN_ID, "gone") == 0, table.name
    for table in (S.OVERLAY_RUNS, S.OVERLAY_EDGES):
        assert rows_of(lakehouse, table, S.RUN_ID, "stays") > 0, table.name
    assert rows_of(lakehouse, S.ROUTING_RUNS, S.ROUTING_RUN_ID, "gone.pie") == 0
    assert rows_of(lakehouse, S.ROUTING_METRICS, S.ROUTING_RUN_ID, "gone.pie") == 0
    assert rows_of(lakehouse, S.ROUTING_RUNS, S.ROUTING_RUN_ID, "stays.pie") == 1
    assert rows_of(lakehouse, S.ROUTING_COMPARISON, S.COMPARISON_ID, "cmp-both") == 0  # a comparison goes whole
    assert rows_of(lakehouse, S.ROUTING_COMPARISON, S.COMPARISON_ID, "cmp-stays") == 1
    with pytest.raises(UnknownRunError):
        runs.delete_run(lakehouse, "gone")


@pytest.mark.slow  # about 25 s
def test_a_delete_hides_the_run_at_its_first_commit_and_the_same_command_finishes_it(
    spark,
    lakehouse,
    instance,
    write_text,
):
    imported(spark, lakehouse, write_text, "halfway", [(1, 2)])
    overlays.run_evaluate(spark, lakehouse, "halfway", diameters=False)
    ledger.mark_deleted(lakehouse, ledger.OVERLAY, "halfway")  # a delete that stopped after its first commit
    with pytest.raises(InputError, match="deleted.*runs delete halfway"):
        overlays.complete_run(lakehouse, "halfway")
    from pipelines.workflow.complete import _current_run

    assert _current_run(lakehouse, "halfway") is None  # a workflow step would redo it
    (listed,) = runs.list_runs(lakehouse, runs.RunFilter(status=S.DELETED))[0]
    assert listed[S.RUN_ID] == "halfway"
    (done,) = runs.delete_run(lakehouse, "halfway")
    assert done.rows[S.OVERLAY_METRICS.name] == 1 and rows_of(lakehouse, S.OVERLAY_RUNS, S.RUN_ID, "halfway") == 0


@pytest.mark.slow  # two designs and two ingests (about 2.5 min)
def test_design_replace_redoes_a_run_made_on_an_earlier_version(spark, lakehouse):
    lakehouse.replace_instance("d", synthetic_instance(spark, SPEC))
    request = DesignRequest(instance="d", algorithm="random-a", max_edges=6, seed=2)
    first = run_design(spark, lakehouse, request, progress=False, diameters=False)
    routing_run_on(spark, lakehouse, f"{first[S.RUN_ID]}.pie", first[S.RUN_ID])
    lakehouse.replace_instance("d", synthetic_instance(spark, OTHER))
    with pytest.raises(InputError, match="earlier version.*--replace"):
        run_design(spark, lakehouse, request, progress=False, diameters=False)
    again = run_design(spark, lakehouse, request, progress=False, diameters=False, replace=True)
    assert again[S.RUN_ID] == first[S.RUN_ID] and again[S.STATUS] == S.COMPLETE
    assert again[S.INGEST_ID] == lakehouse.instance_row("d")[S.INGEST_ID] != first[S.INGEST_ID]
    assert rows_of(lakehouse, S.ROUTING_RUNS, S.RUN_ID, first[S.RUN_ID]) == 0  # routed on the old overlay: gone


def test_the_runs_and_history_commands(spark, lakehouse, instance, write_text, capsys):
    imported(spark, lakehouse, write_text, "cli-run", [(1, 2)])
    root = ["--lakehouse", lakehouse.root]
    assert main([*root, "runs", "--instance", "r"]) == 0
    out = capsys.readouterr().out
    assert "cli-run" in out and "imported" in out and "current" in out
    assert main([*root, "runs", "show", "cli-run"]) == 0
    assert '"path":' in capsys.readouterr().out
    assert main([*root, "instances", "--history", "r"]) == 0
    assert "current" in capsys.readouterr().out
    assert main([*root, "runs", "delete", "cli-run"]) == 0
    assert "Deleted cli-run" in capsys.readouterr().out
    assert main([*root, "runs", "show", "cli-run"]) == 2
    assert "no overlay or routing run 'cli-run'" in capsys.readouterr().err
