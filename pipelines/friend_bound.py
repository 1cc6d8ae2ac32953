"""The friend-bound job (ComNet'09 Fig. 1): how many of a node's feeds could k friends cover at
best? For a seeded sample of the nodes with at least `min_feeds` feeds, the greedy best friends
from everyone (`overlay.rappel.greedy`), stored in `friend_bound` per instance version and
settings (a rerun replaces them), and summarised as the share of sampled nodes with full
coverage for each number of friends up to k (the paper: over 95% with k = 6 on LiveJournal).

The subscriptions reach the executors as a broadcast (the deliberate, capped driver copy every
greedy job makes); the sampled nodes' rows are computed there, one `mapInArrow`."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.classes import Subscriptions
from overlay.errors import InputError
from overlay.rappel.greedy import best_friend_coverage, full_coverage_by_friends, sampled_nodes
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now
from pipelines.spark import task_slots

FRIENDS_COLUMN, FULL_COLUMN, SHARE_COLUMN = "friends", "full_coverage_nodes", "full_coverage_share"
COLUMNS = (FRIENDS_COLUMN, FULL_COLUMN, SHARE_COLUMN)


@dataclass(frozen=True)
class FriendBoundRequest:
    instance: str
    k: int = 6
    min_feeds: int = 5
    sample: int = 1000
    seed: int = 1

    def check(self) -> None:
        for name in ("k", "min_feeds", "sample"):
            if getattr(self, name) < 1:
                raise InputError(f"--{name.replace('_', '-')} must be positive, got {getattr(self, name)}")


def run_friend_bound(spark: SparkSession, lakehouse: Lakehouse, request: FriendBoundRequest) -> list[dict]:
    """Compute and store the sample's greedy best friends; the summary rows (one per number of
    friends 1..k)."""
    request.check()
    instance = lakehouse.instance_row(request.instance)
    ingest_id = instance[S.INGEST_ID]
    subscriptions = lakehouse.lineage.cut(
        lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, request.instance, ingest_id).select(S.NODE_ID, S.TOPIC_ID)
    )
    csr = Subscriptions.collect(subscriptions, int(instance[S.NODES]))
    nodes = lakehouse.lineage.cut(sampled_nodes(subscriptions, request.min_feeds, request.sample, request.seed))
    if nodes.isEmpty():
        raise InputError(f"instance '{request.instance}' has no node with at least {request.min_feeds} feeds")
    rows = best_friend_coverage(spark, csr.offsets, csr.topics, request.k, task_slots(spark), nodes).select(
        F.lit(ingest_id).alias(S.INGEST_ID),
        F.lit(request.k).alias(S.K),
        F.lit(request.min_feeds).alias(S.MIN_FEEDS),
        F.lit(request.sample).alias(S.SAMPLE),
        F.lit(request.seed).cast("long").alias(S.SEED),
        S.NODE_ID,
        S.FEEDS,
        S.FRIENDS,
        S.COVERED_AFTER,
        F.lit(_now()).alias(S.COMPUTED_AT),
    )
    settings = {
        S.INGEST_ID: ingest_id,
        S.K: request.k,
        S.MIN_FEEDS: request.min_feeds,
        S.SAMPLE: request.sample,
        S.SEED: request.seed,
    }
    lakehouse.write_run_rows(S.FRIEND_BOUND, request.instance, rows, key=S.INSTANCE, within=settings)
    stored = lakehouse.read(S.FRIEND_BOUND).filter(F.col(S.INSTANCE) == request.instance)
    for column, value in settings.items():
        stored = stored.filter(F.col(column) == value)
    return summary(stored, request.k)


def summary(rows, k: int) -> list[dict]:
    """Per number of friends j = 1..k (one computation's rows): the sampled nodes whose first j
    greedy picks cover all their feeds, and their share (one aggregate; k rows)."""
    counted = {r[FRIENDS_COLUMN]: r for r in full_coverage_by_friends(rows, []).collect()}  # k rows
    return [
        {
            FRIENDS_COLUMN: j,
            FULL_COLUMN: int(counted[j][FULL_COLUMN]) if j in counted else 0,
            SHARE_COLUMN: counted[j][SHARE_COLUMN] if j in counted else None,
        }
        for j in range(1, k + 1)
    ]
