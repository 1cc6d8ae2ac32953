"""Social graphs as pub/sub instances (ICDCS'16 IX-A(2), BeaConvey 6.1): every user is a topic,
and the users who follow it (directed) or are its friends (undirected) subscribe to it.

Direction: in a directed file, a line `a b` means "a follows b", so a subscribes to topic b;
`reverse=True` reads it as "b follows a". Undirected: a and b subscribe to each other's topic.

Rows: each edge line is accepted, rejected (see `edgelist`), a duplicate of an earlier line (the
same ordered pair when directed, the same unordered pair when undirected), or, when sampled,
unsampled: outside a BFS sample (an endpoint lies outside it), or outside a feed sample
(`overlay.instance.feeds`: Rappel's LiveJournal workload; an undirected friendship is two follows,
and its line is kept when either follow is: the instance then has the kept follows only).

Ids: the users of the accepted edges, numbered 0.. in numeric order of their original ids; a
user's node id and topic id are the same number, and both key tables hold the original id. A
feed sample numbers its topics apart (0.. over the chosen publishers, in id order): topic keys
are still the publishers' original ids, so a feed's publisher is the node with its key.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance import edgelist as E
from overlay.instance.bfs import NODE, bfs_sample
from overlay.instance.feeds import feed_sample
from overlay.instance.ids import pairs_to_ids, with_dense_id
from overlay.instance.model import InstanceFrames, RowTally
from overlay.lineage import LOCAL, Lineage
from overlay.progress import OnStep

STATUS = "status"
ACCEPTED, DUPLICATE, UNSAMPLED = "accepted", "duplicate", "unsampled"
SUBSCRIBER, PUBLISHER = "_subscriber", "_publisher"


@dataclass(frozen=True)
class SocialSpec:
    path: str
    directed: bool
    reverse: bool = False
    sample_bfs: int | None = None
    seed: int = 0
    bfs_seed_count: int = 3
    feed_seeds: int | None = None  # a feed sample: this many seed journals ...
    feed_publishers: int | None = None  # ... and this many publishers

    @property
    def feed_sampled(self) -> bool:
        return self.feed_seeds is not None

    def validate(self) -> None:
        if self.reverse and not self.directed:
            raise InputError("--reverse only applies to a --directed graph")
        if self.sample_bfs is not None and self.sample_bfs <= 0:
            raise InputError(f"--sample-bfs must be a positive integer, got {self.sample_bfs}")
        if (self.feed_seeds is None) != (self.feed_publishers is None):
            raise InputError("a feed sample needs both --feed-seeds and --feed-publishers")
        if self.feed_sampled:
            if self.sample_bfs is not None:
                raise InputError("choose one sample: --sample-bfs or --feed-seeds/--feed-publishers")
            if min(self.feed_seeds, self.feed_publishers) <= 0:
                raise InputError(
                    f"--feed-seeds and --feed-publishers must be positive, got {self.feed_seeds}, {self.feed_publishers}"
                )
        if self.bfs_seed_count <= 0:
            raise InputError(f"the BFS seed count must be positive, got {self.bfs_seed_count}")


def _orient(edges: DataFrame, spec: SocialSpec) -> DataFrame:
    """Add the pair that identifies an edge for duplicate detection."""
    a, b = F.col(E.A_KEY).cast("long"), F.col(E.B_KEY).cast("long")
    if spec.directed:
        subscriber, publisher = (b, a) if spec.reverse else (a, b)
        return edges.withColumn(SUBSCRIBER, subscriber).withColumn(PUBLISHER, publisher)
    return edges.withColumn(SUBSCRIBER, F.least(a, b)).withColumn(PUBLISHER, F.greatest(a, b))


def _mark_unsampled(edges: DataFrame, sample: DataFrame, lineage: Lineage) -> DataFrame:
    """Accepted edges with an endpoint outside the sample become `unsampled`."""
    inside = lineage.cut(sample.select(F.col(NODE).alias("_node")))
    flagged = edges
    for end, flag in ((SUBSCRIBER, "_sub_in"), (PUBLISHER, "_pub_in")):
        flagged = flagged.join(inside.select(F.col("_node").alias(end), F.lit(True).alias(flag)), on=end, how="left")
    outside = F.col("_sub_in").isNull() | F.col("_pub_in").isNull()
    status = F.when((F.col(STATUS) == ACCEPTED) & outside, UNSAMPLED).otherwise(F.col(STATUS))
    return flagged.withColumn(STATUS, status).drop("_sub_in", "_pub_in")


def social_instance(
    spark: SparkSession, spec: SocialSpec, on_step: OnStep | None = None, lineage: Lineage = LOCAL
) -> InstanceFrames:
    """The instance of a social graph; `on_step` hears of every level of the BFS sample; `lineage`:
    how its intermediate frames are kept (reliable checkpoints on a cluster)."""
    spec.validate()
    lines = E.classify_edge_lines(E.read_numbered_lines(spark, spec.path, lineage))
    # The rows and the MatrixMarket size lines, read once.
    read = lineage.cut(lines.filter(~F.col(E.KIND).isin(E.COMMENT, E.BLANK, E.HEADER)))
    rows = read.filter(F.col(E.KIND) != E.SIZE_LINE)
    rejected = rows.filter(F.col(E.KIND) == E.REJECTED).select(  # stored as UTF-8: U+FFFD for an undecodable byte
        F.make_valid_utf8(E.TEXT).alias(S.RECORD), S.REASON, S.SOURCE_FILE, S.LINE
    )
    first_seen = Window.partitionBy(SUBSCRIBER, PUBLISHER).orderBy(S.SOURCE_FILE, S.LINE)
    edges = _orient(rows.filter(F.col(E.KIND) == E.EDGE), spec).withColumn(
        STATUS, F.when(F.row_number().over(first_seen) == 1, ACCEPTED).otherwise(DUPLICATE)
    )
    if spec.sample_bfs is not None:
        unique = edges.filter(F.col(STATUS) == ACCEPTED)
        sample = bfs_sample(
            unique, SUBSCRIBER, PUBLISHER, spec.sample_bfs, spec.seed, spec.bfs_seed_count, on_step, lineage
        )
        edges = _mark_unsampled(edges, sample, lineage)
    kept = None
    if spec.feed_sampled:
        follows = edges.filter(F.col(STATUS) == ACCEPTED).select(SUBSCRIBER, PUBLISHER)
        if not spec.directed:  # a friendship: each follows the other
            follows = follows.union(
                follows.select(F.col(PUBLISHER).alias(SUBSCRIBER), F.col(SUBSCRIBER).alias(PUBLISHER))
            )
        kept = feed_sample(follows, SUBSCRIBER, PUBLISHER, spec.feed_seeds, spec.feed_publishers, spec.seed, lineage)
        kept = lineage.cut(kept)
        lines = (
            kept
            if spec.directed
            else kept.select(
                F.least(SUBSCRIBER, PUBLISHER).alias(SUBSCRIBER), F.greatest(SUBSCRIBER, PUBLISHER).alias(PUBLISHER)
            ).distinct()
        )
        flagged = edges.join(lines.withColumn("_kept", F.lit(True)), on=[SUBSCRIBER, PUBLISHER], how="left")
        status = F.when((F.col(STATUS) == ACCEPTED) & F.col("_kept").isNull(), UNSAMPLED).otherwise(F.col(STATUS))
        edges = flagged.withColumn(STATUS, status).drop("_kept")
    edges = lineage.cut(edges.select(SUBSCRIBER, PUBLISHER, STATUS))

    by_status = {row[STATUS]: row["count"] for row in edges.groupBy(STATUS).count().collect()}
    files = E.file_tallies(read)
    tally = RowTally(
        read=sum(f[E.ENTRIES] for f in files),
        accepted=by_status.get(ACCEPTED, 0),
        rejected=sum(f[S.REJECTED] for f in files),
        duplicates=by_status.get(DUPLICATE, 0),
        unsampled=by_status.get(UNSAMPLED, 0),
    )
    if tally.accepted == 0:
        raise InputError(
            f"{spec.path}: no usable edge lines ({tally.read} rows: {tally.rejected} rejected, "
            f"{tally.duplicates} duplicates). Expected one 'source target' pair of numeric ids "
            "per line; comment (#, %), blank and header lines are skipped."
        )
    E.check_declared_entries(files)

    accepted = edges.filter(F.col(STATUS) == ACCEPTED)
    users = (
        accepted.select(F.col(SUBSCRIBER).alias(NODE)).union(accepted.select(F.col(PUBLISHER).alias(NODE))).distinct()
    )
    ids = with_dense_id(users, [NODE], S.ID, lineage)
    keys = ids.select(F.col(NODE).cast("string").alias(S.KEY), S.ID)
    topic_ids, topic_keys = ids, keys
    if kept is not None:
        topic_ids = with_dense_id(kept.select(F.col(PUBLISHER).alias(NODE)).distinct(), [NODE], S.ID, lineage)
        topic_keys = topic_ids.select(F.col(NODE).cast("string").alias(S.KEY), S.ID)

    pairs = accepted.select(SUBSCRIBER, PUBLISHER)
    if kept is not None:
        pairs = kept  # the kept follows (of an undirected line, perhaps one of its two)
    elif not spec.directed:
        pairs = pairs.union(pairs.select(F.col(PUBLISHER).alias(SUBSCRIBER), F.col(SUBSCRIBER).alias(PUBLISHER)))
    return InstanceFrames(
        source="social",
        params=asdict(spec),
        subscriptions=pairs_to_ids(pairs, SUBSCRIBER, PUBLISHER, ids, topic_ids, NODE),
        node_keys=keys,
        topic_keys=topic_keys,
        rejected=rejected,
        tally=tally,
    )
