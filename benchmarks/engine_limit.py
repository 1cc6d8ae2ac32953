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
        nodes, node_ids, topic_ids, algorithm,
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
        end_to_end = cli(str(lakehouse), "design", "--instance", case, "--algorithm", algorithm, *flags,
                         "--run-id", run_id, "--skip-diameters")
        summary = run_summary(str(lakehouse), run_id)
        run = table(str(lakehouse), "overlay_runs").set_index("run_id").loc[run_id]
        oracle = oracle_row(nodes, node_ids, topic_ids, algorithm, summary)
        compute = oracle["candidates"] + oracle["greedy"]
        limit = 5 * compute + 10 if run.regime == "memory" else 10 * compute + 20
        row = {
            "case": case, "algorithm": f"{algorithm} {' '.join(DESIGNS[algorithm])}".strip(), "regime": run.regime,
            "pairs": summary["candidates"], "links": summary["edges"], "TcoSuppR": f"{summary['tco']:.4f}",
            "engine s": f"{summary['seconds']:.1f}",
            "setup / rounds / commits / check s": (
                f"{summary['setup']:.1f} / {summary['rounds_s']:.1f} / {summary['commits']:.1f} / {summary['evaluate']:.1f}"
            ),
            "end to end s": f"{end_to_end:.1f}", "jobs": int(run.spark_jobs), "commits": int(run.delta_commits),
            "oracle s (cand. + greedy)": f"{compute:.2f} ({oracle['candidates']:.2f} + {oracle['greedy']:.2f})",
            "engine limit s": f"{limit:.1f}", "met": "yes" if summary["seconds"] <= limit else "NO",
            "greedy ratio": f"{summary['rounds_s'] / max(oracle['greedy'], 1e-9):.2f}",
            "e2e - engine s": f"{end_to_end - summary['seconds']:.1f}",
            "same links": "yes" if oracle["same"] else "DIFFERENT",
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
    args = parser.parse_args()
    compiled_oracle.warm_up()
    clock = time.monotonic()
    rows = [row for case in args.cases.split(",")
            for row in run_case(Path(args.root), case, args.algorithms.split(","), args.regime)]
    print_markdown(rows)
    print(f"\n{len(rows)} designs in {time.monotonic() - clock:.0f} s")


if __name__ == "__main__":
    main()
