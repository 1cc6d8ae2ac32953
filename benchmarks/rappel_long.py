"""Benchmark (not a test): the Rappel paper's longer runs at their own lengths, with their times.

* `--figure 7`: one feed, 250 nodes (its publisher one of them), 4 simulated hours, half the
  others fail at 2 h and return at 3 h (ComNet'09 Fig. 7).
* `--figure 8b`: one feed, `--nodes` 5,000 subscribers (one the publisher), 220 updates (3 h 40
  min) under exponential sessions of 167 min online / 30 min offline (docs/readings/rappel.md#churn-rate:
  about 30 joins and 30 leaves a minute for 5,000 online nodes), against the same run without churn.
  The paper measures at 10 observers kept out of churn while their parents, children and friends
  churn; ours are the subscribers churn happened to leave online all along (the same situation, more
  of them: keyed draws decide, `overlay.rappel.presence`), and the static run's latencies at the
  same nodes. Printed: both CDFs' quantiles, the median difference, the share within 1 s and the
  worst; `--plot FILE` draws the two CDFs (the paper's Fig. 8b). Fig. 8a's stretch of the last
  update by distance to the publisher comes from the static run.

Each run is `simulate rappel` as a fresh `python -m pipelines` process (Spark start,
every Delta commit, the evaluation included); the script prints its seconds, the seconds per
round and the latency over time (every delivery of each 20 rounds: the median and p95 latency,
the median stretch; `--stored` prints a stored run's without simulating). No oracle here: `benchmarks/rappel_1k.py`
compares the oracle at 1,000 nodes and 100 feeds.

Usage:
  .venv/bin/python benchmarks/rappel_long.py --figure 7|8b [--lakehouse DIR] [--nodes 5000] [--stored] [--plot FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.design_greedy import print_markdown, table  # noqa: E402
from benchmarks.feverfew_10k import cli  # noqa: E402
from pipelines.rappel import RappelRequest  # noqa: E402

FIG8B_HOURS = 220 / 60  # 220 updates, one a minute
FIG8B_CHURN = (167.0, 30.0)  # mean minutes online, offline
PAPER_8B = {"median_difference_ms": 164, "within_1s": 0.85, "worst_s": 45}


def single_feed(lakehouse: str, nodes: int) -> str:
    """A one-feed instance of `nodes` nodes (every node subscribes; the publisher is one of them)."""
    name = f"rappel-single-{nodes}"
    instances = table(lakehouse, "instances") if (Path(lakehouse) / "instances").exists() else None
    if instances is None or name not in set(instances.instance):
        seconds = cli(
            lakehouse,
            "ingest",
            "--instance",
            name,
            "--source",
            "synthetic",
            "--dist",
            "unif",
            "--nodes",
            str(nodes),
            "--topics",
            "1",
            "--min-subs",
            "1",
            "--max-subs",
            "1",
            "--seed",
            "1",
        )
        print(f"ingest {name}: {seconds:.0f} s", flush=True)
    return name


WINDOW = 20  # rounds (10 simulated minutes) per line of the printed timeline


def simulate(lakehouse: str, instance: str, run_id: str, *flags: str, stored: bool = False) -> dict:
    """Runs (or, `stored`, only reads) one simulation and prints its times and timeline."""
    wall = None
    if not stored:
        wall = cli(
            lakehouse,
            "simulate",
            "rappel",
            "--instance",
            instance,
            *flags,
            "--run-id",
            run_id,
            "--replace",
            "--skip-diameters",
        )
    runs = table(lakehouse, "overlay_runs")
    run = runs[runs.run_id == run_id].iloc[0]
    rounds = table(lakehouse, "rappel_rounds")
    rounds = rounds[rounds.run_id == run_id].sort_values("round")
    deliveries = table(lakehouse, "rappel_deliveries")
    deliveries = deliveries[deliveries.run_id == run_id]
    process = f"{wall:.0f} s wall (the process), " if wall is not None else ""
    print(
        f"simulate {run_id} ({' '.join(flags)}): {process}{run.seconds:.0f} s in the run, "
        f"{rounds.seconds.mean():.2f} s per round on average (max {rounds.seconds.max():.2f} s)",
        flush=True,
    )
    timeline = []
    for start in range(1, int(rounds["round"].max()) + 1, WINDOW):
        window = rounds[(rounds["round"] >= start) & (rounds["round"] < start + WINDOW)]
        arrived = deliveries[(deliveries["round"] >= start) & (deliveries["round"] < start + WINDOW)]
        timeline.append(
            {
                "rounds": f"{start}-{start + len(window) - 1}",
                "hours": f"{(start - 1) / 120:.2f}",
                "up (min)": int(window.nodes_up.min()),
                "deliveries": len(arrived),
                "median ms": f"{arrived.latency_ms.median():.0f}" if len(arrived) else "-",
                "p95 ms": f"{arrived.latency_ms.quantile(0.95):.0f}" if len(arrived) else "-",
                "stretch": f"{(arrived.latency_ms / arrived.direct_ms).median():.2f}" if len(arrived) else "-",
                "noise": int(window.noise.sum()),
                "seconds per round": f"{window.seconds.mean():.2f}",
            }
        )
    print_markdown(timeline)
    return {
        "wall": wall if wall is not None else float(run.seconds),
        "median": float(deliveries.latency_ms.median()),
        "within_1s": float((deliveries.latency_ms <= 1000).mean()),
        "worst": float(deliveries.latency_ms.max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--figure", choices=("7", "8b"), required=True)
    parser.add_argument("--lakehouse", default=str(ROOT / "lakehouse-bench"))
    parser.add_argument("--nodes", type=int, default=5000, help="Fig. 8b's subscribers (default 5000)")
    parser.add_argument("--stored", action="store_true", help="print the stored runs' figures; simulate nothing")
    parser.add_argument("--plot", help="Fig. 8b: draw the observers' latency CDFs to this PNG")
    args = parser.parse_args()
    if args.figure == "7":
        instance = "rappel-single-250" if args.stored else single_feed(args.lakehouse, 250)
        got = simulate(
            args.lakehouse,
            instance,
            f"{instance}.fig7",
            "--hours",
            "4",
            "--mass-failure",
            "0.5@2-3",
            stored=args.stored,
        )
        print(
            f"Fig. 7: {got['wall']:.0f} s; every delivery's latency: median {got['median']:.0f} ms, "
            f"{got['within_1s']:.1%} within 1 s, worst {got['worst']:.0f} ms"
        )
        return
    instance = f"rappel-single-{args.nodes}" if args.stored else single_feed(args.lakehouse, args.nodes)
    hours = f"{FIG8B_HOURS:.4f}"
    churn = f"sessions:{FIG8B_CHURN[0]:g}/{FIG8B_CHURN[1]:g}"
    churned_id, static_id = f"{instance}.fig8b-churn", f"{instance}.fig8b-static"
    churned = simulate(args.lakehouse, instance, churned_id, "--hours", hours, "--churn", churn, stored=args.stored)
    static = simulate(args.lakehouse, instance, static_id, "--hours", hours, stored=args.stored)
    print(f"Fig. 8b runs: churned {churned['wall']:.0f} s, static {static['wall']:.0f} s")
    fig8b(args.lakehouse, instance, churned_id, static_id, args.plot)


def observers(lakehouse: str, instance: str, run_id: str, rounds: int) -> list[int]:
    """The subscribers the churned run's presence kept online in every round (the publisher aside)."""
    publishers = table(lakehouse, "feed_publishers")
    publisher = int(publishers[publishers.run_id == run_id].publisher.iloc[0])
    nodes = int(table(lakehouse, "instances").set_index("instance").loc[instance, "nodes"])
    presence = RappelRequest(instance, hours=FIG8B_HOURS, churn=FIG8B_CHURN).presence(frozenset({publisher}))
    return [v for v in range(nodes) if v != publisher and all(presence.up(v, r) for r in range(1, rounds + 1))]


