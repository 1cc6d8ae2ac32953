"""Benchmark (not a test): a gossip simulation's cycles in the driver's memory against one Spark
job a cycle, end to end, and the rows both store.

Ingests the instance unless the lakehouse has it (`fb-1k`: the shipped Facebook graph's 1,000-node
BFS sample; `tw-10k`: the shipped Twitter graph's 10,000-node sample), then runs `simulate
gossipsub --heartbeats H` and `simulate feverfew --cycles C` once in each regime, each as a fresh
`python -m pipelines` process with the lab's settings and `simulate.regime` forced (the spark
regime first), and prints per run the process's wall seconds, the run's own seconds, the seconds of
its cycles (`seconds_rounds`: the cycles, their snapshots and the links stored) and the mean
seconds of one cycle as the run's cycle table states them. Then it reads both runs' tables (without
Spark) and counts the rows that differ once the run id and the timings are left out: 0 is the
claim.

Usage:
  .venv/bin/python benchmarks/cycle_regimes.py --lakehouse DIR [--instance fb-1k|tw-10k]
      [--heartbeats 30] [--cycles 40]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.design_greedy import print_markdown, table  # noqa: E402

INGEST = {
    "fb-1k": ["--source", "social", "--dataset", "facebook", "--sample-bfs", "1000", "--seed", "1"],
    "tw-10k": ["--source", "social", "--dataset", "twitter", "--sample-bfs", "10000", "--seed", "1"],
}
TABLES = {
    "gossipsub": ("gossipsub_mesh", "gossipsub_heartbeats", "gossipsub_batches", "overlay_edges"),
    "feverfew": ("gossip_cycles", "gossip_coverage", "gossip_diffusions", "gossip_states", "overlay_edges"),
}
PER_CYCLE = {"gossipsub": "gossipsub_heartbeats", "feverfew": "gossip_cycles"}
TIMING = ("run_id", "seconds", "computed_at")


def cli(lakehouse: str, config: Path | None, *argv: str) -> float:
    clock = time.monotonic()
    settings = ["--config", str(config)] if config else []
    command = [sys.executable, "-m", "pipelines", "--lakehouse", lakehouse, *settings, "-q", *argv]
    subprocess.run(command, check=True, cwd=ROOT)
    return time.monotonic() - clock


def settings_file(lakehouse: str, regime: str) -> Path:
    settings = yaml.safe_load((ROOT / "conf" / "lab.yaml").read_text())
    settings["simulate"]["regime"] = regime
    path = Path(lakehouse).with_suffix(f".{regime}.yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(settings))
    return path


def differing_rows(lakehouse: str, name: str, left: str, right: str) -> int:
    """Rows of one run's table that the other's lacks, both ways, timings and run id left out."""
    rows = table(lakehouse, name)
    keep = [c for c in rows.columns if c not in TIMING]
    a, b = (
        sorted(map(repr, rows.loc[rows.run_id == run, keep].itertuples(index=False, name=None)))
        for run in (left, right)
    )
    return sum(1 for x, y in zip(a, b) if x != y) + abs(len(a) - len(b))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", default="fb-1k", choices=sorted(INGEST))
    parser.add_argument("--heartbeats", type=int, default=30)
    parser.add_argument("--cycles", type=int, default=40)
    args = parser.parse_args()
    lakehouse, instance = args.lakehouse, args.instance
    if not (Path(lakehouse) / "instances").exists() or instance not in set(table(lakehouse, "instances").instance):
        print(f"ingest {instance}: {cli(lakehouse, None, 'ingest', '--instance', instance, *INGEST[instance]):.0f} s")
    commands = {
        "gossipsub": ["simulate", "gossipsub", "--instance", instance, "--heartbeats", str(args.heartbeats)],
        "feverfew": ["simulate", "feverfew", "--instance", instance, "--cycles", str(args.cycles)],
    }
    rows = []
    for protocol, argv in commands.items():
        ids = {}
        for regime in ("spark", "memory"):
            run_id = ids[regime] = f"{instance}.{protocol}.bench-{regime}"
            wall = cli(lakehouse, settings_file(lakehouse, regime), *argv, "--run-id", run_id, "--skip-diameters")
            run = table(lakehouse, "overlay_runs").set_index("run_id").loc[run_id]
            cycles = table(lakehouse, PER_CYCLE[protocol])
            per_cycle = cycles.loc[cycles.run_id == run_id, "seconds"]
            rows.append(
                {
                    "protocol": protocol,
                    "regime": run["regime"],
                    "cycles": len(per_cycle),
                    "wall s": f"{wall:.1f}",
                    "run s": f"{run['seconds']:.1f}",
                    "cycles s (seconds_rounds)": f"{run['seconds_rounds']:.1f}",
                    "one cycle s (mean)": f"{per_cycle.mean():.3f}",
                    "links": int(run["edges"]),
                }
            )
            print(rows[-1], flush=True)
        differ = {name: differing_rows(lakehouse, name, ids["spark"], ids["memory"]) for name in TABLES[protocol]}
        rows[-1]["rows differing from the spark regime's"] = sum(differ.values())
        print(f"{protocol}: rows differing per table {differ}", flush=True)
    print_markdown(rows)


if __name__ == "__main__":
    main()
