"""Benchmark (not a test): the scale curve. Engine seconds and peak memory against candidate pairs.

Issue 39, item 4. For each case, from about 1K candidate pairs to Slashdot's 41.6M: a fresh
lakehouse, the instance ingested, then exact GPM d = 4 designed three ways, one after another,
each in its own process: the memory regime and the rounds regime (`--regime`), each as a
`python -m pipelines design` CLI process, and the compiled oracle (`benchmarks/compiled_oracle.py`,
numba, one thread) on the same subscriptions. The three must give the same links, gains and
order included. Time: the run's `seconds` (claim to complete) for the engine, candidates +
greedy for the oracle. Memory: the peak resident size of each process tree, sampled every 0.2 s
(`benchmarks/peak_memory.py`; the engine's is its Python driver plus its driver JVM, which on
local Spark runs the tasks too), and the oracle process's own peak (`getrusage`).

Writes the rows as JSON (`--out`) and one figure of two panels (`--figure`): seconds and peak
memory against candidate pairs, log-log, for the two regimes and the oracle, with the issue's
targets (5 x oracle + 10 s for the memory regime, 10 x + 20 s for the rounds) as dotted lines.

Usage (one Spark benchmark at a time; nothing else running):
  .venv/bin/python benchmarks/scale_curve.py --root /tmp/scale-curve
  .venv/bin/python benchmarks/scale_curve.py --cases zipf-50,zipf-1k --root /tmp/scale-curve
  .venv/bin/python benchmarks/scale_curve.py --plot-only /tmp/scale-curve/scale_curve.json
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

from benchmarks.design_greedy import INSTANCES, cli, print_markdown, run_summary  # noqa: E402
from benchmarks.engine_limit import subscriptions_of  # noqa: E402
from benchmarks.peak_memory import measured  # noqa: E402

CASES = "zipf-50,zipf-300,zipf-1k,zipf-3k,douban,slashdot"
REGIMES = ("memory", "rounds")
MAX_DEGREE = 4
MIB = 1 << 20


def oracle(lakehouse: Path, nodes: int, node_ids: np.ndarray, topic_ids: np.ndarray) -> dict:
    """The compiled oracle in a process of its own, so that its peak memory is its own."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source, links = lakehouse / "oracle-subscriptions.parquet", lakehouse / "oracle-links.npz"
    pq.write_table(pa.table({"node_id": node_ids, "topic_id": topic_ids}), source)
    out = lakehouse / "oracle.json"
    with out.open("w") as stdout:
        measured(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "compiled_oracle.py"),
                "--subscriptions",
                str(source),
                "--algorithm",
                "gpm",
                "--max-degree",
                str(MAX_DEGREE),
                "--nodes",
                str(nodes),
                "--links",
                str(links),
            ],
            stdout=stdout,
        )
    report = json.loads(out.read_text())
    with np.load(links) as saved:
        report["sequence"] = list(zip(saved["u"].tolist(), saved["v"].tolist(), saved["gain"].tolist()))
    return report


def run_case(root: Path, case: str) -> list[dict]:
    lakehouse = root / case
    shutil.rmtree(lakehouse, ignore_errors=True)
    lakehouse.mkdir(parents=True)
    ingest_s = cli(str(lakehouse), "ingest", "--instance", case, *INSTANCES[case])
    nodes, node_ids, topic_ids = subscriptions_of(str(lakehouse), case)
    print(f"{case}: {nodes:,} nodes, {node_ids.size:,} subscriptions, ingested in {ingest_s:.1f} s", flush=True)
    reference = oracle(lakehouse, nodes, node_ids, topic_ids)
    compute = reference["seconds_candidates"] + reference["seconds_greedy"]
    rows = [
        {
            "case": case,
            "way": "compiled oracle",
            "pairs": None,
            "links": reference["links"],
            "seconds": compute,
            "end_to_end": None,
            "peak_total": reference["peak_rss_bytes"],
            "peak_python": reference["peak_rss_bytes"],
            "peak_jvm": 0,
            "same": True,
            "oracle_before_bytes": reference["peak_rss_before_bytes"],
        }
    ]
    for regime in REGIMES:
        run_id = f"{case}.{regime}"
        end_to_end, peaks = measured(
            [
                sys.executable,
                "-m",
                "pipelines",
                "--lakehouse",
                str(lakehouse),
                "-q",
                "design",
                "--instance",
                case,
                "--algorithm",
                "gpm",
                "--max-degree",
                str(MAX_DEGREE),
                "--regime",
                regime,
                "--run-id",
                run_id,
                "--skip-diameters",
            ]
        )
        summary = run_summary(str(lakehouse), run_id)
        rows.append(
            {
                "case": case,
                "way": f"{regime} regime",
                "pairs": summary["candidates"],
                "links": summary["edges"],
                "seconds": summary["seconds"],
                "end_to_end": end_to_end,
                "peak_total": peaks["total"],
                "peak_python": peaks["python driver"],
                "peak_jvm": peaks["driver JVM"],
                "same": summary["sequence"] == reference["sequence"],
                "rounds": summary["rounds"],
            }
        )
    pairs = rows[1]["pairs"]
    rows[0]["pairs"] = pairs
    for row in rows:
        print(json.dumps(row), flush=True)
    return rows


