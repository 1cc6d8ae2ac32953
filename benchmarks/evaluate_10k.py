"""Benchmark (not a test): evaluate a 10,000-node instance with a 20,000-link overlay.

Reports the total `evaluate` time, the share spent in connected components, and, on the same
(topic, node) graph, scipy's `connected_components` as the single-machine floor, as ratios in one
run. Usage: .venv/bin/python benchmarks/evaluate_10k.py [--nodes 10000] [--links 20000]
(needs scipy: .venv/bin/pip install -e '.[bench]').
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time

import numpy as np
from pyspark.sql import functions as F
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components as scipy_components

from overlay import quality
from overlay import schema as S
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance
from pipelines import overlays
from pipelines.config import LabSettings, apply_overrides
from pipelines.lakehouse import Lakehouse
from pipelines.spark import build_local_session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--links", type=int, default=20_000)
    parser.add_argument("--min-subs", type=int, default=20)
    parser.add_argument("--max-subs", type=int, default=60)
    args = parser.parse_args()

    root = tempfile.mkdtemp(prefix="bench-evaluate-")
    spark = build_local_session(apply_overrides(LabSettings(), {"lakehouse": root + "/lakehouse"}))
    lakehouse = Lakehouse(spark, root + "/lakehouse")
    spec = SyntheticSpec(
        dist="zipf", nodes=args.nodes, topics=args.topics, min_subs=args.min_subs, max_subs=args.max_subs, seed=1
    )
    lakehouse.replace_instance("bench", synthetic_instance(spark, spec))

    rng = random.Random(1)
    links = set()
    while len(links) < args.links:
        u, v = rng.sample(range(args.nodes), 2)
        links.add((min(u, v), max(u, v)))
    overlay_csv = root + "/overlay.csv"
    with open(overlay_csv, "w") as handle:
        handle.write("u,v\n" + "".join(f"n{u},n{v}\n" for u, v in sorted(links)))
    overlays.run_import(spark, lakehouse, "bench", "bench-run", overlay_csv)

    spent = {"components": 0.0}
    original = overlays.topic_components

    def timed_components(*a, **k):
        started = time.monotonic()
        result = original(*a, **k).localCheckpoint(eager=True)
        spent["components"] += time.monotonic() - started
        return result

    overlays.topic_components = timed_components
    started = time.monotonic()
    metrics = overlays.run_evaluate(spark, lakehouse, "bench-run")
    total = time.monotonic() - started

    # The single-machine floor: scipy on the same (topic, node) graph (driver-side, benchmark only).
    subs = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "bench").select(S.NODE_ID, S.TOPIC_ID)
    edges = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == "bench-run").select(S.U, S.V)
    vertices, topic_edges = quality.topic_graph(subs, edges)
    vertex_ids = np.array([r["id"] for r in vertices.select("id").collect()], dtype=np.int64)
    pairs = np.array([(r["src"], r["dst"]) for r in topic_edges.collect()], dtype=np.int64).reshape(-1, 2)
    started = time.monotonic()
    order = np.argsort(vertex_ids)
    index = np.searchsorted(vertex_ids[order], pairs)
    src, dst = order[index[:, 0]], order[index[:, 1]]
    graph = coo_matrix((np.ones(len(src)), (src, dst)), shape=(len(vertex_ids),) * 2)
    count, _ = scipy_components(graph, directed=False)
    scipy_seconds = time.monotonic() - started

    print(
        f"instance: {args.nodes:,} nodes, {args.topics:,} topics, {metrics[S.TCC_EMPTY]:,} subscriptions; "
        f"overlay: {metrics[S.EDGES]:,} links; topic graph: {len(vertex_ids):,} vertices, {len(pairs):,} edges"
    )
    print(f"TCC = {metrics[S.TCC]:,} (scipy: {count:,}), TcoSuppR = {metrics[S.TCO_SUPPORT]:.4f}")
    print(
        f"evaluate total {total:.1f} s; connected components {spent['components']:.1f} s "
        f"({spent['components'] / total:.0%} of it); scipy {scipy_seconds:.3f} s; "
        f"components / scipy = {spent['components'] / scipy_seconds:,.0f}x"
    )
    assert count == metrics[S.TCC], "the DataFrame components disagree with scipy"


if __name__ == "__main__":
    main()
