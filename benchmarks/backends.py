"""Benchmark (not a test): the DataFrame and GraphFrames forms of the same operation, side by side
in one process, on the same inputs, with the same answer checked.

Operations: connected components of the (topic, node) graph (`overlay.graph`), node degrees and
topic diameters (`overlay.quality`). Scribe routing was measured here too (`routing.simulate`
against a GraphFrames Pregel form, the rows below); the Pregel form was 1.8-2.5x slower, covered
Scribe only, and is gone: routing keeps the DataFrame supersteps as its Spark form.
Sizes (`--sizes`):

* full = 1k + 10k;
* 1k: fb-1k (1,000-node BFS sample of the shipped Facebook graph, seed 1) with RandomM at
  d = 12 (its budget at ratio 0.2); (then) Scribe on fb-1k over RandomS + Chord, 1,000
  publications;
* 10k: the Zipf 10,000 x 10,000 instance of benchmarks/evaluate_10k.py (20-60 subscriptions,
  a random 20,000-link overlay); (then) Scribe on tw-10k (benchmarks/routing_10k.py) over
  RandomS + Chord, 10,000 publications;
* small: a quick check (fb-200 with RandomM d = 8, Zipf 500 x 500).

Each measurement materialises its result (a local checkpoint), runs in its own Spark job group
(the jobs column counts them), DataFrame first. `same answer`: the two results are equal as
multisets of rows (two `exceptAll` jobs, nothing collected). Load averages are printed before
and after: the machine may be shared.

Usage: .venv/bin/python benchmarks/backends.py [--sizes small|1k|10k|full]
           [--operations components,degrees,diameters]

Measured 2026-11-26, `--sizes full`, one run of 908 s on 2 cores shared with other jobs (load
average 9.2 before, 6.0 after; other Spark test runs throughout). Jobs include AQE's map-stage
jobs.

| operation | size | DataFrame s | GraphFrames s | ratio (GF / DF) | same answer | jobs (DF / GF) |
|---|---|---:|---:|---:|---|---:|
| connected components | fb-1k RandomM d=12 (26,858 vertices, 10,350 edges) | 15.6 | 29.4 | 1.88x | yes | 62 / 86 |
| node degrees | fb-1k RandomM d=12 | 0.3 | 1.4 | 5.19x | yes | 2 / 20 |
| topic diameters | fb-1k RandomM d=12 | 20.1 | 27.4 | 1.36x | yes | 176 / 139 |
| Scribe routing (arrivals) | fb-1k RandomS + Chord, 1,000 publications | 26.8 | 48.3 | 1.80x | yes | 212 / 215 |
| connected components | Zipf 10K x 10K, 20K links (397,826 vertices, 437,998 edges) | 67.9 | 63.8 | 0.94x | yes | 94 / 115 |
| node degrees | Zipf 10K x 10K, 20K links | 0.5 | 2.9 | 5.35x | yes | 2 / 18 |
| topic diameters | Zipf 10K x 10K, 20K links | 222.5 | 90.2 | 0.41x | yes | 383 / 332 |
| Scribe routing (arrivals) | tw-10k RandomS + Chord, 10,000 publications | 25.3 | 64.0 | 2.53x | yes | 286 / 256 |

The diameters' DataFrame form was then frontier joins, one round per hop. Now one BFS per topic in
a task (`overlay/eccentricity.py`): `--sizes full --operations diameters`, 2026-11-27, 119 s,
nothing else running:

| operation | size | DataFrame s | GraphFrames s | ratio (GF / DF) | same answer | jobs (DF / GF) |
|---|---|---:|---:|---:|---|---:|
| topic diameters | fb-1k RandomM d=12 | 2.6 | 13.3 | 5.13x | yes | 11 / 138 |
| topic diameters | zipf 10,000 x 10,000, 20,000 random links | 2.7 | 56.0 | 20.61x | yes | 7 / 332 |
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from overlay import schema as S  # noqa: E402
from overlay.design.baselines import random_m  # noqa: E402
from overlay.frames import local_frame  # noqa: E402
from overlay.graph import ID, connected_components  # noqa: E402
from overlay.instance.social import SocialSpec, social_instance  # noqa: E402
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance  # noqa: E402
from overlay.quality import node_degrees, topic_diameters, topic_graph  # noqa: E402
from pipelines.config import LabSettings, apply_overrides  # noqa: E402
from pipelines.spark import build_local_session, shuffle_partitions  # noqa: E402

FACEBOOK = ROOT / "pipelines" / "datasets" / "facebook_combined.txt.gz"
BACKENDS = ("dataframe", "graphframes")
OPERATIONS = ("components", "degrees", "diameters")
_groups = itertools.count()
HEADER = "| operation | size | DataFrame s | GraphFrames s | ratio (GF / DF) | same answer | jobs (DF / GF) |"
RULE = "|---|---|---:|---:|---:|---|---:|"


@dataclass
class Overlay:
    label: str
    subscriptions: DataFrame  # (node_id, topic_id)
    links: DataFrame  # (u, v)


def social_sample(spark: SparkSession, spec: SocialSpec) -> tuple[DataFrame, int]:
    """A BFS-sampled social instance: its subscriptions (node_id, topic_id) and node count."""
    frames = social_instance(spark, spec)
    return frames.subscriptions.select(S.NODE_ID, S.TOPIC_ID).localCheckpoint(eager=True), frames.node_keys.count()


def facebook_spec(nodes: int) -> SocialSpec:
    return SocialSpec(path=str(FACEBOOK), directed=False, sample_bfs=nodes, seed=1)


def random_m_overlay(label: str, subscriptions: DataFrame, max_degree: int) -> Overlay:
    links = random_m(subscriptions, max_degree, seed=1).select(S.U, S.V).localCheckpoint(eager=True)
    return Overlay(f"{label} RandomM d={max_degree}", subscriptions, links)


def zipf(spark: SparkSession, nodes: int, links: int, min_subs: int, max_subs: int) -> Overlay:
    """The instance and random overlay of benchmarks/evaluate_10k.py (nodes = topics, seed 1)."""
    spec = SyntheticSpec(dist="zipf", nodes=nodes, topics=nodes, min_subs=min_subs, max_subs=max_subs, seed=1)
    subscriptions = (
        synthetic_instance(spark, spec).subscriptions.select(S.NODE_ID, S.TOPIC_ID).localCheckpoint(eager=True)
    )
    rng = random.Random(1)
    pairs = set()
    while len(pairs) < links:  # drawn on the driver as in evaluate_10k: the benchmark's fixed input
        u, v = rng.sample(range(nodes), 2)
        pairs.add((min(u, v), max(u, v)))
    frame = local_frame(spark, sorted(pairs), f"{S.U} long, {S.V} long").localCheckpoint(eager=True)
    return Overlay(f"zipf {nodes:,} x {nodes:,}, {links:,} random links", subscriptions, frame)


def timed(spark: SparkSession, compute) -> tuple[float, DataFrame, int]:
    """Seconds, the materialised result and the number of Spark jobs of `compute()`."""
    group = f"backends-{next(_groups)}"
    spark.sparkContext.setJobGroup(group, group)
    clock = time.monotonic()
    result = compute().localCheckpoint(eager=True)
    seconds = time.monotonic() - clock
    return seconds, result, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def same_rows(a: DataFrame, b: DataFrame) -> bool:
    b = b.select(*a.columns)
    return a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty()


def compare(spark: SparkSession, operation: str, size: str, compute) -> str:
    """One table row: `compute(backend)` on both backends."""
    runs = [timed(spark, lambda backend=backend: compute(backend)) for backend in BACKENDS]
    (df_seconds, df_result, df_jobs), (gf_seconds, gf_result, gf_jobs) = runs
    same = "yes" if same_rows(df_result, gf_result) else "NO"
    row = (
        f"| {operation} | {size} | {df_seconds:.1f} | {gf_seconds:.1f} | {gf_seconds / df_seconds:.2f}x | {same} "
        f"| {df_jobs} / {gf_jobs} |"
    )
    print(row, flush=True)
    for _, result, _ in runs:
        result.unpersist()
    return row


def overlay_rows(spark: SparkSession, overlay: Overlay, operations: set[str]) -> list[str]:
    vertices, topic_edges = topic_graph(overlay.subscriptions, overlay.links)
    vertices = vertices.select(ID).localCheckpoint(eager=True)
    topic_edges = topic_edges.localCheckpoint(eager=True)
    size = f"{overlay.label} ({vertices.count():,} (topic, node) vertices, {topic_edges.count():,} edges)"
    measures = {
        "components": lambda: compare(
            spark, "connected components", size, lambda b: connected_components(vertices, topic_edges, backend=b)
        ),
        "degrees": lambda: compare(spark, "node degrees", overlay.label, lambda b: node_degrees(overlay.links, b)),
        "diameters": lambda: compare(
            spark,
            "topic diameters",
            overlay.label,
            lambda b: topic_diameters(overlay.subscriptions, overlay.links, backend=b),
        ),
    }
    return [measure() for name, measure in measures.items() if name in operations]


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def busiest() -> str:
    """The processes using the most CPU (what else shares the machine)."""
    out = subprocess.run(["ps", "-eo", "pid,pcpu,etime,comm", "--sort=-pcpu"], capture_output=True, text=True).stdout
    return "\n".join(out.splitlines()[:8])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", choices=("small", "1k", "10k", "full"), default="full")
    parser.add_argument(
        "--operations", default=",".join(OPERATIONS), help=f"comma-separated, of {','.join(OPERATIONS)}"
    )
    args = parser.parse_args()
    operations = set(args.operations.split(","))
    if not operations <= set(OPERATIONS):
        parser.error(f"--operations: unknown {sorted(operations - set(OPERATIONS))}")
    print(f"before: {load()}\n{busiest()}", flush=True)
    started = time.monotonic()
    root = tempfile.mkdtemp(prefix="bench-backends-")
    settings = apply_overrides(
        LabSettings(), {"lakehouse": root + "/lakehouse", "spark.conf": {"spark.ui.retainedJobs": "100000"}}
    )
    spark = build_local_session(settings)
    print(
        f"Spark {spark.version}, master {spark.sparkContext.master}, {shuffle_partitions(spark)} shuffle partitions, "
        f"PID {os.getpid()}",
        flush=True,
    )
    spark.range(1000).groupBy((F.col("id") % 7).alias("k")).count().collect()  # warm-up, not measured

    print(HEADER + "\n" + RULE, flush=True)
    rows = []
    if args.sizes == "small":
        fb, _ = social_sample(spark, facebook_spec(200))
        rows += overlay_rows(spark, random_m_overlay("fb-200", fb, 8), operations)
        rows += overlay_rows(spark, zipf(spark, 500, 1000, 5, 15), operations)
    if args.sizes in ("1k", "full"):
        fb, _ = social_sample(spark, facebook_spec(1000))
        rows += overlay_rows(spark, random_m_overlay("fb-1k", fb, 12), operations)
    if args.sizes in ("10k", "full"):
        rows += overlay_rows(spark, zipf(spark, 10_000, 20_000, 20, 60), operations)
    print("\n" + "\n".join([HEADER, RULE, *rows]))
    print(f"\ntotal {time.monotonic() - started:.0f} s\nafter: {load()}\n{busiest()}", flush=True)


if __name__ == "__main__":
    main()
