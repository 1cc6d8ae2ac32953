"""Benchmark (not a test): `disseminate --protocol gossipsub-spread`'s memory regime against the
compiled spread yardstick, the same work in one process, no Spark.

Reads a stored gossipsub run's meshes and the instance's subscriptions from the lakehouse
(deltalake, no JVM), chooses the publications as `disseminate` does (the yardstick's `choose`,
held to the lab's choice by `tests/test_spread_yardstick.py`), then times, after a warm-up each
(numba's cache loaded), the lab's `spread_in_memory` (every publication's kernel call and its
rows) and `benchmarks/spread_yardstick.py`'s `simulate` (one call for all publications) on the
same inputs: the best of `--repeat` runs each, their ratio, and that both deliver the same copies.

Usage:
  .venv/bin/python benchmarks/spread_speed.py --lakehouse /tmp/lh --instance tw-10k \
      --run-id tw-10k.gossipsub.go-libp2p.h120.s1 --publications 1000
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import spread_yardstick as yardstick
from benchmarks.design_greedy import current_subscriptions, table
from benchmarks.routing_speed import best
from overlay import schema as S
from overlay.gossip.gossipsub import GossipsubParams
from overlay.gossip.spread import DELIVERY, SpreadParams, spread_in_memory
from overlay.rappel.coordinates import LatencyModel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", default="tw-10k")
    parser.add_argument("--run-id", required=True, help="a complete gossipsub run (its meshes)")
    parser.add_argument("--publications", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    pairs = np.asarray(current_subscriptions(args.lakehouse, args.instance), np.int64)
    nodes = int(pairs[:, 0].max()) + 1
    runs = table(args.lakehouse, "overlay_runs")
    protocol = json.loads(runs.loc[runs.run_id == args.run_id, "params"].iloc[0])["protocol"]
    mesh = table(args.lakehouse, "gossipsub_mesh")
    mesh = mesh[mesh.run_id == args.run_id]
    meshes = mesh[[S.TOPIC_ID, S.NODE_ID, S.PEER_ID]].to_numpy().astype(np.int64)
    stored = GossipsubParams.stored(protocol)
    params = SpreadParams(
        heartbeat_us=1000 * stored.heartbeat_ms,
        d_lazy=stored.d_lazy,
        gossip_factor=stored.gossip_factor,
        mcache_gossip=stored.mcache_gossip,
        flood_publish=stored.flood_publish,
        seed=args.seed,
        idontwant_bytes=stored.idontwant_bytes,
    )
    chosen, up = yardstick.choose(pairs, args.seed, args.publications, 0.0, nodes)
    subscriptions = pa.table({S.NODE_ID: pairs[:, 0], S.TOPIC_ID: pairs[:, 1]})
    push = pa.table({S.TOPIC_ID: meshes[:, 0], S.U: meshes[:, 1], S.V: meshes[:, 2]})
    topics = pa.table({S.PUB_ID: np.arange(len(chosen), dtype=np.int64), S.TOPIC_ID: chosen[:, 1]})

    def lab():
        return spread_in_memory(subscriptions, push, topics, 0.0, 1, params)

    spread_in_memory(subscriptions, push, topics.slice(0, 2), 0.0, 1, params)  # numba's cache loaded
    lab_s, rows = best(args.repeat, lab)

    settings = yardstick.Settings(
        heartbeat_us=params.heartbeat_us,
        d_lazy=params.d_lazy,
        gossip_factor=params.gossip_factor,
        mcache_gossip=params.mcache_gossip,
        flood_publish=params.flood_publish,
        message_bytes=params.message_bytes,
        idontwant_bytes=params.idontwant_bytes,
    )
    positions = LatencyModel().coordinates(1, np.arange(nodes, dtype=np.int64))
    instance = yardstick.layout(pairs, meshes, positions)
    yardstick.warm()
    yard_s, result = best(
        args.repeat, lambda: yardstick.simulate(None, None, None, up, chosen, args.seed, settings, instance=instance)
    )
    deliveries = int((rows.column("row_kind").to_numpy() == DELIVERY).sum())
    print(json.dumps({
        "instance": args.instance, "run_id": args.run_id, "publications": len(chosen),
        "deliveries": deliveries, "same_deliveries": deliveries == result.deliveries(),
        "lab_s": round(lab_s, 3), "yardstick_s": round(yard_s, 3), "ratio": round(lab_s / yard_s, 2),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
