import os
import subprocess
import sys
from pathlib import Path

import pytest

from overlay import schema as S
from pipelines.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.ci  # the shared small workflow (about 2.5 min) is built in the CI pass anyway
def test_ingest_then_list(refreshed, capsys):
    """The shared lakehouse was ingested through the CLI (`ingest` in tests/workflows/tiny_refresh.yaml)."""
    first = refreshed["first"][1]
    header, _, row = first[first.index("instance  source") :].splitlines()[:3]
    values = dict(zip(header.split(), row.split()))
    assert (values["instance"], values["source"], values["nodes"], values["topics"]) == (
        "tiny",
        "synthetic",
        "24",
        "10",
    )
    stored = refreshed["lakehouse"].instance_row("tiny")
    assert stored[S.NODES] == 24 and stored[S.TOPICS] == 10
    code, out, _ = run(capsys, "instances", "--lakehouse", refreshed["argv"][1])  # global flag after the command
    assert code == 0 and "tiny" in out and "synthetic" in out


@pytest.mark.slow  # the counts are checked on the library in test_social; the CLI prints them in every ingest
def test_social_ingest_prints_reconciled_counts(spark, tmp_path, capsys, write_text):
    path = write_text("g.txt", "1 2\n2 1\n3 3\nx y z\n2 3\n")
    code, out, _ = run(
        capsys,
        "--lakehouse",
        str(tmp_path / "lh"),
        "ingest",
        "--instance",
        "g",
        "--source",
        "social",
        "--path",
        path,
    )
    assert code == 0
    header, _, row = out.strip().splitlines()[-3:]
    values = dict(zip(header.split(), row.split()))
    assert values == {
        "instance": "g",
        "source": "social",
        "nodes": "3",
        "topics": "3",
        "subscriptions": "4",
        "rows_read": "5",
        "rows_accepted": "2",
        "rejected": "2",
        "duplicates": "1",
        "unsampled": "0",
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
        (
            ["--source", "subscriptions", "--path", "x.csv", "--directed"],
            "--directed does not apply to --source subscriptions",
        ),
        (["--source", "social", "--path", "x", "--sample-bfs", "5"], "--sample-bfs needs --seed"),
    ],
    ids=["social-no-path", "synthetic-missing", "directed-on-subscriptions", "bfs-no-seed"],
)
def test_inconsistent_arguments_are_clear_errors(spark, tmp_path, capsys, argv, fragment):
    code, _, err = run(capsys, "--lakehouse", str(tmp_path / "lh"), "ingest", "--instance", "x", *argv)
    assert code == 2 and fragment in err


def test_bad_instance_name_and_bad_config(spark, tmp_path, capsys):
    code, _, err = run(
        capsys, "--lakehouse", str(tmp_path), "ingest", "--instance", "a b", "--source", "social", "--path", "x"
    )
    assert code == 2 and "instance name 'a b' is not allowed" in err
    config = tmp_path / "lab.yaml"
    config.write_text("spark:\n  mastre: local[1]\n")
    code, _, err = run(capsys, "--config", str(config), "instances")
    assert code == 2 and "unknown key 'spark.mastre'" in err and "Did you mean 'master'?" in err


