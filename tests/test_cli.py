import os
import subprocess
import sys
from pathlib import Path

import pytest

from overlay import schema as S
from pipelines.cli import main
from pipelines.lakehouse import Lakehouse

ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ingest_then_list(spark, tmp_path, capsys):
    lakehouse = str(tmp_path / "lh")
    code, out, _ = run(
        capsys, "--lakehouse", lakehouse, "ingest", "--instance", "tiny", "--source", "synthetic",
        "--dist", "unif", "--nodes", "30", "--topics", "12", "--min-subs", "2", "--max-subs", "3", "--seed", "4",
    )
    assert code == 0
    assert "tiny" in out and "synthetic" in out
    stored = Lakehouse(spark, lakehouse).instance_row("tiny")
    assert stored[S.NODES] == 30 and stored[S.TOPICS] == 12
    code, out, _ = run(capsys, "instances", "--lakehouse", lakehouse)  # global flag after the command
    assert code == 0 and "tiny" in out


def test_social_ingest_prints_reconciled_counts(spark, tmp_path, capsys, write_text):
    path = write_text("g.txt", "1 2\n2 1\n3 3\nx y z\n2 3\n")
    code, out, _ = run(
        capsys, "--lakehouse", str(tmp_path / "lh"), "ingest", "--instance", "g", "--source", "social", "--path", path,
    )
    assert code == 0
    header, _, row = out.strip().splitlines()[-3:]
    values = dict(zip(header.split(), row.split()))
    assert values == {
        "instance": "g", "source": "social", "nodes": "3", "topics": "3", "subscriptions": "4",
        "rows_read": "5", "rows_accepted": "2", "rejected": "2", "duplicates": "1", "unsampled": "0",
        "single_subscriber_topics": "2",
    }


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--source", "synthetic", "--dist", "zipf", "--nodes", "0"], "--nodes: must be a positive integer, got 0"),
        (["--source", "synthetic", "--dist", "zipf", "--nodes", "-5"], "--nodes: must be a positive integer, got -5"),
        (["--source", "social", "--sample-bfs", "0"], "--sample-bfs: must be a positive integer, got 0"),
        (["--source", "synthetic", "--dist", "pareto"], "invalid choice: 'pareto'"),
    ],
    ids=["zero-nodes", "negative-nodes", "zero-sample", "unknown-dist"],
)
def test_bad_arguments_exit_with_usage(argv, fragment, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["ingest", "--instance", "x", *argv])
    assert exit_info.value.code == 2
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--source", "social"], "--source social needs --path"),
        (["--source", "synthetic", "--dist", "zipf", "--nodes", "5"], "needs --topics, --min-subs, --max-subs, --seed"),
        (["--source", "subscriptions", "--path", "x.csv", "--directed"], "--directed does not apply to --source subscriptions"),
        (["--source", "social", "--path", "x", "--sample-bfs", "5"], "--sample-bfs needs --seed"),
    ],
    ids=["social-no-path", "synthetic-missing", "directed-on-subscriptions", "bfs-no-seed"],
)
def test_inconsistent_arguments_are_clear_errors(spark, tmp_path, capsys, argv, fragment):
    code, _, err = run(capsys, "--lakehouse", str(tmp_path / "lh"), "ingest", "--instance", "x", *argv)
    assert code == 2 and fragment in err


def test_bad_instance_name_and_bad_config(spark, tmp_path, capsys):
    code, _, err = run(capsys, "--lakehouse", str(tmp_path), "ingest", "--instance", "a b", "--source", "social", "--path", "x")
    assert code == 2 and "instance name 'a b' is not allowed" in err
    config = tmp_path / "lab.yaml"
    config.write_text("spark:\n  mastre: local[1]\n")
    code, _, err = run(capsys, "--config", str(config), "instances")
    assert code == 2 and "unknown key 'spark.mastre'" in err and "Did you mean 'master'?" in err


@pytest.mark.slow  # a second JVM; main() paths are covered in-process by the other CLI tests
def test_console_script_end_to_end(tmp_path):
    """The installed entry point in a fresh process: its own local Spark, Delta and all."""
    script = Path(sys.executable).with_name("overlay-lab")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    result = subprocess.run(
        [str(script), "--lakehouse", str(tmp_path / "lh"), "--master", "local[1]", "--shuffle-partitions", "1",
         "--driver-memory", "1g", "ingest", "--instance", "smoke", "--source", "synthetic", "--dist", "expo",
         "--nodes", "10", "--topics", "8", "--min-subs", "1", "--max-subs", "2", "--seed", "0"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "smoke" in result.stdout
    assert (tmp_path / "lh" / "instances" / "_delta_log").is_dir()


@pytest.mark.slow
def test_main_job(spark, tmp_path, capsys):
    code, out, _ = run(capsys, "--lakehouse", str(tmp_path / "lh"), "main")
    assert code == 0
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("zipf-1k", "fb-1k"))}
    assert lines["fb-1k"][2:4] == ["1,000", "1,000"]
    assert lines["zipf-1k"][2:4] == ["1,000", "1,000"]
