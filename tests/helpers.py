"""Helpers the test modules share: instances and frames for oracles, CLI runs in this process,
second processes, thread races. Fixtures live in conftest.py."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import numpy as np
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.classes import Subscriptions
from overlay.frames import local_frame
from pipelines import overlays
from pipelines.lakehouse import Lakehouse
from pipelines.spark import JAVA_OPTIONS_VARIABLE

ROOT = Path(__file__).resolve().parent.parent


# A CLI process of the tests lives for seconds to minutes on tiny data: C1 compilation alone pays
# off sooner there (a 60-node Feverfew command on one core: about 99 s with the full JIT, 63-82 s
# with C1). The tests' own session keeps the full JIT: it lives the whole run, and C1 alone made
# tests/test_day_two.py + test_ledger.py 227 s against 187 s. C1 alone gets a 48 MB code cache,
# which a command of a minute fills ("CodeCache is full. Compiler has been disabled."): from then
# on the JVM interprets everything, so the cache is the tiered JIT's 240 MB.
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"

# Spark settings for the tests' tiny data, in the tests' own session (conftest `settings`) and in
# their second processes (`lab_command`): no adaptive re-planning (a job per query stage),
# two shuffle partitions, one task for a Delta snapshot or a file listing, no whole-stage code
# generation (compiling each plan costs more than running it), and no Delta checkpoint every 10
# commits (test tables live for seconds). A 60-node ingest, design and route, three processes on
# one core: 108-135 s (mean 119) against 136-149 s (mean 144) with conf/lab.yaml's settings, three
# runs of each alternating, 2026-12-06.
SMALL_DATA_PARTITIONS = 2
SMALL_DATA_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "1",
    "spark.databricks.delta.properties.defaults.checkpointInterval": "100",
    "spark.sql.codegen.wholeStage": "false",
}


def lab_command(*argv: str) -> list[str]:
    """`python -m pipelines ARGV` for a second process, with `SMALL_DATA_CONF` as global options
    (the tests' own session has them); run it with `python_env()`."""
    options = ["--shuffle-partitions", str(SMALL_DATA_PARTITIONS)]
    for key, value in SMALL_DATA_CONF.items():
        options += ["--spark-conf", f"{key}={value}"]
    return [sys.executable, "-m", "pipelines", *options, *argv]


def failure_excerpt(done: subprocess.CompletedProcess, lines: int = 12, tail: int = 1500) -> str:
    """What a failed CLI process said that matters: its first lines naming a failure or an error
    (a workflow's FAILED step, the Python and Java exceptions), then the end of its stderr."""
    text = f"{done.stdout or ''}\n{done.stderr or ''}"
    marks = ("FAILED", "Error", "Exception", "error:", "Caused by")
    named = [line[:400] for line in text.splitlines() if any(m in line for m in marks)][:lines]
    return "\n".join([f"exit code {done.returncode}", *named, "--- end of stderr:", (done.stderr or "")[-tail:]])


def python_env(**extra: str) -> dict[str, str]:
    """The environment of a second Python process of these tests: unbuffered, its Spark workers on
    this interpreter, its JVMs on the quick JIT (unless the environment says otherwise)."""
    return {
        JAVA_OPTIONS_VARIABLE: QUICK_JIT,
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PYSPARK_PYTHON": sys.executable,
        **extra,
    }


def run_cli(*argv: str) -> tuple[int, str, str]:
    """`python -m pipelines ARGV` in this process: exit code, stdout, stderr."""
    from pipelines.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def exit_code(argv: list[str]) -> int:
    """`main`'s exit code, also when the parser itself refuses the arguments (it exits 2)."""
    from pipelines.cli import main

    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


TINY_WORKFLOW = ROOT / "tests" / "workflows" / "tiny_refresh.yaml"

# Columns that say when or how much work a run took, or which attempt: they differ between runs.
VARYING_NAMES = {"ingest_id", "attempt", "spark_jobs", "delta_commits", "rows_read", "reevaluations", "owner"}
VERSION_ID = r"\d{8}T\d+Z-[0-9a-f]{8}"  # an instance version's ingest id, new in each lakehouse


def varying(column: str) -> bool:
    return column in VARYING_NAMES or column.endswith(("_at", "ingest_id")) or "seconds" in column


def same_lakehouses(spark, left: Path, right: Path) -> None:
    """Every Delta table of two lakehouses row for row, without the columns that time the work
    or name the attempt, and with the instance versions' ids (in run ids, parameters) made alike."""
    from chispa import assert_df_equality

    names = sorted(p.parent.name for p in left.glob("*/_delta_log"))
    assert names == sorted(p.parent.name for p in right.glob("*/_delta_log"))
    for name in names:
        frames = [spark.read.format("delta").load(str(root / name)) for root in (left, right)]
        keep = [c for c in frames[0].columns if not varying(c)]
        strings = {f.name for f in frames[0].schema.fields if f.dataType.simpleString() == "string"}
        a, b = (
            f.select([F.regexp_replace(c, VERSION_ID, "V").alias(c) if c in strings else F.col(c) for c in keep])
            for f in frames
        )
        try:
            assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True)
        except AssertionError as error:
            raise AssertionError(f"table {name} differs:\n{error}") from None


