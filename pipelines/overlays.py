"""Overlay jobs: import an existing overlay, evaluate any run, export a run's links."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.certified import certified_components, topic_forest
from overlay.connectivity import KtcoSummary, summarise_ktco, topic_connectivity
from overlay.design.classes import Subscriptions
from overlay.eccentricity import diameters_in_memory
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.graph import Backend
from overlay.imported import import_overlay
from overlay.quality import (
    DiameterSummary,
    check_id_ranges,
    degree_summary,
    summarise_degrees,
    summarise_diameter_arrays,
    summarise_diameters,
    summarise_tccs,
    topic_components,
    topic_diameters,
)
from pipelines import ledger
from pipelines.lakehouse import Lakehouse, UnknownRunError, UnknownVersionError
from pipelines.progress import Progress

log = logging.getLogger(__name__)
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
METRIC_COLUMNS = (
    S.NODES,
    S.EDGES,
    S.AVG_DEGREE,
    S.MIN_DEGREE,
    S.MAX_DEGREE,
    S.TCC_EMPTY,
    S.TCC,
    S.TCC_COMPLETE,
    S.TCO_SUPPORT,
    S.SUBSCRIBED_TOPICS,
    S.TOPICS_CONNECTED,
    S.DIAMETER_MAX,
    S.DIAMETER_AVG,
    S.DIAMETER_METHOD,
)
DIAMETER_EXACT_LIMIT = 64
DIAMETER_SAMPLES = 8


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def check_run_id(run_id: str) -> None:
    if not RUN_ID_PATTERN.match(run_id):
        raise InputError(
            f"run id '{run_id}' is not allowed: use letters, digits, '_', '.', ':', '-' "
            "(at most 128, starting with a letter or digit)"
        )


def complete_run(lakehouse: Lakehouse, run_id: str) -> Row:
    """A run that can be read: complete, and built on an instance version still stored (the
    current one or an earlier one the retention keeps)."""
    run = lakehouse.run_row(run_id)
    if run[S.STATUS] != S.COMPLETE:
        raise InputError(
            f"run '{run_id}' is {run[S.STATUS]}, not complete"
            + (f" ({run[S.MESSAGE]})" if run[S.MESSAGE] else "")
            + (
                f": finish the delete with `python -m pipelines runs delete {run_id}`"
                if run[S.STATUS] == S.DELETED
                else ": finish it (run its command again), or redo it with `design ... --replace`"
            )
        )
    try:
        lakehouse.instance_version(run[S.INSTANCE], run[S.INGEST_ID])
    except UnknownVersionError as error:
        raise InputError(
            f"run '{run_id}' was built on a version of instance '{run[S.INSTANCE]}' that is no longer stored "
            f"({error}); redo it with `design ... --run-id {run_id} --replace`, or delete it with "
            f"`python -m pipelines runs delete {run_id}`"
        ) from None
    return run


def is_current(lakehouse: Lakehouse, run: Row) -> bool:
    """Whether a run was built on the instance version stored as current."""
    return lakehouse.instance_row(run[S.INSTANCE])[S.INGEST_ID] == run[S.INGEST_ID]


def run_import(
    spark: SparkSession,
    lakehouse: Lakehouse,
    instance: str,
    run_id: str,
    path: str,
    replace: bool = False,
) -> Row:
    """Store an overlay file as a complete run. The run id is claimed first (`pipelines.ledger`:
    a `running` row with an attempt token), so an import never writes links under a run id it
    does not own; the row turns `complete` last, in a write that checks the token, so a reader
    never sees a complete run without its links. `replace`: delete a stored run of this id first."""
    check_run_id(run_id)
    instance_row = lakehouse.instance_row(instance)
    if replace:
        with contextlib.suppress(UnknownRunError):  # nothing stored under the id: nothing to delete
            ledger.delete_run(lakehouse, run_id, ledger.OVERLAY.name)
    started, clock = _now(), time.monotonic()
    claimed = _claim_import(lakehouse, run_id, instance, instance_row[S.INGEST_ID], path, started)
    with ledger.failing(lakehouse, claimed, "import"):
        node_keys = lakehouse.instance_rows(S.NODE_KEYS, instance, instance_row[S.INGEST_ID]).select(S.KEY, S.ID)
        imported = import_overlay(spark, path, node_keys, lakehouse.lineage)
        t = imported.tally
        log.info(
            "import %s: %d rows = %d links + %d rejected + %d duplicates",
            run_id,
            t.read,
            t.accepted,
            t.rejected,
            t.duplicates,
        )
        lakehouse.write_run_rows(S.OVERLAY_EDGES, run_id, imported.edges)
        lakehouse.write_run_rows(S.REJECTED_OVERLAY_EDGES, run_id, imported.rejected)
        ledger.complete(
            lakehouse,
            claimed,
            **{
                S.FINISHED_AT: _now(),
                S.SECONDS: time.monotonic() - clock,
                S.EDGES: t.accepted,
                S.ROWS_READ: t.read,
                S.REJECTED: t.rejected,
                S.DUPLICATES: t.duplicates,
            },
        )
    return lakehouse.run_row(run_id)


def _claim_import(
    lakehouse: Lakehouse, run_id: str, instance: str, ingest_id: str, path: str, started: datetime
) -> ledger.Claim:
    """The import's run row, claimed (`ledger.claim`). A run id that exists is refused, unless it
    is an import into the same instance version that failed, or that did not finish and reads
    the same file (a crashed attempt): that one is taken over."""
    params = json.dumps({"path": path})
    record = {
        S.RUN_ID: run_id,
        S.INSTANCE: instance,
        S.INGEST_ID: ingest_id,
        S.ALGORITHM: "imported",
        S.PARAMS: params,
        S.STARTED_AT: started,
    }

    def unfinished_import(existing: Row) -> None:
        retry = (
            existing[S.ALGORITHM] == "imported"
            and (existing[S.INSTANCE], existing[S.INGEST_ID]) == (instance, ingest_id)
            and (existing[S.STATUS] == S.FAILED or (existing[S.STATUS] == S.RUNNING and existing[S.PARAMS] == params))
        )
        if not retry:
            raise InputError(
                f"run id '{run_id}' exists already: choose another --run-id, or delete it first with "
                f"`python -m pipelines runs delete {run_id}` (`runs show {run_id}` says what it is)"
            )

    return ledger.claim(
        lakehouse,
        ledger.OVERLAY,
        record,
        unfinished_import,
        reset={S.PARAMS: params, S.STARTED_AT: started},
        redo="or import it anew with --replace",
    )


def run_evaluate(spark: SparkSession, lakehouse: Lakehouse, run_id: str, backend: Backend = "auto", **options) -> dict:
    """Compute, store and return the quality metrics of one complete run (`options`: those of
    `evaluate_run`); the run row gets the new TcoSuppR (a design job sets it as it completes)."""
    metrics = evaluate_run(spark, lakehouse, complete_run(lakehouse, run_id), backend, **options)
    lakehouse.update_run(run_id, **{S.TCO_SUPPORT: metrics[S.TCO_SUPPORT]})
    return metrics


def run_inputs(lakehouse: Lakehouse, run: Row, instance: Row | None = None) -> tuple[Row, DataFrame, DataFrame]:
    """A run's instance version, its subscriptions (node_id, topic_id) and its links (u, v); its ids
    fit the (topic, node) packing of the topic subgraphs. `instance`: that version's row, when the
    caller holds it (a design job: one Delta read fewer)."""
    if instance is None or instance[S.INGEST_ID] != run[S.INGEST_ID]:
        instance = lakehouse.instance_version(run[S.INSTANCE], run[S.INGEST_ID])
    check_id_ranges(instance[S.NODES], instance[S.TOPICS])
    subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, run[S.INSTANCE], run[S.INGEST_ID]).select(
        S.NODE_ID, S.TOPIC_ID
    )
    edges = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run[S.RUN_ID]).select(S.U, S.V)
    return instance, subscriptions, edges


def run_ktco(spark: SparkSession, lakehouse: Lakehouse, run_id: str, k: int, progress: bool = True) -> KtcoSummary:
    """kTCO validity of one complete run for `k` (`overlay.connectivity`): per topic into
    `topic_connectivity`, the summary into `overlay_ktco`, each replacing only this (run, k)."""
    return store_ktco(spark, lakehouse, complete_run(lakehouse, run_id), k, progress)


def store_ktco(spark: SparkSession, lakehouse: Lakehouse, run: Row, k: int, progress: bool = True) -> KtcoSummary:
    """`run_ktco` on a run whose links the caller vouches for (a design job checking its own).
    `progress`: one step, the check's summary."""
    run_id = run[S.RUN_ID]
    _, subscriptions, edges = run_inputs(lakehouse, run)
    with Progress(f"evaluate {run_id}", enabled=progress, logger=log) as bar:
        per_topic = lakehouse.lineage.cut(topic_connectivity(subscriptions, edges, k))
        summary = summarise_ktco(per_topic, k)
        bar.step(
            f"kTCO: {summary.k_connected_topics} of {summary.topics} topics {k}-connected "
            f"(topic connectivity up to k = {k})",
            step=f"k={k}",
        )
    now = _now()
    lakehouse.write_run_rows(
        S.TOPIC_CONNECTIVITY,
        run_id,
        per_topic.withColumn(S.K, F.lit(k)).withColumn(S.COMPUTED_AT, F.lit(now)),
        within={S.K: k},
    )
    row = (run_id, k, summary.topics, summary.k_connected_topics, summary.share, summary.is_ktco, now)
    lakehouse.write_run_rows(S.OVERLAY_KTCO, run_id, local_frame(spark, [row], S.OVERLAY_KTCO.schema), within={S.K: k})
    per_topic.unpersist()
    return summary


