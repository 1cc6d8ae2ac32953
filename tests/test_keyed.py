import pytest
from chispa import assert_df_equality

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.keyed import SubscriptionsFileSpec, subscriptions_file_instance
from overlay.instance.model import RowTally
from tests.helpers import keyed_subscriptions, pairs

CSV = (
    "Node, topic ,extra\n"
    "alice,news,1\n"
    "bob,news,2\n"
    "\n"
    " alice , sport,3\n"
    "alice,news,4\n"
    ",news,5\n"
    "carol,   ,6\n"
    "dave\n"
    "erin,sport,7,8\n"
)


def test_csv_rows_accepted_rejected_and_duplicates(spark, write_text):
    path = write_text("subs.csv", CSV, newline="\r\n")
    frames = subscriptions_file_instance(spark, SubscriptionsFileSpec(path=path))
    assert_df_equality(
        keyed_subscriptions(frames),
        pairs(spark, [("alice", "news"), ("bob", "news"), ("alice", "sport")]),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    assert frames.tally == RowTally(read=8, accepted=3, rejected=4, duplicates=1)
    expected = spark.createDataFrame(
        [
            (",news,5", "missing node key", path, 7),
            ("carol,   ,6", "blank topic key", path, 8),
            ("dave", "missing topic key", path, 9),
            ("erin,sport,7,8", "malformed row: more fields than the header", path, 10),
        ],
        S.REJECTED_FRAME_SCHEMA,
    )
    assert_df_equality(frames.rejected, expected, ignore_row_order=True, ignore_nullable=True)


def test_node_and_topic_ids_are_dense_in_key_order(spark, write_text):
    frames = subscriptions_file_instance(spark, SubscriptionsFileSpec(path=write_text("s.csv", CSV)))
    key_schema = f"{S.KEY} string, {S.ID} long"
    assert_df_equality(
        frames.node_keys,
        spark.createDataFrame([("alice", 0), ("bob", 1)], key_schema),
        ignore_row_order=True,
        ignore_nullable=True,
    )
    assert_df_equality(
        frames.topic_keys,
        spark.createDataFrame([("news", 0), ("sport", 1)], key_schema),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def test_parquet_with_nulls_and_numeric_keys(spark, tmp_path):
    path = str(tmp_path / "subs.parquet")
    spark.createDataFrame(
        [(1, "t1"), (2, "t1"), (None, "t2"), (1, "t1"), (3, None)], "node long, topic string"
    ).coalesce(1).write.parquet(path)
    frames = subscriptions_file_instance(spark, SubscriptionsFileSpec(path=path))
    assert frames.tally == RowTally(read=5, accepted=2, rejected=2, duplicates=1)
    reasons = sorted((r[S.REASON], r[S.LINE]) for r in frames.rejected.collect())
    assert reasons == [("missing node key", 3), ("missing topic key", 5)]
    # t1 has two subscribers; no topic lost.
    assert frames.topic_keys.count() == 1


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "the file is empty"),
        ("node,topic\n", "no data rows"),
        ("user,feed\na,b\n", "missing column(s) node, topic; the file has columns 'user', 'feed'"),
        ("node,feed\na,b\n", "missing column(s) topic"),
        ("node,topic\n,x\n  ,y\n", "none of the 2 rows is usable (2 rejected)"),
    ],
    ids=["empty-file", "header-only", "wrong-columns", "missing-column", "all-blank-keys"],
)
def test_unusable_files_are_clear_errors(spark, write_text, text, fragment):
    with pytest.raises(InputError) as error:
        subscriptions_file_instance(spark, SubscriptionsFileSpec(path=write_text("s.csv", text)))
    assert fragment in str(error.value)


def test_missing_files(spark, tmp_path):
    for name in ("nope.csv", "nope.parquet"):
        with pytest.raises(InputError, match=f"file not found: .*{name}"):
            subscriptions_file_instance(spark, SubscriptionsFileSpec(path=str(tmp_path / name)))


def test_parquet_missing_column(spark, tmp_path):
    path = str(tmp_path / "s.parquet")
    spark.createDataFrame([("a",)], "node string").write.parquet(path)
    with pytest.raises(InputError, match=r"missing column\(s\) topic; the file has columns 'node'"):
        subscriptions_file_instance(spark, SubscriptionsFileSpec(path=path))
