"""Size figures of an instance, as stored in the `instances` table."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S


def instance_counts(subscriptions: DataFrame, node_keys: DataFrame, topic_keys: DataFrame) -> dict[str, int]:
    """|V|, |T|, |I|, nodes and topics with at least one subscription, topics with exactly one."""
    per_topic = subscriptions.groupBy(S.TOPIC_ID).agg(F.count(F.lit(1)).alias("_n"))
    topic_figures = per_topic.agg(
        F.count(F.lit(1)).alias(S.SUBSCRIBED_TOPICS),
        F.coalesce(F.sum("_n"), F.lit(0)).alias(S.SUBSCRIPTIONS),
        F.coalesce(F.sum(F.when(F.col("_n") == 1, 1).otherwise(0)), F.lit(0)).alias(S.SINGLE_SUBSCRIBER_TOPICS),
    )
    node_figures = subscriptions.agg(F.countDistinct(S.NODE_ID).alias(S.SUBSCRIBED_NODES))
    sizes = node_keys.agg(F.count(F.lit(1)).alias(S.NODES)).crossJoin(
        topic_keys.agg(F.count(F.lit(1)).alias(S.TOPICS))
    )
    row = topic_figures.crossJoin(node_figures).crossJoin(sizes).first()
    return {name: int(row[name]) for name in row.asDict()}
