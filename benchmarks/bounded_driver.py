"""Benchmark (not a test): the rounds regime past one machine's budget, with a bounded driver.

Issue 39, item 3. One case, a fresh lakehouse: the instance ingested, then two designs of the same
run settings as CLI processes: the memory regime on local Spark (the reference), and on
`local-cluster` executor JVMs with `--driver-memory 1g` and a single-task budget
(`--memory-budget`) several times smaller than the candidate state, so that `auto` runs the
batched rounds. The two runs' links must be equal, gains and order included. While each runs, the
process tree is sampled every 0.2 s: the peak resident memory of the Python driver, of its driver
JVM and of the executor JVMs.

What the driver holds in the rounds regime (docs/performance.md): the subscriptions' copy and the
topic classes (both about 12 bytes per subscription, broadcast to the executors each round), the
round's sampled rows and links; never the candidate pairs, which stay in the executors' cached
table. `overlay.design.classes.MAX_DRIVER_SUBSCRIPTIONS` caps that copy.

Usage (one Spark benchmark at a time; nothing else running):
  .venv/bin/python benchmarks/bounded_driver.py --root /tmp/bounded --case douban --budget 32m
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.design_greedy import INSTANCES, cli, run_summary, table  # noqa: E402
from benchmarks.engine_limit import subscriptions_of  # noqa: E402
from benchmarks.peak_memory import measured  # noqa: E402
from overlay.design import memory  # noqa: E402
from overlay.design.classes import Subscriptions  # noqa: E402


def design(lakehouse: str, global_flags: list[str], argv: list[str], env: dict | None = None) -> tuple[float, dict]:
    return measured(
        [sys.executable, "-m", "pipelines", "--lakehouse", lakehouse, "-q", *global_flags, "design", *argv], env
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="/tmp/bounded-driver")
    parser.add_argument("--case", default="douban", choices=sorted(INSTANCES))
    parser.add_argument("--algorithm", default="gpm")
    parser.add_argument("--max-degree", default="4")
    parser.add_argument("--budget", default="32m", help="the single-task budget of the cluster run")
    parser.add_argument("--master", default="local-cluster[2,1,2048]")
    args = parser.parse_args()
    lakehouse = Path(args.root) / args.case
    shutil.rmtree(lakehouse, ignore_errors=True)
    lakehouse.mkdir(parents=True)
    ingest_s = cli(str(lakehouse), "ingest", "--instance", args.case, *INSTANCES[args.case])
    print(f"ingest {args.case}: {ingest_s:.1f} s", flush=True)
    nodes, node_ids, topic_ids = subscriptions_of(str(lakehouse), args.case)
    pairs, needed = memory.estimate(Subscriptions.from_pairs(nodes, np.column_stack([node_ids, topic_ids])))
    budget = memory.parse_bytes(args.budget)
    print(
        f"candidate state: at most {pairs:,} pairs, {memory.human_bytes(needed)} ({needed / budget:.1f}x the "
        f"{args.budget} budget)",
        flush=True,
    )
    flags = [
        "--instance",
        args.case,
        "--algorithm",
        args.algorithm,
        "--max-degree",
        args.max_degree,
        "--skip-diameters",
    ]
    reference_s, reference_peaks = design(str(lakehouse), [], [*flags, "--regime", "memory", "--run-id", "memory"])
    # Executors on this machine advertise its first interface; where connections to it are
    # blocked (a sandbox), a task result fetched from an executor's block manager (over 1 MiB)
    # is lost: SPARK_LOCAL_IP keeps every JVM on the loopback.
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent)}
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    cluster_s, cluster_peaks = design(
        str(lakehouse),
        ["--master", args.master, "--driver-memory", "1g"],
        [*flags, "--regime", "auto", "--memory-budget", args.budget, "--run-id", "cluster"],
        env,
    )
    runs = table(str(lakehouse), "overlay_runs").set_index("run_id")
    memory_run, cluster_run = run_summary(str(lakehouse), "memory"), run_summary(str(lakehouse), "cluster")
    row = {
        "case": args.case,
        "subscriptions": len(node_ids),
        "pairs": memory_run["candidates"],
        "candidate state": f"{memory.human_bytes(needed)} ({needed / budget:.1f}x the budget)",
        "budget": memory.human_bytes(budget),
        "master": args.master,
        "cluster regime": runs.loc["cluster"].regime,
        "links": cluster_run["edges"],
        "same links": "yes" if cluster_run["sequence"] == memory_run["sequence"] else "DIFFERENT",
        "memory regime: engine / end to end s": f"{memory_run['seconds']:.1f} / {reference_s:.1f}",
        "cluster: engine / end to end s": f"{cluster_run['seconds']:.1f} / {cluster_s:.1f}",
        "memory regime peak RSS (python / JVM)": " / ".join(
            memory.human_bytes(reference_peaks[k]) for k in ("python driver", "driver JVM")
        ),
        "cluster peak RSS (python / driver JVM / executors)": " / ".join(
            memory.human_bytes(cluster_peaks[k]) for k in ("python driver", "driver JVM", "executor JVMs")
        ),
    }
    print(json.dumps(row, indent=1), flush=True)


if __name__ == "__main__":
    main()
