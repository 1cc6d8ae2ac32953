"""Reading edge-list files (SNAP text, TSV/CSV, MatrixMarket), plain or compressed.

Every line is classified, none is dropped silently:

* not rows: comment lines (`#`, `%`), blank lines, a header line (the first non-comment line of
  a file when none of its fields is a number), and the MatrixMarket size line (the first
  non-comment line of a file with a `%%MatrixMarket` or `%MatrixMarket` banner, or named `.mtx`);
* rows: an `edge` with two numeric ids, or a rejected row with its reason: wrong field count,
  a non-numeric id, an id out of 64-bit range, a self-loop.

Fields are separated by whitespace, commas or semicolons; CRLF endings are fine. MatrixMarket
entries may carry a value column (ignored). Ids are normalised (`007` is `7`) and kept as keys.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.inputs import check_gzip_files, read_failure
from overlay.instance.ids import read_lines_numbered
from overlay.lineage import LOCAL, Lineage

TEXT = "text"
KIND = "kind"
A_KEY = "a_key"
B_KEY = "b_key"
# Kinds of line.
EDGE, REJECTED, COMMENT, BLANK, HEADER, SIZE_LINE = "edge", "rejected", "comment", "blank", "header", "size"
ENTRIES = "entries"
NOT_ROWS = (COMMENT, BLANK, HEADER, SIZE_LINE)

_ID_PATTERN = r"^[+-]?[0-9]+$"


def read_numbered_lines(spark: SparkSession, path: str, lineage: Lineage = LOCAL) -> DataFrame:
    """(source_file, line, text) of every line; a missing or undecodable file is an InputError."""
    check_gzip_files(path)
    try:
        lines = read_lines_numbered(spark, path, S.LINE, S.SOURCE_FILE, TEXT, lineage)
    except Exception as error:
        raise (read_failure(error, path) or error) from None
    return lines


def _canonical_id(field: Column) -> Column:
    return field.try_cast("long").cast("string")


def classify_edge_lines(lines: DataFrame) -> DataFrame:
    """(source_file, line, text) -> adds kind, a_key, b_key, reason."""
    stripped = F.regexp_replace(F.col(TEXT), r"^\s+|\s+$", "")
    is_comment = stripped.startswith("#") | stripped.startswith("%")
    frame = lines.withColumn("_s", stripped).withColumn("_fields", F.split(F.col("_s"), r"[\s,;]+"))
    content = ~is_comment & (F.col("_s") != "")
    banner = (F.col(S.LINE) == 1) & F.lower(F.col("_s")).rlike("^%{1,2}matrixmarket")
    mtx_name = F.lower(F.col(S.SOURCE_FILE)).rlike(r"\.mtx(\.[a-z0-9]+)?$")
    file_facts = frame.groupBy(S.SOURCE_FILE).agg(
        ((F.max(F.when(banner, 1).otherwise(0)) == 1) | F.first(mtx_name)).alias("_mtx"),
        F.min(F.when(content, F.col(S.LINE))).alias("_first_content"),
    )
    frame = frame.join(F.broadcast(file_facts), on=S.SOURCE_FILE)
    field_count = F.size("_fields")
    a_raw = F.try_element_at(F.col("_fields"), F.lit(1))
    b_raw = F.try_element_at(F.col("_fields"), F.lit(2))
    a_num, b_num = a_raw.rlike(_ID_PATTERN), b_raw.rlike(_ID_PATTERN)
    a_key, b_key = _canonical_id(a_raw), _canonical_id(b_raw)
    first_content = F.col(S.LINE) == F.col("_first_content")
    all_text = F.forall("_fields", lambda f: ~f.rlike(r"^[+-]?[0-9.eE+-]+$"))
    max_fields = F.when(F.col("_mtx"), F.lit(3)).otherwise(F.lit(2))

    kind = (
        F.when(F.col("_s") == "", BLANK)
        .when(is_comment, COMMENT)
        .when(first_content & F.col("_mtx"), SIZE_LINE)
        .when(first_content & all_text, HEADER)
        .otherwise(None)
    )
    reason = (
        F.when(
            (field_count < 2) | (field_count > max_fields),
            F.format_string("malformed line: expected 2 fields (source target), found %d", field_count),
        )
        .when(~a_num, F.format_string("non-numeric node id '%s'", a_raw))
        .when(~b_num, F.format_string("non-numeric node id '%s'", b_raw))
        .when(a_key.isNull(), F.format_string("node id '%s' is out of the 64-bit range", a_raw))
        .when(b_key.isNull(), F.format_string("node id '%s' is out of the 64-bit range", b_raw))
        .when(a_key == b_key, F.format_string("self-loop on node %s", a_key))
    )
    frame = frame.withColumn(KIND, kind).withColumn(S.REASON, F.when(F.col(KIND).isNull(), reason))
    frame = frame.withColumn(
        KIND,
        F.coalesce(F.col(KIND), F.when(F.col(S.REASON).isNotNull(), F.lit(REJECTED)), F.lit(EDGE)),
    )
    is_edge = F.col(KIND) == EDGE
    return frame.select(
        S.SOURCE_FILE,
        S.LINE,
        TEXT,
        KIND,
        F.when(is_edge, a_key).alias(A_KEY),
        F.when(is_edge, b_key).alias(B_KEY),
        S.REASON,
    )


def file_tallies(read: DataFrame) -> list:
    """Per input file, in one job: its rows (`entries`: edges and rejected rows), the rejected ones,
    and its MatrixMarket size line if it has one. `read`: the classified lines without comments,
    blanks and headers. One row per file: bounded by the files of the input, not its lines."""
    size_line = F.col(KIND) == SIZE_LINE
    return (
        read.groupBy(S.SOURCE_FILE)
        .agg(
            F.sum(F.when(size_line, 0).otherwise(1)).alias(ENTRIES),
            F.sum(F.when(F.col(KIND) == REJECTED, 1).otherwise(0)).alias(S.REJECTED),
            F.max(F.when(size_line, F.col(TEXT))).alias(SIZE_LINE),
        )
        .collect()
    )


def check_declared_entries(files: list) -> None:
    """A MatrixMarket file whose entry lines (edges and rejected rows) are not as many as its size
    line declares is refused: cut at a line boundary, a truncated file reads as a smaller graph.
    `files`: `file_tallies`."""
    for tally in files:
        line = tally[SIZE_LINE]
        if line is None:
            continue
        fields = line.replace(",", " ").replace(";", " ").split()
        if len(fields) != 3 or not all(f.isdigit() for f in fields):
            raise InputError(
                f"{tally[S.SOURCE_FILE]}: its MatrixMarket size line is {line[:60]!r}, not 'rows columns entries'"
            )
        declared, found = int(fields[2]), tally[ENTRIES]
        if declared != found:
            raise InputError(
                f"{tally[S.SOURCE_FILE]}: its size line declares {declared:,} entries but it holds {found:,} entry "
                f"lines: the file is {'truncated' if found < declared else 'damaged'}; fetch it again"
            )
