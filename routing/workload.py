"""The publication workload of BeaConvey section 5.2: each publication picks a topic uniformly
among the topics with subscribers, and a publisher uniformly among that topic's subscribers;
or, for feeds with one publisher each (Rappel's), each feed in turn, by its publisher.

Draws are `xxhash64(seed, what, pub_id)` scaled to [0, 1): the same seed gives the same
publications on any cluster layout. The memory regime draws the same publications with numpy
(`publications_in_memory`, `feed_publications_in_memory`): Spark's xxhash64 is the reference
XXH64 over each value's bytes in turn, seeded 42, which `tests/test_routing.py` holds to Spark's.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
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


_PRIMES = tuple(
    np.uint64(p)
    for p in (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)
)


def _rotate(x: np.ndarray, bits: int) -> np.ndarray:
    return (x << np.uint64(bits)) | (x >> np.uint64(64 - bits))


def _xxhash64(data: bytes, seeds: np.ndarray) -> np.ndarray:
    """XXH64 of the same short byte string (under 32 bytes: all Spark hashes here) under each seed."""
    if len(data) >= 32:
        raise ValueError("only inputs shorter than 32 bytes are hashed here")
    p1, p2, p3, p4, p5 = _PRIMES
    h = seeds.astype(np.uint64) + p5 + np.uint64(len(data))
    at = 0
    while at + 8 <= len(data):
        lane = np.uint64(int.from_bytes(data[at : at + 8], "little"))
        h = _rotate(h ^ (_rotate(np.full_like(h, lane) * p2, 31) * p1), 27) * p1 + p4
        at += 8
    if at + 4 <= len(data):
        h = _rotate(h ^ (np.uint64(int.from_bytes(data[at : at + 4], "little")) * p1), 23) * p2 + p3
        at += 4
    for byte in data[at:]:
        h = _rotate(h ^ (np.uint64(byte) * p5), 11) * p1
    h = (h ^ (h >> np.uint64(33))) * p2
    h = (h ^ (h >> np.uint64(29))) * p3
    return h ^ (h >> np.uint64(32))


def _xxhash64_longs(values: np.ndarray, seed: np.uint64) -> np.ndarray:
    """XXH64 of each int64 (its 8 little-endian bytes) under one seed."""
    p1, p2, p3, p4, p5 = _PRIMES
    lane = values.astype(np.int64).view(np.uint64)
    h = np.full(len(values), seed + p5 + np.uint64(8), np.uint64)
    h = _rotate(h ^ (_rotate(lane * p2, 31) * p1), 27) * p1 + p4
    h = (h ^ (h >> np.uint64(33))) * p2
    h = (h ^ (h >> np.uint64(29))) * p3
    return h ^ (h >> np.uint64(32))


def uniform_in_memory(seed: int, what: str, keys: np.ndarray) -> np.ndarray:
    """`_uniform(seed, what, key)` with numpy: Spark hashes a literal int seed as 4 bytes (8 past
    the int range), then the string's UTF-8 bytes, then the long key, each under the last hash."""
    size = 4 if -(1 << 31) <= seed < 1 << 31 else 8
    with np.errstate(over="ignore"):
        first = _xxhash64(seed.to_bytes(size, "little", signed=True), np.array([42], np.uint64))
        second = _xxhash64(what.encode(), first)
        hashed = _xxhash64_longs(keys, second[0])
    return (hashed & np.uint64(_UNIT - 1)).astype(np.float64) / float(_UNIT)


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
