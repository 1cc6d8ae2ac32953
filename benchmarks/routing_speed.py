"""Benchmark (not a test): the route job's memory regime against the compiled routing yardstick,
the same work in one process, no Spark.

Reads a small-world run's ring and fingers and the instance's subscriptions from the lakehouse
(deltalake, no JVM), draws the route job's publications, then times, after a warm-up each (numba's
cache loaded), the lab's `route_in_memory` + `summarise_in_memory` (arrivals, deliveries, loads,
per-publication counts, metrics, the exactly-once check) and `benchmarks/routing_yardstick.py`'s
`run` (arrivals, per-publication counts, loads, the exactly-once check) on the same inputs: the
best of `--repeat` runs each, their ratio, and that both count the same messages and deliveries.

Usage:
  .venv/bin/python benchmarks/routing_speed.py --lakehouse /tmp/lh --instance tw-10k \
      --run tw-10k.swico.gswico-gswico.s3 --protocol pie --publications 10000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import routing_yardstick as yardstick
from benchmarks.design_greedy import current_subscriptions, table
from overlay import schema as S
from overlay.rappel.coordinates import LatencyModel
from routing.in_memory import placed_publications, route_in_memory, routing_tables, summarise_in_memory
from routing.workload import publications_in_memory


def best(repeat: int, work) -> tuple[float, object]:
    """The fastest of `repeat` runs of `work()` and the last result."""
    seconds, result = [], None
    for _ in range(repeat):
        clock = time.monotonic()
        result = work()
        seconds.append(time.monotonic() - clock)
    return min(seconds), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", default="tw-10k")
    parser.add_argument("--run", required=True)
    parser.add_argument("--protocol", default="pie")
    parser.add_argument("--publications", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    instances = table(args.lakehouse, "instances")
    n = int(instances.loc[instances.instance == args.instance, "nodes"].iloc[0])
    ring = table(args.lakehouse, "ring")
    ring = ring[ring.run_id == args.run][[S.NODE_ID, S.POSITION]]
    fingers = table(args.lakehouse, "fingers")
    fingers = fingers[fingers.run_id == args.run][[S.NODE_ID, S.FINGER]]
    subscriptions = pa.table(dict(zip((S.NODE_ID, S.TOPIC_ID), np.asarray(current_subscriptions(args.lakehouse, args.instance), np.int64).T)))  # fmt: skip
    xy = LatencyModel().coordinates(1, np.arange(n, dtype=np.int64))  # the route job's model, seed 1
    coordinates = pa.table({S.NODE_ID: np.arange(n, dtype=np.int64), S.X_MS: xy[:, 0], S.Y_MS: xy[:, 1]})
    tables = routing_tables(pa.Table.from_pandas(ring), pa.Table.from_pandas(fingers), subscriptions, n, coordinates)
    placed = placed_publications(tables, publications_in_memory(subscriptions, args.publications, args.seed))

    def lab():
        routed = route_in_memory(tables, placed, args.protocol)
        return routed, summarise_in_memory(routed, tables, placed)

    route_in_memory(tables, placed.slice(0, 10), args.protocol)  # numba's cache loaded
    lab_s, (routed, outcome) = best(args.repeat, lab)
    route_s, _ = best(args.repeat, lambda: route_in_memory(tables, placed, args.protocol))

    got = yardstick.read_inputs(args.lakehouse, args.instance, args.run, args.publications, args.seed)
    arguments = yardstick.prepare(
        got["f_start"], got["f_dist"], got["subscriptions"], got["publications"], args.protocol, got["n"], got["f_lat"]
    )
    yardstick.run(*yardstick.prepare(got["f_start"], got["f_dist"], got["subscriptions"], got["publications"][:10], args.protocol, got["n"], got["f_lat"]))  # fmt: skip
    yard_s, (_, rows, _, per_pub, _) = best(args.repeat, lambda: yardstick.run(*arguments))
    same = routed.messages == len(rows) and outcome.metrics[S.DELIVERIES] == int(per_pub[:, 2].sum())
    print(json.dumps({
        "instance": args.instance, "run": args.run, "protocol": args.protocol, "publications": args.publications,
        "messages": routed.messages, "deliveries": outcome.metrics[S.DELIVERIES], "same_counts": same,
        "lab_route_and_outcome_s": round(lab_s, 3), "lab_route_s": round(route_s, 3), "yardstick_s": round(yard_s, 3),
        "ratio": round(lab_s / yard_s, 2), "route_ratio": round(route_s / yard_s, 2),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