def _certified_components(
    spark: SparkSession, lakehouse: Lakehouse, subscriptions, edges, nodes: int, driver_subscriptions=None
):
    """The certified TCC labels and summaries, or None when the instance exceeds the driver cap."""
    try:
        return certified_components(
            spark, subscriptions, edges, nodes, driver_subscriptions=driver_subscriptions, lineage=lakehouse.lineage
        )
    except InputError as error:
        log.info("topic components by connected components: %s", error)
        return None


def evaluate_run(
    spark: SparkSession,
    lakehouse: Lakehouse,
    run: Row,
    backend: Backend = "auto",
    diameter_exact_limit: int = DIAMETER_EXACT_LIMIT,
    diameter_samples: int = DIAMETER_SAMPLES,
    diameters: bool = True,
    certified: bool = False,
    driver_subscriptions: Subscriptions | None = None,
    progress: bool = True,
    engine_links: np.ndarray | None = None,
    instance: Row | None = None,
) -> dict:
    """Quality metrics of a run's stored links (the caller vouches that they are all there).

    `diameters=False` skips the topic diameters (the costliest metric at scale): they are stored
    as null with method "skipped" (not computed is not 0). `certified=True` labels the TCCs with a driver-side forest proven
    by one Spark query (`overlay.certified`, what a design job uses) instead of the GraphFrames
    connected components, falling back to those above the driver cap; `driver_subscriptions`: the
    design engine's driver copy of the instance's subscriptions, for the certificate to reuse.
    `engine_links` (k x 2, with `driver_subscriptions`): the links the design engine just stored;
    the components are then a BFS forest of them on the driver (`overlay.certified.topic_forest`),
    which the caller checks against the engine's own count, with no Spark job to prove them.
    `instance`: the row of the run's instance version, when the caller has read it."""
    run_id = run[S.RUN_ID]
    instance, subscriptions, edges = run_inputs(lakehouse, run, instance)
    with Progress(f"evaluate {run_id}", EVALUATE_STEPS, enabled=progress, logger=log) as bar:
        return _evaluate(
            spark,
            lakehouse,
            run,
            backend,
            diameter_exact_limit,
            diameter_samples,
            diameters,
            certified,
            driver_subscriptions,
            instance,
            subscriptions,
            edges,
            bar,
            engine_links,
        )


