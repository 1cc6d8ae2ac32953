"""A subscriptions file as an instance: CSV (with a header) or Parquet with columns `node,topic`
(read by `overlay.keyfile`).

Keys are strings, trimmed of surrounding whitespace. Each data row is accepted, rejected (a null
or blank key, a CSV line with more fields than the header) or a duplicate of an earlier (node,
topic) row. Dense ids number the keys of accepted rows in key order, nodes and topics apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.ids import pairs_to_ids, with_dense_id
from overlay.instance.model import InstanceFrames, RowTally
from overlay.keyfile import FIRST, SECOND, key_pair_problem, read_key_pairs
from overlay.lineage import LOCAL, Lineage

COLUMNS = ("node", "topic")
_NODE, _TOPIC = FIRST, SECOND


@dataclass(frozen=True)
class SubscriptionsFileSpec:
    path: str

    def validate(self) -> None:
        if not self.path.strip():
            raise InputError("--path is empty")


def subscriptions_file_instance(
    spark: SparkSession, spec: SubscriptionsFileSpec, lineage: Lineage = LOCAL
) -> InstanceFrames:
    spec.validate()
    raw = read_key_pairs(spark, spec.path, COLUMNS, "one subscription per row", lineage)
    rows = lineage.cut(raw.withColumn(S.REASON, key_pair_problem(COLUMNS)))
    row_counts = rows.agg(
        F.count(F.lit(1)).alias("read"),
        F.coalesce(F.sum(F.when(F.col(S.REASON).isNotNull(), 1).otherwise(0)), F.lit(0)).alias("rejected"),
    ).first()
    read, rejected_count = int(row_counts["read"]), int(row_counts["rejected"])
    if read == 0:
        raise InputError(f"{spec.path}: no data rows (the file has a header but nothing under it)")
    rejected = rows.filter(F.col(S.REASON).isNotNull()).select(S.RECORD, S.REASON, S.SOURCE_FILE, S.LINE)
    first_seen = Window.partitionBy(_NODE, _TOPIC).orderBy(S.SOURCE_FILE, S.LINE)
    valid = lineage.cut(
        rows.filter(F.col(S.REASON).isNull())
        .select(F.trim(_NODE).alias(_NODE), F.trim(_TOPIC).alias(_TOPIC), S.SOURCE_FILE, S.LINE)
        .withColumn("_first_seen", F.row_number().over(first_seen) == 1)
    )
    accepted = valid.filter("_first_seen").select(_NODE, _TOPIC)
    accepted_count = accepted.count()
    tally = RowTally(
        read=read,
        accepted=accepted_count,
        rejected=rejected_count,
        duplicates=read - rejected_count - accepted_count,
    )
    if tally.accepted == 0:
        raise InputError(
            f"{spec.path}: none of the {read} rows is usable ({tally.rejected} rejected); every "
            "row needs a non-blank node and topic key"
        )
    node_ids = with_dense_id(accepted.select(F.col(_NODE).alias(S.KEY)).distinct(), [S.KEY], S.ID, lineage)
    topic_ids = with_dense_id(accepted.select(F.col(_TOPIC).alias(S.KEY)).distinct(), [S.KEY], S.ID, lineage)
    return InstanceFrames(
        source="subscriptions",
        params=asdict(spec),
        subscriptions=pairs_to_ids(accepted, _NODE, _TOPIC, node_ids, topic_ids, S.KEY),
        node_keys=node_ids,
        topic_keys=topic_ids,
        rejected=rejected,
        tally=tally,
    )
