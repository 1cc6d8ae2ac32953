"""`ingest --source churn`: the next days' versions of an instance, from its current version.

Each day reads the current version of the instance (the first day: of `--from`, when it names
another instance), applies one day of `overlay.instance.churn`, and stores the result as a new
version of the instance, as a re-ingest does (`Lakehouse.replace_instance`): runs made on earlier
days keep reading theirs. The version's `params` say where it came from (`from`, `from_ingest_id`, and `origin`: the
source and settings of the ingest the days descend from),
which day of the chain it is (`day`, counted on from the day before's) and the events the day
applied (`events`), so a day is reproducible from its parent and the seed.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, Row, SparkSession

from overlay import schema as S
from overlay.design.classes import MAX_DRIVER_SUBSCRIPTIONS
from overlay.errors import InputError
from overlay.instance import InstanceFrames, RowTally
from overlay.instance.churn import ChurnSpec, ChurnTally, Version, churn_day
from pipelines.lakehouse import Lakehouse, Retention
from pipelines.progress import Progress

log = logging.getLogger(__name__)
SOURCE = "churn"
MAX_DAYS = 3650


@dataclass(frozen=True)
class ChurnRequest:
    """`days` days of `spec` on `instance`, starting from the current version of `origin`."""

    instance: str
    origin: str
    days: int
    spec: ChurnSpec

    def check(self) -> None:
        self.spec.validate()
        if not (1 <= self.days <= MAX_DAYS):
            raise InputError(f"--days must lie in [1, {MAX_DAYS}], got {self.days}")


def read_version(lakehouse: Lakehouse, instance: str, ingest_id: str, rows: int) -> Version:
    """One stored version as arrays: the deliberate driver copy of its rows, capped as the greedy
    engine's (16 bytes a subscription, plus the keys)."""
    if rows > MAX_DRIVER_SUBSCRIPTIONS:
        raise InputError(
            f"the churn generator holds a version's subscriptions on the driver and '{instance}' has "
            f"{rows:,} (the cap is {MAX_DRIVER_SUBSCRIPTIONS:,})"
        )

    def keys(table: S.TableSpec) -> np.ndarray:
        frame = lakehouse.instance_rows(table, instance, ingest_id).select(S.ID, S.KEY).toPandas()
        ordered = frame.sort_values(S.ID)
        if not np.array_equal(ordered[S.ID].to_numpy(), np.arange(len(ordered))):
            raise InputError(f"instance '{instance}' version {ingest_id}: {table.name} ids are not 0..n-1")
        return ordered[S.KEY].to_numpy(dtype=object)

    pairs = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, instance, ingest_id).select(S.NODE_ID, S.TOPIC_ID).toArrow()
    matrix = np.column_stack(
        [pairs.column(S.NODE_ID).to_numpy().astype(np.int64), pairs.column(S.TOPIC_ID).to_numpy().astype(np.int64)]
    ).reshape(-1, 2)
    return Version(keys(S.NODE_KEYS), keys(S.TOPIC_KEYS), matrix)


def version_frames(spark: SparkSession, version: Version, params: dict) -> InstanceFrames:
    """A churned version as the frames every ingest stores."""

    def frame(columns: dict, schema) -> DataFrame:
        return spark.createDataFrame(pd.DataFrame(columns), schema)

    key_schema = f"{S.KEY} string, {S.ID} long"
    rows = len(version.pairs)
    return InstanceFrames(
        source=SOURCE,
        params=params,
        subscriptions=frame(
            {S.NODE_ID: version.pairs[:, 0], S.TOPIC_ID: version.pairs[:, 1]},
            f"{S.NODE_ID} long, {S.TOPIC_ID} long",
        ),
        node_keys=frame({S.KEY: version.node_keys, S.ID: np.arange(len(version.node_keys))}, key_schema),
        topic_keys=frame({S.KEY: version.topic_keys, S.ID: np.arange(len(version.topic_keys))}, key_schema),
        rejected=spark.createDataFrame([], S.REJECTED_FRAME_SCHEMA),
        tally=RowTally(read=rows, accepted=rows, rejected=0, duplicates=0),
    )


def _social(row: Row) -> bool:
    """Whether an instance's topics are its users' feeds (a social instance, or churned from one)."""
    if row[S.SOURCE] == "social":
        return True
    return row[S.SOURCE] == SOURCE and bool(json.loads(row[S.PARAMS]).get("social"))


def _day_of(row: Row) -> int:
    """The day a version is in its churn chain (0: not churned)."""
    return int(json.loads(row[S.PARAMS]).get("day", 0)) if row[S.SOURCE] == SOURCE else 0


def run_churn(
    spark: SparkSession,
    lakehouse: Lakehouse,
    request: ChurnRequest,
    kept: Retention | None = None,
    progress: bool = True,
) -> list[Row]:
    """Store `request.days` new versions of the instance, one a day; returns their instance rows."""
    request.check()
    origin = lakehouse.instance_row(request.origin)
    social = _social(origin)
    version = read_version(lakehouse, request.origin, origin[S.INGEST_ID], origin[S.SUBSCRIPTIONS])
    parent, day = origin, _day_of(origin)
    stored = []
    with Progress(f"churn {request.instance}", request.days, enabled=progress, logger=log) as bar:
        for _ in range(request.days):
            clock = time.monotonic()
            day += 1
            version, tally = churn_day(version, request.spec, day, social)
            params = _params(request, parent, day, social, tally)
            row = lakehouse.replace_instance(request.instance, version_frames(spark, version, params), kept)
            stored.append(row)
            bar.step(
                f"day {day}: {len(version.node_keys)} nodes, {len(version.pairs)} subscriptions "
                f"({tally.unsubscribes} unsubscribed, {tally.swaps} swapped, {tally.subscribes} subscribed, "
                f"{tally.departures} left, {tally.arrivals} arrived) in {time.monotonic() - clock:.1f}s",
                day=day,
            )
            parent = row
    return stored


def _params(request: ChurnRequest, parent: Row, day: int, social: bool, tally: ChurnTally) -> dict:
    parent_params = json.loads(parent[S.PARAMS])
    origin = (
        parent_params.get("origin")
        if parent[S.SOURCE] == "churn"
        else {"source": parent[S.SOURCE], "params": parent_params}
    )
    return {
        "from": parent[S.INSTANCE],
        "from_ingest_id": parent[S.INGEST_ID],
        "origin": origin,  # the ingest the days descend from (a workflow's ingest step reads it)
        "day": day,
        "social": social,
        **{k: v for k, v in asdict(request.spec).items()},
        "events": tally.asdict(),
    }