def fig8b(lakehouse: str, instance: str, churned_id: str, static_id: str, plot: str | None) -> None:
    """Fig. 8b at the observers, and Fig. 8a's stretch of the static run's last update."""
    deliveries = table(lakehouse, "rappel_deliveries")
    rounds = int(deliveries[deliveries.run_id == churned_id]["round"].max())
    watched = set(observers(lakehouse, instance, churned_id, rounds))
    latency = {
        name: deliveries[(deliveries.run_id == run_id) & deliveries.node_id.isin(watched)].latency_ms
        for name, run_id in (("churned", churned_id), ("static", static_id))
    }
    quantiles = (0.5, 0.85, 0.95, 0.99)
    print(
        f"Fig. 8b at {len(watched)} observers (online all along in the churned run), "
        f"{len(latency['churned'])} / {len(latency['static'])} deliveries:"
    )
    print_markdown(
        [
            {
                "run": name,
                **{f"q{q:g} ms": f"{values.quantile(q):.0f}" for q in quantiles},
                "within 1 s": f"{(values <= 1000).mean():.1%}",
                "worst s": f"{values.max() / 1000:.1f}",
            }
            for name, values in latency.items()
        ]
    )
    difference = latency["churned"].median() - latency["static"].median()
    print(
        f"Fig. 8b: median difference {difference:+.0f} ms (paper {PAPER_8B['median_difference_ms']:+d} ms); "
        f"within 1 s {(latency['churned'] <= 1000).mean():.1%} (paper {PAPER_8B['within_1s']:.0%}); worst "
        f"{latency['churned'].max() / 1000:.1f} s (paper about {PAPER_8B['worst_s']} s)"
    )
    static = deliveries[deliveries.run_id == static_id]
    last = static[static.update_id == static.update_id.max()].copy()
    last["stretch"] = last.latency_ms / last.direct_ms
    last["distance"] = pd.qcut(last.direct_ms, 4, labels=["nearest quarter", "second", "third", "farthest quarter"])
    print(
        f"Fig. 8a (static run, update {int(last.update_id.iloc[0])}, {len(last)} subscribers): stretch by distance to "
        "the publisher"
    )
    print_markdown(
        [
            {
                "distance": str(d),
                "direct ms": f"{g.direct_ms.min():.0f}-{g.direct_ms.max():.0f}",
                "median stretch": f"{g.stretch.median():.2f}",
                "p95 stretch": f"{g.stretch.quantile(0.95):.2f}",
            }
            for d, g in last.groupby("distance", observed=True)
        ]
    )
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, ax = plt.subplots(figsize=(6, 4))
        for name, values in latency.items():
            ordered = np.sort(values.to_numpy())
            ax.plot(ordered / 1000, np.arange(1, len(ordered) + 1) / len(ordered), label=f"{name} ({len(ordered):,})")
        ax.set_xscale("log")
        ax.set_xlabel("update latency at the observers (s)")
        ax.set_ylabel("CDF")
        ax.axvline(1, color="grey", linewidth=0.6)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        ax.set_title(
            f"Rappel under churn, {len(watched):,} observers (ComNet'09 Fig. 8b; paper: 85% within 1 s)",
            fontsize="small",
        )
        figure.tight_layout()
        figure.savefig(plot, dpi=100)
        print(f"figure saved to {plot}")


if __name__ == "__main__":
    main()
