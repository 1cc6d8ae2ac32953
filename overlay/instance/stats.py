"""Size figures of an instance, as stored in the `instances` table."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S


def instance_counts(subscriptions: DataFrame, node_keys: DataFrame, topic_keys: DataFrame) -> dict[str, int]:
    """|V|, |T|, |I|, nodes and topics with at least one subscription, topics with exactly one."""
    per_topic = subscriptions.groupBy(S.TOPIC_ID).agg(F.count(F.lit(1)).alias("_n"))
    topics = per_topic.agg(
        F.count(F.lit(1)).alias(S.SUBSCRIBED_TOPICS),
        F.coalesce(F.sum("_n"), F.lit(0)).alias(S.SUBSCRIPTIONS),
        F.coalesce(F.sum(F.when(F.col("_n") == 1, 1).otherwise(0)), F.lit(0)).alias(S.SINGLE_SUBSCRIBER_TOPICS),
    ).first()
    return {
        S.NODES: node_keys.count(),
        S.TOPICS: topic_keys.count(),
        S.SUBSCRIPTIONS: int(topics[S.SUBSCRIPTIONS]),
        S.SUBSCRIBED_NODES: subscriptions.select(S.NODE_ID).distinct().count(),
        S.SUBSCRIBED_TOPICS: int(topics[S.SUBSCRIBED_TOPICS]),
        S.SINGLE_SUBSCRIBER_TOPICS: int(topics[S.SINGLE_SUBSCRIBER_TOPICS]),
    }
