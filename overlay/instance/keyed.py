"""A subscriptions file as an instance: CSV (with a header) or Parquet with columns `node,topic`.

Keys are strings, trimmed of surrounding whitespace; header names match case-insensitively and
other columns are ignored. Each data row is accepted, rejected (a null or blank key, a CSV line
with more fields than the header) or a duplicate of an earlier (node, topic) row. Blank CSV lines
are not rows. Dense ids number the keys of accepted rows in key order, nodes and topics apart.

CSV is read as text and parsed line by line (`from_csv`), so every rejected row carries its
real line number. A quoted field may not span lines.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType
from pyspark.sql.utils import AnalysisException

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.ids import file_path_column, pairs_to_ids, read_lines_numbered, with_dense_id
from overlay.instance.model import InstanceFrames, RowTally

NODE_COLUMN, TOPIC_COLUMN = "node", "topic"
_NODE, _TOPIC, _OVERFLOW, _TEXT = "_node", "_topic", "_overflow", "_text"


@dataclass(frozen=True)
class SubscriptionsFileSpec:
    path: str

    def validate(self) -> None:
        if not self.path.strip():
            raise InputError("--path is empty")

    @property
    def is_parquet(self) -> bool:
        return self.path.rstrip("/").lower().endswith(".parquet")


def _missing_file(error: AnalysisException, path: str) -> InputError | None:
    if "PATH_NOT_FOUND" in str(error) or "Path does not exist" in str(error):
        return InputError(f"file not found: {path}. Check the --path argument.")
    return None


def _locate(columns: list[str], path: str) -> tuple[int, int]:
    """Positions of the node and topic columns, or an error listing what the file has."""
    normalised = [c.strip().lower() for c in columns]
    missing = [c for c in (NODE_COLUMN, TOPIC_COLUMN) if c not in normalised]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}; the file has columns "
            f"{', '.join(repr(c) for c in columns) or '(none)'}. Expected a header with "
            f"'{NODE_COLUMN}' and '{TOPIC_COLUMN}' (one subscription per row)."
        )
    return normalised.index(NODE_COLUMN), normalised.index(TOPIC_COLUMN)


def _read_csv(spark: SparkSession, path: str) -> DataFrame:
    """(source_file, line, record, _node, _topic, _overflow) for every non-blank data line."""
    try:
        lines = read_lines_numbered(spark, path, S.LINE, S.SOURCE_FILE, _TEXT)
    except AnalysisException as error:
        raise (_missing_file(error, path) or error) from None
    lines = lines.withColumn(_TEXT, F.regexp_replace(_TEXT, r"\r$", ""))
    header_rows = lines.filter(F.col(S.LINE) == 1).select(_TEXT).limit(1).collect()
    if not header_rows or not header_rows[0][_TEXT].strip():
        raise InputError(f"{path}: the file is empty; expected a header line 'node,topic'")
    header = [c.strip().strip('"') for c in header_rows[0][_TEXT].split(",")]
    node_at, topic_at = _locate(header, path)
    fields = [StructField(f"_c{i}", StringType()) for i in range(len(header))]
    parse_schema = StructType([*fields, StructField(_OVERFLOW, StringType())])
    parsed = F.from_csv(F.col(_TEXT), parse_schema.simpleString(), {"mode": "PERMISSIVE"})
    return (
        lines.filter((F.col(S.LINE) > 1) & (F.trim(F.col(_TEXT)) != ""))
        .withColumn("_parsed", parsed)
        .select(
            S.SOURCE_FILE,
            S.LINE,
            F.col(_TEXT).alias(S.RECORD),
            F.col(f"_parsed._c{node_at}").alias(_NODE),
            F.col(f"_parsed._c{topic_at}").alias(_TOPIC),
            F.col(f"_parsed.{_OVERFLOW}").alias(_OVERFLOW),
        )
    )


def _read_parquet(spark: SparkSession, path: str) -> DataFrame:
    try:
        frame = spark.read.parquet(path)
    except AnalysisException as error:
        raise (_missing_file(error, path) or error) from None
    node_at, topic_at = _locate(frame.columns, path)
    node_col, topic_col = frame.columns[node_at], frame.columns[topic_at]
    return frame.select(
        file_path_column().alias(S.SOURCE_FILE),
        (F.col("_metadata.row_index") + 1).alias(S.LINE),
        F.to_json(F.struct(F.col(node_col).alias("node"), F.col(topic_col).alias("topic"))).alias(S.RECORD),
        F.col(node_col).cast("string").alias(_NODE),
        F.col(topic_col).cast("string").alias(_TOPIC),
        F.lit(None).cast("string").alias(_OVERFLOW),
    )


def _reason() -> F.Column:
    node, topic = F.trim(F.col(_NODE)), F.trim(F.col(_TOPIC))
    return (
        F.when(F.col(_OVERFLOW).isNotNull(), F.lit("malformed row: more fields than the header"))
        .when(F.col(_NODE).isNull(), F.lit("missing node key"))
        .when(node == "", F.lit("blank node key"))
        .when(F.col(_TOPIC).isNull(), F.lit("missing topic key"))
        .when(topic == "", F.lit("blank topic key"))
    )


def subscriptions_file_instance(spark: SparkSession, spec: SubscriptionsFileSpec) -> InstanceFrames:
    spec.validate()
    raw = _read_parquet(spark, spec.path) if spec.is_parquet else _read_csv(spark, spec.path)
    rows = raw.withColumn(S.REASON, _reason()).localCheckpoint(eager=True)
    read = rows.count()
    if read == 0:
        raise InputError(f"{spec.path}: no data rows (the file has a header but nothing under it)")
    rejected = rows.filter(F.col(S.REASON).isNotNull()).select(
        S.RECORD, S.REASON, S.SOURCE_FILE, S.LINE
    )
    first_seen = Window.partitionBy(_NODE, _TOPIC).orderBy(S.SOURCE_FILE, S.LINE)
    valid = (
        rows.filter(F.col(S.REASON).isNull())
        .select(F.trim(_NODE).alias(_NODE), F.trim(_TOPIC).alias(_TOPIC), S.SOURCE_FILE, S.LINE)
        .withColumn("_first", F.row_number().over(first_seen) == 1)
        .localCheckpoint(eager=True)
    )
    accepted = valid.filter("_first").select(_NODE, _TOPIC)
    rejected_count = rejected.count()
    accepted_count = accepted.count()
    tally = RowTally(
        read=read,
        accepted=accepted_count,
        rejected=rejected_count,
        duplicates=read - rejected_count - accepted_count,
    )
    if tally.accepted == 0:
        raise InputError(
            f"{spec.path}: none of the {read} rows is usable ({tally.rejected} rejected); every "
            "row needs a non-blank node and topic key"
        )
    node_ids = with_dense_id(accepted.select(F.col(_NODE).alias(S.KEY)).distinct(), [S.KEY], S.ID)
    topic_ids = with_dense_id(accepted.select(F.col(_TOPIC).alias(S.KEY)).distinct(), [S.KEY], S.ID)
    return InstanceFrames(
        source="subscriptions",
        params=asdict(spec),
        subscriptions=pairs_to_ids(accepted, _NODE, _TOPIC, node_ids, topic_ids, S.KEY),
        node_keys=node_ids,
        topic_keys=topic_ids,
        rejected=rejected,
        tally=tally,
    )
