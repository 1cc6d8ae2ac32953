"""Rappel on Spark: rounds of the friendship overlay and of every feed's dissemination tree,
coupled (our reading: docs/readings/rappel.md, "One round of the whole system").

Round r (30 s) is two Spark jobs:

1. the friendship round r (`overlay.rappel.friendship` on the cycle engine), each node hearing
   first of the nodes it met on join walks in round r - 1;
2. the trees' round r (`overlay.rappel.feeds`), every feed on its own, given the friends each of
   its subscribers has after step 1: one row per feed holding its tree (a struct,
   `overlay.rappel.tree_codec`), the friends as
   rows keyed by feed, both hash-partitioned by feed and walked feed by feed in one Python
   function (`mapInArrow`). Out come the feed's new tree, its deliveries, its traffic per member
   and the nodes each member met, one row kind each (`STEP_COLUMNS`).

Trees of different feeds never meet, so this is the paper's system exactly as long as each feed
sees its members' friends as they stand after the friendship round (our reading: the two halves
of a round take turns; in the paper they interleave within the 30 s). Both steps' results are
checkpointed, so lineage never grows with the rounds.

A snapshot (`snapshot`) is what round r + 1 starts from: every node's friendship state with the
nodes it met in round r, and every feed's tree as the columns `rappel_tree_states` stores (layout
`tree_codec.LAYOUT_VERSION`); `resume` turns one back into the inputs of `run`, so a run resumed
from round r's snapshot is the uninterrupted run: between two rounds of one run the trees take
the same encoded form."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.gossip.cycles import arrow_schema, built, ddl, rows_of, shared_builder, to_batches
from overlay.lineage import LOCAL, Lineage
from overlay.progress import OnStep, report
from overlay.rappel.feeds import Feeds, FeedTree
from overlay.rappel.friendship import STATE_COLUMNS, Interests, RappelParams, friendship_engine
from overlay.rappel.presence import Presence
from overlay.rappel.tree_codec import LAYOUT_VERSION, TREE_ARROW, TREE_COLUMNS, decode, encode

# Row kinds of the trees' step, in the order a feed's rows arrive (inputs first).
TREE, FRIENDS, DELIVERY, TRAFFIC, MET = range(5)
STEP_COLUMNS = (
    ("kind", "int"),
    ("feed", "bigint"),
    ("node_id", "bigint"),
    ("tree", S.RAPPEL_TREE.simpleString()),
    ("ids", "array<bigint>"),
    ("update_id", "bigint"),
    ("published_ms", "bigint"),
    ("arrival_ms", "double"),
    ("hops", "int"),
    ("direct_ms", "double"),
    ("counts", "array<int>"),
)
_STEP_SCHEMA = pa.schema(
    [
        pa.field(name, TREE_ARROW) if name == "tree" else arrow_schema([(name, kind)]).field(0)
        for name, kind in STEP_COLUMNS
    ]
)
_BLANK = {name: None for name, _ in STEP_COLUMNS}
# The friendship results a snapshot keeps besides the state: what the final tables need.
SNAPSHOT_MEASURES = ("covered", "feeds")


class RappelTrees:
    """What every executor knows for the trees' step: subscriptions, coordinates, publishers and
    presence (the friends come as rows)."""

    def __init__(
        self,
        params: RappelParams,
        offsets: np.ndarray,
        topics: np.ndarray,
        coordinates: np.ndarray,
        publishers: np.ndarray,
        presence: Presence,
    ) -> None:
        self.interests = Interests(offsets, topics, coordinates, params.mode)
        self.feeds = Feeds(self.interests, publishers, presence, params.seed, params.beta)

    def start(self, feed: int) -> FeedTree:
        subscribers = self.interests.subscribers(feed).tolist() if feed < len(self.interests.sizes) else []
        return self.feeds.start(feed, subscribers)

    def friend_rows(self, node: int, friends: list[int]) -> Iterator[dict]:
        for feed in sorted(self.interests.feeds(node)):
            yield {**_BLANK, "kind": FRIENDS, "feed": feed, "node_id": node, "ids": friends}

    def round(self, rows: list[dict], round_: int) -> Iterator[dict]:
        """One feed's rows (its tree, then its members' friends) -> its outputs."""
        tree = decode(rows[0]["feed"], rows[0]["tree"])
        friends = {row["node_id"]: row["ids"] for row in rows[1:]}
        out = self.feeds.round(tree, friends, round_)
        feed = tree.feed
        yield {**_BLANK, "kind": TREE, "feed": feed, "tree": encode(tree)}
        for d in out.deliveries:
            yield {
                **_BLANK,
                "kind": DELIVERY,
                "feed": feed,
                "node_id": d.node,
                "update_id": d.update,
                "published_ms": d.published,
                "arrival_ms": float(d.arrival),
                "hops": d.hops,
                "direct_ms": self.feeds.latency(d.node, tree.publisher),
            }
        for node in sorted(out.traffic):
            yield {**_BLANK, "kind": TRAFFIC, "feed": feed, "node_id": node, "counts": out.traffic[node]}
        for node in sorted(out.met):
            yield {**_BLANK, "kind": MET, "feed": feed, "node_id": node, "ids": sorted(out.met[node])}


@dataclass
class RoundResult:
    """Round r's checkpointed results: every node's friendship state with the round's measures
    (`friendship.MEASURE_COLUMNS`), and the trees' step rows (`STEP_COLUMNS`)."""

    round: int
    friendship: DataFrame
    step: DataFrame
    seconds: float