def store_instance(spark, lakehouse: Lakehouse, name: str, spec) -> list[tuple[int, int]]:
    """Ingest a synthetic instance under `name`; its (node_id, topic_id) pairs, for oracles."""
    from overlay.instance.synthetic import synthetic_instance

    lakehouse.replace_instance(name, synthetic_instance(spark, spec))
    return [(r[S.NODE_ID], r[S.TOPIC_ID]) for r in lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, name).collect()]


def read_edges(path: Path) -> list[tuple[int, int]]:
    """A plain reading of a SNAP edge list, for oracles."""
    with gzip.open(path, "rt") as handle:
        return [tuple(int(x) for x in line.split()) for line in handle if line.strip() and not line.startswith("#")]


def run_at_once(tasks: dict[str, Callable[[], object]]) -> list[tuple[str, BaseException]]:
    """Run the tasks in threads released together (jobs started at once); the (name, error) of
    every task that raised, for the test to assert there are none."""
    start = threading.Barrier(len(tasks))
    errors: list[tuple[str, BaseException]] = []

    def work(name: str, task: Callable[[], object]) -> None:
        start.wait()
        try:
            task()
        except BaseException as error:
            errors.append((name, error))

    threads = [threading.Thread(target=work, args=item) for item in tasks.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


FACEBOOK = ROOT / "pipelines" / "datasets" / "facebook_combined.txt.gz"


def random_overlay(rng, nodes, count):
    pairs = set()
    while len(pairs) < count:
        u, v = rng.sample(range(nodes), 2)
        pairs.add((min(u, v), max(u, v)))
    return sorted(pairs)


EDGE_SCHEMA = f"{S.U} long, {S.V} long"


SUBS_SCHEMA = f"{S.NODE_ID} long, {S.TOPIC_ID} long"


def driver_copy(subscriptions, nodes=None) -> Subscriptions:
    nodes = nodes or max(node for node, _ in subscriptions) + 1
    return Subscriptions.from_pairs(nodes, np.array(subscriptions, dtype=np.int64))


def frame(spark, subscriptions):
    return spark.createDataFrame(subscriptions, f"{S.NODE_ID} long, {S.TOPIC_ID} long")


def pairs(spark, rows):
    return spark.createDataFrame(rows, "subscriber string, topic string")


def keyed_subscriptions(frames):
    """(subscriber key, topic key) pairs, so tests read in the user's own ids."""
    nodes = frames.node_keys.select(F.col(S.ID).alias(S.NODE_ID), F.col(S.KEY).alias("subscriber"))
    topics = frames.topic_keys.select(F.col(S.ID).alias(S.TOPIC_ID), F.col(S.KEY).alias("topic"))
    return frames.subscriptions.join(nodes, S.NODE_ID).join(topics, S.TOPIC_ID).select("subscriber", "topic")


def tree_fields(tree) -> dict:
    return {
        x: (m.online, m.parent, list(m.children), m.since, m.plan, m.rejoin, m.skip, m.detect)
        for x, m in tree.members.items()
    }


def feed_instance(nodes: int, feeds: int, seed: int):
    """1-5 feeds per node from Zipf-popular feeds; each feed's publisher a node drawn apart."""
    rng = np.random.default_rng(seed)
    weight = rng.zipf(1.4, feeds).astype(float)
    subs = {
        v: set(rng.choice(feeds, size=int(rng.integers(1, 6)), replace=False, p=weight / weight.sum()).tolist())
        for v in range(nodes)
    }
    publishers = [int(p) for p in rng.integers(0, nodes, size=feeds)]
    return subs, publishers


WORKFLOWS = sorted((ROOT / "conf" / "workflows").glob("*.yaml"))


def ring_network(overlay, subscriptions):
    """A small-world run as plain Python for the routing oracle: positions, finger distances per
    position, and each topic's subscribers' positions."""
    position = {r[S.NODE_ID]: r[S.POSITION] for r in overlay.ring.collect()}
    n = len(position)
    fingers = {}
    for r in overlay.fingers.collect():
        fingers.setdefault(position[r[S.NODE_ID]], set()).add((position[r[S.FINGER]] - position[r[S.NODE_ID]]) % n)
    subs = {}
    for node, topic in subscriptions:
        subs.setdefault(topic, set()).add(position[node])
    return position, {v: sorted(ds) for v, ds in fingers.items()}, subs


def on_ci() -> bool:
    """Whether this is the CI pass (`.ci/run` sets CI=true): a missing GraphFrames jar fails there."""
    return os.environ.get("CI", "").lower() == "true"


# Every table a Rappel run writes: a resumed or migrated run must equal a straight one in all.
RAPPEL_RUN_TABLES = (
    S.RAPPEL_ROUNDS,
    S.RAPPEL_DELIVERIES,
    S.RAPPEL_TRAFFIC,
    S.FEED_TREES,
    S.FEED_PUBLISHERS,
    S.RAPPEL_NODES,
    S.OVERLAY_EDGES,
    S.RAPPEL_STATES,
    S.RAPPEL_TREE_STATES,
)


# Runs written directly ---------------------------------------------------------------------


def imported(spark, lakehouse, write_text, run_id, pairs, instance="r"):
    """An overlay run of `pairs` of nodes n<a>, n<b>, imported from a CSV file."""
    path = write_text(f"{run_id}.csv", "u,v\n" + "".join(f"n{a},n{b}\n" for a, b in pairs))
    return overlays.run_import(spark, lakehouse, instance, run_id, path)


def routing_run_on(spark, lakehouse, routing_run_id, run_id, instance="r"):
    """A routing run row and its metrics, written directly (a real `route` needs a small-world run)."""
    now = datetime(2026, 1, 1)
    lakehouse.insert_run(
        {
            S.ROUTING_RUN_ID: routing_run_id,
            S.RUN_ID: run_id,
            S.INSTANCE: instance,
            S.PROTOCOL: "pie",
            S.PUBLICATIONS: 5,
            S.SEED: 1,
            S.PARAMS: "{}",
            S.STATUS: S.COMPLETE,
            S.STARTED_AT: now,
        },
        table=S.ROUTING_RUNS,
        key=S.ROUTING_RUN_ID,
    )
    metrics = {c: 0 for c in S.ROUTING_METRICS.columns}
    metrics.update(
        {
            S.ROUTING_RUN_ID: routing_run_id,
            S.RUN_ID: run_id,
            S.PROTOCOL: "pie",
            S.DELIVERY_RATIO: 1.0,
            S.AVG_PATH_LENGTH: 1.5,
            S.COMPUTED_AT: now,
        }
    )
    row = local_frame(spark, [tuple(metrics[c] for c in S.ROUTING_METRICS.columns)], S.ROUTING_METRICS.schema)
    lakehouse.write_run_rows(S.ROUTING_METRICS, routing_run_id, row, key=S.ROUTING_RUN_ID)


def counting_lakehouse(spark, folder) -> Lakehouse:
    """A fresh lakehouse with a 30-node instance `c`, for the tests that pin a job's Spark jobs and
    Delta commits (a first run on it warms the JVM's code paths; the second is counted)."""
    from overlay.instance.synthetic import SyntheticSpec

    lakehouse = Lakehouse(spark, folder / "lakehouse")
    store_instance(
        spark, lakehouse, "c", SyntheticSpec(dist="zipf", nodes=30, topics=5, min_subs=1, max_subs=3, seed=4)
    )
    return lakehouse
