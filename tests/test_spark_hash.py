"""`overlay.spark_hash` against Spark's own `xxhash64` column: ints, longs and strings of every
length class of XXH64 (under 4, 4-7, 8-31 and 32 bytes or more, multi-byte UTF-8 too)."""

from __future__ import annotations

import numpy as np
from pyspark.sql import functions as F

from overlay.spark_hash import SPARK_SEED, hash_bytes, hash_int, hash_long

STRINGS = [
    "",
    "a",
    "abc",
    "topic",
    "publisher",
    "seven by",
    "x" * 31,
    "y" * 32,
    "a longer string of 45 bytes..",
    "é∂ß—" * 9,
]


def _signed(value) -> int:
    return int(np.uint64(value).astype(np.int64))


def test_folding_ints_longs_and_strings_is_sparks_xxhash64(spark):
    ints, longs = [0, 1, -7, 2**31 - 1, -(2**31)], [0, 5, -1, 2**40 + 3, -(2**62)]
    for text in STRINGS:
        for i, long in zip(ints, longs):
            row = spark.range(1).select(
                F.xxhash64(F.lit(i).cast("int"), F.lit(text), F.lit(long).cast("long")).alias("h")
            )
            h = hash_int(i, SPARK_SEED)
            h = hash_bytes(np.frombuffer(text.encode(), np.uint8), np.uint64(h))
            h = hash_long(long, np.uint64(h))
            assert _signed(h) == row.first()["h"], (text, i, long)
