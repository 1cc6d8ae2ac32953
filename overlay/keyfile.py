"""Files of key pairs: CSV with a header, or Parquet, with two named key columns.

Used for subscription files (`node,topic`) and imported overlays (`u,v`). Header names match
case-insensitively and other columns are ignored. CSV is read as text and parsed line by line
(`from_csv`), so every row keeps its real line number; blank lines are not rows, and a quoted
field may not span lines. Parquet rows are numbered by their position in the file.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType
from pyspark.sql.utils import AnalysisException

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.ids import file_path_column, read_lines_numbered

FIRST, SECOND, OVERFLOW = "_first", "_second", "_overflow"
_TEXT = "_text"


def is_parquet(path: str) -> bool:
    return path.rstrip("/").lower().endswith(".parquet")


def missing_file_error(error: AnalysisException, path: str) -> InputError | None:
    if "PATH_NOT_FOUND" in str(error) or "Path does not exist" in str(error):
        return InputError(f"file not found: {path}. Check the --path argument.")
    return None


def _locate(columns: list[str], path: str, names: tuple[str, str], what: str) -> tuple[int, int]:
    """Positions of the two key columns, or an error listing what the file has."""
    normalised = [c.strip().lower() for c in columns]
    missing = [c for c in names if c not in normalised]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}; the file has columns "
            f"{', '.join(repr(c) for c in columns) or '(none)'}. Expected a header with "
            f"'{names[0]}' and '{names[1]}' ({what})."
        )
    return normalised.index(names[0]), normalised.index(names[1])


def _read_csv(spark: SparkSession, path: str, names: tuple[str, str], what: str) -> DataFrame:
    try:
        lines = read_lines_numbered(spark, path, S.LINE, S.SOURCE_FILE, _TEXT)
    except AnalysisException as error:
        raise (missing_file_error(error, path) or error) from None
    lines = lines.withColumn(_TEXT, F.regexp_replace(_TEXT, r"\r$", ""))
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
        )
    )


def _read_parquet(spark: SparkSession, path: str, names: tuple[str, str], what: str) -> DataFrame:
    try:
        frame = spark.read.parquet(path)
    except AnalysisException as error:
        raise (missing_file_error(error, path) or error) from None
    first_at, second_at = _locate(frame.columns, path, names, what)
    first_col, second_col = frame.columns[first_at], frame.columns[second_at]
    return frame.select(
        file_path_column().alias(S.SOURCE_FILE),
        (F.col("_metadata.row_index") + 1).alias(S.LINE),
        F.to_json(F.struct(F.col(first_col).alias(names[0]), F.col(second_col).alias(names[1]))).alias(S.RECORD),
        F.col(first_col).cast("string").alias(FIRST),
        F.col(second_col).cast("string").alias(SECOND),
        F.lit(None).cast("string").alias(OVERFLOW),
    )


def read_key_pairs(spark: SparkSession, path: str, names: tuple[str, str], what: str) -> DataFrame:
    """(source_file, line, record, _first, _second, _overflow) for every data row of the file."""
    reader = _read_parquet if is_parquet(path) else _read_csv
    return reader(spark, path, names, what)


def key_pair_problem(names: tuple[str, str]) -> Column:
    """Why a row of `read_key_pairs` cannot be used (null when it can)."""
    first, second = F.trim(F.col(FIRST)), F.trim(F.col(SECOND))
    return (
        F.when(F.col(OVERFLOW).isNotNull(), F.lit("malformed row: more fields than the header"))
        .when(F.col(FIRST).isNull(), F.lit(f"missing {names[0]} key"))
        .when(first == "", F.lit(f"blank {names[0]} key"))
        .when(F.col(SECOND).isNull(), F.lit(f"missing {names[1]} key"))
        .when(second == "", F.lit(f"blank {names[1]} key"))
    )
