"""`maintain`: Delta's own OPTIMIZE and VACUUM over the lab's tables, so a lakehouse that takes
small commits every day (runs, rounds, versions) keeps its size and its readers' time flat.

OPTIMIZE rewrites each table's many small files into few (a new table version; readers of older
versions keep theirs), then VACUUM deletes the files no version within the retention window
needs. The window (`maintenance.retain_hours`, 168 by default, Delta's own) is the promise to
readers: a query or a job that started within it still finds every file it may read. Below
Delta's 168 hours Delta refuses unless its check is off; this job turns it off for its own
VACUUM only when asked for a shorter window (`--retain-hours`), which is safe only when nothing
else reads or writes the lakehouse meanwhile (a benchmark's simulated days).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from overlay import schema as S
from overlay.errors import InputError
from pipelines.lakehouse import Lakehouse
from pipelines.progress import Progress

log = logging.getLogger(__name__)
DELTA_SAFE_HOURS = 168.0  # Delta's default retention, below which its check refuses VACUUM
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


@dataclass(frozen=True)
class MaintainRequest:
    retain_hours: float = DELTA_SAFE_HOURS
    optimize: bool = True
    vacuum: bool = True

    def check(self) -> None:
        if not self.retain_hours >= 0:
            raise InputError(f"--retain-hours must be a number of hours >= 0, got {self.retain_hours}")
        if not (self.optimize or self.vacuum):
            raise InputError("nothing to do: --skip-optimize and --skip-vacuum together")


def _size(path: str) -> tuple[int, int]:
    """(data files, bytes of the whole folder, log included) of a local table; (0, 0) elsewhere."""
    folder = Path(path.removeprefix("file:"))
    if not folder.is_dir():
        return 0, 0
    files = [p for p in folder.rglob("*") if p.is_file()]
    data = [p for p in files if p.suffix == ".parquet" and "_delta_log" not in p.parts]
    return len(data), sum(p.stat().st_size for p in files)


def run_maintain(
    spark: SparkSession, lakehouse: Lakehouse, request: MaintainRequest, progress: bool = True
) -> list[dict]:
    """OPTIMIZE then VACUUM every lab table the lakehouse has; one row per table with its data
    files and bytes (log included) before and after (local lakehouses) and each step's seconds."""
    request.check()
    tables = [t for t in S.ALL_TABLES if lakehouse.exists(t)]
    rows = []
    below = request.vacuum and request.retain_hours < DELTA_SAFE_HOURS
    previous = spark.conf.get(RETENTION_CHECK, "true")
    with Progress("maintain", len(tables), unit="table", enabled=progress, logger=log) as bar:
        for table in tables:
            path = lakehouse.path(table)
            files_before, bytes_before = _size(path)
            delta = DeltaTable.forPath(spark, path)
            clock = time.monotonic()
            if request.optimize:
                delta.optimize().executeCompaction()
            optimized = time.monotonic()
            if request.vacuum:
                if below:
                    spark.conf.set(RETENTION_CHECK, "false")
                try:
                    delta.vacuum(request.retain_hours)
                finally:
                    if below:
                        spark.conf.set(RETENTION_CHECK, previous)
            files_after, bytes_after = _size(path)
            rows.append(
                {
                    "table": table.name,
                    "files_before": files_before,
                    "files_after": files_after,
                    "bytes_before": bytes_before,
                    "bytes_after": bytes_after,
                    "optimize_s": round(optimized - clock, 2),
                    "vacuum_s": round(time.monotonic() - optimized, 2),
                }
            )
            bar.step(f"{table.name}: {files_before} -> {files_after} data files", table=table.name)
    return rows
