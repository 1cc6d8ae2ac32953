"""Benchmark (not a test): gossipsub's heartbeats in the lab against the compiled yardstick
(`benchmarks/gossipsub_yardstick.py`: numba, one thread, the whole network at once, independent
of `overlay/`), on one instance of a lakehouse.

Three measurements, one after another on the same subscriptions:

1. the yardstick's H heartbeats, in this process (compiled or loaded from its cache first, on a
   slice of the instance);
2. the lab's simulation of the same H heartbeats in this process, every topic through
   `overlay.gossip.mesh_batches.in_memory` (what the memory regime runs per batch), compiled first
   the same way; its measures and mesh rows must equal the yardstick's;
3. `simulate gossipsub` as its own CLI process (`--skip-diameters`), end to end, on a fresh run
   (the benchmark's run of an earlier call is deleted first, untimed), with the run row's seconds,
   Spark jobs and Delta commits.

Usage:
  .venv/bin/python benchmarks/gossipsub_speed.py --lakehouse DIR --instance tw-10k [--heartbeats 120] [--seed 1]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import gossipsub_yardstick as yardstick  # noqa: E402
from benchmarks.design_greedy import current_subscriptions, print_markdown, table  # noqa: E402
from overlay.design.classes import Subscriptions  # noqa: E402
from overlay.gossip import mesh_batches  # noqa: E402
from overlay.gossip.gossipsub import MEASURES, phases_us, profile  # noqa: E402
from overlay.rappel.coordinates import LatencyModel  # noqa: E402


def lab_in_process(subs: np.ndarray, nodes: int, positions: np.ndarray, params, heartbeats: int):
    csr = Subscriptions.from_pairs(nodes, subs)
    topics = np.flatnonzero(np.diff(csr.members[0])).tolist()
    clock = time.monotonic()
    measures, mesh = mesh_batches.in_memory(csr.subscribers, topics, positions, params, heartbeats)
    seconds = time.monotonic() - clock
    rows = set(zip(*(mesh.column(c).to_pylist() for c in ("topic_id", "node_id", "peer_id"))))
    return seconds, np.stack([measures.column(name).to_numpy() for name in MEASURES], axis=1), rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", default="tw-10k")
    parser.add_argument("--heartbeats", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    subs = np.asarray(current_subscriptions(args.lakehouse, args.instance), dtype=np.int64)
    nodes = int(subs[:, 0].max()) + 1
    params = profile("go-libp2p", args.seed)
    beat_us = 1000 * params.heartbeat_ms
    positions = LatencyModel().coordinates(params.model_seed, np.arange(nodes))
    phases = phases_us(args.seed, np.arange(nodes), beat_us)
    rules = yardstick.PROFILES["go-libp2p"]
    warm = subs[subs[:, 1] == np.bincount(subs[:, 1]).argmax()][:40]  # a slice of the largest topic
    yardstick.simulate(warm, nodes, positions, phases, args.seed, rules, 2)
    lab_in_process(warm, nodes, positions, params, 2)

    arguments = yardstick.prepare(subs, nodes, positions, phases, args.seed, rules, args.heartbeats)
    clock = time.monotonic()
    theirs, mesh, size = yardstick.run(*arguments)
    yard_s = time.monotonic() - clock
    their_rows = yardstick.rows_of(arguments, mesh, size)
    lab_s, ours, our_rows = lab_in_process(subs, nodes, positions, params, args.heartbeats)
    same = np.array_equal(theirs, ours) and their_rows == our_rows

    run_id = f"{args.instance}.gossipsub.bench.s{args.seed}"
    lab = [sys.executable, "-m", "pipelines", "--lakehouse", args.lakehouse, "-q"]
    subprocess.run([*lab, "runs", "delete", run_id], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    command = [*lab, "simulate", "gossipsub", "--instance", args.instance, "--heartbeats", str(args.heartbeats),
               "--seed", str(args.seed), "--run-id", run_id, "--skip-diameters"]  # fmt: skip
    clock = time.monotonic()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    process_s = time.monotonic() - clock
    run = table(args.lakehouse, "overlay_runs").set_index("run_id").loc[run_id]
    print_markdown([{
        "instance": args.instance, "subscriptions": len(subs), "heartbeats": args.heartbeats,
        "yardstick s": f"{yard_s:.2f}", "lab in process s": f"{lab_s:.2f}", "ratio": f"{lab_s / yard_s:.2f}",
        "same rows": same, "simulate process s": f"{process_s:.1f}", "run s": f"{run['seconds']:.1f}",
        "heartbeats and storing s": f"{run['seconds_rounds']:.1f}", "evaluation s": f"{run['seconds_evaluate']:.1f}",
        "Spark jobs": int(run["spark_jobs"]), "Delta commits": int(run["delta_commits"]),
    }])  # fmt: skip


if __name__ == "__main__":
    main()
