"""Benchmark (not a test): the greedy engine against a compiled single-thread oracle, one run each.

Issue 39's yardstick. For each case: a fresh lakehouse, the instance ingested (timed, as a CLI
process), then each design as `python -m pipelines design ...` in a fresh process (end to end),
its run row read back (engine seconds from claim to complete, split into setup / rounds / commits /
check and metrics; the regime that ran; Spark jobs and Delta commits), and in this process the
compiled oracle (`benchmarks/compiled_oracle.py`: numba, one thread, a heap-based lazy greedy)
on the same subscriptions: candidates and greedy seconds, and its links, which must equal the
run's link for link, gains included.

Targets (issue 39): engine s <= 5 x oracle compute + 10 s (memory regime), <= 10 x + 20 s (rounds
regime); the engine's greedy (its rounds) <= 2 x the oracle's greedy; end to end <= engine + 15 s.

Usage (one Spark benchmark at a time; nothing else running):
  .venv/bin/python benchmarks/engine_limit.py --root /tmp/engine-limit --cases zipf-1k,zipf-10k,douban,slashdot
  .venv/bin/python benchmarks/engine_limit.py --cases zipf-10k,douban,slashdot --regime rounds
  .venv/bin/python benchmarks/engine_limit.py --cases zipf-1k,douban --algorithms minmaxoda,gpa,gm,gm2
  .venv/bin/python benchmarks/engine_limit.py --greedy-only --root /tmp/engine-limit   # no Spark: the greedy alone
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import compiled_oracle  # noqa: E402
from benchmarks.design_greedy import INSTANCES, cli, print_markdown, run_summary, table  # noqa: E402

# design flags per algorithm; GPA's m is 20% of MinMaxODA's links (a budget ratio of links)
DESIGNS = {
    "gpm": ["--max-degree", "4"],
    "minmaxoda": [],
    "gpa": ["--budget-ratio", "0.2"],
    "gm": [],
    "gm2": [],
}


def subscriptions_of(lakehouse: str, instance: str) -> tuple[int, np.ndarray, np.ndarray]:
    instances = table(lakehouse, "instances")
    row = instances[instances.instance == instance].iloc[0]
    subs = table(lakehouse, "subscriptions")
    subs = subs[(subs.instance == instance) & (subs.ingest_id == row.ingest_id)]
    return int(row.nodes), subs.node_id.to_numpy(np.int64), subs.topic_id.to_numpy(np.int64)


def oracle_row(nodes: int, node_ids, topic_ids, algorithm: str, summary: dict) -> dict:
    budget = summary["params"]["budget"]
    u, v, gain, seconds = compiled_oracle.greedy(
        nodes,
        node_ids,
        topic_ids,
        algorithm,
        max_edges=budget["max_edges"] if algorithm == "gpa" else None,
        max_degree=budget["max_degree"] if algorithm == "gpm" else None,
    )
    same = list(zip(u.tolist(), v.tolist(), gain.tolist())) == summary["sequence"]
    return {"candidates": seconds["candidates"], "greedy": seconds["greedy"], "same": same}


def run_case(root: Path, case: str, algorithms: list[str], regime: str | None) -> list[dict]:
    lakehouse = root / case
    shutil.rmtree(lakehouse, ignore_errors=True)
    lakehouse.mkdir(parents=True)
    ingest_s = cli(str(lakehouse), "ingest", "--instance", case, *INSTANCES[case])
    print(f"ingest {case}: {ingest_s:.1f} s end to end", flush=True)
    nodes, node_ids, topic_ids = subscriptions_of(str(lakehouse), case)
    rows = []
    for algorithm in algorithms:
        if algorithm == "gpa" and "minmaxoda" not in algorithms:
            cli(str(lakehouse), "design", "--instance", case, "--algorithm", "minmaxoda", "--skip-diameters")
        run_id = f"{case}.{algorithm}.bench"
        flags = [*DESIGNS[algorithm], *(["--regime", regime] if regime else [])]
        end_to_end = cli(
            str(lakehouse),
            "design",
            "--instance",
            case,
            "--algorithm",
            algorithm,
            *flags,
            "--run-id",
            run_id,
            "--skip-diameters",
        )
        summary = run_summary(str(lakehouse), run_id)
        run = table(str(lakehouse), "overlay_runs").set_index("run_id").loc[run_id]
        oracle = oracle_row(nodes, node_ids, topic_ids, algorithm, summary)
        compute = oracle["candidates"] + oracle["greedy"]
        limit = 5 * compute + 10 if run.regime == "memory" else 10 * compute + 20
        row = {
            "case": case,
            "algorithm": f"{algorithm} {' '.join(DESIGNS[algorithm])}".strip(),
            "regime": run.regime,
            "pairs": summary["candidates"],
            "links": summary["edges"],
            "TcoSuppR": f"{summary['tco']:.4f}",
            "engine s": f"{summary['seconds']:.1f}",
            "setup / rounds / commits / check s": (
                f"{summary['setup']:.1f} / {summary['rounds_s']:.1f} / {summary['commits']:.1f} / {summary['evaluate']:.1f}"
            ),
            "end to end s": f"{end_to_end:.1f}",
            "jobs": int(run.spark_jobs),
            "commits": int(run.delta_commits),
            "oracle s (cand. + greedy)": f"{compute:.2f} ({oracle['candidates']:.2f} + {oracle['greedy']:.2f})",
            "engine limit s": f"{limit:.1f}",
            "met": "yes" if summary["seconds"] <= limit else "NO",
            "greedy ratio": f"{summary['rounds_s'] / max(oracle['greedy'], 1e-9):.2f}",
            "e2e - engine s": f"{end_to_end - summary['seconds']:.1f}",
            "same links": "yes" if oracle["same"] else "DIFFERENT",
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def greedy_only(root: Path, cases: list[str], algorithms: list[str]) -> list[dict]:
    """The greedy alone, on the cases' stored instances: the engine's in-memory regime (candidate
    levels built, then the sweep) against the compiled oracle (candidates, then its greedy), in
    this process, without Spark."""
    from overlay.design.classes import BlockClasses, ComponentClasses, Subscriptions
    from overlay.design.eligibility import DegreePhases, Unlimited
    from overlay.design.greedy import GreedyEngine

    rows = []
    for case in cases:
        nodes, node_ids, topic_ids = subscriptions_of(str(root / case), case)
        copy = Subscriptions.from_pairs(nodes, np.column_stack([node_ids, topic_ids]))
        for algorithm in algorithms:
            max_degree = 4 if algorithm == "gpm" else None
            phased = algorithm in ("gpm", "minmaxoda")
            rule = DegreePhases(nodes, max_degree) if phased else Unlimited()
            classes = BlockClasses(copy) if algorithm == "gm2" else ComponentClasses(copy)
            engine = GreedyEngine(None, copy, rule, classes=classes, regime="memory", name=algorithm)
            clock = time.monotonic()
            rounds = list(engine.rounds())
            total = time.monotonic() - clock
            sweep_s = sum(r.seconds for r in rounds)
            links = [link for r in rounds for link in r.edges]
            u, v, gain, seconds = compiled_oracle.greedy(nodes, node_ids, topic_ids, algorithm, max_degree=max_degree)
            row = {
                "case": case,
                "algorithm": algorithm,
                "links": len(links),
                "engine build s": f"{total - sweep_s:.2f}",
                "engine sweep s": f"{sweep_s:.2f}",
                "oracle candidates s": f"{seconds['candidates']:.2f}",
                "oracle greedy s": f"{seconds['greedy']:.2f}",
                "sweep / oracle greedy": f"{sweep_s / max(seconds['greedy'], 1e-9):.2f}",
                "same links": "yes" if links == list(zip(u.tolist(), v.tolist(), gain.tolist())) else "DIFFERENT",
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="/tmp/engine-limit", help="a fresh lakehouse per case goes under it")
    parser.add_argument("--cases", default="zipf-1k,zipf-10k,douban,slashdot")
    parser.add_argument("--algorithms", default="gpm")
    parser.add_argument("--regime", choices=("memory", "rounds"), default=None, help="default: the settings' (auto)")
    parser.add_argument(
        "--greedy-only",
        action="store_true",
        help="no Spark: the greedy alone on the instances a previous run of the cases stored",
    )
    args = parser.parse_args()
    compiled_oracle.warm_up()
    clock = time.monotonic()
    cases, algorithms = args.cases.split(","), args.algorithms.split(",")
    if args.greedy_only:
        rows = greedy_only(Path(args.root), cases, algorithms)
    else:
        rows = [row for case in cases for row in run_case(Path(args.root), case, algorithms, args.regime)]
    print_markdown(rows)
    print(f"\n{len(rows)} designs in {time.monotonic() - clock:.0f} s")


if __name__ == "__main__":
    main()
