"""Dense 0-based numbering of rows in a given order, without funnelling them into one partition.

`monotonically_increasing_id` is increasing within a partition but has gaps between partitions.
Numbering each contiguous run of rows (a partition of a sorted frame, or a block of a text file)
from a small per-run table of counts turns it into a dense sequence. Only that per-run table (one
row per partition or file block) is joined with itself to find each run's offset.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.lineage import LOCAL, Lineage

_RUN = "_run"
_POS = "_pos"


def _number_runs(
    rows: DataFrame, run_cols: list[str], group_cols: list[str], out_col: str, lineage: Lineage = LOCAL
) -> DataFrame:
    """Number rows 0.. within each group; runs in `run_cols` order, rows within a run by `_pos`."""
    runs = lineage.cut(
        rows.groupBy(*group_cols, *run_cols).agg(F.min(_POS).alias("_first"), F.count(F.lit(1)).alias("_size"))
    )
    # Offset of a run = rows in earlier runs of its group: a self-join of the (tiny) run table.
    earlier = runs.select(
        *[F.col(c).alias(f"_e{c}") for c in group_cols],
        F.struct(*run_cols).alias("_erun"),
        F.col("_size").alias("_esize"),
    )
    same_group = [F.col(c) == F.col(f"_e{c}") for c in group_cols]
    before = F.struct(*run_cols) > F.col("_erun")
    condition = before
    for clause in same_group:
        condition = condition & clause
    offsets = (
        runs.join(earlier, condition, "left")
        .groupBy(*group_cols, *run_cols, "_first")
        .agg(F.coalesce(F.sum("_esize"), F.lit(0)).alias("_offset"))
    )
    numbered = rows.join(F.broadcast(offsets), on=[*group_cols, *run_cols])
    return numbered.withColumn(out_col, F.col(_POS) - F.col("_first") + F.col("_offset")).drop(
        "_first", "_offset", _POS
    )


def with_dense_id(frame: DataFrame, order_by: list, id_col: str, lineage: Lineage = LOCAL) -> DataFrame:
    """Add `id_col` = 0-based rank of each row in `order_by` order (ties get distinct ids).

    The sorted frame is checkpointed before numbering: recomputing a sort may sample different
    range bounds and so place rows in different partitions (`lineage`: reliable on a cluster,
    where a lost executor must not lose the numbering).
    """
    if id_col in (_RUN, _POS):
        raise ValueError(f"id column {id_col!r} clashes with a working column of with_dense_id")
    ordered = lineage.cut(
        frame.orderBy(*order_by)
        .withColumn(_RUN, F.spark_partition_id())
        .withColumn(_POS, F.monotonically_increasing_id())
    )
    return _number_runs(ordered, [_RUN], [], id_col, lineage).drop(_RUN)


def file_path_column() -> Column:
    """The input file of a row, as a plain path for local files (`file:/x` -> `/x`)."""
    return F.regexp_replace(F.col("_metadata.file_path"), "^file:(//)?", "")


def read_lines_numbered(
    spark, path: str, line_col: str, file_col: str, text_col: str, lineage: Lineage = LOCAL
) -> DataFrame:
    """Read text files (plain or compressed) as (file, 1-based line number, text)."""
    lines = lineage.cut(
        spark.read.text(path).select(
            F.col("value").alias(text_col),
            file_path_column().alias(file_col),
            F.col("_metadata.file_block_start").alias(_RUN),
            F.monotonically_increasing_id().alias(_POS),
        )
    )  # read (and decompress) the files once
    numbered = _number_runs(lines, [_RUN], [file_col], line_col, lineage).drop(_RUN)
    return numbered.withColumn(line_col, F.col(line_col) + 1)


def pairs_to_ids(
    pairs: DataFrame, node_col: str, topic_col: str, node_ids: DataFrame, topic_ids: DataFrame, key_col: str
) -> DataFrame:
    """(node key, topic key) pairs -> (node_id, topic_id), through two (key_col, id) tables."""
    nodes = node_ids.select(F.col(key_col).alias(node_col), F.col(S.ID).alias(S.NODE_ID))
    topics = topic_ids.select(F.col(key_col).alias(topic_col), F.col(S.ID).alias(S.TOPIC_ID))
    return pairs.join(nodes, on=node_col).join(topics, on=topic_col).select(S.NODE_ID, S.TOPIC_ID)
