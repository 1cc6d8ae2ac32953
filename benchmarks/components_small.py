"""Benchmark (not a test): connected components of small (topic, node) graphs, GraphFrames'
two-phase algorithm against label propagation first (`overlay.graph`: GraphX's algorithm for at
most `PROPAGATION_SUPERSTEPS` supersteps, kept when no edge joins two labels, else the two-phase
run), in one process, on the same inputs, the same answer checked.

Overlays: a random overlay of 3 links a node on Zipf instances of 24, 300, 2,000 and 10,000 nodes (nodes =
topics / 4, 2-6 subscriptions a node, seed 1); RandomM on BFS samples of the shipped Facebook graph
(fb-200 at d = 8, fb-1k at d = 12, as `benchmarks/backends.py`). Each is measured twice, in turn,
on the lab's default local session; the table shows the second (warm) time and its Spark jobs.

Usage: .venv/bin/python benchmarks/components_small.py
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from backends import (  # noqa: E402
    Overlay,
    busiest,
    facebook_spec,
    load,
    random_m_overlay,
    same_rows,
    social_sample,
    timed,
)

from overlay import schema as S  # noqa: E402
from overlay.frames import local_frame  # noqa: E402
from overlay.graph import ID, PROPAGATION_MAX_VERTICES, connected_components  # noqa: E402
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance  # noqa: E402
from overlay.quality import topic_graph  # noqa: E402
from pipelines.config import LabSettings, apply_overrides  # noqa: E402
from pipelines.spark import build_local_session  # noqa: E402


def zipf_overlay(spark, nodes: int) -> Overlay:
    spec = SyntheticSpec(dist="zipf", nodes=nodes, topics=max(4, nodes // 4), min_subs=2, max_subs=6, seed=1)
    subscriptions = synthetic_instance(spark, spec).subscriptions.select(S.NODE_ID, S.TOPIC_ID)
    rng = random.Random(1)
    pairs = {tuple(sorted(rng.sample(range(nodes), 2))) for _ in range(3 * nodes)}
    links = local_frame(spark, sorted(pairs), f"{S.U} long, {S.V} long")
    return Overlay(f"Zipf {nodes:,}, random links", subscriptions.localCheckpoint(eager=True), links)


def main() -> None:
    print(f"before: {load()}\n{busiest()}", flush=True)
    root = tempfile.mkdtemp(prefix="bench-components-")
    spark = build_local_session(apply_overrides(LabSettings(), {"lakehouse": root + "/lakehouse"}))
    overlays = [zipf_overlay(spark, n) for n in (24, 300, 2_000, 10_000)]
    for nodes, degree in ((200, 8), (1_000, 12)):
        subscriptions, _ = social_sample(spark, facebook_spec(nodes))
        overlays.append(
            random_m_overlay(f"fb-{nodes // 1000}k" if nodes >= 1000 else f"fb-{nodes}", subscriptions, degree)
        )
    print(
        "| overlay | vertices | edges | two-phase s | propagation first s | ratio | same answer | jobs (two-phase / propagation) |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for overlay in overlays:
        vertices, edges = topic_graph(overlay.subscriptions, overlay.links)
        vertices = vertices.select(ID).localCheckpoint(eager=True)
        edges = edges.localCheckpoint(eager=True)
        count = vertices.count()
        forms = {
            "two-phase": lambda v=vertices, e=edges: connected_components(v, e, "graphframes"),
            "propagation": lambda v=vertices, e=edges: connected_components(v, e, "graphframes", vertex_count=0),
        }
        runs = {}
        for _ in range(2):  # the second round is the one shown
            runs = {name: timed(spark, compute) for name, compute in forms.items()}
        (two_s, two_rows, two_jobs), (pro_s, pro_rows, pro_jobs) = runs["two-phase"], runs["propagation"]
        same = "yes" if same_rows(two_rows, pro_rows) else "NO"
        print(
            f"| {overlay.label} | {count:,} | {edges.count():,} | {two_s:.1f} | {pro_s:.1f} | {pro_s / two_s:.2f}x "
            f"| {same} | {two_jobs} / {pro_jobs} |",
            flush=True,
        )
    print(f"(propagation first is used up to {PROPAGATION_MAX_VERTICES:,} vertices)")
    print(f"after: {load()}", flush=True)
    spark.stop()


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"total {time.monotonic() - started:.0f} s")
