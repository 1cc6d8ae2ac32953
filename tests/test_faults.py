"""Clusters that fail (the CI pass, `-m ci`): a Spark standalone cluster on 127.0.0.1 (`./lab
cluster`, a master and two one-core workers), a worker and its executor killed with -9 in the
middle of a job; the command must exit 0 with the tables of an undisturbed run, row for row.

The iterative jobs checkpoint reliably there (`spark.checkpoints: auto`: the master is not
in-process), so the lost executor's blocks are read back from the checkpoint folder and its
tasks are retried on the other worker. A pytest-xdist worker starts one cluster for the checks it
takes (`XDIST_SPREAD`: each check may go to either worker, so the two share the CI pass's tail)
and restarts its killed worker after each.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from chispa import assert_df_equality

from overlay import schema as S
from pipelines import standalone
from pipelines.lakehouse import Lakehouse
from tests.helpers import lab_command, python_env, run_cli

pytestmark = pytest.mark.ci
XDIST_SPREAD = True  # three long independent checks; a cluster start (seconds) is cheap next to them
ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ["--source", "synthetic", "--dist", "zipf", "--nodes", "80", "--topics", "20"]
INSTANCE += ["--min-subs", "2", "--max-subs", "6", "--seed", "4"]


@pytest.fixture(scope="module")
def cluster_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster")
    standalone.start(folder, workers=2, cores=1, memory="1g")
    yield folder
    standalone.stop(folder)


@pytest.fixture
def cluster(cluster_folder):
    """The running cluster, both workers alive (restarted after a test killed one)."""
    return standalone.start(cluster_folder, workers=2, cores=1, memory="1g")


def cli(lakehouse: Path, master: str, *argv: str, log: Path | None = None) -> subprocess.Popen:
    command = lab_command("--lakehouse", str(lakehouse), "--master", master, "-v", "--driver-memory", "1g", *argv)
    out = open(log or lakehouse.with_suffix(".log"), "ab")  # the process holds it
    return subprocess.Popen(command, cwd=ROOT, env=python_env(), stdout=out, stderr=subprocess.STDOUT)


def finished(process: subprocess.Popen, log: Path, seconds: float = 900) -> None:
    try:
        code = process.wait(timeout=seconds)
    finally:
        if process.poll() is None:  # timed out: no driver outlives its test
            process.kill()
    assert code == 0, log.read_text()[-4000:]


def wait_for(what: str, ready, process: subprocess.Popen, log: Path, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        assert process.poll() is None, f"exited ({process.returncode}) before {what}:\n{log.read_text()[-4000:]}"
        time.sleep(0.3)
    raise AssertionError(f"no {what} after {seconds} s")


# What a run's work may change when tasks are retried: times, and how many rows a round read.
VARYING = (S.COMPUTED_AT, S.SPARK_SECONDS, S.ROWS_READ, S.REEVALUATIONS, S.SECONDS)


def same_tables(spark, left: Path, right: Path, tables: list[S.TableSpec]) -> None:
    """Row for row, each table's columns but those that measure time or work."""
    for table in tables:
        a, b = (Lakehouse(spark, root).read(table) for root in (left, right))
        keep = [c for c in a.columns if c not in VARYING and not c.startswith("seconds")]
        assert_df_equality(a.select(keep), b.select(keep), ignore_row_order=True, ignore_nullable=True)


DESIGN = ["design", "--instance", "z", "--algorithm", "gpm", "--max-degree", "3", "--regime", "rounds"]
DESIGN += ["--batch-size", "16", "--per-node", "2", "--commit-every", "0", "--skip-diameters"]


def in_process(lakehouse: Path, *argv: str) -> None:
    """A command in this process, on the tests' session: the undisturbed runs and the inputs."""
    code, _, err = run_cli("--lakehouse", str(lakehouse), "-q", *argv)
    assert code == 0, err[-4000:]


def ingested(tmp_path: Path, *then: list[str]) -> tuple[Path, Path]:
    """Two copies of a lakehouse with the instance (and what the commands `then` store): one for
    the undisturbed run, one for the cluster's."""
    here, there = tmp_path / "local", tmp_path / "cluster"
    in_process(here, "ingest", "--instance", "z", *INSTANCE)
    for argv in then:
        in_process(here, *argv)
    shutil.copytree(here, there)
    return here, there


def killed_at(cluster_folder: Path, there: Path, master: str, argv: list[str], mark: str) -> str:
    """Run `argv` on the cluster, kill worker 1 once its log shows `mark`; the run's log."""
    log = there.with_suffix(".log")
    start = log.stat().st_size if log.exists() else 0
    process = cli(there, master, *argv)
    try:
        wait_for(mark, lambda: mark in log.read_text()[start:], process, log)
        assert len(standalone.kill_worker(cluster_folder, 1)) == 2  # the worker and its executor
    except BaseException:
        process.kill()  # no driver outlives its test
        raise
    finished(process, log)
    text = log.read_text()[start:]
    assert "Lost executor" in text  # the driver saw the loss: the fault hit the run
    return text


FEVERFEW = ["simulate", "feverfew", "--instance", "z", "--cycles", "6", "--skip-diameters"]


def test_a_worker_lost_mid_gossip_costs_retries_not_the_simulation(spark, cluster, cluster_folder, tmp_path):
    here, there = ingested(tmp_path)
    in_process(here, *FEVERFEW)
    killed_at(cluster_folder, there, cluster.url, FEVERFEW, "cycle 3/6")
    same_tables(spark, here, there, [S.OVERLAY_EDGES, S.OVERLAY_METRICS, S.GOSSIP_CYCLES])


ROUTE = ["route", "--run-id", "z.swico.gswico-gswico.s1", "--protocol", "po", "--publications", "150"]
ROUTE += ["--engine", "supersteps"]


def test_a_worker_lost_mid_routing_costs_retries_not_the_run(spark, cluster, cluster_folder, tmp_path):
    """The overlay is designed in-process, then copied; the DataFrame supersteps (a Spark job or
    two per hop) run on the cluster, worker 1 killed after the third."""
    here, there = ingested(tmp_path, ["design", "--instance", "z", "--algorithm", "swico", "--skip-diameters"])
    in_process(here, *ROUTE)
    killed_at(cluster_folder, there, cluster.url, ROUTE, "superstep 3:")
    tables = [S.ROUTING_METRICS, S.ROUTING_DELIVERIES, S.ROUTING_PUBLICATIONS, S.ROUTING_LOAD]
    same_tables(spark, here, there, tables)


def test_a_worker_lost_mid_design_costs_retries_not_the_run(spark, cluster, cluster_folder, tmp_path):
    """The batched rounds (a Spark job each) on the cluster, worker 1 killed after the second:
    the design finishes on worker 2 with the undisturbed run's links, rounds and metrics."""
    here, there = ingested(tmp_path)
    in_process(here, *DESIGN)
    killed_at(cluster_folder, there, cluster.url, DESIGN, "round 3 phase")
    same_tables(spark, here, there, [S.OVERLAY_EDGES, S.OVERLAY_ROUNDS, S.OVERLAY_METRICS])
