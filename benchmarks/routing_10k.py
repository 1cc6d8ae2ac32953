"""Benchmark (not a test): 10,000 publications over a 10,000-node small-world overlay.

The instance is a 10K BFS sample of the shipped Twitter follower graph (`tw-10k`). The overlay
is designed once (`design --algorithm swico`, reused when present); each protocol's routing run
is then timed end to end in a fresh process (`route ...`, Spark start included) with each engine
(`--engine compiled`: each task carries its publications through every superstep; `supersteps`:
a DataFrame step a hop for all publications), and the simulation's own seconds are read back from
the log. The message-level oracle of the tests (`tests.routing_oracle`) replays the same
publications in this process, checks that each engine's deliveries agree in number and hops, and
gives the ratios oracle / route job and oracle / simulation.

Usage:
  .venv/bin/python benchmarks/routing_10k.py [--lakehouse DIR] [--short gswico] [--long chord]
      [--protocols pie,scribe] [--publications 10000] [--engines compiled,supersteps]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from deltalake import DeltaTable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import routing_oracle  # noqa: E402

TWITTER = ROOT / "pipelines" / "datasets" / "twitter_bofa_careers.edges.gz"
# the simulation's own time in a route job's log: every tree hop's and superstep's, or the compiled run's
SIMULATION = re.compile(
    r"(?:superstep \d+: in flight [\d,]+, sent [\d,]+|tree hop \d+:|routing 1/1: supersteps [\d,]+, messages [\d,]+),? ([\d.]+)s"
)


def cli(lakehouse: str, *argv: str) -> tuple[float, str]:
    clock = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "--lakehouse", lakehouse, *argv],
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return time.monotonic() - clock, done.stderr + done.stdout


def table(lakehouse: str, name: str):
    return DeltaTable(f"{lakehouse}/{name}").to_pandas()


def python_network(lakehouse: str, run_id: str, instance: str):
    ring = table(lakehouse, "ring")
    ring = ring[ring.run_id == run_id]
    position = dict(zip(ring.node_id, ring.position))
    n = len(position)
    fingers_table = table(lakehouse, "fingers")
    fingers_table = fingers_table[fingers_table.run_id == run_id]
    fingers: dict[int, set[int]] = {}
    for node, finger in zip(fingers_table.node_id, fingers_table.finger):
        fingers.setdefault(position[node], set()).add((position[finger] - position[node]) % n)
    instances = table(lakehouse, "instances")
    ingest_id = instances[instances.instance == instance].ingest_id.iloc[0]
    subs_table = table(lakehouse, "subscriptions")
    subs_table = subs_table[(subs_table.instance == instance) & (subs_table.ingest_id == ingest_id)]
    subs: dict[int, set[int]] = {}
    for node, topic in zip(subs_table.node_id, subs_table.topic_id):
        subs.setdefault(topic, set()).add(position[node])
    return n, position, {v: sorted(d) for v, d in fingers.items()}, subs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lakehouse", default="lakehouse-bench")
    parser.add_argument("--short", default="gswico")
    parser.add_argument("--long", default="chord")
    parser.add_argument("--protocols", default="pie,po,pa1,scribe,iscribe")
    parser.add_argument("--publications", type=int, default=10_000)
    parser.add_argument("--engines", default="compiled,supersteps", help="route --engine values to time, in order")
    args = parser.parse_args()
    lakehouse, instance = args.lakehouse, "tw-10k"
    if not Path(lakehouse, "instances").exists() or instance not in set(table(lakehouse, "instances").instance):
        seconds, _ = cli(
            lakehouse,
            "-q",
            "ingest",
            "--instance",
            instance,
            "--source",
            "social",
            "--path",
            str(TWITTER),
            "--directed",
            "--reverse",
            "--sample-bfs",
            "10000",
            "--seed",
            "1",
        )
        print(f"ingest {instance}: {seconds:.0f}s")
    run_id = f"{instance}.swico.{args.short}-{args.long}.s1"
    seconds, _ = cli(
        lakehouse,
        "-q",
        "design",
        "--instance",
        instance,
        "--algorithm",
        "swico",
        "--short",
        args.short,
        "--long",
        args.long,
        "--skip-diameters",
    )
    print(f"design {run_id}: {seconds:.0f}s (0 when reused)")
    n, position, fingers, subs = python_network(lakehouse, run_id, instance)
    node_at = {p: node for node, p in position.items()}
    print(
        "| protocol | engine | supersteps | messages | simulation | route job | oracle | oracle / job | oracle / simulation | deliveries | max hops |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for protocol in args.protocols.split(","):
        expected, oracle_seconds = None, 0.0
        for engine in args.engines.split(","):
            routing_run_id = f"{run_id}.{protocol}.p{args.publications}.s1.{engine}"
            seconds, log = cli(
                lakehouse,
                "route",
                "--run-id",
                run_id,
                "--protocol",
                protocol,
                "--engine",
                engine,
                "--publications",
                str(args.publications),
                "--seed",
                "1",
                "--routing-run-id",
                routing_run_id,
            )
            simulation = sum(float(t) for t in SIMULATION.findall(log))
            runs = table(lakehouse, "routing_runs")
            run = runs[runs.routing_run_id == routing_run_id].iloc[0]
            deliveries = table(lakehouse, "routing_deliveries")
            deliveries = deliveries[deliveries.routing_run_id == routing_run_id]
            if expected is None:  # the oracle once per protocol, on the publications the job stored
                pubs = table(lakehouse, "routing_publications")
                pubs = pubs[pubs.routing_run_id == routing_run_id].sort_values("pub_id")
                clock = time.monotonic()
                expected = Counter()
                for topic, publisher in zip(pubs.topic_id, pubs.publisher):
                    routed = routing_oracle.route_publication(protocol, fingers, subs, topic, position[publisher], n)
                    for at, hops in routed.deliveries(subs[topic], position[publisher]):
                        expected[(node_at[at], hops)] += 1
                oracle_seconds = time.monotonic() - clock
            got = Counter(zip(deliveries.node_id, deliveries.hops))
            agree = "" if got == expected else " (DISAGREE)"
            print(
                f"| {protocol} | {engine} | {run.supersteps} | {run.messages:,} | {simulation:.1f}s | {seconds:.0f}s | "
                f"{oracle_seconds:.1f}s | {oracle_seconds / seconds:.2f} | {oracle_seconds / max(simulation, 1e-9):.2f} | "
                f"{len(deliveries):,}{agree} | {deliveries.hops.max()} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
