"""Day two: designing from an earlier run's overlay, and measuring how far overlays move.

`design ... --incremental-from RUN|latest` (docs/concepts/day-two.md) starts the greedy from the
links of RUN, an earlier complete run of the same instance, algorithm and budget rule made on an
earlier version: its links are matched to today's node ids by their keys here, then cut down by
`overlay.design.incremental.keep_links`. Each such design, and each fresh design given
`--changes-from RUN`, stores one `overlay_changes` row: links kept, added and removed against RUN
(by keys), and the subscriptions that changed between the two versions.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from overlay import registry
from overlay import schema as S
from overlay.design.incremental import KeptLinks
from overlay.errors import InputError
from overlay.frames import local_frame
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now, complete_run

log = logging.getLogger(__name__)
LATEST = "latest"  # the newest complete run that qualifies, if any (else a fresh design)
BUDGET_RULES = ("max_degree", "max_edges", "budget_ratio")


@dataclass(frozen=True)
class IncrementalChoice:
    """How a design starts from an earlier run: `from_run` (a run id, or `latest`), at most
    `max_changes` link changes (removals by choice plus additions; None: no cap), a fresh design
    instead when the incremental one's TcoSuppR is more than `rebuild_below` under the last fresh
    design's of its chain, or every `rebuild_every` days."""

    from_run: str
    max_changes: int | None = None
    rebuild_below: float | None = None
    rebuild_every: int | None = None

    def check(self) -> None:
        if self.max_changes is not None and self.max_changes < 0:
            raise InputError(f"--max-changes must be a non-negative integer, got {self.max_changes}")
        if self.rebuild_below is not None and not (0 <= self.rebuild_below <= 1):
            raise InputError(f"--rebuild-below must lie in [0, 1], got {self.rebuild_below}")
        if self.rebuild_every is not None and self.rebuild_every < 1:
            raise InputError(f"--rebuild-every must be a positive integer, got {self.rebuild_every}")


def check_start(choice: IncrementalChoice | None, changes_from: str | None) -> None:
    """The day-two options of one design, checked before anything is read."""
    if choice is None:
        return
    choice.check()
    if changes_from is not None:
        raise InputError(
            "--changes-from compares a fresh design with an earlier run; an incremental design records its "
            "changes against --incremental-from"
        )


def budget_rule(request_params: dict) -> str | None:
    """Which budget a design request gave: max_degree, max_edges, budget_ratio or None."""
    given = [name for name in BUDGET_RULES if request_params.get(name) is not None]
    return given[0] if given else None


def chain_of(run: Row) -> dict:
    """A run's place in its day-two chain: the last fresh run (`anchor_run`) and the days since."""
    params = json.loads(run[S.PARAMS])
    start = params.get("start")
    if not start or params.get("rebuilt"):  # a fresh design, or an incremental one redone fresh
        return {"anchor_run": run[S.RUN_ID], "days_since_fresh": 0}
    return {"anchor_run": start["anchor_run"], "days_since_fresh": start["days_since_fresh"]}


def check_previous(
    previous: Row,
    instance: str,
    ingest_id: str,
    algorithm: str | None = None,
    request_params: dict | None = None,
    flag: str = "--incremental-from",
) -> None:
    """An incremental design's previous run must be an earlier version's design of the same
    algorithm and budget rule on this instance (`algorithm` None: any run of an earlier version,
    as `--changes-from` takes)."""
    run_id = previous[S.RUN_ID]
    if previous[S.INSTANCE] != instance:
        raise InputError(
            f"{flag} {run_id}: that run is on instance '{previous[S.INSTANCE]}', not '{instance}'; "
            "an incremental design continues an overlay of the same instance"
        )
    if previous[S.INGEST_ID] == ingest_id:
        raise InputError(
            f"{flag} {run_id}: that run was made on the current version of '{instance}' itself: "
            "there is no churn to follow (it is today's overlay already); ingest the next version first"
        )
    if previous[S.INGEST_ID] > ingest_id:
        raise InputError(f"{flag} {run_id}: that run was made on a later version of '{instance}'")
    if algorithm is None:
        return
    if previous[S.ALGORITHM] != algorithm:
        raise InputError(
            f"{flag} {run_id}: that run was designed by {previous[S.ALGORITHM]}, not {algorithm}: "
            "an incremental design continues the same greedy"
        )
    theirs = json.loads(previous[S.PARAMS]).get("request", {})
    if budget_rule(theirs) != budget_rule(request_params) or theirs.get("mode", "exact") != request_params.get(
        "mode", "exact"
    ):
        rule = budget_rule(theirs)
        raise InputError(
            f"{flag} {run_id}: that run's budget rule is "
            f"{'--' + rule.replace('_', '-') if rule else 'none'} ({theirs}); an incremental design keeps the "
            "budget rule (the values may change): design with the same rule, or fresh"
        )


