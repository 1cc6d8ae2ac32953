"""A small workflow end to end on the embedded default (ingest, designs, evaluate, route, report),
its rerun (everything skipped), a failing step, and the notebooks against its lakehouse."""

import contextlib
import io
import json
import runpy
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from pipelines.cli import main
from pipelines.lakehouse import Lakehouse

ROOT = Path(__file__).resolve().parent.parent
TINY = """
name: tiny_refresh
description: the overlay refresh on a tiny synthetic instance
parameters: {report_dir: report, publications: 12}
steps:
  - name: ingest
    run: [ingest, --instance, tiny, --source, synthetic, --dist, zipf, --nodes, 24, --topics, 10,
          --min-subs, 2, --max-subs, 4, --seed, 3]
  - name: design_${algorithm}
    matrix: {algorithm: [gpm, random-m]}
    after: [ingest]
    run: [design, --instance, tiny, --algorithm, "${algorithm}", --budget-ratio, 0.5, --skip-diameters]
  - name: ring_${short}
    matrix: {short: [gswico, random]}
    after: [ingest]
    run: [design, --instance, tiny, --algorithm, swico, --short, "${short}", --long, chord, --skip-diameters]
  - name: evaluate_${algorithm}
    matrix: {algorithm: [gpm, random-m]}
    after: ["design_${algorithm}"]
    run: [evaluate, --run-id, "tiny.${algorithm}.r0.5.s1"]
  - name: route_pie
    after: [ring_gswico]
    run: [route, --run-id, tiny.swico.gswico-chord.s1, --protocol, pie, --publications, "${publications}"]
  - name: route_scribe
    after: [ring_random]
    run: [route, --run-id, tiny.swico.random-chord.s1, --protocol, scribe, --publications, "${publications}"]
  - name: report
    after: ["evaluate_${algorithm}", route_pie, route_scribe]
    run: [report, --out, "${report_dir}"]
"""
FIGURES = {"quality_vs_budget.png", "degree_distribution.png", "routing_ratios.png", "routing_load.png"}


def run_cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def refresh(spark, tmp_path_factory):
    """The tiny workflow run once; the later tests read what it left."""
    root = tmp_path_factory.mktemp("refresh")
    workflow = root / "tiny.yaml"
    workflow.write_text(TINY)
    argv = ["--lakehouse", str(root / "lakehouse"), "workflow", str(workflow), "--param", f"report_dir={root / 'report'}"]
    code, out, err = run_cli(*argv)
    return {"root": root, "argv": argv, "code": code, "out": out, "err": err, "lakehouse": Lakehouse(spark, root / "lakehouse")}


def test_workflow_runs_every_step_and_reports(refresh):
    assert refresh["code"] == 0, refresh["err"][-3000:]
    out = refresh["out"]
    for index, step in enumerate(
        ["ingest", "design_gpm", "design_random-m", "ring_gswico", "ring_random", "evaluate_gpm",
         "evaluate_random-m", "route_pie", "route_scribe", "report"], start=1,
    ):
        assert f"[{index}/10] {step}: done in" in out
    report = refresh["root"] / "report"
    assert FIGURES <= {p.name for p in report.glob("*.png")}
    summary = (report / "report.md").read_text()
    assert "tiny.gpm.r0.5.s1" in summary and "Pie on S (tiny.swico.gswico-chord.s1)" in summary
    for figure in FIGURES:
        assert f"]({figure})" in summary
    # The summary printed at the end, and the manifest it comes from.
    assert "Overlay designs:" in out and f"Report: {(report / 'report.md').resolve()}" in out
    manifest = json.loads((report / "report.json").read_text())
    scribe = next(r for r in manifest["routing"] if r["run_label"].startswith("Scribe on -"))
    assert scribe["overhead_ratio"] == 1.0 and scribe["path_ratio"] == 1.0
    assert {r["run_id"] for r in manifest["designs"]} >= {"tiny.gpm.r0.5.s1", "tiny.random-m.r0.5.s1"}
    # The evaluate steps added the diameters the designs skipped.
    metrics = refresh["lakehouse"].read(S.OVERLAY_METRICS).filter(F.col(S.RUN_ID) == "tiny.gpm.r0.5.s1").first()
    assert metrics[S.DIAMETER_METHOD] != "skipped"


def test_rerun_skips_complete_steps_and_a_new_commit_redoes_the_report(refresh):
    code, out, err = run_cli(*refresh["argv"])
    assert code == 0, err[-3000:]
    assert out.count(": skipped, ") == 10 and ": done in" not in out
    assert "[1/10] ingest: skipped, instance tiny is stored from these settings" in out
    assert "[10/10] report: skipped, the report in" in out
    # Any commit to a table the report reads makes it stale: only the report runs again.
    assert run_cli("--lakehouse", refresh["argv"][1], "evaluate", "--run-id", "tiny.random-m.r0.5.s1")[0] == 0
    code, out, _ = run_cli(*refresh["argv"])
    assert code == 0 and out.count(": skipped, ") == 9 and "[10/10] report: done in" in out


def test_a_failed_step_stops_the_workflow_naming_it(refresh):
    broken = refresh["root"] / "broken.yaml"
    broken.write_text(
        "name: broken\ndescription: routes on an overlay without a ring\nsteps:\n"
        "  - {name: route_gpm, run: [route, --run-id, tiny.gpm.r0.5.s1, --protocol, pie, --publications, 3]}\n"
        "  - {name: report, after: [route_gpm], run: [report, --out, never]}\n"
    )
    code, out, err = run_cli("--lakehouse", refresh["argv"][1], "workflow", str(broken))
    assert code == 1
    assert "step 'route_gpm' failed (InputError: run 'tiny.gpm.r0.5.s1' has no ring" in err
    assert "Not run: report" in err and "run the same command again: complete steps are skipped" in err
    assert "[1/2] route_gpm: FAILED" in out and not (Path.cwd() / "never").exists()


@pytest.mark.parametrize(
    "notebook, env, expected",
    [
        ("instances_overview.py", {"INSTANCE": "tiny"}, ["tiny", "subscribers", "reason"]),
        ("overlay_quality.py", {}, ["Current overlay runs", "GPM (ratio 0.5)", "figure saved"]),
        ("routing_comparison.py", {"INSTANCE": "tiny"}, ["Routing runs", "Pie on S", "figure saved"]),
        ("table_history.py", {"RUN_ID": "tiny.gpm.r0.5.s1", "VERSIONS": "3"}, ["Commits of overlay_edges", "Rows by version"]),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_notebooks_run_against_the_lakehouse(refresh, monkeypatch, capsys, tmp_path, notebook, env, expected):
    monkeypatch.setenv("OVERLAY_LAB_LAKEHOUSE", refresh["argv"][1])
    monkeypatch.setenv("OVERLAY_LAB_FIGURES", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(f"OVERLAY_LAB_{name}", value)
    runpy.run_path(str(ROOT / "notebooks" / notebook), run_name="__main__")
    out = capsys.readouterr().out
    for fragment in expected:
        assert fragment in out, (fragment, out[-2000:])
