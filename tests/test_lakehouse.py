import threading
from pathlib import Path

import pytest
from chispa import assert_df_equality
from deltalake import DeltaTable as ArrowDeltaTable
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance
from pipelines import lakehouse as lakehouse_module
from pipelines.lakehouse import UnknownInstanceError
from tests.helpers import run_at_once


def make(spark, seed, nodes=20):
    return synthetic_instance(
        spark, SyntheticSpec(dist="zipf", nodes=nodes, topics=15, min_subs=2, max_subs=4, seed=seed)
    )


def raw_rows(lakehouse, table, instance):
    return lakehouse.read(table).filter(F.col(S.INSTANCE) == instance)


def test_store_and_count(spark, lakehouse):
    frames = make(spark, 1)
    row = lakehouse.replace_instance("a", frames)
    subs = frames.subscriptions
    per_topic = subs.groupBy(S.TOPIC_ID).count()
    assert row[S.SUBSCRIPTIONS] == subs.count() == row[S.ROWS_READ] == row[S.ROWS_ACCEPTED]
    assert (row[S.NODES], row[S.TOPICS]) == (20, 15)
    assert row[S.SUBSCRIBED_TOPICS] == per_topic.count()
    assert row[S.SINGLE_SUBSCRIBER_TOPICS] == per_topic.filter("count = 1").count()
    assert_df_equality(
        lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "a").select(S.NODE_ID, S.TOPIC_ID),
        subs,
        ignore_row_order=True,
        ignore_nullable=True,
    )


@pytest.mark.slow  # about 28 s
def test_replacing_one_instance_leaves_others_untouched(spark, lakehouse):
    lakehouse.replace_instance("keep", make(spark, 1))
    lakehouse.replace_instance("swap", make(spark, 2))
    kept_before = raw_rows(lakehouse, S.SUBSCRIPTIONS_TABLE, "keep").collect()
    replacement = make(spark, 3, nodes=25)
    lakehouse.replace_instance("swap", replacement)
    for table in S.INSTANCE_TABLES:  # the old version is kept (history), the current one is new
        versions = raw_rows(lakehouse, table, "swap").select(S.INGEST_ID).distinct().count()
        assert versions <= 2, f"{table.name} holds more than the two versions"
    assert_df_equality(
        lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "swap").select(S.NODE_ID, S.TOPIC_ID),
        replacement.subscriptions,
        ignore_row_order=True,
        ignore_nullable=True,
    )
    assert sorted(raw_rows(lakehouse, S.SUBSCRIPTIONS_TABLE, "keep").collect()) == sorted(kept_before)
    assert lakehouse.read(S.INSTANCES).count() == 2


@pytest.mark.slow  # about 21 s
def test_rows_of_a_crashed_ingest_are_invisible_then_cleaned(spark, lakehouse):
    lakehouse.replace_instance("x", make(spark, 1))
    current = lakehouse.instance_row("x")[S.INGEST_ID]
    orphan = spark.createDataFrame([("x", 0, 0, "00000000T000000000000Z-crashed")], S.SUBSCRIPTIONS_TABLE.schema)
    orphan.write.format("delta").mode("append").save(lakehouse.path(S.SUBSCRIPTIONS_TABLE))
    visible = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "x")
    assert visible.filter(F.col(S.INGEST_ID) != current).count() == 0
    lakehouse.replace_instance("x", make(spark, 1))
    assert raw_rows(lakehouse, S.SUBSCRIPTIONS_TABLE, "x").filter(F.col(S.INGEST_ID).contains("crashed")).count() == 0


@pytest.mark.slow  # concurrent ingests of one name: the later-started wins (README, "The tables"), 14 s
def test_an_ingest_that_started_earlier_never_overwrites_a_later_one(spark, lakehouse, monkeypatch):
    lakehouse.replace_instance("x", make(spark, 1))
    winner = lakehouse.instance_row("x")
    monkeypatch.setattr(lakehouse_module, "new_ingest_id", lambda: "00000000T000000000000Z-slowpoke")
    lakehouse.replace_instance("x", make(spark, 2, nodes=30))
    assert lakehouse.instance_row("x")[S.INGEST_ID] == winner[S.INGEST_ID]
    assert raw_rows(lakehouse, S.NODE_KEYS, "x").count() == 20


