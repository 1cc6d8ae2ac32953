"""The route job: simulate a publication workload on a small-world overlay run and store what
happened (routing_runs, routing_publications, routing_deliveries, routing_load, routing_metrics).

The run row is claimed first (`pipelines.ledger`: status running, an attempt token). The
simulation is deterministic (seeded workload, deterministic protocols), so a rerun of an
unfinished routing run takes it over and simply recomputes it; a complete one is returned as it
is. Every result table is replaced per routing run in one commit, and the run row is flipped
last, in a write that checks the attempt token (a process whose run was taken over meanwhile
stops with RunTakenOver): `complete`, or `failed` with the first (publication, subscriber) pair
that was not delivered exactly once.

Latency: links have the latencies of the instance's `node_coordinates` (the seeded model of
`overlay.rappel.coordinates`, model seed `--model-seed`; stored the first time), so every
delivery has its latency beside its hops. `--feeds RAPPEL_RUN` routes on the inputs of a Rappel
run of the same instance (ComNet'09 Fig. 10): its coordinates, and its feeds publish in turn
(publication i is the (i mod F)-th feed's update; --publications F: one update each) from their
publishers, at which Scribe and iScribe root the feeds' trees (RP(t) = the publisher).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.classes import MAX_DRIVER_SUBSCRIPTIONS
from overlay.errors import InputError
from overlay.frames import arrow_at_once, local_frame
from pipelines import ledger
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now, check_run_id, complete_run
from pipelines.progress import Progress
from pipelines.rappel import PROTOCOL as RAPPEL
from pipelines.rappel import node_coordinates
from pipelines.spark import jobs_started, shuffle_partitions
from routing.engines import DEFAULT_ENGINE, ENGINES, MEMORY, SPARK_ENGINES
from routing.in_memory import placed_publications, route_in_memory, routing_tables, summarise_in_memory
from routing.network import AT, build_network
from routing.outcome import summarise
from routing.protocols import PROTOCOLS
from routing.workload import feed_publications, feed_publications_in_memory, publications, publications_in_memory

log = logging.getLogger(__name__)
__all__ = ["ENGINES", "PROTOCOLS", "RouteRequest", "RoutingError", "run_route"]


class RoutingError(RuntimeError):
    """A routing run delivered some publication not exactly once (the run is stored as failed)."""


@dataclass(frozen=True)
class RouteRequest:
    run_id: str
    protocol: str
    publications: int
    seed: int = 1
    feeds: str | None = None  # a Rappel run of the same instance: its publishers and coordinates
    model_seed: int = 1  # the latency model's seed (without --feeds)
    engine: str = DEFAULT_ENGINE  # how the supersteps run (`routing.engines`): not part of the stored request

    def check(self) -> None:
        """Every check that needs no Spark."""
        if self.engine not in ENGINES:
            raise InputError(f"unknown engine '{self.engine}'; choose one of {', '.join(ENGINES)}")
        if self.protocol not in PROTOCOLS:
            raise InputError(f"unknown protocol '{self.protocol}'; choose one of {', '.join(PROTOCOLS)}")
        if self.publications < 1:
            raise InputError(f"--publications must be positive, got {self.publications}")
        check_run_id(self.run_id)
        if self.feeds is not None:
            check_run_id(self.feeds)

    def inputs_key(self) -> tuple:
        """What the routing tables and the placed publications depend on: all but the protocol."""
        return self.run_id, self.publications, self.seed, self.feeds, self.model_seed

    def default_routing_run_id(self) -> str:
        feeds = f".feeds-{self.feeds}" if self.feeds else ""
        return f"{self.run_id}.{self.protocol}.p{self.publications}.s{self.seed}{feeds}"

    def params_json(self) -> str:
        """The request as stored; the later fields only when not at their defaults, so a routing
        run stored before them is still the same request. The engine is left out: both give the
        same run."""
        fields = asdict(self)
        del fields["engine"]
        if fields["feeds"] is None:
            del fields["feeds"]
        if fields["model_seed"] == 1:
            del fields["model_seed"]
        return json.dumps(fields, sort_keys=True)


def claim_run(lakehouse: Lakehouse, routing_run_id: str, request, instance: str) -> ledger.Claim:
    """The routing run's row claimed for this process (`ledger.claim`); a stored one must have the
    same request (a route or a dissemination request: both give their stored form as
    `params_json()`). A rerun of an unfinished one takes it over and recomputes it (a process
    still routing it can then no longer complete it)."""
    params = request.params_json()
    record = {
        S.ROUTING_RUN_ID: routing_run_id,
        S.RUN_ID: request.run_id,
        S.INSTANCE: instance,
        S.PROTOCOL: request.protocol,
        S.PUBLICATIONS: request.publications,
        S.SEED: request.seed,
        S.PARAMS: params,
        S.STARTED_AT: _now(),
    }

    def same_request(existing: Row) -> None:
        if existing[S.PARAMS] != params:
            raise InputError(
                f"routing run id '{routing_run_id}' exists with other settings ({existing[S.PARAMS]}): choose "
                f"another --routing-run-id, or delete it first with `python -m pipelines runs delete {routing_run_id}`"
            )

    return ledger.claim(lakehouse, ledger.ROUTING, record, same_request, reset={S.COUNTER_EXAMPLE: None})


def run_route(
    spark: SparkSession,
    lakehouse: Lakehouse,
    request: RouteRequest,
    routing_run_id: str | None = None,
    progress: bool = True,
    inputs: dict | None = None,
) -> Row:
    """Route one workload on one overlay run; returns the routing run row (complete or failed).
    `progress`: a line (or a bar) per tree hop and superstep, with the messages in flight and sent
    so far, then per table stored (`pipelines.progress`). `inputs` (optional): a dict the caller
    keeps between routing runs, in which the routing tables and the placed publications of an
    overlay run and workload are built once (`compare` routes five protocols on one overlay)."""
    request.check()
    routing_run_id = routing_run_id or request.default_routing_run_id()
    check_run_id(routing_run_id)
    run = complete_run(lakehouse, request.run_id)
    ring = lakehouse.read(S.RING).filter(F.col(S.RUN_ID) == request.run_id).select(S.NODE_ID, S.POSITION)
    if ring.limit(1).count() == 0:
        raise InputError(
            f"run '{request.run_id}' has no ring: routing needs a small-world overlay "
            "(design --algorithm swico --short ... --long ...)"
        )
    feeds = _feeds_run(lakehouse, request, run)
    jobs, commits = jobs_started(spark), lakehouse.commits  # this attempt's, from its claim on
    claimed = claim_run(lakehouse, routing_run_id, request, run[S.INSTANCE])
    if claimed.done:
        log.info("routing run %s is complete already", routing_run_id)
        return claimed.found
    clock = time.monotonic()
    with ledger.failing(lakehouse, claimed, "routing run"):
        key = request.inputs_key()
        in_memory = request.engine == MEMORY
        if inputs is not None and key in inputs:
            network, placed = inputs[key]
        else:
            build = _tables_and_workload if in_memory else _network_and_workload
            network, placed = build(spark, lakehouse, request, run, ring, feeds)
            if inputs is not None:
                inputs[key] = (network, placed)
        log.info("routing %d publications of run %s with %s", request.publications, request.run_id, request.protocol)
        with Progress(routing_run_id, unit="step", enabled=progress, logger=log) as bar:
            if in_memory:
                simulation = route_in_memory(network, placed, request.protocol, on_step=bar.on_step)
                outcome = summarise_in_memory(simulation, network, placed)
            else:
                simulation = SPARK_ENGINES[request.engine](
                    network,
                    placed,
                    request.protocol,
                    on_step=bar.on_step,
                    partitions=shuffle_partitions(spark),
                )
                outcome = summarise(simulation, network, placed)
            metrics = {**outcome.metrics, S.RUN_ID: request.run_id, S.PROTOCOL: request.protocol, S.COMPUTED_AT: _now()}
            columns = [c for c in S.ROUTING_METRICS.columns if c != S.ROUTING_RUN_ID]
            row = local_frame(
                spark,
                [tuple(metrics.get(c) for c in columns)],  # a spread's bytes: none here
                S.frame_schema(S.ROUTING_METRICS, tuple(columns)),
            )
            lakehouse.write_run_tables(
                routing_run_id,
                [
                    (S.ROUTING_PUBLICATIONS, _frame(spark, outcome.per_publication)),
                    (S.ROUTING_DELIVERIES, _frame(spark, outcome.deliveries)),
                    (S.ROUTING_LOAD, _frame(spark, outcome.load)),
                    (S.ROUTING_METRICS, row),
                ],
                key=S.ROUTING_RUN_ID,
                on_stored=lambda table: bar.step(f"stored {table.name}", stored=table.name),
            )
        failed = outcome.counter_example is not None
        ledger.complete(  # failed when not exactly once, in the same write that checks the attempt
            lakehouse,
            claimed,
            **{
                S.STATUS: S.FAILED if failed else S.COMPLETE,
                S.FINISHED_AT: _now(),
                S.SECONDS: time.monotonic() - clock,
                S.SUPERSTEPS: simulation.supersteps,
                S.MESSAGES: simulation.messages,
                S.COUNTER_EXAMPLE: outcome.counter_example,
                S.MESSAGE: "deliveries are not exactly once" if failed else None,
                S.SPARK_JOBS: jobs_started(spark) - jobs,
                S.DELTA_COMMITS: lakehouse.commits + 1 - commits,
            },
        )
        if failed:
            log.error("routing run %s: deliveries are not exactly once: %s", routing_run_id, outcome.counter_example)
    return ledger.run_row(lakehouse, ledger.ROUTING, routing_run_id)


def _network_and_workload(spark: SparkSession, lakehouse: Lakehouse, request: RouteRequest, run: Row, ring, feeds):
    """The overlay run's routing tables and the request's publications placed on its ring."""
    instance = lakehouse.instance_version(run[S.INSTANCE], run[S.INGEST_ID])
    subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, run[S.INSTANCE], run[S.INGEST_ID])
    fingers = lakehouse.read(S.FINGERS).filter(F.col(S.RUN_ID) == request.run_id)
    coordinates, roots, _ = _inputs(spark, lakehouse, request, run, instance, feeds)
    network = build_network(
        ring,
        fingers,
        subscriptions.select(S.NODE_ID, S.TOPIC_ID),
        instance[S.NODES],
        coordinates,
        roots,
        lakehouse.lineage,
    )
    if roots is None:
        workload = publications(subscriptions, request.publications, request.seed, lakehouse.lineage)
    else:
        workload = feed_publications(roots, request.publications, lakehouse.lineage)
    placed = lakehouse.lineage.cut(
        workload.join(network.positions.withColumnRenamed(S.NODE_ID, S.PUBLISHER), on=S.PUBLISHER).select(
            S.PUB_ID, S.TOPIC_ID, F.col(AT).alias(S.PUBLISHER)
        )
    )
    return network, placed


def _tables_and_workload(spark: SparkSession, lakehouse: Lakehouse, request: RouteRequest, run: Row, ring, feeds):
    """`_network_and_workload` for the memory regime: the routing tables as arrays and the placed
    publications as an Arrow table, read at once (each read is mostly a Spark job's latency)."""
    instance = lakehouse.instance_version(run[S.INSTANCE], run[S.INGEST_ID])
    subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, run[S.INSTANCE], run[S.INGEST_ID])
    _, roots, xy = _inputs(spark, lakehouse, request, run, instance, feeds)
    reads = {
        "ring": ring,
        "fingers": lakehouse.read(S.FINGERS).filter(F.col(S.RUN_ID) == request.run_id).select(S.NODE_ID, S.FINGER),
        "subscriptions": subscriptions.select(S.NODE_ID, S.TOPIC_ID).limit(MAX_DRIVER_SUBSCRIPTIONS + 1),
        **({} if roots is None else {"roots": roots}),
    }
    rows = arrow_at_once(reads)
    tables = routing_tables(
        rows["ring"],
        rows["fingers"],
        rows["subscriptions"],
        int(instance[S.NODES]),
        pa.table({S.NODE_ID: np.arange(len(xy), dtype=np.int64), S.X_MS: xy[:, 0], S.Y_MS: xy[:, 1]}),
        rows.get("roots"),
    )
    if roots is None:
        workload = publications_in_memory(rows["subscriptions"], request.publications, request.seed)
    else:
        workload = feed_publications_in_memory(rows["roots"], request.publications)
    return tables, placed_publications(tables, workload)