def previous_run(
    lakehouse: Lakehouse, choice: IncrementalChoice, instance: str, ingest_id: str, algorithm: str, params: dict
) -> Row | None:
    """The run to start from: `choice.from_run` checked, or (`latest`) the newest complete run of
    the same instance, algorithm and request on an earlier version, None when there is none."""
    if algorithm not in registry.algorithms(registry.GREEDY):
        raise InputError(
            f"--incremental-from continues a greedy design ({', '.join(registry.algorithms(registry.GREEDY))}), "
            f"not {algorithm}"
        )
    if choice.from_run != LATEST:
        previous = complete_run(lakehouse, choice.from_run)
        check_previous(previous, instance, ingest_id, algorithm, params)
        return previous
    if not lakehouse.exists(S.OVERLAY_RUNS):
        return None
    candidates = (
        lakehouse.read(S.OVERLAY_RUNS)
        .filter(
            (F.col(S.INSTANCE) == instance)
            & (F.col(S.ALGORITHM) == algorithm)
            & (F.col(S.STATUS) == S.COMPLETE)
            & (F.col(S.INGEST_ID) < ingest_id)
        )
        .orderBy(F.col(S.INGEST_ID).desc(), F.col(S.FINISHED_AT).desc())
        .collect()  # this instance's complete runs of one algorithm: one a day at most, bounded by the retention
    )
    for row in candidates:
        if json.loads(row[S.PARAMS]).get("request") == params:
            try:
                return complete_run(lakehouse, row[S.RUN_ID])  # its version must still be stored
            except InputError:
                return None
    return None


def _keys(lakehouse: Lakehouse, instance: str, ingest_id: str, key: str, node: str) -> DataFrame:
    return lakehouse.instance_rows(S.NODE_KEYS, instance, ingest_id).select(
        F.col(S.KEY).alias(key), F.col(S.ID).alias(node)
    )


def key_links(lakehouse: Lakehouse, run: Row) -> DataFrame:
    """A run's links as (a, b) node keys, a < b."""
    edges = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run[S.RUN_ID]).select(S.U, S.V)
    keyed = edges.join(_keys(lakehouse, run[S.INSTANCE], run[S.INGEST_ID], "ku", S.U), S.U).join(
        _keys(lakehouse, run[S.INSTANCE], run[S.INGEST_ID], "kv", S.V), S.V
    )
    return keyed.select(F.least("ku", "kv").alias("a"), F.greatest("ku", "kv").alias("b"))


def carried_links(lakehouse: Lakehouse, previous: Row, ingest_id: str) -> tuple[np.ndarray, int]:
    """The previous run's links in today's node ids ((k, 2), both ends still there) and how many
    had an end that left. Collects the run's links: |E| rows, a bounded driver step (the greedy
    engine holds them anyway)."""
    today = lakehouse.instance_rows(S.NODE_KEYS, previous[S.INSTANCE], ingest_id)
    mapped = (
        key_links(lakehouse, previous)
        .join(today.select(F.col(S.KEY).alias("a"), F.col(S.ID).alias(S.U)), "a", "left")
        .join(today.select(F.col(S.KEY).alias("b"), F.col(S.ID).alias(S.V)), "b", "left")
        .select(S.U, S.V)
        .toArrow()
    )
    present = pc.and_(pc.is_valid(mapped.column(S.U)), pc.is_valid(mapped.column(S.V)))
    kept = mapped.filter(present)
    links = np.column_stack([kept.column(S.U).to_numpy(), kept.column(S.V).to_numpy()]).astype(np.int64)
    return links.reshape(-1, 2), mapped.num_rows - kept.num_rows


def changed_subscriptions(lakehouse: Lakehouse, instance: str, before: str, after: str) -> int:
    """Subscriptions in one version and not the other, compared by (node key, topic key)."""

    def pairs(ingest_id: str) -> DataFrame:
        subs = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, instance, ingest_id)
        nodes = lakehouse.instance_rows(S.NODE_KEYS, instance, ingest_id)
        topics = lakehouse.instance_rows(S.TOPIC_KEYS, instance, ingest_id)
        return (
            subs.join(nodes.select(F.col(S.ID).alias(S.NODE_ID), F.col(S.KEY).alias("nk")), S.NODE_ID)
            .join(topics.select(F.col(S.ID).alias(S.TOPIC_ID), F.col(S.KEY).alias("tk")), S.TOPIC_ID)
            .select("nk", "tk")
        )

    one, two = pairs(before).withColumn("_one", F.lit(1)), pairs(after).withColumn("_two", F.lit(1))
    return one.join(two, ["nk", "tk"], "full_outer").where(F.col("_one").isNull() | F.col("_two").isNull()).count()


def _changed_between(lakehouse: Lakehouse, instance: str, before: str, after: str) -> int:
    """`changed_subscriptions`, from a stored row of the same two versions when there is one (the
    experiment designs each day twice against the same pair)."""
    if lakehouse.exists(S.OVERLAY_CHANGES):
        stored = (
            lakehouse.read(S.OVERLAY_CHANGES)
            .filter(
                (F.col(S.INSTANCE) == instance)
                & (F.col(S.PREVIOUS_INGEST_ID) == before)
                & (F.col(S.INGEST_ID) == after)
            )
            .select(S.CHANGED_SUBSCRIPTIONS)
            .first()
        )
        if stored is not None:
            return stored[0]
    return changed_subscriptions(lakehouse, instance, before, after)


