"""`maintain`: Delta's OPTIMIZE then VACUUM over the lab's tables; rows unchanged, small files
compacted, and the files no version within the retention needs deleted (and only those)."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from delta.tables import DeltaTable

from overlay import schema as S
from overlay.errors import InputError
from overlay.frames import local_frame
from pipelines.maintenance import MaintainRequest, run_maintain
from tests.helpers import exit_code, run_cli


def edges(spark, lakehouse, runs: int):
    schema = S.frame_schema(S.OVERLAY_EDGES, S.EDGE_COLUMNS)
    for r in range(runs):
        rows = [(u, u + 1, u + 1, 1, 1) for u in range(5 * r, 5 * r + 5)]
        lakehouse.append_run_rows(S.OVERLAY_EDGES, f"run{r}", local_frame(spark, rows, schema))
    return lakehouse.read(S.OVERLAY_EDGES)


def test_maintain_compacts_and_vacuums_keeping_the_rows(spark, lakehouse):
    before = edges(spark, lakehouse, 3).toPandas()
    (row,) = run_maintain(spark, lakehouse, MaintainRequest(retain_hours=0), progress=False)
    assert row["table"] == S.OVERLAY_EDGES.name
    assert row["files_before"] >= 3 and row["files_after"] == 1  # three appends -> one file
    after = lakehouse.read(S.OVERLAY_EDGES)
    assert_df_equality(after, spark.createDataFrame(before, after.schema), ignore_row_order=True)
    operations = [
        h["operation"] for h in DeltaTable.forPath(spark, lakehouse.path(S.OVERLAY_EDGES)).history().collect()
    ]
    assert "OPTIMIZE" in operations and "VACUUM END" in operations
    with pytest.raises(Exception, match="(?i)not (exist|found)"):  # the appends' files are gone
        spark.read.format("delta").option("versionAsOf", 1).load(lakehouse.path(S.OVERLAY_EDGES)).collect()


def test_the_default_window_keeps_every_recent_version_readable(spark, lakehouse):
    edges(spark, lakehouse, 2)
    (row,) = run_maintain(spark, lakehouse, MaintainRequest(), progress=False)  # 168 hours
    assert row["files_after"] == 1 + row["files_before"]  # compacted, and nothing deleted
    assert spark.read.format("delta").option("versionAsOf", 1).load(lakehouse.path(S.OVERLAY_EDGES)).count() == 5


def test_bad_maintain_requests_are_refused(tmp_path, capsys):
    with pytest.raises(InputError, match="nothing to do"):
        MaintainRequest(optimize=False, vacuum=False).check()
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
