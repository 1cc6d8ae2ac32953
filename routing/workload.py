"""The publication workload of BeaConvey section 5.2: each publication picks a topic uniformly
among the topics with subscribers, and a publisher uniformly among that topic's subscribers;
or, for feeds with one publisher each (Rappel's), each feed in turn, by its publisher.

Draws are `xxhash64(seed, what, pub_id)` scaled to [0, 1): the same seed gives the same
publications on any cluster layout.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.instance.ids import with_dense_id
from overlay.lineage import LOCAL, Lineage

_UNIT = 1 << 53


def _uniform(seed: int, what: str, key: Column) -> Column:
    return F.pmod(F.xxhash64(F.lit(seed), F.lit(what), key), F.lit(_UNIT)) / F.lit(float(_UNIT))


def publications(subscriptions: DataFrame, count: int, seed: int, lineage: Lineage = LOCAL) -> DataFrame:
    """(pub_id, topic_id, publisher) for pub_id 0..count-1; the publisher is a node id."""
    spark = subscriptions.sparkSession
    subscriptions = subscriptions.select(S.NODE_ID, S.TOPIC_ID).distinct()
    topics = lineage.cut(with_dense_id(subscriptions.select(S.TOPIC_ID).distinct(), [S.TOPIC_ID], "_t", lineage))
    topic_count = topics.count()
    if topic_count == 0:
        raise ValueError("no topic has a subscriber: nothing to publish")
    members = subscriptions.withColumn("_m", F.row_number().over(Window.partitionBy(S.TOPIC_ID).orderBy(S.NODE_ID)) - 1)
    sizes = subscriptions.groupBy(S.TOPIC_ID).agg(F.count("*").alias("_size"))
    pubs = spark.range(count).select(F.col("id").alias(S.PUB_ID))
    picked = (
        pubs.withColumn("_t", F.floor(_uniform(seed, "topic", F.col(S.PUB_ID)) * topic_count).cast("long"))
        .join(F.broadcast(topics), on="_t")
        .join(sizes, on=S.TOPIC_ID)
        .withColumn("_m", F.floor(_uniform(seed, "publisher", F.col(S.PUB_ID)) * F.col("_size")).cast("int"))
        .join(members, on=[S.TOPIC_ID, "_m"])
    )
    return picked.select(S.PUB_ID, S.TOPIC_ID, F.col(S.NODE_ID).alias(S.PUBLISHER))


def feed_publications(publishers: DataFrame, count: int, lineage: Lineage = LOCAL) -> DataFrame:
    """Feeds publish in turn (Rappel's Fig. 10: every feed one update): publication i is the
    update of the (i mod F)-th feed in topic order, published by its publisher (publishers:
    topic_id, node_id, one row per feed that has subscribers)."""
    spark = publishers.sparkSession
    feeds = lineage.cut(with_dense_id(publishers.select(S.TOPIC_ID, S.NODE_ID), [S.TOPIC_ID], "_f", lineage))
    total = feeds.count()
    if total == 0:
        raise ValueError("no feed has a subscriber: nothing to publish")
    pubs = spark.range(count).select(F.col("id").alias(S.PUB_ID))
    return (
        pubs.withColumn("_f", F.col(S.PUB_ID) % F.lit(total))
        .join(F.broadcast(feeds), on="_f")
        .select(S.PUB_ID, S.TOPIC_ID, F.col(S.NODE_ID).alias(S.PUBLISHER))
    )
