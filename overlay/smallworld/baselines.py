"""Data-oblivious small-world overlays (BeaConvey Table 2): RandomS rings, Chord and RandomL
fingers. Randomness is `xxhash64` of (seed, ...), so a seed gives the same overlay on any
cluster layout.

Frames: a ring is (node_id, position) with positions 0..n-1; fingers are
(node_id, phase, finger) with `finger` a node id, phase 0 being the ring successor.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.instance.ids import with_dense_id
from overlay.smallworld.geometry import phase_count, power_of_two

_TARGET = "_target"


def random_ring(nodes: DataFrame, seed: int) -> DataFrame:
    """RandomS: positions are a seeded random permutation of the nodes."""
    keyed = nodes.select(S.NODE_ID).withColumn("_h", F.xxhash64(F.lit(seed), F.lit("ring"), S.NODE_ID))
    return with_dense_id(keyed, ["_h", S.NODE_ID], S.POSITION).select(S.NODE_ID, S.POSITION)


def _phases(ring: DataFrame, n: int, first: int = 0) -> DataFrame:
    spark = ring.sparkSession
    phases = spark.range(first, phase_count(n)).select(F.col("id").cast("int").alias(S.PHASE))
    return ring.crossJoin(F.broadcast(phases))


def _resolve(targets: DataFrame, ring: DataFrame) -> DataFrame:
    """(node_id, phase, _target position) -> (node_id, phase, finger node id)."""
    at = ring.select(F.col(S.POSITION).alias(_TARGET), F.col(S.NODE_ID).alias(S.FINGER))
    return targets.join(at, on=_TARGET).select(S.NODE_ID, S.PHASE, S.FINGER)


def chord_fingers(ring: DataFrame, n: int, first_phase: int = 0) -> DataFrame:
    """Chord: finger[i] is the first node of phase i, position + 2^i."""
    targets = _phases(ring, n, first_phase).withColumn(
        _TARGET, F.pmod(F.col(S.POSITION) + power_of_two(F.col(S.PHASE)), F.lit(n))
    )
    return _resolve(targets, ring)


def random_fingers(ring: DataFrame, n: int, seed: int, first_phase: int = 0) -> DataFrame:
    """RandomL: finger[i] uniform over phase i, [position + 2^i, position + min(2^(i+1), n))."""
    low = power_of_two(F.col(S.PHASE))
    width = F.least(power_of_two(F.col(S.PHASE) + 1), F.lit(n)) - low
    offset = low + F.pmod(F.xxhash64(F.lit(seed), F.lit("finger"), S.NODE_ID, S.PHASE), width)
    targets = _phases(ring, n, first_phase).withColumn(_TARGET, F.pmod(F.col(S.POSITION) + offset, F.lit(n)))
    return _resolve(targets, ring)


def successor_fingers(ring: DataFrame, n: int) -> DataFrame:
    """finger[0] of every node: its clockwise neighbour on the ring."""
    return chord_fingers(ring, n).filter(F.col(S.PHASE) == 0)
