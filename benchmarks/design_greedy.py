"""Benchmark (not a test): the greedy engine against the pure-Python lazy greedy, one run.

For each case it runs `python -m pipelines design ...` in a fresh process and reads back the run:
its engine time (`overlay_runs.seconds`: Spark already up, from claiming the run to completing
it, check and metrics included) and where it went (setup: the driver copy and the shared-topic
counts; rounds; commits; the check and the metrics), the rounds (count, seconds per round median
and max), the candidate pairs, links and TcoSuppR; and the end-to-end time of the CLI process.
Then, in this process, the tests' oracle (`tests.oracles.greedy_oracle`) on the same instance:
an exact run must give the same links, gains included; a relaxed run is replayed
(`tests.oracles.relaxed_report`) for where it leaves the canonical sequence. Ratios are oracle
seconds over engine seconds. Cases whose oracle would not fit (5e7 candidate pairs) run without.

Usage:
  .venv/bin/python benchmarks/design_greedy.py [--lakehouse DIR] [--cases zipf-1k,zipf-1k-minmaxoda,...]
  .venv/bin/python benchmarks/design_greedy.py --cases tiny-150   # seven CLI processes, end to end
  .venv/bin/python benchmarks/design_greedy.py --results          # the FB 1K comparison at ratio 0.2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deltalake import DeltaTable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.oracles import greedy_oracle, relaxed_report  # noqa: E402

FACEBOOK = ROOT / "pipelines" / "datasets" / "facebook_combined.txt.gz"
SHARED = ROOT.parent / "shared" / "datasets"
INSTANCES = {
    "zipf-1k": [
        "--source",
        "synthetic",
        "--dist",
        "zipf",
        "--nodes",
        "1000",
        "--topics",
        "1000",
        "--min-subs",
        "20",
        "--max-subs",
        "600",
        "--seed",
        "1",
    ],
    "zipf-10k": [
        "--source",
        "synthetic",
        "--dist",
        "zipf",
        "--nodes",
        "10000",
        "--topics",
        "10000",
        "--min-subs",
        "20",
        "--max-subs",
        "60",
        "--seed",
        "1",
    ],
    "fb-1k": ["--source", "social", "--path", str(FACEBOOK), "--sample-bfs", "1000", "--seed", "1"],
    # the scale curve's synthetic steps (benchmarks/scale_curve.py): about 1K, 45K and 4.5M pairs
    "zipf-50": [
        "--source",
        "synthetic",
        "--dist",
        "zipf",
        "--nodes",
        "50",
        "--topics",
        "50",
        "--min-subs",
        "5",
        "--max-subs",
        "20",
        "--seed",
        "1",
    ],
    "zipf-300": [
        "--source",
        "synthetic",
        "--dist",
        "zipf",
        "--nodes",
        "300",
        "--topics",
        "300",
        "--min-subs",
        "20",
        "--max-subs",
        "60",
        "--seed",
        "1",
    ],
    "zipf-3k": [
        "--source",
        "synthetic",
        "--dist",
        "zipf",
        "--nodes",
        "3000",
        "--topics",
        "3000",
        "--min-subs",
        "20",
        "--max-subs",
        "60",
        "--seed",
        "1",
    ],
    "tiny-150": [
        "--source",
        "synthetic",
        "--dist",
        "zipf",
        "--nodes",
        "150",
        "--topics",
        "120",
        "--min-subs",
        "3",
        "--max-subs",
        "20",
        "--seed",
        "1",
    ],
    "douban": ["--source", "social", "--path", str(SHARED / "soc-douban.mtx.gz")],
    "slashdot": ["--source", "social", "--path", str(SHARED / "soc-Slashdot0902.txt.gz"), "--directed"],
}
RELAXED = ["--mode", "relaxed"]
# case -> (instance, [(algorithm, design flags, with oracle)])
CASES = {
    "zipf-1k": ("zipf-1k", [("gpm", ["--max-degree", "4"], True), ("gpm", ["--max-degree", "4", *RELAXED], True)]),
    "zipf-1k-exact": ("zipf-1k", [("gpm", ["--max-degree", "4"], True)]),
    "zipf-1k-minmaxoda": ("zipf-1k", [("minmaxoda", [], True), ("minmaxoda", RELAXED, True)]),
    "fb-1k": (
        "fb-1k",
        [
            ("minmaxoda", [], True),
            ("gpm", ["--budget-ratio", "0.2"], True),
            ("gpm", ["--budget-ratio", "0.2", *RELAXED], True),
        ],
    ),
    "zipf-10k": ("zipf-10k", [("gpm", ["--max-degree", "4"], False), ("gpm", ["--max-degree", "4", *RELAXED], False)]),
    "zipf-10k-exact": ("zipf-10k", [("gpm", ["--max-degree", "4"], False)]),
    "douban": ("douban", [("gpm", ["--max-degree", "4"], False), ("gpm", ["--max-degree", "4", *RELAXED], False)]),
    "slashdot": ("slashdot", [("gpm", ["--max-degree", "4"], False)]),
    "zipf-10k-relaxed": ("zipf-10k", [("gpm", ["--max-degree", "4", *RELAXED], False)]),
    "slashdot-relaxed": ("slashdot", [("gpm", ["--max-degree", "4", *RELAXED], False)]),
}


def cli(lakehouse: str, *argv: str) -> float:
    clock = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pipelines", "--lakehouse", lakehouse, "-q", *argv],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
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
    rounds = rounds[rounds.run_id == run_id].sort_values("round")
    edges = table(lakehouse, "overlay_edges")
    edges = edges[edges.run_id == run_id].sort_values("added_order")
    seconds = rounds.seconds.tolist()
    return {
        "status": run.status,
        "edges": int(run.edges),
        "tco": float(run.tco_support),
        "seconds": float(run.seconds),
        "setup": float(run.seconds_setup),
        "rounds_s": float(run.seconds_rounds),
        "commits": float(run.seconds_commits),
        "evaluate": float(run.seconds_evaluate),
        "rounds": len(rounds),
        "round_median": statistics.median(seconds) if seconds else 0.0,
        "round_max": max(seconds, default=0.0),
        "candidates": int(rounds.candidate_rows.iloc[0]) if len(rounds) else 0,
        "params": json.loads(run.params),
        "sequence": list(zip(edges.u.tolist(), edges.v.tolist(), edges.gain.tolist())),
    }


def oracle_check(subscriptions, algorithm: str, summary: dict) -> dict:
    budget = summary["params"]["budget"]
    limits = {
        "max_edges": budget["max_edges"] if algorithm == "gpa" else None,
        "max_degree": budget["max_degree"] if algorithm == "gpm" else None,
    }
    clock = time.monotonic()
    expected = greedy_oracle(subscriptions, algorithm, **limits)
    seconds = time.monotonic() - clock
    if summary["params"]["request"].get("mode", "exact") == "exact":
        return {"oracle s": seconds, "check": "same links" if expected == summary["sequence"] else "DIFFERENT"}
    report = relaxed_report(subscriptions, summary["sequence"], algorithm, **limits)
    if report["first_divergence"] is None:
        return {"oracle s": seconds, "check": "valid; never leaves the canonical sequence"}
    return {
        "oracle s": seconds,
        "check": f"valid; leaves the canonical sequence at link {report['first_divergence']}, "
        f"{report['below_best']:.1%} of links below the best gain",
    }


def benchmark(lakehouse: str, names: list[str]) -> None:
    rows = []
    ingested = set()
    for name in names:
        if name == "tiny-150":
            rows.append(tiny_150())
            print(rows[-1], flush=True)
            continue
        instance, runs = CASES[name]
        if instance not in ingested:
            seconds = cli(lakehouse, "ingest", "--instance", instance, *INSTANCES[instance])
            print(f"ingest {instance}: {seconds:.0f}s", flush=True)
            ingested.add(instance)
        subscriptions = None
        for algorithm, flags, with_oracle in runs:
            run_id = f"bench.{name}.{algorithm}.{'.'.join(flags) or 'tco'}.{time.time_ns()}"
            end_to_end = cli(
                lakehouse,
                "design",
                "--instance",
                instance,
                "--algorithm",
                algorithm,
                *flags,
                "--run-id",
                run_id,
                "--skip-diameters",
            )
            summary = run_summary(lakehouse, run_id)
            row = {
                "instance": instance,
                "algorithm": f"{algorithm} {' '.join(flags)}".strip(),
                "candidates": summary["candidates"],
                "rounds": summary["rounds"],
                "s/round (median, max)": f"{summary['round_median']:.2f}, {summary['round_max']:.2f}",
                "links": summary["edges"],
                "TcoSuppR": f"{summary['tco']:.4f}",
                "engine s": f"{summary['seconds']:.1f}",
                "setup / rounds / commits / check+metrics s": (
                    f"{summary['setup']:.1f} / {summary['rounds_s']:.1f} / {summary['commits']:.1f} / {summary['evaluate']:.1f}"
                ),
                "end to end s": f"{end_to_end:.0f}",
                "oracle s": "-",
                "ratio": "-",
                "check": "-",
            }
            if with_oracle:
                subscriptions = subscriptions or current_subscriptions(lakehouse, instance)
                checked = oracle_check(subscriptions, algorithm, summary)
                row.update(
                    {
                        "oracle s": f"{checked['oracle s']:.0f}",
                        "ratio": f"{checked['oracle s'] / summary['seconds']:.1f}x",
                        "check": checked["check"],
                    }
                )
            rows.append(row)
            print(row, flush=True)
    print_markdown(rows)


def tiny_150() -> dict:
    """Ingest, then GPM d = 3, MinMaxODA and GPA m = 120 with an export each: seven CLI processes
    on a fresh lakehouse, end to end (what a new user runs first)."""
    with tempfile.TemporaryDirectory() as scratch:
        lakehouse = f"{scratch}/lakehouse"
        steps = [("ingest", ["ingest", "--instance", "tiny", *INSTANCES["tiny-150"]])]
        for algorithm, flags in (("gpm", ["--max-degree", "3"]), ("minmaxoda", []), ("gpa", ["--max-edges", "120"])):
            run_id = f"tiny.{algorithm}"
            steps.append(
                (
                    f"design {algorithm}",
                    ["design", "--instance", "tiny", "--algorithm", algorithm, *flags, "--run-id", run_id],
                )
            )
            steps.append((f"export {algorithm}", ["export", "--run-id", run_id, "--out", f"{scratch}/{algorithm}.csv"]))
        clock = time.monotonic()
        each = {label: cli(lakehouse, *argv) for label, argv in steps}
        total = time.monotonic() - clock
    return {
        "instance": "tiny-150 (7 CLI processes)",
        "end to end s": f"{total:.0f}",
        "each s": ", ".join(f"{label} {seconds:.0f}" for label, seconds in each.items()),
    }


def results(lakehouse: str) -> None:
    """FB 1K at budget ratio 0.2: GPM, SpiderCastM, RandomM, and GPA with GPM's edge count."""
    cli(lakehouse, "ingest", "--instance", "fb-1k", *INSTANCES["fb-1k"])
    rows = []
    for algorithm in ("gpm", "spidercast-m", "random-m"):
        run_id = f"fb-1k.{algorithm}.r0.2"
        seconds = cli(
            lakehouse,
            "design",
            "--instance",
            "fb-1k",
            "--algorithm",
            algorithm,
            "--budget-ratio",
            "0.2",
            "--run-id",
            run_id,
            "--skip-diameters",
        )
        rows.append((algorithm, run_id, seconds))
    gpm_edges = run_summary(lakehouse, "fb-1k.gpm.r0.2")["edges"]
    seconds = cli(
        lakehouse,
        "design",
        "--instance",
        "fb-1k",
        "--algorithm",
        "gpa",
        "--max-edges",
        str(gpm_edges),
        "--run-id",
        "fb-1k.gpa.same-edges",
        "--skip-diameters",
    )
    rows.append(("gpa", "fb-1k.gpa.same-edges", seconds))
    metrics = table(lakehouse, "overlay_metrics")
    out = []
    for algorithm, run_id, seconds in rows:
        m = metrics[metrics.run_id == run_id].iloc[0]
        out.append(
            {
                "algorithm": algorithm,
                "edges": int(m.edges),
                "max degree": int(m.max_degree),
                "avg degree": f"{m.avg_degree:.2f}",
                "TcoSuppR": f"{m.tco_support:.4f}",
                "seconds": f"{seconds:.0f}",
            }
        )
    print_markdown(out)


def print_markdown(rows: list[dict]) -> None:
    if not rows:
        return
    header = list(dict.fromkeys(key for row in rows for key in row))
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row.get(h, "")) for h in header) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", default="/tmp/overlay-bench/lakehouse")
    parser.add_argument("--cases", default="zipf-1k,zipf-1k-minmaxoda,fb-1k,tiny-150")
    parser.add_argument("--results", action="store_true")
    args = parser.parse_args()
    if args.results:
        results(args.lakehouse)
    else:
        benchmark(args.lakehouse, args.cases.split(","))


if __name__ == "__main__":
    main()
