"""Property 1 checks and the undirected links of a small-world overlay."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.smallworld.geometry import clockwise_column, phase_count, power_of_two


def property_1_violation(ring: DataFrame, fingers: DataFrame, n: int) -> str | None:
    """The first violation of Property 1 (BeaConvey section 3.1), or None.

    The ring must place the n nodes 0..n-1 at the n positions 0..n-1, one each; every node must
    have exactly one finger per phase 0..k-1 (k = ceil(log2 n)), and finger[i] must lie in phase
    i of its node: clockwise distance in [2^i, 2^(i+1)).
    """
    k = phase_count(n)
    spark = ring.sparkSession
    nodes = spark.range(n).select(F.col("id").alias(S.NODE_ID))
    positions = spark.range(n).select(F.col("id").alias(S.POSITION))
    problems: list[DataFrame] = []

    def found(frame: DataFrame, text) -> None:
        problems.append(frame.select(text.alias("problem")))

    placed = ring.groupBy(S.NODE_ID).agg(F.count("*").alias("_n"), F.min(S.POSITION).alias(S.POSITION))
    found(
        nodes.join(placed, on=S.NODE_ID, how="full").filter(F.col("_n").isNull() | (F.col("_n") != 1)),
        F.format_string("ring: node %d has %d positions", S.NODE_ID, F.coalesce(F.col("_n"), F.lit(0))),
    )
    held = ring.groupBy(S.POSITION).agg(F.count("*").alias("_n"))
    found(
        positions.join(held, on=S.POSITION, how="full").filter(F.col("_n").isNull() | (F.col("_n") != 1)),
        F.format_string("ring: position %d holds %d nodes", S.POSITION, F.coalesce(F.col("_n"), F.lit(0))),
    )
    slots = nodes.crossJoin(spark.range(k).select(F.col("id").cast("int").alias(S.PHASE)))
    per_slot = fingers.groupBy(S.NODE_ID, S.PHASE).agg(F.count("*").alias("_n"))
    found(
        slots.join(per_slot, on=[S.NODE_ID, S.PHASE], how="full").filter(F.col("_n").isNull() | (F.col("_n") != 1)),
        F.format_string(
            "fingers: node %d has %d fingers in phase %d (k = %d)",
            S.NODE_ID,
            F.coalesce(F.col("_n"), F.lit(0)),
            S.PHASE,
            F.lit(k),
        ),
    )
    at_node = ring.select(S.NODE_ID, F.col(S.POSITION).alias("_from"))
    at_finger = ring.select(F.col(S.NODE_ID).alias(S.FINGER), F.col(S.POSITION).alias("_to"))
    distance = clockwise_column(F.col("_from"), F.col("_to"), n)
    outside = (
        fingers.join(at_node, on=S.NODE_ID)
        .join(at_finger, on=S.FINGER)
        .withColumn("_d", distance)
        .filter((F.col("_d") < power_of_two(F.col(S.PHASE))) | (F.col("_d") >= power_of_two(F.col(S.PHASE) + 1)))
    )
    found(
        outside,
        F.format_string(
            "fingers: node %d's phase-%d finger %d is at distance %d, outside its phase",
            S.NODE_ID,
            S.PHASE,
            S.FINGER,
            "_d",
        ),
    )
    first = reduce(DataFrame.unionByName, problems).limit(1).collect()
    return first[0]["problem"] if first else None


def undirected_links(fingers: DataFrame) -> DataFrame:
    """(u, v) with u < v: the overlay's links, the union of all fingers without direction."""
    ends = fingers.select(F.least(S.NODE_ID, S.FINGER).alias(S.U), F.greatest(S.NODE_ID, S.FINGER).alias(S.V))
    return ends.filter(F.col(S.U) != F.col(S.V)).distinct()
