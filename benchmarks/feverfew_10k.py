"""Benchmark (not a test): Feverfew's gossip simulation at the paper's size, against the oracle.

Ingests the 10,000-node BFS sample of the shipped Twitter graph (`tw-10k`, seed 1) unless the
lakehouse has it, then runs `simulate feverfew --cycles C` as a fresh
`python -m pipelines` process (Spark start, every Delta commit, the evaluation included), and
prints the run's seconds, the seconds of each cycle's Spark job (`gossip_cycles`), and the
coverage. Then the tests' whole-network oracle (`tests/feverfew_oracle.py`) runs the first
`--oracle-cycles` cycles of the same instance and seed in this process, and its state must equal
the stored snapshot of that cycle node by node; the ratio is the oracle's seconds per cycle over
the simulation's.

Usage:
  .venv/bin/python benchmarks/feverfew_10k.py [--lakehouse DIR] [--cycles 40] [--oracle-cycles 10]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from feverfew_oracle import FeverfewOracle  # noqa: E402

from benchmarks.design_greedy import current_subscriptions, print_markdown, table  # noqa: E402

INSTANCE = "tw-10k"


def cli(lakehouse: str, *argv: str) -> float:
    clock = time.monotonic()
    subprocess.run([sys.executable, "-m", "pipelines", "--lakehouse", lakehouse, "-q", *argv], check=True, cwd=ROOT)
    return time.monotonic() - clock


def benchmark(lakehouse: str, cycles: int, oracle_cycles: int) -> None:
    instances = table(lakehouse, "instances") if (Path(lakehouse) / "instances").exists() else None
    if instances is None or INSTANCE not in set(instances.instance):
        seconds = cli(
            lakehouse,
            "ingest",
            "--instance",
            INSTANCE,
            "--source",
            "social",
            "--dataset",
            "twitter",
            "--sample-bfs",
            "10000",
            "--seed",
            "1",
        )
        print(f"ingest {INSTANCE}: {seconds:.0f} s", flush=True)
    run_id = f"{INSTANCE}.feverfew.bench.c{cycles}"
    wall = cli(
        lakehouse,
        "simulate",
        "feverfew",
        "--instance",
        INSTANCE,
        "--cycles",
        str(cycles),
        "--run-id",
        run_id,
        "--replace",
        "--skip-diameters",
    )
    runs = table(lakehouse, "overlay_runs")
    run = runs[runs.run_id == run_id].iloc[0]
    per_cycle = table(lakehouse, "gossip_cycles")
    per_cycle = per_cycle[per_cycle.run_id == run_id].sort_values("cycle")
    spark_cycle = float(per_cycle.seconds.mean())
    print(
        f"simulate {run_id}: {wall:.0f} s wall (the process), {run.seconds:.0f} s in the run "
        f"({run.seconds_rounds:.0f} s simulating, {run.seconds_evaluate:.0f} s evaluating), "
        f"{spark_cycle:.2f} s per cycle's Spark job on average (max {per_cycle.seconds.max():.2f} s)",
        flush=True,
    )
    print_markdown(
        [
            {
                "cycle": int(r.cycle),
                "covered_share": f"{r.covered_share:.4f}",
                "view_avg": f"{r.view_avg:.2f}",
                "copies": int(r.copies),
                "matches": int(r.matches),
                "seconds": f"{r.seconds:.2f}",
            }
            for r in per_cycle.itertuples()
            if r.cycle % 5 == 0 or r.cycle == cycles
        ]
    )

    pairs = current_subscriptions(lakehouse, INSTANCE)
    subs: dict[int, set] = {}
    for v, t in pairs:
        subs.setdefault(v, set()).add(t)
    instances = table(lakehouse, "instances")
    nodes = int(instances.loc[instances.instance == INSTANCE, "nodes"].iloc[0])
    clock = time.monotonic()
    oracle = FeverfewOracle(nodes, subs, seed=1)
    for cycle in range(1, oracle_cycles + 1):
        oracle.step(cycle)
    oracle_seconds = time.monotonic() - clock
    states = table(lakehouse, "gossip_states")
    snapshot = states[(states.run_id == run_id) & (states.cycle == oracle_cycles)]
    if snapshot.empty:
        print(f"no snapshot at cycle {oracle_cycles} (snapshots every 10 cycles): states not compared")
    else:
        rows = {int(r.node_id): r for r in snapshot.itertuples()}
        differ = [
            v for v in range(nodes) if list(rows[v].lv) != oracle.lv[v] or list(rows[v].rv) != sorted(oracle.rv[v])
        ]
        print(
            f"oracle: {oracle_cycles} cycles in {oracle_seconds:.0f} s ({oracle_seconds / oracle_cycles:.1f} s per cycle); "
            f"states at cycle {oracle_cycles}: {'equal' if not differ else f'{len(differ)} nodes differ'}; "
            f"oracle / Spark per cycle: {oracle_seconds / oracle_cycles / spark_cycle:.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lakehouse", default=str(ROOT / "lakehouse-bench"))
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--oracle-cycles", type=int, default=10)
    args = parser.parse_args()
    benchmark(args.lakehouse, args.cycles, args.oracle_cycles)


if __name__ == "__main__":
    main()
