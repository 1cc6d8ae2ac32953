"""Benchmark (not a test): issue 18's scale target, Rappel on 1,000 nodes and 100 feeds for one
simulated hour with churn, against the oracle.

Ingests a synthetic instance (`rappel-1k`: Zipf-popular feeds, 2-12 per node, seed 1) unless
the lakehouse has it, then runs `simulate rappel --hours H --churn sessions:240/30`
as a fresh `python -m pipelines` process (Spark start, every Delta commit and the evaluation
included) and prints its seconds, the seconds of each round's two Spark jobs (`rappel_rounds`)
and the round measures. Then the tests' whole-network oracle (`tests/rappel_trees_oracle.py`)
runs the same hour on the stored inputs (coordinates, publishers) in this process: its final
friendships must equal the run's links, its deliveries per round the stored counts; the ratio is
the oracle's seconds per round over the simulation's.

Usage:
  .venv/bin/python benchmarks/rappel_1k.py [--lakehouse DIR] [--hours 1] [--no-oracle]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import astuple
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from rappel_trees_oracle import coupled_run  # noqa: E402

from benchmarks.design_greedy import current_subscriptions, print_markdown, table  # noqa: E402
from benchmarks.feverfew_10k import cli  # noqa: E402

INSTANCE = "rappel-1k"
CHURN = "sessions:240/30"  # 25% of the nodes online leave per hour; 30 min offline on average


def oracle_inputs(lakehouse: str, instance: str, run_id: str, model_seed: int = 1):
    """What the oracle needs of a stored Rappel run: nodes, each node's feeds, the coordinates
    (x, y) in node order and each feed's publisher."""
    pairs = current_subscriptions(lakehouse, instance)
    instances = table(lakehouse, "instances")
    row = instances[instances.instance == instance].iloc[0]
    nodes = int(row.nodes)
    subs = {v: set() for v in range(nodes)}
    for v, t in pairs:
        subs[int(v)].add(int(t))
    coords = table(lakehouse, "node_coordinates")
    coords = coords[
        (coords.instance == instance) & (coords.ingest_id == row.ingest_id) & (coords.model_seed == model_seed)
    ]
    coords = coords.sort_values("node_id")
    publishers = table(lakehouse, "feed_publishers")
    publishers = [int(p) for p in publishers[publishers.run_id == run_id].sort_values("topic_id").publisher]
    return nodes, subs, list(zip(coords.x_ms, coords.y_ms)), publishers


def benchmark(lakehouse: str, hours: float, oracle: bool) -> None:
    from pipelines.churn import SESSIONS, parse_churn
    from pipelines.rappel import RappelRequest

    instances = table(lakehouse, "instances") if (Path(lakehouse) / "instances").exists() else None
    if instances is None or INSTANCE not in set(instances.instance):
        seconds = cli(
            lakehouse,
            "ingest",
            "--instance",
            INSTANCE,
            "--source",
            "synthetic",
            "--dist",
            "zipf",
            "--nodes",
            "1000",
            "--topics",
            "100",
            "--min-subs",
            "2",
            "--max-subs",
            "12",
            "--alpha",
            "1.0",
            "--seed",
            "1",
        )
        print(f"ingest {INSTANCE}: {seconds:.0f} s", flush=True)
    run_id = f"{INSTANCE}.rappel.bench.h{hours:g}"
    wall = cli(
        lakehouse,
        "simulate",
        "rappel",
        "--instance",
        INSTANCE,
        "--hours",
        str(hours),
        "--churn",
        CHURN,
        "--run-id",
        run_id,
        "--replace",
        "--skip-diameters",
    )
    runs = table(lakehouse, "overlay_runs")
    run = runs[runs.run_id == run_id].iloc[0]
    rounds = table(lakehouse, "rappel_rounds")
    rounds = rounds[rounds.run_id == run_id].sort_values("round")
    per_round = float(rounds.seconds.mean())
    print(
        f"simulate {run_id}: {wall:.0f} s wall (the process), {run.seconds:.0f} s in the run "
        f"({run.seconds_rounds:.0f} s simulating, {run.seconds_evaluate:.0f} s evaluating), "
        f"{per_round:.2f} s per round's two Spark jobs on average (max {rounds.seconds.max():.2f} s)",
        flush=True,
    )
    print_markdown(
        [
            {
                "round": int(r.round),
                "up": int(r.nodes_up),
                "friends": f"{r.friends_avg:.2f}",
                "covered": f"{r.covered_share:.3f}",
                "full": int(r.full_coverage_nodes),
                "deliveries": int(r.deliveries),
                "median ms": f"{r.latency_median:.0f}" if r.deliveries else "-",
                "p95 ms": f"{r.latency_p95:.0f}" if r.deliveries else "-",
                "noise": int(r.noise),
                "control": int(r.control_messages),
                "seconds": f"{r.seconds:.2f}",
            }
            for r in rounds.itertuples()
            if r.round % 10 == 0 or r.round == len(rounds)
        ]
    )
    if not oracle:
        return
    nodes, subs, coords, publishers = oracle_inputs(lakehouse, INSTANCE, run_id)
    request = RappelRequest(INSTANCE, hours=hours, churn=astuple(parse_churn(CHURN, (SESSIONS,))))
    presence = request.presence(frozenset(publishers))
    clock = time.monotonic()
    stored = dict(zip(rounds["round"], rounds.deliveries))
    for r, fo, trees in coupled_run(  # noqa: B007 - fo: the last round's overlay, checked below
        nodes, subs, coords, publishers, request.rounds, presence_down=lambda r: presence.down(range(nodes), r)
    ):
        assert len(trees.deliveries) == stored[r], f"round {r}: oracle {len(trees.deliveries)}, stored {stored[r]}"
    oracle_round = (time.monotonic() - clock) / request.rounds
    edges = table(lakehouse, "overlay_edges")
    links = {(int(u), int(v)) for u, v in zip(edges[edges.run_id == run_id].u, edges[edges.run_id == run_id].v)}
    assert links == {(min(v, q), max(v, q)) for v in range(nodes) for q in fo.friends[v]}, "final friendships differ"
    print(
        f"oracle: the same {request.rounds} rounds in {oracle_round:.2f} s per round; deliveries per round and "
        f"final friendships equal the run's; oracle / Spark per round = {oracle_round / per_round:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lakehouse", default=str(ROOT / "lakehouse-bench"))
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--no-oracle", action="store_true")
    args = parser.parse_args()
    benchmark(args.lakehouse, args.hours, not args.no_oracle)


if __name__ == "__main__":
    main()
