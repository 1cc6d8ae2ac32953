"""An overlay the user already runs, read from a file of links in their own node keys.

The file: CSV with a header, or Parquet, with columns `u,v` (see `overlay.keyfile`). Each row is
accepted, or quarantined with its reason: a missing or blank key, a key that is not a node of the
instance, a self-loop, or a duplicate of an earlier link (the same unordered pair). Accepted links
are stored with u < v in dense node ids, `added_order` in file order and `round` 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.instance.ids import with_dense_id
from overlay.instance.model import RowTally
from overlay.keyfile import FIRST, SECOND, key_pair_problem, read_key_pairs
from overlay.lineage import LOCAL, Lineage

COLUMNS = ("u", "v")
DUPLICATE_REASON = "duplicate link (the same pair appears on an earlier row)"


@dataclass(frozen=True)
class ImportedOverlay:
    """edges: (u, v, added_order, round); rejected: (record, reason, source_file, line),
    duplicates included; tally: how the rows reconcile."""

    edges: DataFrame
    rejected: DataFrame
    tally: RowTally


def import_overlay(spark: SparkSession, path: str, node_keys: DataFrame, lineage: Lineage = LOCAL) -> ImportedOverlay:
    """Read an overlay file and map its keys through the instance's `node_keys` (key, id)."""
    raw = read_key_pairs(spark, path, COLUMNS, "one overlay link per row", lineage)
    rows = raw.withColumn(S.REASON, key_pair_problem(COLUMNS)).select(
        S.SOURCE_FILE,
        S.LINE,
        S.RECORD,
        S.REASON,
        F.trim(FIRST).alias("_a"),
        F.trim(SECOND).alias("_b"),
    )
    for end in ("_a", "_b"):
        ids = node_keys.select(F.col(S.KEY).alias(end), F.col(S.ID).alias(end + "_id"))
        rows = rows.join(ids, on=end, how="left")
    problem = F.coalesce(
        F.col(S.REASON),
        F.when(F.col("_a_id").isNull(), F.format_string("unknown node key '%s'", F.col("_a"))),
        F.when(F.col("_b_id").isNull(), F.format_string("unknown node key '%s'", F.col("_b"))),
        F.when(F.col("_a_id") == F.col("_b_id"), F.format_string("self-loop on node '%s'", F.col("_a"))),
    )
    first_seen = Window.partitionBy(S.U, S.V).orderBy(S.SOURCE_FILE, S.LINE)
    rows = lineage.cut(
        rows.withColumn(S.REASON, problem)
        .withColumn(S.U, F.least("_a_id", "_b_id"))
        .withColumn(S.V, F.greatest("_a_id", "_b_id"))
        .withColumn(
            "_duplicate",
            F.col(S.REASON).isNull() & (F.row_number().over(first_seen) > 1),
        )
    )
    counts = rows.agg(
        F.count(F.lit(1)).alias("read"),
        F.coalesce(F.sum(F.when(F.col(S.REASON).isNotNull(), 1).otherwise(0)), F.lit(0)).alias("rejected"),
        F.coalesce(F.sum(F.when(F.col("_duplicate"), 1).otherwise(0)), F.lit(0)).alias("duplicates"),
    ).first()
    read = int(counts["read"])  # a header-only file is an empty overlay, which is allowed
    rejected_count, duplicates = int(counts["rejected"]), int(counts["duplicates"])
    tally = RowTally(
        read=read, accepted=read - rejected_count - duplicates, rejected=rejected_count, duplicates=duplicates
    )
    accepted = rows.filter(F.col(S.REASON).isNull() & ~F.col("_duplicate"))
    edges = with_dense_id(
        accepted.select(S.U, S.V, S.SOURCE_FILE, S.LINE), [S.SOURCE_FILE, S.LINE], S.ADDED_ORDER, lineage
    )
    quarantined = rows.filter(F.col(S.REASON).isNotNull() | F.col("_duplicate")).select(
        S.RECORD,
        F.coalesce(F.col(S.REASON), F.lit(DUPLICATE_REASON)).alias(S.REASON),
        S.SOURCE_FILE,
        S.LINE,
    )
    return ImportedOverlay(
        edges=edges.select(S.U, S.V, S.ADDED_ORDER, F.lit(0).alias(S.ROUND)),
        rejected=quarantined,
        tally=tally,
    )
