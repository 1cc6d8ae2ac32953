"""The code path a Databricks cluster takes, run here in second JVMs (the CI pass, `-m ci`):

* a session that is already active when the lab starts (a job or notebook), with no checkpoint
  directory, running GraphFrames' connected components through the CLI;
* the small workflow on a Spark standalone cluster (`./lab cluster`: a master and two one-core
  workers on 127.0.0.1), so every kind of command (ingest, design, evaluate, route, report) runs
  with executors in JVMs of their own: jars, Python workers, reliable checkpoints and Delta
  commits cross process boundaries as on a real cluster; its tables must equal those of the
  in-process run (`refreshed`). The fault tests (`test_faults.py`) kill a worker of such a cluster.

The wheel a bundle deploys is checked in `test_wheel.py` (its own file, so that the CI pass's
workers can take it and these apart).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from pipelines import standalone
from pipelines.lakehouse import Lakehouse
from tests.helpers import TINY_WORKFLOW, lab_command, python_env

pytestmark = pytest.mark.ci
ROOT = Path(__file__).resolve().parent.parent

REUSED_SESSION = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    from pipelines import jars
    from pipelines.cli import main

    # Built the way a cluster's session is: Delta and GraphFrames, no checkpoint directory.
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", ",".join(str(p) for p in jars.classpath()))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")  # small data (the default 50 is minutes here)
        .getOrCreate()
    )
    assert spark.sparkContext.getCheckpointDir() is None
    lakehouse = sys.argv[1]
    for argv in (
        ["ingest", "--instance", "r", "--source", "synthetic", "--dist", "zipf", "--nodes", "20",
         "--topics", "8", "--min-subs", "2", "--max-subs", "4", "--seed", "5"],
        ["design", "--instance", "r", "--algorithm", "gm", "--backend", "graphframes", "--skip-diameters"],
        ["evaluate", "--run-id", "r.gm.tco.s1", "--backend", "graphframes"],
    ):
        code = main(["--lakehouse", lakehouse, *argv])
        assert code == 0, argv
    assert spark.sparkContext.getCheckpointDir() is None  # the lab set none: it reused the session
    print("REUSED-SESSION-OK")
    """
)


def test_an_active_session_without_checkpoint_directory_runs_graphframes(graphframes, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", REUSED_SESSION, str(tmp_path / "lh")],
        check=False,
        capture_output=True,
        text=True,
        env=python_env(),
        cwd=ROOT,
        timeout=900,
    )
    assert result.returncode == 0 and "REUSED-SESSION-OK" in result.stdout, result.stderr[-4000:]


@pytest.fixture
def standalone_cluster(tmp_path):
    cluster = standalone.start(tmp_path / "cluster", workers=2, cores=1, memory="1g")
    yield cluster
    standalone.stop(tmp_path / "cluster")


def test_the_small_workflow_on_a_standalone_cluster_gives_the_in_process_tables(
    spark, refreshed, standalone_cluster, tmp_path
):
    lakehouse = tmp_path / "lh"
    result = subprocess.run(
        lab_command(
            "--lakehouse",
            str(lakehouse),
            "--master",
            standalone_cluster.url,
            "--driver-memory",
            "1g",
            "workflow",
            str(TINY_WORKFLOW),
            "--param",
            f"report_dir={tmp_path / 'report'}",
        ),
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=1800,
        env=python_env(),
    )
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    assert "[6/6] report: done" in result.stdout
    cluster, local = Lakehouse(spark, lakehouse), refreshed["lakehouse"]
    for table, key, run_id, columns in (
        (S.OVERLAY_EDGES, S.RUN_ID, "tiny.gpm.r0.5.s1", S.EDGE_COLUMNS),
        (S.OVERLAY_EDGES, S.RUN_ID, "tiny.swico.random-chord.s1", (S.U, S.V)),
        (S.ROUTING_DELIVERIES, S.ROUTING_RUN_ID, "tiny.swico.random-chord.s1.scribe.p12.s1", None),
    ):

        def rows(house: Lakehouse, table=table, key=key, run_id=run_id, columns=columns):
            frame = house.read(table).filter(F.col(key) == run_id)
            return frame.select(*columns) if columns else frame.drop(key)

        assert rows(local).count() > 0
        assert_df_equality(rows(cluster), rows(local), ignore_row_order=True, ignore_nullable=True)