def markdown_rows(rows: list[dict]) -> list[dict]:
    out = []
    for row in rows:
        oracle_s = next(r["seconds"] for r in rows if r["case"] == row["case"] and r["way"] == "compiled oracle")
        target = {"memory regime": 5 * oracle_s + 10, "rounds regime": 10 * oracle_s + 20}.get(row["way"])
        out.append(
            {
                "case": row["case"],
                "pairs": f"{row['pairs']:,}",
                "way": row["way"],
                "links": f"{row['links']:,}",
                "s": f"{row['seconds']:.2f}" if row["way"] == "compiled oracle" else f"{row['seconds']:.1f}",
                "target s": "" if target is None else f"{target:.1f}",
                "end to end s": "" if row["end_to_end"] is None else f"{row['end_to_end']:.1f}",
                "peak RSS MiB (python + JVM)": (
                    f"{row['peak_total'] / MIB:.0f}"
                    if row["way"] == "compiled oracle"
                    else f"{row['peak_total'] / MIB:.0f} ({row['peak_python'] / MIB:.0f} + {row['peak_jvm'] / MIB:.0f})"
                ),
                "same links": "yes" if row["same"] else "DIFFERENT",
            }
        )
    return out


def plot(rows: list[dict], figure: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ways = ("memory regime", "rounds regime", "compiled oracle")
    styles = {
        "memory regime": ("tab:blue", "o"),
        "rounds regime": ("tab:orange", "s"),
        "compiled oracle": ("tab:green", "^"),
    }
    fig, (seconds_ax, memory_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    for way in ways:
        mine = sorted((r for r in rows if r["way"] == way), key=lambda r: r["pairs"])
        color, marker = styles[way]
        pairs = [r["pairs"] for r in mine]
        seconds_ax.plot(pairs, [r["seconds"] for r in mine], marker=marker, color=color, label=way)
        memory_ax.plot(pairs, [r["peak_total"] / MIB for r in mine], marker=marker, color=color, label=way)
        if way != "compiled oracle":
            memory_ax.plot(
                pairs,
                [r["peak_python"] / MIB for r in mine],
                marker=marker,
                color=color,
                linestyle="--",
                alpha=0.6,
                label=f"{way}: Python driver alone",
            )
    oracle_rows = sorted((r for r in rows if r["way"] == "compiled oracle"), key=lambda r: r["pairs"])
    pairs = [r["pairs"] for r in oracle_rows]
    seconds_ax.plot(
        pairs,
        [5 * r["seconds"] + 10 for r in oracle_rows],
        color="tab:blue",
        linestyle=":",
        label="target, memory: 5 x oracle + 10 s",
    )
    seconds_ax.plot(
        pairs,
        [10 * r["seconds"] + 20 for r in oracle_rows],
        color="tab:orange",
        linestyle=":",
        label="target, rounds: 10 x oracle + 20 s",
    )
    for ax, label in (
        (seconds_ax, "seconds (engine: run seconds; oracle: compute)"),
        (memory_ax, "peak resident memory, MiB"),
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("candidate pairs")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    seconds_ax.set_title("exact GPM d = 4: time")
    memory_ax.set_title("exact GPM d = 4: peak memory")
    fig.tight_layout()
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=110)
    print(f"figure: {figure}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="/tmp/scale-curve", help="a fresh lakehouse per case goes under it")
    parser.add_argument("--cases", default=CASES, help=f"comma-separated, from {sorted(INSTANCES)}")
    parser.add_argument("--out", help="the rows as JSON (default: ROOT/scale_curve.json)")
    parser.add_argument("--figure", default=str(ROOT / "docs" / "images" / "scale_curve.png"))
    parser.add_argument("--plot-only", metavar="JSON", help="no runs: plot the rows a previous run wrote")
    args = parser.parse_args()
    if args.plot_only:
        rows = json.loads(Path(args.plot_only).read_text())
    else:
        unknown = sorted(set(args.cases.split(",")) - set(INSTANCES))
        if unknown:
            parser.error(f"unknown cases {unknown}; known: {sorted(INSTANCES)}")
        root = Path(args.root)
        clock, rows = time.monotonic(), []
        out = Path(args.out) if args.out else root / "scale_curve.json"
        for case in args.cases.split(","):
            rows.extend(run_case(root, case))
            out.write_text(json.dumps(rows, indent=1))  # after each case: a stopped run keeps its cases
        print(f"\n{len(rows)} rows in {time.monotonic() - clock:.0f} s; rows: {out}")
    print_markdown(markdown_rows(rows))
    plot(rows, Path(args.figure))


if __name__ == "__main__":
    main()
