from chispa import assert_df_equality
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.instance import edgelist as E


def classified(spark, path):
    frame = E.classify_edge_lines(E.read_numbered_lines(spark, path))
    return frame.select(S.LINE, E.KIND, E.A_KEY, E.B_KEY, S.REASON)


def expected(spark, rows):
    return spark.createDataFrame(
        rows, f"{S.LINE} long, {E.KIND} string, {E.A_KEY} string, {E.B_KEY} string, {S.REASON} string"
    )


def test_every_line_is_classified(spark, write_text):
    path = write_text(
        "g.txt",
        "# a comment\n"
        "FromNodeId\tToNodeId\n"
        "1\t2\n"
        "\n"
        "  007 , 3  \n"
        "4\n"
        "5 6 7\n"
        "x 9\n"
        "8 8\n"
        "99999999999999999999 1\n"
        "% another comment\n",
        newline="\r\n",
    )
    assert_df_equality(
        classified(spark, path),
        expected(
            spark,
            [
                (1, "comment", None, None, None),
                (2, "header", None, None, None),
                (3, "edge", "1", "2", None),
                (4, "blank", None, None, None),
                (5, "edge", "7", "3", None),
                (6, "rejected", None, None, "malformed line: expected 2 fields (source target), found 1"),
                (7, "rejected", None, None, "malformed line: expected 2 fields (source target), found 3"),
                (8, "rejected", None, None, "non-numeric node id 'x'"),
                (9, "rejected", None, None, "self-loop on node 8"),
                (10, "rejected", None, None, "node id '99999999999999999999' is out of the 64-bit range"),
                (11, "comment", None, None, None),
            ],
        ),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def test_matrix_market_size_line_and_values(spark, write_text):
    path = write_text(
        "g.mtx.gz",
        "%%MatrixMarket matrix coordinate real symmetric\n% comment\n3 3 2\n1 2 0.5\n2 3 1.0\n",
    )
    assert_df_equality(
        classified(spark, path),
        expected(
            spark,
            [
                (1, "comment", None, None, None),
                (2, "comment", None, None, None),
                (3, "size", None, None, None),
                (4, "edge", "1", "2", None),
                (5, "edge", "2", "3", None),
            ],
        ),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def test_matrix_market_single_percent_banner_and_mtx_name(spark, write_text):
    for name, banner in (("a.txt", "%MatrixMarket matrix coordinate pattern symmetric\n"), ("b.mtx", "")):
        path = write_text(name, banner + "3 3 2\n1 2\n2 3\n")
        kinds = [r[E.KIND] for r in classified(spark, path).orderBy(S.LINE).collect()]
        assert kinds == (["comment"] if banner else []) + ["size", "edge", "edge"], name


def test_line_numbers_survive_file_splits(spark, write_text):
    lines = "".join(f"{i} {i + 1}\n" for i in range(1, 20001))
    path = write_text("big.txt", lines)
    spark.conf.set("spark.sql.files.maxPartitionBytes", "16384")
    try:
        frame = E.read_numbered_lines(spark, path)
        assert frame.rdd.getNumPartitions() > 4
        wrong = frame.filter(frame[E.TEXT] != F.format_string("%d %d", frame[S.LINE], frame[S.LINE] + 1))
        assert frame.count() == 20000 and wrong.count() == 0
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
