"""The topic-structure job: diameters and clustering of sampled topic subgraphs of any overlay
run (Feverfew Table 3), one topic per size asked for, stored in `topic_structure`."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.gossip.measures import nearest_topics
from overlay.gossip.topics import topic_structure
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now, complete_run, run_inputs

COLUMNS = (S.WANTED, S.TOPIC_ID, S.SUBSCRIBERS, S.CONNECTED, S.DIAMETER, S.CLUSTERING)
TABLE3_SIZES = (10, 100, 200, 400, 600, 825, 1007, 1110, 1208, 1304)  # the paper's sampled sizes


def check_sizes(sizes: tuple[int, ...]) -> None:
    if not sizes or any(size < 1 for size in sizes):
        raise InputError(f"--topic-sizes are positive topic sizes, got {sizes}")


def run_structure(
    spark: SparkSession, lakehouse: Lakehouse, run_id: str, sizes: tuple[int, ...] = TABLE3_SIZES
) -> list[dict]:
    """Measure and store (replacing the run's rows for these sizes) the topics nearest `sizes`;
    the rows, one per size."""
    check_sizes(sizes)
    run = complete_run(lakehouse, run_id)
    _, subscriptions, links = run_inputs(lakehouse, run)
    counted = subscriptions.groupBy(S.TOPIC_ID).agg(F.count(F.lit(1)).alias(S.SUBSCRIBERS))
    picked = lakehouse.lineage.cut(
        nearest_topics(counted, sizes).select(
            F.element_at(F.array(*[F.lit(s) for s in sizes]), F.col("pick").cast("int") + 1)
            .cast("long")
            .alias(S.WANTED),
            S.TOPIC_ID,
        )
    )
    measured = topic_structure(subscriptions, links, picked.select(S.TOPIC_ID))
    rows = picked.join(measured, S.TOPIC_ID).withColumn(S.COMPUTED_AT, F.lit(_now()))
    lakehouse.write_run_rows(S.TOPIC_STRUCTURE, run_id, rows, within={S.WANTED: tuple(float(s) for s in sizes)})
    stored = lakehouse.read(S.TOPIC_STRUCTURE).filter((F.col(S.RUN_ID) == run_id) & F.col(S.WANTED).isin(*sizes))
    return [r.asDict() for r in stored.orderBy(S.WANTED).collect()]  # one row per size asked for
