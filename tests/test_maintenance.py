"""`maintain`: Delta's OPTIMIZE then VACUUM over the lab's tables; rows unchanged, small files
compacted, and the files no version within the retention needs deleted (and only those)."""

from __future__ import annotations

from datetime import datetime

import pytest
from chispa import assert_df_equality
from delta.tables import DeltaTable

from overlay import schema as S
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance
from pipelines.maintenance import MaintainRequest, run_maintain
from pipelines.runs import runs_on_dropped_versions
from tests.helpers import exit_code, routing_run_on, run_cli

FIRST = SyntheticSpec(dist="zipf", nodes=20, topics=8, min_subs=1, max_subs=3, seed=3)


def edges(spark, lakehouse, runs: int):
    schema = S.frame_schema(S.OVERLAY_EDGES, S.EDGE_COLUMNS)
    for r in range(runs):
        rows = [(u, u + 1, u + 1, 1, 1) for u in range(5 * r, 5 * r + 5)]
        lakehouse.append_run_rows(S.OVERLAY_EDGES, f"run{r}", local_frame(spark, rows, schema))
    return lakehouse.read(S.OVERLAY_EDGES)


def test_maintain_compacts_and_vacuums_keeping_the_rows(spark, lakehouse):
    before = edges(spark, lakehouse, 3).toPandas()
    request = MaintainRequest(retain_hours=0, log_retain_hours=30)
    (row,) = run_maintain(spark, lakehouse, request, progress=False).tables
    assert row["table"] == S.OVERLAY_EDGES.name
    properties = DeltaTable.forPath(spark, lakehouse.path(S.OVERLAY_EDGES)).detail().first()["properties"]
    assert properties["delta.logRetentionDuration"] == "interval 30 hours"
    assert properties["delta.deletedFileRetentionDuration"] == "interval 0 seconds"
    assert row["files_before"] >= 3 and row["files_after"] == 1  # three appends -> one file
    after = lakehouse.read(S.OVERLAY_EDGES)
    assert_df_equality(after, spark.createDataFrame(before, after.schema), ignore_row_order=True)
    operations = [
        h["operation"] for h in DeltaTable.forPath(spark, lakehouse.path(S.OVERLAY_EDGES)).history().collect()
    ]
    assert "OPTIMIZE" in operations and "VACUUM END" in operations
    assert not row["settled"]
    (again,) = run_maintain(spark, lakehouse, request, progress=False).tables
    assert again["settled"] and again["files_after"] == 1  # nothing written since: skipped
    newest = DeltaTable.forPath(spark, lakehouse.path(S.OVERLAY_EDGES)).history(1).first()["operation"]
    assert newest == "VACUUM END"  # the first maintain's, not a second one
    gone = "(?i)not (exist|found)|beyond delta.deletedFileRetentionDuration"  # Delta knows, or reads and fails
    with pytest.raises(Exception, match=gone):  # the appends' files are gone
        spark.read.format("delta").option("versionAsOf", 1).load(lakehouse.path(S.OVERLAY_EDGES)).collect()


def test_the_default_window_keeps_every_recent_version_readable(spark, lakehouse):
    edges(spark, lakehouse, 2)
    (row,) = run_maintain(spark, lakehouse, MaintainRequest(), progress=False).tables  # 168 hours
    assert row["files_after"] == 1 + row["files_before"]  # compacted, and nothing deleted
    (again,) = run_maintain(spark, lakehouse, MaintainRequest(), progress=False).tables
    assert not again["settled"]  # the replaced files wait out the window: VACUUM runs again
    assert spark.read.format("delta").option("versionAsOf", 1).load(lakehouse.path(S.OVERLAY_EDGES)).count() == 5


def overlay_run(spark, lakehouse, run_id: str, ingest_id: str, status: str = S.COMPLETE, links: int = 0) -> None:
    """An overlay run row on one version of instance `m`, with `links` stored links."""
    record = {S.RUN_ID: run_id, S.INSTANCE: "m", S.INGEST_ID: ingest_id, S.ALGORITHM: "gm", S.PARAMS: "{}"}
    lakehouse.insert_run({**record, S.STATUS: status, S.STARTED_AT: datetime(2026, 1, 1)})
    if links:
        edges = [(u, u + 1, u + 1, 1, 1) for u in range(links)]
        lakehouse.append_run_rows(
            S.OVERLAY_EDGES, run_id, local_frame(spark, edges, S.frame_schema(S.OVERLAY_EDGES, S.EDGE_COLUMNS))
        )


def test_maintain_deletes_the_runs_of_dropped_versions_and_only_those(spark, lakehouse):
    lakehouse.replace_instance("m", synthetic_instance(spark, FIRST))
    current = lakehouse.instance_row("m")[S.INGEST_ID]
    overlay_run(spark, lakehouse, "old", "a-dropped-version", links=2)  # its version no longer stored
    overlay_run(spark, lakehouse, "old.running", "a-dropped-version", S.RUNNING)  # another process's: left
    overlay_run(spark, lakehouse, "new", current, links=1)
    routing_run_on(spark, lakehouse, "old.pie", "old", instance="m")
    routing_run_on(spark, lakehouse, "new.pie", "new", instance="m")
    assert runs_on_dropped_versions(lakehouse) == ["old"]

    done = run_maintain(spark, lakehouse, MaintainRequest(optimize=False), progress=False)
    assert [(d.kind, d.run_ids) for d in done.deleted] == [("routing", ("old.pie",)), ("overlay", ("old",))]
    assert done.deleted[1].rows == {S.OVERLAY_EDGES.name: 2, S.OVERLAY_RUNS.name: 1}
    assert done.deleted[0].rows == {S.ROUTING_METRICS.name: 1, S.ROUTING_RUNS.name: 1}
    assert {r[S.RUN_ID] for r in lakehouse.read(S.OVERLAY_RUNS).collect()} == {"new", "old.running"}
    assert {r[S.ROUTING_RUN_ID] for r in lakehouse.read(S.ROUTING_RUNS).collect()} == {"new.pie"}
    assert [r[S.RUN_ID] for r in lakehouse.read(S.OVERLAY_EDGES).collect()] == ["new"]
    assert runs_on_dropped_versions(lakehouse) == []


def test_bad_maintain_requests_are_refused(tmp_path, capsys):
    with pytest.raises(InputError, match="nothing to do"):
        MaintainRequest(optimize=False, vacuum=False).check()
    with pytest.raises(InputError, match="shorter than the VACUUM window of 168 hours"):
        MaintainRequest(log_retain_hours=24).check()
    MaintainRequest(retain_hours=0, log_retain_hours=1).check()
    assert exit_code(["--lakehouse", str(tmp_path / "none"), "maintain", "--retain-hours", "-1"]) == 2
    assert "--retain-hours" in capsys.readouterr().err


def test_the_maintenance_workflow_runs_maintain_with_its_window(spark, lakehouse, tmp_path):
    edges(spark, lakehouse, 2)
    code, out, err = run_cli(
        "--lakehouse", lakehouse.root, "-q", "workflow", "lakehouse_maintenance", "--param", "retain_hours=0"
    )
    assert code == 0, err
    history = DeltaTable.forPath(spark, lakehouse.path(S.OVERLAY_EDGES)).history().collect()
    vacuum = next(h for h in history if h["operation"] == "VACUUM START")
    assert "OPTIMIZE" in [h["operation"] for h in history]
    assert int(vacuum["operationParameters"]["specifiedRetentionMillis"]) == 0  # the step's window