# The steps of an evaluation (`progress`): topic components, degrees, diameters, then the components
# and the metrics stored (at once); each with figures its summaries hold (no Spark job added for them).
EVALUATE_STEPS = 5


def _evaluate(
    spark,
    lakehouse,
    run,
    backend,
    diameter_exact_limit,
    diameter_samples,
    diameters,
    certified,
    driver_subscriptions,
    instance,
    subscriptions,
    edges,
    bar: Progress,
    engine_links=None,
) -> dict:
    run_id = run[S.RUN_ID]
    clock = time.monotonic()
    proven = (
        _certified_components(spark, lakehouse, subscriptions, edges, instance[S.NODES], driver_subscriptions)
        if certified and engine_links is None
        else None
    )
    forest = None
    if engine_links is not None and driver_subscriptions is not None:
        forest = topic_forest(driver_subscriptions, engine_links)
        method, tccs = "engine links' forest", forest.tcc_summary()
        degrees = degree_summary(engine_links, instance[S.NODES])
        components = spark.createDataFrame(forest.to_arrow().select([S.TOPIC_ID, S.NODE_ID, S.COMPONENT]))
    elif proven is not None:
        method, components, tccs, degrees = "certified forest", proven.components, proven.tccs, proven.degrees
    else:
        method = "connected components"
        components = lakehouse.lineage.cut(
            topic_components(subscriptions, edges, backend, lakehouse.lineage, instance[S.SUBSCRIPTIONS])
        )
        tccs = summarise_tccs(components)
    bar.step(
        f"topic components ({method}): {tccs.tcc} TCCs, {tccs.topics_connected} of {tccs.subscribed_topics} "
        f"topics connected, TcoSuppR {tccs.tco_support:.4f}, {time.monotonic() - clock:.1f}s",
        step="components",
        TCCs=tccs.tcc,
    )
    clock = time.monotonic()
    if proven is None and engine_links is None:
        degrees = summarise_degrees(edges, instance[S.NODES], backend, lakehouse.lineage)
    bar.step(
        f"degrees: {degrees.edges} links, average {degrees.avg_degree:.2f}, max {degrees.max_degree}, "
        f"{time.monotonic() - clock:.1f}s",
        step="degrees",
        max=degrees.max_degree,
    )
    clock = time.monotonic()
    if diameters and forest is not None:  # the engine's links and subscriptions: on the driver, no Spark job
        _, per_topic, exact = diameters_in_memory(
            forest.topics,
            forest.topic_offsets,
            forest.nodes,
            forest.link_offsets,
            forest.link_targets,
            diameter_exact_limit,
            diameter_samples,
        )
        diameters = summarise_diameter_arrays(per_topic, exact, diameter_exact_limit, diameter_samples)
    elif diameters:
        diameters = summarise_diameters(
            topic_diameters(
                subscriptions, edges, diameter_exact_limit, diameter_samples, backend=backend, lineage=lakehouse.lineage
            ),
            diameter_exact_limit,
            diameter_samples,
        )
    if diameters:
        bar.step(
            f"topic diameters: max {diameters.diameter_max}, average {diameters.diameter_avg:.2f} "
            f"({diameters.exact_topics} topics exact, {diameters.sampled_topics} sampled), {time.monotonic() - clock:.1f}s",
            step="diameters",
            max=diameters.diameter_max,
        )
    else:
        diameters = DiameterSummary(None, None, 0, 0, "skipped")
        bar.step("topic diameters skipped", step="diameters skipped")
    metrics = {
        S.RUN_ID: run_id,
        S.INSTANCE: run[S.INSTANCE],
        S.NODES: instance[S.NODES],
        S.EDGES: degrees.edges,
        S.AVG_DEGREE: degrees.avg_degree,
        S.MIN_DEGREE: degrees.min_degree,
        S.MAX_DEGREE: degrees.max_degree,
        S.TCC_EMPTY: tccs.tcc_empty,
        S.TCC: tccs.tcc,
        S.TCC_COMPLETE: tccs.tcc_complete,
        S.TCO_SUPPORT: tccs.tco_support,
        S.SUBSCRIBED_TOPICS: tccs.subscribed_topics,
        S.TOPICS_CONNECTED: tccs.topics_connected,
        S.DIAMETER_MAX: diameters.diameter_max,
        S.DIAMETER_AVG: diameters.diameter_avg,
        S.DIAMETER_METHOD: diameters.method,
        S.COMPUTED_AT: _now(),
    }
    row = local_frame(spark, [tuple(metrics[c] for c in S.OVERLAY_METRICS.columns)], S.OVERLAY_METRICS.schema)
    clock = time.monotonic()
    # One commit each, at once (`write_run_tables`); the run is not complete until its caller says so.
    lakehouse.write_run_tables(
        run_id,
        [(S.TOPIC_COMPONENTS, components), (S.OVERLAY_METRICS, row)],
        on_stored=lambda table: bar.step(
            f"{table.name.replace('_', ' ')} stored in {time.monotonic() - clock:.1f}s",
            step=f"{table.name} stored",
        ),
    )
    return metrics


