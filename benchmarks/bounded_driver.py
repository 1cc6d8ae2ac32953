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
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.design_greedy import INSTANCES, cli, run_summary, table  # noqa: E402
from benchmarks.engine_limit import subscriptions_of  # noqa: E402
from overlay.design import memory  # noqa: E402
from overlay.design.classes import Subscriptions  # noqa: E402


def _rss_bytes(pid: int) -> int:
    """Resident bytes of a process; 0 once it has exited (or for a kernel thread)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def _children(pid: int) -> list[int]:
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        return [int(c) for t in tasks for c in (t / "children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


class PeakMemory:
    """Peak RSS of a process tree by role: the Python driver, its driver JVM, the executor JVMs
    (summed at each sample), sampled from /proc."""

    def __init__(self, root: int, every: float = 0.2) -> None:
        self.root, self.every = root, every
        self.peaks = {"python driver": 0, "driver JVM": 0, "executor JVMs": 0}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.is_set():
            now = dict.fromkeys(self.peaks, 0)
            stack, seen = [self.root], set()
            while stack:
                pid = stack.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                stack.extend(_children(pid))
                command = _cmdline(pid)
                if pid == self.root:
                    now["python driver"] += _rss_bytes(pid)
                elif "CoarseGrainedExecutorBackend" in command:
                    now["executor JVMs"] += _rss_bytes(pid)
                elif ("SparkSubmit" in command or "java" in command.split(" ")[0]) and "Worker" not in command:
                    now["driver JVM"] += _rss_bytes(pid)
            for role, value in now.items():
                self.peaks[role] = max(self.peaks[role], value)
            self._done.wait(self.every)

    def stop(self) -> dict[str, int]:
        self._done.set()
        self._thread.join()
        return self.peaks


def design(lakehouse: str, global_flags: list[str], argv: list[str], env: dict | None = None) -> tuple[float, dict]:
    clock = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "pipelines", "--lakehouse", lakehouse, "-q", *global_flags, "design", *argv],
        cwd=ROOT, stdout=subprocess.DEVNULL, env=env,
    )
    peaks = PeakMemory(process.pid)
    code = process.wait()
    memory_peaks = peaks.stop()
    if code != 0:
        raise SystemExit(f"design {' '.join(argv)} exited {code}")
    return time.monotonic() - clock, memory_peaks


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
    print(f"candidate state: at most {pairs:,} pairs, {memory.human_bytes(needed)} ({needed / budget:.1f}x the "
          f"{args.budget} budget)", flush=True)
    flags = ["--instance", args.case, "--algorithm", args.algorithm, "--max-degree", args.max_degree, "--skip-diameters"]
    reference_s, reference_peaks = design(str(lakehouse), [], [*flags, "--regime", "memory", "--run-id", "memory"])
    # Executors on this machine advertise its first interface; where connections to it are
    # blocked (a sandbox), a task result fetched from an executor's block manager (over 1 MiB)
    # is lost: SPARK_LOCAL_IP keeps every JVM on the loopback.
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent)}
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    cluster_s, cluster_peaks = design(
        str(lakehouse), ["--master", args.master, "--driver-memory", "1g"],
        [*flags, "--regime", "auto", "--memory-budget", args.budget, "--run-id", "cluster"], env,
    )
    runs = table(str(lakehouse), "overlay_runs").set_index("run_id")
    memory_run, cluster_run = run_summary(str(lakehouse), "memory"), run_summary(str(lakehouse), "cluster")
    row = {
        "case": args.case, "subscriptions": len(node_ids), "pairs": memory_run["candidates"],
        "candidate state": f"{memory.human_bytes(needed)} ({needed / budget:.1f}x the budget)",
        "budget": memory.human_bytes(budget), "master": args.master, "cluster regime": runs.loc["cluster"].regime,
        "links": cluster_run["edges"], "same links": "yes" if cluster_run["sequence"] == memory_run["sequence"] else "DIFFERENT",
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
