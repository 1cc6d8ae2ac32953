"""Runs as first-class objects: list them, show one, delete one with everything derived from it.

Every kind of run is a row in its own ledger table, keyed by its id, and owns rows in other
tables keyed the same way (`pipelines.ledger.RunKind`). An id is looked up in every kind's
table, never guessed from its shape. Deleting (`pipelines.ledger.delete_run`) is resumable and
atomic for readers:

1. one commit sets the run's status to `deleted` (and clears its attempt token, so a process
   still running it stops at its next ownership check): from then on no reader that asks for
   complete runs (evaluate, export, route, resilience, the report, workflow skips) sees it;
2. the runs derived from it are deleted the same way (the routing runs on an overlay, and the
   comparisons that include a deleted routing run);
3. its rows go from every table it owns, one commit per table;
4. its row goes last, so running the same delete again finishes an interrupted one.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.summaries import BUDGET, with_budget
from pipelines.console import format_table
from pipelines.lakehouse import Lakehouse
from pipelines.ledger import KINDS as KINDS  # the kinds `runs --kind` takes
from pipelines.ledger import OVERLAY, ROUTING, RunKind, find_run
from pipelines.ledger import delete_run as delete_run  # `runs delete`: the ledger deletes

log = logging.getLogger(__name__)


KIND, AGE, VERSION, ON_RUN, QUALITY = "kind", "age", "version", "on_run", "quality"
LIST_COLUMNS = (KIND, S.RUN_ID, S.INSTANCE, VERSION, "made_by", S.STATUS, BUDGET, S.EDGES, QUALITY, S.SECONDS, AGE)
CURRENT, EARLIER, DROPPED = "current", "earlier", "dropped"


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def age(started: datetime | None, now: datetime | None = None) -> str:
    """How long ago, in the largest unit that says it: 45 s, 12 min, 3 h, 4 d."""
    if started is None:
        return ""
    seconds = max(((now or _now()) - started).total_seconds(), 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


# Listing ---------------------------------------------------------------------------------


def _versions(lakehouse: Lakehouse) -> DataFrame:
    """(instance, ingest_id, version): current, earlier (kept) for every stored version."""
    current = lakehouse.read(S.INSTANCES).select(S.INSTANCE, F.col(S.INGEST_ID).alias("_current"))
    kept = lakehouse.read(S.INSTANCE_VERSIONS).select(S.INSTANCE, S.INGEST_ID)
    return (
        kept.unionByName(current.select(S.INSTANCE, F.col("_current").alias(S.INGEST_ID)))
        .distinct()
        .join(current, on=S.INSTANCE)
        .select(
            S.INSTANCE,
            S.INGEST_ID,
            F.when(F.col(S.INGEST_ID) == F.col("_current"), F.lit(CURRENT)).otherwise(F.lit(EARLIER)).alias(VERSION),
        )
    )


def runs_on_dropped_versions(lakehouse: Lakehouse) -> list[str]:
    """The overlay runs built on an instance version the retention dropped (listed `dropped`,
    unreadable), except those still running; `maintain` deletes them. Collected: the runs of
    the versions dropped since the last `maintain`, a few per version."""
    if not all(lakehouse.exists(t) for t in (S.OVERLAY_RUNS, S.INSTANCES, S.INSTANCE_VERSIONS)):
        return []
    stored = _versions(lakehouse).select(S.INSTANCE, S.INGEST_ID)
    runs = lakehouse.read(S.OVERLAY_RUNS).filter(F.col(S.STATUS) != S.RUNNING)  # ingest_id: never null
    dropped = runs.join(stored, on=[S.INSTANCE, S.INGEST_ID], how="left_anti").select(S.RUN_ID)
    return sorted(r[S.RUN_ID] for r in dropped.collect())


def _overlay_runs(lakehouse: Lakehouse) -> DataFrame:
    runs = with_budget(lakehouse.read(S.OVERLAY_RUNS))
    return runs.join(_versions(lakehouse), on=[S.INSTANCE, S.INGEST_ID], how="left").select(
        F.lit(OVERLAY.name).alias(KIND),
        S.RUN_ID,
        S.INSTANCE,
        F.coalesce(F.col(VERSION), F.lit(DROPPED)).alias(VERSION),
        F.col(S.ALGORITHM).alias("made_by"),
        S.STATUS,
        BUDGET,
        S.EDGES,
        F.format_string("TcoSuppR %.4f", S.TCO_SUPPORT).alias(QUALITY),
        S.SECONDS,
        S.STARTED_AT,
    )


def _routing_runs(lakehouse: Lakehouse) -> DataFrame:
    overlays = lakehouse.read(S.OVERLAY_RUNS).select(S.RUN_ID, S.INGEST_ID)
    metrics = lakehouse.read(S.ROUTING_METRICS).select(S.ROUTING_RUN_ID, S.ROUTING_OVERHEAD, S.DELIVERY_RATIO)
    runs = lakehouse.read(S.ROUTING_RUNS).join(overlays, on=S.RUN_ID, how="left")
    return (
        runs.join(_versions(lakehouse), on=[S.INSTANCE, S.INGEST_ID], how="left")
        .join(metrics, on=S.ROUTING_RUN_ID, how="left")
        .select(
            F.lit(ROUTING.name).alias(KIND),
            F.col(S.ROUTING_RUN_ID).alias(S.RUN_ID),
            S.INSTANCE,
            F.coalesce(F.col(VERSION), F.lit(DROPPED)).alias(VERSION),
            F.col(S.PROTOCOL).alias("made_by"),
            S.STATUS,
            F.concat(F.lit("on "), F.col(S.RUN_ID)).alias(BUDGET),
            F.lit(None).cast("long").alias(S.EDGES),
            F.when(
                F.col(S.DELIVERY_RATIO).isNotNull(),
                F.format_string("overhead %d msgs, delivery %.3f", S.ROUTING_OVERHEAD, S.DELIVERY_RATIO),
            ).alias(QUALITY),
            S.SECONDS,
            S.STARTED_AT,
        )
    )


@dataclass(frozen=True)
class RunFilter:
    instance: str | None = None
    made_by: str | None = None
    status: str | None = None
    kind: str | None = None
    limit: int = 100


def list_runs(lakehouse: Lakehouse, which: RunFilter = RunFilter()) -> tuple[list[dict], bool]:
    """The runs that pass the filter, newest first, at most `limit` of them (the listing the
    command prints: only these rows reach the driver), and whether more passed."""
    frames = [
        build(lakehouse)
        for kind, build in ((OVERLAY, _overlay_runs), (ROUTING, _routing_runs))
        if which.kind in (None, kind.name) and lakehouse.exists(kind.table)
    ]
    if not frames:
        return [], False
    runs = frames[0]
    for frame in frames[1:]:
        runs = runs.unionByName(frame)
    for column, value in ((S.INSTANCE, which.instance), ("made_by", which.made_by), (S.STATUS, which.status)):
        if value is not None:
            runs = runs.filter(F.col(column) == value)
    rows = runs.orderBy(F.col(S.STARTED_AT).desc(), S.RUN_ID).limit(which.limit + 1).collect()
    now = _now()
    listed = [{**row.asDict(), AGE: age(row[S.STARTED_AT], now)} for row in rows[: which.limit]]
    return listed, len(rows) > which.limit


# Showing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunDetails:
    kind: RunKind
    row: dict
    params: dict
    sections: dict[str, list[dict]]  # titled tables: metrics, rounds, routing runs, comparisons...


def show_run(lakehouse: Lakehouse, run_id: str, kind: str | None = None, rounds: int = 10) -> RunDetails:
    """One run: its row, its parameters, and what it owns (bounded: the last `rounds` rounds)."""
    found, row = find_run(lakehouse, run_id, kind)
    record = row.asDict()
    params = json.loads(record.pop(S.PARAMS) or "{}")
    sections: dict[str, list[dict]] = {}

    def rows_of(table: S.TableSpec, key: str, value: str, order=None, limit: int | None = None) -> list[dict]:
        if not lakehouse.exists(table):
            return []
        frame = lakehouse.read(table).filter(F.col(key) == value)
        if order is not None:
            frame = frame.orderBy(order)
        if limit is not None:
            frame = frame.limit(limit)
        return [r.asDict() for r in frame.collect()]

    if found is OVERLAY:
        try:
            version = lakehouse.instance_version(record[S.INSTANCE], record[S.INGEST_ID])
            current = lakehouse.instance_row(record[S.INSTANCE])[S.INGEST_ID]
            record[VERSION] = CURRENT if current == record[S.INGEST_ID] else EARLIER
            record[S.NODES] = version[S.NODES]
        except LookupError:
            record[VERSION] = DROPPED
        sections["metrics"] = rows_of(S.OVERLAY_METRICS, S.RUN_ID, run_id)
        sections["kTCO checks"] = rows_of(S.OVERLAY_KTCO, S.RUN_ID, run_id, order=S.K)
        sections["changes against an earlier run (day two)"] = rows_of(S.OVERLAY_CHANGES, S.RUN_ID, run_id)
        last = rows_of(S.OVERLAY_ROUNDS, S.RUN_ID, run_id, order=F.col(S.ROUND).desc(), limit=rounds)
        sections[f"rounds (the last {rounds})"] = sorted(last, key=lambda r: r[S.ROUND])
        sections["routing runs on it"] = rows_of(S.ROUTING_RUNS, S.RUN_ID, run_id, order=S.ROUTING_RUN_ID)
    else:
        sections["metrics"] = rows_of(S.ROUTING_METRICS, S.ROUTING_RUN_ID, run_id)
        sections["comparisons that include it"] = rows_of(S.ROUTING_COMPARISON, S.ROUTING_RUN_ID, run_id)
    return RunDetails(found, record, params, sections)


def print_details(details: RunDetails) -> None:
    row = details.row
    print(f"{details.kind.name} run {row[details.kind.key]}")
    print(format_table([{"field": k, "value": v} for k, v in row.items()], ["field", "value"]))
    print("\nparameters:\n" + json.dumps(details.params, indent=2, sort_keys=True))
    for title, rows in details.sections.items():
        if rows:
            columns = [c for c in rows[0] if c not in (details.kind.key, S.RUN_ID) or title.startswith("routing")]
            print(f"\n{title}:")
            print(format_table(rows, columns))