def _check_writable(out: Path) -> None:
    parent = out.parent
    if not parent.is_dir():
        raise InputError(f"cannot write {out}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise InputError(f"cannot write {out}: permission denied")
    if out.is_dir():
        raise InputError(f"cannot write {out}: it is a folder")


def run_export(spark: SparkSession, lakehouse: Lakehouse, run_id: str, out: str) -> int:
    """Write a run's links as `u,v,added_order` in the user's node keys, to one local file."""
    target = Path(out).expanduser().resolve()
    kind = "parquet" if target.suffix.lower() == ".parquet" else "csv" if target.suffix.lower() == ".csv" else None
    if kind is None:
        raise InputError(f"--out must end in .csv or .parquet, got '{out}'")
    _check_writable(target)
    run = complete_run(lakehouse, run_id)
    keys = lakehouse.instance_rows(S.NODE_KEYS, run[S.INSTANCE], run[S.INGEST_ID]).select(S.KEY, S.ID)
    links = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run_id)
    for end in (S.U, S.V):
        links = links.join(keys.select(F.col(S.ID).alias(end), F.col(S.KEY).alias(end + "_key")), on=end)
    named = links.select(F.col(S.U + "_key").alias(S.U), F.col(S.V + "_key").alias(S.V), S.ADDED_ORDER).orderBy(
        S.ADDED_ORDER
    )
    staging = target.parent / f".{target.name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        writer = named.coalesce(1).write.mode("overwrite")
        if kind == "csv":
            writer.option("header", True).csv(str(staging))
        else:
            writer.parquet(str(staging))
        part = next(staging.glob(f"part-*.{kind}" if kind == "csv" else "part-*.parquet"))
        os.replace(part, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return int(run[S.EDGES] or 0)
