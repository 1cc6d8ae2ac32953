"""Random baselines of ICDCS'16 section IX: RandomA (m edges) and RandomM (max degree d).

Both ignore interest entirely; they use the nodes that subscribe to something. Randomness is
`xxhash64` of (seed, ...) so that a seed gives the same overlay on any cluster layout.

* RandomA: m distinct pairs drawn uniformly (with rejection of repeats and self-pairs).
* RandomM: rounds of random perfect matchings on the nodes still below degree d: in round r the
  open nodes are ordered by xxhash64(seed, r, node) and paired 1-2, 3-4, ...; a pair already
  linked is skipped. It stops when fewer than two nodes are open or a round adds no edge, so
  every node ends with degree <= d and almost every node with exactly d.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.frames import local_frame
from overlay.instance.ids import with_dense_id
from overlay.lineage import LOCAL, Lineage

_IDX = "_idx"


def _indexed_nodes(nodes: DataFrame) -> DataFrame:
    """(node_id, _idx) with _idx = 0..k-1 by node id."""
    return with_dense_id(nodes.select(S.NODE_ID).distinct(), [S.NODE_ID], _IDX)


def numbered_links(links: DataFrame, order_by: list) -> DataFrame:
    """(u, v, added_order, round) with added_order = 1, 2, ... in `order_by` order (a total
    order), numbered without a single-partition window."""
    return with_dense_id(links, order_by, "_n").select(
        S.U, S.V, (F.col("_n") + 1).cast("long").alias(S.ADDED_ORDER), F.col(S.ROUND).cast("int").alias(S.ROUND)
    )


def undirected_links(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The links {a_i, b_i}, each once, as k x 2 rows u < v ascending by (u, v): the order
    `numbered_links` numbers them in."""
    if not len(a):
        return np.zeros((0, 2), np.int64)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    return np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1), axis=0)


def numbered_link_table(links: np.ndarray, round_: int) -> pa.Table:
    """`numbered_links` of links held in memory (`undirected_links`), in one round."""
    return pa.table(
        {
            S.U: links[:, 0],
            S.V: links[:, 1],
            S.ADDED_ORDER: np.arange(1, len(links) + 1, dtype=np.int64),
            S.ROUND: np.full(len(links), round_, np.int32),
        }
    )


def random_a(nodes: DataFrame, max_edges: int, seed: int, lineage: Lineage = LOCAL) -> DataFrame:
    """(u, v, added_order, round): min(m, k(k-1)/2) distinct uniform random pairs of the k nodes.
    `lineage`: how its materialised steps are kept (reliable checkpoints on a cluster)."""
    spark = nodes.sparkSession
    indexed = lineage.cut(_indexed_nodes(nodes))
    k = indexed.count()
    wanted = min(max_edges, k * (k - 1) // 2)
    if wanted == 0:
        return local_frame(spark, [], f"{S.U} long, {S.V} long, {S.ADDED_ORDER} long, {S.ROUND} int")
    draws = 2 * wanted + 64
    while True:
        drawn = (
            spark.range(draws)
            .select(
                F.col("id").alias("_draw"),
                F.pmod(F.xxhash64(F.lit(seed), F.col("id"), F.lit(0)), F.lit(k)).alias("_a"),
                F.pmod(F.xxhash64(F.lit(seed), F.col("id"), F.lit(1)), F.lit(k)).alias("_b"),
            )
            .filter(F.col("_a") != F.col("_b"))
        )
        pairs = drawn.groupBy(F.least("_a", "_b").alias("_lo"), F.greatest("_a", "_b").alias("_hi")).agg(
            F.min("_draw").alias("_draw")
        )
        chosen = lineage.cut(pairs.orderBy("_draw").limit(wanted))
        if chosen.count() == wanted:
            break
        draws *= 4
    ends = indexed.select(F.col(_IDX), F.col(S.NODE_ID))
    named = chosen.join(ends.withColumnRenamed(_IDX, "_lo").withColumnRenamed(S.NODE_ID, "_x"), on="_lo").join(
        ends.withColumnRenamed(_IDX, "_hi").withColumnRenamed(S.NODE_ID, "_y"), on="_hi"
    )
    links = named.select(
        F.least("_x", "_y").alias(S.U), F.greatest("_x", "_y").alias(S.V), "_draw", F.lit(1).alias(S.ROUND)
    )
    return numbered_links(links, ["_draw"])


def random_m(
    nodes: DataFrame, max_degree: int, seed: int, max_rounds: int | None = None, lineage: Lineage = LOCAL
) -> DataFrame:
    """(u, v, added_order, round): random matchings until every node has degree d (or no progress).
    `lineage`: how each round's state is cut (reliable checkpoints on a cluster)."""
    spark = nodes.sparkSession
    members = lineage.cut(nodes.select(S.NODE_ID).distinct())
    edges = local_frame(spark, [], f"{S.U} long, {S.V} long, {S.ROUND} int, _h long")
    limit = max_rounds if max_rounds is not None else 4 * max_degree + 8
    for round_no in range(1, limit + 1):
        ends = edges.select(F.col(S.U).alias(S.NODE_ID)).unionAll(edges.select(F.col(S.V).alias(S.NODE_ID)))
        full = ends.groupBy(S.NODE_ID).count().filter(F.col("count") >= max_degree).select(S.NODE_ID)
        open_nodes = members.join(full, on=S.NODE_ID, how="left_anti").withColumn(
            "_h", F.xxhash64(F.lit(seed), F.lit(round_no), F.col(S.NODE_ID))
        )
        ranked = with_dense_id(open_nodes, ["_h", S.NODE_ID], "_place")
        first = ranked.filter(F.col("_place") % 2 == 0).select(
            (F.col("_place") / 2).cast("long").alias("_slot"), F.col(S.NODE_ID).alias("_x"), F.col("_h")
        )
        second = ranked.filter(F.col("_place") % 2 == 1).select(
            ((F.col("_place") - 1) / 2).cast("long").alias("_slot"), F.col(S.NODE_ID).alias("_y")
        )
        new = lineage.cut(
            first.join(second, on="_slot")
            .select(
                F.least("_x", "_y").alias(S.U), F.greatest("_x", "_y").alias(S.V), F.lit(round_no).alias(S.ROUND), "_h"
            )
            .join(edges.select(S.U, S.V), on=[S.U, S.V], how="left_anti")
        )
        if new.count() == 0:
            break
        edges = lineage.cut(edges.unionByName(new))
    return numbered_links(edges, [S.ROUND, "_h", S.U, S.V])
