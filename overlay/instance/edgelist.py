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

TEXT = "text"
KIND = "kind"
A_KEY = "a_key"
B_KEY = "b_key"
# Kinds of line.
EDGE, REJECTED, COMMENT, BLANK, HEADER, SIZE_LINE = "edge", "rejected", "comment", "blank", "header", "size"
NOT_ROWS = (COMMENT, BLANK, HEADER, SIZE_LINE)

_ID_PATTERN = r"^[+-]?[0-9]+$"


def read_numbered_lines(spark: SparkSession, path: str) -> DataFrame:
    """(source_file, line, text) of every line; a missing or undecodable file is an InputError."""
    check_gzip_files(path)
    try:
        lines = read_lines_numbered(spark, path, S.LINE, S.SOURCE_FILE, TEXT)
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


def check_declared_entries(read: DataFrame) -> None:
    """A MatrixMarket file whose entry lines (edges and rejected rows) are not as many as its size
    line declares is refused: cut at a line boundary, a truncated file reads as a smaller graph.
    `read`: the classified lines without comments, blanks and headers; one row per file comes
    back (its size line), and one count per such file."""
    sizes = read.filter(F.col(KIND) == SIZE_LINE).select(S.SOURCE_FILE, TEXT).collect()  # one per file
    if not sizes:
        return
    entries = {
        r[S.SOURCE_FILE]: r["count"]
        for r in read.filter(F.col(KIND) != SIZE_LINE)
        .filter(F.col(S.SOURCE_FILE).isin([r[S.SOURCE_FILE] for r in sizes]))
        .groupBy(S.SOURCE_FILE)
        .count()
        .collect()
    }
    for size in sizes:
        fields = size[TEXT].replace(",", " ").replace(";", " ").split()
        if len(fields) != 3 or not all(f.isdigit() for f in fields):
            raise InputError(
                f"{size[S.SOURCE_FILE]}: its MatrixMarket size line is {size[TEXT][:60]!r}, not 'rows columns entries'"
            )
        declared, found = int(fields[2]), entries.get(size[S.SOURCE_FILE], 0)
        if declared != found:
            raise InputError(
                f"{size[S.SOURCE_FILE]}: its size line declares {declared:,} entries but it holds {found:,} entry "
                f"lines: the file is {'truncated' if found < declared else 'damaged'}; fetch it again"
            )