@pytest.mark.slow  # two ingests at once (10 s; the CI pass has the concurrent ingests below)
def test_two_ingests_of_one_source_at_once_make_one_version(spark, lakehouse, monkeypatch):
    """The same workflow started twice: while this ingest writes, another process's ingest of the
    same source (started a little earlier) commits; this one yields to it in its own commit."""
    frames = make(spark, 4)
    real_commit = lakehouse._commit
    other = []

    def commit(action, what):
        if what == "commit instances" and not other:
            other.append(True)
            with monkeypatch.context() as earlier:
                earlier.setattr(lakehouse_module, "new_ingest_id", lambda: "00000000T000000000000Z-earlier")
                other.append(lakehouse.replace_instance("twice", frames))
        return real_commit(action, what)

    monkeypatch.setattr(lakehouse, "_commit", commit)
    row = lakehouse.replace_instance("twice", frames)
    assert row[S.INGEST_ID] == other[1][S.INGEST_ID] == "00000000T000000000000Z-earlier"
    versions = lakehouse.read(S.INSTANCE_VERSIONS).filter(F.col(S.INSTANCE) == "twice")
    assert [r[S.INGEST_ID] for r in versions.collect()] == [row[S.INGEST_ID]]
    for table in S.INSTANCE_TABLES:  # the yielding ingest's rows are gone
        ids = {r[0] for r in raw_rows(lakehouse, table, "twice").select(S.INGEST_ID).distinct().collect()}
        assert ids <= {row[S.INGEST_ID]}, table.name


@pytest.mark.ci  # concurrency of ingests: stable since issue 2, 18 s
def test_concurrent_ingests_of_different_instances(spark, lakehouse):
    lakehouse.replace_instance("seed", make(spark, 9))  # tables exist: the threads race on commits only
    frames = {name: make(spark, i) for i, name in enumerate(["p", "q", "r"])}
    errors = run_at_once({name: lambda n=name: lakehouse.replace_instance(n, frames[n]) for name in frames})
    assert not errors
    for name, f in frames.items():
        assert lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, name).count() == f.subscriptions.count()


@pytest.mark.slow  # uses the shared small workflow
def test_tables_are_readable_by_another_delta_reader(spark, refreshed):
    """Every table of the shared workflow lakehouse, read by delta-rs (no Spark) and by Spark SQL."""
    lakehouse = refreshed["lakehouse"]
    present = [table for table in S.ALL_TABLES if lakehouse.exists(table)]
    expected = (
        S.INSTANCES,
        *S.INSTANCE_TABLES,
        S.OVERLAY_RUNS,
        S.OVERLAY_EDGES,
        S.OVERLAY_ROUNDS,
        S.OVERLAY_METRICS,
        S.TOPIC_COMPONENTS,
        S.RING,
        S.FINGERS,
        *(t for t in S.ROUTING_TABLES if t not in (S.ROUTING_COMPARISON, S.DISSEMINATION_COMPLETION)),
    )
    assert {t.name for t in expected} <= {t.name for t in present}
    for table in present:
        arrow = ArrowDeltaTable(lakehouse.path(table)).to_pyarrow_table()
        assert arrow.column_names == table.columns, table.name
        assert arrow.num_rows == lakehouse.read(table).count(), table.name
    sql = spark.sql(f"SELECT count(*) AS n FROM delta.`{lakehouse.path(S.INSTANCES)}`").first()["n"]
    assert sql == 1


def test_unknown_instance_lists_the_known_ones(spark, lakehouse):
    lakehouse.replace_instance("known", make(spark, 1))
    with pytest.raises(UnknownInstanceError, match="unknown instance 'nope'. Known: known"):
        lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, "nope")


def test_a_table_from_an_older_version_gains_new_columns(spark, lakehouse):
    old_schema = S.frame_schema(S.OVERLAY_RUNS, (S.RUN_ID, S.INSTANCE))
    spark.createDataFrame([("r", "i")], old_schema).write.format("delta").save(lakehouse.path(S.OVERLAY_RUNS))
    lakehouse.ensure(S.OVERLAY_RUNS)
    table = lakehouse.read(S.OVERLAY_RUNS)
    assert table.columns == S.OVERLAY_RUNS.columns
    assert table.first()[S.RUN_ID] == "r" and table.first()[S.STATUS] is None


def test_a_column_declared_nullable_since_accepts_nulls_in_an_older_table(spark, lakehouse):
    """Diameters used to be NOT NULL (0 when skipped); a lakehouse from then takes nulls now."""
    from pyspark.sql.types import LongType, StructField, StructType

    old = StructType(
        [
            StructField(S.RUN_ID, S.OVERLAY_METRICS.schema[S.RUN_ID].dataType, False),
            StructField(S.DIAMETER_MAX, LongType(), False),
        ]
    )
    lakehouse.ensure(S.TableSpec(S.OVERLAY_METRICS.name, old, (), "as it was"))
    lakehouse.ensure(S.OVERLAY_METRICS)
    assert lakehouse.read(S.OVERLAY_METRICS).schema[S.DIAMETER_MAX].nullable


