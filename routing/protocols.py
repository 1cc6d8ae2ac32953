"""The routing rules (`routing.rules`) as Spark columns, for the DataFrame supersteps.

Each column is an Arrow UDF that hands a batch of rows to the same numba functions the compiled
engine runs, so the two engines cannot read a rule differently: the rows carry the routing
table of the node holding each message (`fdist`, `subs`: `routing.network`), as list columns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.types import ArrayType, IntegerType, LongType, StructField, StructType

from overlay import registry
from routing import rules

PROTOCOLS = registry.protocols(registry.ROUTING)
BEACONVEY = ("po", "pa1", "pie")
HOP_LOW, HOP_HIGH, HOP_FINGER = "low", "high", "finger"
# Types as objects, not DDL strings: parsing DDL needs a session, and the Python workers that
# import this module have none.
_HOPS_TYPE = ArrayType(
    StructType(
        [
            StructField(HOP_LOW, LongType()),
            StructField(HOP_HIGH, LongType()),
            StructField(HOP_FINGER, IntegerType()),
        ]
    )
)


def _list_parts(lists: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values) of a list<bigint> batch; the offsets index the unsliced values."""
    offsets = np.asarray(lists.offsets, dtype=np.int64)
    values = lists.values.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return offsets, values


def _longs(column: pa.Array) -> np.ndarray:
    return column.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _send_batch(fdist: pa.Array, distance: pa.Array) -> pa.Array:
    index = rules.send_rows(*_list_parts(fdist), _longs(distance))
    return pa.array(index.astype(np.int32), mask=index < 0)


_send = arrow_udf(_send_batch, IntegerType())


def send_finger(fdist: Column, distance: Column) -> Column:
    """`rules.send`: the index into `fdist` (0-based; null when none fits) of the finger to
    forward along towards a position `distance` ahead."""
    return _send(fdist, distance)


def along(table: Column, finger: Column) -> Column:
    """A finger's entry of a per-finger array (`fdist`, `flat`), by `send_finger`'s index."""
    return F.get(table, finger)


def hop_messages(protocol: str, n: int, at: Column, low: Column, high: Column, fdist: Column, subs: Column) -> Column:
    """`rules.hop_rows`: the messages a range message [low, high) at the node `at` sends this
    superstep (towards low, or spread at low), as an array of (low, high, finger) structs,
    `finger` indexing `fdist` (null when none fits). `subs` may be null away from low."""
    code = rules.PROTOCOL_CODES[protocol]

    def hop_batch(at: pa.Array, low: pa.Array, high: pa.Array, fdist: pa.Array, subs: pa.Array) -> pa.Array:
        offsets, lows, highs, fingers = rules.hop_rows(
            code, n, _longs(at), _longs(low), _longs(high), *_list_parts(fdist), *_list_parts(subs)
        )
        sent = pa.StructArray.from_arrays(
            [pa.array(lows), pa.array(highs), pa.array(fingers.astype(np.int32), mask=fingers < 0)],
            names=[HOP_LOW, HOP_HIGH, HOP_FINGER],
        )
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), sent)

    return arrow_udf(hop_batch, _HOPS_TYPE)(at, low, high, fdist, subs)
