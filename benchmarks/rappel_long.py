"""Benchmark (not a test): the Rappel paper's longer runs at their own lengths, with their times.

* `--figure 7`: one feed, 250 nodes (its publisher one of them), 4 simulated hours, half the
  others fail at 2 h and return at 3 h (ComNet'09 Fig. 7).
* `--figure 8b`: one feed, `--nodes` 5,000 subscribers (one the publisher), 220 updates (3 h 40
  min) under exponential sessions of 167 min online / 30 min offline (NOTES 3.5: about 30 joins
  and 30 leaves a minute for 5,000 online nodes), against the same run without churn: the
  median latency of the churned run over the static one's.

Each run is `simulate --protocol rappel` as a fresh `python -m pipelines` process (Spark start,
every Delta commit, the evaluation included); the script prints its seconds, the seconds per
round and the latency over time (every delivery of each 20 rounds: the median and p95 latency,
the median stretch; `--stored` prints a stored run's without simulating). No oracle here: `benchmarks/rappel_1k.py`
compares the oracle at 1,000 nodes and 100 feeds.

Usage:
  .venv/bin/python benchmarks/rappel_long.py --figure 7|8b [--lakehouse DIR] [--nodes 5000] [--stored]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.design_greedy import print_markdown, table  # noqa: E402
from benchmarks.feverfew_10k import cli  # noqa: E402

FIG8B_HOURS = 220 / 60  # 220 updates, one a minute


def single_feed(lakehouse: str, nodes: int) -> str:
    """A one-feed instance of `nodes` nodes (every node subscribes; the publisher is one of them)."""
    name = f"rappel-single-{nodes}"
    instances = table(lakehouse, "instances") if (Path(lakehouse) / "instances").exists() else None
    if instances is None or name not in set(instances.instance):
        seconds = cli(lakehouse, "ingest", "--instance", name, "--source", "synthetic", "--dist", "unif", "--nodes",
                      str(nodes), "--topics", "1", "--min-subs", "1", "--max-subs", "1", "--seed", "1")
        print(f"ingest {name}: {seconds:.0f} s", flush=True)
    return name


WINDOW = 20  # rounds (10 simulated minutes) per line of the printed timeline


def simulate(lakehouse: str, instance: str, run_id: str, *flags: str, stored: bool = False) -> dict:
    """Runs (or, `stored`, only reads) one simulation and prints its times and timeline."""
    wall = None
    if not stored:
        wall = cli(lakehouse, "simulate", "--instance", instance, "--protocol", "rappel", *flags, "--run-id", run_id,
                   "--replace", "--skip-diameters")
    runs = table(lakehouse, "overlay_runs")
    run = runs[runs.run_id == run_id].iloc[0]
    rounds = table(lakehouse, "rappel_rounds")
    rounds = rounds[rounds.run_id == run_id].sort_values("round")
    deliveries = table(lakehouse, "rappel_deliveries")
    deliveries = deliveries[deliveries.run_id == run_id]
    process = f"{wall:.0f} s wall (the process), " if wall is not None else ""
    print(f"simulate {run_id} ({' '.join(flags)}): {process}{run.seconds:.0f} s in the run, "
          f"{rounds.seconds.mean():.2f} s per round on average (max {rounds.seconds.max():.2f} s)", flush=True)
    timeline = []
    for start in range(1, int(rounds["round"].max()) + 1, WINDOW):
        window = rounds[(rounds["round"] >= start) & (rounds["round"] < start + WINDOW)]
        arrived = deliveries[(deliveries["round"] >= start) & (deliveries["round"] < start + WINDOW)]
        timeline.append({
            "rounds": f"{start}-{start + len(window) - 1}", "hours": f"{(start - 1) / 120:.2f}",
            "up (min)": int(window.nodes_up.min()), "deliveries": len(arrived),
            "median ms": f"{arrived.latency_ms.median():.0f}" if len(arrived) else "-",
            "p95 ms": f"{arrived.latency_ms.quantile(0.95):.0f}" if len(arrived) else "-",
            "stretch": f"{(arrived.latency_ms / arrived.direct_ms).median():.2f}" if len(arrived) else "-",
            "noise": int(window.noise.sum()), "seconds per round": f"{window.seconds.mean():.2f}",
        })
    print_markdown(timeline)
    return {"wall": wall if wall is not None else float(run.seconds), "median": float(deliveries.latency_ms.median()),
            "within_1s": float((deliveries.latency_ms <= 1000).mean()), "worst": float(deliveries.latency_ms.max())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--figure", choices=("7", "8b"), required=True)
    parser.add_argument("--lakehouse", default=str(ROOT / "lakehouse-bench"))
    parser.add_argument("--nodes", type=int, default=5000, help="Fig. 8b's subscribers (default 5000)")
    parser.add_argument("--stored", action="store_true", help="print the stored runs' figures; simulate nothing")
    args = parser.parse_args()
    if args.figure == "7":
        instance = "rappel-single-250" if args.stored else single_feed(args.lakehouse, 250)
        got = simulate(args.lakehouse, instance, f"{instance}.fig7", "--hours", "4", "--failure", "0.5@2-3",
                       stored=args.stored)
        print(f"Fig. 7: {got['wall']:.0f} s; every delivery's latency: median {got['median']:.0f} ms, "
              f"{got['within_1s']:.1%} within 1 s, worst {got['worst']:.0f} ms")
        return
    instance = f"rappel-single-{args.nodes}" if args.stored else single_feed(args.lakehouse, args.nodes)
    hours = f"{FIG8B_HOURS:.4f}"
    churned = simulate(args.lakehouse, instance, f"{instance}.fig8b-churn", "--hours", hours, "--churn", "sessions:167/30",
                       stored=args.stored)
    static = simulate(args.lakehouse, instance, f"{instance}.fig8b-static", "--hours", hours, stored=args.stored)
    print(f"Fig. 8b: churned {churned['wall']:.0f} s, static {static['wall']:.0f} s; median latency churned "
          f"{churned['median']:.0f} ms vs static {static['median']:.0f} ms (+{churned['median'] - static['median']:.0f} ms; "
          f"paper: +164 ms); within 1 s {churned['within_1s']:.1%} (paper: 85%); worst {churned['worst'] / 1000:.1f} s "
          f"(paper: about 45 s)")


if __name__ == "__main__":
    main()