@pytest.mark.slow  # a second JVM; the wheel's check (CI pass) runs the installed package's entry point
def test_console_script_end_to_end(tmp_path):
    """The installed entry point in a fresh process: its own local Spark, Delta and all."""
    script = Path(sys.executable).with_name("overlay-lab")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    result = subprocess.run(
        [
            str(script),
            "--lakehouse",
            str(tmp_path / "lh"),
            "--master",
            "local[1]",
            "--shuffle-partitions",
            "1",
            "--driver-memory",
            "1g",
            "ingest",
            "--instance",
            "smoke",
            "--source",
            "synthetic",
            "--dist",
            "expo",
            "--nodes",
            "10",
            "--topics",
            "8",
            "--min-subs",
            "1",
            "--max-subs",
            "2",
            "--seed",
            "0",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "smoke" in result.stdout
    assert (tmp_path / "lh" / "instances" / "_delta_log").is_dir()
    # The console shows no JVM warning or start-up note without -v ...
    jvm_lines = [line for line in result.stderr.splitlines() if " INFO " not in line]
    assert not [line for line in jvm_lines if "WARN" in line or "incubator" in line or "setLogLevel" in line], jvm_lines
    # ... and shows them with -v.
    verbose = subprocess.run(
        [
            str(script),
            "-v",
            "--lakehouse",
            str(tmp_path / "lh"),
            "--master",
            "local[1]",
            "--driver-memory",
            "1g",
            "instances",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert verbose.returncode == 0 and "WARNING: Using incubator modules" in verbose.stderr, verbose.stderr[-3000:]


def test_a_missing_input_file_is_one_error_line_before_spark(capsys, tmp_path):
    """No JVM starts, so no Hadoop stack trace reaches the terminal (it used to print 80 lines)."""
    for argv in (
        ("ingest", "--instance", "x", "--source", "social", "--path", str(tmp_path / "missing.txt")),
        ("ingest", "--instance", "x", "--source", "subscriptions", "--path", str(tmp_path / "missing.csv")),
        ("import-overlay", "--instance", "x", "--run-id", "r", "--path", str(tmp_path / "missing.csv")),
    ):
        code, _, err = run(capsys, "--lakehouse", str(tmp_path / "lh"), *argv)
        assert code == 2 and err == f"error: --path {argv[-1]}: no such file or folder\n"
    assert not (tmp_path / "lh").exists()


@pytest.mark.slow  # the whole overlay_refresh workflow on fb-1k: several minutes
def test_main_job(spark, tmp_path, capsys):
    report = tmp_path / "report"
    code, out, _ = run(capsys, "--lakehouse", str(tmp_path / "lh"), "main", "--param", f"report_dir={report}")
    assert code == 0
    assert "[11/12] register: done in" in out and "[12/12] report: done in" in out and "Overlay designs:" in out
    assert "fb-1k.gpm.r0.2.local" in out and "Pie on S (fb-1k.swico.gswico-chord.local)" in out
    assert (report / "report.md").is_file() and (report / "routing_ratios.png").is_file()


def test_info_says_whether_graphframes_is_loaded_and_ci_requires_it(spark, tmp_path, capsys, monkeypatch):
    """On CI (CI=true, the shared repository set by .ci/run) GraphFrames must be loaded: this
    fails, it does not skip. Elsewhere `info` says which backend connected components use."""
    from importlib.metadata import version

    from tests.helpers import on_ci

    monkeypatch.setenv("OVERLAY_LAB_MAVEN_REPOS", "file:///srv/mirror, https://mirror.example/maven2")
    code, out, _ = run(capsys, "--lakehouse", str(tmp_path / "lh"), "info")
    assert code == 0
    (jar_line,) = [line for line in out.splitlines() if line.startswith("graphframes jar")]
    assert f"io.graphframes:graphframes-spark4_2.13:{version('graphframes-py')}" in jar_line
    (backend_line,) = [line for line in out.splitlines() if line.startswith("graph backend (auto)")]
    loaded = jar_line.endswith(": loaded")
    assert ("connected components: graphframes" if loaded else "dataframe fallback everywhere") in backend_line
    repositories = next(line for line in out.splitlines() if line.startswith("maven repositories"))
    assert "https://repo1.maven.org/maven2/, file:///srv/mirror/, https://mirror.example/maven2/" in repositories
    if on_ci():
        assert loaded, jar_line


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


FEVERFEW_ONLY = ("--cycles", "--pss", "--bubble-start", "--delta", "--clear-similar")
RAPPEL_ONLY = ("--hours", "--friends", "--children", "--feed-summary", "--mass-failure", "--churn", "--model-seed")


def test_each_simulated_protocol_shows_only_its_own_flags(capsys):
    feverfew, rappel = _help(capsys, "simulate", "feverfew"), _help(capsys, "simulate", "rappel")
    full_knowledge = _help(capsys, "simulate", "global-feverfew")
    assert all(f in feverfew for f in FEVERFEW_ONLY) and not any(f in feverfew for f in RAPPEL_ONLY)
    assert all(f in rappel for f in RAPPEL_ONLY) and not any(f in rappel for f in FEVERFEW_ONLY)
    assert not any(f in full_knowledge for f in (*FEVERFEW_ONLY, *RAPPEL_ONLY))  # no gossip cycles
    with pytest.raises(SystemExit):  # a flag of another protocol is refused, not ignored
        main(["simulate", "feverfew", "--instance", "x", "--hours", "2"])
    assert "unrecognized arguments: --hours" in capsys.readouterr().err


def test_design_help_lists_every_algorithm_and_route_its_choices(capsys):
    from overlay import registry

    design = " ".join(_help(capsys, "design").split())
    assert all(name in design for name in registry.ALGORITHMS)
    route = " ".join(_help(capsys, "route").split())
    assert all(name in route for name in (*registry.protocols(registry.ROUTING), "compiled", "supersteps"))


@pytest.mark.parametrize(
    "argv,new",
    [
        (["simulate", "--instance", "x", "--protocol", "rappel"], "`simulate PROTOCOL ...`"),
        (["simulate", "rappel", "--instance", "x", "--alpha", "4"], "`--friends`"),
        (["simulate", "rappel", "--instance", "x", "--beta=4"], "`--children`"),
        (["simulate", "rappel", "--instance", "x", "--mode", "exact"], "`--feed-summary`"),
        (["simulate", "rappel", "--instance", "x", "--failure", "0.5@1"], "`--mass-failure`"),
        (["--lakehouse", "l", "friend-bound", "--instance", "x", "--k", "3"], "`--friends`"),
        (["topic-structure", "--run-id", "x", "--sizes", "5"], "`--topic-sizes`"),
        (["bundle", "--workflow", "ktco_seeds"], "`bundle FILE`"),
    ],
)
def test_an_old_spelling_is_one_line_naming_the_new(argv, new, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and new in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["report", "--out", "r", "--degree-ratio", "1.5"], "--degree-ratio: must be a number in (0, 1], got 1.5"),
        (["resilience", "--run-id", "x", "--fail-nodes", "0.1,2"], "--fail-nodes: a share in [0, 1]"),
        (["simulate", "rappel", "--instance", "x", "--proper-leaves", "-0.1"], "must be a number in [0, 1]"),
        (["simulate", "rappel", "--instance", "x", "--hours", "0"], "--hours: must be a positive number"),
        (["simulate", "rappel", "--instance", "x", "--arrivals", "nan"], "--arrivals: must be a number >= 0"),
        (["topic-structure", "--run-id", "x", "--topic-sizes", "5,0"], "--topic-sizes: a positive integer"),
        (["design", "--instance", "x", "--algorithm", "gpm", "--max-degree", "2.5"], "--max-degree: must be"),
    ],
)
def test_numeric_flags_are_range_checked_by_the_parser(argv, fragment, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and fragment in capsys.readouterr().err


def test_one_churn_grammar_with_the_kinds_each_command_simulates(capsys, tmp_path):
    lakehouse = ["--lakehouse", str(tmp_path / "none")]
    code = main([*lakehouse, "simulate", "rappel", "--instance", "x", "--churn", "substitution:0.1"])
    assert code == 2 and "--churn takes sessions:ON/OFF" in capsys.readouterr().err
    code = main([*lakehouse, "disseminate", "--run-id", "x", "--publications", "2", "--churn", "sessions:240/30"])
    assert code == 2 and "--churn takes substitution:RATE" in capsys.readouterr().err
    code = main([*lakehouse, "disseminate", "--run-id", "x", "--publications", "2", "--mass-failure", "0.5@2-3"])
    assert code == 2 and "--mass-failure takes SHARE@FROM in cycles" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()  # refused before Spark
