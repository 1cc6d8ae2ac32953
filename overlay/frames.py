"""Small driver-side rows to DataFrames without Python workers.

`spark.createDataFrame(list_of_tuples)` ships pickled rows through Python worker processes: about
a second per use on a small machine. Going through pandas and Arrow keeps it in the JVM (a tenth
of that), which matters for the greedy rounds that hand a batch back to Spark every round.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType


def local_frame(spark: SparkSession, rows: list[tuple], schema: StructType | str) -> DataFrame:
    """A DataFrame of `rows` (tuples in schema order), built via Arrow."""
    if isinstance(schema, str):
        schema = StructType.fromDDL(schema)
    names = [field.name for field in schema.fields]
    table = pd.DataFrame.from_records(rows, columns=names) if rows else pd.DataFrame({n: [] for n in names})
    for field in schema.fields:
        if field.dataType.typeName() in ("long", "integer") and not table[field.name].isna().any():
            table[field.name] = table[field.name].astype("int64" if field.dataType.typeName() == "long" else "int32")
    return spark.createDataFrame(table, schema)


def arrow_at_once(frames: dict[str, DataFrame]) -> dict[str, pa.Table]:
    """Each frame's rows as an Arrow table, the reads from threads of their own: a small read is
    mostly a Spark job's latency, so a memory-regime job reads its inputs side by side."""
    if not frames:
        return {}
    with ThreadPoolExecutor(max_workers=len(frames), thread_name_prefix="read") as pool:
        return dict(zip(frames, pool.map(lambda frame: frame.toArrow(), frames.values())))
