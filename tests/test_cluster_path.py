"""The code path a Databricks cluster takes, run here in second JVMs (the CI pass, `-m ci`):

* a session that is already active when the lab starts (a job or notebook), with no checkpoint
  directory, running GraphFrames' connected components through the CLI;
* the small workflow on `local-cluster[2,1,1024]`: two executor JVMs apart from the driver, so
  jars, Python workers, local checkpoints and Delta commits cross process boundaries as on a
  cluster; its tables must equal those of the in-process run (`refreshed`);
* the wheel a bundle deploys, installed apart from the source tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pyspark
import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from pipelines.lakehouse import Lakehouse
from tests.conftest import TINY_WORKFLOW, run_cli

pytestmark = pytest.mark.ci
ROOT = Path(__file__).resolve().parent.parent
BUILD_IGNORED = (".git", ".venv", ".jars", "lakehouse*", "build", "dist", "reports", "*.egg-info", "__pycache__", ".pytest_cache")

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


def _python_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYSPARK_PYTHON": sys.executable, **extra}


def test_an_active_session_without_checkpoint_directory_runs_graphframes(graphframes, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", REUSED_SESSION, str(tmp_path / "lh")],
        capture_output=True, text=True, env=_python_env(), cwd=ROOT, timeout=900,
    )
    assert result.returncode == 0 and "REUSED-SESSION-OK" in result.stdout, result.stderr[-4000:]


def test_the_small_workflow_on_separate_executor_jvms_gives_the_in_process_tables(spark, refreshed, tmp_path):
    """`local-cluster` needs SPARK_HOME at a Spark with bin/ and jars/: the pyspark package is one."""
    lakehouse = tmp_path / "lh"
    result = subprocess.run(
        [sys.executable, "-m", "pipelines", "--lakehouse", str(lakehouse), "--master", "local-cluster[2,1,1024]",
         "--driver-memory", "1g", "workflow", str(TINY_WORKFLOW), "--param", f"report_dir={tmp_path / 'report'}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=1800,
        env=_python_env(SPARK_HOME=str(Path(pyspark.__file__).parent)),
    )
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    assert "[6/6] report: done" in result.stdout
    cluster, local = Lakehouse(spark, lakehouse), refreshed["lakehouse"]
    for table, key, run_id, columns in (
        (S.OVERLAY_EDGES, S.RUN_ID, "tiny.gpm.r0.5.s1", S.EDGE_COLUMNS),
        (S.OVERLAY_EDGES, S.RUN_ID, "tiny.swico.random-chord.s1", (S.U, S.V)),
        (S.ROUTING_DELIVERIES, S.ROUTING_RUN_ID, "tiny.swico.random-chord.s1.scribe.p12.s1", None),
    ):
        def rows(house: Lakehouse):
            frame = house.read(table).filter(F.col(key) == run_id)
            return frame.select(*columns) if columns else frame.drop(key)

        assert rows(local).count() > 0
        assert_df_equality(rows(cluster), rows(local), ignore_row_order=True, ignore_nullable=True)


def test_the_wheel_installed_apart_from_the_source_tree_runs(tmp_path):
    """What the bundle deploys: `pip wheel` of the project, with its data files and conf/, run from
    a folder where the source tree is not importable: `bundle`, `workflow NAME` and `main`."""
    # Built from a copy: setuptools writes build/ next to the sources it builds.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*BUILD_IGNORED))
    wheels = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), str(source)],
        check=True, capture_output=True, timeout=600,
    )
    (wheel,) = wheels.glob("overlay_lab-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        packaged_conf = {
            n.removeprefix("pipelines/conf/"): archive.read(n) for n in names if n.startswith("pipelines/conf/")
        }
    assert "pipelines/log4j2.properties" in names
    assert "pipelines/datasets/facebook_combined.txt.gz" in names
    conf = {p.relative_to(ROOT / "conf").as_posix(): p.read_bytes() for p in (ROOT / "conf").rglob("*") if p.is_file()}
    assert packaged_conf == conf  # every conf/ file, none missing or extra, byte for byte
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target), str(wheel)],
        check=True, capture_output=True, timeout=600,
    )
    # An installed package looks for jars in `.jars/` next to it (here target/.jars) unless
    # $OVERLAY_LAB_JARS says where: here the checkout's, fetched by setup.
    env = _python_env(PYTHONPATH=str(target), OVERLAY_LAB_JARS=str(ROOT / ".jars"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def lab(*argv: str, timeout: int = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pipelines", *argv], capture_output=True, text=True, env=env, cwd=elsewhere,
            timeout=timeout,
        )

    probe = "import pipelines.resources as r; print(r.__file__, r.INSTALLED, r.CONF_DIR, sep=chr(10))"
    where = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=elsewhere)
    module, installed, conf_dir = where.stdout.split()
    assert Path(module).is_relative_to(target) and not Path(module).is_relative_to(ROOT), where
    assert installed == "True" and conf_dir == str(target / "pipelines" / "conf"), where

    # bundle: the job rendered from the packaged conf, written under the cwd, is the checkout's
    # rendering (which test_bundle holds equal to the checked-in resources/ file).
    bundled = lab("bundle")
    assert bundled.returncode == 0, bundled.stderr[-3000:]
    in_checkout = tmp_path / "checkout.job.yml"
    assert run_cli("bundle", "--out", str(in_checkout))[0] == 0
    assert (elsewhere / "resources" / "overlay_refresh.job.yml").read_text() == in_checkout.read_text()
    assert lab("bundle", "--check").returncode == 0
    assert lab("bundle", "--workflow", "ktco_seeds", "--out", "ktco.yml").returncode == 0
    assert (elsewhere / "ktco.yml").read_text().startswith("# Generated from conf/workflows/ktco_seeds.yaml")
    assert not (target / "resources").exists()

    # workflow NAME, at the level of loading the packaged file (ktco_seeds runs ~6 min): an
    # unknown parameter is refused naming the shipped file's own parameters, before Spark starts.
    named = lab("workflow", "ktco_seeds", "--param", "no_such=1")
    assert named.returncode == 2 and "this workflow takes report_dir" in named.stderr, named.stderr[-3000:]
    unknown = lab("workflow", "no_such_workflow")
    assert unknown.returncode == 2 and "overlay_refresh" in unknown.stderr, unknown.stderr[-3000:]

    # main: the packaged main workflow, for real, on a 100-node sample (the full default sample
    # takes ~5 min; every step still runs: ingest from the packaged graph, designs, evaluate,
    # route, report).
    ran = lab(
        "--lakehouse", str(tmp_path / "lh"), "--master", "local[2]", "--driver-memory", "1g", "main",
        "--param", "instance=fb-100", "--param", "sample=100", "--param", "publications=20", timeout=1800,
    )
    assert ran.returncode == 0, (ran.stdout[-3000:], ran.stderr[-3000:])
    assert re.search(r"\[(\d+)/\1\] report: done", ran.stdout) and "fb-100.gpm.r0.2.local" in ran.stdout
    assert (elsewhere / "reports" / "overlay_refresh" / "report.md").is_file()
