"""Files of key pairs: CSV with a header, or Parquet, with two named key columns.

Used for subscription files (`node,topic`) and imported overlays (`u,v`). Header names match
case-insensitively (each may appear once) and other columns are ignored. CSV is read as text and
parsed line by line (`from_csv`), so every row keeps its real line number; blank lines are not
rows, and a quoted field may not span lines. Parquet rows are numbered by their position in the
file; its key columns hold text or numbers (read as their text). A row that is not UTF-8 text is
rejected (Spark would read each undecodable byte as U+FFFD, and so merge distinct keys).
"""

from __future__ import annotations

import re

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StringType, StructField, StructType

from overlay import schema as S
from overlay.errors import InputError, excerpt
from overlay.inputs import check_gzip_files, check_parquet_files, read_failure
from overlay.instance.ids import file_path_column, read_lines_numbered
from overlay.lineage import LOCAL, Lineage

FIRST, SECOND, OVERFLOW = "_first", "_second", "_overflow"
UTF8 = "_utf8"  # whether the row is UTF-8 text: checked on the raw bytes, before any string function decodes them
_TEXT = "_text"


def is_parquet(path: str) -> bool:
    return path.rstrip("/").lower().endswith(".parquet")


def _listed(columns: list[str], shown: int = 4) -> str:
    """The file's column names for a message: the first few, each cut short (a binary file's
    "header" is garbage)."""
    names = ", ".join(repr(excerpt(c, 24)) for c in columns[:shown])
    return (names or "(none)") + (f" and {len(columns) - shown} more" if len(columns) > shown else "")


def _locate(columns: list[str], path: str, names: tuple[str, str], what: str) -> tuple[int, int]:
    """Positions of the two key columns, or an error listing what the file has."""
    normalised = [c.strip().lower() for c in columns]
    missing = [c for c in names if c not in normalised]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}; the file has columns "
            f"{_listed(columns)}. Expected a header with '{names[0]}' and '{names[1]}' ({what})."
        )
    repeated = [c for c in names if normalised.count(c) > 1]
    if repeated:
        raise InputError(
            f"{path}: the header names column '{repeated[0]}' {normalised.count(repeated[0])} times; keep one"
        )
    return normalised.index(names[0]), normalised.index(names[1])


def _read_csv(spark: SparkSession, path: str, names: tuple[str, str], what: str, lineage: Lineage) -> DataFrame:
    check_gzip_files(path)
    try:
        lines = read_lines_numbered(spark, path, S.LINE, S.SOURCE_FILE, _TEXT, lineage)
    except Exception as error:
        raise (read_failure(error, path) or error) from None
    lines = lines.withColumn(UTF8, F.is_valid_utf8(_TEXT)).withColumn(_TEXT, F.regexp_replace(_TEXT, r"\r$", ""))
    header_rows = lines.filter(F.col(S.LINE) == 1).select(_TEXT).limit(1).collect()
    if not header_rows or not header_rows[0][_TEXT].strip():
        raise InputError(f"{path}: the file is empty; expected a header line '{names[0]},{names[1]}'")
    header = [c.strip().strip('"') for c in header_rows[0][_TEXT].split(",")]
    first_at, second_at = _locate(header, path, names, what)
    fields = [StructField(f"_c{i}", StringType()) for i in range(len(header))]
    parse_schema = StructType([*fields, StructField(OVERFLOW, StringType())])
    parsed = F.from_csv(F.col(_TEXT), parse_schema.simpleString(), {"mode": "PERMISSIVE"})
    return (
        lines.filter((F.col(S.LINE) > 1) & (F.trim(F.col(_TEXT)) != ""))
        .withColumn("_parsed", parsed)
        .select(
            S.SOURCE_FILE,
            S.LINE,
            F.col(_TEXT).alias(S.RECORD),
            F.col(f"_parsed._c{first_at}").alias(FIRST),
            F.col(f"_parsed._c{second_at}").alias(SECOND),
            F.col(f"_parsed.{OVERFLOW}").alias(OVERFLOW),
            UTF8,
        )
    )


def _parquet_schema_error(error: Exception, path: str) -> InputError | None:
    """A Parquet input whose schema Spark cannot take: no data files, or one name twice."""
    text = str(error)
    if "UNABLE_TO_INFER_SCHEMA" in text:
        return InputError(f"{path}: no Parquet data to read (an empty folder?); check the --path argument")
    if "COLUMN_ALREADY_EXISTS" in text:
        named = re.search(r"column `([^`]*)`", text)
        column = f" '{excerpt(named.group(1))}'" if named else ""
        return InputError(f"{path}: the file has two columns named{column}; keep one")
    return None


def _read_parquet(spark: SparkSession, path: str, names: tuple[str, str], what: str, lineage: Lineage) -> DataFrame:
    check_parquet_files(path)
    try:
        frame = spark.read.parquet(path)
    except Exception as error:
        raise (read_failure(error, path) or _parquet_schema_error(error, path) or error) from None
    first_at, second_at = _locate(frame.columns, path, names, what)
    first_col, second_col = frame.columns[first_at], frame.columns[second_at]
    for name, column in zip(names, (first_col, second_col)):
        kind = frame.schema[column].dataType
        if isinstance(kind, (ArrayType, MapType, StructType)):
            raise InputError(
                f"{path}: column '{column}' holds {excerpt(kind.simpleString(), 60)} values; "
                f"the {name} keys must be text or numbers"
            )
    first, second = F.col(first_col).cast("string"), F.col(second_col).cast("string")
    return frame.select(
        file_path_column().alias(S.SOURCE_FILE),
        (F.col("_metadata.row_index") + 1).alias(S.LINE),
        F.to_json(F.struct(F.col(first_col).alias(names[0]), F.col(second_col).alias(names[1]))).alias(S.RECORD),
        first.alias(FIRST),
        second.alias(SECOND),
        F.lit(None).cast("string").alias(OVERFLOW),
        F.is_valid_utf8(F.concat_ws("\n", first, second)).alias(UTF8),  # a binary column's bytes
    )


def read_key_pairs(
    spark: SparkSession, path: str, names: tuple[str, str], what: str, lineage: Lineage = LOCAL
) -> DataFrame:
    """(source_file, line, record, _first, _second, _overflow, _utf8) for every data row of the file
    (a CSV's lines read once and kept as `lineage` says)."""
    reader = _read_parquet if is_parquet(path) else _read_csv
    return reader(spark, path, names, what, lineage)


def key_pair_problem(names: tuple[str, str]) -> Column:
    """Why a row of `read_key_pairs` cannot be used (null when it can)."""
    first, second = F.trim(F.col(FIRST)), F.trim(F.col(SECOND))
    return (
        F.when(~F.col(UTF8), F.lit("not UTF-8 text (save the file as UTF-8)"))
        .when(F.col(OVERFLOW).isNotNull(), F.lit("malformed row: more fields than the header"))
        .when(F.col(FIRST).isNull(), F.lit(f"missing {names[0]} key"))
        .when(first == "", F.lit(f"blank {names[0]} key"))
        .when(F.col(SECOND).isNull(), F.lit(f"missing {names[1]} key"))
        .when(second == "", F.lit(f"blank {names[1]} key"))
    )
