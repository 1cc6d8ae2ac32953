"""The lakehouse: Delta tables under one root folder, one sub-folder per table.

Replacing an instance is atomic for readers that go through `instances` (as everything here
does), and never touches other instances:

1. every row of the new version is appended with a fresh, time-ordered `ingest_id`;
2. one MERGE into `instances` points the instance at the new `ingest_id` (the commit point; it
   only moves forward, so of two concurrent ingests of one name the later-started one wins; one
   of the same source and parameters committed while this one ran stands, and this one yields);
3. the version is recorded in `instance_versions` (earlier ones marked superseded), versions
   beyond the retention (`Retention`) are dropped, and their rows, and those of crashed attempts,
   are deleted.

A reader joins on one `ingest_id` (`instance_rows`): the current one, or the version a run was
built on (`instance_version`), so it sees a version whole; earlier versions stay readable until
the retention drops them. Instance tables are partitioned by `instance`, so writes to different
instances never conflict; conflicting commits on one instance are retried.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

import delta.exceptions as delta_errors
import pandas as pd
from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.gossip.cycles import AUTO, CycleRegime
from overlay.instance import InstanceFrames
from overlay.instance.stats import instance_counts
from overlay.lineage import LOCAL, Lineage
from overlay.progress import OnStep, report

log = logging.getLogger(__name__)
T = TypeVar("T")
COMMIT_ATTEMPTS = 8
# Every commit conflict delta-spark raises (they share no Python base class).
COMMIT_CONFLICTS = tuple(getattr(delta_errors, name) for name in delta_errors.__all__)
# What a process that loses a race to create a table (or to add columns to it) sees, besides the
# commit conflicts (ProtocolChangedException: both wrote version 0). Measured with two processes
# creating every table of a fresh lakehouse at once: the winner has made `_delta_log` but not
# committed yet, so the loser finds a table with no version, or a non-empty folder.
CREATE_RACES = (
    "DELTA_TABLE_NOT_FOUND",
    "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION",
    "DELTA_TABLE_ALREADY_EXISTS",
    "TABLE_ALREADY_EXISTS",
    "FIELD_ALREADY_EXISTS",  # two processes adding the same new column
)
CREATE_ATTEMPTS = 10  # about 25 s of waiting for the winner's first commit


class UnknownInstanceError(LookupError):
    """No instance of that name in the lakehouse; the message lists the known ones."""


class UnknownTableError(LookupError):
    """The table has not been written yet in this lakehouse."""


class UnknownRunError(LookupError):
    """No overlay run with that id."""


class UnknownVersionError(LookupError):
    """An instance version no longer stored (dropped by the retention)."""


@dataclass(frozen=True)
class Retention:
    """How many instance versions ingest keeps (the current one included), and for how many days
    after a newer one replaced them; None: no limit of that kind. A version goes when either
    limit says so; the current version always stays."""

    versions: int | None = 5
    days: float | None = None

    def kept(self, current: str, versions: list[tuple[str, datetime | None]]) -> set[str]:
        """The ingest ids kept, of (ingest_id, superseded_at) pairs."""
        now = datetime.now(UTC).replace(tzinfo=None)
        older = sorted((v for v in versions if v[0] < current), reverse=True)
        if self.versions is not None:
            older = older[: max(self.versions - 1, 0)]
        if self.days is not None:
            older = [v for v in older if v[1] is None or (now - v[1]).total_seconds() <= self.days * 86400]
        return {current, *(v[0] for v in older), *(v[0] for v in versions if v[0] > current)}

    def __str__(self) -> str:
        parts = [
            f"{self.versions} versions" if self.versions is not None else None,
            f"{self.days:g} days" if self.days is not None else None,
        ]
        return "keep " + (" and ".join(p for p in parts if p) or "everything")


@dataclass(frozen=True)
class RetainedVersions:
    kept: list[str]
    dropped: list[str]


def _condition(error: Exception) -> str:
    """Spark's error condition (`DELTA_TABLE_NOT_FOUND`, ...), else the exception's class name."""
    getter = getattr(error, "getCondition", None)
    return (getter() if getter is not None else None) or type(error).__name__


def _lost_create_race(error: Exception) -> bool:
    return isinstance(error, COMMIT_CONFLICTS) or _condition(error) in CREATE_RACES


def _with_retries(action: Callable[[], T], what: str) -> T:
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        try:
            return action()
        except COMMIT_CONFLICTS as error:
            if attempt == COMMIT_ATTEMPTS:
                raise
            wait = 0.2 * 2**attempt
            log.info("%s: concurrent commit (%s); retrying in %.1fs", what, type(error).__name__, wait)
            time.sleep(wait)
    raise AssertionError("unreachable")


def new_ingest_id() -> str:
    """Sortable by start time, unique across processes."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + uuid.uuid4().hex[:8]