def link_changes(lakehouse: Lakehouse, run: Row, previous: Row) -> dict[str, int]:
    """Links kept, added and removed from `previous` to `run`, by node keys, and the removed ones
    with an end that is gone."""
    now, before = key_links(lakehouse, run), key_links(lakehouse, previous)
    today = lakehouse.instance_rows(S.NODE_KEYS, run[S.INSTANCE], run[S.INGEST_ID]).select(S.KEY)
    counts = (
        before.withColumn("_before", F.lit(1))
        .join(now.withColumn("_now", F.lit(1)), ["a", "b"], "full_outer")
        .join(today.select(F.col(S.KEY).alias("a"), F.lit(1).alias("_a")), "a", "left")
        .join(today.select(F.col(S.KEY).alias("b"), F.lit(1).alias("_b")), "b", "left")
        .agg(
            F.count(F.when(F.col("_before").isNotNull() & F.col("_now").isNotNull(), 1)).alias(S.LINKS_KEPT),
            F.count(F.when(F.col("_before").isNull(), 1)).alias(S.LINKS_ADDED),
            F.count(F.when(F.col("_now").isNull(), 1)).alias(S.LINKS_REMOVED),
            F.count(F.when(F.col("_now").isNull() & (F.col("_a").isNull() | F.col("_b").isNull()), 1)).alias(
                S.REMOVED_DEPARTED
            ),
        )
        .first()
    )
    return counts.asDict()


def _engine_seconds(run: Row) -> float | None:
    """The greedy's own work, from the instance in the driver copy to the last link: setup and
    rounds without reading the instance (which fresh and incremental designs pay alike)."""
    if run[S.SECONDS_ROUNDS] is None:
        return None
    fields = run.asDict()
    return (fields[S.SECONDS_SETUP] or 0.0) + fields[S.SECONDS_ROUNDS] - (fields.get(S.SECONDS_READ) or 0.0)


def store_changes(
    spark: SparkSession,
    lakehouse: Lakehouse,
    run: Row,
    previous: Row,
    kind: str,
    max_degree: int | None,
    kept: KeptLinks | None = None,
) -> dict:
    """The run's `overlay_changes` row against `previous`, written (replacing any earlier one).
    An incremental design's `kept` links give its counts (no join of the two overlays); the
    subscriptions changed between two versions are counted once per pair of versions."""
    if kept is None:
        counts = link_changes(lakehouse, run, previous)
    else:
        counts = {
            S.LINKS_KEPT: len(kept.links),
            S.LINKS_ADDED: run[S.EDGES] - len(kept.links),
            S.LINKS_REMOVED: kept.removed,
            S.REMOVED_DEPARTED: kept.departed,
        }
    record = {
        S.PREVIOUS_RUN_ID: previous[S.RUN_ID],
        S.INSTANCE: run[S.INSTANCE],
        S.INGEST_ID: run[S.INGEST_ID],
        S.PREVIOUS_INGEST_ID: previous[S.INGEST_ID],
        S.CHANGE_KIND: kind,
        **counts,
        S.REMOVED_UNSHARED: None if kept is None else kept.unshared,
        S.REMOVED_BUDGET: None if kept is None else kept.over_budget,
        S.REMOVED_REDUNDANT: None if kept is None else kept.released,
        S.CHANGED_SUBSCRIPTIONS: _changed_between(lakehouse, run[S.INSTANCE], previous[S.INGEST_ID], run[S.INGEST_ID]),
        S.EDGES: run[S.EDGES],
        S.TCO_SUPPORT: run[S.TCO_SUPPORT],
        S.MAX_DEGREE: max_degree,
        S.SECONDS: run[S.SECONDS],
        S.SECONDS_ENGINE: _engine_seconds(run),
        S.COMPUTED_AT: _now(),
    }
    columns = tuple(c for c in S.OVERLAY_CHANGES.columns if c != S.RUN_ID)
    frame = local_frame(spark, [tuple(record[c] for c in columns)], S.frame_schema(S.OVERLAY_CHANGES, columns))
    lakehouse.write_run_rows(S.OVERLAY_CHANGES, run[S.RUN_ID], frame)
    log.info(
        "%s against %s (%s): %d links kept, %d added, %d removed; %d subscriptions changed",
        run[S.RUN_ID],
        previous[S.RUN_ID],
        kind,
        counts[S.LINKS_KEPT],
        counts[S.LINKS_ADDED],
        counts[S.LINKS_REMOVED],
        record[S.CHANGED_SUBSCRIPTIONS],
    )
    return {S.RUN_ID: run[S.RUN_ID], **record}
