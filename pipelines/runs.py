"""Runs as first-class objects: list them, show one, delete one with everything derived from it.

Every kind of run is a row in its own table, keyed by its id, and owns rows in other tables
keyed the same way (`RunKind`). An id is looked up in every kind's table, never guessed from its
shape. Deleting is resumable and atomic for readers:

1. one commit sets the run's status to `deleted` (and clears a design's attempt token, so a
   process still designing it stops at its next ownership check): from then on no reader that
   asks for complete runs (evaluate, export, route, resilience, the report, workflow skips) sees
   it;
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

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.summaries import BUDGET, with_budget
from pipelines.console import format_table
from pipelines.lakehouse import Lakehouse, UnknownRunError, sql_literal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunKind:
    """A kind of run: its table and key, what made it (algorithm or protocol), the tables whose
    rows are its own, and the column of its instance version (None: it has none of its own)."""

    name: str
    table: S.TableSpec
    key: str
    maker: str
    owned: tuple[S.TableSpec, ...]


OVERLAY = RunKind(
    "overlay",
    S.OVERLAY_RUNS,
    S.RUN_ID,
    S.ALGORITHM,
    (
        S.OVERLAY_EDGES,
        S.OVERLAY_ROUNDS,
        S.REJECTED_OVERLAY_EDGES,
        S.TOPIC_COMPONENTS,
        S.OVERLAY_METRICS,
        S.TOPIC_CONNECTIVITY,
        S.OVERLAY_KTCO,
        S.RESILIENCE,
        S.RING,
        S.FINGERS,
        *S.GOSSIP_TABLES,
        *S.RAPPEL_RUN_TABLES,
    ),
)
ROUTING = RunKind(
    "routing",
    S.ROUTING_RUNS,
    S.ROUTING_RUN_ID,
    S.PROTOCOL,
    (S.ROUTING_PUBLICATIONS, S.ROUTING_DELIVERIES, S.ROUTING_LOAD, S.ROUTING_METRICS, S.DISSEMINATION_COMPLETION),
)
KINDS = {kind.name: kind for kind in (OVERLAY, ROUTING)}

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


def find_run(lakehouse: Lakehouse, run_id: str, kind: str | None = None) -> tuple[RunKind, Row]:
    """The kind and row of the run with this id, looked up in every kind's table (or in `kind`'s)."""
    kinds = [KINDS[kind]] if kind is not None else list(KINDS.values())
    found = []
    for candidate in kinds:
        if lakehouse.exists(candidate.table):
            row = lakehouse.read(candidate.table).filter(F.col(candidate.key) == run_id).first()
            if row is not None:
                found.append((candidate, row))
    if not found:
        raise UnknownRunError(
            f"no {kind or 'overlay or routing'} run '{run_id}'; list them with `python -m pipelines runs`"
        )
    if len(found) > 1:
        raise InputError(f"'{run_id}' names runs of several kinds ({', '.join(k.name for k, _ in found)}): add --kind")
    return found[0]


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
        last = rows_of(S.OVERLAY_ROUNDS, S.RUN_ID, run_id, order=F.col(S.ROUND).desc(), limit=rounds)
        sections[f"rounds (the last {rounds})"] = sorted(last, key=lambda r: r[S.ROUND])
        sections["routing runs on it"] = rows_of(S.ROUTING_RUNS, S.RUN_ID, run_id, order=S.ROUTING_RUN_ID)
    else:
        sections["metrics"] = rows_of(S.ROUTING_METRICS, S.ROUTING_RUN_ID, run_id)
        sections["comparisons that include it"] = rows_of(S.ROUTING_COMPARISON, S.ROUTING_RUN_ID, run_id)
    return RunDetails(found, record, params, sections)


# Deleting --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeletedRun:
    kind: str
    run_id: str
    rows: dict[str, int]  # rows deleted per table (the run's own row included)


def delete_run(lakehouse: Lakehouse, run_id: str, kind: str | None = None) -> list[DeletedRun]:
    """Delete a run and every run and row derived from it (see module doc); the runs deleted,
    dependents first."""
    found, row = find_run(lakehouse, run_id, kind)
    if row[S.STATUS] != S.DELETED:
        _mark_deleted(lakehouse, found, run_id)
    deleted: list[DeletedRun] = []
    if found is OVERLAY and lakehouse.exists(S.ROUTING_RUNS):
        routed = lakehouse.read(S.ROUTING_RUNS).filter(F.col(S.RUN_ID) == run_id)
        for dependent in sorted(r[S.ROUTING_RUN_ID] for r in routed.select(S.ROUTING_RUN_ID).collect()):
            deleted += delete_run(lakehouse, dependent, ROUTING.name)
    counts: dict[str, int] = {}
    if found is ROUTING and lakehouse.exists(S.ROUTING_COMPARISON):
        counts[S.ROUTING_COMPARISON.name] = _delete_comparisons_with(lakehouse, run_id)
    for table in found.owned:
        if lakehouse.exists(table):
            counts[table.name] = _delete_where(lakehouse, table, found.key, run_id)
    counts[found.table.name] = _delete_where(lakehouse, found.table, found.key, run_id)
    log.info("deleted %s run %s: %s", found.name, run_id, counts)
    return [*deleted, DeletedRun(found.name, run_id, {t: n for t, n in counts.items() if n})]


def _mark_deleted(lakehouse: Lakehouse, kind: RunKind, run_id: str) -> None:
    values: dict[str, object] = {S.STATUS: S.DELETED, S.MESSAGE: f"deleted at {_now():%Y-%m-%d %H:%M:%S} UTC"}
    if S.ATTEMPT in kind.table.columns:
        values[S.ATTEMPT] = None  # a design still running stops at its next ownership check
    lakehouse.update_run(run_id, table=kind.table, key=kind.key, **values)


def _delete_where(lakehouse: Lakehouse, table: S.TableSpec, key: str, value: str) -> int:
    return lakehouse.delete_rows(table, f"{key} = {sql_literal(value)}")


def _delete_comparisons_with(lakehouse: Lakehouse, routing_run_id: str) -> int:
    """Every comparison that includes the routing run goes whole (a comparison is all its systems)."""
    ids = [
        r[S.COMPARISON_ID]
        for r in lakehouse.read(S.ROUTING_COMPARISON)
        .filter(F.col(S.ROUTING_RUN_ID) == routing_run_id)
        .select(S.COMPARISON_ID)
        .distinct()
        .collect()
    ]  # the comparisons one routing run is part of: a handful
    if not ids:
        return 0
    return lakehouse.delete_rows(S.ROUTING_COMPARISON, f"{S.COMPARISON_ID} IN ({', '.join(map(sql_literal, ids))})")


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
