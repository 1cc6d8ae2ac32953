"""The route job: simulate a publication workload on a small-world overlay run and store what
happened (routing_runs, routing_publications, routing_deliveries, routing_load, routing_metrics).

The run row is inserted first (status running). The simulation is deterministic (seeded workload,
deterministic protocols), so a rerun of an unfinished routing run simply recomputes it; a
complete one is returned as it is. Every result table is replaced per routing run in one commit,
and the run row is flipped last: `complete`, or `failed` with the first (publication,
subscriber) pair that was not delivered exactly once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from dataclasses import asdict, dataclass

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.frames import local_frame
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now, check_run_id, complete_run
from pipelines.progress import Progress
from pipelines.spark import shuffle_partitions
from routing.network import AT, build_network
from routing.outcome import summarise
from routing.protocols import PROTOCOLS
from routing.simulate import simulate
from routing.workload import publications

log = logging.getLogger(__name__)
__all__ = ["PROTOCOLS", "RouteRequest", "RoutingError", "run_route"]
ROUTING = {"table": S.ROUTING_RUNS, "key": S.ROUTING_RUN_ID}


class RoutingError(RuntimeError):
    """A routing run delivered some publication not exactly once (the run is stored as failed)."""


@dataclass(frozen=True)
class RouteRequest:
    run_id: str
    protocol: str
    publications: int
    seed: int = 1

    def check(self) -> None:
        """Every check that needs no Spark."""
        if self.protocol not in PROTOCOLS:
            raise InputError(f"unknown protocol '{self.protocol}'; choose one of {', '.join(PROTOCOLS)}")
        if self.publications < 1:
            raise InputError(f"--publications must be positive, got {self.publications}")
        check_run_id(self.run_id)

    def default_routing_run_id(self) -> str:
        return f"{self.run_id}.{self.protocol}.p{self.publications}.s{self.seed}"


def claim_run(lakehouse: Lakehouse, routing_run_id: str, request: RouteRequest, instance: str) -> Row | None:
    """Insert the routing run row; an existing one must have the same request."""
    params = json.dumps(asdict(request), sort_keys=True)
    record = {
        S.ROUTING_RUN_ID: routing_run_id, S.RUN_ID: request.run_id, S.INSTANCE: instance,
        S.PROTOCOL: request.protocol, S.PUBLICATIONS: request.publications, S.SEED: request.seed,
        S.PARAMS: params, S.STATUS: S.RUNNING, S.STARTED_AT: _now(),
    }
    if lakehouse.insert_run(record, **ROUTING):
        return None
    existing = lakehouse.run_row(routing_run_id, **ROUTING)
    if existing[S.PARAMS] != params:
        raise InputError(
            f"routing run id '{routing_run_id}' exists with other settings ({existing[S.PARAMS]}): "
            f"choose another --routing-run-id, or delete it first with `python -m pipelines runs delete {routing_run_id}`"
        )
    return existing


@contextlib.contextmanager
def failing_routing_run(lakehouse: Lakehouse, routing_run_id: str, job: str):
    """An error in the body marks the routing run failed with its text and goes on up."""
    try:
        yield
    except BaseException as error:
        if not isinstance(error, KeyboardInterrupt):
            log.error("%s %s failed: %s", job, routing_run_id, error)
        try:
            lakehouse.update_run(
                routing_run_id, **ROUTING, **{S.STATUS: S.FAILED, S.MESSAGE: f"{type(error).__name__}: {error}"[:2000]}
            )
        except Exception:  # noqa: BLE001 - keep the original error
            log.exception("could not mark %s %s failed", job, routing_run_id)
        raise


def run_route(
    spark: SparkSession, lakehouse: Lakehouse, request: RouteRequest, routing_run_id: str | None = None,
    progress: bool = True,
) -> Row:
    """Route one workload on one overlay run; returns the routing run row (complete or failed).
    `progress`: a line (or a bar) per tree hop and superstep, with the messages in flight and sent
    so far, then per table stored (`pipelines.progress`)."""
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
    existing = claim_run(lakehouse, routing_run_id, request, run[S.INSTANCE])
    if existing is not None and existing[S.STATUS] == S.COMPLETE:
        log.info("routing run %s is complete already", routing_run_id)
        return existing
    clock = time.monotonic()
    with failing_routing_run(lakehouse, routing_run_id, "routing run"):
        lakehouse.update_run(routing_run_id, **ROUTING, **{S.STATUS: S.RUNNING, S.MESSAGE: None, S.COUNTER_EXAMPLE: None})
        instance = lakehouse.instance_version(run[S.INSTANCE], run[S.INGEST_ID])
        subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, run[S.INSTANCE], run[S.INGEST_ID])
        fingers = lakehouse.read(S.FINGERS).filter(F.col(S.RUN_ID) == request.run_id)
        network = build_network(ring, fingers, subscriptions.select(S.NODE_ID, S.TOPIC_ID), instance[S.NODES])
        workload = publications(subscriptions, request.publications, request.seed)
        placed = (
            workload.join(network.positions.withColumnRenamed(S.NODE_ID, S.PUBLISHER), on=S.PUBLISHER)
            .select(S.PUB_ID, S.TOPIC_ID, F.col(AT).alias(S.PUBLISHER))
            .localCheckpoint(eager=True)
        )
        log.info("routing %d publications of run %s with %s", request.publications, request.run_id, request.protocol)
        with Progress(routing_run_id, unit="step", enabled=progress, logger=log) as bar:
            simulation = simulate(
                network, placed, request.protocol, on_step=bar.on_step, partitions=shuffle_partitions(spark),
            )
            outcome = summarise(simulation, network, placed)
            for table, frame in (
                (S.ROUTING_PUBLICATIONS, outcome.per_publication),
                (S.ROUTING_DELIVERIES, outcome.deliveries),
                (S.ROUTING_LOAD, outcome.load),
            ):
                lakehouse.write_run_rows(table, routing_run_id, frame, key=S.ROUTING_RUN_ID)
                bar.step(f"stored {table.name}", stored=table.name)
        metrics = {**outcome.metrics, S.RUN_ID: request.run_id, S.PROTOCOL: request.protocol, S.COMPUTED_AT: _now()}
        columns = [c for c in S.ROUTING_METRICS.columns if c != S.ROUTING_RUN_ID]
        row = local_frame(spark, [tuple(metrics[c] for c in columns)], S.frame_schema(S.ROUTING_METRICS, tuple(columns)))
        lakehouse.write_run_rows(S.ROUTING_METRICS, routing_run_id, row, key=S.ROUTING_RUN_ID)
        failed = outcome.counter_example is not None
        lakehouse.update_run(
            routing_run_id, **ROUTING, **{
                S.STATUS: S.FAILED if failed else S.COMPLETE, S.FINISHED_AT: _now(),
                S.SECONDS: time.monotonic() - clock, S.SUPERSTEPS: simulation.supersteps,
                S.MESSAGES: simulation.messages, S.COUNTER_EXAMPLE: outcome.counter_example,
                S.MESSAGE: "deliveries are not exactly once" if failed else None,
            },
        )
        if failed:
            log.error("routing run %s: deliveries are not exactly once: %s", routing_run_id, outcome.counter_example)
    return lakehouse.run_row(routing_run_id, **ROUTING)
