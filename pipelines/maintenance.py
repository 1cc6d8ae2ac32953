"""`maintain`: Delta's own OPTIMIZE and VACUUM over the lab's tables, so a lakehouse that takes
small commits every day (runs, rounds, versions) keeps its size and its readers' time flat.

OPTIMIZE rewrites each table's many small files into few (a new table version; readers of older
versions keep theirs), then VACUUM deletes the files no version within the retention window
needs. The window (`maintenance.retain_hours`, 168 by default, Delta's own) is the promise to
readers: a query or a job that started within it still finds every file it may read. Below
Delta's 168 hours Delta refuses unless its check is off; this job turns it off for its own
VACUUM only when asked for a shorter window (`--retain-hours`), which is safe only when nothing
else reads or writes the lakehouse meanwhile (a benchmark's simulated days).

Before both, the runs built on instance versions the retention (`history`) dropped are deleted
with everything derived from them (`maintenance.delete_dropped_runs`): they can no longer be
read, and their rows would otherwise grow the lakehouse by a day's runs every day. The Delta log
of each table keeps its commits for `maintenance.log_retain_hours` when set (the table property
`delta.logRetentionDuration`, Delta's 30 days otherwise; with it `delta.deletedFileRetentionDuration`,
which Delta requires to be no longer, is set to the VACUUM window); Delta deletes older log files
when it writes its next checkpoint (every 10 commits), never those of the current calendar day.

A table an earlier `maintain` left settled is skipped (its newest commit is that VACUUM, made at
least the window after its last write or compaction): most of the lab's tables take no commit on
most days, and OPTIMIZE and VACUUM cost seconds per table even with nothing to do.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from overlay import schema as S
from overlay.errors import InputError
from pipelines import ledger
from pipelines.lakehouse import Lakehouse
from pipelines.progress import Progress
from pipelines.runs import runs_on_dropped_versions

log = logging.getLogger(__name__)
DELTA_SAFE_HOURS = 168.0  # Delta's default retention, below which its check refuses VACUUM
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
LOG_RETENTION = "delta.logRetentionDuration"
FILE_RETENTION = "delta.deletedFileRetentionDuration"
MAINTENANCE_ONLY = {"VACUUM START", "VACUUM END", "SET TBLPROPERTIES"}  # commits that remove no file
TABLES_AT_ONCE = 4
HISTORY_LOOKED_AT = 10  # commits: a maintain makes at most four (properties, OPTIMIZE, VACUUM START, END)


@dataclass(frozen=True)
class MaintainRequest:
    retain_hours: float = DELTA_SAFE_HOURS
    optimize: bool = True
    vacuum: bool = True
    delete_dropped_runs: bool = True
    log_retain_hours: int | None = None  # None: leave each table's log retention as it is

    def check(self) -> None:
        if not self.retain_hours >= 0:
            raise InputError(f"--retain-hours must be a number of hours >= 0, got {self.retain_hours}")
        if not (self.optimize or self.vacuum):
            raise InputError("nothing to do: --skip-optimize and --skip-vacuum together")
        if self.log_retain_hours is not None and not self.log_retain_hours >= max(self.retain_hours, 1):
            raise InputError(
                f"--log-retain-hours {self.log_retain_hours} is shorter than the VACUUM window of "
                f"{self.retain_hours:g} hours (and at least 1): a reader within the window needs the log "
                "of its version too; give a longer log retention or a shorter --retain-hours"
            )


@dataclass(frozen=True)
class Maintained:
    """What `maintain` did: the runs it deleted (built on dropped versions, and derived from
    them) and one row per table."""

    deleted: list[ledger.DeletedRuns]
    tables: list[dict]

    @property
    def runs_deleted(self) -> int:
        return sum(len(d.run_ids) for d in self.deleted)


def _size(path: str) -> tuple[int, int]:
    """(data files, bytes of the whole folder, log included) of a local table; (0, 0) elsewhere."""
    folder = Path(path.removeprefix("file:"))
    if not folder.is_dir():
        return 0, 0
    files = [p for p in folder.rglob("*") if p.is_file()]
    data = [p for p in files if p.suffix == ".parquet" and "_delta_log" not in p.parts]
    return len(data), sum(p.stat().st_size for p in files)


def _set_retention(spark: SparkSession, path: str, request: MaintainRequest) -> None:
    """The table's log retention set to the request's, and its deleted-file retention (which
    Delta requires no longer) to the VACUUM window: one commit, only when they differ."""
    wanted = {
        LOG_RETENTION: f"interval {request.log_retain_hours} hours",
        FILE_RETENTION: f"interval {round(request.retain_hours * 3600)} seconds",
    }
    properties = DeltaTable.forPath(spark, path).detail().select("properties").first()[0] or {}
    if any(properties.get(key) != value for key, value in wanted.items()):
        pairs = ", ".join(f"'{key}' = '{value}'" for key, value in wanted.items())
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({pairs})")


def _settled(delta: DeltaTable, retain_hours: float) -> bool:
    """Whether an earlier `maintain` left nothing to do: the table's newest commit is its VACUUM,
    made at least the window after the newest commit that may have removed files (a write, a
    delete, an OPTIMIZE), so nothing was written since and every removed file is gone."""
    history = delta.history(HISTORY_LOOKED_AT).select("timestamp", "operation").collect()
    if not history or history[0]["operation"] != "VACUUM END":
        return False
    changed = next((h for h in history if h["operation"] not in MAINTENANCE_ONLY), None)
    return changed is None or history[0]["timestamp"] - changed["timestamp"] >= timedelta(hours=retain_hours)


def _maintain_table(spark: SparkSession, path: str, request: MaintainRequest) -> dict:
    """OPTIMIZE then VACUUM one table (unless settled); its row of figures."""
    files_before, bytes_before = _size(path)
    if request.log_retain_hours is not None:
        _set_retention(spark, path, request)
    delta = DeltaTable.forPath(spark, path)
    clock = time.monotonic()
    settled = request.optimize and request.vacuum and _settled(delta, request.retain_hours)
    if request.optimize and not settled:
        delta.optimize().executeCompaction()
    optimized = time.monotonic()
    if request.vacuum and not settled:
        delta.vacuum(request.retain_hours)
    files_after, bytes_after = _size(path)
    return {
        "settled": settled,
        "files_before": files_before,
        "files_after": files_after,
        "bytes_before": bytes_before,
        "bytes_after": bytes_after,
        "optimize_s": round(optimized - clock, 2),
        "vacuum_s": round(time.monotonic() - optimized, 2),
    }


def run_maintain(
    spark: SparkSession, lakehouse: Lakehouse, request: MaintainRequest, progress: bool = True
) -> Maintained:
    """Delete the runs on dropped versions, then OPTIMIZE and VACUUM every lab table the
    lakehouse has, `TABLES_AT_ONCE` at a time (tables never conflict, and each one's work is
    mostly the driver waiting on small jobs); one row per table with its data files and bytes
    (log included) before and after (local lakehouses) and each step's seconds."""
    request.check()
    deleted = []
    if request.delete_dropped_runs:
        dropped = runs_on_dropped_versions(lakehouse)
        if dropped:
            log.info("maintain: deleting %d run(s) built on dropped instance versions", len(dropped))
            deleted = ledger.delete_runs(lakehouse, ledger.OVERLAY, dropped)
    tables = [t for t in S.ALL_TABLES if lakehouse.exists(t)]
    rows: dict[str, dict] = {}
    below = request.vacuum and request.retain_hours < DELTA_SAFE_HOURS
    previous = spark.conf.get(RETENTION_CHECK, "true")
    if below:  # a session setting: off for this job's VACUUMs only, back on after them
        spark.conf.set(RETENTION_CHECK, "false")
    try:
        with (
            Progress("maintain", len(tables), unit="table", enabled=progress, logger=log) as bar,
            ThreadPoolExecutor(max_workers=TABLES_AT_ONCE, thread_name_prefix="maintain") as pool,
        ):
            futures = {pool.submit(_maintain_table, spark, lakehouse.path(t), request): t for t in tables}
            for future in as_completed(futures):
                table = futures[future]
                row = rows[table.name] = {"table": table.name, **future.result()}
                bar.step(f"{table.name}: {row['files_before']} -> {row['files_after']} data files", table=table.name)
    finally:
        if below:
            spark.conf.set(RETENTION_CHECK, previous)
    return Maintained(deleted, [rows[t.name] for t in tables])