def _frame(spark: SparkSession, rows):
    """A result as a DataFrame: the memory regime's Arrow tables handed to Spark to be written."""
    return spark.createDataFrame(rows) if isinstance(rows, pa.Table) else rows


def _feeds_run(lakehouse: Lakehouse, request: RouteRequest, run: Row) -> Row | None:
    """With --feeds, that run: a complete Rappel run on the overlay run's instance version."""
    if request.feeds is None:
        return None
    feeds = complete_run(lakehouse, request.feeds)
    if feeds[S.ALGORITHM] != RAPPEL:
        raise InputError(f"--feeds takes a Rappel run (simulate rappel); '{request.feeds}' is {feeds[S.ALGORITHM]}")
    if (feeds[S.INSTANCE], feeds[S.INGEST_ID]) != (run[S.INSTANCE], run[S.INGEST_ID]):
        raise InputError(
            f"Rappel run '{request.feeds}' is on {feeds[S.INSTANCE]} (ingest {feeds[S.INGEST_ID]}), the overlay run "
            f"'{request.run_id}' on {run[S.INSTANCE]} (ingest {run[S.INGEST_ID]}): they must share an instance version"
        )
    return feeds


def _inputs(
    spark: SparkSession, lakehouse: Lakehouse, request: RouteRequest, run: Row, instance: Row, feeds: Row | None
):
    """The nodes' coordinates (node_id, x_ms, y_ms), with --feeds each feed's publisher
    (topic_id, node_id) of that Rappel run (with its model seed), and the coordinates by node id
    as the model gives them (the stored rows' values)."""
    model_seed, roots = request.model_seed, None
    if feeds is not None:
        model_seed = json.loads(feeds[S.PARAMS])["request"]["model_seed"]
        roots = (
            lakehouse.read(S.FEED_PUBLISHERS)
            .filter((F.col(S.RUN_ID) == request.feeds) & (F.col(S.SUBSCRIBERS) > 0))
            .select(S.TOPIC_ID, F.col(S.PUBLISHER).alias(S.NODE_ID))
        )
    xy = node_coordinates(spark, lakehouse, run[S.INSTANCE], run[S.INGEST_ID], model_seed, int(instance[S.NODES]))
    coordinates = (
        lakehouse.read(S.NODE_COORDINATES)
        .filter(
            (F.col(S.INSTANCE) == run[S.INSTANCE])
            & (F.col(S.INGEST_ID) == run[S.INGEST_ID])
            & (F.col(S.MODEL_SEED) == model_seed)
        )
        .select(S.NODE_ID, S.X_MS, S.Y_MS)
    )
    return coordinates, roots, xy