def test_ensure_uses_the_table_another_writer_is_creating(spark, lakehouse):
    """The loser's view of a creation race: the winner has made `_delta_log` but not committed
    yet (Delta then raises DELTA_TABLE_NOT_FOUND to a second creator); it commits 2 s later."""
    path = lakehouse.path(S.OVERLAY_RUNS)
    Path(path, "_delta_log").mkdir(parents=True)
    winner = threading.Timer(
        2.0, lambda: spark.createDataFrame([], S.OVERLAY_RUNS.schema).write.format("delta").mode("append").save(path)
    )
    winner.start()
    try:
        table = lakehouse.ensure(S.OVERLAY_RUNS)
    finally:
        winner.join()
    assert table.toDF().columns == S.OVERLAY_RUNS.columns
    assert lakehouse.version(S.OVERLAY_RUNS) == 0  # the winner's table, not a second one


@pytest.mark.slow  # threads racing to create every table of a fresh lakehouse, 20 s
def test_threads_creating_the_same_tables_at_once_all_get_them(spark, lakehouse):
    """Four first writers of a fresh lakehouse (jobs started together) create the same tables at
    once; before `ensure` handled the race, some lost with DELTA_TABLE_NOT_FOUND or
    DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION."""

    def create_all():
        for table in S.ALL_TABLES:
            assert lakehouse.ensure(table).toDF().columns == table.columns, table.name

    errors = run_at_once({f"writer {i}": create_all for i in range(4)})
    assert not errors
    for table in S.ALL_TABLES:
        assert ArrowDeltaTable(lakehouse.path(table)).to_pyarrow_table().column_names == table.columns


@pytest.mark.slow  # two concurrent MERGEs, about 15 s
def test_racing_writers_of_the_same_coordinates_store_them_once(spark, lakehouse):
    """node_coordinates' check-then-store: two runs storing the same rows at once (the check saw
    nothing for both) add them once; a later call adds only what is missing."""
    from overlay.frames import local_frame

    def rows(nodes):
        return local_frame(spark, [("i", "v1", 1, v, float(v), -float(v)) for v in nodes], S.NODE_COORDINATES.schema)

    keys = (S.INSTANCE, S.INGEST_ID, S.MODEL_SEED, S.NODE_ID)
    lakehouse.ensure(S.NODE_COORDINATES)
    added = {}
    errors = run_at_once(
        {
            name: lambda n=name: added.__setitem__(
                n, lakehouse.insert_missing(S.NODE_COORDINATES, rows(range(5)), keys)
            )
            for name in ("first", "second")
        }
    )
    assert not errors and sorted(added.values()) == [0, 5]
    assert lakehouse.insert_missing(S.NODE_COORDINATES, rows(range(3, 8)), keys) == 3
    stored = sorted((r[S.NODE_ID], r[S.X_MS]) for r in lakehouse.read(S.NODE_COORDINATES).collect())
    assert stored == [(v, float(v)) for v in range(8)]


def test_a_run_stores_several_tables_at_once_and_a_failed_one_is_raised(spark, lakehouse):
    """`write_run_tables` writes each table from its own thread: every table gets the run's rows
    (another run's untouched), `on_stored` hears of each once, and a table whose rows fail to
    compute raises after the others are stored (nothing is marked complete by it)."""
    from overlay.frames import local_frame

    def ring(positions):
        return local_frame(spark, [(v, p) for v, p in positions], f"{S.NODE_ID} long, {S.POSITION} long")

    def edges(pairs):
        return local_frame(
            spark,
            [(u, v, i, 1, None) for i, (u, v) in enumerate(pairs)],
            f"{S.U} long, {S.V} long, {S.ADDED_ORDER} long, {S.ROUND} int, {S.GAIN} long",
        )

    lakehouse.write_run_rows(S.RING, "other", ring([(0, 0)]))
    heard = []
    lakehouse.write_run_tables(
        "r",
        [(S.RING, ring([(0, 1), (1, 0)])), (S.OVERLAY_EDGES, edges([(0, 1)]))],
        on_stored=lambda t: heard.append(t.name),
    )
    assert sorted(heard) == ["overlay_edges", "ring"]
    stored = sorted((r[S.RUN_ID], r[S.NODE_ID], r[S.POSITION]) for r in lakehouse.read(S.RING).collect())
    assert stored == [("other", 0, 0), ("r", 0, 1), ("r", 1, 0)]
    assert [(r[S.U], r[S.V]) for r in lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == "r").collect()] == [
        (0, 1)
    ]

    broken = edges([(1, 2)]).withColumn(S.U, F.raise_error(F.lit("no such link")).cast("long"))
    with pytest.raises(Exception, match="no such link"):
        lakehouse.write_run_tables("s", [(S.RING, ring([(5, 0)])), (S.OVERLAY_EDGES, broken)])
    assert lakehouse.read(S.RING).filter(F.col(S.RUN_ID) == "s").count() == 1
    assert lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == "s").count() == 0
    with pytest.raises(ValueError, match="one call per table"):
        lakehouse.write_run_tables("t", [(S.RING, ring([(0, 0)])), (S.RING, ring([(1, 0)]))])
