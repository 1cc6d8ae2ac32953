"""Workflows at once on one lakehouse (the CI pass, `-m ci`): two different workflows on
different instances (tiny_concurrent and tiny_day_two), one of them started twice, as three
processes together. All finish, and the
lakehouse holds exactly the rows the two workflows leave when run once each, one after the other,
in this process: none lost, none doubled (every column but those that time the work or name the
attempt). One test, not two: each run of a workflow costs minutes of the CI pass."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import lab_command, python_env, run_cli, same_lakehouses

pytestmark = pytest.mark.ci
ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / "tests" / "workflows"
TWICE, DAY_TWO = WORKFLOWS / "tiny_concurrent.yaml", WORKFLOWS / "tiny_day_two.yaml"


def workflow_argv(lakehouse: Path, workflow: Path, report: Path) -> list[str]:
    return ["--lakehouse", str(lakehouse), "-q", "workflow", str(workflow), "--param", f"report_dir={report}"]


def at_once(*argvs: list[str]) -> None:
    """Start every command as its own process, together; each must exit 0."""
    processes = [
        subprocess.Popen(
            lab_command(*argv),
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


def test_workflows_at_once_leave_the_rows_of_one_run_each(spark, tmp_path):
    """Three processes at once on one lakehouse: tiny_concurrent twice (the same workflow: one
    process's runs are taken over by the other, which it then awaits) and tiny_day_two (another
    workflow on another instance); against the two workflows run once each, one after the other."""
    alone, together = tmp_path / "alone", tmp_path / "together"
    one_after_the_other(
        workflow_argv(alone, TWICE, tmp_path / "alone-refresh"),
        workflow_argv(alone, DAY_TWO, tmp_path / "alone-day-two"),
    )
    report = tmp_path / "together-refresh"
    at_once(
        workflow_argv(together, TWICE, report),
        workflow_argv(together, DAY_TWO, tmp_path / "together-day-two"),
        workflow_argv(together, TWICE, report),
    )
    same_lakehouses(spark, alone, together)