class RappelSimulation:
    """Rounds of Rappel on `subscriptions` (`overlay.design.classes.Subscriptions`, feeds
    0..len(publishers) - 1), `coordinates` (float [nodes, 2], ms) and `publishers` (node per
    feed); `partitions`: of every shuffle."""

    def __init__(
        self,
        spark,
        subscriptions,
        coordinates: np.ndarray,
        publishers: np.ndarray,
        params: RappelParams,
        presence: Presence,
        partitions: int,
        lineage: Lineage = LOCAL,
    ) -> None:
        """`lineage`: how each round's results are checkpointed (reliable on a cluster)."""
        self.spark, self.partitions, self.lineage = spark, partitions, lineage
        self.nodes, self.feeds = len(subscriptions.offsets) - 1, len(publishers)
        args = (params, subscriptions.offsets, subscriptions.topics, coordinates)
        self.engine = friendship_engine(spark, subscriptions, coordinates, params, partitions, None, presence)
        self.trees = shared_builder(spark, RappelTrees, (*args, np.asarray(publishers, dtype=np.int64), presence))

    def start(self) -> tuple[DataFrame, DataFrame]:
        """Round 0: every node's empty friendship state, and every feed's tree (checkpointed)."""
        shared = self.trees

        def start(batches):
            trees = built(shared)
            feeds = (f for batch in batches for f in batch.column("id").to_pylist())
            yield from to_batches(
                ({**_BLANK, "kind": TREE, "feed": f, "tree": encode(trees.start(f))} for f in feeds),
                _STEP_SCHEMA,
            )

        friendship = self.lineage.cut(self.engine.start(self.spark, self.nodes))
        trees = self.spark.range(self.feeds, numPartitions=self.partitions).mapInArrow(start, ddl(STEP_COLUMNS))
        return friendship, self.lineage.cut(trees)

    def step(self, friendship: DataFrame, trees: DataFrame, round_: int) -> DataFrame:
        """The trees' round (lazy): `friendship`, the nodes' states after the friendship round."""
        shared = self.trees

        def expand(batches):
            built_trees = built(shared)
            yield from to_batches(
                (r for row in rows_of(batches) for r in built_trees.friend_rows(row["node_id"], row["friends"])),
                _STEP_SCHEMA,
            )

        def run(batches):
            built_trees = built(shared)
            for _, group in itertools.groupby(rows_of(batches), key=lambda row: row["feed"]):
                yield from to_batches(built_trees.round(list(group), round_), _STEP_SCHEMA)

        friends = friendship.select("node_id", "friends").mapInArrow(expand, ddl(STEP_COLUMNS))
        inputs = trees.where(F.col("kind") == TREE).unionByName(friends)
        ordered = inputs.repartition(self.partitions, "feed").sortWithinPartitions("feed", "kind", "node_id")
        return ordered.mapInArrow(run, ddl(STEP_COLUMNS))

    def heard(self, friendship: DataFrame, step: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        """The friendship state for the next round: each node's `met`, the nodes its walks met
        (and the columns `keep` of `friendship`)."""
        met = (
            step.where(F.col("kind") == MET)
            .select("node_id", F.explode("ids").alias("q"))
            .groupBy("node_id")
            .agg(F.sort_array(F.collect_list("q")).alias("met"))
        )
        names = [name for name, _ in STATE_COLUMNS]
        return (
            friendship.select(*[n for n in names if n != "met"], *keep)
            .join(met, "node_id", "left")
            .withColumn("met", F.coalesce("met", F.array().cast("array<bigint>")))
            .select(*names, *keep)
        )

    def snapshot(self, result: RoundResult) -> tuple[DataFrame, DataFrame]:
        """Round r's snapshot (lazy): the next round's friendship state with the round's
        `SNAPSHOT_MEASURES`, and each feed's tree as `rappel_tree_states` stores it (`feed`,
        `layout_version`, then `schema.RAPPEL_TREE_COLUMNS`)."""
        state = self.heard(result.friendship, result.step, keep=SNAPSHOT_MEASURES)
        trees = result.step.where(F.col("kind") == TREE).select(
            "feed",
            F.lit(LAYOUT_VERSION).alias(S.LAYOUT_VERSION),
            *(F.col("tree")[name].alias(name) for name in TREE_COLUMNS),
        )
        return state, trees

    @staticmethod
    def resume(state: DataFrame, trees: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
        """A snapshot back as `run` takes it: the friendship state, the trees as step rows, and
        the friendship results a run ending at the snapshot's round would have returned (only
        the columns the run's final tables read: `STATE_COLUMNS` and `SNAPSHOT_MEASURES`). The
        trees must be of layout `LAYOUT_VERSION` (`tree_codec.current_rows` makes them so)."""
        names = [name for name, _ in STATE_COLUMNS]
        tree = F.struct(*(F.col(name) for name in TREE_COLUMNS))
        step = trees.select(
            *[
                (F.col(name) if name == "feed" else tree if name == "tree" else F.lit(TREE if name == "kind" else None))
                .cast(kind)
                .alias(name)
                for name, kind in STEP_COLUMNS
            ]
        )
        return state.select(*names), step, state.select(*names, *SNAPSHOT_MEASURES)

    def run(
        self,
        state: DataFrame,
        trees: DataFrame,
        first: int,
        last: int,
        on_round: Callable[[RoundResult], dict | None] | None = None,
        on_step: OnStep | None = None,
    ) -> tuple[DataFrame, DataFrame]:
        """Rounds first..last from `state` (friendship) and `trees` (rows of kind TREE); each
        round's results go to `on_round` before the next starts; the figures it returns go into
        the round's progress step. Returns the last round's friendship results and step rows."""
        friendship = step = None
        for round_ in range(first, last + 1):
            clock = time.monotonic()
            friendship = self.lineage.cut(self.engine.cycle(state, round_))
            step = self.lineage.cut(self.step(friendship, trees, round_))
            result = RoundResult(round_, friendship, step, time.monotonic() - clock)
            figures = (on_round(result) if on_round is not None else None) or {}
            report(
                on_step,
                "round",
                round_ - first + 1,
                total=last - first + 1,
                seconds=result.seconds,
                figures={"round": round_, **figures},
            )
            state, trees = self.heard(friendship, step), step
        return friendship, step
