"""The publication workload of BeaConvey section 5.2: each publication picks a topic uniformly
among the topics with subscribers, and a publisher uniformly among that topic's subscribers;
or, for feeds with one publisher each (Rappel's), each feed in turn, by its publisher.

Draws are `xxhash64(seed, what, pub_id)` scaled to [0, 1): the same seed gives the same
publications on any cluster layout. The memory regime draws the same publications with numpy
(`publications_in_memory`, `feed_publications_in_memory`): Spark's xxhash64 in compiled form
(`overlay.spark_hash`), which `tests/test_routing.py` holds to Spark's draws.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.instance.ids import with_dense_id
from overlay.lineage import LOCAL, Lineage
from overlay.spark_hash import SPARK_SEED, hash_bytes, hash_int, hash_long

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


@nb.njit(cache=True, nogil=True)
def _uniforms(keys, seed):
    out = np.empty(len(keys), np.float64)
    for i in range(len(keys)):
        out[i] = float(hash_long(keys[i], seed) & np.uint64(_UNIT - 1)) / float(_UNIT)
    return out


def uniform_in_memory(seed: int, what: str, keys: np.ndarray) -> np.ndarray:
    """`_uniform(seed, what, key)` of each key with numpy: Spark folds a literal int seed as an int
    (a long past the int range), then the string, then the long key (`overlay.spark_hash`)."""
    first = hash_int(seed, SPARK_SEED) if -(1 << 31) <= seed < 1 << 31 else hash_long(seed, SPARK_SEED)
    folded = np.uint64(hash_bytes(np.frombuffer(what.encode(), np.uint8), np.uint64(first)))
    return _uniforms(keys.astype(np.int64), folded)


def publications_in_memory(subscriptions: pa.Table, count: int, seed: int) -> pa.Table:
    """`publications` over rows in memory (node_id, topic_id): the same (pub_id, topic_id,
    publisher) rows, no Spark job."""
    pairs = np.unique(
        np.stack(
            [subscriptions.column(S.TOPIC_ID).to_numpy(), subscriptions.column(S.NODE_ID).to_numpy()], axis=1
        ).astype(np.int64),  # fmt: skip
        axis=0,
    )  # by topic, then node: each topic's members in node order
    if len(pairs) == 0:
        raise ValueError("no topic has a subscriber: nothing to publish")
    topics, starts, sizes = np.unique(pairs[:, 0], return_index=True, return_counts=True)
    pub_ids = np.arange(count, dtype=np.int64)
    topic = np.floor(uniform_in_memory(seed, "topic", pub_ids) * float(len(topics))).astype(np.int64)
    member = np.floor(uniform_in_memory(seed, "publisher", pub_ids) * sizes[topic].astype(np.float64)).astype(np.int64)
    return pa.table({S.PUB_ID: pub_ids, S.TOPIC_ID: topics[topic], S.PUBLISHER: pairs[starts[topic] + member, 1]})


def feed_publications_in_memory(publishers: pa.Table, count: int) -> pa.Table:
    """`feed_publications` over rows in memory (topic_id, node_id: one row per feed)."""
    topic = publishers.column(S.TOPIC_ID).to_numpy().astype(np.int64)
    node = publishers.column(S.NODE_ID).to_numpy().astype(np.int64)
    if len(topic) == 0:
        raise ValueError("no feed has a subscriber: nothing to publish")
    order = np.argsort(topic, kind="stable")
    feed = np.arange(count, dtype=np.int64) % len(topic)
    return pa.table({S.PUB_ID: np.arange(count, dtype=np.int64), S.TOPIC_ID: topic[order][feed], S.PUBLISHER: node[order][feed]})  # fmt: skip
