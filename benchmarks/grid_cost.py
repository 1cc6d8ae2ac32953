"""Benchmark (not a test): what a workflow's grid costs, from the runs of another grid measured here.

For each workflow file, every `design` and `compare` step of the target grid (`--grid`, default
`cluster`) gets seconds:

* *measured* when the lakehouse holds its complete runs (a design's `overlay_runs.seconds`; a
  comparison's four small-world designs plus its routing runs' `routing_runs.seconds`: every
  such run on the instance, so one comparison per instance is assumed);
* otherwise *fitted*: seconds = c * subscriptions^b, fitted per command and algorithm (log-log
  least squares) on the measured steps of that workflow, where a synthetic instance's
  subscriptions are |V| x (min + max) / 2 and a sample's are its measured count. One measured
  size gives b = 1 (linear), stated as such.

`ingest` and `report` steps count their measured mean (the workflow prints each step's seconds;
pass `--ingest-seconds` and `--report-seconds`, defaults from this machine's runs). The sums are
hours of this 2-core machine; a cluster divides the data-parallel part of each round by its
cores, not the fixed work per Spark job, so they are an upper bound for a cluster's wall time and
its core-hours are about twice them.

Usage:
  .venv/bin/python benchmarks/grid_cost.py --lakehouse DIR [--grid cluster] conf/workflows/icdcs16_fig6.yaml ...
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.design_greedy import table  # noqa: E402
from pipelines.cli import plan_workflow  # noqa: E402
from pipelines.config import LabSettings  # noqa: E402
from pipelines.workflow.spec import load_workflow  # noqa: E402


def measured(lakehouse: str) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """Seconds of every complete design run, of every instance's comparison, and each instance's
    subscriptions."""
    runs = table(lakehouse, "overlay_runs")
    runs = runs[runs.status == "complete"]
    designs = dict(zip(runs.run_id, runs.seconds))
    compares: dict[str, float] = defaultdict(float)
    swico = runs[runs.algorithm == "swico"]
    for instance, seconds in zip(swico.instance, swico.seconds):
        compares[instance] += seconds
    if (Path(lakehouse) / "routing_runs").exists():
        routed = table(lakehouse, "routing_runs")
        routed = routed[routed.status == "complete"].merge(swico[["run_id"]], on="run_id")  # its own instance column
        for instance, seconds in zip(routed.instance, routed.seconds):
            compares[instance] += seconds
    instances = table(lakehouse, "instances")
    return designs, dict(compares), dict(zip(instances.instance, instances.subscriptions))


def step_keys(plan) -> list[tuple[str, str, str, str]]:
    """(command, model key, run id or instance, instance) of every design and compare step."""
    out = []
    for planned in plan.steps.values():
        args = planned.args
        if args.command == "design":
            out.append(("design", args.algorithm, args.run_id or planned.request[0].default_run_id(), args.instance))
        elif args.command == "compare":
            out.append(("compare", "compare", args.instance, args.instance))
    return out


def expected_subscriptions(plans, stored: dict[str, int]) -> dict[str, float]:
    """Per instance of the plans: stored subscriptions; else |V| x (min + max) / 2 of a synthetic
    ingest, or the mean of the stored samples of the same graph and size (other seeds)."""
    ingests = [p.args for plan in plans for p in plan.steps.values() if p.args.command == "ingest"]

    def sample(args) -> tuple:
        return (args.dataset, args.path, args.sample_bfs)

    samples: dict[tuple, list[int]] = defaultdict(list)
    for args in ingests:
        if args.source == "social" and args.instance in stored:
            samples[sample(args)].append(stored[args.instance])
    out = {}
    for args in ingests:
        if args.instance in stored:
            out[args.instance] = float(stored[args.instance])
        elif args.source == "synthetic":
            out[args.instance] = args.nodes * (args.min_subs + args.max_subs) / 2
        elif samples.get(sample(args)):
            out[args.instance] = float(np.mean(samples[sample(args)]))
    return out


MIN_LOG_RANGE = 0.2  # sizes spanning less than a factor e^0.2 cannot fit an exponent


def fit(points: list[tuple[float, float]]) -> tuple[float, float, str]:
    """seconds = c * s^b on (subscriptions, seconds) points; with too narrow a range of sizes,
    b = 1 (linear in the size) through the mean."""
    s = np.log([p[0] for p in points])
    t = np.log([p[1] for p in points])
    if s.max() - s.min() < MIN_LOG_RANGE:
        return float(np.exp(t.mean() - s.mean())), 1.0, f"linear, sizes too close to fit ({len(points)} runs)"
    b, a = np.polyfit(s, t, 1)
    return float(np.exp(a)), float(b), f"b = {b:.2f} ({len(points)} runs)"


def estimate(path: str, grid: str, lakehouse: str, ingest_seconds: float, report_seconds: float) -> dict:
    designs, compares, stored = measured(lakehouse)
    settings = LabSettings()
    measured_plan = plan_workflow(load_workflow(path), settings)
    target = plan_workflow(load_workflow(path, grid), settings)
    sizes = expected_subscriptions([measured_plan, target], stored)

    def seconds_of(command: str, key: str) -> float | None:
        return designs.get(key) if command == "design" else compares.get(key)

    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for command, model, key, instance in step_keys(measured_plan):
        seconds = seconds_of(command, key)
        if seconds and instance in sizes:
            points[model].append((sizes[instance], seconds))
    models = {key: fit(p) for key, p in points.items() if p}
    total = known = 0.0
    fitted = missing = 0
    for command, model, key, instance in step_keys(target):
        seconds = seconds_of(command, key)
        if seconds:
            known += seconds
        elif model in models and instance in sizes:
            c, b, _ = models[model]
            seconds = c * sizes[instance] ** b
            fitted += 1
        else:
            missing += 1
            continue
        total += seconds
    steps = target.workflow.steps
    ingests = sum(1 for s in steps if s.command == "ingest")
    reports = sum(1 for s in steps if s.command == "report")
    total += ingests * ingest_seconds + reports * report_seconds
    return {
        "workflow": target.workflow.name,
        "grid": grid,
        "steps": len(steps),
        "measured_hours": known / 3600,
        "fitted_steps": fitted,
        "unmodelled_steps": missing,
        "hours_here": total / 3600,
        "models": {k: m[2] for k, m in models.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--grid", default="cluster")
    parser.add_argument("--ingest-seconds", type=float, default=30.0)
    parser.add_argument("--report-seconds", type=float, default=90.0)
    args = parser.parse_args()
    rows = [estimate(f, args.grid, args.lakehouse, args.ingest_seconds, args.report_seconds) for f in args.files]
    print(
        "| workflow | grid | steps | measured h | fitted steps | unmodelled | hours here (2 cores) | core-hours | models |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        models = "; ".join(f"{k}: {v}" for k, v in sorted(r["models"].items()))
        print(
            f"| {r['workflow']} | {r['grid']} | {r['steps']} | {r['measured_hours']:.2f} | {r['fitted_steps']} | "
            f"{r['unmodelled_steps']} | {r['hours_here']:.1f} | {2 * r['hours_here']:.0f} | {models} |"
        )
    print(json.dumps(rows, default=lambda v: None if isinstance(v, float) and math.isnan(v) else v), file=sys.stderr)


if __name__ == "__main__":
    main()
