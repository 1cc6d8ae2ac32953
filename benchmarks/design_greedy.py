"""Benchmark (not a test): greedy design on Spark against the pure-Python lazy greedy, one run.

For each case it times `python -m pipelines design ...` end to end in a fresh process (Spark start
included), then runs the pure-Python oracle of the tests (`tests.oracles.greedy_oracle`: a heap of
gain upper bounds and one union-find per topic) on the same instance in this process, checks that
both produce the same edge sequence, and prints the ratio. Cases whose oracle would not fit (the
10K instance has 5e7 candidate pairs) are timed without it.

Usage:
  .venv/bin/python benchmarks/design_greedy.py [--lakehouse DIR] [--cases zipf-1k,fb-1k,zipf-10k]
  .venv/bin/python benchmarks/design_greedy.py --results   # the FB 1K comparison at ratio 0.2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from deltalake import DeltaTable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.oracles import greedy_oracle  # noqa: E402

FACEBOOK = ROOT / "pipelines" / "datasets" / "facebook_combined.txt.gz"
INSTANCES = {
    "zipf-1k": ["--source", "synthetic", "--dist", "zipf", "--nodes", "1000", "--topics", "1000",
                "--min-subs", "20", "--max-subs", "600", "--seed", "1"],
    "zipf-10k": ["--source", "synthetic", "--dist", "zipf", "--nodes", "10000", "--topics", "10000",
                 "--min-subs", "20", "--max-subs", "60", "--seed", "1"],
    "fb-1k": ["--source", "social", "--path", str(FACEBOOK), "--sample-bfs", "1000", "--seed", "1"],
}
CASES = {
    "zipf-1k": [("gpm", ["--max-degree", "4"], True)],
    "zipf-1k-minmaxoda": [("minmaxoda", [], True)],
    "fb-1k": [("minmaxoda", [], True), ("gpm", ["--budget-ratio", "0.2"], True)],
    "zipf-10k": [("gpm", ["--max-degree", "4"], False)],
}


def cli(lakehouse: str, *argv: str) -> float:
    clock = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pipelines", "--lakehouse", lakehouse, "-q", *argv],
        check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - clock


def table(lakehouse: str, name: str):
    return DeltaTable(f"{lakehouse}/{name}").to_pandas()


def current_subscriptions(lakehouse: str, instance: str) -> list[tuple[int, int]]:
    instances = table(lakehouse, "instances")
    ingest_id = instances.loc[instances.instance == instance, "ingest_id"].iloc[0]
    subs = table(lakehouse, "subscriptions")
    subs = subs[(subs.instance == instance) & (subs.ingest_id == ingest_id)]
    return list(zip(subs.node_id.tolist(), subs.topic_id.tolist()))


def run_summary(lakehouse: str, run_id: str) -> dict:
    runs = table(lakehouse, "overlay_runs")
    run = runs[runs.run_id == run_id].iloc[0]
    rounds = table(lakehouse, "overlay_rounds")
    edges = table(lakehouse, "overlay_edges")
    edges = edges[edges.run_id == run_id].sort_values("added_order")
    return {
        "status": run.status, "edges": int(run.edges), "tco": float(run.tco_support),
        "rounds": int((rounds.run_id == run_id).sum()), "params": json.loads(run.params),
        "sequence": list(zip(edges.u.tolist(), edges.v.tolist(), edges.gain.tolist())),
    }


def sum_squares(subscriptions) -> int:
    topics = np.array([t for _, t in subscriptions])
    return int((np.bincount(topics).astype(np.int64) ** 2).sum())


def benchmark(lakehouse: str, names: list[str]) -> None:
    rows = []
    for name in names:
        instance = name.split("-minmaxoda")[0]
        print(f"ingest {instance}: {cli(lakehouse, 'ingest', '--instance', instance, *INSTANCES[instance]):.0f}s", flush=True)
        subscriptions = current_subscriptions(lakehouse, instance)
        for algorithm, budget, with_oracle in CASES[name]:
            run_id = f"bench.{name}.{algorithm}.{'.'.join(budget) or 'tco'}.{time.time_ns()}"
            seconds = cli(lakehouse, "design", "--instance", instance, "--algorithm", algorithm, *budget,
                          "--run-id", run_id, "--skip-diameters")
            summary = run_summary(lakehouse, run_id)
            oracle_seconds, same = None, None
            if with_oracle:
                resolved = summary["params"]["budget"]
                clock = time.monotonic()
                expected = greedy_oracle(
                    subscriptions, algorithm,
                    max_edges=resolved["max_edges"] if algorithm == "gpa" else None,
                    max_degree=resolved["max_degree"] if algorithm == "gpm" else None,
                )
                oracle_seconds = time.monotonic() - clock
                same = expected == summary["sequence"]
            rows.append({
                "instance": instance, "algorithm": f"{algorithm} {' '.join(budget)}".strip(),
                "sum |V(t)|^2": f"{sum_squares(subscriptions):.3g}", "spark s": f"{seconds:.0f}",
                "rounds": summary["rounds"], "edges": summary["edges"], "TcoSuppR": f"{summary['tco']:.4f}",
                "oracle s": "-" if oracle_seconds is None else f"{oracle_seconds:.0f}",
                "ratio": "-" if oracle_seconds is None else f"{oracle_seconds / seconds:.2f}x",
                "same edges": "-" if same is None else str(same),
            })
            print(rows[-1], flush=True)
    print_markdown(rows)


def results(lakehouse: str) -> None:
    """FB 1K at budget ratio 0.2: GPM, SpiderCastM, RandomM, and GPA with GPM's edge count."""
    cli(lakehouse, "ingest", "--instance", "fb-1k", *INSTANCES["fb-1k"])
    rows = []
    for algorithm in ("gpm", "spidercast-m", "random-m"):
        run_id = f"fb-1k.{algorithm}.r0.2"
        seconds = cli(lakehouse, "design", "--instance", "fb-1k", "--algorithm", algorithm,
                      "--budget-ratio", "0.2", "--run-id", run_id, "--skip-diameters")
        rows.append((algorithm, run_id, seconds))
    gpm_edges = run_summary(lakehouse, "fb-1k.gpm.r0.2")["edges"]
    seconds = cli(lakehouse, "design", "--instance", "fb-1k", "--algorithm", "gpa", "--max-edges",
                  str(gpm_edges), "--run-id", "fb-1k.gpa.same-edges", "--skip-diameters")
    rows.append(("gpa", "fb-1k.gpa.same-edges", seconds))
    metrics = table(lakehouse, "overlay_metrics")
    out = []
    for algorithm, run_id, seconds in rows:
        m = metrics[metrics.run_id == run_id].iloc[0]
        out.append({
            "algorithm": algorithm, "edges": int(m.edges), "max degree": int(m.max_degree),
            "avg degree": f"{m.avg_degree:.2f}", "TcoSuppR": f"{m.tco_support:.4f}", "seconds": f"{seconds:.0f}",
        })
    print_markdown(out)


def print_markdown(rows: list[dict]) -> None:
    if not rows:
        return
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[h]) for h in header) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", default="/tmp/overlay-bench/lakehouse")
    parser.add_argument("--cases", default="zipf-1k,fb-1k,zipf-10k")
    parser.add_argument("--results", action="store_true")
    args = parser.parse_args()
    if args.results:
        results(args.lakehouse)
    else:
        benchmark(args.lakehouse, args.cases.split(","))


if __name__ == "__main__":
    main()