def sql_literal(value) -> str:
    """A SQL literal for a replaceWhere condition: ints, floats (as exact doubles) and strings."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"no SQL literal for {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"CAST('{value!r}' AS DOUBLE)"
    return "'" + value.replace("'", "''") + "'"


class Lakehouse:
    def __init__(self, spark: SparkSession, root: str | Path, lineage: Lineage = LOCAL, cycles: CycleRegime = AUTO):
        """`lineage`: how the jobs on this lakehouse cut their iterative jobs' lineage
        (`pipelines.spark.lineage_for`: reliable checkpoints on a cluster); `cycles`: where their
        simulations' cycles run (`pipelines.spark.cycle_regime_for`)."""
        self.spark = spark
        self.root = str(root)
        self.lineage = lineage
        self.cycles = cycles
        self._commits = 0  # Delta commits this object made (each is latency: jobs count them)
        self._counting = threading.Lock()
        # Tables this object has created or checked against their declared schema: a later
        # `ensure` of one skips the Delta reads (the lab never drops a table it made).
        self._ensured: set[tuple[str, str]] = set()

    @property
    def commits(self) -> int:
        """Delta commits made through this lakehouse object so far."""
        return self._commits

    def _committed(self) -> None:
        with self._counting:
            self._commits += 1

    def _commit(self, action: Callable[[], T], what: str) -> T:
        """One Delta commit (retried on a conflict), counted."""
        result = _with_retries(action, what)
        self._committed()
        return result

    def path(self, table: S.TableSpec) -> str:
        return f"{self.root.rstrip('/')}/{table.name}"

    def exists(self, table: S.TableSpec) -> bool:
        return DeltaTable.isDeltaTable(self.spark, self.path(table))

    def ensure(self, table: S.TableSpec) -> DeltaTable:
        """The table, created with its declared schema if it is not there yet.

        Safe when other processes create the same table at once (two jobs on a fresh lakehouse):
        the first commit creates it, and a creator that loses the race (`CREATE_RACES`) waits a
        moment and uses the winner's table."""
        key = (table.name, table.schema.json())
        for attempt in range(1, CREATE_ATTEMPTS + 1):
            try:
                if self.exists(table):
                    existing = DeltaTable.forPath(self.spark, self.path(table))
                    self._add_missing_columns(table, existing)
                else:
                    existing = self._create(table)
                self._ensured.add(key)
                return existing
            except (AnalysisException, *COMMIT_CONFLICTS) as error:
                if not _lost_create_race(error) or attempt == CREATE_ATTEMPTS:
                    raise
                wait = min(0.25 * 2 ** (attempt - 1), 4.0)
                log.info(
                    "create %s: another writer is creating it (%s); checking again in %.2fs",
                    table.name,
                    _condition(error),
                    wait,
                )
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _ensure_once(self, table: S.TableSpec) -> None:
        """`ensure` before a write, skipped for a table this object has ensured already."""
        if (table.name, table.schema.json()) not in self._ensured:
            self.ensure(table)

    def ensure_all(self, tables: Sequence[S.TableSpec]) -> None:
        """`ensure` each of `tables` from threads: on a fresh lakehouse each creation is a commit,
        and their latencies overlap."""
        with ThreadPoolExecutor(max_workers=max(1, len(tables)), thread_name_prefix="ensure") as pool:
            for future in [pool.submit(self._ensure_once, t) for t in tables]:
                future.result()

    def _create(self, table: S.TableSpec) -> DeltaTable:
        builder = (
            DeltaTable.createIfNotExists(self.spark)
            .location(self.path(table))
            .addColumns(table.schema)
            .comment(table.description)
        )
        if table.partition_by:
            builder = builder.partitionedBy(*table.partition_by)
        created = builder.execute()
        self._committed()
        return created

    def _add_missing_columns(self, table: S.TableSpec, existing: DeltaTable) -> None:
        """A table made by an older version gains the columns declared since (never loses any),
        and a column declared nullable since (a metric that may be not computed) drops NOT NULL."""
        present = {f.name: f for f in existing.toDF().schema.fields}
        missing = [f for f in table.schema.fields if f.name not in present]
        if missing:
            columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in missing)
            log.info("adding columns to %s: %s", table.name, columns)
            self.spark.sql(f"ALTER TABLE delta.`{self.path(table)}` ADD COLUMNS ({columns})")
            self._committed()
        for field in table.schema.fields:
            if field.nullable and field.name in present and not present[field.name].nullable:
                log.info("%s.%s may now be null", table.name, field.name)
                self.spark.sql(f"ALTER TABLE delta.`{self.path(table)}` ALTER COLUMN `{field.name}` DROP NOT NULL")
                self._committed()

    def rewrite(self, table: S.TableSpec, frame: DataFrame) -> None:
        """Replace a whole table and its schema with `frame` (the declared columns) in one commit:
        the one-time migration of a table stored in an older layout, where adding columns
        (`ensure`) is not enough. Delta makes an overwritten schema nullable (and Spark cannot set
        NOT NULL again), so the rewritten table accepts nulls its writers never store."""
        rows = frame.select(*[F.col(f.name).cast(f.dataType) for f in table.schema.fields])
        self._commit(
            lambda: rows.write.format("delta")
            .mode("overwrite")
            .option("overwriteSchema", "true")
            .save(self.path(table)),
            f"rewrite {table.name}",
        )
        self._ensured.add((table.name, table.schema.json()))

    def read(self, table: S.TableSpec) -> DataFrame:
        if not self.exists(table):
            return self.spark.createDataFrame([], table.schema)
        return self.spark.read.format("delta").load(self.path(table))

    def version(self, table: S.TableSpec) -> int | None:
        """The table's latest Delta version (None when it does not exist yet)."""
        if not self.exists(table):
            return None
        return int(self.history(table, 1).select("version").first()[0])

    def history(self, table: S.TableSpec, limit: int | None = None) -> DataFrame:
        """The table's Delta history, newest first: version, timestamp, operation and its metrics."""
        if not self.exists(table):
            raise UnknownTableError(f"table {table.name} does not exist yet in {self.root}")
        return DeltaTable.forPath(self.spark, self.path(table)).history(limit)

    def read_version(self, table: S.TableSpec, version: int) -> DataFrame:
        """The table as it was at one Delta version (time travel)."""
        return self.spark.read.format("delta").option("versionAsOf", version).load(self.path(table))

    def rows_by_version(self, table: S.TableSpec, versions: int, run_id: str | None = None) -> pd.DataFrame:
        """Row counts of the table at each of its latest `versions` versions (time travel), with
        each commit's time and operation; only one run's rows when `run_id` is given (matched on
        the table's key: run_id, routing_run_id, comparison_id or instance)."""
        commits = self.history(table, versions).select("version", "timestamp", "operation").collect()  # `versions` rows
        key = next((c for c in (S.RUN_ID, S.ROUTING_RUN_ID, S.COMPARISON_ID, S.INSTANCE) if c in table.columns), None)
        if run_id is not None and key is None:
            raise InputError(f"table {table.name} has no run or instance column to pick '{run_id}' by")
        rows = []
        for commit in sorted(commits, key=lambda c: c["version"]):
            frame = self.read_version(table, commit["version"])
            if run_id is not None:
                frame = frame.filter(F.col(key) == run_id)
            rows.append({**commit.asDict(), "rows": frame.count()})
        return pd.DataFrame(rows, columns=["version", "timestamp", "operation", "rows"])

    # Instances ---------------------------------------------------------------------------

    def instance_row(self, instance: str) -> Row:
        rows = self.read(S.INSTANCES).filter(F.col(S.INSTANCE) == instance).collect()
        if not rows:
            known = [r[S.INSTANCE] for r in self.read(S.INSTANCES).select(S.INSTANCE).collect()]
            raise UnknownInstanceError(
                f"unknown instance '{instance}'. Known: {', '.join(sorted(known)) or '(none yet)'}. "
                "Create it with `python -m pipelines ingest --instance NAME --source ...`."
            )
        return rows[0]

    def instance_rows(self, table: S.TableSpec, instance: str, ingest_id: str | None = None) -> DataFrame:
        """The current version of one instance's rows in an instance table (or the version
        `ingest_id`, when the caller has just read the instance row: saves a Delta read)."""
        current = ingest_id or self.instance_row(instance)[S.INGEST_ID]
        return self.read(table).filter((F.col(S.INSTANCE) == instance) & (F.col(S.INGEST_ID) == current))

    def instance_version(self, instance: str, ingest_id: str) -> Row:
        """One stored version of an instance (its `instances` row as it was): what a run reads,
        the version it was built on, current or not."""
        found = (
            self.read(S.INSTANCE_VERSIONS)
            .filter((F.col(S.INSTANCE) == instance) & (F.col(S.INGEST_ID) == ingest_id))
            .first()
        )
        if found is not None:
            return found
        current = self.instance_row(instance)
        if current[S.INGEST_ID] == ingest_id:  # stored before versions were kept
            return current
        raise UnknownVersionError(
            f"version {ingest_id} of instance '{instance}' is no longer stored (ingest drops versions beyond "
            "the `history` retention in conf/lab.yaml); list the kept ones with "
            f"`python -m pipelines instances --history {instance}`"
        )

    def instance_history(self, instance: str) -> DataFrame:
        """The stored versions of one instance, newest first (the current one has no `superseded_at`)."""
        self.instance_row(instance)  # an unknown name is an error that lists the known ones
        return self.read(S.INSTANCE_VERSIONS).filter(F.col(S.INSTANCE) == instance).orderBy(F.col(S.INGEST_ID).desc())

    def replace_instance(
        self,
        instance: str,
        frames: InstanceFrames,
        retention: Retention | None = None,
        on_step: OnStep | None = None,
    ) -> Row:
        """Store a new version of an instance and make it current (see module doc); earlier
        versions stay readable, within `retention`. `on_step` hears of each table written (stage
        `stored`, with its rows: counts the instance row needs anyway)."""
        started = datetime.now(UTC).replace(tzinfo=None)
        ingest_id = new_ingest_id()
        self.ensure_all((S.INSTANCES, S.INSTANCE_VERSIONS, *S.INSTANCE_TABLES))
        # Materialise the subscriptions once: they are both written and counted (a reliable
        # checkpoint on a cluster: a lost executor then costs retries, not the ingest).
        subscriptions = self.lineage.cut(frames.subscriptions)
        counts = instance_counts(subscriptions, frames.node_keys, frames.topic_keys)
        staged = {
            S.SUBSCRIPTIONS_TABLE: subscriptions,
            S.NODE_KEYS: frames.node_keys,
            S.TOPIC_KEYS: frames.topic_keys,
            S.REJECTED_SUBSCRIPTIONS: frames.rejected,
        }
        known_rows = {  # free: the counts of the instance row
            S.SUBSCRIPTIONS_TABLE.name: counts[S.SUBSCRIPTIONS],
            S.NODE_KEYS.name: counts[S.NODES],
            S.TOPIC_KEYS.name: counts[S.TOPICS],
            S.REJECTED_SUBSCRIPTIONS.name: frames.tally.rejected,
        }
        for step, (table, frame) in enumerate(staged.items(), 1):
            rows = frame.withColumn(S.INSTANCE, F.lit(instance)).withColumn(S.INGEST_ID, F.lit(ingest_id))
            rows = rows.select(*[F.col(c).cast(f.dataType) for c, f in zip(table.columns, table.schema.fields)])
            log.debug("writing %s for instance %s", table.name, instance)
            clock = time.monotonic()
            self._commit(
                lambda t=table, r=rows: r.write.format("delta").mode("append").save(self.path(t)),
                f"append {table.name}",
            )
            report(
                on_step,
                "stored",
                step,
                total=len(staged),
                seconds=time.monotonic() - clock,
                figures={"table": table.name, "rows": known_rows[table.name]},
            )

        tally = frames.tally
        record = {
            S.INSTANCE: instance,
            S.INGEST_ID: ingest_id,
            S.SOURCE: frames.source,
            S.PARAMS: json.dumps(frames.params, sort_keys=True),
            **counts,
            S.ROWS_READ: tally.read,
            S.ROWS_ACCEPTED: tally.accepted,
            S.REJECTED: tally.rejected,
            S.DUPLICATES: tally.duplicates,
            S.UNSAMPLED: tally.unsampled,
            S.CREATED_AT: datetime.now(UTC).replace(tzinfo=None),
        }
        previous = self.read(S.INSTANCES).filter(F.col(S.INSTANCE) == instance).first()
        update = local_frame(self.spark, [tuple(record[c] for c in S.INSTANCES.columns)], S.INSTANCES.schema)
        # The later ingest wins, unless the current version is this same source, committed while
        # this ingest ran: two ingests of one source at once (a workflow started twice) make one
        # version, decided in the commit itself, not by a read before it.
        same_meanwhile = (
            f"t.{S.SOURCE} = s.{S.SOURCE} AND t.{S.PARAMS} = s.{S.PARAMS} "
            f"AND t.{S.CREATED_AT} >= TIMESTAMP '{started.isoformat(sep=' ')}'"
        )
        self._commit(
            lambda: DeltaTable.forPath(self.spark, self.path(S.INSTANCES))
            .alias("t")
            .merge(update.alias("s"), f"t.{S.INSTANCE} = s.{S.INSTANCE}")
            .whenMatchedUpdateAll(condition=f"t.{S.INGEST_ID} < s.{S.INGEST_ID} AND NOT ({same_meanwhile})")
            .whenNotMatchedInsertAll()
            .execute(),
            "commit instances",
        )
        current = self.instance_row(instance)
        if current[S.INGEST_ID] == ingest_id:
            self._record_version(record, previous)
            dropped = self._apply_retention(instance, ingest_id, retention or Retention())
            stale = (
                (F.col(S.INSTANCE) == instance)
                & (F.col(S.INGEST_ID) < ingest_id)
                & ~F.col(S.INGEST_ID).isin(dropped.kept)
            )
        else:
            log.warning(
                "instance %s was replaced by another ingest (%s) while this one ran; discarding this one",
                instance,
                current[S.INGEST_ID],
            )
            stale = (F.col(S.INSTANCE) == instance) & (F.col(S.INGEST_ID) == ingest_id)
        # Rows of dropped versions, of crashed attempts and of an attempt that lost the race; never
        # those of a later-started ingest still writing (their ingest_id is larger). An ingest
        # appends `subscriptions` first (and every version has some) and this cleans it last, so
        # stale rows anywhere mean stale rows there: one count of it says whether there is work
        # (usually not: a first ingest), and only then does each table take a DELETE.
        if self.read(S.SUBSCRIPTIONS_TABLE).filter(stale).limit(1).count():
            for table in sorted(S.INSTANCE_TABLES, key=lambda t: t is S.SUBSCRIPTIONS_TABLE):
                self._commit(
                    lambda t=table: DeltaTable.forPath(self.spark, self.path(t)).delete(stale),
                    f"clean {table.name}",
                )
        return current

    def _record_version(self, record: dict, previous: Row | None) -> None:
        """Add the new current version to `instance_versions` and mark every earlier one
        superseded (one commit); the previous version is added too when the lakehouse stored it
        before versions were kept."""
        now = datetime.now(UTC).replace(tzinfo=None)
        instance, ingest_id = record[S.INSTANCE], record[S.INGEST_ID]
        rows = [tuple(record[c] for c in S.INSTANCES.columns) + (None,)]
        if previous is not None and previous[S.INGEST_ID] < ingest_id:
            rows.append(tuple(previous[c] for c in S.INSTANCES.columns) + (now,))
        source = local_frame(self.spark, rows, S.INSTANCE_VERSIONS.schema)
        older = f"t.{S.INSTANCE} = {sql_literal(instance)} AND t.{S.INGEST_ID} < {sql_literal(ingest_id)}"
        self._commit(
            lambda: DeltaTable.forPath(self.spark, self.path(S.INSTANCE_VERSIONS))
            .alias("t")
            .merge(source.alias("s"), f"t.{S.INSTANCE} = s.{S.INSTANCE} AND t.{S.INGEST_ID} = s.{S.INGEST_ID}")
            .whenMatchedUpdate(
                condition=f"t.{S.SUPERSEDED_AT} IS NULL AND s.{S.SUPERSEDED_AT} IS NOT NULL",
                set={S.SUPERSEDED_AT: f"s.{S.SUPERSEDED_AT}"},
            )
            .whenNotMatchedInsertAll()
            .whenNotMatchedBySourceUpdate(
                condition=f"{older} AND t.{S.SUPERSEDED_AT} IS NULL",
                set={S.SUPERSEDED_AT: F.lit(now)},
            )
            .execute(),
            "record instance version",
        )

    def _apply_retention(self, instance: str, current: str, retention: Retention) -> RetainedVersions:
        """Drop the version rows of `instance` that `retention` no longer keeps (one commit when
        any); the data rows of dropped versions are deleted by the caller."""
        versions = (
            self.read(S.INSTANCE_VERSIONS)
            .filter(F.col(S.INSTANCE) == instance)
            .select(S.INGEST_ID, S.SUPERSEDED_AT)
            .collect()  # one row per kept version: bounded by the retention
        )
        kept = retention.kept(current, [(v[S.INGEST_ID], v[S.SUPERSEDED_AT]) for v in versions])
        dropped = [v[S.INGEST_ID] for v in versions if v[S.INGEST_ID] not in kept]
        if dropped:
            log.info("instance %s: dropping %d version(s) beyond the retention (%s)", instance, len(dropped), retention)
            self._commit(
                lambda: DeltaTable.forPath(self.spark, self.path(S.INSTANCE_VERSIONS)).delete(
                    (F.col(S.INSTANCE) == instance) & F.col(S.INGEST_ID).isin(dropped)
                ),
                "drop instance versions",
            )
        return RetainedVersions(kept=sorted(kept), dropped=dropped)

    # Run tables --------------------------------------------------------------------------
    # Tables keyed by a run: overlay runs (run_id) and routing runs (routing_run_id). The run
    # rows themselves are claimed, completed and deleted through `pipelines.ledger`.

    def run_row(self, run_id: str, table: S.TableSpec = S.OVERLAY_RUNS, key: str = S.RUN_ID) -> Row:
        rows = self.read(table).filter(F.col(key) == run_id).collect()
        if not rows:
            how = "route" if table is S.ROUTING_RUNS else "design (or import-overlay)"
            raise UnknownRunError(
                f"unknown {'routing run' if table is S.ROUTING_RUNS else 'run'} '{run_id}': list them with "
                f"`python -m pipelines runs`; create one with {how}"
            )
        return rows[0]

    def run_exists(self, run_id: str) -> bool:
        return self.read(S.OVERLAY_RUNS).filter(F.col(S.RUN_ID) == run_id).limit(1).count() > 0

    @staticmethod
    def _conform(table: S.TableSpec, run_id: str, frame: DataFrame, key: str = S.RUN_ID) -> DataFrame:
        """`frame` stamped with the run id, in the table's column order; absent nullable columns null."""
        rows = frame.withColumn(key, F.lit(run_id))
        return rows.select(
            *[
                (F.col(f.name) if f.name in rows.columns else F.lit(None)).cast(f.dataType).alias(f.name)
                for f in table.schema.fields
            ]
        )

    def write_run_rows(
        self,
        table: S.TableSpec,
        run_id: str,
        frame: DataFrame,
        key: str = S.RUN_ID,
        within: dict | None = None,
    ) -> None:
        """Replace one run's rows in a run table, atomically (one Delta commit); `within`: only
        the run's rows with these column values (an int, a string, or a tuple of floats: any of
        them; for example one k), which `frame`'s rows must carry."""
        self._ensure_once(table)
        rows = self._conform(table, run_id, frame, key)
        condition = f"{key} = {sql_literal(run_id)}" + "".join(
            f" AND {column} IN ({', '.join(map(sql_literal, value))})"
            if isinstance(value, tuple)
            else f" AND {column} = {sql_literal(value)}"
            for column, value in (within or {}).items()
        )
        self._commit(
            lambda: rows.write.format("delta")
            .mode("overwrite")
            .option("replaceWhere", condition)
            .save(self.path(table)),
            f"write {table.name} of run {run_id}",
        )

    def write_run_tables(
        self,
        run_id: str,
        frames: Sequence[tuple[S.TableSpec, DataFrame]],
        key: str = S.RUN_ID,
        on_stored: Callable[[S.TableSpec], None] | None = None,
    ) -> None:
        """Replace one run's rows in several tables at once: each table's write is its own Delta
        commit (as `write_run_rows`), run from a thread of its own, because a small run's write is
        mostly commit latency on the driver, not executor work. `on_stored` is called on this
        thread as each table is stored; every write is waited for, then the first error raised.
        The run is not complete until its caller says so after this returns."""
        writes = [(table, partial(self.write_run_rows, table, run_id, frame, key)) for table, frame in frames]
        self._at_once(writes, on_stored)

    def append_run_tables(self, run_id: str, frames: Sequence[tuple[S.TableSpec, DataFrame]]) -> None:
        """`append_run_rows` to several tables at once, each from a thread of its own."""
        self._at_once([(table, partial(self.append_run_rows, table, run_id, frame)) for table, frame in frames])

    @staticmethod
    def _at_once(calls: Sequence[tuple[S.TableSpec, Callable]], on_done=None) -> dict[str, object]:
        """One call per table, each from a thread of its own (a small write or delete is mostly
        commit latency on the driver); `on_done(table)` on this thread as each ends. Every call is
        waited for, then the first error raised; each table's result."""
        names = [table.name for table, _ in calls]
        if len(set(names)) != len(names):
            raise ValueError(f"one call per table: {names}")
        errors: list[BaseException] = []
        results: dict[str, object] = {}
        with ThreadPoolExecutor(max_workers=max(1, min(8, len(calls))), thread_name_prefix="store") as pool:
            pending = {pool.submit(call): table for table, call in calls}
            for done in as_completed(pending):
                error = done.exception()
                if error is not None:
                    errors.append(error)
                    continue
                results[pending[done].name] = done.result()
                if on_done is not None:
                    on_done(pending[done])
        if errors:
            raise errors[0]
        return results

    def append_run_rows(self, table: S.TableSpec, run_id: str, frame: DataFrame) -> None:
        """Add rows of one run (a blind append: never conflicts with other runs' writes)."""
        self._ensure_once(table)
        rows = self._conform(table, run_id, frame)
        self._commit(
            lambda: rows.write.format("delta").mode("append").save(self.path(table)),
            f"append {table.name} of run {run_id}",
        )

    def append_rows(self, table: S.TableSpec, frame: DataFrame) -> None:
        """Add rows to a table not keyed by run (a blind append); `frame` has the table's columns."""
        self._ensure_once(table)
        rows = frame.select(*[F.col(f.name).cast(f.dataType) for f in table.schema.fields])
        self._commit(lambda: rows.write.format("delta").mode("append").save(self.path(table)), f"append {table.name}")

    def delete_run_rows(self, table: S.TableSpec, run_id: str, condition: F.Column | None = None) -> None:
        """Delete one run's rows (those matching `condition` too, when given)."""
        if not self.exists(table):
            return
        predicate = F.col(S.RUN_ID) == run_id
        if condition is not None:
            predicate = predicate & condition
        self._commit(
            lambda: DeltaTable.forPath(self.spark, self.path(table)).delete(predicate),
            f"delete {table.name} rows of run {run_id}",
        )

    def insert_run(self, record: dict, table: S.TableSpec = S.OVERLAY_RUNS, key: str = S.RUN_ID) -> bool:
        """Add a run row unless that run id exists. True when this call added it."""
        row = local_frame(self.spark, [tuple(record.get(c) for c in table.columns)], table.schema)
        return self.insert_missing(table, row, (key,)) == 1

    def insert_missing(self, table: S.TableSpec, frame: DataFrame, keys: tuple[str, ...]) -> int:
        """Add the rows of `frame` whose `keys` the table lacks (one MERGE: writers racing on the
        same rows add them once). Returns the rows added."""
        self._ensure_once(table)
        condition = " AND ".join(f"t.{k} = s.{k}" for k in keys)
        metrics = self._commit(
            lambda: DeltaTable.forPath(self.spark, self.path(table))
            .alias("t")
            .merge(frame.alias("s"), condition)
            .whenNotMatchedInsertAll()
            .execute(),
            f"insert into {table.name}",
        )
        return int(metrics.first()["num_inserted_rows"])

    def update_run_if_owned(
        self,
        run_id: str,
        owner: str | None,
        table: S.TableSpec = S.OVERLAY_RUNS,
        key: str = S.RUN_ID,
        **values: object,
    ) -> bool:
        """Set some columns of one run row if its `attempt` is still `owner` (None: a row without
        an attempt, as stored before the column existed); True when it was (`pipelines.ledger`).

        The check and the write are one MERGE (one commit), so a process that was taken over can
        never complete, fail or re-claim the run of its successor. A concurrent commit makes the
        MERGE run again on the new snapshot, checking the owner again."""
        self._ensure_once(table)  # a ledger table from before the attempt column gains it first
        fields = {f.name: f.dataType for f in table.schema.fields}
        source = local_frame(self.spark, [(run_id, owner)], S.frame_schema(table, (key, S.ATTEMPT)))
        assignments = {name: F.lit(value).cast(fields[name]) for name, value in values.items()}
        metrics = self._commit(
            lambda: DeltaTable.forPath(self.spark, self.path(table))
            .alias("t")
            .merge(source.alias("s"), f"t.{key} = s.{key} AND t.{S.ATTEMPT} <=> s.{S.ATTEMPT}")
            .whenMatchedUpdate(set=assignments)
            .execute(),
            f"update run {run_id} of attempt {owner}",
        )
        return int(metrics.first()["num_updated_rows"]) == 1

    def delete_rows(self, table: S.TableSpec, condition: str) -> int:
        """Delete the rows matching a SQL condition (one commit); how many went."""
        result = self._commit(
            lambda: self.spark.sql(f"DELETE FROM delta.`{self.path(table)}` WHERE {condition}").first(),
            f"delete from {table.name}",
        )
        return int(result["num_affected_rows"]) if result is not None else 0

    def delete_rows_from(self, tables: Sequence[S.TableSpec], condition: str) -> dict[str, int]:
        """`delete_rows` in several tables at once; how many went from each."""
        return self._at_once([(table, partial(self.delete_rows, table, condition)) for table in tables])

    def update_run(
        self, run_id: str, table: S.TableSpec = S.OVERLAY_RUNS, key: str = S.RUN_ID, **values: object
    ) -> None:
        """Set some columns of one run row, whoever owns it: summary figures, a delete's mark. A
        run's owner completes or fails it through `update_run_if_owned` (`pipelines.ledger`)."""
        self.update_runs((run_id,), table, key, **values)

    def update_runs(
        self, run_ids: Sequence[str], table: S.TableSpec = S.OVERLAY_RUNS, key: str = S.RUN_ID, **values: object
    ) -> None:
        """`update_run` for several runs at once (one commit)."""
        assignments = {name: F.lit(value) for name, value in values.items()}
        self._commit(
            lambda: DeltaTable.forPath(self.spark, self.path(table)).update(
                F.col(key).isin(list(run_ids)), assignments
            ),
            f"update {len(run_ids)} run(s) from {run_ids[0]}",
        )
