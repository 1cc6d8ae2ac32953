"""A small workflow end to end on the embedded default (conftest `refreshed`: ingest, design,
evaluate, route, report), its rerun (everything skipped), a failing step, and the notebooks run
against its lakehouse."""

import json
import runpy
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from overlay import schema as S
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
FIGURES = {"quality_vs_budget.png", "degree_distribution.png", "routing_ratios.png", "routing_load.png"}
STEPS = ["ingest", "design_gpm", "ring", "evaluate_gpm", "route_scribe", "report"]


@pytest.mark.ci  # uses the shared small workflow, built in the CI pass anyway
def test_workflow_runs_every_step_in_order_and_reports(refreshed):
    _, out, _ = refreshed["first"]
    lines = [line for line in out.splitlines() if line.startswith("[")]
    assert [line.split("]")[1].split(":")[0].strip() for line in lines if ": done in" in line] == STEPS
    assert f"[1/{len(STEPS)}] ingest: ingest --instance tiny --source synthetic" in out
    report = refreshed["report"]
    assert FIGURES <= {p.name for p in report.glob("*.png")}
    summary = (report / "report.md").read_text()
    assert "tiny.gpm.r0.5.s1" in summary and "Scribe on - (tiny.swico.random-chord.s1)" in summary
    for figure in FIGURES:
        assert f"]({figure})" in summary
    # The summary printed at the end comes from the report's manifest.
    assert "Overlay designs:" in out and f"Report: {(report / 'report.md').resolve()}" in out
    manifest = json.loads((report / "report.json").read_text())
    (scribe,) = manifest["routing"]
    assert scribe["overhead_ratio"] == 1.0 and scribe["path_ratio"] == 1.0 and scribe["delivery_ratio"] == 1.0
    assert {r["run_id"] for r in manifest["designs"]} >= {"tiny.gpm.r0.5.s1", "tiny.swico.random-chord.s1"}
    # The evaluate step added the diameters the design skipped.
    metrics = refreshed["lakehouse"].read(S.OVERLAY_METRICS).filter(F.col(S.RUN_ID) == "tiny.gpm.r0.5.s1").first()
    assert metrics[S.DIAMETER_METHOD] != "skipped"


@pytest.mark.ci  # uses the shared small workflow, built in the CI pass anyway
def test_rerun_skips_every_complete_step(refreshed):
    code, out, err = refreshed["rerun"]
    assert code == 0, err[-3000:]
    assert out.count(": skipped, ") == len(STEPS) and ": done in" not in out
    assert "[1/6] ingest: skipped, instance tiny is stored from these settings" in out
    assert "[2/6] design_gpm: skipped, run tiny.gpm.r0.5.s1 is complete" in out
    assert "[4/6] evaluate_gpm: skipped, run tiny.gpm.r0.5.s1 has its metrics with diameters" in out
    assert "[5/6] route_scribe: skipped, routing run tiny.swico.random-chord.s1.scribe.p12.s1 is complete" in out
    assert "[6/6] report: skipped, the report in" in out


@pytest.mark.slow  # uses the shared small workflow
def test_a_new_commit_makes_the_report_stale(refreshed, tmp_path):
    from pipelines import report

    lakehouse = refreshed["lakehouse"]
    # A report written now (its manifest; the figures do not matter to staleness) is current...
    (tmp_path / report.SUMMARY).write_text("# report\n")
    (tmp_path / report.MANIFEST).write_text(json.dumps({"tables": report.table_versions(lakehouse)}))
    assert report.is_current(lakehouse, tmp_path)
    # ...until any table it reads gets a commit.
    lakehouse.update_run("tiny.gpm.r0.5.s1", **{S.MESSAGE: "touched"})
    assert not report.is_current(lakehouse, tmp_path)


@pytest.mark.slow  # uses the shared small workflow
def test_a_failed_step_stops_the_workflow_naming_it(refreshed, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "name: broken\ndescription: routes on an overlay without a ring\nsteps:\n"
        "  - {name: route_gpm, run: [route, --run-id, tiny.gpm.r0.5.s1, --protocol, pie, --publications, 3]}\n"
        f"  - {{name: report, after: [route_gpm], run: [report, --out, {tmp_path / 'never'}]}}\n"
    )
    code, out, err = run_cli("--lakehouse", refreshed["argv"][1], "workflow", str(broken))
    assert code == 1
    assert "step 'route_gpm' failed (InputError: run 'tiny.gpm.r0.5.s1' has no ring" in err
    assert "Not run: report" in err and "run the same command again: complete steps are skipped" in err
    assert "[1/2] route_gpm: FAILED" in out and not (tmp_path / "never").exists()


@pytest.mark.parametrize(
    "notebook, env, expected",
    [
        ("instances_overview.py", {"INSTANCE": "tiny"}, ["tiny", "subscribers", "reason"]),
        ("overlay_quality.py", {}, ["Current overlay runs", "GPM (ratio 0.5)", "figure saved", "overlay_view.html"]),
        ("routing_comparison.py", {"INSTANCE": "tiny"}, ["Routing runs", "Scribe on -", "figure saved"]),
        (
            "table_history.py",
            {"RUN_ID": "tiny.gpm.r0.5.s1", "VERSIONS": "3"},
            ["Commits of overlay_edges", "Rows by version"],
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
@pytest.mark.slow  # uses the shared small workflow
def test_notebooks_run_against_the_lakehouse(refreshed, monkeypatch, capsys, tmp_path, notebook, env, expected):
    monkeypatch.setenv("OVERLAY_LAB_LAKEHOUSE", refreshed["argv"][1])
    monkeypatch.setenv("OVERLAY_LAB_FIGURES", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(f"OVERLAY_LAB_{name}", value)
    runpy.run_path(str(ROOT / "notebooks" / notebook), run_name="__main__")
    out = capsys.readouterr().out
    for fragment in expected:
        assert fragment in out, (fragment, out[-2000:])
